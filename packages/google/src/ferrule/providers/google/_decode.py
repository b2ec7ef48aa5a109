"""Gemini GenerateContent responses → neutral responses and stream events.

Every byte decoded here is untrusted: JSON goes through `ferrule.core.bounded_json` into strict
msgspec types ([`_wire`][]), and anything that is not a complete answer raises
[`ResponseDecodeError`][ferrule.core.errors.ResponseDecodeError] — never an empty success.

A buffered response is decoded by the same incremental decoder as a stream (it is a stream of one
chunk), so both paths produce identical parts. Rules, in the order they apply:

* an `error` object (a stream can end with one) raises the mapped `ProviderError`;
* `promptFeedback.blockReason` raises [`ContentFilterError`][ferrule.core.errors.ContentFilterError]
  (the prompt was blocked; there is no answer);
* only candidate 0 is read; consecutive text chunks form one `TextPart`, consecutive thought
  chunks one `ThinkingPart`; function calls, code execution, server-side tool calls and inline
  files each become their own part;
* a `thoughtSignature` is kept in the part's `provider_details["thought_signature"]` (and in
  `ThinkingPart.signature`); a signature that arrives alone (an empty text part, as Gemini sends at
  the end of a stream) is attached to the text part it follows, or kept on an empty `ThinkingPart`
  so it can be sent back exactly where it came from;
* a finish reason that means content filtering with no content raises `ContentFilterError`; with
  partial content the response is returned with `finish_reason="content_filter"`;
* a stream (or body) without any `finishReason` raises `ResponseDecodeError`.
"""

from __future__ import annotations

import base64
import binascii
import re
from datetime import datetime
from typing import Any
from typing import Final
from typing import cast

from ferrule.core import bounded_json
from ferrule.core.codec import completed_response
from ferrule.core.errors import ERROR_CLASSES
from ferrule.core.errors import ContentFilterError
from ferrule.core.errors import ErrorCategory
from ferrule.core.errors import ProviderError
from ferrule.core.errors import ResponseDecodeError
from ferrule.core.http import classify_status
from ferrule.core.messages import BinaryContent
from ferrule.core.messages import FilePart
from ferrule.core.messages import FinishReason
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import ModelResponsePart
from ferrule.core.messages import NativeToolCallPart
from ferrule.core.messages import NativeToolReturnPart
from ferrule.core.messages import TextPart
from ferrule.core.messages import ThinkingPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import new_tool_call_id
from ferrule.core.model import ModelStreamEvent
from ferrule.core.model import PartEndEvent
from ferrule.core.model import PartStartEvent
from ferrule.core.model import ResponseCompleted
from ferrule.core.sse import SseEvent
from ferrule.core.sse import SseParser
from ferrule.core.streaming import ResponseBuilder
from ferrule.core.usage import RequestUsage

from ._wire import Candidate
from ._wire import GenerateContentResponse
from ._wire import ModalityCount
from ._wire import Part
from ._wire import Status
from ._wire import UsageMetadata

__all__ = [
    "FINISH_REASONS",
    "StreamDecoder",
    "category_for_status",
    "decode_response",
    "decode_stream",
    "error_from_status",
    "map_finish_reason",
    "usage_from_metadata",
]

FINISH_REASONS: Final[dict[str, FinishReason]] = {
    "FINISH_REASON_UNSPECIFIED": "other",
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "LANGUAGE": "error",
    "OTHER": "other",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "MALFORMED_FUNCTION_CALL": "error",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "IMAGE_RECITATION": "content_filter",
    "IMAGE_OTHER": "other",
    "NO_IMAGE": "error",
    "UNEXPECTED_TOOL_CALL": "error",
    "TOO_MANY_TOOL_CALLS": "error",
    "MISSING_THOUGHT_SIGNATURE": "error",
    "MALFORMED_RESPONSE": "error",
    "MODEL_ARMOR": "content_filter",
}
"""Gemini's `finishReason` values and their neutral meaning; an unknown value means `"other"`."""

STATUS_CATEGORIES: Final = {
    "RESOURCE_EXHAUSTED": ErrorCategory.RATE_LIMIT,
    "UNAVAILABLE": ErrorCategory.SERVER,
    "INTERNAL": ErrorCategory.SERVER,
    "UNKNOWN": ErrorCategory.SERVER,
    "DATA_LOSS": ErrorCategory.SERVER,
    "ABORTED": ErrorCategory.SERVER,
    "DEADLINE_EXCEEDED": ErrorCategory.TIMEOUT,
    "UNAUTHENTICATED": ErrorCategory.AUTH,
    "PERMISSION_DENIED": ErrorCategory.AUTH,
    "INVALID_ARGUMENT": ErrorCategory.BAD_REQUEST,
    "FAILED_PRECONDITION": ErrorCategory.BAD_REQUEST,
    "NOT_FOUND": ErrorCategory.BAD_REQUEST,
    "OUT_OF_RANGE": ErrorCategory.BAD_REQUEST,
    "ALREADY_EXISTS": ErrorCategory.BAD_REQUEST,
    "UNIMPLEMENTED": ErrorCategory.BAD_REQUEST,
    "CANCELLED": ErrorCategory.SERVER,
}
"""Google API error `status` values and the category each means (used for in-band stream errors too)."""

_TOOL_TYPES: Final = {
    "GOOGLE_SEARCH_WEB": "web_search",
    "GOOGLE_SEARCH": "web_search",
    "FILE_SEARCH": "file_search",
    "URL_CONTEXT": "url_context",
    "CODE_EXECUTION": "code_execution",
    "GOOGLE_MAPS": "google_maps",
}

_MODALITY = re.compile(r"[A-Z][A-Z0-9_]{0,31}")
_MAX_MESSAGE_CHARS: Final = 1024


def map_finish_reason(raw: str | None, *, has_tool_calls: bool = False) -> FinishReason | None:
    """The neutral finish reason for Gemini's `raw` one; `STOP` with tool calls is `"tool_call"`."""
    if raw is None:
        return None
    reason = FINISH_REASONS.get(raw, "other")
    if reason == "stop" and has_tool_calls:
        return "tool_call"
    return reason


def category_for_status(
    status: str | None, code: int | None = None, message: str | None = None
) -> ErrorCategory:
    """The error category of a Google RPC status name (`RESOURCE_EXHAUSTED`, ...), else of the HTTP code."""
    if (
        message
        and "API key" in message
        and ("not valid" in message or "invalid" in message or "expired" in message)
    ):
        return ErrorCategory.AUTH
    if status is not None and status in STATUS_CATEGORIES:
        return STATUS_CATEGORIES[status]
    if code is not None and not 200 <= code < 300:
        return classify_status(code)
    return ErrorCategory.SERVER


def error_from_status(
    status: Status, *, provider_name: str | None = None, model_name: str | None = None
) -> ProviderError:
    """The `ProviderError` subclass for a Google error object (`{"code", "message", "status"}`)."""
    category = category_for_status(status.status, status.code, status.message)
    message = (status.message or "the stream reported an error")[:_MAX_MESSAGE_CHARS]
    return ERROR_CLASSES[category](
        f"Gemini reported an error: {message}",
        provider_name=provider_name,
        model_name=model_name,
        status_code=status.code if status.code is not None and 100 <= status.code < 600 else None,
        code=status.status,
    )


def usage_from_metadata(usage: UsageMetadata | None) -> RequestUsage:
    """Normalized usage: input includes tool-use prompt tokens, output includes thoughts.

    So `input_tokens + output_tokens == totalTokenCount` whenever Gemini reports every counter.
    Per-modality counts are kept in `details` as `<modality>_<prompt|cache|candidates|tool_use_prompt>_tokens`.
    """
    if usage is None:
        return RequestUsage()
    details: dict[str, int] = {}
    if usage.thoughts_token_count:
        details["reasoning_tokens"] = usage.thoughts_token_count
    if usage.tool_use_prompt_token_count:
        details["tool_use_prompt_tokens"] = usage.tool_use_prompt_token_count
    if usage.cached_content_token_count:
        details["cached_content_tokens"] = usage.cached_content_token_count
    audio = {"prompt": 0, "cache": 0, "candidates": 0, "tool_use_prompt": 0}
    groups: tuple[tuple[str, list[ModalityCount] | None], ...] = (
        ("prompt", usage.prompt_tokens_details),
        ("cache", usage.cache_tokens_details),
        ("candidates", usage.candidates_tokens_details),
        ("tool_use_prompt", usage.tool_use_prompt_tokens_details),
    )
    for prefix, entries in groups:
        for entry in entries or ():
            if not _MODALITY.fullmatch(entry.modality):
                continue  # a hostile or unknown spelling never becomes a key
            key = f"{entry.modality.lower()}_{prefix}_tokens"
            details[key] = details.get(key, 0) + entry.token_count
            if entry.modality == "AUDIO":
                audio[prefix] += entry.token_count
    return RequestUsage(
        input_tokens=usage.prompt_token_count + usage.tool_use_prompt_token_count,
        output_tokens=usage.candidates_token_count + usage.thoughts_token_count,
        cache_read_tokens=usage.cached_content_token_count,
        input_audio_tokens=audio["prompt"] + audio["tool_use_prompt"],
        cache_audio_read_tokens=audio["cache"],
        output_audio_tokens=audio["candidates"],
        output_reasoning_tokens=usage.thoughts_token_count,
        details=details,
    )


class _Current:
    """The part the next chunk may continue."""

    __slots__ = ("index", "key", "kind", "signed")

    def __init__(self, kind: str, key: int, index: int | None, signed: bool) -> None:
        self.kind = kind
        self.key = key
        self.index = index
        self.signed = signed


# Decoded once per stream event: the bounded decoder is built once.
_CHUNK: Final = bounded_json.ProviderDecoder(
    GenerateContentResponse, bounded_json.STREAM_EVENT, "a Gemini stream event"
)


class StreamDecoder:
    """Decodes a GenerateContent stream chunk by chunk into neutral events and one final response.

    A [`StreamDecoder`][ferrule.core.codec.StreamDecoder]: call [`feed`][] with each server-sent
    event (or [`feed_chunk`][] with a decoded chunk), then [`finish`][] once the stream ended
    cleanly; `finish` returns the last events, the final one being `ResponseCompleted`. See the
    module docs for the decoding rules.
    """

    def __init__(
        self,
        *,
        model_name: str | None = None,
        provider_name: str = "google-gla",
        provider_url: str | None = None,
    ) -> None:
        self.model_name = model_name
        """The model the request was for (the response's `model_name` when set)."""
        self.provider_name = provider_name
        """The provider recorded on the response and on parts carrying provider data."""
        self.provider_url = provider_url
        """The API root recorded on the response."""
        self._builder = ResponseBuilder()
        self._current: _Current | None = None
        self._next_key = 0
        self._text_signatures: dict[int, str] = {}
        self._pending_native: list[str] = []
        self._usage: UsageMetadata | None = None
        self._raw_finish: str | None = None
        self._candidate_details: dict[str, Any] = {}
        self._response_id: str | None = None
        self._model_version: str | None = None
        self._create_time: str | None = None
        self._saw_native_parts = False
        self._finished = False
        self._chunks = 0

    # -- input ------------------------------------------------------------------------------------

    def feed(self, event: SseEvent) -> list[ModelStreamEvent]:
        """Decode one server-sent event (a chunk's JSON) and return the events it produces."""
        data = event.data
        if not data.startswith("{") and not data.strip():
            return []
        chunk = _CHUNK.decode(data, provider_name=self.provider_name, model_name=self.model_name)
        return self.feed_chunk(chunk)

    def feed_chunk(self, chunk: GenerateContentResponse) -> list[ModelStreamEvent]:
        """Apply one decoded response chunk and return the events it produces."""
        if self._finished:
            raise ResponseDecodeError("Gemini stream data arrived after the response was completed")
        self._chunks += 1
        if chunk.error is not None:
            raise error_from_status(chunk.error, provider_name=self.provider_name, model_name=self.model_name)
        if chunk.response_id and self._response_id is None:
            self._response_id = chunk.response_id
        if chunk.model_version:
            self._model_version = chunk.model_version
        if chunk.create_time and self._create_time is None:
            self._create_time = chunk.create_time
        if chunk.usage_metadata is not None:
            self._usage = chunk.usage_metadata
        feedback = chunk.prompt_feedback
        if feedback is not None and feedback.block_reason:
            reason = feedback.block_reason
            text = (feedback.block_reason_message or "")[:_MAX_MESSAGE_CHARS]
            raise ContentFilterError(
                f"Gemini blocked the prompt ({reason})"
                + (f": {text}" if text else "")
                + "; rephrase the prompt or adjust safetySettings",
                provider_name=self.provider_name,
                model_name=self.model_name,
                code=reason,
                details={"block_reason": reason, "safety_ratings": feedback.safety_ratings or []},
            )
        candidate = _first_candidate(chunk.candidates)
        if candidate is None:
            return []
        events: list[ModelStreamEvent] = []
        if candidate.content is not None:
            for part in candidate.content.parts or ():
                events.extend(self._part(part))
        self._candidate_metadata(candidate)
        if candidate.finish_reason:
            self._raw_finish = candidate.finish_reason
        return events

    def _candidate_metadata(self, candidate: Candidate) -> None:
        details = self._candidate_details
        if candidate.finish_message:
            details["finish_message"] = candidate.finish_message[:_MAX_MESSAGE_CHARS]
        for key, value in (
            ("grounding_metadata", candidate.grounding_metadata),
            ("url_context_metadata", candidate.url_context_metadata),
            ("citation_metadata", candidate.citation_metadata),
            ("logprobs_result", candidate.logprobs_result),
        ):
            if value:
                details[key] = value
        if candidate.safety_ratings:
            details["safety_ratings"] = candidate.safety_ratings
        if candidate.avg_logprobs is not None:
            details["avg_logprobs"] = candidate.avg_logprobs

    # -- parts ------------------------------------------------------------------------------------

    def _key(self) -> int:
        self._next_key += 1
        return self._next_key

    def _signed(self, signature: str | None, **extra: Any) -> dict[str, Any] | None:
        details = dict(extra)
        if signature:
            details["thought_signature"] = signature
        return details or None

    def _part(self, part: Part) -> list[ModelStreamEvent]:
        signature = part.thought_signature or None
        if part.function_call is not None:
            return self._function_call(part, signature)
        if part.executable_code is not None:
            code = part.executable_code
            call_id = code.id or new_tool_call_id()
            self._pending_native.append(call_id)
            return self._add(
                NativeToolCallPart(
                    tool_name="code_execution",
                    args={"code": code.code, "language": code.language or "PYTHON"},
                    tool_call_id=call_id,
                    id=code.id,
                    provider_name=self.provider_name,
                    provider_details=self._signed(signature, google_part="executableCode"),
                )
            )
        if part.code_execution_result is not None:
            result = part.code_execution_result
            content: dict[str, Any] = {"outcome": result.outcome}
            if result.output is not None:
                content["output"] = result.output
            extra: dict[str, Any] = {"google_part": "codeExecutionResult"}
            if result.id:
                extra["id"] = result.id
            return self._add(
                NativeToolReturnPart(
                    tool_name="code_execution",
                    content=content,
                    tool_call_id=self._match_native(result.id),
                    outcome="success" if result.outcome in (None, "OUTCOME_OK") else "failed",
                    provider_name=self.provider_name,
                    provider_details=self._signed(signature, **extra),
                )
            )
        if part.tool_call is not None:
            call = part.tool_call
            call_id = call.id or new_tool_call_id()
            self._pending_native.append(call_id)
            extra = {"google_part": "toolCall"}
            if call.tool_type:
                extra["tool_type"] = call.tool_type
            return self._add(
                NativeToolCallPart(
                    tool_name=_tool_name(call.tool_type),
                    args=call.args or {},
                    tool_call_id=call_id,
                    id=call.id,
                    provider_name=self.provider_name,
                    provider_details=self._signed(signature, **extra),
                )
            )
        if part.tool_response is not None:
            response = part.tool_response
            extra = {"google_part": "toolResponse"}
            if response.tool_type:
                extra["tool_type"] = response.tool_type
            if response.id:
                extra["id"] = response.id
            return self._add(
                NativeToolReturnPart(
                    tool_name=_tool_name(response.tool_type),
                    content=response.response or {},
                    tool_call_id=self._match_native(response.id),
                    provider_name=self.provider_name,
                    provider_details=self._signed(signature, **extra),
                )
            )
        if part.inline_data is not None:
            blob = part.inline_data
            try:
                data = _b64decode(blob.data)
            except (binascii.Error, ValueError):
                raise self._fail("an inlineData part is not valid base64") from None
            if not blob.mime_type:
                raise self._fail("an inlineData part has no mimeType")
            extra = {"thought": True} if part.thought else {}
            return self._add(
                FilePart(
                    content=BinaryContent(data=data, media_type=blob.mime_type),
                    provider_name=self.provider_name,
                    provider_details=self._signed(signature, **extra),
                )
            )
        if part.file_data is not None:
            # A generated file by reference has no bytes to put in a FilePart; keep it visible.
            self._candidate_details.setdefault("file_data", []).append(
                {"fileUri": part.file_data.file_uri, "mimeType": part.file_data.mime_type}
            )
            return self._attach(signature) if signature else []
        if part.text is not None:
            if part.thought:
                return self._thinking(part.text, signature)
            return self._text(part.text, signature)
        if signature:
            return self._attach(signature)
        return []

    def _add(self, part: ModelResponsePart) -> list[ModelStreamEvent]:
        self._saw_native_parts = self._saw_native_parts or isinstance(
            part, NativeToolCallPart | NativeToolReturnPart
        )
        key = self._key()
        events = self._builder.add(part, key=key)
        self._current = _Current("whole", key, _start_index(events), True)
        return events

    def _match_native(self, wire_id: str | None) -> str:
        if wire_id:
            if wire_id in self._pending_native:
                self._pending_native.remove(wire_id)
            return wire_id
        if self._pending_native:
            return self._pending_native.pop(0)
        return new_tool_call_id()

    def _function_call(self, part: Part, signature: str | None) -> list[ModelStreamEvent]:
        call = part.function_call
        assert call is not None
        if not call.name:
            raise self._fail("a functionCall part has no name")
        key = self._key()
        events = self._builder.tool_call(
            key=key,
            tool_name=call.name,
            args=call.args if call.args is not None else {},
            tool_call_id=call.id or new_tool_call_id(),
            id=call.id,
            provider_name=self.provider_name,
            provider_details=self._signed(signature),
        )
        # Gemini sends each call whole, so it is complete as soon as it arrives.
        events.extend(self._builder.end(key))
        self._current = _Current("call", key, _start_index(events), True)
        return events

    def _text(self, text: str, signature: str | None) -> list[ModelStreamEvent]:
        if not text:
            return self._attach(signature) if signature else []
        current = self._current
        if current is None or current.kind != "text" or (signature and current.signed):
            current = _Current("text", self._key(), None, False)
            self._current = current
        events = self._builder.text(text, key=current.key)
        if current.index is None:
            current.index = _start_index(events)
        if signature and current.index is not None:
            self._text_signatures[current.index] = signature
            current.signed = True
        return events

    def _thinking(self, text: str, signature: str | None) -> list[ModelStreamEvent]:
        current = self._current
        if current is None or current.kind != "thinking" or (signature and current.signed):
            if not text and not signature:
                return []
            current = _Current("thinking", self._key(), None, False)
            self._current = current
        events = self._builder.thinking(
            text or None,
            key=current.key,
            signature=signature,
            provider_name=self.provider_name,
            provider_details=self._signed(signature),
        )
        if current.index is None:
            current.index = _start_index(events)
        current.signed = current.signed or bool(signature)
        return events

    def _attach(self, signature: str | None) -> list[ModelStreamEvent]:
        """A signature without content: it belongs to the text part it follows, else stands alone."""
        if not signature:
            return []
        current = self._current
        if (
            current is not None
            and current.kind == "text"
            and not current.signed
            and current.index is not None
        ):
            self._text_signatures[current.index] = signature
            current.signed = True
            return []
        return self._add(
            ThinkingPart(
                content="",
                signature=signature,
                provider_name=self.provider_name,
                provider_details={"thought_signature": signature},
            )
        )

    # -- completion -------------------------------------------------------------------------------

    def finish(self) -> list[ModelStreamEvent]:
        """End the stream: the remaining part-end events and the final `ResponseCompleted`.

        Raises `ResponseDecodeError` when no chunk carried a `finishReason` (a truncated stream),
        and `ContentFilterError` when the answer was filtered away entirely.
        """
        if self._finished:
            raise ResponseDecodeError("the Gemini stream decoder was already finished")
        if self._raw_finish is None:
            what = "stream" if self._chunks > 1 else "response"
            raise self._fail(
                f"the Gemini {what} ended without a finishReason after {self._chunks} chunk(s); "
                "it was cut off or is not a GenerateContent response"
            )
        self._finished = True
        events: list[ModelStreamEvent] = []
        events.extend(self._synthesize_grounding())
        events.extend(self._patch(e) for e in self._builder.finish())
        parts = [self._patch_part(i, p) for i, p in enumerate(self._builder.parts)]
        raw = self._raw_finish
        has_calls = any(isinstance(p, ToolCallPart) for p in parts)
        finish_reason = map_finish_reason(raw, has_tool_calls=has_calls)
        content = [p for p in parts if not _is_synthesized(p) and not _is_empty(p)]
        if finish_reason == "content_filter" and not content:
            message = self._candidate_details.get("finish_message")
            raise ContentFilterError(
                f"Gemini withheld the answer (finishReason {raw})" + (f": {message}" if message else ""),
                provider_name=self.provider_name,
                model_name=self.model_name,
                code=raw,
                details={
                    "finish_reason": raw,
                    "safety_ratings": self._candidate_details.get("safety_ratings", []),
                },
            )
        events.append(ResponseCompleted(self._response(parts, finish_reason)))
        return events

    def _response(self, parts: list[ModelResponsePart], finish_reason: FinishReason | None) -> ModelResponse:
        details: dict[str, Any] = {"finish_reason": self._raw_finish}
        details.update(self._candidate_details)
        version = _strip_models(self._model_version)
        if version:
            details["model_version"] = version
        usage = self._usage
        if usage is not None:
            if usage.service_tier:
                details["service_tier"] = usage.service_tier
            if usage.traffic_type:
                details["traffic_type"] = usage.traffic_type
        response = ModelResponse(
            parts=parts,
            usage=usage_from_metadata(usage),
            model_name=self.model_name or version,
            provider_name=self.provider_name,
            provider_url=self.provider_url,
            provider_details=details,
            provider_response_id=self._response_id,
            finish_reason=finish_reason,
        )
        created = _parse_time(self._create_time)
        if created is not None:
            response.timestamp = created
        return response

    def _patch(self, event: ModelStreamEvent) -> ModelStreamEvent:
        if isinstance(event, PartEndEvent) and event.index in self._text_signatures:
            return PartEndEvent(event.index, self._patch_part(event.index, event.part))
        return event

    def _patch_part(self, index: int, part: ModelResponsePart) -> ModelResponsePart:
        signature = self._text_signatures.get(index)
        if signature is None or not isinstance(part, TextPart):
            return part
        return TextPart(
            content=part.content,
            id=part.id,
            provider_name=self.provider_name,
            provider_details={**(part.provider_details or {}), "thought_signature": signature},
            citations=part.citations,
        )

    def _synthesize_grounding(self) -> list[ModelStreamEvent]:
        """Native tool parts for searches Gemini reported only as metadata (never sent back)."""
        if self._saw_native_parts:
            return []
        events: list[ModelStreamEvent] = []
        grounding = self._candidate_details.get("grounding_metadata")
        if isinstance(grounding, dict):
            queries = cast("dict[str, Any]", grounding).get("webSearchQueries")
            if isinstance(queries, list) and queries:
                chunks: Any = cast("dict[str, Any]", grounding).get("groundingChunks") or []
                events.extend(
                    self._synthetic_pair("web_search", {"queries": cast("list[Any]", queries)}, chunks)
                )
        url_context = self._candidate_details.get("url_context_metadata")
        if isinstance(url_context, dict):
            entries = cast("dict[str, Any]", url_context).get("urlMetadata")
            if isinstance(entries, list) and entries:
                items = cast("list[Any]", entries)
                urls = [cast("dict[str, Any]", e).get("retrievedUrl") for e in items if isinstance(e, dict)]
                events.extend(self._synthetic_pair("url_context", {"urls": urls}, items))
        return events

    def _synthetic_pair(self, tool: str, args: dict[str, Any], content: Any) -> list[ModelStreamEvent]:
        call_id = new_tool_call_id()
        details = {"google_part": "metadata"}
        events = self._builder.add(
            NativeToolCallPart(
                tool_name=tool,
                args=args,
                tool_call_id=call_id,
                provider_name=self.provider_name,
                provider_details=details,
            )
        )
        events.extend(
            self._builder.add(
                NativeToolReturnPart(
                    tool_name=tool,
                    content=content,
                    tool_call_id=call_id,
                    provider_name=self.provider_name,
                    provider_details=details,
                )
            )
        )
        return events

    def _fail(self, message: str) -> ResponseDecodeError:
        return ResponseDecodeError(message, provider_name=self.provider_name, model_name=self.model_name)


def _first_candidate(candidates: list[Candidate] | None) -> Candidate | None:
    if not candidates:
        return None
    for candidate in candidates:
        if candidate.index == 0:
            return candidate
    return candidates[0]


def _start_index(events: list[ModelStreamEvent]) -> int | None:
    for event in events:
        if isinstance(event, PartStartEvent):
            return event.index
    return None


def _tool_name(tool_type: str | None) -> str:
    if not tool_type:
        return "unknown"
    return _TOOL_TYPES.get(tool_type, tool_type.lower()[:64])


def _is_synthesized(part: ModelResponsePart) -> bool:
    details: dict[str, Any] | None = getattr(part, "provider_details", None)
    return (details or {}).get("google_part") == "metadata"


def _is_empty(part: ModelResponsePart) -> bool:
    return isinstance(part, ThinkingPart | TextPart) and not part.content


def _strip_models(name: str | None) -> str | None:
    if name and name.startswith("models/"):
        return name[len("models/") :]
    return name


_FRACTION = re.compile(r"(\.\d{6})\d+")


def _parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(_FRACTION.sub(r"\1", value[:64]))
    except ValueError:
        return None


def _b64decode(data: str) -> bytes:
    """Standard or URL-safe base64 with or without padding (Gemini and its SDKs use both)."""
    text = data.strip()
    alt = b"-_" if ("-" in text or "_" in text) else None
    return base64.b64decode(text + "=" * (-len(text) % 4), altchars=alt, validate=True)


def decode_response(
    body: bytes,
    *,
    model_name: str | None = None,
    provider_name: str = "google-gla",
    provider_url: str | None = None,
) -> ModelResponse:
    """Decode a buffered `generateContent` response body.

    `model_name` (the model the request was for) becomes the response's `model_name`; without it,
    Gemini's `modelVersion` is used. Raises `ResponseDecodeError` for anything that is not a
    complete response, `ContentFilterError` for a blocked prompt or a filtered answer, and the
    mapped `ProviderError` for an error body.
    """
    chunk = bounded_json.decode_provider_json(
        body,
        GenerateContentResponse,
        bounded_json.PROVIDER_RESPONSE,
        "the Gemini response body",
        provider_name=provider_name,
        model_name=model_name,
    )
    decoder = StreamDecoder(model_name=model_name, provider_name=provider_name, provider_url=provider_url)
    decoder.feed_chunk(chunk)
    return completed_response(decoder.finish())


def decode_stream(
    data: bytes,
    *,
    model_name: str | None = None,
    provider_name: str = "google-gla",
    provider_url: str | None = None,
) -> ModelResponse:
    """Decode the raw text of a `streamGenerateContent?alt=sse` response through the stream decoder.

    A body that is a JSON array (the same endpoint without `alt=sse`) is accepted too. Errors as
    for [`decode_response`][]; a stream without a finish reason raises `ResponseDecodeError`.
    """
    decoder = StreamDecoder(model_name=model_name, provider_name=provider_name, provider_url=provider_url)
    if data.lstrip()[:1] == b"[":
        chunks = bounded_json.decode_provider_json(
            data,
            list[GenerateContentResponse],
            bounded_json.PROVIDER_RESPONSE,
            "the Gemini stream array",
            provider_name=provider_name,
            model_name=model_name,
        )
        for chunk in chunks:
            decoder.feed_chunk(chunk)
    else:
        parser = SseParser()
        try:
            events = [*parser.feed(data), *parser.close()]
        except ProviderError as exc:
            raise ResponseDecodeError(
                f"the Gemini stream is not valid server-sent events: {exc.message}",
                provider_name=provider_name,
                model_name=model_name,
            ) from None
        for event in events:
            decoder.feed(event)
    return completed_response(decoder.finish())
