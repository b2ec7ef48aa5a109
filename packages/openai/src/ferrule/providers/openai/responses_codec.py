"""The Responses API wire codec: `ModelCall` → request bytes, response bytes / SSE events → ferrule.

Pure functions and one incremental decoder class; no sockets.

* Requests are stateless by default (`store: false`): the whole history is replayed every time.
  Reasoning items travel with their `encrypted_content` (asked for with
  `include: ["reasoning.encrypted_content"]`) and are sent back only to the provider and model that
  produced them ([`replayable_to`][ferrule.core.messages.replayable_to]); other models get only the
  portable parts.
* Output items map to parts: `message` → text, `reasoning` → thinking (summary text, signature =
  encrypted content), `function_call` → tool call, provider-run tools (`web_search_call`,
  `code_interpreter_call`, `file_search_call`, `image_generation_call`, `mcp_call`,
  `mcp_list_tools`) → native tool call and return parts (plus a file part for generated images),
  `compaction` → compaction. Unknown item types and unknown stream event types are ignored.
* `response.failed` and `error` events raise the typed error their code maps to; a stream that ends
  before `response.completed` / `response.incomplete` raises `ResponseDecodeError`.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import operator
from collections.abc import Callable
from collections.abc import Collection
from collections.abc import Iterable
from collections.abc import Sequence
from typing import Annotated
from typing import Any
from typing import Final
from typing import assert_never
from typing import cast

import msgspec

from ferrule.core import bounded_json
from ferrule.core.codec import MIN_BATCH
from ferrule.core.codec import WireCache
from ferrule.core.codec import WireRequest
from ferrule.core.codec import decode_stream as _decode_sse
from ferrule.core.codec_parts import UNTRANSCRIBED_SPEECH
from ferrule.core.codec_parts import never_sent
from ferrule.core.errors import ErrorCategory
from ferrule.core.errors import ProviderError
from ferrule.core.errors import ResponseDecodeError
from ferrule.core.errors import UserError
from ferrule.core.messages import AudioUrl
from ferrule.core.messages import BinaryContent
from ferrule.core.messages import CachePoint
from ferrule.core.messages import CompactionPart
from ferrule.core.messages import DocumentUrl
from ferrule.core.messages import FilePart
from ferrule.core.messages import ImageUrl
from ferrule.core.messages import Message
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import ModelResponsePart
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
from ferrule.core.messages import replayable_to
from ferrule.core.model import JsonObjectFormat
from ferrule.core.model import JsonSchemaFormat
from ferrule.core.model import ModelCall
from ferrule.core.model import ModelStreamEvent
from ferrule.core.model import NativeTool
from ferrule.core.model import OutputFormat
from ferrule.core.model import PartStartEvent
from ferrule.core.model import ResponseCompleted
from ferrule.core.model import ToolDefinition
from ferrule.core.profile import ModelProfile
from ferrule.core.settings import ModelSettings
from ferrule.core.sse import SseEvent
from ferrule.core.streaming import ResponseBuilder
from ferrule.core.usage import RequestUsage

from . import strict_schema
from ._common import OPENAI
from ._common import SHAPE_ERRORS
from ._common import as_dict
from ._common import as_int
from ._common import as_list
from ._common import as_str
from ._common import in_band_error
from ._common import json_encoded
from ._common import shape_errors
from ._common import timestamp
from ._content import check_uploaded_here
from ._content import extension
from ._content import identifier
from ._content import inline_text_file
from ._content import is_text_like
from ._content import refuse
from ._content import refuse_undownloaded
from ._content import tool_result_text
from .profiles import ResponsesDialect

__all__ = [
    "OWNED_KEYS",
    "ResponsesCodec",
    "ResponsesStreamDecoder",
    "build_request",
    "decode_response",
    "decode_stream",
    "encode_request",
    "map_usage",
]

OWNED_KEYS = frozenset(
    {
        "model",
        "input",
        "instructions",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "text",
        "reasoning",
        "include",
        "store",
        "stream",
        "max_output_tokens",
        "temperature",
        "top_p",
        "top_logprobs",
        "service_tier",
        "truncation",
        "prompt_cache_key",
        "previous_response_id",
        "conversation",
    }
)
"""Body keys the portable encoder owns; `ModelSettings.extra_body` may not set them."""

_DEFAULT_DIALECT = ResponsesDialect()

NATIVE_TOOL_NAMES = {
    "web_search_call": "web_search",
    "code_interpreter_call": "code_execution",
    "file_search_call": "file_search",
    "image_generation_call": "image_generation",
}
"""The ferrule native-tool name of each provider-run output item type."""


# --- encoding ------------------------------------------------------------------------------------


_NO_AUDIO_VIDEO = "the Responses API does not take audio or video input; use OpenAIChatModel for audio"


def _image(url_or_id: dict[str, Any], vendor_metadata: dict[str, Any] | None) -> dict[str, Any]:
    image: dict[str, Any] = {"type": "input_image", **url_or_id, "detail": "auto"}
    if vendor_metadata and "detail" in vendor_metadata:
        image["detail"] = vendor_metadata["detail"]
    return image


def _input_item(item: UserContent, provider_name: str, model_name: str) -> dict[str, Any] | None:
    match item:
        case str():
            return {"type": "input_text", "text": item}
        case TextContent():  # StructuredContent too: its rendered text
            return {"type": "input_text", "text": item.content}
        case CachePoint():
            return None  # OpenAI caches prompt prefixes itself (documented as not sent)
        case ImageUrl():
            if item.force_download:
                raise refuse_undownloaded("image-url", item.url, provider_name, model_name)
            return _image({"image_url": item.url}, item.vendor_metadata)
        case BinaryContent():
            if is_text_like(item.media_type):
                return {"type": "input_text", "text": inline_text_file(item)}
            if item.is_image:
                return _image({"image_url": item.data_uri}, item.vendor_metadata)
            if item.is_audio or item.is_video:
                raise refuse("binary", provider_name, model_name, _NO_AUDIO_VIDEO)
            return {
                "type": "input_file",
                "file_data": item.data_uri,
                "filename": f"filename.{extension(item.media_type)}",
            }
        case DocumentUrl():
            if item.force_download:
                raise refuse_undownloaded("document-url", item.url, provider_name, model_name)
            return {"type": "input_file", "file_url": item.url}
        case AudioUrl():
            raise refuse("audio-url", provider_name, model_name, _NO_AUDIO_VIDEO)
        case VideoUrl():
            raise refuse("video-url", provider_name, model_name, _NO_AUDIO_VIDEO)
        case UploadedFile():
            check_uploaded_here(item, provider_name)
            if item.media_type and item.media_type.startswith("image/"):
                return {"type": "input_image", "file_id": item.file_id, "detail": "auto"}
            return {"type": "input_file", "file_id": item.file_id}
        case _:
            assert_never(item)


def _user_content(items: Iterable[UserContent], provider_name: str, model_name: str) -> list[dict[str, Any]]:
    mapped = (_input_item(item, provider_name, model_name) for item in items)
    return [c for c in mapped if c is not None]


def _reasoning_item(part: ThinkingPart, dialect: ResponsesDialect) -> dict[str, Any] | None:
    if not part.id:
        return None
    details = part.provider_details or {}
    from_raw = details.get("source") == "reasoning_text"
    if not part.signature and not (dialect.replay_reasoning_text and part.content):
        # Without encrypted content a stateless request cannot refer to the reasoning item.
        return None
    summaries = details.get("summary")
    if not isinstance(summaries, list):
        summaries = [part.content] if part.content and not from_raw else []
    item: dict[str, Any] = {
        "type": "reasoning",
        "id": part.id,
        "summary": [{"type": "summary_text", "text": str(s)} for s in summaries],  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    }
    if part.signature:
        item["encrypted_content"] = part.signature
    if dialect.replay_reasoning_text:
        raw = details.get("reasoning_text") if not from_raw else part.content
        if isinstance(raw, str) and raw:
            item["content"] = [{"type": "reasoning_text", "text": raw}]
    return item


def _assistant_items(
    response: ModelResponse, dialect: ResponsesDialect, provider_name: str, model_name: str
) -> list[dict[str, Any]]:
    same = replayable_to(response, provider_name, model_name)
    with_ids = same and dialect.replay_item_ids
    items: list[dict[str, Any]] = []
    for part in response.parts:
        match part:
            case TextPart():
                if with_ids and part.id:
                    message: dict[str, Any] = {
                        "type": "message",
                        "role": "assistant",
                        "id": part.id,
                        "status": "completed",
                        "content": [{"type": "output_text", "text": part.content, "annotations": []}],
                    }
                    phase = (part.provider_details or {}).get("phase")
                    if isinstance(phase, str):
                        message["phase"] = phase
                    items.append(message)
                else:
                    items.append({"role": "assistant", "content": part.content})
            case ToolCallPart():
                call: dict[str, Any] = {
                    "type": "function_call",
                    "call_id": part.tool_call_id,
                    "name": part.tool_name,
                    "arguments": part.args_as_json_str(),
                }
                if with_ids and part.id:
                    call["id"] = part.id
                items.append(call)
            case ThinkingPart():
                if same and part.provider_name in (None, provider_name):
                    reasoning = _reasoning_item(part, dialect)
                    if reasoning is not None:
                        items.append(reasoning)
            case NativeToolCallPart():
                # The provider's own item, which also carries the tool's result.
                raw = (part.provider_details or {}).get("item")
                if same and isinstance(raw, dict):
                    items.append(raw)  # pyright: ignore[reportUnknownArgumentType]
            case CompactionPart():
                encrypted = (part.provider_details or {}).get("encrypted_content")
                if same and isinstance(encrypted, str):
                    compaction: dict[str, Any] = {"type": "compaction", "encrypted_content": encrypted}
                    if part.id:
                        compaction["id"] = part.id
                    items.append(compaction)
                elif part.content:
                    # Another provider's readable summary is portable text.
                    items.append({"role": "assistant", "content": part.content})
            case SpeechPart():
                if part.transcript:
                    items.append({"role": "assistant", "content": part.transcript})
                elif part.audio is not None:
                    raise refuse("speech", provider_name, model_name, UNTRANSCRIBED_SPEECH)
            case NativeToolReturnPart() | FilePart():
                pass  # results travel inside their call's item; generated files are not replayed
            case _:
                assert_never(part)
    return items


def _input(
    call: ModelCall, dialect: ResponsesDialect, provider_name: str, model_name: str
) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for message in call.messages:
        items.extend(_message_items(message, dialect, provider_name, model_name))
    return items


_ENCODE = msgspec.json.Encoder().encode


def _encoded_items(
    call: ModelCall,
    dialect: ResponsesDialect,
    provider_name: str,
    model_name: str,
    cache: WireCache,
    before: bytes,
    after: bytes | Callable[[], bytes],
) -> bytes:
    """The items of the `input` array of `call` as JSON between `before` and `after`, each history
    message's items reused from `cache` (byte for byte what encoding `_input` gives)."""

    def encode(message: Message) -> bytes:
        return _ENCODE(_message_items(message, dialect, provider_name, model_name))[1:-1]

    view = (dialect, provider_name, model_name)
    return cache.encode(call.messages, view, encode, before=before, after=after)


def _encoded_input(
    call: ModelCall, dialect: ResponsesDialect, provider_name: str, model_name: str, cache: WireCache
) -> msgspec.Raw:
    """The `input` array of `call` as JSON, each history message's items reused from `cache`."""
    return msgspec.Raw(_encoded_items(call, dialect, provider_name, model_name, cache, b"[", b"]"))


def _message_items(
    message: Message, dialect: ResponsesDialect, provider_name: str, model_name: str
) -> list[dict[str, Any]]:
    """The input items one history message maps to (none, one, or several)."""
    if isinstance(message, ModelResponse):
        return _assistant_items(message, dialect, provider_name, model_name)
    items: list[dict[str, Any]] = []
    files: list[Any] = []
    for part in message.parts:
        match part:
            case SystemPromptPart():
                items.append({"role": "system", "content": part.content})
            case UserPromptPart():
                content: str | list[dict[str, Any]] = (
                    part.content
                    if isinstance(part.content, str)
                    else _user_content(part.content, provider_name, model_name)
                )
                items.append({"role": "user", "content": content})
            case ToolReturnPart():
                text, media = tool_result_text(part.content)
                files.extend(media)
                items.append({"type": "function_call_output", "call_id": part.tool_call_id, "output": text})
            case RetryPromptPart():
                if part.tool_name is None:
                    items.append({"role": "user", "content": part.model_response()})
                else:
                    items.append(
                        {
                            "type": "function_call_output",
                            "call_id": part.tool_call_id,
                            "output": part.model_response(),
                        }
                    )
            case RetryFeedbackPart():
                items.append({"role": "user", "content": part.model_response()})
            case SpeechPart():
                if part.transcript:
                    items.append({"role": "user", "content": part.transcript})
                elif part.audio is not None:
                    raise refuse(
                        "speech",
                        provider_name,
                        model_name,
                        "the user's speech has no transcript, and " + _NO_AUDIO_VIDEO,
                    )
            case CompactionPart():
                if part.content:
                    items.append({"role": "user", "content": part.content})
            case _:
                never_sent(part)  # records of how the call's configuration changed; the call carries it
    if files:
        file_content: list[dict[str, Any]] = []
        for media in files:
            file_content.append({"type": "input_text", "text": f"This is file {identifier(media)}:"})
            mapped = _input_item(media, provider_name, model_name)
            if mapped is not None:
                file_content.append(mapped)
        items.append({"role": "user", "content": file_content})

    return items


def _tool(tool: ToolDefinition) -> dict[str, Any]:
    schema, strict = strict_schema.prepare(tool.parameters_json_schema, tool.strict)
    mapped: dict[str, Any] = {"type": "function", "name": tool.name, "parameters": schema, "strict": strict}
    if tool.description is not None:
        mapped["description"] = tool.description
    return mapped


def _native_tool(tool: NativeTool) -> dict[str, Any]:
    options = dict(tool.options or {})
    if tool.kind == "web_search":
        return {"type": "web_search", **options}
    if tool.kind == "code_execution":
        return {
            "type": "code_interpreter",
            "container": options.pop("container", {"type": "auto"}),
            **options,
        }
    if tool.kind == "file_search":
        if not options.get("vector_store_ids"):
            raise UserError("the native file_search tool needs options={'vector_store_ids': [...]}")
        return {"type": "file_search", **options}
    if tool.kind == "image_generation":
        return {"type": "image_generation", **options}
    raise UserError(f"the Responses API has no native tool {tool.kind!r}")


def _tool_choice(call: ModelCall, names: list[str]) -> str | dict[str, Any]:
    choice = call.settings.tool_choice
    if choice is None:
        return "auto" if call.allow_text_output else "required"
    if isinstance(choice, str):
        return choice
    unknown = [name for name in choice if name not in names]
    if unknown:
        raise UserError(f"tool_choice names tools that are not offered: {', '.join(unknown)}")
    if len(choice) == 1:
        return {"type": "function", "name": choice[0]}
    return {
        "type": "allowed_tools",
        "mode": "required",
        "tools": [{"type": "function", "name": n} for n in choice],
    }


def build_request(
    call: ModelCall,
    *,
    model_name: str,
    dialect: ResponsesDialect | None = None,
    profile: ModelProfile | None = None,
    stream: bool = False,
    provider_name: str = OPENAI,
    extra_owned_keys: Collection[str] = (),
    wire_cache: WireCache | None = None,
) -> dict[str, Any]:
    """The Responses request body for `call`, as a JSON-ready dict.

    With `wire_cache`, `input` is one `msgspec.Raw` (the encoded array) whose history messages are
    reused from the cache: the same bytes once encoded, less work on a long history.

    `profile` tells whether the model reasons (so encrypted reasoning is requested for stateless
    replay); `provider_name` selects what may be replayed and which `extra_body` entry applies.
    """
    dialect = dialect or _DEFAULT_DIALECT
    body: dict[str, Any] = {
        "model": model_name,
        "input": _input(call, dialect, provider_name, model_name)
        if wire_cache is None
        else _encoded_input(call, dialect, provider_name, model_name, wire_cache),
    }
    _fill(body, call, dialect, profile, stream, provider_name, extra_owned_keys)
    return body


def _fill(
    body: dict[str, Any],
    call: ModelCall,
    dialect: ResponsesDialect,
    profile: ModelProfile | None,
    stream: bool,
    provider_name: str,
    extra_owned_keys: Collection[str],
) -> None:
    """Everything of the request body after `model` and `input` (which `body` holds), in order."""
    settings = call.settings
    if call.instructions:
        body["instructions"] = call.instructions
    _add_tools(body, call)
    text_format = _text_format(call.output)
    if text_format is not None:
        body["text"] = {"format": text_format}
    reasoning = _reasoning(settings)
    if reasoning:
        body["reasoning"] = reasoning
    include: list[str] = []
    if dialect.store is not None:
        body["store"] = dialect.store
    reasons = profile.supports_thinking if profile is not None else False
    if reasons and dialect.encrypted_reasoning and dialect.store is not True:
        include.append("reasoning.encrypted_content")
    _add_sampling(body, include, settings)
    if call.cache_key:
        body["prompt_cache_key"] = call.cache_key
    if include:
        body["include"] = include
    if stream:
        body["stream"] = True
    extra = settings.extra_body_for(provider_name, OWNED_KEYS | set(extra_owned_keys) | set(body))
    if extra:
        body.update(extra)


def _encoded_body(
    call: ModelCall,
    *,
    model_name: str,
    dialect: ResponsesDialect | None,
    profile: ModelProfile | None,
    stream: bool,
    provider_name: str,
    wire_cache: WireCache,
) -> bytes:
    """`build_request` with `wire_cache`, encoded as JSON: the same bytes, the history's copied once.

    The body is `{"model":…,"input":[…]` and then the rest of its fields, in the same order; so the
    cache joins the history's bytes with what goes before and after them (the rest encoded on its
    own), rather than the history being joined, wrapped in brackets and copied by the encoder.
    """
    resolved = dialect or _DEFAULT_DIALECT

    def after() -> bytes:
        # Called once the history is encoded, so that its errors come first, as in `build_request`.
        body: dict[str, Any] = {"model": model_name, "input": None}
        _fill(body, call, resolved, profile, stream, provider_name, ())
        del body["model"], body["input"]
        rest = _ENCODE(body)  # `{…}`: the fields after the input, `{}` when there are none
        return b"]," + rest[1:] if len(rest) > 2 else b"]}"

    before = b"".join((b'{"model":', _ENCODE(model_name), b',"input":['))
    return _encoded_items(call, resolved, provider_name, model_name, wire_cache, before, after)


def _add_tools(body: dict[str, Any], call: ModelCall) -> None:
    """`tools`, `tool_choice` and `parallel_tool_calls`: function, output and native tools."""
    settings = call.settings
    tools: list[dict[str, Any]] = [_tool(t) for t in call.all_tools]
    names = [t.name for t in call.all_tools]
    tools.extend(_native_tool(t) for t in call.native_tools)
    if tools:
        body["tools"] = tools
        if names:
            body["tool_choice"] = _tool_choice(call, names)
        elif settings.tool_choice is not None and not isinstance(settings.tool_choice, list):
            body["tool_choice"] = settings.tool_choice
        if settings.parallel_tool_calls is not None:
            body["parallel_tool_calls"] = settings.parallel_tool_calls
    elif isinstance(settings.tool_choice, list) and settings.tool_choice:
        raise UserError("tool_choice names tools, but the request offers none")


def _text_format(output: OutputFormat) -> dict[str, Any] | None:
    """The `text.format` of a JSON output, or `None` for free text."""
    if isinstance(output, JsonSchemaFormat):
        schema, strict = strict_schema.prepare(output.schema, output.strict)
        fmt: dict[str, Any] = {"type": "json_schema", "name": output.name, "schema": schema, "strict": strict}
        if output.description:
            fmt["description"] = output.description
        return fmt
    if isinstance(output, JsonObjectFormat):
        return {"type": "json_object"}
    return None


def _reasoning(settings: ModelSettings) -> dict[str, Any]:
    """The `reasoning` object: effort (`thinking=False` is effort `none`) and summary."""
    reasoning: dict[str, Any] = {}
    effort = settings.reasoning_effort
    if effort is None and settings.thinking is False:
        effort = "none"
    if effort is not None:
        reasoning["effort"] = effort
    if settings.reasoning_summary is not None:
        reasoning["summary"] = settings.reasoning_summary
    return reasoning


def _add_sampling(body: dict[str, Any], include: list[str], settings: ModelSettings) -> None:
    """Token limit, sampling and logprobs; a setting the Responses API lacks is refused."""
    if settings.max_tokens is not None:
        body["max_output_tokens"] = settings.max_tokens
    for name in ("temperature", "top_p", "service_tier", "truncation"):
        value = getattr(settings, name)
        if value is not None:
            body[name] = value
    if settings.top_logprobs is not None:
        body["top_logprobs"] = settings.top_logprobs
    if settings.logprobs or settings.top_logprobs is not None:
        include.append("message.output_text.logprobs")
    for name in ("seed", "stop_sequences", "presence_penalty", "frequency_penalty", "logit_bias", "top_k"):
        if getattr(settings, name) is not None:
            raise UserError(
                f"the Responses API has no {name!r} setting; use the Chat Completions model for it"
            )


encode_request = json_encoded(build_request)
"""The Responses request body for `call`, encoded as JSON bytes (see `build_request`)."""


# --- decoding ------------------------------------------------------------------------------------


class _Response(msgspec.Struct):
    id: Any = None
    model: Any = None
    status: Any = None
    output: Any = None
    usage: Any = None
    incomplete_details: Any = None
    error: Any = None
    created_at: Any = None
    service_tier: Any = None
    object: Any = None


def map_usage(usage: Any) -> RequestUsage | None:
    """Normalized usage from a Responses `usage` object (cached and reasoning tokens included)."""
    raw = as_dict(usage)
    if not raw:
        return None
    inputs = as_dict(raw.get("input_tokens_details"))
    outputs = as_dict(raw.get("output_tokens_details"))
    reasoning = as_int(outputs.get("reasoning_tokens"))
    return RequestUsage(
        input_tokens=as_int(raw.get("input_tokens")),
        output_tokens=as_int(raw.get("output_tokens")),
        cache_read_tokens=as_int(inputs.get("cached_tokens")),
        output_reasoning_tokens=reasoning,
        details={"reasoning_tokens": reasoning} if reasoning else {},
        cache_reported=bool(inputs),
    )


class _Items:
    """Maps complete output items to parts; shared by the buffered decoder and the stream decoder."""

    def __init__(self, provider_name: str, model_name: str | None) -> None:
        self.provider_name = provider_name
        self.model_name = model_name
        self.refusals: list[str] = []
        self.has_function_call = False

    def fail(self, message: str) -> ResponseDecodeError:
        return ResponseDecodeError(message, provider_name=self.provider_name, model_name=self.model_name)

    def text_parts(self, item: dict[str, Any]) -> list[TextPart]:
        return [part for _, part in self.indexed_text_parts(item)]

    def indexed_text_parts(self, item: dict[str, Any]) -> list[tuple[int, TextPart]]:
        parts: list[tuple[int, TextPart]] = []
        item_id = as_str(item.get("id"))
        phase = as_str(item.get("phase"))
        content = item.get("content")
        for index, entry in enumerate(content if isinstance(content, list) else ()):  # pyright: ignore[reportUnknownArgumentType]
            info = as_dict(entry)
            kind = info.get("type")
            if kind == "output_text":
                text = info.get("text")
                if not isinstance(text, str):
                    raise self.fail("an output_text item has no text")
                annotations = info.get("annotations")
                citations: list[dict[str, Any]] | None = None
                if isinstance(annotations, list) and annotations:
                    citations = [as_dict(a) for a in annotations if isinstance(a, dict)]  # pyright: ignore[reportUnknownVariableType]
                parts.append(
                    (
                        index,
                        TextPart(
                            content=text,
                            id=item_id,
                            provider_name=self.provider_name if item_id else None,
                            provider_details={"phase": phase} if phase else None,
                            citations=citations or None,
                        ),
                    )
                )
            elif kind == "refusal":
                refusal = as_str(info.get("refusal"))
                if refusal:
                    self.refusals.append(refusal)
        return parts

    def thinking(self, item: dict[str, Any]) -> ThinkingPart:
        summaries = [
            text
            for entry in as_list(item.get("summary"))
            if (text := as_str(as_dict(entry).get("text"))) is not None
        ]
        raw = [
            text
            for entry in as_list(item.get("content"))
            if as_dict(entry).get("type") == "reasoning_text"
            and (text := as_str(as_dict(entry).get("text"))) is not None
        ]
        details: dict[str, Any] = {}
        if summaries:
            content = "\n\n".join(summaries)
            if len(summaries) > 1:
                details["summary"] = summaries
            if raw:
                details["reasoning_text"] = "".join(raw)
        else:
            content = "".join(raw)
            if raw:
                details["source"] = "reasoning_text"
        return ThinkingPart(
            content=content,
            id=as_str(item.get("id")),
            signature=as_str(item.get("encrypted_content")),
            provider_name=self.provider_name,
            provider_details=details or None,
        )

    def tool_call(self, item: dict[str, Any]) -> ToolCallPart:
        name = as_str(item.get("name"))
        if not name:
            raise self.fail("a function_call item has no name")
        arguments = item.get("arguments")
        if arguments is not None and not isinstance(arguments, str | dict):
            raise self.fail("a function_call item's arguments are not a JSON string")
        call_id = as_str(item.get("call_id")) or as_str(item.get("id"))
        if not call_id:
            raise self.fail("a function_call item has no call_id")
        self.has_function_call = True
        return ToolCallPart(
            tool_name=name,
            args=arguments,  # pyright: ignore[reportUnknownArgumentType]
            tool_call_id=call_id,
            id=as_str(item.get("id")),
            provider_name=self.provider_name,
        )

    def native(self, item: dict[str, Any], kind: str) -> list[ModelResponsePart]:
        item_id = as_str(item.get("id")) or ""
        status = as_str(item.get("status"))
        provider = self.provider_name
        if kind == "mcp_call" or kind == "mcp_list_tools":
            label = as_str(item.get("server_label")) or "unknown"
            tool_name = f"mcp_server:{label}"
            if kind == "mcp_call":
                args: Any = {
                    "action": "call_tool",
                    "tool_name": item.get("name"),
                    "tool_args": item.get("arguments"),
                }
                result: Any = {"output": item.get("output"), "error": item.get("error")}
            else:
                args = {"action": "list_tools"}
                result = {"tools": item.get("tools"), "error": item.get("error")}
        else:
            tool_name = NATIVE_TOOL_NAMES[kind]
            if kind == "web_search_call":
                action = as_dict(item.get("action"))
                args = action or None
                result = (
                    {"status": status, "sources": action.get("sources")}
                    if action.get("sources")
                    else {"status": status}
                )
            elif kind == "code_interpreter_call":
                args = {"code": item.get("code"), "container_id": item.get("container_id")}
                result = {"status": status, "outputs": item.get("outputs")}
            elif kind == "file_search_call":
                args = {"queries": item.get("queries")}
                result = {"status": status, "results": item.get("results")}
            else:
                args = {
                    k: item[k] for k in ("size", "quality", "output_format", "background") if k in item
                } or None
                result = {"status": status, "revised_prompt": item.get("revised_prompt")}
        parts: list[ModelResponsePart] = [
            NativeToolCallPart(
                tool_name=tool_name,
                args=args,
                tool_call_id=item_id,
                id=item_id or None,
                provider_name=provider,
                provider_details={"item": _without_large_payload(item, kind)},
            ),
            NativeToolReturnPart(
                tool_name=tool_name,
                content=result,
                tool_call_id=item_id,
                provider_name=provider,
                outcome="failed" if status == "failed" else "success",
            ),
        ]
        if kind == "image_generation_call":
            data = item.get("result")
            if isinstance(data, str) and data:
                try:
                    raw = base64.b64decode(data, validate=True)
                except (binascii.Error, ValueError):
                    raise self.fail("a generated image is not valid base64") from None
                fmt = as_str(item.get("output_format")) or "png"
                parts.append(
                    FilePart(
                        content=BinaryContent(data=raw, media_type=f"image/{fmt}"),
                        id=item_id or None,
                        provider_name=provider,
                    )
                )
        return parts

    def compaction(self, item: dict[str, Any]) -> CompactionPart:
        encrypted = as_str(item.get("encrypted_content"))
        return CompactionPart(
            id=as_str(item.get("id")),
            provider_name=self.provider_name,
            provider_details={"encrypted_content": encrypted} if encrypted else None,
        )

    def parts(self, item: dict[str, Any]) -> list[ModelResponsePart]:
        kind = item.get("type")
        if kind == "message":
            return list(self.text_parts(item))
        if kind == "reasoning":
            return [self.thinking(item)]
        if kind == "function_call":
            return [self.tool_call(item)]
        if kind in NATIVE_TOOL_NAMES or kind in ("mcp_call", "mcp_list_tools"):
            assert isinstance(kind, str)
            return self.native(item, kind)
        if kind == "compaction":
            return [self.compaction(item)]
        return []  # unknown item types (new provider features) are ignored, not fatal


def _without_large_payload(item: dict[str, Any], kind: str) -> dict[str, Any]:
    """The item as replayed later; a generated image's bytes live in the file part, not twice."""
    if kind == "image_generation_call" and "result" in item:
        return {k: v for k, v in item.items() if k != "result"}
    return item


def _finish(status: str | None, incomplete: Any, has_calls: bool, refused: bool) -> tuple[Any, str | None]:
    reason = as_str(as_dict(incomplete).get("reason"))
    if refused:
        return "content_filter", status
    if status == "completed" or status is None:
        # A missing status (e.g. the compaction endpoint's result) describes a finished object.
        return ("tool_call" if has_calls else "stop"), status
    if status == "incomplete":
        normalized = {"max_output_tokens": "length", "content_filter": "content_filter"}.get(
            reason or "", "other"
        )
        return normalized, reason or status
    if status == "cancelled":
        return "error", status
    return "other", status


def _complete(
    response: _Response,
    parts: list[ModelResponsePart],
    items: _Items,
    *,
    model_name: str | None,
    provider_name: str,
) -> ModelResponse:
    status = as_str(response.status)
    if status == "failed" or (response.error is not None and status not in ("completed", "incomplete")):
        raise in_band_error(
            response.error, provider_name=provider_name, model_name=model_name, where="the response failed"
        )
    if status in ("queued", "in_progress"):
        raise ResponseDecodeError(
            f"the response is still {status}; poll it until it completes (background mode is not a finished answer)",
            provider_name=provider_name,
            model_name=model_name,
        )
    refusal = "".join(items.refusals) or None
    finish, raw = _finish(status, response.incomplete_details, items.has_function_call, refusal is not None)
    details: dict[str, Any] = {}
    if raw is not None:
        details["finish_reason"] = raw
    if isinstance(response.service_tier, str):
        details["service_tier"] = response.service_tier
    if refusal:
        details["refusal"] = refusal
    result = ModelResponse(
        parts=parts,
        usage=map_usage(response.usage) or RequestUsage(cache_reported=False),
        model_name=as_str(response.model) or model_name,
        provider_name=provider_name,
        provider_details=details or None,
        provider_response_id=as_str(response.id),
        finish_reason=finish,
        state="incomplete" if status in ("incomplete", "cancelled") else "complete",
    )
    created = timestamp(response.created_at)
    if created is not None:
        result.timestamp = created
    return result


def decode_response(
    body: bytes,
    *,
    model_name: str | None = None,
    provider_name: str = OPENAI,
    provider_url: str | None = None,
) -> ModelResponse:
    """Decode a buffered Responses API response body; `provider_url` is recorded on the response.

    Raises `ResponseDecodeError` for malformed input, an unfinished (queued / in-progress)
    response or one without output, and the typed error of a failed response.
    """
    response = bounded_json.decode_provider_json(
        body,
        _Response,
        bounded_json.PROVIDER_RESPONSE,
        "the Responses API response",
        provider_name=provider_name,
        model_name=model_name,
    )
    try:
        if response.error is not None and response.output is None and response.object != "response":
            # A bare `{"error": ...}` document: an error body that arrived with a success status.
            raise in_band_error(
                response.error,
                provider_name=provider_name,
                model_name=model_name,
                where="the response body holds an error",
                default=ErrorCategory.BAD_REQUEST,
            )
        output: Any = response.output
        if not isinstance(output, list):
            raise ResponseDecodeError(
                "the response has no output list", provider_name=provider_name, model_name=model_name
            )
        items = _Items(provider_name, model_name)
        parts: list[ModelResponsePart] = []
        for item in as_list(output):
            parts.extend(items.parts(as_dict(item)))
        result = _complete(response, parts, items, model_name=model_name, provider_name=provider_name)
        result.provider_url = provider_url
        return result
    except ProviderError:
        raise
    except SHAPE_ERRORS as exc:
        raise shape_errors("the Responses API response", provider_name, model_name)(exc) from exc


class _Event(msgspec.Struct):
    type: Any = None
    delta: Any = None
    item_id: Any = None
    output_index: Any = None
    content_index: Any = None
    summary_index: Any = None
    item: Any = None
    response: _Response | None = None
    arguments: Any = None
    annotation: Any = None
    code: Any = None
    message: Any = None
    error: Any = None


# Decoded once per stream event: the bounded decoder is built once.
_EVENT: Final = bounded_json.ProviderDecoder(_Event, bounded_json.STREAM_EVENT, "a Responses stream event")


# The fast path decodes every event into one of the narrow shapes below, tagged by `type`, when it
# fits one: a text delta (the stream's common event), an event the full path would ignore
# (`_Inert`), or the mark of an event that needs the full path (`_Full`, whose fields are skipped).
# An event of another kind, or one that does not fit its shape, takes the full path as well, which
# decodes it and reports what is wrong with it. Not tracked by the garbage collector: a decoded
# document holds no reference cycles.
class _FastEvent(msgspec.Struct, gc=False, tag_field="type"):
    """Base of the fast path's event shapes."""


class _Skipped(msgspec.Struct, gc=False):
    """A JSON object the fast path does not read: its fields are skipped, but still parsed."""


class _TextDeltaEvent(_FastEvent, tag="response.output_text.delta"):
    """A text delta of an output item with an ID: every field of `_Event` the full path reads for
    one, and `response` (the one field the full decoder types), which a delta never carries."""

    delta: str
    item_id: Annotated[str, msgspec.Meta(min_length=1)]
    content_index: int = 0
    response: None = None


class _Inert(_FastEvent):
    """An event the full path decodes only to ignore (see `_event`): its `response`, the one field
    the full decoder types, must be an object or `null` there, so it must be one here."""

    response: _Skipped | None = None


class _Full(_FastEvent):
    """The mark of an event the full path decodes (telling it apart costs less than a misfit)."""


_INERT_KINDS: Final = (
    "response.created",
    "response.in_progress",
    "response.queued",
    "response.content_part.added",
    "response.content_part.done",
    "response.output_text.done",
    "response.function_call_arguments.done",
    "response.reasoning_summary_part.added",
    "response.reasoning_summary_part.done",
    "response.reasoning_summary_text.done",
    "response.reasoning_text.done",
    "response.refusal.done",
    "response.code_interpreter_call_code.delta",
    "response.code_interpreter_call_code.done",
)
"""The kinds `_event` ignores that streams send most (a stream's first two events repeat the
response): the fast path checks them as the full path does and drops them."""

_FULL_KINDS: Final = (
    "response.output_item.added",
    "response.output_item.done",
    "response.completed",
    "response.incomplete",
    "response.function_call_arguments.delta",
    "response.reasoning_summary_text.delta",
    "response.reasoning_text.delta",
)
"""The kinds the full path decodes that streams send most."""


def _fast_shapes() -> type[_FastEvent]:
    """The union of every shape the fast path decodes (one class per tagged kind)."""
    union: Any = _TextDeltaEvent
    for base, kinds in ((_Inert, _INERT_KINDS), (_Full, _FULL_KINDS)):
        for kind in kinds:
            union = union | msgspec.defstruct(f"_{kind}", (), bases=(base,), tag=kind, module=__name__)
    return cast("type[_FastEvent]", union)


_FAST_EVENT: Final = bounded_json.FastPathDecoder(_fast_shapes(), bounded_json.STREAM_EVENT)
_data = operator.attrgetter("data")


class ResponsesStreamDecoder:
    """Turns the events of a streamed Responses API response into ferrule stream events.

    A [`StreamDecoder`][ferrule.core.codec.StreamDecoder]: feed each SSE event with
    [`feed`][ferrule.providers.openai.responses_codec.ResponsesStreamDecoder.feed], then call
    [`finish`][ferrule.providers.openai.responses_codec.ResponsesStreamDecoder.finish] at the end of
    the body. Unknown event types are ignored; `response.failed` and `error` events
    raise their typed error at once. Each finished output item (`response.output_item.done`) is
    authoritative: text or arguments that were not streamed as deltas are taken from it.
    """

    def __init__(
        self, *, model_name: str | None = None, provider_name: str = OPENAI, provider_url: str | None = None
    ) -> None:
        self.model_name = model_name
        """The requested model (the provider's own name for it replaces it once reported)."""
        self.provider_name = provider_name
        """The provider, recorded on the response and its parts."""
        self.provider_url = provider_url
        """The API root, recorded on the response."""
        self._builder = ResponseBuilder()
        self._items = _Items(provider_name, model_name)
        self._final: _Response | None = None
        self._index: dict[Any, int] = {}
        self._text_key: tuple[str, str, int] = ("text", "", 0)  # the last text delta's, with an item ID
        self._streamed_args: set[str] = set()
        self._summary_index: dict[str, int] = {}
        self._text_extras: dict[int, tuple[Any, TextPart]] = {}
        self._annotations: dict[Any, list[dict[str, Any]]] = {}
        self._seen_items = False
        self._added: set[str] = set()
        self._done: set[str] = set()
        self._finished = False

    @property
    def completed(self) -> bool:
        """Whether `response.completed` (or `response.incomplete`) arrived."""
        return self._final is not None

    def feed(self, event: SseEvent) -> list[ModelStreamEvent]:
        """Decode one server-sent event and return the stream events it produces."""
        data = event.data
        if self._finished:
            raise ResponseDecodeError(
                "the stream continued after it was finished",
                provider_name=self.provider_name,
                model_name=self.model_name,
            )
        fast = _FAST_EVENT.decode(data)
        if type(fast) is _TextDeltaEvent:  # typed values: no shape error to convert
            return self._text(fast.delta, fast.item_id, fast.content_index) if fast.delta else []
        if isinstance(fast, _Inert):
            return []
        return self._full(data)

    def feed_many(self, events: Sequence[SseEvent], out: list[ModelStreamEvent]) -> None:
        """Decode the events of one network read in order, adding the stream events they produce to `out`.

        A [`BatchStreamDecoder`][ferrule.core.codec.BatchStreamDecoder]: the same as `feed` for
        each event, its events added to `out` (so when one raises, `out` holds those of the events
        before it). The text deltas among them are decoded in one loop for the read.
        """
        count = len(events)
        if count < MIN_BATCH or self._finished or type(self).feed is not ResponsesStreamDecoder.feed:
            # A read of a slow stream, a finished stream (`feed` raises), or a subclass's own
            # `feed`, which sees every event.
            for event in events:
                out += self.feed(event)
            return
        # The read's events decoded at once, then taken in runs of one shape (grouped in C).
        start = 0
        for shape, group in itertools.groupby(_FAST_EVENT.decode_each(list(map(_data, events))), type):
            run = list(group)
            if shape is _TextDeltaEvent:
                self._text_deltas(cast("list[_TextDeltaEvent]", run), out)
            elif not issubclass(shape, _Inert):
                # Marked for the full path, or not decoded by the fast one: what `feed` does.
                for event in events[start : start + len(run)]:
                    out += self._full(event.data)
            start += len(run)

    def _text_deltas(self, deltas: list[_TextDeltaEvent], out: list[ModelStreamEvent]) -> None:
        """`feed`'s fast path for each of `deltas` in order, their events added to `out`."""
        # The first delta of each item and content goes through `_text` (which may start or find
        # its part); those after it continue that part, together.
        item_id, index = "", -1
        pending: list[str] = []
        for event in deltas:
            delta = event.delta
            if not delta:
                continue
            if event.item_id == item_id and event.content_index == index:
                pending.append(delta)
                continue
            if pending:
                self._builder.texts(pending, out, key=self._text_key)
                pending = []
            item_id, index = event.item_id, event.content_index
            out += self._text(delta, item_id, index)
        if pending:
            self._builder.texts(pending, out, key=self._text_key)

    def _full(self, data: str) -> list[ModelStreamEvent]:
        """`feed` for an event that is not a text delta as the fast path decodes one."""
        stripped = data.strip()
        if not stripped or stripped == "[DONE]":
            return []
        decoded = _EVENT.decode(data, provider_name=self.provider_name, model_name=self.model_name)
        try:
            return self._event(decoded)
        except ProviderError:
            raise
        except SHAPE_ERRORS as exc:
            raise shape_errors("a Responses stream event", self.provider_name, self.model_name)(exc) from exc

    def _track(self, key: Any, events: list[ModelStreamEvent]) -> list[ModelStreamEvent]:
        """Remember the index of the part `key` started, if these events started one."""
        if key not in self._index:
            for event in events:
                if isinstance(event, PartStartEvent):
                    self._index[key] = event.index
                    break
        return events

    @staticmethod
    def _item_key(event: _Event) -> str:
        return as_str(event.item_id) or f"#{event.output_index}"

    def _text_delta(self, event: _Event) -> list[ModelStreamEvent]:
        delta = event.delta
        if not delta or not isinstance(delta, str):
            return []
        item_id = event.item_id if isinstance(event.item_id, str) else None
        index = event.content_index if isinstance(event.content_index, int) else 0
        if item_id:
            return self._text(delta, item_id, index)
        key = ("text", self._item_key(event), index)
        return self._track(key, self._builder.text(delta, key=key, id=item_id, provider_name=None))

    def _text(self, delta: str, item_id: str, index: int) -> list[ModelStreamEvent]:
        """The events of a (non-empty) text delta of the output item `item_id`."""
        key = self._text_key
        if key[1] != item_id or key[2] != index:
            key = self._text_key = ("text", item_id, index)  # the key of this item's next deltas
        return self._track(
            key, self._builder.text(delta, key=key, id=item_id, provider_name=self.provider_name)
        )

    def _event(self, event: _Event) -> list[ModelStreamEvent]:
        kind = event.type
        if not isinstance(kind, str):
            return []
        if kind == "response.output_text.delta":  # most events of a stream: tested first
            return self._text_delta(event)
        builder = self._builder
        if kind == "error":
            info = as_dict(event.error) or {"code": event.code, "message": event.message}
            raise in_band_error(
                info,
                provider_name=self.provider_name,
                model_name=self.model_name,
                where="the stream reported an error",
            )
        if kind in ("response.completed", "response.incomplete", "response.failed"):
            return self._terminal(kind, event)
        if kind == "response.output_text.annotation.added":
            annotation = as_dict(event.annotation)
            if annotation:
                index = event.content_index if isinstance(event.content_index, int) else 0
                self._annotations.setdefault(("text", self._item_key(event), index), []).append(annotation)
            return []
        if kind == "response.refusal.delta":
            delta = as_str(event.delta)
            if delta:
                self._items.refusals.append(delta)
            return []
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            delta = as_str(event.delta)
            if not delta:
                return []
            item_key = self._item_key(event)
            if kind == "response.reasoning_summary_text.delta":
                index = event.summary_index if isinstance(event.summary_index, int) else 0
                previous = self._summary_index.get(item_key)
                if previous is not None and index != previous:
                    delta = "\n\n" + delta
                self._summary_index[item_key] = index
            key = ("reasoning", item_key)
            return self._track(
                key,
                builder.thinking(delta, key=key, id=as_str(event.item_id), provider_name=self.provider_name),
            )
        if kind == "response.function_call_arguments.delta":
            delta = as_str(event.delta)
            if not delta:
                return []
            item_key = self._item_key(event)
            self._streamed_args.add(item_key)
            return self._track(("call", item_key), builder.tool_call(key=("call", item_key), args=delta))
        if kind == "response.output_item.added":
            self._seen_items = True
            item = as_dict(event.item)
            self._added.add(as_str(item.get("id")) or f"#{event.output_index}")
            if item.get("type") != "function_call":
                return []
            item_key = as_str(item.get("id")) or f"#{event.output_index}"
            key = ("call", item_key)
            return self._track(
                key,
                builder.tool_call(
                    key=key,
                    tool_name=as_str(item.get("name")),
                    tool_call_id=as_str(item.get("call_id")) or as_str(item.get("id")),
                    id=as_str(item.get("id")),
                    provider_name=self.provider_name,
                ),
            )
        if kind == "response.output_item.done":
            self._seen_items = True
            item = as_dict(event.item)
            return self._item_done(item, as_str(item.get("id")) or f"#{event.output_index}")
        return []  # every other event kind carries nothing the final response needs

    def _terminal(self, kind: str, event: _Event) -> list[ModelStreamEvent]:
        status = kind.rsplit(".", 1)[1]
        response = event.response or _Response(status=status)
        if kind == "response.failed":
            raise in_band_error(
                response.error,
                provider_name=self.provider_name,
                model_name=self.model_name,
                where="the response failed",
            )
        if self._final is not None:
            raise ResponseDecodeError(
                "the stream completed twice", provider_name=self.provider_name, model_name=self.model_name
            )
        if response.status is None:
            response.status = status
        self._final = response
        events: list[ModelStreamEvent] = []
        output: Any = response.output
        if isinstance(output, list):
            # Items that were announced but never finished (and, from proxies that send only the
            # final event, every item) are completed from the final response's output.
            for index, raw in enumerate(as_list(output)):
                item = as_dict(raw)
                key = as_str(item.get("id")) or f"#{index}"
                if key in self._done or (self._seen_items and key not in self._added):
                    continue
                events.extend(self._item_done(item, key))
        return events

    def _item_done(self, item: dict[str, Any], item_key: str) -> list[ModelStreamEvent]:
        builder = self._builder
        self._done.add(item_key)
        kind = item.get("type")
        events: list[ModelStreamEvent] = []
        if kind == "message":
            for index, part in self._items.indexed_text_parts(item):
                key = ("text", item_key, index)
                if key not in self._index and part.content:
                    events.extend(
                        self._track(
                            key,
                            builder.text(part.content, key=key, id=part.id, provider_name=part.provider_name),
                        )
                    )
                events.extend(builder.end(key))
                if key in self._index:
                    self._text_extras[self._index[key]] = (key, part)
            return events
        if kind == "reasoning":
            part = self._items.thinking(item)
            key = ("reasoning", item_key)
            streamed = key in self._index
            events.extend(
                self._track(
                    key,
                    builder.thinking(
                        None if streamed else part.content or None,
                        key=key,
                        signature=part.signature,
                        id=part.id,
                        provider_name=self.provider_name,
                        provider_details=part.provider_details,
                    ),
                )
            )
            events.extend(builder.end(key))
            return events
        if kind == "function_call":
            part = self._items.tool_call(item)
            key = ("call", item_key)
            started = key in self._index
            events.extend(
                self._track(
                    key,
                    builder.tool_call(
                        key=key,
                        tool_name=None if started else part.tool_name,
                        args=None if item_key in self._streamed_args else part.args,
                        tool_call_id=part.tool_call_id,
                        id=part.id,
                        provider_name=self.provider_name,
                    ),
                )
            )
            events.extend(builder.end(key))
            return events
        for part in self._items.parts(item):
            events.extend(builder.add(part))
        return events

    def finish(self) -> list[ModelStreamEvent]:
        """End of the body: the remaining part-end events and the `ResponseCompleted` event.

        Raises `ResponseDecodeError` when the stream ended before `response.completed` or
        `response.incomplete`.
        """
        if self._finished:
            raise ResponseDecodeError(
                "the stream was already finished",
                provider_name=self.provider_name,
                model_name=self.model_name,
            )
        self._finished = True
        if self._final is None:
            raise ResponseDecodeError(
                "the stream ended before response.completed; the response is incomplete",
                provider_name=self.provider_name,
                model_name=self.model_name,
            )
        events = self._builder.finish()
        parts = self._builder.parts
        for key, found in self._annotations.items():
            index = self._index.get(key)
            if index is not None and index not in self._text_extras:
                part = parts[index]
                if isinstance(part, TextPart):
                    part.citations = found
        for index, (key, done) in self._text_extras.items():
            part = parts[index]
            if isinstance(part, TextPart):
                part.citations = done.citations or self._annotations.get(key)
                part.provider_details = done.provider_details
        for part in parts:
            if isinstance(part, ToolCallPart) and not part.tool_name:
                raise ResponseDecodeError(
                    "a streamed function call has no name",
                    provider_name=self.provider_name,
                    model_name=self.model_name,
                )
        response = _complete(
            self._final, parts, self._items, model_name=self.model_name, provider_name=self.provider_name
        )
        response.provider_url = self.provider_url
        events.append(ResponseCompleted(response))
        return events


def decode_stream(
    data: bytes, *, model_name: str | None = None, provider_name: str = OPENAI
) -> ModelResponse:
    """Decode the raw SSE text of a streamed Responses API response through `ResponsesStreamDecoder`."""
    return _decode_sse(ResponsesStreamDecoder(model_name=model_name, provider_name=provider_name), data)


class ResponsesCodec:
    """The Responses API wire format of one model on one endpoint: a [`Codec`][ferrule.core.codec.Codec].

    `profile` tells whether the model reasons (so encrypted reasoning is asked for); a call's
    `request_id` is sent as `x-client-request-id`.
    """

    __slots__ = ("dialect", "model_name", "profile", "provider_name", "provider_url", "wire_cache")

    def __init__(
        self,
        *,
        model_name: str | None = None,
        dialect: ResponsesDialect | None = None,
        profile: ModelProfile | None = None,
        provider_name: str = OPENAI,
        provider_url: str | None = None,
        wire_cache: WireCache | None = None,
    ) -> None:
        self.model_name = model_name
        """The model requests are for; `None` only for decoding."""
        self.dialect = dialect
        """How the endpoint is used (stateless storage, reasoning replay); `None` is OpenAI's default."""
        self.profile = profile
        """The model's profile, or `None` for a model that does not reason."""
        self.provider_name = provider_name
        """The provider, which decides what may be replayed to it and which `extra_body` entry applies."""
        self.provider_url = provider_url
        """The API root, recorded on decoded responses."""
        self.wire_cache = wire_cache
        """Where encoded history messages are kept for later requests (the model's); `None`: none."""

    def encode(self, call: ModelCall, *, stream: bool = False) -> WireRequest:
        """The request for `call` (see [`build_request`][ferrule.providers.openai.responses_codec.build_request])."""
        if self.model_name is None:
            raise UserError("ResponsesCodec needs a model_name to encode a request")
        cache = self.wire_cache
        body = (
            encode_request(
                call,
                model_name=self.model_name,
                dialect=self.dialect,
                profile=self.profile,
                stream=stream,
                provider_name=self.provider_name,
            )
            if cache is None
            else _encoded_body(
                call,
                model_name=self.model_name,
                dialect=self.dialect,
                profile=self.profile,
                stream=stream,
                provider_name=self.provider_name,
                wire_cache=cache,
            )
        )
        headers = {"x-client-request-id": call.request_id} if call.request_id else {}
        return WireRequest(body=body, headers=headers)

    def decode(self, body: bytes) -> ModelResponse:
        """Decode a buffered response body."""
        return decode_response(
            body, model_name=self.model_name, provider_name=self.provider_name, provider_url=self.provider_url
        )

    def stream_decoder(self) -> ResponsesStreamDecoder:
        """A fresh decoder for one streamed response."""
        return ResponsesStreamDecoder(
            model_name=self.model_name, provider_name=self.provider_name, provider_url=self.provider_url
        )
