"""The fail-closed check of a model call against a profile (kept out of `profile` to keep it small)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from .errors import UnsupportedFeatureError
from .messages import (
    AudioUrl,
    BinaryContent,
    DocumentUrl,
    ImageUrl,
    ModelRequest,
    UploadedFile,
    UserPromptPart,
    VideoUrl,
)
from .model import JsonObjectOutput, JsonSchemaOutput

if TYPE_CHECKING:
    from .model import ModelCall
    from .profile import ContentKind, ModelProfile
    from .settings import ModelSettings


class _Fail(Protocol):
    def __call__(self, feature: str, hint: str | None = None) -> None: ...


def _binary_kind(media_type: str) -> ContentKind:
    if media_type.startswith("image/"):
        return "image"
    if media_type.startswith("audio/"):
        return "audio"
    if media_type.startswith("video/"):
        return "video"
    return "document"


def check_call(profile: ModelProfile, call: ModelCall, *, model: str) -> None:
    def fail(feature: str, hint: str | None = None) -> None:
        raise UnsupportedFeatureError(feature, model=model, hint=hint)

    _check_features(profile, call, fail)
    _check_settings(profile, call.settings, fail)
    _check_content(profile, call, fail)


def _check_features(profile: ModelProfile, call: ModelCall, fail: _Fail) -> None:
    if (call.tools or call.output_tools) and not (
        profile.supports_tools or profile.tools_emulated_via_output
    ):
        fail("tools", "remove the tools or choose a model whose profile declares supports_tools")
    if call.instructions and not profile.supports_instructions:
        fail("instructions", "put the instructions in the user prompt instead")
    if isinstance(call.output, JsonSchemaOutput) and not profile.supports_json_schema_output:
        fail("native JSON-schema output", "use tool or prompted output mode")
    if isinstance(call.output, JsonObjectOutput) and not profile.supports_json_object_output:
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


def _check_content(profile: ModelProfile, call: ModelCall, fail: _Fail) -> None:
    accepted = profile.content_kinds
    if accepted >= _ALL_KINDS:
        return
    for message in call.messages:
        if not isinstance(message, ModelRequest):
            continue
        for part in message.parts:
            if not isinstance(part, UserPromptPart) or isinstance(part.content, str):
                continue
            for item in part.content:
                kind = _content_kind(item)
                if kind is not None and kind not in accepted:
                    fail(f"{kind} input", "remove it or choose a model that accepts it")


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
