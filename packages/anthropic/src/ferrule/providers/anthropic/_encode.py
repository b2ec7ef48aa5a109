"""Encode a [`ModelCall`][ferrule.core.model.ModelCall] into a Messages API request body.

Pure functions: no I/O, no clock. Everything the API would reject and that ferrule can see in
advance (a thinking budget above `max_tokens`, a forced tool choice with a thinking budget, media
the API cannot take, a file uploaded to another provider) raises `UserError` here, before a paid
request is sent; a part or content item the API has no way to take raises its subclass
`UnsupportedContentError`. Every part kind is matched exhaustively: each is encoded, refused, or not
sent for a reason docs/core.md gives ("What each provider is sent").
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import pairwise
from typing import Any
from typing import Final
from typing import assert_never
from typing import cast

import msgspec

from ferrule.core.codec import WireCache
from ferrule.core.codec import WireRequest
from ferrule.core.codec_parts import UNTRANSCRIBED_SPEECH
from ferrule.core.codec_parts import never_sent
from ferrule.core.errors import UnsupportedContentError
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
from ferrule.core.model import NativeTool
from ferrule.core.model import ToolDefinition

from ._schema import strict_schema
from .profiles import AnthropicProfile

__all__ = [
    "BETA_CODE_EXECUTION",
    "BETA_COMPACTION",
    "BETA_FILES_API",
    "BETA_INTERLEAVED_THINKING",
    "BETA_MCP_CLIENT",
    "BETA_WEB_FETCH",
    "DEFAULT_THINKING_BUDGET",
    "EFFORT_BUDGETS",
    "MAX_CACHE_POINTS",
    "MIN_THINKING_BUDGET",
    "OWNED_BODY_KEYS",
    "PROVIDER_NAME",
    "WIRE_NAME_DETAIL",
    "EncodedRequest",
    "encode_request",
]

PROVIDER_NAME: Final = "anthropic"
"""The provider name on responses, parts and uploaded files this package produces."""

WIRE_NAME_DETAIL: Final = "anthropic_tool_name"
"""`provider_details` key holding a server tool's wire name when it differs from the neutral one
(`bash_code_execution` for `code_execution`); the same key PydanticAI uses, so histories round-trip."""

BETA_FILES_API: Final = "files-api-2025-04-14"
"""Beta header for uploaded-file sources and the Files API."""
BETA_INTERLEAVED_THINKING: Final = "interleaved-thinking-2025-05-14"
"""Beta header that lets Claude 4 models think between tool calls."""
BETA_WEB_FETCH: Final = "web-fetch-2025-09-10"
"""Beta header of the `web_fetch_20250910` server tool."""
BETA_CODE_EXECUTION: Final = "code-execution-2025-08-25"
"""Beta header of the `code_execution_20250825` server tool."""
BETA_COMPACTION: Final = "compact-2026-01-12"
"""Beta header needed to replay server-side compaction blocks."""
BETA_MCP_CLIENT: Final = "mcp-client-2025-04-04"
"""Beta header of the MCP connector (`mcp_servers`, `mcp_tool_use` history)."""

MIN_THINKING_BUDGET: Final = 1024
"""The smallest `budget_tokens` the API accepts."""
DEFAULT_THINKING_BUDGET: Final = 4096
"""`budget_tokens` used when thinking is turned on without a budget or effort."""
EFFORT_BUDGETS: Final = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}
"""`reasoning_effort` → `budget_tokens` for families that take a budget rather than an effort."""
MAX_CACHE_POINTS: Final = 4
"""Cache breakpoints the API accepts per request; earlier cache points beyond this are dropped."""

OWNED_BODY_KEYS: Final = frozenset(
    {
        "model",
        "messages",
        "system",
        "max_tokens",
        "stream",
        "tools",
        "tool_choice",
        "thinking",
        "output_config",
        "temperature",
        "top_p",
        "top_k",
        "stop_sequences",
        "service_tier",
    }
)
"""Body keys the portable encoder owns; `ProviderExtraBody(provider="anthropic")` cannot set them."""

_IMAGE_TYPES: Final = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
_THINKING_BLOCKS: Final = frozenset({"thinking", "redacted_thinking"})
_NATIVE_CALL_BLOCKS: Final = frozenset({"server_tool_use", "mcp_tool_use"})

# Neutral native tool name → the `server_tool_use` name, when they differ by default.
_WIRE_CALL_NAME: Final = {"tool_search": "tool_search_tool_bm25"}
# Neutral native tool name → the result block type.
_RESULT_TYPE: Final = {
    "web_search": "web_search_tool_result",
    "web_fetch": "web_fetch_tool_result",
    "code_execution": "code_execution_tool_result",
    "advisor": "advisor_tool_result",
    "tool_search": "tool_search_tool_result",
}
_WEB_SEARCH_OPTIONS: Final = frozenset(
    {"max_uses", "allowed_domains", "blocked_domains", "user_location", "cache_control"}
)
_WEB_FETCH_OPTIONS: Final = frozenset(
    {"max_uses", "allowed_domains", "blocked_domains", "citations", "max_content_tokens", "cache_control"}
)
_DOCUMENT_METADATA: Final = frozenset({"title", "context", "citations"})


class EncodedRequest(WireRequest, frozen=True, kw_only=True):
    """A Messages API request ready to send: its JSON body and the beta features it needs.

    `headers` holds the `anthropic-beta` header of `betas`, when there are any.
    """

    betas: frozenset[str] = frozenset()
    """Values for the `anthropic-beta` header, needed by features this request uses."""
    max_tokens: int
    """The `max_tokens` the body asks for (the model streams instead of buffering when it is large)."""


def encode_request(
    call: ModelCall,
    *,
    model_name: str,
    profile: AnthropicProfile,
    stream: bool = False,
    wire_cache: WireCache | None = None,
) -> EncodedRequest:
    """Encode `call` for `model_name` as a Messages API request body.

    With `wire_cache`, each history message's turn is reused from the cache (the same bytes once
    encoded, less work on a long history) wherever the body is provably the uncached one.
    Raises `UserError` for anything the API would reject that is visible before sending.
    """
    encoder = _Encoder(call, model_name, profile, wire_cache)
    body = encoder.build(stream)
    betas = frozenset(encoder.betas)
    return EncodedRequest(
        body=msgspec.json.encode(body),
        headers={"anthropic-beta": ",".join(sorted(betas))} if betas else {},
        betas=betas,
        max_tokens=body["max_tokens"],
    )


class _Extra(msgspec.Struct, array_like=True, gc=False):
    """What a message adds to a request besides its turn, when it adds anything."""

    alone: bool
    """Its turn does not depend on other messages (no cache point marks an earlier message's block)."""
    marks: int
    """Cache breakpoints in its turn."""
    compaction: bool
    """It replays a compaction block."""
    system: list[str]
    """Its system prompt parts."""
    betas: list[str]
    """The beta features it needs."""
    unanswered: bool
    """It has a server-tool or MCP call whose result it does not hold (the uncached encoder may drop it)."""


class _Turn(msgspec.Struct, array_like=True, gc=False, omit_defaults=True):
    """One history message encoded on its own (a `WireCache` fragment); not tracked by the GC, since
    ten thousand of them are decoded on every request of a long history."""

    role: str
    """The role of its turn; `""`: it sends no content block."""
    turn: msgspec.Raw
    """Its turn's JSON, as the uncached encoder writes it when the turn stands alone."""
    extra: _Extra | None = None
    """Anything else it adds; `None` for a plain turn."""


_TURN_ENCODER: Final = msgspec.json.Encoder()
_TURNS_DECODER: Final = msgspec.json.Decoder(list[_Turn])


class _Encoder:
    def __init__(
        self,
        call: ModelCall,
        model_name: str,
        profile: AnthropicProfile,
        wire_cache: WireCache | None = None,
    ) -> None:
        self.call = call
        self.model_name = model_name
        self.profile = profile
        self.wire_cache = wire_cache
        self.betas: set[str] = set()
        self.messages: list[dict[str, Any]] = []
        self.encoded_messages: msgspec.Raw | None = None
        # Set while one message is encoded on its own (a cache fragment): a cache point that would
        # mark an earlier message's block is noted, not applied.
        self.isolated = False
        self.reaches_back = False
        self.system: list[str] = []
        self.cache_marked: list[dict[str, Any]] = []
        self.tool_names = {t.name for t in call.all_tools}
        self.replayed_compaction = False

    # -- the body ---------------------------------------------------------------------------------

    def build(self, stream: bool) -> dict[str, Any]:
        call = self.call
        settings = call.settings
        profile = self.profile
        self._encode_messages()
        budget, effort, adaptive = self._thinking()
        max_tokens = self._max_tokens(budget)

        messages = self.messages if self.encoded_messages is None else self.encoded_messages
        body: dict[str, Any] = {"model": self.model_name, "max_tokens": max_tokens, "messages": messages}
        system = "\n\n".join(text for text in self.system if text)
        if system:
            body["system"] = system
        if budget is not None:
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
            if profile.interleaved_thinking_beta and call.all_tools:
                self.betas.add(BETA_INTERLEAVED_THINKING)
        elif adaptive:
            thinking: dict[str, Any] = {"type": "adaptive"}
            if profile.summarize_thinking or settings.reasoning_summary is not None:
                thinking["display"] = "summarized"
            body["thinking"] = thinking
        thinking_on = budget is not None or adaptive
        self._sampling(body, thinking_on)
        if settings.stop_sequences:
            body["stop_sequences"] = list(settings.stop_sequences)
        if settings.service_tier is not None:
            body["service_tier"] = settings.service_tier

        output_config: dict[str, Any] = {}
        if effort is not None:
            output_config["effort"] = effort
        if isinstance(call.output, JsonSchemaFormat):
            output_config["format"] = {"type": "json_schema", "schema": strict_schema(call.output.schema)}
        elif isinstance(call.output, JsonObjectFormat):
            raise UserError(
                "Anthropic has no JSON-object output mode; use native JSON-schema, tool or prompted output"
            )
        if output_config:
            body["output_config"] = output_config

        tools, tool_choice = self._tools(budget is not None)
        if tools:
            body["tools"] = tools
            if tool_choice is not None:
                body["tool_choice"] = tool_choice
        extra = settings.extra_body_for(PROVIDER_NAME, OWNED_BODY_KEYS)
        if extra:
            body.update(extra)
            if "mcp_servers" in extra:
                self.betas.add(BETA_MCP_CLIENT)
        if self.replayed_compaction:
            self.betas.add(BETA_COMPACTION)
            body.setdefault("context_management", {"edits": [{"type": "compact_20260112"}]})
        body["stream"] = stream
        return body

    def _max_tokens(self, budget: int | None) -> int:
        settings = self.call.settings
        model = self.profile.model
        limit = model.max_output_tokens
        if settings.max_tokens is not None:
            max_tokens = settings.max_tokens
            if max_tokens < 1:
                raise UserError(f"max_tokens must be at least 1, not {max_tokens}")
            if budget is not None and max_tokens <= budget:
                raise UserError(
                    f"max_tokens={max_tokens} must be greater than the thinking budget of {budget} tokens; "
                    "raise max_tokens or lower thinking_budget_tokens / reasoning_effort"
                )
        else:
            # The API requires max_tokens; the family default leaves room for a thinking budget.
            max_tokens = model.default_max_tokens or 4096
            if budget is not None and max_tokens <= budget:
                max_tokens = budget + max_tokens
                if limit is not None:
                    max_tokens = min(max_tokens, limit)
                if max_tokens <= budget:
                    raise UserError(
                        f"the thinking budget of {budget} tokens leaves no room for an answer within "
                        f"{self.model_name}'s {limit} output tokens; lower thinking_budget_tokens"
                    )
        if limit is not None and max_tokens > limit:
            raise UserError(
                f"max_tokens={max_tokens} is above the {limit} output tokens {self.model_name} can produce"
            )
        return max_tokens

    def _thinking(self) -> tuple[int | None, str | None, bool]:
        """(budget_tokens or None, output_config.effort or None, adaptive thinking on)."""
        settings = self.call.settings
        style = self.profile.thinking
        effort = settings.reasoning_effort
        budget = settings.thinking_budget_tokens
        if settings.thinking is False:
            if budget is not None:
                raise UserError("thinking=False conflicts with thinking_budget_tokens; set only one")
            if effort is not None and not self.profile.effort:
                raise UserError(
                    f"reasoning_effort={effort!r} turns thinking on for {self.model_name}, "
                    "which conflicts with thinking=False"
                )
            return None, effort, False
        if style == "none":
            return None, None, False
        if budget is not None:
            if style == "adaptive":
                raise UserError(
                    f"{self.model_name} thinks adaptively and rejects thinking_budget_tokens; "
                    "use reasoning_effort instead"
                )
            if budget < MIN_THINKING_BUDGET:
                raise UserError(
                    f"thinking_budget_tokens={budget} is below the API's minimum of {MIN_THINKING_BUDGET}"
                )
            return budget, effort if self.profile.effort else None, False
        if self.profile.effort:
            if settings.thinking:
                if style == "budget":
                    return DEFAULT_THINKING_BUDGET, effort, False
                return None, effort, True
            return None, effort, False
        # A budget-only family: the effort chooses the budget.
        if effort is not None:
            mapped = EFFORT_BUDGETS.get(effort)
            if mapped is None:
                allowed = ", ".join(EFFORT_BUDGETS)
                raise UserError(f"{self.model_name} takes reasoning_effort {allowed}, not {effort!r}")
            return mapped, None, False
        if settings.thinking:
            return DEFAULT_THINKING_BUDGET, None, False
        return None, None, False

    def _sampling(self, body: dict[str, Any], thinking_on: bool) -> None:
        settings = self.call.settings
        if thinking_on:
            # Extended thinking fixes temperature at 1, disallows top_k and limits top_p.
            if settings.temperature is not None and settings.temperature != 1:
                raise UserError(
                    "Anthropic thinking requires temperature 1 (or unset); turn thinking off to change it"
                )
            if settings.top_k is not None:
                raise UserError("Anthropic thinking does not allow top_k; turn thinking off to use it")
            if settings.top_p is not None and not 0.95 <= settings.top_p <= 1:
                raise UserError("Anthropic thinking requires top_p between 0.95 and 1 (or unset)")
        if settings.temperature is not None:
            body["temperature"] = settings.temperature
        if settings.top_p is not None:
            body["top_p"] = settings.top_p
        if settings.top_k is not None:
            body["top_k"] = settings.top_k

    # -- tools ------------------------------------------------------------------------------------

    def _tools(self, budget_thinking: bool) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        call = self.call
        settings = call.settings
        definitions = list(call.all_tools)
        choice = settings.tool_choice
        if choice is None and call.output_tools and not call.allow_text_output:
            choice = "required"
        forced = choice == "required" or isinstance(choice, list)
        if forced and budget_thinking:
            if settings.tool_choice is not None:
                raise UserError(
                    "Anthropic cannot force a tool call while thinking with a budget; "
                    "use tool_choice='auto', turn thinking off, or use native / prompted output"
                )
            choice = None  # the agent's own request for an output tool; the agent validates the answer
        if forced and not self.profile.forced_tool_choice:
            if settings.tool_choice is not None:
                raise UserError(f"{self.model_name} does not accept a forced tool_choice; use 'auto'")
            choice = None

        tool_choice: dict[str, Any] | None = {"type": "auto"}
        if choice == "none":
            tool_choice = {"type": "none"}
        elif choice == "required":
            tool_choice = {"type": "any"}
        elif isinstance(choice, list):
            names = list(dict.fromkeys(choice))
            unknown = [n for n in names if n not in self.tool_names]
            if unknown:
                raise UserError(f"tool_choice names tools that are not offered: {', '.join(unknown)}")
            if len(names) == 1:
                tool_choice = {"type": "tool", "name": names[0]}
            else:
                # The API cannot restrict the choice to a subset, so only the subset is sent.
                definitions = [d for d in definitions if d.name in names]
                tool_choice = {"type": "any"}
        if settings.parallel_tool_calls is not None and tool_choice["type"] != "none":
            tool_choice["disable_parallel_tool_use"] = not settings.parallel_tool_calls

        tools = [self._tool(d) for d in definitions]
        tools.extend(self._native_tool(n) for n in call.native_tools)
        if not definitions and not call.native_tools:
            return [], None
        return tools, tool_choice

    def _tool(self, tool: ToolDefinition) -> dict[str, Any]:
        entry: dict[str, Any] = {"name": tool.name}
        if tool.description is not None:
            entry["description"] = tool.description
        schema = tool.parameters_json_schema
        if tool.strict and self.profile.model.supports_json_schema_output:
            entry["input_schema"] = strict_schema(schema)
            entry["strict"] = True
        else:
            entry["input_schema"] = schema
        if tool.defer_loading and self.profile.model.native_deferred_tools:
            entry["defer_loading"] = True
        return entry

    def _native_tool(self, tool: NativeTool) -> dict[str, Any]:
        profile = self.profile
        options = dict(tool.options or {})
        if tool.kind == "web_search" and profile.web_search_tool:
            allowed = _WEB_SEARCH_OPTIONS
            entry: dict[str, Any] = {"type": profile.web_search_tool, "name": "web_search"}
        elif tool.kind == "web_fetch" and profile.web_fetch_tool:
            allowed = _WEB_FETCH_OPTIONS
            entry = {"type": profile.web_fetch_tool, "name": "web_fetch"}
            if profile.web_fetch_tool == "web_fetch_20250910":
                self.betas.add(BETA_WEB_FETCH)
        elif tool.kind == "code_execution" and profile.code_execution_tool:
            allowed = frozenset({"cache_control"})
            entry = {"type": profile.code_execution_tool, "name": "code_execution"}
            if profile.code_execution_tool == "code_execution_20250825":
                self.betas.add(BETA_CODE_EXECUTION)
        else:
            raise UserError(f"{self.model_name} has no Anthropic server tool for {tool.kind!r}")
        unknown = sorted(set(options) - allowed)
        if unknown:
            raise UserError(
                f"unknown option(s) {', '.join(unknown)} for the Anthropic {tool.kind} tool; "
                f"supported: {', '.join(sorted(allowed))}"
            )
        entry.update({k: v for k, v in options.items() if v is not None})
        return entry

    # -- messages ---------------------------------------------------------------------------------

    def _encode_messages(self) -> None:
        cache = self.wire_cache
        if cache is None or not self._reuse_turns(cache):
            for message in self.call.messages:
                self._message(message)
            _drop_unpaired_native_calls(self.messages)
            self.messages = _merge_roles(self.messages)
            for message in self.messages:
                _results_first(message)
            # The API takes at most four breakpoints; the latest ones cache the longest prefix.
            for block in self.cache_marked[:-MAX_CACHE_POINTS]:
                block.pop("cache_control", None)
        if self.call.instructions:
            self.system.append(self.call.instructions)

    def _message(self, message: Message) -> None:
        if isinstance(message, ModelRequest):
            self._request(message)
        else:
            self._response(message)

    def _reuse_turns(self, cache: WireCache) -> bool:
        """Encode the history from `cache`'s turns; `False` (nothing set) where the body could differ.

        Each message is cached as its own turn. Joined, those are the uncached `messages` exactly when
        no turn depends on another: roles alternate (nothing is merged), no cache point reaches into
        an earlier message, at most `MAX_CACHE_POINTS` breakpoints (none is dropped) and every
        server-tool call has its result (none is dropped). Otherwise, and on any error (the uncached
        encoder raises its own), the caller encodes the history in full.
        """
        unit = _Encoder(self.call, self.model_name, self.profile)
        unit.isolated = True
        profile = self.profile
        tools = frozenset(self.tool_names) if profile.model.native_deferred_tools else None
        try:
            joined = cache.encode(self.call.messages, (self.model_name, profile, tools), unit.turn_fragment)
        except Exception:
            return False
        turns = _TURNS_DECODER.decode(b"[" + joined + b"]")
        sent = [t for t in turns if t.role]
        if any([a.role == b.role for a, b in pairwise(sent)]):
            return False
        extras = [t.extra for t in turns if t.extra is not None]
        if (
            not all([e.alone and not e.unanswered for e in extras])
            or sum([e.marks for e in extras]) > MAX_CACHE_POINTS
        ):
            return False
        self.system = [text for e in extras for text in e.system]
        self.betas.update(*[e.betas for e in extras])
        self.replayed_compaction = any([e.compaction for e in extras])
        self.encoded_messages = msgspec.Raw(b"[" + b",".join([t.turn for t in sent]) + b"]")
        return True

    def turn_fragment(self, message: Message) -> bytes:
        """`message` encoded on its own, as a `_Turn` (this encoder is `isolated`)."""
        self.messages, self.system, self.betas, self.cache_marked = [], [], set(), []
        self.replayed_compaction = self.reaches_back = False
        self._message(message)
        alone = not self.reaches_back
        role, unanswered, turn = "", False, b"null"
        if self.messages:
            (encoded,) = self.messages
            _results_first(encoded)
            role = encoded["role"]
            blocks: list[dict[str, Any]] = encoded["content"]
            calls = [b.get("id") for b in blocks if b["type"] in _NATIVE_CALL_BLOCKS]
            if calls:
                # A call answered in another message is left to the uncached encoder too.
                answered = [b.get("tool_use_id") for b in blocks if "tool_use_id" in b]
                unanswered = any(c not in answered for c in calls)
            turn = _TURN_ENCODER.encode(encoded)
        marks = len(self.cache_marked)
        extra = None
        if not alone or marks or unanswered or self.replayed_compaction or self.system or self.betas:
            extra = _Extra(
                alone=alone,
                marks=marks,
                compaction=self.replayed_compaction,
                system=self.system,
                betas=sorted(self.betas),
                unanswered=unanswered,
            )
        return _TURN_ENCODER.encode(_Turn(role=role, turn=msgspec.Raw(turn), extra=extra))

    def _append(self, role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if self.messages and self.messages[-1]["role"] == role:
            self.messages[-1]["content"].extend(blocks)
        else:
            self.messages.append({"role": role, "content": blocks})

    def _mark_cache(self, blocks: list[dict[str, Any]], point: CachePoint) -> None:
        candidates = [*(b for m in self.messages for b in m["content"]), *blocks]
        for block in reversed(candidates):
            if block["type"] in _THINKING_BLOCKS or (block["type"] == "text" and not block.get("text")):
                continue
            block["cache_control"] = {"type": "ephemeral", "ttl": point.ttl}
            self.cache_marked = [b for b in self.cache_marked if b is not block]
            self.cache_marked.append(block)
            return
        if self.isolated:
            # Alone, a message has no earlier block to mark: the whole history is encoded instead.
            self.reaches_back = True
            return
        raise UserError("a CachePoint must follow some content it can mark as the end of the cached prefix")

    def _refuse(self, kind: str, reason: str) -> UnsupportedContentError:
        return UnsupportedContentError(kind, provider=PROVIDER_NAME, model=self.model_name, reason=reason)

    def _request(self, message: ModelRequest) -> None:
        blocks: list[dict[str, Any]] = []
        for part in message.parts:
            match part:
                case SystemPromptPart():
                    # The Messages API has one system prompt: every system part joins it, in order.
                    self.system.append(part.content)
                case UserPromptPart():
                    for item in part.iter_content():
                        if isinstance(item, CachePoint):
                            self._mark_cache(blocks, item)
                            continue
                        block = self._user_item(item)
                        if block is not None:
                            blocks.append(block)
                case ToolReturnPart():
                    blocks.append(self._tool_result(part))
                case RetryPromptPart():
                    if part.tool_name is None:
                        blocks.append({"type": "text", "text": part.model_response()})
                    else:
                        blocks.append(
                            {
                                "type": "tool_result",
                                "tool_use_id": part.tool_call_id,
                                "content": part.model_response(),
                                "is_error": True,
                            }
                        )
                case RetryFeedbackPart():
                    blocks.append({"type": "text", "text": part.model_response()})
                case SpeechPart():
                    if part.transcript:
                        blocks.append({"type": "text", "text": part.transcript})
                    elif part.audio is not None:
                        raise self._refuse(
                            "speech",
                            "the user's speech has no transcript, and Anthropic models take no audio input; "
                            "transcribe it into SpeechPart.transcript",
                        )
                case CompactionPart():
                    # An application-written summary of earlier history: user text.
                    if part.content:
                        blocks.append({"type": "text", "text": part.content})
                case _:
                    never_sent(part)  # records of how the call's configuration changed; the call carries it
        self._append("user", blocks)

    def _user_item(self, item: UserContent) -> dict[str, Any] | None:
        match item:
            case str():
                return {"type": "text", "text": item} if item else None
            case TextContent():  # StructuredContent too: its rendered text
                return {"type": "text", "text": item.content} if item.content else None
            case BinaryContent():
                return self._binary(item)
            case ImageUrl():
                self._no_download(item.force_download, "image-url", item.url)
                return {"type": "image", "source": {"type": "url", "url": item.url}}
            case DocumentUrl():
                self._no_download(item.force_download, "document-url", item.url)
                media_type = item.resolved_media_type
                if media_type != "application/pdf":
                    raise self._refuse(
                        "document-url",
                        f"Anthropic reads documents by URL only as PDF, and {item.url!r} is {media_type}; "
                        "download it and pass it as BinaryContent",
                    )
                return _with_metadata(
                    {"type": "document", "source": {"type": "url", "url": item.url}}, item.vendor_metadata
                )
            case UploadedFile():
                return self._uploaded(item)
            case AudioUrl():
                raise self._refuse("audio-url", "Anthropic models do not accept AudioUrl input")
            case VideoUrl():
                raise self._refuse("video-url", "Anthropic models do not accept VideoUrl input")
            case CachePoint():
                # Only reachable from tool results (prompts mark the cache in `_request`): nothing to send.
                return None
            case _:
                assert_never(item)

    def _no_download(self, force: object, kind: str, url: str) -> None:
        if force:
            raise self._refuse(
                kind,
                f"force_download is not done by the Anthropic codec: download the file at {url!r} "
                "through the agent's URL policy and pass BinaryContent",
            )

    def _binary(self, item: BinaryContent) -> dict[str, Any]:
        media_type = item.media_type.split(";", 1)[0].strip().lower()
        if media_type in _IMAGE_TYPES:
            return {
                "type": "image",
                "source": {"type": "base64", "media_type": media_type, "data": item.base64},
            }
        if media_type == "application/pdf":
            block = {
                "type": "document",
                "source": {"type": "base64", "media_type": media_type, "data": item.base64},
            }
            return _with_metadata(block, item.vendor_metadata)
        if media_type.startswith("text/"):
            try:
                text = item.data.decode("utf-8")
            except UnicodeDecodeError:
                raise UserError(f"{media_type} content for Anthropic must be UTF-8 text") from None
            block = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": text}}
            return _with_metadata(block, item.vendor_metadata)
        if media_type.startswith("image/"):
            raise self._refuse(
                "binary", f"Anthropic accepts JPEG, PNG, GIF and WebP images, not {media_type}"
            )
        raise self._refuse(
            "binary", f"Anthropic does not accept {media_type} content; send PDF, plain text or an image"
        )

    def _uploaded(self, item: UploadedFile) -> dict[str, Any]:
        if item.provider_name != PROVIDER_NAME:
            raise UserError(
                f"file {item.file_id!r} was uploaded to {item.provider_name!r}, not to Anthropic; "
                "upload it with AnthropicProvider.upload_file"
            )
        if not item.file_id:
            raise UserError("an UploadedFile for Anthropic needs a non-empty file_id")
        self.betas.add(BETA_FILES_API)
        source = {"type": "file", "file_id": item.file_id}
        if item.media_type and item.media_type.startswith("image/"):
            return {"type": "image", "source": source}
        return _with_metadata({"type": "document", "source": source}, item.vendor_metadata)

    def _tool_result(self, part: ToolReturnPart) -> dict[str, Any]:
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": part.tool_call_id,
            "content": "",
            "is_error": part.outcome in ("failed", "denied"),
        }
        references = self._tool_references(part)
        if references:
            block["content"] = references
            return block
        content = part.content
        items: list[Any] = content if isinstance(content, list) else [content]  # pyright: ignore[reportUnknownVariableType]
        if any(_is_media(i) for i in items):
            blocks: list[dict[str, Any]] = []
            for item in items:
                if _is_media(item):
                    blocks.append(self._user_item(item) or {"type": "text", "text": ""})
                elif isinstance(item, str):
                    if item:
                        blocks.append({"type": "text", "text": item})
                else:
                    blocks.append({"type": "text", "text": msgspec.json.encode(item).decode()})
            block["content"] = [b for b in blocks if b.get("type") != "text" or b.get("text")]
        else:
            block["content"] = part.model_response_str()
        return block

    def _tool_references(self, part: ToolReturnPart) -> list[dict[str, Any]]:
        """A tool-search result as `tool_reference` blocks, which load deferred tools natively."""
        if part.tool_kind != "tool-search" or not self.profile.model.native_deferred_tools:
            return []
        names = [n for n in _tool_search_names(part.content) if n in self.tool_names]
        return [{"type": "tool_reference", "tool_name": n} for n in dict.fromkeys(names)]

    # -- responses --------------------------------------------------------------------------------

    def _response(self, message: ModelResponse) -> None:
        replay = replayable_to(message, PROVIDER_NAME)
        blocks: list[dict[str, Any]] = []
        for part in message.parts:
            block = self._response_block(part, replay and part.provider_name in (None, PROVIDER_NAME))
            if block is not None:
                blocks.append(block)
        if any(b["type"] == "mcp_tool_use" for b in blocks):
            self.betas.add(BETA_MCP_CLIENT)
        self._append("assistant", blocks)

    def _response_block(self, part: ModelResponsePart, own: bool) -> dict[str, Any] | None:
        """The content block of one response part (`None`: nothing is sent for it); `own`: the part
        may be replayed to this API as it was produced."""
        mine = own and part.provider_name == PROVIDER_NAME
        match part:
            case TextPart():
                return {"type": "text", "text": part.content} if part.content else None
            case ToolCallPart():
                block: dict[str, Any] = {
                    "type": "tool_use",
                    "id": part.tool_call_id,
                    "name": part.tool_name,
                    "input": replay_args(part.args),
                }
                caller = (part.provider_details or {}).get("caller") if own else None
                if isinstance(caller, dict):
                    block["caller"] = caller
                return block
            case ThinkingPart():
                # Reasoning from another provider is never sent: it is not signed for this API.
                return _thinking_block(part) if own else None
            case NativeToolCallPart():
                return _native_call_block(part) if mine else None
            case NativeToolReturnPart():
                return _native_result_block(part) if mine else None
            case CompactionPart():
                return (
                    self._compaction_block(part)
                    if mine
                    # Another provider's readable summary is portable text.
                    else ({"type": "text", "text": part.content} if part.content else None)
                )
            case SpeechPart():
                if part.transcript:
                    return {"type": "text", "text": part.transcript}
                if part.audio is not None:
                    raise self._refuse(
                        "speech",
                        UNTRANSCRIBED_SPEECH,
                    )
                return None
            case FilePart():
                return None  # generated files are not sent back to a model that cannot take them as output
            case _:
                assert_never(part)

    def _compaction_block(self, part: CompactionPart) -> dict[str, Any]:
        compaction: dict[str, Any] = {"type": "compaction", "content": part.content}
        encrypted = (part.provider_details or {}).get("encrypted_content")
        if isinstance(encrypted, str):
            compaction["encrypted_content"] = encrypted
        self.replayed_compaction = True
        return compaction


def _with_metadata(block: dict[str, Any], metadata: dict[str, Any] | None) -> dict[str, Any]:
    if metadata:
        block.update({k: v for k, v in metadata.items() if k in _DOCUMENT_METADATA})
    return block


def _is_media(item: object) -> bool:
    return isinstance(item, BinaryContent | ImageUrl | DocumentUrl | AudioUrl | VideoUrl | UploadedFile)


def _thinking_block(part: ThinkingPart) -> dict[str, Any] | None:
    details = part.provider_details or {}
    if details.get("type") == "redacted_thinking" and isinstance(details.get("data"), str):
        return {"type": "redacted_thinking", "data": details["data"]}
    if part.id == "redacted_thinking" and part.signature:
        # PydanticAI keeps redacted thinking as an empty part whose signature is the data.
        return {"type": "redacted_thinking", "data": part.signature}
    if part.signature:
        return {"type": "thinking", "thinking": part.content, "signature": part.signature}
    # Unsigned thinking (e.g. from an interrupted stream) would be rejected; it is dropped.
    return None


def _native_call_block(part: NativeToolCallPart) -> dict[str, Any]:
    details = part.provider_details or {}
    args = replay_args(part.args)
    if part.tool_name.startswith("mcp_server:"):
        tool_args = args.get("tool_args")
        return {
            "type": "mcp_tool_use",
            "id": part.tool_call_id,
            "name": str(args.get("tool_name", "")),
            "server_name": part.tool_name.split(":", 1)[1],
            "input": tool_args if isinstance(tool_args, dict) else {},
        }
    name = details.get(WIRE_NAME_DETAIL)
    if not isinstance(name, str):
        name = _WIRE_CALL_NAME.get(part.tool_name, part.tool_name)
        if part.tool_name == "tool_search" and details.get("strategy") == "regex":
            name = "tool_search_tool_regex"
    block: dict[str, Any] = {"type": "server_tool_use", "id": part.tool_call_id, "name": name, "input": args}
    caller = details.get("caller")
    if isinstance(caller, dict):
        block["caller"] = caller
    return block


def _native_result_block(part: NativeToolReturnPart) -> dict[str, Any] | None:
    details = part.provider_details or {}
    if part.tool_name.startswith("mcp_server"):
        content: Any = part.content
        if not isinstance(content, dict):
            return None
        return {"type": "mcp_tool_result", "tool_use_id": part.tool_call_id, **content}
    wire = details.get(WIRE_NAME_DETAIL)
    block_type = f"{wire}_tool_result" if isinstance(wire, str) else None
    if block_type is None:
        block_type = _RESULT_TYPE.get(part.tool_name)
        result: Any = part.content
        if part.tool_name == "code_execution" and isinstance(result, dict):
            inner = cast("dict[str, Any]", result).get("type")
            for prefix in ("bash_code_execution", "text_editor_code_execution"):
                if isinstance(inner, str) and inner.startswith(prefix):
                    block_type = f"{prefix}_tool_result"
    if block_type is None:
        return None
    block: dict[str, Any] = {"type": block_type, "tool_use_id": part.tool_call_id, "content": part.content}
    caller = details.get("caller")
    if isinstance(caller, dict):
        block["caller"] = caller
    return block


def _tool_search_names(content: Any) -> Iterable[str]:
    """Tool names in a tool-search result: a list of names, or of objects with `name` / `tool_name`,
    possibly under a `tools`, `tool_names` or `matches` key."""
    if isinstance(content, dict):
        fields = cast("dict[str, Any]", content)
        for key in ("tools", "tool_names", "matches", "results"):
            inner = fields.get(key)
            if isinstance(inner, list):
                content = cast("list[Any]", inner)
                break
        else:
            return
    if not isinstance(content, list):
        return
    for item in cast("list[Any]", content):
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            entry = cast("dict[str, Any]", item)
            name = entry.get("tool_name", entry.get("name"))
            if isinstance(name, str):
                yield name


def _results_first(message: dict[str, Any]) -> None:
    """tool_result blocks must open the user turn that answers the tool calls."""
    if message["role"] == "user":
        content: list[dict[str, Any]] = message["content"]
        results = [b for b in content if b["type"] == "tool_result"]
        if results and len(results) != len(content):
            message["content"] = results + [b for b in content if b["type"] != "tool_result"]


def _merge_roles(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Consecutive messages of one role joined into one (the API alternates roles)."""
    merged: list[dict[str, Any]] = []
    for message in messages:
        if merged and merged[-1]["role"] == message["role"]:
            merged[-1]["content"].extend(message["content"])
        else:
            merged.append(message)
    return merged


def _drop_unpaired_native_calls(messages: list[dict[str, Any]]) -> None:
    """Drop server-tool calls the API would reject because their result is missing.

    A call without a result is accepted only while every later message is a user turn of tool
    results (the model called a server tool and a function tool in the same turn).
    """
    answered = {b.get("tool_use_id") for m in messages for b in m["content"] if "tool_use_id" in b}
    only_results_after = True
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        content: list[dict[str, Any]] = message["content"]
        kept = [
            b
            for b in content
            if not (
                b["type"] in _NATIVE_CALL_BLOCKS and b.get("id") not in answered and not only_results_after
            )
        ]
        if len(kept) != len(content):
            if not kept:
                del messages[index]
                continue
            message["content"] = kept
        only_results_after = (
            only_results_after and message["role"] == "user" and all(b["type"] == "tool_result" for b in kept)
        )
