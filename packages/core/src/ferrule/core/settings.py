"""Portable model settings, merged model → agent → run.

[`ModelSettings`][ferrule.core.settings.ModelSettings] names controls without provider field names;
each provider translates the merged settings once at its wire boundary. Fields left `None` inherit
from the layer below. Provider-only body fields go through
[`ProviderExtraBody`][ferrule.core.settings.ProviderExtraBody], tagged with the provider it is for,
which cannot override a key the portable encoder owns.
"""

from __future__ import annotations

from collections.abc import Collection
from collections.abc import Mapping
from typing import Any
from typing import Literal
from typing import TypeAlias

import msgspec

from .errors import UserError

__all__ = [
    "ModelSettings",
    "ProviderExtraBody",
    "ReasoningEffort",
    "ToolChoice",
    "merge_settings",
    "validate_request_headers",
]

ReasoningEffort: TypeAlias = Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"]
"""How much a reasoning model should think; each profile lists the efforts it accepts."""

ToolChoice: TypeAlias = Literal["auto", "none", "required"] | list[str]
"""`"auto"`, `"none"`, `"required"` (some tool), or a list of tool names the model must choose from."""


class ProviderExtraBody(msgspec.Struct, frozen=True, kw_only=True):
    """Extra top-level request-body fields for one provider: the explicit escape hatch.

    Only the provider named by `provider` reads it; keys that the portable encoder owns (e.g.
    `model`, `messages`, `tools`) are rejected before the request instead of silently overriding
    ferrule's encoding.
    """

    provider: str
    """The provider this body is for, e.g. `"openai"`; other providers ignore it."""
    body: dict[str, Any]
    """The fields to add to the JSON request body."""

    def for_provider(self, provider: str, owned_keys: Collection[str]) -> dict[str, Any]:
        """The fields to add for `provider`, after checking none of them is in `owned_keys`."""
        if provider != self.provider:
            return {}
        clash = sorted(k for k in self.body if k in owned_keys)
        if clash:
            raise UserError(
                f"extra_body for {provider!r} sets {', '.join(clash)}, which ferrule encodes itself; "
                "use the matching ModelSettings field instead"
            )
        return self.body


class ModelSettings(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, repr_omit_defaults=True):
    """Portable request settings. `None` means "inherit from the layer below"."""

    max_tokens: int | None = None
    """Maximum tokens to generate."""
    temperature: float | None = None
    """Sampling temperature."""
    top_p: float | None = None
    """Nucleus sampling probability mass."""
    top_k: int | None = None
    """Sample only from the `top_k` most likely tokens (not every provider supports it)."""
    seed: int | None = None
    """Seed for reproducible sampling where the provider honours it."""
    stop_sequences: list[str] | None = None
    """Sequences that end generation."""
    presence_penalty: float | None = None
    """Penalty for tokens already present."""
    frequency_penalty: float | None = None
    """Penalty proportional to token frequency."""
    logit_bias: dict[str, int] | None = None
    """Per-token bias."""
    logprobs: bool | None = None
    """Return log probabilities of output tokens."""
    top_logprobs: int | None = None
    """How many alternatives to return log probabilities for."""
    tool_choice: ToolChoice | None = None
    """Whether and which tools the model must call."""
    parallel_tool_calls: bool | None = None
    """Allow several tool calls in one response."""
    thinking: bool | None = None
    """Enable (or disable) the model's reasoning output where it is optional."""
    reasoning_effort: ReasoningEffort | None = None
    """Reasoning effort, checked against the profile's supported set."""
    thinking_budget_tokens: int | None = None
    """Token budget for reasoning, for providers that take one."""
    reasoning_summary: Literal["auto", "concise", "detailed"] | None = None
    """Ask for summaries of the reasoning where the provider offers them."""
    service_tier: str | None = None
    """Provider service tier (e.g. `"flex"`, `"priority"`), checked against the profile."""
    truncation: Literal["auto", "disabled"] | None = None
    """Whether the provider may truncate the context to fit."""
    timeout: float | None = None
    """Seconds allowed for one model request attempt."""
    extra_headers: dict[str, str] | None = None
    """Request-scoped headers; credentials, framing and correlation headers are rejected."""
    extra_body: list[ProviderExtraBody] | None = None
    """Provider-only body fields, each tagged with its provider."""

    def merge(self, other: ModelSettings | None) -> ModelSettings:
        """These settings overridden by every non-`None` field of `other`.

        `extra_headers` are merged key by key; `extra_body` entries accumulate.
        """
        if other is None:
            return self
        updates: dict[str, Any] = {}
        for name in other.__struct_fields__:
            value = getattr(other, name)
            if value is None:
                continue
            if name == "extra_headers" and self.extra_headers:
                value = {**self.extra_headers, **value}
            elif name == "extra_body" and self.extra_body:
                value = [*self.extra_body, *value]
            updates[name] = value
        if not updates:
            return self
        return msgspec.structs.replace(self, **updates)

    def set_fields(self) -> list[str]:
        """The names of the fields that are set (not `None`)."""
        return [name for name in self.__struct_fields__ if getattr(self, name) is not None]

    def extra_body_for(self, provider: str, owned_keys: Collection[str]) -> dict[str, Any]:
        """The merged extra body fields for `provider`, rejecting keys in `owned_keys`."""
        merged: dict[str, Any] = {}
        for extra in self.extra_body or ():
            merged.update(extra.for_provider(provider, owned_keys))
        return merged


def merge_settings(*layers: ModelSettings | None) -> ModelSettings:
    """Merge settings layers left to right (model, agent, run): later non-`None` fields win."""
    result = ModelSettings()
    for layer in layers:
        if layer is not None:
            result = result.merge(layer)
    return result


_FORBIDDEN_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "cookie",
        "host",
        "content-length",
        "content-type",
        "transfer-encoding",
        "connection",
        "upgrade",
        "te",
        "trailer",
        "expect",
        "x-request-id",
        "x-client-request-id",
        "anthropic-version",
        "openai-organization",
        "openai-project",
    }
)


def validate_request_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Check request-scoped headers and return them with lower-case names.

    Credentials, HTTP framing, correlation and adapter-version headers belong to the provider
    object and transport; setting them per request is rejected so a settings layer cannot leak or
    override them.
    """
    checked: dict[str, str] = {}
    for name, value in headers.items():
        lower = name.lower()
        if lower in _FORBIDDEN_HEADERS or not lower or any(c in lower for c in " :\r\n\t"):
            raise UserError(
                f"header {name!r} cannot be set in ModelSettings.extra_headers; configure credentials "
                "and fixed headers on the provider instead"
            )
        if "\r" in value or "\n" in value:
            raise UserError(f"header {name!r} has a line break in its value")
        checked[lower] = value
    return checked
