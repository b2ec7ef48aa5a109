"""The Chat Completions wire codec: `ModelCall` → request bytes, response bytes / SSE events → ferrule.

Pure functions and one incremental decoder class; no sockets. The same code serves OpenAI and every
OpenAI-compatible server, with the differences between them carried by a
[`ChatDialect`][ferrule.providers.openai.profiles.ChatDialect].

Decoding notes:

* `reasoning_content` (DeepSeek, Qwen, llama.cpp, vLLM) and `reasoning` (Ollama, OpenRouter, Groq)
  become [`ThinkingPart`][ferrule.core.messages.ThinkingPart]s whose `id` is the field name (as
  PydanticAI records them); they are replayed to the same provider on tool turns.
* Tool calls without an ID (some compatible servers) get IDs that are stable for the response:
  derived from the response ID (or the body) and the call's position.
* Finish reasons are normalized (`"tool_calls"` → `"tool_call"`); the raw value is kept in
  `provider_details["finish_reason"]`.
* A refusal (`message.refusal`) is decoded into a response with `finish_reason="content_filter"` and
  the refusal text in `provider_details["refusal"]`; the model clients raise
  [`ContentFilterError`][ferrule.core.errors.ContentFilterError] for it.
* An `error` object in a 200 body or a stream chunk raises the matching typed error; a stream that
  ends before its finish reason or `[DONE]` raises `ResponseDecodeError`, never an empty success.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Collection
from collections.abc import Hashable
from collections.abc import Iterable
from collections.abc import Sequence
from typing import Any
from typing import Final
from typing import Literal
from typing import assert_never

import msgspec

from ferrule.core import bounded_json
from ferrule.core.codec import MIN_BATCH
from ferrule.core.codec import WireCache
from ferrule.core.codec import WireRequest
from ferrule.core.codec import decode_stream as _decode_sse
from ferrule.core.codec import fast_runs
from ferrule.core.codec_parts import UNTRANSCRIBED_SPEECH
from ferrule.core.codec_parts import never_sent
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
from ferrule.core.messages import ModelRequestPart
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
from ferrule.core.model import ResponseCompleted
from ferrule.core.model import ToolDefinition
from ferrule.core.sse import SseEvent
from ferrule.core.streaming import ResponseBuilder
from ferrule.core.usage import RequestUsage

from . import strict_schema
from ._common import OPENAI
from ._common import SHAPE_ERRORS
from ._common import StableIds
from ._common import as_decimal
from ._common import as_dict
from ._common import as_int
from ._common import as_list
from ._common import as_str
from ._common import in_band_error
from ._common import json_encoded
from ._common import normalize_finish_reason
from ._common import shape_errors
from ._common import timestamp
from ._content import audio_format
from ._content import check_uploaded_here
from ._content import extension
from ._content import identifier
from ._content import inline_text_file
from ._content import is_text_like
from ._content import refuse
from ._content import refuse_undownloaded
from ._content import tool_result_text
from .profiles import ChatDialect

__all__ = [
    "OWNED_KEYS",
    "ChatCodec",
    "ChatStreamDecoder",
    "build_request",
    "decode_response",
    "decode_stream",
    "encode_request",
    "map_usage",
]

OWNED_KEYS = frozenset(
    {
        "model",
        "messages",
        "tools",
        "tool_choice",
        "response_format",
        "stream",
        "stream_options",
        "max_tokens",
        "max_completion_tokens",
        "temperature",
        "top_p",
        "top_k",
        "seed",
        "stop",
        "presence_penalty",
        "frequency_penalty",
        "logit_bias",
        "logprobs",
        "top_logprobs",
        "parallel_tool_calls",
        "service_tier",
        "reasoning_effort",
        "reasoning",
        "thinking",
        "prompt_cache_key",
        "web_search_options",
        "chat_template_kwargs",
        "functions",
        "function_call",
        "n",
    }
)
"""Body keys the portable encoder owns; `ModelSettings.extra_body` may not set them."""

_DEFAULT_DIALECT = ChatDialect()


# --- encoding ------------------------------------------------------------------------------------


def _image_url(url: str, vendor_metadata: dict[str, Any] | None) -> dict[str, Any]:
    image: dict[str, Any] = {"url": url}
    if vendor_metadata and "detail" in vendor_metadata:
        image["detail"] = vendor_metadata["detail"]
    return {"type": "image_url", "image_url": image}


def _content_item(
    item: UserContent, dialect: ChatDialect, provider_name: str, model_name: str
) -> dict[str, Any] | None:
    match item:
        case str():
            return {"type": "text", "text": item}
        case TextContent():  # StructuredContent too: its rendered text
            return {"type": "text", "text": item.content}
        case CachePoint():
            return None  # OpenAI-style servers cache prompt prefixes themselves (documented as not sent)
        case ImageUrl():
            if item.force_download:
                raise refuse_undownloaded("image-url", item.url, provider_name, model_name)
            return _image_url(item.url, item.vendor_metadata)
        case BinaryContent():
            if is_text_like(item.media_type):
                return {"type": "text", "text": inline_text_file(item)}
            if item.is_image:
                return _image_url(item.data_uri, item.vendor_metadata)
            if item.is_audio:
                fmt = audio_format(item.media_type)
                if fmt is None:
                    raise refuse(
                        "binary",
                        provider_name,
                        model_name,
                        f"audio of type {item.media_type!r} cannot be sent to Chat Completions; "
                        "convert it to WAV or MP3",
                    )
                data = item.data_uri if dialect.audio_data_uri else item.base64
                return {"type": "input_audio", "input_audio": {"data": data, "format": fmt}}
            if item.is_video:
                raise refuse(
                    "binary",
                    provider_name,
                    model_name,
                    "Chat Completions does not take video input; use a provider whose profile accepts video",
                )
            return {
                "type": "file",
                "file": {"file_data": item.data_uri, "filename": f"filename.{extension(item.media_type)}"},
            }
        case DocumentUrl():
            if dialect.file_urls and not item.force_download:
                return {
                    "type": "file",
                    "file": {
                        "file_data": item.url,
                        "filename": f"filename.{extension(item.resolved_media_type)}",
                    },
                }
            raise refuse(
                "document-url",
                provider_name,
                model_name,
                f"document {item.url!r} must be downloaded before a Chat Completions request; "
                "OpenAI's Chat API takes documents only as bytes (the model clients download it for you)",
            )
        case AudioUrl():
            raise refuse(
                "audio-url",
                provider_name,
                model_name,
                f"audio {item.url!r} must be downloaded before a Chat Completions request; "
                "the API takes audio only as bytes (the model clients download it for you)",
            )
        case VideoUrl():
            if dialect.file_urls:
                return {"type": "video_url", "video_url": {"url": item.url}}
            raise refuse(
                "video-url",
                provider_name,
                model_name,
                "Chat Completions does not take video input; use a provider whose profile accepts video",
            )
        case UploadedFile():
            check_uploaded_here(item, provider_name)
            if item.media_type and item.media_type.startswith("image/"):
                raise refuse(
                    "uploaded-file",
                    provider_name,
                    model_name,
                    "Chat Completions cannot reference an uploaded image by file_id; send the image bytes or "
                    "a URL, or use OpenAIResponsesModel",
                )
            return {"type": "file", "file": {"file_id": item.file_id}}
        case _:
            assert_never(item)


def _user_content(
    items: Iterable[UserContent], dialect: ChatDialect, provider_name: str, model_name: str
) -> list[dict[str, Any]]:
    mapped = (_content_item(item, dialect, provider_name, model_name) for item in items)
    return [c for c in mapped if c is not None]


def _files_message(
    files: Sequence[Any], dialect: ChatDialect, provider_name: str, model_name: str
) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    for item in files:
        content.append({"type": "text", "text": f"This is file {identifier(item)}:"})
        mapped = _content_item(item, dialect, provider_name, model_name)
        if mapped is not None:
            content.append(mapped)
    return {"role": "user", "content": content}


def _assistant_message(
    response: ModelResponse, dialect: ChatDialect, provider_name: str, model_name: str
) -> dict[str, Any] | None:
    texts: list[str] = []
    tool_calls: list[dict[str, Any]] = []
    thinking: list[str] = []
    details: list[Any] = []
    same_provider = replayable_to(response, provider_name)
    same_model = replayable_to(response, provider_name, model_name)
    for part in response.parts:
        match part:
            case TextPart():
                texts.append(part.content)
            case ToolCallPart():
                tool_calls.append(
                    {
                        "id": part.tool_call_id,
                        "type": "function",
                        "function": {"name": part.tool_name, "arguments": part.args_as_json_str()},
                    }
                )
            case ThinkingPart():
                owner_ok = part.provider_name in (None, provider_name) and same_provider
                if owner_ok and part.content:
                    thinking.append(part.content)
                if owner_ok and same_model and dialect.reasoning_details and part.provider_details:
                    raw = part.provider_details.get("reasoning_details")
                    if isinstance(raw, list):
                        details.extend(raw)  # pyright: ignore[reportUnknownArgumentType]
            case SpeechPart():
                if part.transcript:
                    texts.append(part.transcript)
                elif part.audio is not None:
                    raise refuse("speech", provider_name, model_name, UNTRANSCRIBED_SPEECH)
            case CompactionPart():
                # A readable summary is portable; an encrypted one is only for the API that made it.
                if part.content:
                    texts.append(part.content)
            case NativeToolCallPart() | NativeToolReturnPart() | FilePart():
                pass  # no Chat Completions representation; the answer that used them is sent
            case _:
                assert_never(part)
    message: dict[str, Any] = {"role": "assistant"}
    if texts:
        message["content"] = "\n\n".join(texts)
    if tool_calls:
        message["tool_calls"] = tool_calls
    replay = dialect.thinking_field is not None and (
        dialect.thinking_replay == "always" or (dialect.thinking_replay == "tool_turns" and bool(tool_calls))
    )
    if replay and thinking and dialect.thinking_field:
        message[dialect.thinking_field] = "\n\n".join(thinking)
    if details:
        message["reasoning_details"] = details
    if len(message) == 1:
        return None
    return message


_ENCODE = msgspec.json.Encoder().encode
_SPLICED_KEYS = frozenset({"model", "messages"})
"""The body keys `_encoded_body` writes itself, first."""


def _message_items(
    message: Message, dialect: ChatDialect, provider_name: str, model_name: str
) -> list[dict[str, Any]]:
    """The Chat messages one history message maps to (none, one, or several)."""
    if isinstance(message, ModelResponse):
        mapped = _assistant_message(message, dialect, provider_name, model_name)
        return [] if mapped is None else [mapped]
    items: list[dict[str, Any]] = []
    pending_files: list[Any] = []
    for part in message.parts:
        item = _request_part(part, pending_files, dialect, provider_name, model_name)
        if item is not None:
            items.append(item)
    if pending_files:
        # Tool messages carry text only; media from tool results follows them as a user message.
        items.append(_files_message(pending_files, dialect, provider_name, model_name))
    return items


def _messages(
    call: ModelCall, dialect: ChatDialect, provider_name: str, model_name: str
) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    system_role = dialect.system_role
    if call.instructions:
        messages.append({"role": system_role, "content": call.instructions})
    for message in call.messages:
        messages.extend(_message_items(message, dialect, provider_name, model_name))
    if dialect.merge_system_messages:
        messages = _merge_leading_system(messages, system_role)
    return messages


def _is_system_text(item: dict[str, Any], role: str) -> bool:
    return item["role"] == role and isinstance(item["content"], str)


def _history_encoding(
    call: ModelCall, dialect: ChatDialect, provider_name: str, model_name: str
) -> tuple[bytes, int, Hashable, Callable[[Message], bytes]]:
    """How the `messages` array of `call` goes through a `WireCache`: the JSON items of the leading
    system messages (which the dialect may merge into one), mapped on every request; where the
    history the cache encodes starts, after them; its view; and one message's fragment. The lead
    and the fragments joined with commas are byte for byte the items `_messages` gives.
    """
    system_role = dialect.system_role
    lead: list[dict[str, Any]] = []
    if call.instructions:
        lead.append({"role": system_role, "content": call.instructions})
    history = call.messages
    index = 0
    while index < len(history) and all(_is_system_text(item, system_role) for item in lead):
        lead.extend(_message_items(history[index], dialect, provider_name, model_name))
        index += 1
    if dialect.merge_system_messages:
        lead = _merge_leading_system(lead, system_role)
    view = (dialect, provider_name, model_name)

    def encode(message: Message) -> bytes:
        return _ENCODE(_message_items(message, dialect, provider_name, model_name))[1:-1]

    return _ENCODE(lead)[1:-1], index, view, encode


def _encoded_messages(
    call: ModelCall, dialect: ChatDialect, provider_name: str, model_name: str, cache: WireCache
) -> msgspec.Raw:
    """The `messages` array of `call` as JSON, each history message's fragment reused from `cache`,
    which encodes it again when it changed (see `_history_encoding`)."""
    head, index, view, encode = _history_encoding(call, dialect, provider_name, model_name)
    return msgspec.Raw(
        cache.encode(call.messages, view, encode, start=index, before=b"[", lead=head, after=b"]")
    )


def _request_part(
    part: ModelRequestPart,
    pending_files: list[Any],
    dialect: ChatDialect,
    provider_name: str,
    model_name: str,
) -> dict[str, Any] | None:
    """The Chat message of one request part (`None`: nothing is sent for it); the files of a tool
    result are added to `pending_files`, sent after the tool messages."""
    match part:
        case SystemPromptPart():
            return {"role": dialect.system_role, "content": part.content}
        case UserPromptPart():
            content: str | list[dict[str, Any]] = (
                part.content
                if isinstance(part.content, str)
                else _user_content(part.content, dialect, provider_name, model_name)
            )
            return {"role": "user", "content": content}
        case ToolReturnPart():
            text, files = tool_result_text(part.content)
            pending_files.extend(files)
            return {"role": "tool", "tool_call_id": part.tool_call_id, "content": text}
        case RetryPromptPart():
            if part.tool_name is None:
                return {"role": "user", "content": part.model_response()}
            return {"role": "tool", "tool_call_id": part.tool_call_id, "content": part.model_response()}
        case RetryFeedbackPart():
            return {"role": "user", "content": part.model_response()}
        case SpeechPart():
            if part.transcript:
                return {"role": "user", "content": part.transcript}
            if part.audio is not None:
                return {
                    "role": "user",
                    "content": _user_content([part.audio], dialect, provider_name, model_name),
                }
            return None
        case CompactionPart():
            return {"role": "user", "content": part.content} if part.content else None
        case _:
            never_sent(part)  # records of how the call's configuration changed; the call carries it
            return None


def _merge_leading_system(messages: list[dict[str, Any]], role: str) -> list[dict[str, Any]]:
    count = 0
    while (
        count < len(messages)
        and messages[count]["role"] == role
        and isinstance(messages[count]["content"], str)
    ):
        count += 1
    if count < 2:
        return messages
    merged = {"role": role, "content": "\n\n".join(m["content"] for m in messages[:count])}
    return [merged, *messages[count:]]


def _tool(tool: ToolDefinition, dialect: ChatDialect) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool.name}
    if tool.description is not None:
        function["description"] = tool.description
    if dialect.strict_tools:
        schema, strict = strict_schema.prepare(tool.parameters_json_schema, tool.strict)
        function["parameters"] = schema
        if strict:
            function["strict"] = True
    else:
        function["parameters"] = tool.parameters_json_schema
    return {"type": "function", "function": function}


def _tool_choice(
    call: ModelCall, dialect: ChatDialect, names: list[str]
) -> tuple[str | dict[str, Any] | None, list[str] | None]:
    """The `tool_choice` to send, and the tool names to keep when the choice must narrow the list."""
    choice = call.settings.tool_choice
    if choice is None:
        choice = "auto" if call.allow_text_output else "required"
    if isinstance(choice, str):
        if choice == "required" and not dialect.tool_choice_required:
            raise UserError("this endpoint does not accept tool_choice='required'")
        return choice, None
    unknown = [name for name in choice if name not in names]
    if unknown:
        raise UserError(f"tool_choice names tools that are not offered: {', '.join(unknown)}")
    if len(choice) == 1:
        return {"type": "function", "function": {"name": choice[0]}}, None
    if dialect.allowed_tools:
        return {
            "type": "allowed_tools",
            "allowed_tools": {
                "mode": "required",
                "tools": [{"type": "function", "function": {"name": n}} for n in choice],
            },
        }, None
    # No allowed_tools on this server: offering only the chosen tools keeps the same meaning.
    return "required", list(choice)


def _response_format(call: ModelCall, dialect: ChatDialect) -> dict[str, Any] | None:
    output = call.output
    if isinstance(output, JsonObjectFormat):
        return {"type": "json_object"}
    if isinstance(output, JsonSchemaFormat):
        spec: dict[str, Any] = {"name": output.name}
        if output.description:
            spec["description"] = output.description
        if dialect.strict_tools:
            schema, strict = strict_schema.prepare(output.schema, output.strict)
            spec["schema"] = schema
            spec["strict"] = strict
        else:
            spec["schema"] = output.schema
            if output.strict:
                spec["strict"] = True
        return {"type": "json_schema", "json_schema": spec}
    return None


def _reasoning(call: ModelCall, dialect: ChatDialect, body: dict[str, Any]) -> None:
    settings = call.settings
    effort = settings.reasoning_effort
    thinking = settings.thinking
    control = dialect.thinking_control
    if control == "reasoning_effort":
        if effort is None and thinking is False:
            effort = "none"
        if effort is not None:
            body["reasoning_effort"] = effort
    elif control == "thinking_type":
        if thinking is not None:
            body["thinking"] = {"type": "enabled" if thinking else "disabled"}
        if effort is not None:
            body["reasoning_effort"] = effort
    elif control == "openrouter":
        reasoning: dict[str, Any] = {}
        if effort is not None:
            reasoning["effort"] = effort
        if thinking is not None:
            reasoning["enabled"] = thinking
        if settings.thinking_budget_tokens is not None:
            reasoning["max_tokens"] = settings.thinking_budget_tokens
        if reasoning:
            body["reasoning"] = reasoning
    elif effort is not None:
        raise UserError(f"this endpoint has no way to send reasoning_effort={effort!r}")


def build_request(
    call: ModelCall,
    *,
    model_name: str,
    dialect: ChatDialect | None = None,
    stream: bool = False,
    provider_name: str = OPENAI,
    extra_owned_keys: Collection[str] = (),
    wire_cache: WireCache | None = None,
) -> dict[str, Any]:
    """The Chat Completions request body for `call`, as a JSON-ready dict.

    With `wire_cache`, `messages` is one `msgspec.Raw` (the encoded array) whose history messages
    are reused from the cache: the same bytes once encoded, less work on a long history.

    `provider_name` selects which reasoning parts and uploaded files may be replayed and which
    `ModelSettings.extra_body` entry applies; `extra_owned_keys` are further body keys the caller
    encodes itself (e.g. OpenRouter's typed `provider` routing) and that `extra_body` may not set.
    Raises `UnsupportedContentError` for a part or content item this endpoint cannot take (e.g. audio
    by URL, which must be downloaded first), and `UserError` for other input it would reject.
    """
    dialect = dialect or _DEFAULT_DIALECT
    body: dict[str, Any] = {
        "model": model_name,
        "messages": _messages(call, dialect, provider_name, model_name)
        if wire_cache is None
        else _encoded_messages(call, dialect, provider_name, model_name, wire_cache),
    }
    _fill(body, call, dialect, stream, provider_name, extra_owned_keys)
    return body


def _fill(
    body: dict[str, Any],
    call: ModelCall,
    dialect: ChatDialect,
    stream: bool,
    provider_name: str,
    extra_owned_keys: Collection[str],
) -> None:
    """Everything of the request body after `model` and `messages` (which `body` holds), in order."""
    settings = call.settings
    tools = list(call.all_tools)
    if tools:
        choice, keep = _tool_choice(call, dialect, [t.name for t in tools])
        if keep is not None:
            tools = [t for t in tools if t.name in keep]
        body["tools"] = [_tool(t, dialect) for t in tools]
        if choice is not None:
            body["tool_choice"] = choice
        if settings.parallel_tool_calls is not None:
            body["parallel_tool_calls"] = settings.parallel_tool_calls
    elif isinstance(settings.tool_choice, list) and settings.tool_choice:
        raise UserError("tool_choice names tools, but the request offers none")
    response_format = _response_format(call, dialect)
    if response_format is not None:
        body["response_format"] = response_format
    if settings.max_tokens is not None:
        body[dialect.max_tokens_field] = settings.max_tokens
    for name, field in (
        ("temperature", "temperature"),
        ("top_p", "top_p"),
        ("seed", "seed"),
        ("presence_penalty", "presence_penalty"),
        ("frequency_penalty", "frequency_penalty"),
        ("logit_bias", "logit_bias"),
        ("logprobs", "logprobs"),
        ("service_tier", "service_tier"),
    ):
        value = getattr(settings, name)
        if value is not None:
            body[field] = value
    if settings.top_logprobs is not None:
        body["top_logprobs"] = settings.top_logprobs
        body.setdefault("logprobs", True)
    if settings.stop_sequences is not None:
        body["stop"] = settings.stop_sequences
    if settings.top_k is not None:
        if not dialect.top_k:
            raise UserError("this endpoint does not accept top_k")
        body["top_k"] = settings.top_k
    _reasoning(call, dialect, body)
    if dialect.prompt_cache_key and call.cache_key:
        body["prompt_cache_key"] = call.cache_key
    for native in call.native_tools:
        if native.kind == "web_search" and dialect.web_search_options:
            body["web_search_options"] = dict(native.options or {})
        else:
            raise UserError(
                f"Chat Completions cannot run the native tool {native.kind!r}; use the Responses API"
            )
    if stream:
        body["stream"] = True
        if dialect.stream_usage:
            body["stream_options"] = {"include_usage": True}
    extra = settings.extra_body_for(provider_name, OWNED_KEYS | set(extra_owned_keys) | set(body))
    if extra:
        body.update(extra)


def _encoded_body(
    call: ModelCall,
    *,
    model_name: str,
    dialect: ChatDialect | None,
    stream: bool,
    provider_name: str,
    extra_owned_keys: Collection[str],
    wire_cache: WireCache,
    extra_fields: dict[str, Any],
) -> bytes:
    """`build_request` with `wire_cache`, updated with `extra_fields` (which sets neither `model`
    nor `messages`) and encoded as JSON: the same bytes, with the history's JSON copied once.

    The body is `{"model":…,"messages":[…]` and then the rest of its fields, in the same order; so
    the cache joins the history's bytes with what goes before and after them (the rest encoded on
    its own), rather than the history being joined, wrapped in brackets and copied by the encoder.
    """
    resolved = dialect or _DEFAULT_DIALECT
    head, index, view, encode = _history_encoding(call, resolved, provider_name, model_name)

    def after() -> bytes:
        # Called once the history is encoded, so that its errors come first, as in `build_request`.
        body: dict[str, Any] = {"model": model_name, "messages": None}
        _fill(body, call, resolved, stream, provider_name, extra_owned_keys)
        body.update(extra_fields)
        del body["model"], body["messages"]
        rest = _ENCODE(body)  # `{…}`: the fields after the messages, `{}` when there are none
        return b"]," + rest[1:] if len(rest) > 2 else b"]}"

    before = b"".join((b'{"model":', _ENCODE(model_name), b',"messages":['))
    return wire_cache.encode(call.messages, view, encode, start=index, before=before, lead=head, after=after)


encode_request = json_encoded(build_request)
"""The Chat Completions request body for `call`, encoded as JSON bytes (see `build_request`)."""


# --- wire types ----------------------------------------------------------------------------------


class _Function(msgspec.Struct):
    name: str | None = None
    arguments: Any = None


class _ToolCall(msgspec.Struct):
    index: Any = None
    id: Any = None
    type: Any = None
    function: _Function | None = None


class _Message(msgspec.Struct):
    role: Any = None
    content: Any = None
    refusal: Any = None
    tool_calls: list[_ToolCall] | None = None
    function_call: _Function | None = None
    reasoning_content: Any = None
    reasoning: Any = None
    reasoning_details: Any = None
    annotations: Any = None
    audio: Any = None


class _Choice(msgspec.Struct):
    index: Any = 0
    message: _Message | None = None
    delta: _Message | None = None
    finish_reason: Any = None
    native_finish_reason: Any = None


class _Completion(msgspec.Struct):
    id: Any = None
    model: Any = None
    created: Any = None
    choices: list[_Choice] | None = None
    usage: Any = None
    service_tier: Any = None
    system_fingerprint: Any = None
    error: Any = None
    provider: Any = None
    x_groq: Any = None


# Decoded once per stream chunk: the bounded decoder is built once.
_CHUNK: Final = bounded_json.ProviderDecoder(
    _Completion, bounded_json.STREAM_EVENT, "a Chat Completions stream chunk"
)


def map_usage(usage: Any) -> RequestUsage | None:
    """Normalized usage from a Chat Completions `usage` object (OpenAI, DeepSeek, OpenRouter, Groq shapes)."""
    raw = as_dict(usage)
    if not raw:
        return None
    prompt = as_dict(raw.get("prompt_tokens_details"))
    completion = as_dict(raw.get("completion_tokens_details"))
    cache_reported = bool(prompt) or "prompt_cache_hit_tokens" in raw or "cached_tokens" in raw
    cache_read = (
        as_int(prompt.get("cached_tokens"))
        or as_int(raw.get("prompt_cache_hit_tokens"))
        or as_int(raw.get("cached_tokens"))
    )
    details: dict[str, int] = {}
    reasoning = as_int(completion.get("reasoning_tokens"))
    if reasoning:
        details["reasoning_tokens"] = reasoning
    for name in ("accepted_prediction_tokens", "rejected_prediction_tokens"):
        value = as_int(completion.get(name))
        if value:
            details[name] = value
    cache_write = as_int(prompt.get("cache_write_tokens"))
    return RequestUsage(
        input_tokens=as_int(raw.get("prompt_tokens")),
        output_tokens=as_int(raw.get("completion_tokens")),
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
        input_audio_tokens=as_int(prompt.get("audio_tokens")),
        output_audio_tokens=as_int(completion.get("audio_tokens")),
        output_reasoning_tokens=reasoning,
        details=details,
        cost=as_decimal(raw.get("cost")),
        cache_reported=cache_reported,
    )


def _text_of(content: Any) -> str | None:
    """Message content as text: a string, or the text items of a content list (Mistral-style)."""
    if content is None:
        return None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts: list[str] = []
        for item in content:  # pyright: ignore[reportUnknownVariableType]
            if isinstance(item, str):
                texts.append(item)
            elif isinstance(item, dict) and item.get("type") in ("text", "output_text"):  # pyright: ignore[reportUnknownMemberType]
                text = as_str(item.get("text"))  # pyright: ignore[reportUnknownMemberType]
                if text:
                    texts.append(text)
        return "".join(texts)
    raise ResponseDecodeError(f"message content is a {type(content).__name__}, not text")


def _thinking_of(message: _Message) -> tuple[str | None, str | None]:
    """The reasoning text and the field it came in."""
    for name in ("reasoning_content", "reasoning"):
        value = getattr(message, name)
        if isinstance(value, str) and value:
            return value, name
    return None, None


def merge_reasoning_details(fragments: list[Any]) -> list[dict[str, Any]]:
    """OpenRouter `reasoning_details` fragments of a stream joined into whole entries (by type and index)."""
    merged: list[dict[str, Any]] = []
    for fragment in fragments:
        info = as_dict(fragment)
        if not info:
            continue
        last = merged[-1] if merged else None
        if (
            last is not None
            and last.get("type") == info.get("type")
            and last.get("index") == info.get("index")
        ):
            for key, value in info.items():
                if key in ("text", "summary", "data") and isinstance(value, str):
                    previous = last.get(key)
                    last[key] = (previous if isinstance(previous, str) else "") + value
                elif value not in (None, ""):
                    last[key] = value
        else:
            merged.append(dict(info))
    return merged


def _details_text(details: list[Any]) -> str:
    texts: list[str] = []
    for item in details:
        info = as_dict(item)
        text = as_str(info.get("text")) or as_str(info.get("summary"))
        if text:
            texts.append(text)
    return "".join(texts)


def _provider_details(
    completion: _Completion, raw_finish: str | None, refusal: str | None
) -> dict[str, Any] | None:
    details: dict[str, Any] = {}
    if raw_finish is not None:
        details["finish_reason"] = raw_finish
    if isinstance(completion.service_tier, str):
        details["service_tier"] = completion.service_tier
    if isinstance(completion.provider, str):
        details["upstream_provider"] = completion.provider
    if refusal:
        details["refusal"] = refusal
    return details or None


def _finish(raw_finish: str | None, refusal: str | None) -> Any:
    if refusal:
        return "content_filter"
    return normalize_finish_reason(raw_finish)


def _function_args(arguments: Any) -> str | dict[str, Any] | None:
    if arguments is None or isinstance(arguments, str):
        return arguments
    if isinstance(arguments, dict):
        return arguments  # pyright: ignore[reportUnknownVariableType]
    raise ResponseDecodeError(
        f"tool call arguments are a {type(arguments).__name__}, not a JSON string or object"
    )


def _decode_completion(
    completion: _Completion, *, model_name: str | None, provider_name: str, seed: bytes
) -> ModelResponse:
    if completion.error is not None:
        raise in_band_error(
            completion.error,
            provider_name=provider_name,
            model_name=model_name,
            where="the response body holds an error",
        )
    if not completion.choices:
        raise ResponseDecodeError(
            "the response has no choices", provider_name=provider_name, model_name=model_name
        )
    choice = completion.choices[0]
    message = choice.message
    if message is None:
        raise ResponseDecodeError(
            "the first choice has no message", provider_name=provider_name, model_name=model_name
        )
    ids = StableIds(completion.id if isinstance(completion.id, str) and completion.id else seed)
    parts: list[ModelResponsePart] = []
    thinking, field = _thinking_of(message)
    details = as_list(message.reasoning_details) or None
    if thinking is None and details:
        thinking, field = _details_text(details), "reasoning_details"
    if thinking is not None or details:
        parts.append(
            ThinkingPart(
                content=thinking or "",
                id=field,
                provider_name=provider_name,
                provider_details={"reasoning_details": details} if details else None,
            )
        )
    text = _text_of(message.content)
    if text:
        parts.append(TextPart(content=text))
    calls = list(message.tool_calls or ())
    if not calls and message.function_call is not None:
        calls = [_ToolCall(function=message.function_call)]
    for call in calls:
        function = call.function or _Function()
        if not isinstance(function.name, str) or not function.name:
            raise ResponseDecodeError(
                "a tool call has no function name", provider_name=provider_name, model_name=model_name
            )
        call_id = call.id if isinstance(call.id, str) and call.id else ids.next()
        parts.append(
            ToolCallPart(
                tool_name=function.name, args=_function_args(function.arguments), tool_call_id=call_id
            )
        )
    raw_finish = as_str(choice.finish_reason)
    refusal = as_str(message.refusal)
    usage = (
        map_usage(completion.usage)
        or map_usage(as_dict(completion.x_groq).get("usage"))
        or RequestUsage(cache_reported=False)
    )
    response = ModelResponse(
        parts=parts,
        usage=usage,
        model_name=as_str(completion.model) or model_name,
        provider_name=provider_name,
        provider_details=_provider_details(completion, raw_finish, refusal),
        provider_response_id=as_str(completion.id),
        finish_reason=_finish(raw_finish, refusal),
    )
    created = timestamp(completion.created)
    if created is not None:
        response.timestamp = created
    return response


def decode_response(
    body: bytes,
    *,
    model_name: str | None = None,
    provider_name: str = OPENAI,
    provider_url: str | None = None,
) -> ModelResponse:
    """Decode a buffered Chat Completions response body; `provider_url` is recorded on the response.

    Raises `ResponseDecodeError` for malformed or empty input (bounded by
    `bounded_json.PROVIDER_RESPONSE`), or the typed error of an `error` object in the body.
    """
    completion = bounded_json.decode_provider_json(
        body, _Completion, bounded_json.PROVIDER_RESPONSE, "the Chat Completions response"
    )
    try:
        response = _decode_completion(
            completion, model_name=model_name, provider_name=provider_name, seed=body[:4096]
        )
        response.provider_url = provider_url
        return response
    except ProviderError:
        raise
    except SHAPE_ERRORS as exc:
        raise shape_errors("the Chat Completions response", provider_name, model_name)(exc) from exc


# --- streaming -----------------------------------------------------------------------------------


# The fast path for a stream's common chunk: a first choice with text or nothing. It has every
# field the full path reads; those that would make it do more than add text are `None`-typed, so a
# chunk that sets one (or gives any field another type) does not fit and takes the full path, which
# decodes it as before. Unknown fields are ignored on both paths. Not tracked by the garbage
# collector: a decoded document holds no reference cycles.
class _TextDelta(msgspec.Struct, gc=False):
    content: str | None = None
    refusal: None = None
    tool_calls: None = None
    function_call: None = None
    reasoning_content: None = None
    reasoning: None = None
    reasoning_details: None = None


class _TextChoice(msgspec.Struct, gc=False):
    delta: _TextDelta
    index: Literal[0] = 0
    message: None = None
    finish_reason: str | None = None


class _TextChunk(msgspec.Struct, gc=False):
    choices: tuple[_TextChoice]
    id: str | None = None
    model: str | None = None
    created: Any = None
    service_tier: str | None = None
    provider: str | None = None
    usage: None = None
    x_groq: None = None
    error: None = None


_TEXT_CHUNK: Final = bounded_json.FastPathDecoder(_TextChunk, bounded_json.STREAM_EVENT)
# Chunks that did not fit before a stream stops trying the fast path (a stream of tool calls or
# reasoning, where nearly none fits).
_FAST_MISSES: Final = 8
# The chunks decoded in one call, tried before knowing they fit: this many at first, twice as many
# after each window that fitted whole (up to `_MAX_WINDOW`), back to this after one that did not.
_WINDOW: Final = 64
_MAX_WINDOW: Final = 1024


class ChatStreamDecoder:
    """Turns the `data` payloads of a streamed Chat Completions response into ferrule stream events.

    A [`StreamDecoder`][ferrule.core.codec.StreamDecoder]: feed each SSE event with
    [`feed`][ferrule.providers.openai.chat_codec.ChatStreamDecoder.feed], then call
    [`finish`][ferrule.providers.openai.chat_codec.ChatStreamDecoder.finish] when the body ends: it
    returns the last events, ending with one `ResponseCompleted`, or raises `ResponseDecodeError`
    when the stream stopped before its finish reason or `[DONE]`.
    """

    def __init__(
        self, *, model_name: str | None = None, provider_name: str = OPENAI, provider_url: str | None = None
    ) -> None:
        self.model_name = model_name
        """The requested model (the provider's own name for it replaces it once reported)."""
        self.provider_name = provider_name
        """The provider, recorded on the response and its reasoning parts."""
        self.provider_url = provider_url
        """The API root, recorded on the response."""
        self._builder = ResponseBuilder()
        self._ids: StableIds | None = None
        self._response_id: str | None = None
        self._reported_model: str | None = None
        self._created: Any = None
        self._service_tier: str | None = None
        self._upstream: str | None = None
        self._raw_finish: str | None = None
        self._refusal: list[str] = []
        self._usage: RequestUsage | None = None
        self._done = False
        self._tool_keys: dict[int, tuple[Any, str | None]] = {}
        self._tool_count = 0
        self._details: list[Any] = []
        self._thinking_started = False
        self._finished = False
        # Whether chunks are tried on the fast path first: from the second chunk (the first sets
        # up the stream's IDs) until `[DONE]` or `_FAST_MISSES` chunks that did not fit; once
        # more from the next text-only chunk after that.
        self._fast = False
        self._window = _WINDOW
        self._misses = 0
        self._rearmed = False

    @property
    def done(self) -> bool:
        """Whether `[DONE]` arrived."""
        return self._done

    def feed(self, event: SseEvent) -> list[ModelStreamEvent]:
        """Decode one server-sent event and return the stream events it produces."""
        data = event.data
        if self._finished:
            raise ResponseDecodeError(
                "the stream continued after it was finished",
                provider_name=self.provider_name,
                model_name=self.model_name,
            )
        if self._fast:
            text_chunk = _TEXT_CHUNK.decode(data)
            if text_chunk is not None:
                events: list[ModelStreamEvent] = []
                self._text_chunks([text_chunk], events)  # typed values: no shape error to convert
                return events
            return self._missed(data)
        return self._full(data)

    def _missed(self, data: str) -> list[ModelStreamEvent]:
        """`feed` for a chunk the fast path tried and did not fit: the miss counted, the full way."""
        self._misses += 1
        self._fast = self._misses < _FAST_MISSES
        return self._full(data)

    def _full(self, data: str) -> list[ModelStreamEvent]:
        """`feed` for a chunk off the fast path."""
        if self._done or not data.startswith("{"):
            # Not a chunk object as sent: blank, `[DONE]`, padded, or after `[DONE]`.
            stripped = data.strip()
            if not stripped:
                return []
            if stripped == "[DONE]":
                self._done = True
                self._fast = False
                return []
            if self._done:
                raise ResponseDecodeError(
                    "the stream sent data after [DONE]",
                    provider_name=self.provider_name,
                    model_name=self.model_name,
                )
        chunk = _CHUNK.decode(data, provider_name=self.provider_name, model_name=self.model_name)
        try:
            return self._chunk(chunk, data)
        except ProviderError:
            raise
        except SHAPE_ERRORS as exc:
            raise shape_errors("a Chat Completions stream chunk", self.provider_name, self.model_name)(
                exc
            ) from exc

    def feed_many(self, events: Sequence[SseEvent], out: list[ModelStreamEvent]) -> None:
        """Decode the events of one network read in order, adding the stream events they produce to `out`.

        A [`BatchStreamDecoder`][ferrule.core.codec.BatchStreamDecoder]: the same as `feed` for
        each event, its events added to `out` (so when one raises, `out` holds those of the events
        before it). The text-only chunks among them are decoded in one loop for the read.
        """
        count = len(events)
        if count < MIN_BATCH or type(self).feed is not ChatStreamDecoder.feed:
            # A read of a slow stream, or a subclass's own `feed`, which sees every event.
            for event in events:
                out += self.feed(event)
            return
        start = 0
        while start < count:
            if not self._fast or self._finished:
                out += self.feed(events[start])  # the first chunk, or chunks that rarely fit
                start += 1
                continue
            # Decoded as `feed` decodes each on the fast path, a window of the read at once
            # (`_WINDOW`): a stream that turns out not to fit (tool calls) wastes at most a
            # window's decodes, never more than 64 beyond the text chunks it already took.
            window = self._window
            end = min(count, start + window)
            for run, misfit in fast_runs(_TEXT_CHUNK, events[start:end]):
                if run:
                    self._text_chunks(run, out)
                start += len(run)
                if misfit is None:
                    if len(run) == window:
                        self._window = min(2 * window, _MAX_WINDOW)
                    break
                self._window = _WINDOW
                out += self._missed(misfit.data)  # what `feed` does with a chunk that did not fit
                start += 1
                if not self._fast:
                    break  # given up on the fast path, or `[DONE]`: one by one from here

    def _text_chunks(self, chunks: list[_TextChunk], out: list[ModelStreamEvent]) -> None:
        """`_chunk` for chunks that fit `_TextChunk`, in order: the same state changes, and the
        same events, added to `out`."""
        response_id = self._response_id
        reported = self._reported_model
        created = self._created
        tier = self._service_tier
        upstream = self._upstream
        finish = self._raw_finish
        texts: list[str] = []
        for chunk in chunks:
            if response_id is None and chunk.id:
                response_id = chunk.id
            model = chunk.model
            if model and model != reported:
                reported = model
            if created is None:
                created = chunk.created
            if chunk.service_tier is not None:
                tier = chunk.service_tier
            if chunk.provider is not None:
                upstream = chunk.provider
            choice = chunk.choices[0]
            if choice.finish_reason is not None:
                finish = choice.finish_reason
            content = choice.delta.content
            if content:
                texts.append(content)
        self._response_id = response_id
        self._reported_model = reported
        self._created = created
        self._service_tier = tier
        self._upstream = upstream
        self._raw_finish = finish
        if texts:
            self._builder.texts(texts, out)

    def _chunk(self, chunk: _Completion, data: str) -> list[ModelStreamEvent]:
        if chunk.error is not None:
            raise in_band_error(
                chunk.error,
                provider_name=self.provider_name,
                model_name=self.model_name,
                where="the stream reported an error",
            )
        if self._ids is None:
            seed = chunk.id if isinstance(chunk.id, str) and chunk.id else data[:4096]
            self._ids = StableIds(seed)
            self._fast = True
        # Every field is checked for `None` first: a chunk carries few of them, and most of a
        # stream's chunks carry only a text delta (the per-delta cost of the stream).
        if self._response_id is None and isinstance(chunk.id, str) and chunk.id:
            self._response_id = chunk.id
        model = chunk.model
        if model is not None and model != self._reported_model and isinstance(model, str) and model:
            self._reported_model = model
        if self._created is None:
            self._created = chunk.created
        if chunk.service_tier is not None and isinstance(chunk.service_tier, str):
            self._service_tier = chunk.service_tier
        if chunk.provider is not None and isinstance(chunk.provider, str):
            self._upstream = chunk.provider
        if chunk.usage is not None or chunk.x_groq is not None:
            usage = map_usage(chunk.usage) or map_usage(as_dict(chunk.x_groq).get("usage"))
            if usage is not None:
                self._usage = usage
        choices = chunk.choices
        if not choices:
            return []
        if len(choices) == 1:
            return self._choice(choices[0])  # nearly every chunk: no list to gather events in
        events: list[ModelStreamEvent] = []
        for choice in choices:
            events.extend(self._choice(choice))
        return events

    def _choice(self, choice: _Choice) -> list[ModelStreamEvent]:
        if choice.index != 0 and isinstance(choice.index, int):
            return []  # only the first choice is decoded, as for buffered responses
        delta = choice.delta or choice.message
        events = self._delta(delta) if delta is not None else []
        finish = choice.finish_reason
        if finish is not None and isinstance(finish, str):
            self._raw_finish = finish
        return events

    def _delta(self, delta: _Message) -> list[ModelStreamEvent]:
        builder = self._builder
        content = delta.content
        if (
            delta.reasoning_content is None
            and delta.reasoning is None
            and delta.reasoning_details is None
            and delta.refusal is None
            and delta.tool_calls is None
            and delta.function_call is None
        ):
            # Only text (or nothing): most chunks of a stream.
            if content is None:
                return []
            if type(content) is str:
                if content and not self._fast and not self._rearmed:
                    # Text after chunks that did not fit (a reasoning model's thinking): try the
                    # fast path again, once a stream.
                    self._fast = self._rearmed = True
                    self._misses = 0
                return builder.text(content) if content else []
            text = _text_of(content)
            return builder.text(text) if text else []
        events: list[ModelStreamEvent] = []
        thinking, field = _thinking_of(delta)
        fragments = as_list(delta.reasoning_details)
        if fragments:
            self._details.extend(fragments)
            if thinking is None:
                thinking, field = _details_text(fragments) or None, "reasoning_details"
        if thinking or (fragments and not self._thinking_started):
            # Encrypted reasoning arrives without text; its part must exist to carry it.
            self._thinking_started = True
            part_id = field if thinking else None
            events.extend(builder.thinking(thinking or None, id=part_id, provider_name=self.provider_name))
        text = _text_of(content)
        if text:
            events.extend(builder.text(text))
        refusal = as_str(delta.refusal)
        if refusal:
            self._refusal.append(refusal)
        calls = list(delta.tool_calls or ())
        if not calls and delta.function_call is not None:
            calls = [_ToolCall(index=0, function=delta.function_call)]
        for position, call in enumerate(calls):
            events.extend(self._tool_delta(call, position))
        return events

    def _tool_delta(self, call: _ToolCall, position: int) -> list[ModelStreamEvent]:
        index = call.index if isinstance(call.index, int) and not isinstance(call.index, bool) else position
        call_id = call.id if isinstance(call.id, str) and call.id else None
        function = call.function or _Function()
        name = function.name if isinstance(function.name, str) and function.name else None
        args = _function_args(function.arguments)
        current = self._tool_keys.get(index)
        if current is None or (call_id is not None and current[1] is not None and call_id != current[1]):
            # A new call at this index (some servers reuse index 0 for every call, each with its own ID).
            self._tool_count += 1
            key = ("tool", self._tool_count)
            assert self._ids is not None
            self._tool_keys[index] = (key, call_id)
            return self._builder.tool_call(
                key=key, tool_name=name, args=args or None, tool_call_id=call_id or self._ids.next()
            )
        key, _ = current
        return self._builder.tool_call(key=key, tool_name=name, args=args or None)

    def finish(self) -> list[ModelStreamEvent]:
        """End of the body: the remaining part-end events and the `ResponseCompleted` event.

        Raises `ResponseDecodeError` when neither a finish reason nor `[DONE]` arrived (a
        truncated stream), or when a tool call has no name.
        """
        if self._finished:
            raise ResponseDecodeError(
                "the stream was already finished",
                provider_name=self.provider_name,
                model_name=self.model_name,
            )
        self._finished = True
        if not self._done and self._raw_finish is None:
            raise ResponseDecodeError(
                "the stream ended before its finish reason or [DONE]; the response is incomplete",
                provider_name=self.provider_name,
                model_name=self.model_name,
            )
        events = self._builder.finish()
        parts = self._builder.parts
        for part in parts:
            if isinstance(part, ToolCallPart) and not part.tool_name:
                raise ResponseDecodeError(
                    "a streamed tool call has no function name",
                    provider_name=self.provider_name,
                    model_name=self.model_name,
                )
            if isinstance(part, ThinkingPart) and self._details:
                merged = merge_reasoning_details(self._details)
                part.provider_details = {**(part.provider_details or {}), "reasoning_details": merged}
                if part.id is None:
                    part.id = "reasoning_details"
        refusal = "".join(self._refusal) or None
        details: dict[str, Any] = {}
        if self._raw_finish is not None:
            details["finish_reason"] = self._raw_finish
        if self._service_tier:
            details["service_tier"] = self._service_tier
        if self._upstream:
            details["upstream_provider"] = self._upstream
        if refusal:
            details["refusal"] = refusal
        response = ModelResponse(
            parts=parts,
            usage=self._usage or RequestUsage(cache_reported=False),
            model_name=self._reported_model or self.model_name,
            provider_name=self.provider_name,
            provider_url=self.provider_url,
            provider_details=details or None,
            provider_response_id=self._response_id,
            finish_reason=_finish(self._raw_finish, refusal),
        )
        created = timestamp(self._created)
        if created is not None:
            response.timestamp = created
        events.append(ResponseCompleted(response))
        return events


def decode_stream(
    data: bytes, *, model_name: str | None = None, provider_name: str = OPENAI
) -> ModelResponse:
    """Decode the raw SSE text of a streamed Chat Completions response through `ChatStreamDecoder`."""
    return _decode_sse(ChatStreamDecoder(model_name=model_name, provider_name=provider_name), data)


class ChatCodec:
    """The Chat Completions wire format of one model on one endpoint: a [`Codec`][ferrule.core.codec.Codec].

    `dialect` says how the endpoint spells the fields that vary between servers; `extra_fields` are
    body fields the caller encodes itself (OpenRouter's typed `provider` routing) and, with
    `extra_owned_keys`, keys `ModelSettings.extra_body` may not set. A call's `request_id` is sent
    as `x-client-request-id`.
    """

    __slots__ = (
        "dialect",
        "extra_fields",
        "extra_owned_keys",
        "model_name",
        "provider_name",
        "provider_url",
        "wire_cache",
    )

    def __init__(
        self,
        *,
        model_name: str | None = None,
        dialect: ChatDialect | None = None,
        provider_name: str = OPENAI,
        provider_url: str | None = None,
        extra_fields: dict[str, Any] | None = None,
        extra_owned_keys: Collection[str] = (),
        wire_cache: WireCache | None = None,
    ) -> None:
        self.model_name = model_name
        """The model requests are for; `None` only for decoding."""
        self.dialect = dialect
        """The endpoint's dialect; `None` is OpenAI's."""
        self.provider_name = provider_name
        """The provider, which decides what may be replayed to it and which `extra_body` entry applies."""
        self.provider_url = provider_url
        """The API root, recorded on decoded responses."""
        self.extra_fields = extra_fields or {}
        """Body fields added to every request."""
        self.extra_owned_keys = extra_owned_keys
        """Body keys `extra_body` may not set besides the encoder's own."""
        self.wire_cache = wire_cache
        """Where encoded history messages are kept for later requests (the model's); `None`: none."""

    def encode(self, call: ModelCall, *, stream: bool = False) -> WireRequest:
        """The request for `call` (see [`build_request`][ferrule.providers.openai.chat_codec.build_request])."""
        if self.model_name is None:
            raise UserError("ChatCodec needs a model_name to encode a request")
        headers = {"x-client-request-id": call.request_id} if call.request_id else {}
        cache = self.wire_cache
        if cache is not None and not _SPLICED_KEYS.intersection(self.extra_fields):
            data = _encoded_body(
                call,
                model_name=self.model_name,
                dialect=self.dialect,
                stream=stream,
                provider_name=self.provider_name,
                extra_owned_keys=self.extra_owned_keys,
                wire_cache=cache,
                extra_fields=self.extra_fields,
            )
            return WireRequest(body=data, headers=headers)
        body = build_request(
            call,
            model_name=self.model_name,
            dialect=self.dialect,
            stream=stream,
            provider_name=self.provider_name,
            extra_owned_keys=self.extra_owned_keys,
            wire_cache=cache,
        )
        body.update(self.extra_fields)
        return WireRequest(body=msgspec.json.encode(body), headers=headers)

    def decode(self, body: bytes) -> ModelResponse:
        """Decode a buffered response body."""
        return decode_response(
            body, model_name=self.model_name, provider_name=self.provider_name, provider_url=self.provider_url
        )

    def stream_decoder(self) -> ChatStreamDecoder:
        """A fresh decoder for one streamed response."""
        return ChatStreamDecoder(
            model_name=self.model_name, provider_name=self.provider_name, provider_url=self.provider_url
        )
