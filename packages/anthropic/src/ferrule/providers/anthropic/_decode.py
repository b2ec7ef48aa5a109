"""Decode Messages API responses, buffered and streamed, into ferrule messages and stream events.

Every byte decoded here is untrusted: JSON goes through `ferrule.core.bounded_json`, every field is
type-checked before use, and anything malformed raises `ResponseDecodeError` (never a partial or
empty success). Unknown content blocks, stream events and deltas are ignored so that new API
features do not break old clients.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from typing import Final
from typing import Literal
from typing import cast

import msgspec

from ferrule.core import bounded_json
from ferrule.core.codec import MIN_BATCH
from ferrule.core.codec import decode_stream as _decode_sse
from ferrule.core.codec import fast_runs
from ferrule.core.errors import ERROR_CLASSES
from ferrule.core.errors import ErrorCategory
from ferrule.core.errors import ProviderError
from ferrule.core.errors import ResponseDecodeError
from ferrule.core.messages import CompactionPart
from ferrule.core.messages import FinishReason
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import ModelResponsePart
from ferrule.core.messages import NativeToolCallPart
from ferrule.core.messages import NativeToolReturnPart
from ferrule.core.messages import TextPart
from ferrule.core.messages import ThinkingPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.model import ModelStreamEvent
from ferrule.core.model import PartEndEvent
from ferrule.core.model import ResponseCompleted
from ferrule.core.sse import SseEvent
from ferrule.core.streaming import ResponseBuilder
from ferrule.core.usage import RequestUsage

from ._encode import PROVIDER_NAME
from ._encode import WIRE_NAME_DETAIL

__all__ = [
    "ERROR_CATEGORIES",
    "FINISH_REASONS",
    "StreamDecoder",
    "decode_response",
    "decode_stream",
    "error_from_body",
    "finish_reason",
    "map_usage",
]

FINISH_REASONS: Final[dict[str, FinishReason]] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "compaction": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_call",
    "refusal": "content_filter",
    "pause_turn": "other",
}
"""Anthropic `stop_reason` → normalized finish reason; any other value maps to `"other"`."""

ERROR_CATEGORIES: Final[dict[str, ErrorCategory]] = {
    "overloaded_error": ErrorCategory.SERVER,
    "api_error": ErrorCategory.SERVER,
    "rate_limit_error": ErrorCategory.RATE_LIMIT,
    "authentication_error": ErrorCategory.AUTH,
    "permission_error": ErrorCategory.AUTH,
    "invalid_request_error": ErrorCategory.BAD_REQUEST,
    "not_found_error": ErrorCategory.BAD_REQUEST,
    "request_too_large": ErrorCategory.BAD_REQUEST,
    "billing_error": ErrorCategory.BAD_REQUEST,
    "timeout_error": ErrorCategory.TIMEOUT,
}
"""Anthropic error `type` → ferrule error category (unknown types are server errors)."""

# Result block types whose neutral tool name is not simply the prefix before `_tool_result`.
_RESULT_TOOL_NAME: Final = {
    "bash_code_execution_tool_result": "code_execution",
    "text_editor_code_execution_tool_result": "code_execution",
    "tool_search_tool_result": "tool_search",
}
# `server_tool_use` names that map to another neutral name (the wire name is kept in details).
_CALL_TOOL_NAME: Final = {
    "bash_code_execution": "code_execution",
    "text_editor_code_execution": "code_execution",
    "tool_search_tool_bm25": "tool_search",
    "tool_search_tool_regex": "tool_search",
}
_MAX_MESSAGE: Final = 1024


def _fail(message: str, model_name: str | None) -> ResponseDecodeError:
    return ResponseDecodeError(message, provider_name=PROVIDER_NAME, model_name=model_name)


def _obj(value: Any, what: str, model_name: str | None) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(f"{what} is not a JSON object", model_name)
    return value  # pyright: ignore[reportUnknownVariableType]


def _opt_str(obj: dict[str, Any], key: str, what: str, model_name: str | None) -> str | None:
    value = obj.get(key)
    if value is None or isinstance(value, str):
        return value
    raise _fail(f"{what}.{key} is not a string", model_name)


def _req_str(obj: dict[str, Any], key: str, what: str, model_name: str | None) -> str:
    value = obj.get(key)
    if not isinstance(value, str):
        raise _fail(f"{what}.{key} is missing or not a string", model_name)
    return value


def _opt_int(obj: dict[str, Any], key: str) -> int | None:
    value = obj.get(key)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def finish_reason(raw: str | None) -> FinishReason | None:
    """The normalized finish reason of an Anthropic `stop_reason` (`None` when there is none)."""
    if raw is None:
        return None
    return FINISH_REASONS.get(raw, "other")


def map_usage(raw: dict[str, Any]) -> RequestUsage:
    """Normalize an Anthropic `usage` object: input includes cache reads and writes, output includes
    thinking, and provider-only counters keep their names in `details`."""
    input_tokens = _opt_int(raw, "input_tokens") or 0
    cache_write = _opt_int(raw, "cache_creation_input_tokens")
    cache_read = _opt_int(raw, "cache_read_input_tokens")
    output_tokens = _opt_int(raw, "output_tokens") or 0
    details: dict[str, int] = {}
    cache_write_1h = 0
    creation = raw.get("cache_creation")
    if isinstance(creation, dict):
        cache_write_1h = _opt_int(creation, "ephemeral_1h_input_tokens") or 0  # pyright: ignore[reportUnknownArgumentType]
    reasoning = 0
    output_details = raw.get("output_tokens_details")
    if isinstance(output_details, dict):
        reasoning = _opt_int(output_details, "thinking_tokens") or 0  # pyright: ignore[reportUnknownArgumentType]
        if reasoning:
            details["reasoning_tokens"] = reasoning
    server = raw.get("server_tool_use")
    if isinstance(server, dict):
        for key, value in server.items():  # pyright: ignore[reportUnknownVariableType]
            if isinstance(key, str) and isinstance(value, int) and not isinstance(value, bool) and value > 0:
                details[key] = value
    iterations = raw.get("iterations")
    if isinstance(iterations, list):
        # Top-level totals exclude compaction passes, which are billed: add them back in.
        for item in iterations:  # pyright: ignore[reportUnknownVariableType]
            if isinstance(item, dict) and item.get("type") == "compaction":  # pyright: ignore[reportUnknownMemberType]
                extra_in = _opt_int(item, "input_tokens") or 0  # pyright: ignore[reportUnknownArgumentType]
                extra_out = _opt_int(item, "output_tokens") or 0  # pyright: ignore[reportUnknownArgumentType]
                input_tokens += extra_in
                output_tokens += extra_out
                details["compaction_input_tokens"] = details.get("compaction_input_tokens", 0) + extra_in
                details["compaction_output_tokens"] = details.get("compaction_output_tokens", 0) + extra_out
    return RequestUsage(
        input_tokens=input_tokens + (cache_write or 0) + (cache_read or 0),
        cache_write_tokens=cache_write or 0,
        cache_read_tokens=cache_read or 0,
        cache_write_1h_tokens=cache_write_1h,
        output_tokens=output_tokens,
        output_reasoning_tokens=reasoning,
        details=details,
        cache_reported=cache_write is not None or cache_read is not None,
    )


def error_from_body(error: Any, *, status: int | None = None, model_name: str | None = None) -> ProviderError:
    """The `ProviderError` for an Anthropic error object (`{"type": ..., "message": ...}`)."""
    code: str | None = None
    message = "the provider reported an error"
    if isinstance(error, dict):
        fields = cast("dict[str, Any]", error)
        raw_code = fields.get("type")
        if isinstance(raw_code, str):
            code = raw_code[:128]
        raw_message = fields.get("message")
        if isinstance(raw_message, str) and raw_message:
            message = raw_message[:_MAX_MESSAGE]
    category = ERROR_CATEGORIES.get(code or "", ErrorCategory.SERVER)
    return ERROR_CLASSES[category](
        message, provider_name=PROVIDER_NAME, model_name=model_name, status_code=status, code=code
    )


# -- content blocks --------------------------------------------------------------------------------


class _Parts:
    """Maps complete content blocks to response parts (shared by buffered and streamed decoding)."""

    def __init__(self, model_name: str | None) -> None:
        self.model_name = model_name
        self.native_calls: dict[str, str] = {}
        self.ignored: list[str] = []

    def block(self, block: dict[str, Any]) -> ModelResponsePart | None:
        model_name = self.model_name
        kind = _req_str(block, "type", "content block", model_name)
        if kind == "text":
            text = _req_str(block, "text", "text block", model_name)
            citations = block.get("citations")
            if not text:
                return None
            return TextPart(content=text, citations=_citations(citations, model_name))
        if kind == "thinking":
            return ThinkingPart(
                content=_req_str(block, "thinking", "thinking block", model_name),
                signature=_opt_str(block, "signature", "thinking block", model_name) or None,
                provider_name=PROVIDER_NAME,
            )
        if kind == "redacted_thinking":
            return ThinkingPart(
                content="", provider_name=PROVIDER_NAME, provider_details=_redacted(block, model_name)
            )
        if kind == "tool_use":
            details = _caller_details(block)
            return ToolCallPart(
                tool_name=_req_str(block, "name", "tool_use block", model_name),
                args=_input(block, "tool_use block", model_name),
                tool_call_id=_req_str(block, "id", "tool_use block", model_name),
                provider_name=PROVIDER_NAME if details else None,
                provider_details=details,
            )
        if kind == "server_tool_use":
            return self._native_call(block)
        if kind == "mcp_tool_use":
            server = _req_str(block, "server_name", "mcp_tool_use block", model_name)
            call_id = _req_str(block, "id", "mcp_tool_use block", model_name)
            tool_name = f"mcp_server:{server}"
            self.native_calls[call_id] = tool_name
            return NativeToolCallPart(
                tool_name=tool_name,
                args={
                    "action": "call_tool",
                    "tool_name": _req_str(block, "name", "mcp_tool_use block", model_name),
                    "tool_args": _input(block, "mcp_tool_use block", model_name),
                },
                tool_call_id=call_id,
                provider_name=PROVIDER_NAME,
            )
        if kind == "mcp_tool_result":
            call_id = _req_str(block, "tool_use_id", "mcp_tool_result block", model_name)
            is_error = block.get("is_error") is True
            return NativeToolReturnPart(
                tool_name=self.native_calls.get(call_id, "mcp_server"),
                content={"content": block.get("content"), "is_error": is_error},
                tool_call_id=call_id,
                outcome="failed" if is_error else "success",
                provider_name=PROVIDER_NAME,
            )
        if kind.endswith("_tool_result") and "tool_use_id" in block:
            return self._native_result(kind, block)
        if kind == "compaction":
            content = block.get("content")
            encrypted = block.get("encrypted_content")
            return CompactionPart(
                content=content if isinstance(content, str) else None,
                provider_name=PROVIDER_NAME,
                provider_details={"encrypted_content": encrypted} if isinstance(encrypted, str) else None,
            )
        self.ignored.append(kind)
        return None

    def _native_call(self, block: dict[str, Any]) -> NativeToolCallPart:
        model_name = self.model_name
        wire = _req_str(block, "name", "server_tool_use block", model_name)
        call_id = _req_str(block, "id", "server_tool_use block", model_name)
        name = _CALL_TOOL_NAME.get(wire, wire)
        details = _caller_details(block) or {}
        if name != wire:
            details[WIRE_NAME_DETAIL] = wire
        self.native_calls[call_id] = name
        args = _input(block, "server_tool_use block", model_name)
        return NativeToolCallPart(
            tool_name=name,
            args=args or None,
            tool_call_id=call_id,
            provider_name=PROVIDER_NAME,
            provider_details=details or None,
        )

    def _native_result(self, kind: str, block: dict[str, Any]) -> NativeToolReturnPart:
        call_id = _req_str(block, "tool_use_id", f"{kind} block", self.model_name)
        name = _RESULT_TOOL_NAME.get(kind, kind.removesuffix("_tool_result"))
        details = _caller_details(block) or {}
        if kind != f"{name}_tool_result":
            details[WIRE_NAME_DETAIL] = kind.removesuffix("_tool_result")
        content = block.get("content")
        failed = isinstance(content, dict) and str(content.get("type", "")).endswith("_error")  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        return NativeToolReturnPart(
            tool_name=name,
            content=content,
            tool_call_id=call_id,
            outcome="failed" if failed else "success",
            provider_name=PROVIDER_NAME,
            provider_details=details or None,
        )


def _citations(raw: Any, model_name: str | None) -> list[dict[str, Any]] | None:
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise _fail("text block citations are not a list", model_name)
    items: list[dict[str, Any]] = [c for c in raw if isinstance(c, dict)]  # pyright: ignore[reportUnknownVariableType]
    return items or None


def _redacted(block: dict[str, Any], model_name: str | None) -> dict[str, Any]:
    return {
        "type": "redacted_thinking",
        "data": _req_str(block, "data", "redacted_thinking block", model_name),
    }


def _caller_details(block: dict[str, Any]) -> dict[str, Any] | None:
    caller = block.get("caller")
    # A direct call is the default; only programmatic callers need replaying.
    if isinstance(caller, dict) and caller.get("type") != "direct":  # pyright: ignore[reportUnknownMemberType]
        return {"caller": caller}
    return None


def _input(block: dict[str, Any], what: str, model_name: str | None) -> dict[str, Any]:
    value = block.get("input", {})
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _fail(f"{what}.input is not a JSON object", model_name)
    return value  # pyright: ignore[reportUnknownVariableType]


def _provider_details(
    stop_reason: str | None, message: dict[str, Any], ignored: list[str]
) -> dict[str, Any] | None:
    details: dict[str, Any] = {}
    if stop_reason is not None:
        details["finish_reason"] = stop_reason
    stop_sequence = message.get("stop_sequence")
    if isinstance(stop_sequence, str):
        details["stop_sequence"] = stop_sequence
    stop_details = message.get("stop_details")
    if isinstance(stop_details, dict) and stop_details:
        details["stop_details"] = stop_details
    container = message.get("container")
    if isinstance(container, dict) and isinstance(container.get("id"), str):  # pyright: ignore[reportUnknownMemberType]
        details["container_id"] = container["id"]
    if ignored:
        details["ignored_block_types"] = sorted(set(ignored))
    return details or None


# -- buffered --------------------------------------------------------------------------------------


def decode_response(
    body: bytes, *, model_name: str | None = None, provider_url: str | None = None
) -> ModelResponse:
    """Decode a buffered Messages API response body.

    An API error envelope (`{"type": "error", ...}`) raises its mapped `ProviderError`; anything
    that is not a complete message raises `ResponseDecodeError`.
    """
    try:
        document = bounded_json.decode(body, limits=bounded_json.PROVIDER_RESPONSE)
    except bounded_json.JsonError as exc:
        raise _fail(f"the response body is not valid JSON: {exc}", model_name) from None
    message = _obj(document, "the response body", model_name)
    if message.get("type") == "error":
        raise error_from_body(message.get("error"), model_name=model_name)
    content = message.get("content")
    if not isinstance(content, list):
        raise _fail("the response has no content list; it is not a Messages API message", model_name)
    reported_model = _opt_str(message, "model", "message", model_name)
    parts_mapper = _Parts(model_name)
    parts: list[ModelResponsePart] = []
    for block in content:  # pyright: ignore[reportUnknownVariableType]
        part = parts_mapper.block(_obj(block, "a content block", model_name))
        if part is not None:
            parts.append(part)
    stop_reason = _opt_str(message, "stop_reason", "message", model_name)
    usage = message.get("usage")
    return ModelResponse(
        parts=parts,
        usage=map_usage(usage) if isinstance(usage, dict) else RequestUsage(cache_reported=False),  # pyright: ignore[reportUnknownArgumentType]
        model_name=reported_model or model_name,
        provider_name=PROVIDER_NAME,
        provider_url=provider_url,
        provider_details=_provider_details(stop_reason, message, parts_mapper.ignored),
        provider_response_id=_opt_str(message, "id", "message", model_name),
        finish_reason=finish_reason(stop_reason),
        state="suspended" if stop_reason == "pause_turn" else "complete",
    )


# -- streamed --------------------------------------------------------------------------------------


class _Block:
    """A content block being streamed."""

    __slots__ = ("block", "citations", "json", "kind")

    def __init__(self, kind: str, block: dict[str, Any]) -> None:
        self.kind = kind
        self.block = block
        self.json: list[str] = []
        self.citations: list[dict[str, Any]] = []


# The fast path for a stream's common event: a text delta of a content block. It has every field
# the full path reads for one, typed as the full path requires them, so an event that does not fit
# takes the full path, which decodes (or refuses) it as before. Not tracked by the garbage
# collector: a decoded document holds no reference cycles.
class _TextDelta(msgspec.Struct, gc=False):
    type: Literal["text_delta"]
    text: str


class _TextDeltaEvent(msgspec.Struct, gc=False):
    type: Literal["content_block_delta"]
    index: int  # strictly: not a bool
    delta: _TextDelta


_TEXT_DELTA: Final = bounded_json.FastPathDecoder(_TextDeltaEvent, bounded_json.STREAM_EVENT)


class StreamDecoder:
    """Incrementally maps the Messages API's server-sent events to ferrule stream events.

    A [`StreamDecoder`][ferrule.core.codec.StreamDecoder]: feed each event with
    [`feed`][ferrule.providers.anthropic.codec.StreamDecoder.feed]; at the end of the body call
    [`finish`][ferrule.providers.anthropic.codec.StreamDecoder.finish], which returns the last
    part-end events and the `ResponseCompleted`, or raises `ResponseDecodeError` when the stream
    ended before `message_stop`. An `error` event raises its mapped `ProviderError`. Once
    `message_stop` has arrived (`done`) the rest of the stream is ignored.
    """

    def __init__(self, *, model_name: str | None = None, provider_url: str | None = None) -> None:
        self.model_name = model_name
        """The requested model, used until `message_start` reports the serving model."""
        self.provider_url = provider_url
        """The API root, recorded on the response."""
        self.done = False
        """Whether `message_stop` has arrived."""
        self._builder = ResponseBuilder()
        self._parts = _Parts(model_name)
        self._blocks: dict[int, _Block] = {}
        self._started = False
        self._message: dict[str, Any] = {}
        self._usage: dict[str, Any] = {}
        self._stop_reason: str | None = None
        self._response_id: str | None = None
        self._reported_model: str | None = None

    def feed(self, sse: SseEvent) -> list[ModelStreamEvent]:
        """Process one server-sent event; returns the events it yields."""
        if self.done:
            return []  # nothing after message_stop can change the response
        fast = _TEXT_DELTA.decode(sse.data)
        if fast is not None:
            # Only a started block (after message_start, at a valid index) is found.
            state = self._blocks.get(fast.index)
            if state is not None and state.kind == "text":
                return self._builder.text(fast.delta.text, key=fast.index)
        return self._full(sse)

    def feed_many(self, events: Sequence[SseEvent], out: list[ModelStreamEvent]) -> None:
        """Process the events of one network read in order, adding the events they yield to `out`.

        A [`BatchStreamDecoder`][ferrule.core.codec.BatchStreamDecoder]: the same as `feed` for
        each event, its events added to `out` (so when one raises, `out` holds those of the events
        before it). The text deltas among them are decoded in one loop for the read.
        """
        count = len(events)
        if count < MIN_BATCH or self.done or type(self).feed is not StreamDecoder.feed:
            # A read of a slow stream, the stream's end, or a subclass's own `feed`, which sees
            # every event.
            for event in events:
                out += self.feed(event)
            return
        start = 0
        for run, misfit in fast_runs(_TEXT_DELTA, events):
            if run:
                self._text_deltas(run, events, start, out)
            if misfit is None:
                return
            start += len(run) + 1
            out += self._full(misfit)  # what `feed` does with an event off the fast path
            if self.done:
                return  # after message_stop `feed` ignores every event

    def _text_deltas(
        self,
        deltas: list[_TextDeltaEvent],
        events: Sequence[SseEvent],
        start: int,
        out: list[ModelStreamEvent],
    ) -> None:
        """`feed` for `deltas`, decoded from `events[start:]`, in order, their events added to `out`.

        A delta of a started text block takes the fast path, as in `feed` (those of one block
        together); any other goes the full way.
        """
        blocks = self._blocks
        index: int | None = None
        pending: list[str] = []
        for position, event in enumerate(deltas):
            if event.index != index:
                if pending:
                    self._builder.texts(pending, out, key=index)
                    pending = []
                state = blocks.get(event.index)
                if state is None or state.kind != "text":
                    index = None  # a full-path event may start or stop a block: looked up again
                    out += self._full(events[start + position])
                    continue
                index = event.index
            pending.append(event.delta.text)
        if pending:
            self._builder.texts(pending, out, key=index)

    def _full(self, sse: SseEvent) -> list[ModelStreamEvent]:
        """`feed` for an event off the fast path (not a text delta of a started text block)."""
        event, data = sse.event, sse.data
        try:
            payload = bounded_json.decode(data, limits=bounded_json.STREAM_EVENT)
        except bounded_json.JsonError as exc:
            raise _fail(f"a stream event ({event!r}) is not valid JSON: {exc}", self.model_name) from None
        if not isinstance(payload, dict):
            raise _fail(f"a stream event ({event!r}) is not a JSON object", self.model_name)
        obj: dict[str, Any] = payload  # pyright: ignore[reportUnknownVariableType]
        kind = obj.get("type", event)
        if not isinstance(kind, str):
            raise _fail("a stream event's type is not a string", self.model_name)
        if kind == "error":
            raise error_from_body(obj.get("error"), model_name=self.model_name)
        if kind == "ping":
            return []
        if kind == "message_start":
            return self._message_start(obj)
        if not self._started:
            if kind in (
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop",
            ):
                raise _fail(f"the stream sent {kind} before message_start", self.model_name)
            return []
        if kind == "content_block_start":
            return self._block_start(obj)
        if kind == "content_block_delta":
            return self._block_delta(obj)
        if kind == "content_block_stop":
            return self._block_stop(obj)
        if kind == "message_delta":
            self._message_delta(obj)
            return []
        if kind == "message_stop":
            self.done = True
            return []
        return []  # an event type this client does not know yet

    def finish(self) -> list[ModelStreamEvent]:
        """End of the stream: the closing part-end events, then the `ResponseCompleted`."""
        if not self.done:
            what = "before message_start" if not self._started else "before message_stop"
            raise _fail(
                f"the stream ended {what}; the response is incomplete (connection closed early?)",
                self.model_name,
            )
        events = self._builder.finish()
        message = {**self._message, "stop_reason": self._stop_reason}
        response = ModelResponse(
            parts=self._builder.parts,
            usage=map_usage(self._usage) if self._usage else RequestUsage(cache_reported=False),
            model_name=self._reported_model or self.model_name,
            provider_name=PROVIDER_NAME,
            provider_url=self.provider_url,
            provider_details=_provider_details(self._stop_reason, message, self._parts.ignored),
            provider_response_id=self._response_id,
            finish_reason=finish_reason(self._stop_reason),
            state="suspended" if self._stop_reason == "pause_turn" else "complete",
        )
        events.append(ResponseCompleted(response))
        return events

    # -- events -----------------------------------------------------------------------------------

    def _message_start(self, obj: dict[str, Any]) -> list[ModelStreamEvent]:
        if self._started:
            raise _fail("the stream sent message_start twice", self.model_name)
        self._started = True
        message = _obj(obj.get("message"), "message_start.message", self.model_name)
        self._response_id = _opt_str(message, "id", "message", self.model_name)
        self._reported_model = _opt_str(message, "model", "message", self.model_name)
        self._parts.model_name = self._reported_model or self.model_name
        usage = message.get("usage")
        if isinstance(usage, dict):
            self._merge_usage(usage)  # pyright: ignore[reportUnknownArgumentType]
        self._stop_reason = _opt_str(message, "stop_reason", "message", self.model_name)
        self._keep(message)
        events: list[ModelStreamEvent] = []
        content = message.get("content")
        if isinstance(content, list):
            for block in content:  # pyright: ignore[reportUnknownVariableType]
                part = self._parts.block(_obj(block, "a content block", self.model_name))
                if part is not None:
                    events.extend(self._builder.add(part))
        return events

    def _keep(self, message: dict[str, Any]) -> None:
        for key in ("stop_sequence", "stop_details", "container"):
            if message.get(key) is not None:
                self._message[key] = message[key]

    def _merge_usage(self, usage: dict[str, Any]) -> None:
        # Counters are cumulative: a later value replaces an earlier one; null means "not sent".
        self._usage.update({k: v for k, v in usage.items() if v is not None})

    def _message_delta(self, obj: dict[str, Any]) -> None:
        delta = obj.get("delta")
        if isinstance(delta, dict):
            stop = _opt_str(delta, "stop_reason", "message_delta.delta", self.model_name)  # pyright: ignore[reportUnknownArgumentType]
            if stop is not None:
                self._stop_reason = stop
            self._keep(delta)  # pyright: ignore[reportUnknownArgumentType]
        usage = obj.get("usage")
        if isinstance(usage, dict):
            self._merge_usage(usage)  # pyright: ignore[reportUnknownArgumentType]

    def _index(self, obj: dict[str, Any], kind: str) -> int:
        index = obj.get("index")
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            raise _fail(f"{kind} has no valid index", self.model_name)
        return index

    def _block_start(self, obj: dict[str, Any]) -> list[ModelStreamEvent]:
        index = self._index(obj, "content_block_start")
        if index in self._blocks:
            raise _fail(f"content block {index} started twice", self.model_name)
        block = _obj(obj.get("content_block"), "content_block_start.content_block", self.model_name)
        kind = _req_str(block, "type", "content block", self.model_name)
        state = _Block(kind, block)
        self._blocks[index] = state
        builder = self._builder
        model_name = self.model_name
        if kind == "text":
            text = _req_str(block, "text", "text block", model_name)
            citations = block.get("citations")
            if citations is not None:
                state.citations.extend(_citations(citations, model_name) or ())
            return builder.text(text, key=index)
        if kind == "thinking":
            return builder.thinking(
                _req_str(block, "thinking", "thinking block", model_name) or None,
                key=index,
                signature=_opt_str(block, "signature", "thinking block", model_name) or None,
                provider_name=PROVIDER_NAME,
            )
        if kind == "redacted_thinking":
            return builder.thinking(
                None, key=index, provider_name=PROVIDER_NAME, provider_details=_redacted(block, model_name)
            )
        if kind == "tool_use":
            args = _input(block, "tool_use block", model_name)
            details = _caller_details(block)
            return builder.tool_call(
                key=index,
                tool_name=_req_str(block, "name", "tool_use block", model_name),
                tool_call_id=_req_str(block, "id", "tool_use block", model_name),
                args=args or None,
                provider_name=PROVIDER_NAME if details else None,
                provider_details=details,
            )
        # Every other block (server tools and their results, compaction, unknown kinds) is kept
        # whole and becomes one part when it ends.
        return []

    def _block_delta(self, obj: dict[str, Any]) -> list[ModelStreamEvent]:
        index = self._index(obj, "content_block_delta")
        state = self._blocks.get(index)
        if state is None:
            raise _fail(
                f"a delta arrived for content block {index}, which was never started", self.model_name
            )
        delta = _obj(obj.get("delta"), "content_block_delta.delta", self.model_name)
        kind = _req_str(delta, "type", "delta", self.model_name)
        model_name = self.model_name
        builder = self._builder
        if kind == "text_delta" and state.kind == "text":
            return builder.text(_req_str(delta, "text", "text_delta", model_name), key=index)
        if kind == "thinking_delta" and state.kind == "thinking":
            text = _req_str(delta, "thinking", "thinking_delta", model_name)
            return builder.thinking(text, key=index) if text else []
        if kind == "signature_delta" and state.kind == "thinking":
            return builder.thinking(
                None, key=index, signature=_req_str(delta, "signature", "signature_delta", model_name)
            )
        if kind == "input_json_delta":
            fragment = _req_str(delta, "partial_json", "input_json_delta", model_name)
            if state.kind == "tool_use":
                return builder.tool_call(key=index, args=fragment) if fragment else []
            state.json.append(fragment)
            return []
        if kind == "citations_delta":
            citation = delta.get("citation")
            if isinstance(citation, dict):
                state.citations.append(citation)  # pyright: ignore[reportUnknownArgumentType]
            return []
        if kind == "compaction_delta":
            for key in ("content", "encrypted_content"):
                value = delta.get(key)
                if isinstance(value, str):
                    state.block[key] = value
            return []
        return []  # a delta kind this client does not know (or one that does not fit its block)

    def _block_stop(self, obj: dict[str, Any]) -> list[ModelStreamEvent]:
        index = self._index(obj, "content_block_stop")
        state = self._blocks.get(index)
        if state is None:
            raise _fail(f"content block {index} stopped without starting", self.model_name)
        if state.kind in ("text", "thinking", "redacted_thinking", "tool_use"):
            events = self._builder.end(index)
            for event in events:
                if isinstance(event, PartEndEvent):
                    _finish_part(event.part, state)
            return events
        block = state.block
        streamed = "".join(state.json)
        if streamed.strip():
            # Streamed server-tool input replaces the empty `input` of the block start.
            try:
                block["input"] = bounded_json.decode(streamed, limits=bounded_json.TOOL_ARGUMENTS)
            except bounded_json.JsonError as exc:
                raise _fail(
                    f"the input of a {state.kind} block is not valid JSON: {exc}", self.model_name
                ) from None
        part = self._parts.block(block)
        if part is None:
            return []
        return self._builder.add(part, key=index)


def _finish_part(part: ModelResponsePart, state: _Block) -> None:
    """Give a streamed part the exact shape the buffered decoder produces for the same block."""
    if isinstance(part, TextPart) and state.citations:
        part.citations = state.citations
    elif isinstance(part, ToolCallPart):
        if part.args is None or part.args == "":
            part.args = {}
        elif isinstance(part.args, str):
            try:
                decoded = bounded_json.decode(part.args, limits=bounded_json.TOOL_ARGUMENTS)
            except bounded_json.JsonError:
                decoded = None  # kept as raw text: the agent answers invalid arguments with a retry
            if isinstance(decoded, dict):
                part.args = decoded


def decode_stream(
    data: bytes, *, model_name: str | None = None, provider_url: str | None = None
) -> ModelResponse:
    """Decode the raw SSE body of a streamed Messages API response through the stream decoder."""
    return _decode_sse(StreamDecoder(model_name=model_name, provider_url=provider_url), data)
