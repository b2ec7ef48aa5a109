"""What a model supports, declared before the first request.

A [`ModelProfile`][ferrule.core.profile.ModelProfile] is resolved once per model. Every request is
checked against it ([`ModelProfile.check`][ferrule.core.profile.ModelProfile.check]) before any
network I/O, so a call that asks for something the model cannot do fails without paying for a
request. The default profile is fail-closed: it declares plain text in and out and nothing else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Literal
from typing import Protocol
from typing import TypeAlias

import msgspec

from ._call import JsonObjectFormat
from ._call import JsonSchemaFormat
from ._call import ModelCall
from ._call import NativeToolKind
from .errors import UnsupportedFeatureError
from .messages import AudioUrl
from .messages import BinaryContent
from .messages import DocumentUrl
from .messages import ImageUrl
from .messages import UploadedFile
from .messages import UserPromptPart
from .messages import VideoUrl
from .messages import is_request

if TYPE_CHECKING:
    from collections.abc import Hashable
    from collections.abc import Sequence

    from .messages import Message
    from .settings import ModelSettings

__all__ = ["ContentKind", "ModelProfile", "NativeToolKind", "StructuredOutputMode"]

ContentKind: TypeAlias = Literal["text", "image", "audio", "video", "document", "uploaded-file"]
"""A kind of user content a model can take."""

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

    def check(self, call: ModelCall, *, model: str, proof: _Proof | None = None) -> None:
        """Raise [`UnsupportedFeatureError`][ferrule.core.errors.UnsupportedFeatureError] if `call`
        asks for anything this profile does not declare. Runs before any network I/O.

        `proof` is a [`HistoryProof`][ferrule.core.codec.HistoryProof] of `call.messages` taken in
        the same synchronous stretch: the content check then looks only at the messages it has not
        seen pass under the same accepted kinds, and records that the whole history passed.
        """
        _check_call(self, call, model=model, proof=proof)

    def require(self, condition: bool, feature: str, *, model: str, hint: str | None = None) -> None:
        """Raise `UnsupportedFeatureError(feature)` unless `condition` holds."""
        if not condition:
            raise UnsupportedFeatureError(feature, model=model, hint=hint)


# --- the fail-closed check of a call -------------------------------------------------------------


class _Fail(Protocol):
    def __call__(self, feature: str, hint: str | None = None) -> None: ...


class _Proof(Protocol):
    """What the check needs of a [`HistoryProof`][ferrule.core.codec.HistoryProof]."""

    def unchecked(self, check: Hashable, /) -> Sequence[Message]: ...

    def passed(self, check: Hashable, /) -> None: ...


def _binary_kind(media_type: str) -> ContentKind:
    if media_type.startswith("image/"):
        return "image"
    if media_type.startswith("audio/"):
        return "audio"
    if media_type.startswith("video/"):
        return "video"
    return "document"


def _check_call(profile: ModelProfile, call: ModelCall, *, model: str, proof: _Proof | None = None) -> None:
    """The check of `call`; with `proof` (of `call.messages`, taken in the same synchronous stretch)
    the content check skips the leading messages that passed it under the same accepted kinds."""

    def fail(feature: str, hint: str | None = None) -> None:
        raise UnsupportedFeatureError(feature, model=model, hint=hint)

    _check_features(profile, call, fail)
    _check_settings(profile, call.settings, fail)
    _check_content(profile, call, fail, proof)


def _check_features(profile: ModelProfile, call: ModelCall, fail: _Fail) -> None:
    if (call.tools or call.output_tools) and not (
        profile.supports_tools or profile.tools_emulated_via_output
    ):
        fail("tools", "remove the tools or choose a model whose profile declares supports_tools")
    if call.instructions and not profile.supports_instructions:
        fail("instructions", "put the instructions in the user prompt instead")
    if isinstance(call.output, JsonSchemaFormat) and not profile.supports_json_schema_output:
        fail("native JSON-schema output", "use tool or prompted output mode")
    if isinstance(call.output, JsonObjectFormat) and not profile.supports_json_object_output:
        fail("JSON-object output", "use prompted output in text mode")
    for native in call.native_tools:
        if native.kind not in profile.native_tools:
            fail(f"the native tool {native.kind!r}")
    kinds = [n.kind for n in call.native_tools]
    if len(kinds) != len(set(kinds)):
        fail("the same native tool twice", "enable each native tool once")


def _check_settings(profile: ModelProfile, settings: ModelSettings, fail: _Fail) -> None:
    for name in settings.set_fields():
        if name in _CAPABILITY_SETTINGS:
            continue  # checked against the capability flags below
        if name not in profile.supported_settings:
            fail(f"the setting {name!r}", "remove it or use a model that honours it")
    if settings.parallel_tool_calls and not profile.supports_parallel_tool_calls:
        fail("parallel tool calls")
    if (
        settings.tool_choice is not None
        and settings.tool_choice != "auto"
        and not profile.supports_tool_choice
    ):
        fail(f"tool_choice={settings.tool_choice!r}")
    if settings.reasoning_effort is not None and settings.reasoning_effort not in profile.reasoning_efforts:
        allowed = ", ".join(sorted(profile.reasoning_efforts)) or "none"
        fail(f"reasoning_effort={settings.reasoning_effort!r}", f"supported efforts: {allowed}")
    if settings.thinking and not profile.supports_thinking:
        fail("thinking")
    if settings.thinking is False and profile.thinking_always_on:
        fail("turning thinking off", "this model always reasons")
    if settings.service_tier is not None and settings.service_tier not in profile.service_tiers:
        allowed = ", ".join(sorted(profile.service_tiers)) or "none"
        fail(f"service_tier={settings.service_tier!r}", f"supported tiers: {allowed}")


def _check_content(profile: ModelProfile, call: ModelCall, fail: _Fail, proof: _Proof | None) -> None:
    accepted = profile.content_kinds
    if accepted >= _ALL_KINDS:
        return
    check = ("content kinds", accepted)
    for message in filter(is_request, call.messages if proof is None else proof.unchecked(check)):
        for part in message.parts:
            if not isinstance(part, UserPromptPart) or isinstance(part.content, str):
                continue
            for item in part.content:
                kind = _content_kind(item)
                if kind is not None and kind not in accepted:
                    fail(f"{kind} input", "remove it or choose a model that accepts it")
    if proof is not None:
        proof.passed(check)


_ALL_KINDS: frozenset[ContentKind] = frozenset(
    {"text", "image", "audio", "video", "document", "uploaded-file"}
)

# Settings a profile declares through its capability flags rather than `supported_settings`.
_CAPABILITY_SETTINGS = frozenset(
    {"tool_choice", "parallel_tool_calls", "thinking", "reasoning_effort", "service_tier"}
)


def _content_kind(item: object) -> ContentKind | None:
    if isinstance(item, ImageUrl):
        return "image"
    if isinstance(item, AudioUrl):
        return "audio"
    if isinstance(item, VideoUrl):
        return "video"
    if isinstance(item, DocumentUrl):
        return "document"
    if isinstance(item, BinaryContent):
        return _binary_kind(item.media_type)
    if isinstance(item, UploadedFile):
        return "uploaded-file"
    return None
