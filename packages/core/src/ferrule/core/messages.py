"""The durable, provider-neutral conversation.

A conversation is a list of [`Message`][ferrule.core.messages.Message]: a
[`ModelRequest`][ferrule.core.messages.ModelRequest] (what the application and tools send) or a
[`ModelResponse`][ferrule.core.messages.ModelResponse] (what the model answered). Each side has its own
part union, so a tool call inside a request or a system prompt inside a response cannot be built.

Names and JSON field names follow PydanticAI v2's message vocabulary, so a history written by
PydanticAI loads into these types (see [`ferrule.core.history`][ferrule.core.history]).

Provider-opaque data (`provider_details`, thinking signatures) is kept exactly as received and is
replayed only to the provider and model that produced it
([`replayable_to`][ferrule.core.messages.replayable_to]). Application `metadata` is never sent to a
model.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from collections.abc import Iterator
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from typing import Any
from typing import ClassVar
from typing import Literal
from typing import TypeAlias
from typing import TypeGuard
from typing import cast

import msgspec

from .usage import RequestUsage

__all__ = [
    "AudioUrl",
    "BinaryContent",
    "CachePoint",
    "CapabilityLoadDeltaPart",
    "CompactionPart",
    "DocumentUrl",
    "FilePart",
    "FinishReason",
    "ImageUrl",
    "InstructionBaselinePart",
    "InstructionDeltaPart",
    "InstructionDigest",
    "InstructionPart",
    "Message",
    "ModelRequest",
    "ModelRequestAttempt",
    "ModelRequestPart",
    "ModelResponse",
    "ModelResponsePart",
    "ModelSettingsDeltaPart",
    "MultiModalContent",
    "NativeToolCallPart",
    "NativeToolReturnPart",
    "RetryFeedbackCause",
    "RetryFeedbackPart",
    "RetryInfo",
    "RetryPromptPart",
    "SpeechPart",
    "SpeechTimestamp",
    "StructuredContent",
    "SystemPromptPart",
    "TextContent",
    "TextPart",
    "ThinkingPart",
    "ToolAvailabilityDeltaPart",
    "ToolCallPart",
    "ToolRetryCause",
    "ToolReturnPart",
    "UploadedFile",
    "UserContent",
    "UserPromptPart",
    "VideoUrl",
    "WorkspaceRef",
    "new_tool_call_id",
    "replay_args",
    "replayable_to",
]


def _now() -> datetime:
    return datetime.now(UTC)


def new_tool_call_id() -> str:
    """Return a fresh tool call ID, for providers that do not send one."""
    return f"call_{uuid.uuid4().hex[:24]}"


FinishReason: TypeAlias = Literal["stop", "length", "content_filter", "tool_call", "error", "other"]
"""Why the model stopped, normalized across providers; the raw reason is kept in `provider_details`."""


# --- the families' shared options -----------------------------------------------------------------
# msgspec passes these options on to subclasses (all but `kw_only`, which each class that wants it
# sets for its own fields). Defaults stay out of the JSON, which keeps it PydanticAI-compatible and
# long histories small, and out of reprs. The frozen records (`RetryInfo`, `ModelRequestAttempt`)
# state the same options themselves: a frozen class cannot derive from a mutable one.


class _Record(msgspec.Struct, omit_defaults=True, repr_omit_defaults=True):
    """Base of the mutable stored message types: fields left at their default are not written."""


class _Content(_Record, tag_field="kind"):
    """Base of the user-content items, tagged by `kind`."""


class _Part(_Record, tag_field="part_kind"):
    """Base of the request and response parts, tagged by `part_kind`."""


class _Message(_Record, tag_field="kind"):
    """Base of `ModelRequest` and `ModelResponse`, tagged by `kind`."""


# --- rich user content ---------------------------------------------------------------------------


class _FileUrl(_Content):
    url: str
    """The URL of the file; checked against the run's URL policy before any request."""
    force_download: bool | Literal["allow-local"] = False
    """Download the file and send its bytes instead of the URL."""
    vendor_metadata: dict[str, Any] | None = None
    """Provider-specific options for this file (e.g. image detail), passed through unchanged."""
    media_type: str | None = None
    """The MIME type; inferred from the URL when not given."""
    identifier: str | None = None
    """A short stable identifier the model can use to refer to this file."""

    @property
    def resolved_media_type(self) -> str:
        """The explicit media type, or one guessed from the URL's extension."""
        if self.media_type:
            return self.media_type
        import mimetypes  # with the first URL whose type is guessed, not with the messages

        guessed, _ = mimetypes.guess_type(self.url.split("?", 1)[0])
        return guessed or _DEFAULT_MEDIA_TYPE[type(self).__name__]


class ImageUrl(_FileUrl, tag="image-url"):
    """An image referenced by URL."""


class AudioUrl(_FileUrl, tag="audio-url"):
    """An audio clip referenced by URL."""


class VideoUrl(_FileUrl, tag="video-url"):
    """A video referenced by URL."""


class DocumentUrl(_FileUrl, tag="document-url"):
    """A document (PDF, text, ...) referenced by URL."""


_DEFAULT_MEDIA_TYPE = {
    "ImageUrl": "image/png",
    "AudioUrl": "audio/mpeg",
    "VideoUrl": "video/mp4",
    "DocumentUrl": "application/pdf",
}


class BinaryContent(_Content, tag="binary"):
    """Inline bytes: an image, audio clip, document or any other file."""

    data: bytes
    """The raw bytes; base64-encoded only at a provider's wire boundary (and in JSON)."""
    media_type: str
    """The MIME type of `data`, e.g. `"image/png"`."""
    vendor_metadata: dict[str, Any] | None = None
    """Provider-specific options for this content, passed through unchanged."""
    identifier: str | None = None
    """A short stable identifier the model can use to refer to this content."""

    @property
    def is_image(self) -> bool:
        """Whether this is an image."""
        return self.media_type.startswith("image/")

    @property
    def is_audio(self) -> bool:
        """Whether this is audio."""
        return self.media_type.startswith("audio/")

    @property
    def is_video(self) -> bool:
        """Whether this is video."""
        return self.media_type.startswith("video/")

    @property
    def base64(self) -> str:
        """`data` as standard base64 text."""
        import base64  # with the first binary content encoded, not with the messages

        return base64.b64encode(self.data).decode("ascii")

    @property
    def data_uri(self) -> str:
        """`data` as a `data:` URI."""
        return f"data:{self.media_type};base64,{self.base64}"


class UploadedFile(_Content, tag="uploaded-file"):
    """A file previously uploaded to a provider's files API, valid only for that provider."""

    file_id: str
    """The provider's identifier of the file."""
    provider_name: str
    """The provider that owns the file; other providers reject it before any request."""
    vendor_metadata: dict[str, Any] | None = None
    """Provider-specific options, passed through unchanged."""
    media_type: str | None = None
    """The MIME type of the file, when known."""
    identifier: str | None = None
    """A short stable identifier the model can use to refer to this file."""


class CachePoint(_Content, tag="cache-point"):
    """Marks the end of a prompt prefix the provider should cache (ignored where unsupported)."""

    ttl: Literal["5m", "1h"] = "5m"
    """How long the provider should keep the cached prefix."""


class TextContent(_Content, tag="text-content"):
    """Text with application metadata that is never sent to the model."""

    content: str
    """The text sent to the model."""
    metadata: Any = None
    """Application data attached to the text; never sent."""


class StructuredContent(TextContent, kw_only=True, tag="structured-content"):
    """A structured value in a user prompt, stored with the text it is sent as.

    It is a `TextContent`, so code that sends `content` handles it unchanged; models that take
    structured input natively can read `value`. Build one with
    [`from_value`][ferrule.core.messages.StructuredContent.from_value], which renders the text once.
    """

    value: Any
    """The structured value (its JSON form after a history round trip)."""
    tag: str | None = None
    """The tag the rendered value is wrapped in, e.g. `"ui_state"` for `<ui_state>...</ui_state>`."""
    description: str | None = None
    """What the value is, for the model; written on the line before the rendered value."""

    def __post_init__(self) -> None:
        if not self.content:
            self.content = _render_structured(self.value, self.tag, self.description)

    @classmethod
    def from_value(
        cls, value: Any, *, tag: str | None = None, description: str | None = None, metadata: Any = None
    ) -> StructuredContent:
        """Wrap `value`, rendering it as compact JSON (inside `tag`, after `description`)."""
        return cls("", metadata, value=value, tag=tag, description=description)


def _render_structured(value: Any, tag: str | None, description: str | None) -> str:
    # `<`, `>` and `&` are escaped so that a value can never close the tag it is wrapped in.
    text = msgspec.json.encode(value).decode()
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    if tag is not None:
        text = f"<{tag}>{text}</{tag}>"
    return text if description is None else f"{description}\n{text}"


MultiModalContent: TypeAlias = ImageUrl | AudioUrl | VideoUrl | DocumentUrl | BinaryContent | UploadedFile
"""Any media item a user prompt can carry."""

UserContent: TypeAlias = (
    str
    | ImageUrl
    | AudioUrl
    | VideoUrl
    | DocumentUrl
    | BinaryContent
    | UploadedFile
    | CachePoint
    | TextContent
    | StructuredContent
)
"""One item of a user prompt: text, structured data, media by URL or bytes, an uploaded file, or a cache point."""


# --- retries -------------------------------------------------------------------------------------

ToolRetryCause: TypeAlias = Literal["validation_error", "model_retry", "unknown_tool", "unavailable_tool"]
"""Why a tool call has to be made again."""

RetryFeedbackCause: TypeAlias = Literal["validation_error", "no_output", "model_retry"]
"""Why a whole response was unusable."""


class RetryInfo(msgspec.Struct, frozen=True, omit_defaults=True, repr_omit_defaults=True):
    """Why a retry happened and how far into its budget it is; never sent to the model."""

    cause: ToolRetryCause | RetryFeedbackCause
    """What made the retry necessary."""
    attempt: int | None = None
    """Which retry this is, counting from 1, when it is charged against a budget."""
    max_retries: int | None = None
    """The retry limit `attempt` was checked against."""


# --- request parts -------------------------------------------------------------------------------


class SystemPromptPart(_Part, tag="system-prompt"):
    """A system prompt written into the history (instructions are usually sent separately instead)."""

    content: str
    """The prompt text."""
    timestamp: datetime = msgspec.field(default_factory=_now)
    """When the part was created."""
    dynamic_ref: str | None = None
    """The name of the function that produced a dynamic system prompt, so it can be re-evaluated."""
    context_id: str | None = None
    """An application identifier for the context this prompt belongs to."""
    scope: Literal["conversation", "request"] = "conversation"
    """Whether the prompt applies to the whole conversation or only to its request."""
    metadata: dict[str, Any] | None = None
    """Application data; never sent to a model."""
    part_kind: ClassVar[Literal["system-prompt"]] = "system-prompt"
    """Discriminator of the part union (the JSON tag)."""


class UserPromptPart(_Part, tag="user-prompt"):
    """What the user said: plain text or a sequence of rich content items."""

    content: str | list[UserContent]
    """The prompt: a string, or a list of text and media items."""
    timestamp: datetime = msgspec.field(default_factory=_now)
    """When the part was created."""
    part_kind: ClassVar[Literal["user-prompt"]] = "user-prompt"
    """Discriminator of the part union (the JSON tag)."""

    def iter_content(self) -> Iterator[UserContent]:
        """Iterate the content items; a plain string yields itself once."""
        if isinstance(self.content, str):
            yield self.content
        else:
            yield from self.content


class _ToolReturn(_Part):
    """The fields a function tool's result and a provider-native tool's result share, in wire order."""

    tool_name: str
    """The name of the tool that was called."""
    content: Any
    """The result: any JSON-encodable value, or rich content."""
    tool_call_id: str = msgspec.field(default_factory=new_tool_call_id)
    """The ID of the call this answers; providers correlate by this ID, never by position."""
    tool_kind: str | None = None
    """What kind of tool this is, independent of its name (e.g. `"tool-search"`)."""
    metadata: Any = None
    """Application data attached to the result; never sent to the model."""
    timestamp: datetime = msgspec.field(default_factory=_now)
    """When the result was produced or received."""
    outcome: Literal["success", "failed", "denied", "interrupted", "retried"] = "success"
    """How the call ended; `"denied"` results come from a refused approval."""


class ToolReturnPart(_ToolReturn, tag="tool-return"):
    """The result of a function tool call, sent back to the model."""

    retry: RetryInfo | None = None
    """Why the call has to be made again, when `outcome` is `"retried"`."""
    content_file_digests: list[str] | None = None
    """Serialization detail of `ferrule.core.history`: digests of the file items `content` held when
    written, so only those are rebuilt as files on load. `None` in memory; leave it unset."""
    part_kind: ClassVar[Literal["tool-return"]] = "tool-return"
    """Discriminator of the part union (the JSON tag)."""

    def model_response_str(self) -> str:
        """The content as the text sent to providers that take tool results as strings."""
        if isinstance(self.content, str):
            return self.content
        return msgspec.json.encode(self.content).decode()


class RetryPromptPart(_Part, tag="retry-prompt"):
    """Asks the model to try again: after invalid tool arguments, a `ModelRetry`, or invalid output."""

    content: list[dict[str, Any]] | str
    """What was wrong: a message, or a list of validation error details."""
    tool_name: str | None = None
    """The tool whose call failed, or `None` when the final output was rejected."""
    tool_call_id: str = msgspec.field(default_factory=new_tool_call_id)
    """The ID of the failed call."""
    timestamp: datetime = msgspec.field(default_factory=_now)
    """When the part was created."""
    part_kind: ClassVar[Literal["retry-prompt"]] = "retry-prompt"
    """Discriminator of the part union (the JSON tag)."""

    def model_response(self) -> str:
        """The text sent to the model to explain what to fix."""
        if isinstance(self.content, str):
            description = self.content
        else:
            lines: list[str] = []
            for error in self.content:
                loc = ".".join(str(x) for x in error.get("loc", ()))
                msg = error.get("msg", "")
                lines.append(f"- {loc}: {msg}" if loc else f"- {msg}")
            description = f"{len(self.content)} validation error(s):\n" + "\n".join(lines)
        return f"{description}\n\nFix the errors and try again."


class CompactionPart(_Part, tag="compaction"):
    """A summary that stands in for earlier history.

    In a response it is the provider's own (possibly encrypted) compaction, replayed only to that
    provider; in a request it is a summary the application wrote, with no provider fields.
    """

    content: str | None = None
    """The readable summary, when the provider gives one."""
    id: str | None = None
    """The provider's identifier of this part."""
    provider_name: str | None = None
    """The provider that produced it; only that provider can use an encrypted compaction."""
    provider_details: dict[str, Any] | None = None
    """Opaque provider data (e.g. encrypted content), replayed only to the same provider."""
    metadata: dict[str, Any] | None = None
    """Application data; never sent to a model."""
    part_kind: ClassVar[Literal["compaction"]] = "compaction"
    """Discriminator of the part union (the JSON tag)."""


_RETRY_FEEDBACK_FRAMING = (
    "Your previous response failed the application's validation "
    "(this is automated feedback, not a message from the user):"
)


class RetryFeedbackPart(_Part, tag="retry-feedback"):
    """Feedback about a whole response that could not be used (invalid output, no output).

    Never bound to a tool call: a retry that answers a tool call is that call's `ToolReturnPart`
    with `outcome="retried"`.
    """

    content: list[dict[str, Any]] | str
    """What was wrong: a message, or a list of validation error details."""
    retry: RetryInfo
    """Why the response was unusable and which output retry this is."""
    timestamp: datetime = msgspec.field(default_factory=_now)
    """When the retry was triggered."""
    part_kind: ClassVar[Literal["retry-feedback"]] = "retry-feedback"
    """Discriminator of the part union (the JSON tag)."""

    def model_response(self) -> str:
        """The text sent to the model: fixed `no_output` text as is, anything else fenced as feedback."""
        text = self.content if isinstance(self.content, str) else msgspec.json.encode(self.content).decode()
        if self.retry.cause == "no_output" and isinstance(self.content, str):
            return text
        return f"{_RETRY_FEEDBACK_FRAMING}\n<retry_feedback>\n{text}\n</retry_feedback>"


class InstructionPart(_Part, tag="instruction"):
    """One block of instructions with its origin, as recorded in an `InstructionBaselinePart`."""

    content: str
    """The block's text."""
    dynamic: bool = False
    """Whether the block came from a dynamic source (a function or template) rather than a literal."""
    on_change: Literal["rewrite", "append"] = "rewrite"
    """How changes are delivered: rewrite the prefix, or append replacements to the history."""
    name: str | None = None
    """What the author calls this block, relative to its source."""
    id: str | None = None
    """The stable key the block is addressed by (e.g. `"toolset:weather"`), if any."""
    part_kind: ClassVar[Literal["instruction"]] = "instruction"
    """Discriminator (the JSON tag)."""


class InstructionDigest(_Part, kw_only=True, tag="instruction-digest"):
    """A rewrite-mode instruction block recorded only by its hash."""

    id: str | None = None
    """The block's stable key, if any."""
    dynamic: bool = False
    """Whether the block is dynamic, which decides its cache placement."""
    content_hash: str
    """SHA-256 hex digest of the block's text."""
    part_kind: ClassVar[Literal["instruction-digest"]] = "instruction-digest"
    """Discriminator (the JSON tag)."""


class InstructionDeltaPart(_Part, kw_only=True, tag="instruction-delta"):
    """Replaces or withdraws one operator-authored instruction block from this point on.

    A record for the application: each request carries the instructions in force itself
    (`ModelCall.instructions`), so this part is never sent to a model.
    """

    id: str | None
    """The key of the block being replaced; `None` when it names a source this version cannot address."""
    content: str | None
    """The complete replacement text, or `None` to withdraw the block."""
    base_hash: str | None = None
    """SHA-256 hex digest of the text this change replaces, so it can be sent as a diff."""
    part_kind: ClassVar[Literal["instruction-delta"]] = "instruction-delta"
    """Discriminator of the part union (the JSON tag)."""


class InstructionBaselinePart(_Part, kw_only=True, tag="instruction-baseline"):
    """The instruction blocks a request was sent with, where a window of appended changes starts.

    A record for the application; never sent to a model (the request's instructions are).
    """

    instructions: list[InstructionPart | InstructionDigest]
    """The blocks in order: append-mode blocks in full, rewrite-mode blocks as digests."""
    part_kind: ClassVar[Literal["instruction-baseline"]] = "instruction-baseline"
    """Discriminator of the part union (the JSON tag)."""


class ToolAvailabilityDeltaPart(_Part, kw_only=True, tag="tool-availability-delta"):
    """Records that deferred tools were revealed to the model at this point.

    Never sent to a model: the revealed tools are offered with each later request instead.
    """

    tools_added: list[str] = []
    """Names of the tools revealed here."""
    tool_call_id: str | None = None
    """The tool call that caused the change, if any."""
    part_kind: ClassVar[Literal["tool-availability-delta"]] = "tool-availability-delta"
    """Discriminator of the part union (the JSON tag)."""


class CapabilityLoadDeltaPart(_Part, kw_only=True, tag="capability-load-delta"):
    """Records on-demand capabilities loaded at this point; never sent to a model."""

    loaded: list[str] = []
    """IDs of the capabilities loaded here, in load order."""
    tool_call_id: str | None = None
    """The tool call being handled when they were loaded, if any."""
    part_kind: ClassVar[Literal["capability-load-delta"]] = "capability-load-delta"
    """Discriminator of the part union (the JSON tag)."""


class ModelSettingsDeltaPart(_Part, kw_only=True, tag="model-settings-delta"):
    """Records model settings that change from this point of the conversation on.

    Never sent to a model: each request carries the settings in force (`ModelCall.settings`).
    """

    settings: dict[str, Any]
    """The changed settings by their portable names (e.g. `{"thinking": "high"}`)."""
    top_level: bool = False
    """Whether the request sent them as request-level settings, opening a new window."""
    part_kind: ClassVar[Literal["model-settings-delta"]] = "model-settings-delta"
    """Discriminator of the part union (the JSON tag)."""


class SpeechTimestamp(_Record, kw_only=True):
    """When a piece of spoken text is heard in its part's audio."""

    text: str
    """The text spoken: a word or a segment of the transcript."""
    start_ms: int
    """Where the text starts in the part's audio, in milliseconds."""
    duration_ms: int
    """How long the text takes to speak, in milliseconds."""
    granularity: Literal["word", "segment"] = "word"
    """How much text this timestamp covers."""


class SpeechPart(_Part, kw_only=True, tag="speech"):
    """Spoken audio of a realtime session with its transcript: `user` in requests, `assistant` in responses."""

    speaker: Literal["user", "assistant"]
    """Who spoke: the end user (request side) or the model (response side)."""
    transcript: str | None = None
    """The transcript, when one was made."""
    audio: BinaryContent | None = None
    """The audio, when the session retains it."""
    interrupted_at_ms: int | None = None
    """Offset into this part's audio where playback was interrupted, in milliseconds."""
    timestamps: list[SpeechTimestamp] | None = None
    """When each piece of speech is heard in the audio, if the provider reported it."""
    id: str | None = None
    """The provider's item ID."""
    provider_name: str | None = None
    """The provider that produced or transcribed the audio."""
    provider_details: dict[str, Any] | None = None
    """Opaque provider data, replayed only to the same provider and model."""
    part_kind: ClassVar[Literal["speech"]] = "speech"
    """Discriminator of the part union (the JSON tag)."""

    @property
    def content(self) -> str:
        """The transcript, or `""` when there is none (mirrors `TextPart.content`)."""
        return self.transcript or ""


ModelRequestPart: TypeAlias = (
    SystemPromptPart
    | UserPromptPart
    | ToolReturnPart
    | RetryPromptPart
    | RetryFeedbackPart
    | SpeechPart
    | CompactionPart
    | ToolAvailabilityDeltaPart
    | CapabilityLoadDeltaPart
    | ModelSettingsDeltaPart
    | InstructionDeltaPart
    | InstructionBaselinePart
)
"""A part that may appear in a request (a `CompactionPart` here is an application-written summary)."""


class ModelRequest(_Message, tag="request"):
    """Everything sent to the model in one turn: prompts, tool results and retry prompts."""

    parts: list[ModelRequestPart]
    """The parts of the request, in order."""
    timestamp: datetime | None = None
    """When the request was sent."""
    instructions: str | None = None
    """The instructions in force for this request (kept for provenance)."""
    kind: ClassVar[Literal["request"]] = "request"
    """Discriminator of the message union (the JSON tag)."""
    run_id: str | None = None
    """The agent run that produced this request."""
    conversation_id: str | None = None
    """The conversation this request belongs to."""
    metadata: dict[str, Any] | None = None
    """Application data; never sent to a model."""
    state: Literal["complete", "interrupted"] = "complete"
    """Whether the request was fully built."""

    @classmethod
    def user_text_prompt(cls, prompt: str, *, instructions: str | None = None) -> ModelRequest:
        """A request holding one plain-text user prompt."""
        return cls(parts=[UserPromptPart(content=prompt)], instructions=instructions)


# Not in `__all__`: shared by the walks over a whole history (core's profile check, the agent's URL
# check, the OpenAI download scan), which pick the requests out in C with `filter`.
is_request = cast("Callable[[object], TypeGuard[ModelRequest]]", ModelRequest.__instancecheck__)
"""`isinstance(message, ModelRequest)` as a C callable, for `filter` (a step less per message)."""


# --- response parts ------------------------------------------------------------------------------


class TextPart(_Part, tag="text"):
    """Plain text from the model."""

    content: str
    """The text."""
    id: str | None = None
    """The provider's identifier of this part, if any."""
    provider_name: str | None = None
    """The provider that produced this part; set when `provider_details` must only go back to it."""
    provider_details: dict[str, Any] | None = None
    """Opaque provider data, replayed only to the same provider and model."""
    citations: list[dict[str, Any]] | None = None
    """Sources the model cited for this text."""
    part_kind: ClassVar[Literal["text"]] = "text"
    """Discriminator of the part union (the JSON tag)."""


class ThinkingPart(_Part, tag="thinking"):
    """The model's reasoning, with the signature some providers require to replay it."""

    content: str
    """The reasoning text (may be empty when the provider only returns an encrypted form)."""
    id: str | None = None
    """The provider's identifier of this part."""
    signature: str | None = None
    """The provider's signature or encrypted reasoning; sent back unchanged to the same model only."""
    provider_name: str | None = None
    """The provider that produced this part."""
    provider_details: dict[str, Any] | None = None
    """Opaque provider data, replayed only to the same provider and model."""
    part_kind: ClassVar[Literal["thinking"]] = "thinking"
    """Discriminator of the part union (the JSON tag)."""


class _ToolCall(_Part):
    """The fields a function tool call and a provider-native tool call share, in wire order."""

    tool_name: str
    """The name of the tool to call."""
    args: str | dict[str, Any] | None = None
    """The arguments: a JSON object, or the raw JSON text as the model (or provider) produced it."""
    tool_call_id: str = msgspec.field(default_factory=new_tool_call_id)
    """The call's ID; the tool result must carry the same ID."""
    tool_kind: str | None = None
    """What kind of tool this is, independent of its name."""
    id: str | None = None
    """The provider's identifier of this part (distinct from `tool_call_id` on some APIs)."""
    provider_name: str | None = None
    """The provider that produced this part (for a native tool, the one that ran it)."""
    provider_details: dict[str, Any] | None = None
    """Opaque provider data (e.g. a Gemini thought signature), replayed only to the same provider and model."""


class ToolCallPart(_ToolCall, tag="tool-call"):
    """The model asks the application to call a function tool."""

    part_kind: ClassVar[Literal["tool-call"]] = "tool-call"
    """Discriminator of the part union (the JSON tag)."""

    def args_as_dict(self) -> dict[str, Any]:
        """The arguments as a dict; raw JSON text is decoded (use the agent's bounded path for untrusted text)."""
        if self.args is None:
            return {}
        if isinstance(self.args, dict):
            return self.args
        if not self.args.strip():
            return {}
        decoded = msgspec.json.decode(self.args)
        if not isinstance(decoded, dict):
            raise ValueError(f"arguments of {self.tool_name!r} are not a JSON object")
        return decoded  # pyright: ignore[reportUnknownVariableType]

    def args_as_json_str(self) -> str:
        """The arguments as JSON text (`"{}"` when absent)."""
        if self.args is None:
            return "{}"
        if isinstance(self.args, str):
            return self.args or "{}"
        return msgspec.json.encode(self.args).decode()


class NativeToolCallPart(_ToolCall, tag="builtin-tool-call"):
    """A call of a provider-native tool (web search, code execution, ...) run inside the provider."""

    part_kind: ClassVar[Literal["builtin-tool-call"]] = "builtin-tool-call"
    """Discriminator of the part union (the JSON tag)."""


class NativeToolReturnPart(_ToolReturn, tag="builtin-tool-return"):
    """The result of a provider-native tool, as reported by the provider."""

    provider_name: str | None = None
    """The provider that ran the tool."""
    provider_details: dict[str, Any] | None = None
    """Opaque provider data, replayed only to the same provider and model."""
    content_file_digests: list[str] | None = None
    """Serialization detail of `ferrule.core.history` (see `ToolReturnPart`); leave it unset."""
    part_kind: ClassVar[Literal["builtin-tool-return"]] = "builtin-tool-return"
    """Discriminator of the part union (the JSON tag)."""


class FilePart(_Part, tag="file"):
    """A file the model generated (e.g. an image)."""

    content: BinaryContent
    """The file's bytes and media type."""
    id: str | None = None
    """The provider's identifier of this part."""
    provider_name: str | None = None
    """The provider that produced the file."""
    provider_details: dict[str, Any] | None = None
    """Opaque provider data, replayed only to the same provider and model."""
    part_kind: ClassVar[Literal["file"]] = "file"
    """Discriminator of the part union (the JSON tag)."""


ModelResponsePart: TypeAlias = (
    TextPart
    | ThinkingPart
    | ToolCallPart
    | NativeToolCallPart
    | NativeToolReturnPart
    | FilePart
    | CompactionPart
    | SpeechPart
)
"""A part that may appear in a response."""


class WorkspaceRef(msgspec.Struct, frozen=True, kw_only=True):
    """The identity of a workspace environment a run worked in, without credentials."""

    provider: str
    """The provider that owns the environment."""
    id: str
    """The provider's identifier of the environment."""


class ModelRequestAttempt(
    msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, repr_omit_defaults=True
):
    """An attempt at a request that failed before the response it is recorded on (see `FallbackModel`)."""

    model_name: str
    """The model that was attempted."""
    provider_name: str | None = None
    """The provider the attempt was sent to."""
    outcome: Literal["error", "rejected"]
    """`"error"`: the request raised; `"rejected"`: its response was refused by the application."""
    error: str | None = None
    """The error as `"ErrorType: message"`, or `None` for a rejected response."""
    timestamp: datetime
    """When the attempt started."""
    duration: timedelta
    """How long the attempt took until it failed."""
    usage: RequestUsage | None = None
    """What the provider reported for the attempt, when known."""


class ModelResponse(_Message, tag="response"):
    """One complete answer from a model."""

    parts: list[ModelResponsePart]
    """The parts of the answer, in order."""
    usage: RequestUsage = msgspec.field(default_factory=RequestUsage)
    """Token usage of the request that produced this response."""
    model_name: str | None = None
    """The model that answered, as reported by the provider when it says."""
    timestamp: datetime = msgspec.field(default_factory=_now)
    """When the response was received."""
    kind: ClassVar[Literal["response"]] = "response"
    """Discriminator of the message union (the JSON tag)."""
    provider_name: str | None = None
    """The provider that answered, e.g. `"openai"`."""
    provider_url: str | None = None
    """The API root the request went to."""
    provider_details: dict[str, Any] | None = None
    """Opaque provider data about the whole response (including the raw finish reason)."""
    provider_response_id: str | None = None
    """The provider's identifier of this response."""
    finish_reason: FinishReason | None = None
    """Why the model stopped, normalized; the raw value is `provider_details["finish_reason"]`."""
    run_id: str | None = None
    """The agent run that produced this response."""
    conversation_id: str | None = None
    """The conversation this response belongs to."""
    metadata: dict[str, Any] | None = None
    """Application data; never sent to a model."""
    state: Literal["complete", "incomplete", "suspended", "interrupted"] = "complete"
    """Whether the response is complete."""
    model_id: str | None = None
    """The model as the application selected it (e.g. `"openai:gpt-5"`), unlike the reported `model_name`."""
    canonical_system: str | None = None
    """The system whose keys verify signed or encrypted data here, when it differs from `provider_name`."""
    workspace_ref: WorkspaceRef | None = None
    """The workspace environment the run worked in; never sent to a model."""
    history_digest: str | None = None
    """Digest of this response and the history it answered, for server-side continuation."""
    failed_attempts: list[ModelRequestAttempt] | None = None
    """Earlier attempts at this request that failed (e.g. models a fallback moved on from), in order."""

    @property
    def text(self) -> str | None:
        """The concatenated text parts, or `None` when there are none."""
        texts = [p.content for p in self.parts if isinstance(p, TextPart)]
        return "".join(texts) if texts else None

    @property
    def tool_calls(self) -> list[ToolCallPart]:
        """The function tool calls, in the model's order."""
        return [p for p in self.parts if isinstance(p, ToolCallPart)]

    @property
    def thinking(self) -> str | None:
        """The concatenated thinking text, or `None` when there is none."""
        texts = [p.content for p in self.parts if isinstance(p, ThinkingPart)]
        return "\n\n".join(texts) if texts else None

    @property
    def raw_finish_reason(self) -> str | None:
        """The provider's own finish reason, when it sent one."""
        if self.provider_details is None:
            return None
        raw = self.provider_details.get("finish_reason")
        return raw if isinstance(raw, str) else None


Message: TypeAlias = ModelRequest | ModelResponse
"""One message of a conversation: a request or a response."""


def replayable_to(response: ModelResponse, provider_name: str, model_name: str | None = None) -> bool:
    """Whether provider-opaque data in `response` may be sent to `provider_name` (and `model_name`).

    Signatures, encrypted reasoning and `provider_details` are only valid for the provider (and,
    when given, the model) that produced them; other models receive only the portable parts.
    """
    if response.provider_name != provider_name:
        return False
    return model_name is None or response.model_name is None or response.model_name == model_name


def replay_args(args: str | dict[str, Any] | None) -> dict[str, Any]:
    """A tool call's arguments as the JSON object a provider requires when the call is replayed.

    Raw text that is not a JSON object (which the agent answered with a retry prompt) is replayed
    inside one, as `{"_raw_arguments": text}`; absent or blank arguments become `{}`.
    """
    if args is None:
        return {}
    if isinstance(args, dict):
        return args
    if not args.strip():
        return {}
    try:
        decoded = msgspec.json.decode(args)
    except msgspec.DecodeError:
        decoded = None
    if isinstance(decoded, dict):
        return decoded  # pyright: ignore[reportUnknownVariableType]
    return {"_raw_arguments": args}
