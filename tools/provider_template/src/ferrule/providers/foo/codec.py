"""The Foo wire codec: `ModelCall` → request bytes, response bytes and server-sent events → ferrule.

Pure: no sockets, no credentials. [`FooCodec`][ferrule.providers.foo.codec.FooCodec] is the
[`Codec`][ferrule.core.codec.Codec] of one model. The Foo API (a stand-in: replace it with yours):

* request: `{"model", "system"?, "messages": [{"role": "user" | "assistant", "text"}], "max_tokens"?,
  "temperature"?, "stream"}`;
* buffered response: `{"id", "model", "text", "finish": "stop" | "length", "usage": {"input", "output"}}`;
* stream: `event: delta` events (`{"text"}`), then one `event: done` (the buffered response
  without `text`); an `event: error` (`{"code", "message"}`) can end it instead.

Anything the API cannot take is refused with `UnsupportedContentError` before a request is sent;
malformed input raises `ResponseDecodeError`, never an empty success.
"""

from __future__ import annotations

from typing import Any
from typing import Final
from typing import Literal
from typing import assert_never

import msgspec

from ferrule.core import bounded_json
from ferrule.core.codec import WireRequest
from ferrule.core.codec_parts import never_sent
from ferrule.core.errors import ERROR_CLASSES
from ferrule.core.errors import ErrorCategory
from ferrule.core.errors import ResponseDecodeError
from ferrule.core.errors import UnsupportedContentError
from ferrule.core.errors import UserError
from ferrule.core.messages import AudioUrl
from ferrule.core.messages import BinaryContent
from ferrule.core.messages import CachePoint
from ferrule.core.messages import CompactionPart
from ferrule.core.messages import DocumentUrl
from ferrule.core.messages import FilePart
from ferrule.core.messages import FinishReason
from ferrule.core.messages import ImageUrl
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import NativeToolCallPart
from ferrule.core.messages import NativeToolReturnPart
from ferrule.core.messages import RetryFeedbackPart
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import SpeechPart
from ferrule.core.messages import SystemPromptPart
from ferrule.core.messages import TextContent
from ferrule.core.messages import TextPart
from ferrule.core.messages import ThinkingPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.messages import UploadedFile
from ferrule.core.messages import UserContent
from ferrule.core.messages import UserPromptPart
from ferrule.core.messages import VideoUrl
from ferrule.core.model import ModelCall
from ferrule.core.model import ModelStreamEvent
from ferrule.core.model import ResponseCompleted
from ferrule.core.sse import SseEvent
from ferrule.core.streaming import ResponseBuilder
from ferrule.core.usage import RequestUsage

__all__ = ["PROVIDER_NAME", "FooCodec", "FooStreamDecoder"]

PROVIDER_NAME: Final = "foo"
"""The provider name recorded on responses."""

_FINISH: Final[dict[str, FinishReason]] = {"stop": "stop", "length": "length"}
_ERRORS: Final[dict[str, ErrorCategory]] = {
    "overloaded": ErrorCategory.SERVER,
    "rate_limited": ErrorCategory.RATE_LIMIT,
    "invalid_request": ErrorCategory.BAD_REQUEST,
}


# --- encoding ------------------------------------------------------------------------------------


class _Encoder:
    def __init__(self, model_name: str) -> None:
        self.model_name = model_name
        self.system: list[str] = []
        self.messages: list[dict[str, str]] = []

    def refuse(self, kind: str, reason: str) -> UnsupportedContentError:
        return UnsupportedContentError(kind, provider=PROVIDER_NAME, model=self.model_name, reason=reason)

    def add(self, role: Literal["user", "assistant"], text: str) -> None:
        # Foo takes one message per turn: consecutive texts of one role are joined.
        if self.messages and self.messages[-1]["role"] == role:
            self.messages[-1]["text"] += "\n\n" + text
        else:
            self.messages.append({"role": role, "text": text})

    def request(self, message: ModelRequest) -> None:
        for part in message.parts:
            match part:
                case SystemPromptPart():
                    self.system.append(part.content)
                case UserPromptPart():
                    self.add("user", "".join(self.user_text(item) for item in part.iter_content()))
                case RetryPromptPart() | RetryFeedbackPart():
                    self.add("user", part.model_response())
                case CompactionPart():
                    if part.content:
                        self.add("user", part.content)
                case SpeechPart():
                    if part.transcript is None:
                        raise self.refuse("speech", "Foo takes text only; transcribe the audio first")
                    self.add("user", part.transcript)
                case ToolReturnPart():
                    # A result of another model's tool call: Foo has no tools (its profile says so).
                    raise self.refuse(part.part_kind, "Foo has no tools; start a new history for it")
                case _:
                    never_sent(part)  # records of how the call's configuration changed; the call carries it

    def user_text(self, item: UserContent) -> str:
        match item:
            case str():
                return item
            case TextContent():  # StructuredContent too: its rendered text
                return item.content
            case CachePoint():
                return ""  # Foo caches nothing
            case ImageUrl() | AudioUrl() | VideoUrl() | DocumentUrl() | BinaryContent() | UploadedFile():
                # The profile lists no media, so a call with media fails before encoding; this is
                # the belt to that brace.
                raise self.refuse(str(type(item).__struct_config__.tag), "Foo takes text only")
            case _:
                assert_never(item)

    def response(self, message: ModelResponse) -> None:
        for part in message.parts:
            match part:
                case TextPart():
                    self.add("assistant", part.content)
                case ThinkingPart():
                    pass  # reasoning belongs to the model that produced it
                case CompactionPart():
                    if part.content:
                        self.add("assistant", part.content)
                case (
                    ToolCallPart() | NativeToolCallPart() | NativeToolReturnPart() | FilePart() | SpeechPart()
                ):
                    raise self.refuse(part.part_kind, "Foo replays only text answers")
                case _:
                    assert_never(part)

    def build(self, call: ModelCall, stream: bool) -> dict[str, Any]:
        if call.instructions:
            self.system.insert(0, call.instructions)
        for message in call.messages:
            if isinstance(message, ModelRequest):
                self.request(message)
            else:
                self.response(message)
        body: dict[str, Any] = {"model": self.model_name, "messages": self.messages, "stream": stream}
        if self.system:
            body["system"] = "\n\n".join(self.system)
        settings = call.settings
        if settings.max_tokens is not None:
            body["max_tokens"] = settings.max_tokens
        if settings.temperature is not None:
            body["temperature"] = settings.temperature
        body.update(settings.extra_body_for(PROVIDER_NAME, body.keys()))
        return body


# --- decoding ------------------------------------------------------------------------------------


class _Usage(msgspec.Struct):
    input: int = 0
    output: int = 0


class _Done(msgspec.Struct):
    id: str | None = None
    model: str | None = None
    finish: str | None = None
    usage: _Usage | None = None
    text: str | None = None


class _Delta(msgspec.Struct):
    text: str


class _Error(msgspec.Struct):
    message: str = ""
    code: str | None = None


def _decode(data: str | bytes, type: type[Any], what: str, model_name: str | None) -> Any:
    limits = bounded_json.STREAM_EVENT if isinstance(data, str) else bounded_json.PROVIDER_RESPONSE
    return bounded_json.decode_provider_json(
        data, type, limits, what, provider_name=PROVIDER_NAME, model_name=model_name
    )


def _response(
    done: _Done, parts: list[Any], model_name: str | None, provider_url: str | None
) -> ModelResponse:
    if done.finish is None:
        raise ResponseDecodeError(
            "the Foo response has no finish reason", provider_name=PROVIDER_NAME, model_name=model_name
        )
    usage = done.usage or _Usage()
    return ModelResponse(
        parts=parts,
        usage=RequestUsage(input_tokens=usage.input, output_tokens=usage.output, cache_reported=False),
        model_name=done.model or model_name,
        provider_name=PROVIDER_NAME,
        provider_url=provider_url,
        provider_details={"finish_reason": done.finish},
        provider_response_id=done.id,
        finish_reason=_FINISH.get(done.finish, "other"),
    )


class FooStreamDecoder:
    """Turns the events of one streamed Foo response into ferrule stream events.

    A [`StreamDecoder`][ferrule.core.codec.StreamDecoder]: `feed` each server-sent event, then
    `finish` at the end of the body. A stream cut before its `done` event raises `ResponseDecodeError`.
    """

    def __init__(self, *, model_name: str | None = None, provider_url: str | None = None) -> None:
        self._model_name = model_name
        self._provider_url = provider_url
        self._builder = ResponseBuilder()
        self._done: _Done | None = None

    def feed(self, event: SseEvent) -> list[ModelStreamEvent]:
        """Decode one server-sent event; returns the stream events it produces."""
        if self._done is not None:
            raise ResponseDecodeError(
                "the Foo stream went on after its done event", provider_name=PROVIDER_NAME
            )
        match event.event:
            case "delta":
                delta: _Delta = _decode(event.data, _Delta, "a Foo delta event", self._model_name)
                return self._builder.text(delta.text)
            case "done":
                self._done = _decode(event.data, _Done, "the Foo done event", self._model_name)
                return []
            case "error":
                error: _Error = _decode(event.data, _Error, "a Foo error event", self._model_name)
                category = _ERRORS.get(error.code or "", ErrorCategory.SERVER)
                raise ERROR_CLASSES[category](
                    f"Foo reported an error: {error.message}",
                    provider_name=PROVIDER_NAME,
                    model_name=self._model_name,
                    code=error.code,
                )
            case _:
                return []  # event types this client does not know yet

    def finish(self) -> list[ModelStreamEvent]:
        """The closing part-end events, then the `ResponseCompleted`."""
        if self._done is None:
            raise ResponseDecodeError(
                "the Foo stream ended before its done event; the response is incomplete",
                provider_name=PROVIDER_NAME,
                model_name=self._model_name,
            )
        events = self._builder.finish()
        parts = self._builder.parts
        events.append(ResponseCompleted(_response(self._done, parts, self._model_name, self._provider_url)))
        return events


class FooCodec:
    """The Foo wire format of one model: a [`Codec`][ferrule.core.codec.Codec].

    `model_name` is what requests are for (decoding alone needs none); `provider_url`, the API
    root, is recorded on decoded responses.
    """

    def __init__(self, *, model_name: str | None = None, provider_url: str | None = None) -> None:
        self._model_name = model_name
        self._provider_url = provider_url

    def encode(self, call: ModelCall, *, stream: bool = False) -> WireRequest:
        """The request for `call`; raises `UnsupportedContentError` for what Foo cannot take."""
        if self._model_name is None:
            raise UserError("FooCodec needs a model_name to encode a request")
        body = _Encoder(self._model_name).build(call, stream)
        return WireRequest(body=msgspec.json.encode(body))

    def decode(self, body: bytes) -> ModelResponse:
        """Decode a buffered response body."""
        done: _Done = _decode(body, _Done, "the Foo response", self._model_name)
        parts = [TextPart(content=done.text)] if done.text else []
        return _response(done, parts, self._model_name, self._provider_url)

    def stream_decoder(self) -> FooStreamDecoder:
        """A fresh decoder for one streamed response."""
        return FooStreamDecoder(model_name=self._model_name, provider_url=self._provider_url)
