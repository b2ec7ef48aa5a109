"""Neutral model call → Gemini GenerateContent request body.

Pure functions: no I/O, no clock. Everything an application could get wrong (a tool name Gemini
rejects, a schema it cannot express, a foreign uploaded file, an unsupported setting combination)
raises [`UserError`][ferrule.core.errors.UserError] here, before any request is sent; a part or
content item Gemini has no way to take raises its subclass
[`UnsupportedContentError`][ferrule.core.errors.UnsupportedContentError]. Every part kind is matched
exhaustively: each is encoded, refused, or not sent for a reason docs/core.md gives.
"""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Any
from typing import Final
from typing import Literal
from typing import assert_never

import msgspec

from ferrule.core.codec import WireCache
from ferrule.core.codec_parts import UNTRANSCRIBED_SPEECH
from ferrule.core.codec_parts import never_sent
from ferrule.core.errors import UnsupportedContentError
from ferrule.core.errors import UnsupportedFeatureError
from ferrule.core.errors import UserError
from ferrule.core.messages import AudioUrl
from ferrule.core.messages import BinaryContent
from ferrule.core.messages import CachePoint
from ferrule.core.messages import CompactionPart
from ferrule.core.messages import DocumentUrl
from ferrule.core.messages import FilePart
from ferrule.core.messages import ImageUrl
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
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
from ferrule.core.messages import replay_args
from ferrule.core.messages import replayable_to
from ferrule.core.model import JsonObjectFormat
from ferrule.core.model import JsonSchemaFormat
from ferrule.core.model import ModelCall
from ferrule.core.model import ToolDefinition

from ._schema import SchemaDialect
from ._schema import to_json_schema
from ._schema import to_openapi_schema
from .profiles import GoogleModelTraits
from .profiles import traits_for

__all__ = ["DUMMY_THOUGHT_SIGNATURE", "EXTRA_BODY_TAG", "EncodeOptions", "build_request", "encode_request"]

DUMMY_THOUGHT_SIGNATURE: Final = "Y29udGV4dF9lbmdpbmVlcmluZ19pc190aGVfd2F5X3RvX2dv"
"""The placeholder signature Google documents for function calls Gemini 3 did not sign itself
(base64 of `context_engineering_is_the_way_to_go`): sent on the first call of a replayed model turn
that has no signature of its own, e.g. history from another provider."""

EXTRA_BODY_TAG: Final = "google"
"""The `ProviderExtraBody.provider` tag read by both the Gemini API and Vertex AI (same schema)."""

_FUNCTION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]{0,127}")
_YOUTUBE = re.compile(r"https://(?:www\.|m\.)?(?:youtube\.com/|youtu\.be/)", re.IGNORECASE)
_MEDIA_TYPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*")

# Top-level body keys ferrule encodes; `extra_body` may not set them (both spellings are accepted
# by the API, so both are owned).
_OWNED_TOP: Final = frozenset(
    {"contents", "systemInstruction", "system_instruction", "tools", "toolConfig", "tool_config"}
)
# generationConfig keys ferrule encodes from portable settings and the output format.
_OWNED_GENERATION: Final = frozenset(
    {
        "maxOutputTokens",
        "temperature",
        "topP",
        "topK",
        "seed",
        "stopSequences",
        "presencePenalty",
        "frequencyPenalty",
        "responseLogprobs",
        "logprobs",
        "thinkingConfig",
        "responseMimeType",
        "responseSchema",
        "responseJsonSchema",
    }
)

_URL_KINDS: Final[dict[type, str]] = {
    ImageUrl: "image-url",
    AudioUrl: "audio-url",
    VideoUrl: "video-url",
    DocumentUrl: "document-url",
}

_NATIVE_WIRE: Final = {
    "web_search": "googleSearch",
    "url_context": "urlContext",
    "web_fetch": "urlContext",
    "code_execution": "codeExecution",
    "file_search": "fileSearch",
}


class EncodeOptions(msgspec.Struct, frozen=True, kw_only=True):
    """What the codec needs to know about the model and provider beyond the call itself."""

    model_name: str
    """The model the request is for; thought signatures are replayed only to it."""
    provider_name: str = "google-gla"
    """The provider the request goes to (`"google-gla"` or `"google-vertex"`)."""
    traits: GoogleModelTraits | None = None
    """Wire traits of the model's family; derived from `model_name` when `None`."""
    schema_dialect: SchemaDialect | None = None
    """Override of the family's schema dialect (`"openapi"` or `"json_schema"`)."""
    server_side_tool_invocations: bool = False
    """The endpoint accepts `toolConfig.includeServerSideToolInvocations` (the Gemini API does)."""
    file_urls: Literal["any", "youtube"] = "youtube"
    """Which URLs may be sent as `fileData`: any (`https://`, `gs://`; Vertex) or YouTube only."""
    uploaded_file_provider: str | None = "google-gla"
    """The provider whose `UploadedFile`s this endpoint reads (`None`: none)."""


def encode_request(call: ModelCall, options: EncodeOptions, wire_cache: WireCache | None = None) -> bytes:
    """The JSON body of a `generateContent` / `streamGenerateContent` request for `call`.

    With `wire_cache`, each history message's turn is reused from the cache (the same bytes once
    encoded, less work on a long history) wherever the body is provably the uncached one.
    """
    return msgspec.json.encode(_Encoder(call, options, wire_cache).build())


def build_request(call: ModelCall, options: EncodeOptions) -> dict[str, Any]:
    """The request body for `call` as a JSON-ready dict (see the module docs for what it refuses)."""
    return _Encoder(call, options).build()


class _Turn(msgspec.Struct, array_like=True, gc=False, omit_defaults=True):
    """One history message encoded on its own (a `WireCache` fragment); not tracked by the GC, since
    ten thousand of them are decoded on every request of a long history."""

    role: str
    """The role of its turn; `""`: it sends no part."""
    turn: msgspec.Raw
    """Its turn's JSON, as the uncached encoder writes it when no neighbour shares its role."""
    system: list[str] | None = None
    """The texts of its system prompt parts."""


_TURN_ENCODER: Final = msgspec.json.Encoder()
_TURNS_DECODER: Final = msgspec.json.Decoder(list[_Turn])


class _Encoder:
    def __init__(self, call: ModelCall, options: EncodeOptions, wire_cache: WireCache | None = None) -> None:
        self.call = call
        self.options = options
        self.wire_cache = wire_cache
        self.encoded_contents: msgspec.Raw | None = None
        self.traits = options.traits or traits_for(options.model_name)
        self.dialect: SchemaDialect = options.schema_dialect or self.traits.schema_dialect
        self.system: list[dict[str, Any]] = []
        self.contents: list[dict[str, Any]] = []

    def _unsupported(self, feature: str, hint: str) -> UnsupportedFeatureError:
        return UnsupportedFeatureError(
            feature, model=f"{self.options.provider_name}:{self.options.model_name}", hint=hint
        )

    def build(self) -> dict[str, Any]:
        cache = self.wire_cache
        if cache is None or not self._reuse_turns(cache):
            for message in self.call.messages:
                self._message(message)
            if not self.contents:
                raise UserError("a Gemini request needs at least one message with content to answer")
        if self.call.instructions:
            self.system.append({"text": self.call.instructions})
        contents = self.contents if self.encoded_contents is None else self.encoded_contents
        body: dict[str, Any] = {"contents": contents}
        if self.system:
            body["systemInstruction"] = {"role": "user", "parts": self.system}
        tools, has_functions = self._tools()
        if tools:
            body["tools"] = tools
        tool_config = self._tool_config(has_functions)
        if tool_config:
            body["toolConfig"] = tool_config
        generation = self._generation_config(has_functions)
        extra = self._extra_body()
        extra_generation = extra.pop("generationConfig", None)
        if extra_generation is None:
            extra_generation = extra.pop("generation_config", None)
        if extra_generation is not None:
            if not isinstance(extra_generation, dict):
                raise UserError("extra_body generationConfig must be a JSON object")
            for key, value in extra_generation.items():  # pyright: ignore[reportUnknownVariableType]
                if _camel(str(key)) in _OWNED_GENERATION:  # pyright: ignore[reportUnknownArgumentType]
                    raise UserError(
                        f"extra_body generationConfig.{key} is encoded by ferrule from ModelSettings or the "
                        "output format; set it there instead"
                    )
                generation[str(key)] = value  # pyright: ignore[reportUnknownArgumentType]
        if generation:
            body["generationConfig"] = generation
        body.update(extra)
        return body

    # -- history ----------------------------------------------------------------------------------

    def _message(self, message: Message) -> None:
        if isinstance(message, ModelRequest):
            self._request(message)
        else:
            self._response(message)

    def _reuse_turns(self, cache: WireCache) -> bool:
        """Encode the history from `cache`'s turns; `False` (nothing set) where the body could differ.

        Each message is cached as its own turn. Joined, those are the uncached `contents` exactly
        when no two turns in a row share a role (the uncached encoder merges those); otherwise, for
        a history with no content, and on any error (the uncached encoder raises its own), the
        caller encodes the history in full.
        """
        unit = _Encoder(self.call, self.options)
        options = self.options
        # Everything a message's turn depends on besides the message (the traits hold a dict).
        view = (
            options.model_name,
            options.provider_name,
            options.file_urls,
            options.uploaded_file_provider,
            self.traits.replays_function_signatures,
        )
        try:
            joined = cache.encode(self.call.messages, view, unit.turn_fragment)
        except Exception:
            return False
        turns = _TURNS_DECODER.decode(b"[" + joined + b"]")
        sent = [t for t in turns if t.role]
        if not sent or any([a.role == b.role for a, b in pairwise(sent)]):
            return False
        self.system = [{"text": text} for t in turns if t.system for text in t.system]
        self.encoded_contents = msgspec.Raw(b"[" + b",".join([t.turn for t in sent]) + b"]")
        return True

    def turn_fragment(self, message: Message) -> bytes:
        """`message` encoded on its own, as a `_Turn`."""
        self.contents, self.system = [], []
        self._message(message)
        role, turn = "", b"null"
        if self.contents:
            (encoded,) = self.contents
            role = encoded["role"]
            turn = _TURN_ENCODER.encode(encoded)
        system = [p["text"] for p in self.system] or None
        return _TURN_ENCODER.encode(_Turn(role=role, turn=msgspec.Raw(turn), system=system))

    def _append(self, role: str, parts: list[dict[str, Any]]) -> None:
        if not parts:
            return
        if self.contents and self.contents[-1]["role"] == role:
            self.contents[-1]["parts"].extend(parts)
        else:
            self.contents.append({"role": role, "parts": parts})

    def _refuse(self, kind: str, reason: str) -> UnsupportedContentError:
        return UnsupportedContentError(
            kind, provider=self.options.provider_name, model=self.options.model_name, reason=reason
        )

    def _request(self, message: ModelRequest) -> None:
        parts: list[dict[str, Any]] = []
        for part in message.parts:
            match part:
                case SystemPromptPart():
                    # Gemini has one system instruction: every system part joins it, in order.
                    if part.content:
                        self.system.append({"text": part.content})
                case UserPromptPart():
                    for item in part.iter_content():
                        encoded = self._user_item(item)
                        if encoded is not None:
                            parts.append(encoded)
                case ToolReturnPart():
                    parts.extend(self._tool_return(part))
                case RetryPromptPart():
                    if part.tool_name is None:
                        parts.append({"text": part.model_response()})
                    else:
                        parts.append(
                            {
                                "functionResponse": {
                                    "name": part.tool_name,
                                    "id": part.tool_call_id,
                                    "response": {"error": part.model_response()},
                                }
                            }
                        )
                case RetryFeedbackPart():
                    parts.append({"text": part.model_response()})
                case CompactionPart():
                    # An application-written summary of earlier history: plain user text to Gemini.
                    if part.content:
                        parts.append({"text": part.content})
                case SpeechPart():
                    if part.transcript:
                        parts.append({"text": part.transcript})
                    elif part.audio is not None:
                        parts.append(self._binary(part.audio))
                case _:
                    never_sent(part)  # records of how the call's configuration changed; the call carries it
        self._append("user", parts)

    def _user_item(self, item: UserContent) -> dict[str, Any] | None:
        match item:
            case str():
                return {"text": item}
            case TextContent():  # StructuredContent too: its rendered text
                return {"text": item.content}
            case CachePoint():
                # Gemini caches prefixes implicitly or through cachedContents (extra_body cachedContent).
                return None
            case BinaryContent():
                return self._binary(item)
            case ImageUrl() | AudioUrl() | VideoUrl() | DocumentUrl():
                return self._file_url(item)
            case UploadedFile():
                return self._uploaded(item)
            case _:
                assert_never(item)

    def _binary(self, item: BinaryContent) -> dict[str, Any]:
        return self._with_metadata(
            {"inlineData": {"mimeType": _media_type(item.media_type), "data": item.base64}},
            item.vendor_metadata,
            video=item.is_video,
        )

    def _file_url(self, item: ImageUrl | AudioUrl | VideoUrl | DocumentUrl) -> dict[str, Any]:
        url = item.url
        kind = _URL_KINDS[type(item)]
        if item.force_download:
            raise self._refuse(
                kind,
                f"force_download is not done by the Gemini codec: download {url!r} through the agent's "
                "URL policy and pass BinaryContent",
            )
        allowed = (
            url.startswith(("https://", "gs://"))
            if self.options.file_urls == "any"
            else bool(_YOUTUBE.match(url))
        )
        if not allowed:
            where = "the Gemini API reads only YouTube URLs and uploaded files by reference"
            if self.options.file_urls == "any":
                where = "Vertex AI reads https:// and gs:// URLs"
            raise self._refuse(
                kind,
                f"cannot send {type(item).__name__} {url!r} by reference: {where}; download it and pass "
                "BinaryContent, or upload it with GoogleProvider.upload_file",
            )
        return self._with_metadata(
            {"fileData": {"fileUri": url, "mimeType": _media_type(item.resolved_media_type)}},
            item.vendor_metadata,
            video=isinstance(item, VideoUrl),
        )

    def _uploaded(self, item: UploadedFile) -> dict[str, Any]:
        owner = self.options.uploaded_file_provider
        if owner is None or item.provider_name != owner:
            raise UserError(
                f"file {item.file_id!r} belongs to {item.provider_name!r}, which {self.options.provider_name!r} "
                "cannot read; upload it to this provider (Gemini API: GoogleProvider.upload_file) or pass its bytes"
            )
        if not item.file_id:
            raise UserError("an UploadedFile for Gemini needs a non-empty file_id (the file's URI)")
        data: dict[str, Any] = {"fileUri": item.file_id}
        if item.media_type:
            data["mimeType"] = _media_type(item.media_type)
        return self._with_metadata(
            {"fileData": data},
            item.vendor_metadata,
            video=bool(item.media_type and item.media_type.startswith("video/")),
        )

    @staticmethod
    def _with_metadata(
        part: dict[str, Any], metadata: dict[str, Any] | None, *, video: bool
    ) -> dict[str, Any]:
        if not metadata:
            return part
        if video:
            # PydanticAI's convention: a video's vendor_metadata is Gemini's videoMetadata.
            part["videoMetadata"] = dict(metadata)
            return part
        unknown = sorted(k for k in metadata if k not in ("media_resolution", "mediaResolution"))
        if unknown:
            raise UserError(
                f"unknown Gemini vendor_metadata key(s) {', '.join(unknown)}; only media_resolution is "
                "read for non-video content"
            )
        resolution = metadata.get("media_resolution", metadata.get("mediaResolution"))
        part["mediaResolution"] = resolution if isinstance(resolution, dict) else {"level": resolution}
        return part

    def _tool_return(self, part: ToolReturnPart) -> list[dict[str, Any]]:
        content = part.content
        items: list[Any] = content if isinstance(content, list) else [content]  # pyright: ignore[reportUnknownVariableType]
        media = [
            i
            for i in items
            if isinstance(i, BinaryContent | ImageUrl | AudioUrl | VideoUrl | DocumentUrl | UploadedFile)
        ]
        extra: list[dict[str, Any]] = []
        if media:
            # Media cannot sit inside functionResponse on every model: it follows the response as
            # ordinary parts, and the response says where to look.
            rest = [i for i in items if i not in media]
            for item in media:
                encoded = self._user_item(item)
                if encoded is not None:
                    extra.append(encoded)
            content = rest[0] if len(rest) == 1 else rest
            if not rest:
                content = f"see the {len(media)} file(s) after this result"
        try:
            value = msgspec.to_builtins(content, str_keys=True)
        except (TypeError, ValueError) as exc:
            raise UserError(f"the result of tool {part.tool_name!r} is not JSON-encodable: {exc}") from None
        if part.outcome != "success" and isinstance(value, str):
            response: dict[str, Any] = {"error": value}
        elif isinstance(value, dict):
            response = value  # pyright: ignore[reportUnknownVariableType]
        else:
            response = {"return_value": value}
        result = {"functionResponse": {"name": part.tool_name, "id": part.tool_call_id, "response": response}}
        return [result, *extra]

    def _response(self, message: ModelResponse) -> None:
        replay = replayable_to(message, self.options.provider_name, self.options.model_name)
        parts: list[dict[str, Any]] = []
        for part in message.parts:
            signature = _signature(part) if replay else None
            encoded = self._response_part(part, replay, signature)
            if encoded is None:
                continue
            if signature:
                encoded["thoughtSignature"] = signature
            parts.append(encoded)
        if self.traits.replays_function_signatures:
            calls = [p for p in parts if "functionCall" in p]
            if calls and "thoughtSignature" not in calls[0]:
                calls[0]["thoughtSignature"] = DUMMY_THOUGHT_SIGNATURE
        if not parts:
            # Gemini rejects a model turn without parts; an empty answer is an empty text part.
            parts = [{"text": ""}]
        self._append("model", parts)

    def _response_part(
        self, part: ModelResponsePart, replay: bool, signature: str | None
    ) -> dict[str, Any] | None:
        """The Gemini part of one response part (`None`: nothing is sent for it); `replay`: the
        response may be replayed to this model as it was produced."""
        match part:
            case TextPart():
                return {"text": part.content}
            case ThinkingPart():
                # Reasoning is sent back only to the model that produced it (it is not portable).
                if replay and part.content:
                    return {"text": part.content, "thought": True}
                return {"text": ""} if replay and signature else None
            case ToolCallPart():
                call: dict[str, Any] = {"name": part.tool_name, "args": replay_args(part.args)}
                if part.tool_call_id:
                    call["id"] = part.tool_call_id
                return {"functionCall": call}
            case NativeToolCallPart() | NativeToolReturnPart():
                if replay and part.provider_name in (None, self.options.provider_name):
                    return _native_part(part)
                return None
            case FilePart():
                data: dict[str, Any] = {"mimeType": part.content.media_type, "data": part.content.base64}
                encoded: dict[str, Any] = {"inlineData": data}
                if replay and (part.provider_details or {}).get("thought") is True:
                    encoded["thought"] = True
                return encoded
            case SpeechPart():
                if part.transcript:
                    return {"text": part.transcript}
                if part.audio is not None:
                    raise self._refuse(
                        "speech",
                        UNTRANSCRIBED_SPEECH,
                    )
                return None
            case CompactionPart():
                # Gemini has no compaction of its own: a readable summary is sent as model text.
                return {"text": part.content} if part.content else None
            case _:
                assert_never(part)

    # -- tools ------------------------------------------------------------------------------------

    def _tools(self) -> tuple[list[dict[str, Any]], bool]:
        tools: list[dict[str, Any]] = []
        seen_wire: set[str] = set()
        for native in self.call.native_tools:
            wire = _NATIVE_WIRE.get(native.kind)
            if wire is None:
                raise self._unsupported(
                    f"the native tool {native.kind!r}",
                    "Gemini offers web_search, url_context, code_execution and file_search",
                )
            if wire in seen_wire:
                raise UserError(
                    f"{native.kind!r} and another native tool both map to Gemini's {wire}; enable it once"
                )
            seen_wire.add(wire)
            options = dict(native.options or {})
            if wire == "fileSearch" and not (
                options.get("fileSearchStoreNames") or options.get("file_search_store_names")
            ):
                raise UserError("the file_search native tool needs options={'fileSearchStoreNames': [...]}")
            tools.append({wire: options})
        declarations = [self._declaration(tool) for tool in self.call.all_tools]
        names = [d["name"] for d in declarations]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise UserError(f"tool name(s) {', '.join(duplicates)} are declared more than once")
        if declarations:
            tools.append({"functionDeclarations": declarations})
        return tools, bool(declarations)

    def _declaration(self, tool: ToolDefinition) -> dict[str, Any]:
        if not _FUNCTION_NAME.fullmatch(tool.name):
            raise UserError(
                f"Gemini function names must start with a letter or underscore and contain only letters, "
                f"digits, '_', '.', ':' and '-' (at most 128 characters); {tool.name!r} does not"
            )
        declaration: dict[str, Any] = {"name": tool.name}
        if tool.description:
            declaration["description"] = tool.description
        schema = tool.parameters_json_schema
        if self.dialect == "json_schema":
            declaration["parametersJsonSchema"] = to_json_schema(schema)
        else:
            converted = to_openapi_schema(schema)
            # An object without properties is rejected by the OpenAPI dialect: no parameters at all.
            if converted.get("properties") or converted.get("type") not in (None, "OBJECT"):
                declaration["parameters"] = converted
        return declaration

    def _tool_config(self, has_functions: bool) -> dict[str, Any]:
        call = self.call
        settings = call.settings
        choice = settings.tool_choice
        if settings.parallel_tool_calls is False:
            raise self._unsupported(
                "parallel_tool_calls=False", "Gemini has no switch that limits a response to one call"
            )
        config: dict[str, Any] = {}
        function_config: dict[str, Any] | None = None
        if not has_functions:
            if choice not in (None, "auto", "none"):
                raise UserError(f"tool_choice={choice!r} needs at least one function tool")
        elif choice == "none":
            if not call.allow_text_output:
                raise UserError("tool_choice='none' conflicts with output that must come from an output tool")
            function_config = {"mode": "NONE"}
        elif choice == "required":
            function_config = {"mode": "ANY"}
        elif isinstance(choice, list):
            known = {t.name for t in call.all_tools}
            unknown = [n for n in choice if n not in known]
            if unknown:
                raise UserError(f"tool_choice names unknown tool(s): {', '.join(unknown)}")
            allowed = list(choice) + [t.name for t in call.output_tools if t.name not in choice]
            function_config = {"mode": "ANY", "allowedFunctionNames": allowed}
        elif not call.allow_text_output:
            function_config = {"mode": "ANY", "allowedFunctionNames": [t.name for t in call.all_tools]}
        if function_config is not None:
            config["functionCallingConfig"] = function_config
        # Makes search, URL-context and file-search invocations visible as toolCall/toolResponse
        # parts; code execution is always visible (executableCode), so it alone does not ask for it.
        if (
            any(native.kind != "code_execution" for native in call.native_tools)
            and self.options.server_side_tool_invocations
            and self.traits.server_side_tool_invocations
        ):
            config["includeServerSideToolInvocations"] = True
        return config

    # -- generation config ------------------------------------------------------------------------

    def _generation_config(self, has_functions: bool) -> dict[str, Any]:
        settings = self.call.settings
        config: dict[str, Any] = {}
        for name, wire in (
            ("max_tokens", "maxOutputTokens"),
            ("temperature", "temperature"),
            ("top_p", "topP"),
            ("top_k", "topK"),
            ("seed", "seed"),
            ("stop_sequences", "stopSequences"),
            ("presence_penalty", "presencePenalty"),
            ("frequency_penalty", "frequencyPenalty"),
            ("logprobs", "responseLogprobs"),
            ("top_logprobs", "logprobs"),
        ):
            value = getattr(settings, name)
            if value is not None:
                config[wire] = value
        thinking = self._thinking_config()
        if thinking:
            config["thinkingConfig"] = thinking
        output = self.call.output
        if isinstance(output, JsonObjectFormat | JsonSchemaFormat):
            if has_functions and not self.traits.json_output_with_tools:
                raise self._unsupported(
                    "function tools together with JSON output",
                    "this Gemini family cannot combine them; use tool output mode or a Gemini 3 model",
                )
            config["responseMimeType"] = "application/json"
        if isinstance(output, JsonSchemaFormat):
            schema = dict(output.schema)
            if output.description and "description" not in schema:
                schema["description"] = output.description
            if self.dialect == "json_schema":
                schema.setdefault("title", output.name)
                config["responseJsonSchema"] = to_json_schema(schema)
            else:
                config["responseSchema"] = to_openapi_schema(schema)
        return config

    def _thinking_config(self) -> dict[str, Any]:
        settings = self.call.settings
        traits = self.traits
        effort = settings.reasoning_effort
        budget = settings.thinking_budget_tokens
        if traits.thinking_style == "none":
            if budget is not None:
                raise self._unsupported("thinking_budget_tokens", "this Gemini family does not think")
            return {}
        config: dict[str, Any] = {}
        if settings.thinking is True:
            config["includeThoughts"] = True
        if effort is not None and budget is not None:
            raise UserError("set either reasoning_effort or thinking_budget_tokens for Gemini, not both")
        if settings.thinking is False:
            if effort not in (None, "none") or (budget not in (None, 0)):
                raise UserError(
                    "thinking=False conflicts with a reasoning effort or a non-zero thinking budget"
                )
            if traits.thinking_can_be_disabled:
                config["thinkingBudget"] = 0
            else:
                raise self._unsupported("turning thinking off", "this Gemini model always reasons")
        if effort is not None:
            if traits.thinking_style == "budget":
                mapped = traits.effort_budgets.get(effort)
                if mapped is None:
                    raise self._unsupported(
                        f"reasoning_effort={effort!r}", "see the model profile's reasoning_efforts"
                    )
                if mapped == 0 and settings.thinking:
                    raise UserError("reasoning_effort='none' conflicts with thinking=True")
                config["thinkingBudget"] = mapped
            else:
                config["thinkingLevel"] = effort
        if budget is not None:
            self._check_budget(budget)
            config["thinkingBudget"] = budget
        return config

    def _check_budget(self, budget: int) -> None:
        traits = self.traits
        if budget == -1:
            return  # dynamic: the model decides
        if budget == 0:
            if not traits.thinking_can_be_disabled:
                raise self._unsupported("thinking_budget_tokens=0", "this Gemini model always reasons")
            return
        low = traits.min_thinking_budget
        high = traits.max_thinking_budget
        if budget < max(low, 1) or (high is not None and budget > high):
            span = f"{max(low, 1)}..{high}" if high is not None else f"at least {max(low, 1)}"
            raise UserError(
                f"thinking_budget_tokens={budget} is out of range for this Gemini model ({span}, 0 or -1)"
            )

    def _extra_body(self) -> dict[str, Any]:
        settings = self.call.settings
        extra = settings.extra_body_for(EXTRA_BODY_TAG, _OWNED_TOP)
        own = settings.extra_body_for(self.options.provider_name, _OWNED_TOP)
        return {**extra, **own}


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def _media_type(value: str) -> str:
    media_type = value.split(";", 1)[0].strip().lower()
    if not _MEDIA_TYPE.fullmatch(media_type):
        raise UserError(f"{value!r} is not a MIME type (type/subtype)")
    return media_type


def _signature(part: object) -> str | None:
    details: dict[str, Any] | None = getattr(part, "provider_details", None)
    value = (details or {}).get("thought_signature")
    if isinstance(value, str) and value:
        return value
    if isinstance(part, ThinkingPart) and part.signature:
        return part.signature
    return None


def _native_part(part: NativeToolCallPart | NativeToolReturnPart) -> dict[str, Any] | None:
    details = part.provider_details or {}
    kind = details.get("google_part")
    if isinstance(part, NativeToolCallPart):
        args = replay_args(part.args)
        if kind == "executableCode":
            code: dict[str, Any] = {
                "code": str(args.get("code", "")),
                "language": str(args.get("language") or "PYTHON"),
            }
            if part.id:
                code["id"] = part.id
            return {"executableCode": code}
        if kind == "toolCall":
            tool_call: dict[str, Any] = {"args": args}
            if part.id:
                tool_call["id"] = part.id
            if isinstance(details.get("tool_type"), str):
                tool_call["toolType"] = details["tool_type"]
            return {"toolCall": tool_call}
        return None  # synthesized from grounding metadata: no wire form
    content: Any = part.content
    if kind == "codeExecutionResult":
        result: dict[str, Any] = {}
        if isinstance(content, dict):
            for key in ("outcome", "output"):
                if content.get(key) is not None:  # pyright: ignore[reportUnknownMemberType]
                    result[key] = content[key]
        if isinstance(details.get("id"), str):
            result["id"] = details["id"]
        return {"codeExecutionResult": result}
    if kind == "toolResponse":
        response: dict[str, Any] = {}
        if isinstance(content, dict):
            response["response"] = content
        if isinstance(details.get("id"), str):
            response["id"] = details["id"]
        if isinstance(details.get("tool_type"), str):
            response["toolType"] = details["tool_type"]
        return {"toolResponse": response}
    return None
