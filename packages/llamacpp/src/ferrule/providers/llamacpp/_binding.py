"""Bind ferrule-openai's Chat Completions client to a running embedded server."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from ferrule.core.settings import ModelSettings

if TYPE_CHECKING:
    from ferrule.providers.openai import OpenAIChatModel

    from ._server import LlamaCppServer


def bind_model(server: LlamaCppServer, settings: ModelSettings | None) -> OpenAIChatModel:
    """An `OpenAIChatModel` on `server`: its origin only, its API key, the local-model profile."""
    from ferrule.providers.openai import LlamaCppServerProvider, OpenAIChatModel

    provider = LlamaCppServerProvider(
        base_url=server.base_url, api_key=server.api_key, url_policy=server.url_policy
    )
    dialect = provider.chat_profile(server.model_name).dialect
    # llama.cpp enforces any response_format schema exactly (a grammar), so schemas go as written:
    # OpenAI's strict rewrite would turn optional fields into required-but-nullable ones.
    dialect = msgspec.structs.replace(dialect, strict_tools=False)
    return OpenAIChatModel(
        server.model_name, provider=provider, profile=server.profile, dialect=dialect, settings=settings
    )
