"""One model client of each HTTP provider, pointed at a local test server (for cross-provider tests).

Tests that must hold identically on every provider parametrize over `APIS` and build the client
with `model_for`; only `ferrule-openai`, `ferrule-anthropic` and `ferrule-google` are needed.
"""

from __future__ import annotations

from typing import Any
from typing import Final

from ferrule.core.model import Model
from ferrule.providers.anthropic import AnthropicModel
from ferrule.providers.anthropic import AnthropicProvider
from ferrule.providers.google import GoogleModel
from ferrule.providers.google import GoogleProvider
from ferrule.providers.google import VertexAIProvider
from ferrule.providers.openai import OpenAIChatModel
from ferrule.providers.openai import OpenAIProvider
from ferrule.providers.openai import OpenAIResponsesModel
from tests.support.http_server import LocalServer

__all__ = ["APIS", "model_for"]

APIS: Final = ("openai-chat", "openai-responses", "anthropic", "gemini", "vertex")
"""Every wire API with its own model client or provider."""


def model_for(api: str, server: LocalServer, key: str, **options: Any) -> Model:
    """The client of `api` with credential `key`, its provider allowed to reach exactly `server`.

    `options` are the provider's transport options (`timeouts`, `error_body`, ...).
    """
    options = {"url_policy": server.policy, **options}
    if api == "openai-chat":
        return OpenAIChatModel(
            "gpt-4o", provider=OpenAIProvider(api_key=key, base_url=server.base_url, **options)
        )
    if api == "openai-responses":
        provider = OpenAIProvider(api_key=key, base_url=server.base_url, **options)
        return OpenAIResponsesModel("gpt-5-mini", provider=provider)
    if api == "anthropic":
        return AnthropicModel(
            "claude-sonnet-4-5", provider=AnthropicProvider(api_key=key, base_url=server.origin, **options)
        )
    if api == "gemini":
        gemini = GoogleProvider(
            api_key=key,
            base_url=f"{server.origin}/v1beta",
            upload_url=f"{server.origin}/upload/v1beta",
            **options,
        )
        return GoogleModel("gemini-2.5-flash", provider=gemini)
    if api == "vertex":
        vertex = VertexAIProvider(
            access_token=key,
            project="my-project-1",
            location="global",
            base_url=f"{server.origin}/v1",
            **options,
        )
        return GoogleModel("gemini-2.5-flash", provider=vertex)
    raise ValueError(f"unknown API {api!r}")
