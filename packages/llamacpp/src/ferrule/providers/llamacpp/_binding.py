"""Bind ferrule-openai's Chat Completions client to a running embedded server."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from ferrule.core.settings import ModelSettings

if TYPE_CHECKING:
    from ferrule.core.profile import ModelProfile
    from ferrule.core.url_policy import UrlPolicy
    from ferrule.providers.openai import OpenAIChatModel


def bind_model(
    *,
    model_name: str,
    base_url: str,
    api_key: str,
    url_policy: UrlPolicy,
    profile: ModelProfile,
    settings: ModelSettings | None,
) -> OpenAIChatModel:
    """An `OpenAIChatModel` on a running server: its origin only, its API key, the local-model profile."""
    from ferrule.providers.openai import LlamaCppServerProvider
    from ferrule.providers.openai import OpenAIChatModel

    provider = LlamaCppServerProvider(base_url=base_url, api_key=api_key, url_policy=url_policy)
    dialect = provider.chat_profile(model_name).dialect
    # llama.cpp enforces any response_format schema exactly (a grammar), so schemas go as written:
    # OpenAI's strict rewrite would turn optional fields into required-but-nullable ones.
    dialect = msgspec.structs.replace(dialect, strict_tools=False)
    return OpenAIChatModel(model_name, provider=provider, profile=profile, dialect=dialect, settings=settings)
