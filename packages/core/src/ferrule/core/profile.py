"""What a model supports, declared before the first request.

A [`ModelProfile`][ferrule.core.profile.ModelProfile] is resolved once per model. Every request is
checked against it ([`ModelProfile.check`][ferrule.core.profile.ModelProfile.check]) before any
network I/O, so a call that asks for something the model cannot do fails without paying for a
request. The default profile is fail-closed: it declares plain text in and out and nothing else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, TypeAlias

import msgspec

from .errors import UnsupportedFeatureError

if TYPE_CHECKING:
    from .model import ModelCall

__all__ = ["ContentKind", "ModelProfile", "NativeToolKind", "StructuredOutputMode"]

ContentKind: TypeAlias = Literal["text", "image", "audio", "video", "document", "uploaded-file"]
"""A kind of user content a model can take."""

NativeToolKind: TypeAlias = Literal[
    "web_search", "web_fetch", "code_execution", "url_context", "file_search", "image_generation"
]
"""A provider-native tool that runs inside the provider's request."""

StructuredOutputMode: TypeAlias = Literal["tool", "native", "prompted"]
"""How typed output is obtained: an output tool, the provider's JSON-schema mode, or prompted JSON."""

_PORTABLE_SAMPLING = frozenset(
    {
        "max_tokens",
        "temperature",
        "top_p",
        "stop_sequences",
        "seed",
        "presence_penalty",
        "frequency_penalty",
        "timeout",
        "extra_headers",
        "extra_body",
    }
)


class ModelProfile(msgspec.Struct, frozen=True, kw_only=True):
    """The features a model supports; anything not declared is refused before the request."""

    supports_tools: bool = False
    """Function tools can be offered."""
    supports_parallel_tool_calls: bool = False
    """The model may call several tools in one response and honours `parallel_tool_calls`."""
    supports_tool_choice: bool = False
    """`tool_choice` (auto / none / required / named) is honoured."""
    supports_instructions: bool = True
    """System instructions are accepted."""
    supports_json_object_output: bool = False
    """A JSON-object output mode exists."""
    supports_json_schema_output: bool = False
    """A native JSON-schema output mode exists."""
    default_structured_output_mode: StructuredOutputMode = "tool"
    """The mode the agent chooses for typed output when the application does not pick one."""
    tools_emulated_via_output: bool = False
    """Tools are emulated through constrained JSON output (small local models)."""
    supports_thinking: bool = False
    """The model can return reasoning."""
    thinking_always_on: bool = False
    """Reasoning cannot be turned off."""
    reasoning_efforts: frozenset[str] = frozenset()
    """Accepted `reasoning_effort` values."""
    service_tiers: frozenset[str] = frozenset()
    """Accepted `service_tier` values."""
    content_kinds: frozenset[ContentKind] = frozenset({"text"})
    """Kinds of user content accepted."""
    native_tools: frozenset[NativeToolKind] = frozenset()
    """Provider-native tools this model can use."""
    native_deferred_tools: bool = False
    """The API keeps deferred tools out of context and loads them when a search names them."""
    supported_settings: frozenset[str] = _PORTABLE_SAMPLING
    """`ModelSettings` fields this model honours; setting any other one fails before the request."""
    context_window: int | None = None
    """Maximum input plus output tokens, when known."""
    max_output_tokens: int | None = None
    """Maximum output tokens, when known."""
    default_max_tokens: int | None = None
    """`max_tokens` sent when none is set (required by some APIs)."""

    def intersect(self, other: ModelProfile) -> ModelProfile:
        """A profile that declares only what both profiles support (for fallback models)."""

        def smaller(a: int | None, b: int | None) -> int | None:
            if a is None:
                return b
            if b is None:
                return a
            return min(a, b)

        return ModelProfile(
            supports_tools=self.supports_tools and other.supports_tools,
            supports_parallel_tool_calls=self.supports_parallel_tool_calls
            and other.supports_parallel_tool_calls,
            supports_tool_choice=self.supports_tool_choice and other.supports_tool_choice,
            supports_instructions=self.supports_instructions and other.supports_instructions,
            supports_json_object_output=self.supports_json_object_output
            and other.supports_json_object_output,
            supports_json_schema_output=self.supports_json_schema_output
            and other.supports_json_schema_output,
            default_structured_output_mode=self.default_structured_output_mode
            if self.default_structured_output_mode == other.default_structured_output_mode
            else "tool"
            if self.supports_tools and other.supports_tools
            else "prompted",
            tools_emulated_via_output=self.tools_emulated_via_output or other.tools_emulated_via_output,
            supports_thinking=self.supports_thinking and other.supports_thinking,
            thinking_always_on=self.thinking_always_on or other.thinking_always_on,
            reasoning_efforts=self.reasoning_efforts & other.reasoning_efforts,
            service_tiers=self.service_tiers & other.service_tiers,
            content_kinds=self.content_kinds & other.content_kinds,
            native_tools=self.native_tools & other.native_tools,
            native_deferred_tools=self.native_deferred_tools and other.native_deferred_tools,
            supported_settings=self.supported_settings & other.supported_settings,
            context_window=smaller(self.context_window, other.context_window),
            max_output_tokens=smaller(self.max_output_tokens, other.max_output_tokens),
            default_max_tokens=smaller(self.default_max_tokens, other.default_max_tokens),
        )

    def check(self, call: ModelCall, *, model: str) -> None:
        """Raise [`UnsupportedFeatureError`][ferrule.core.errors.UnsupportedFeatureError] if `call`
        asks for anything this profile does not declare. Runs before any network I/O."""
        from ._profile_check import check_call

        check_call(self, call, model=model)

    def require(self, condition: bool, feature: str, *, model: str, hint: str | None = None) -> None:
        """Raise `UnsupportedFeatureError(feature)` unless `condition` holds."""
        if not condition:
            raise UnsupportedFeatureError(feature, model=model, hint=hint)
