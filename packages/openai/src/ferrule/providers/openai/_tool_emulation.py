"""Tool calls for models that cannot call tools natively, emulated through constrained JSON output.

Small local models (Qwen2.5-Coder 0.5B/1.5B behind llama.cpp, for example) answer a tool request
with JSON in `content` instead of native `tool_calls`, while the server enforces a `response_format`
JSON schema exactly. When a model's profile sets `tools_emulated_via_output`, the Chat Completions
client therefore:

1. [`encode_emulated_tools`][ferrule.providers.openai._tool_emulation.encode_emulated_tools] replaces
   the step's function and output tools by ONE strict JSON-schema output, the `anyOf` of
   `{"tool": <const name>, "arguments": <the tool's schema>}` per tool plus a final-answer branch
   `{"final_answer": <string or the output schema>}`, appends an instruction explaining the format,
   and rewrites earlier tool calls and results in the history into that same JSON dialogue;
2. [`decode_emulated_tools`][ferrule.providers.openai._tool_emulation.decode_emulated_tools] turns the
   JSON answer back into ordinary `ToolCallPart`s (with generated IDs) or a `TextPart` final answer;
3. [`emulated_tool_stream`][ferrule.providers.openai._tool_emulation.emulated_tool_stream] does the
   same for a stream: the JSON text is not shown as text, a final answer's string is streamed as
   text deltas as it arrives, and tool calls appear as complete parts at the end.

An answer that is not one of the offered shapes (malformed or truncated JSON, an unknown key) is
kept verbatim as a `TextPart`, so the agent's ordinary output validation and retry path handles it.
Everything here is a pure function of the call: no I/O, tested without a server.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from collections.abc import Sequence
from typing import Any

import msgspec
import msgspec.structs

from ferrule.core import bounded_json
from ferrule.core.errors import UserError
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelRequestPart
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import ModelResponsePart
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.messages import UserPromptPart
from ferrule.core.messages import new_tool_call_id
from ferrule.core.model import JsonObjectFormat
from ferrule.core.model import JsonSchemaFormat
from ferrule.core.model import ModelCall
from ferrule.core.model import ModelStreamEvent
from ferrule.core.model import PartDeltaEvent
from ferrule.core.model import PartEndEvent
from ferrule.core.model import PartStartEvent
from ferrule.core.model import ResponseCompleted
from ferrule.core.model import TextFormat
from ferrule.core.model import TextPartDelta
from ferrule.core.model import ToolDefinition

__all__ = [
    "EMULATED_OUTPUT_NAME",
    "FINAL_ANSWER_KEY",
    "decode_emulated_tools",
    "emulated_tool_stream",
    "encode_emulated_tools",
    "needs_tool_emulation",
]

EMULATED_OUTPUT_NAME = "tool_call_or_final_answer"
"""The name of the JSON-schema output that carries emulated tool calls."""

FINAL_ANSWER_KEY = "final_answer"
"""The key of the final-answer branch of the emulated output."""

_TOOL_KEY = "tool"
_ARGUMENTS_KEY = "arguments"
_DEFS_KEYS = ("$defs", "definitions")

# The answer is the model's own output, already bounded by the response-size limit; the profile
# keeps a hostile or runaway answer from building a huge structure before it reaches the agent.
_ANSWER_LIMITS = bounded_json.PROVIDER_RESPONSE


def needs_tool_emulation(call: ModelCall) -> bool:
    """Whether `call` offers tools, so a model without native tool calling needs the emulation."""
    return bool(call.tools or call.output_tools)


# --- encoding -------------------------------------------------------------------------------------


def _offered_tools(call: ModelCall) -> tuple[list[ToolDefinition], bool]:
    """The tools to offer as branches after `tool_choice`, and whether a final answer is allowed."""
    # Deferred tools stay out of the request until a tool search surfaces them (the agent withholds
    # them for models without native deferred loading; this is the belt to that brace).
    function_tools = [t for t in call.tools if not t.defer_loading]
    output_tools = [t for t in call.output_tools if not t.defer_loading]
    final_allowed = call.allow_text_output or not isinstance(call.output, TextFormat)
    choice = call.settings.tool_choice
    if choice == "none":
        function_tools = []
    elif choice == "required":
        final_allowed = False
    elif isinstance(choice, list):
        wanted = set(choice)
        unknown = sorted(wanted - {t.name for t in (*function_tools, *output_tools)})
        if unknown:
            raise UserError(
                f"tool_choice names {', '.join(map(repr, unknown))}, which the call does not offer; "
                "name only tools passed in this step"
            )
        function_tools = [t for t in function_tools if t.name in wanted]
        output_tools = [t for t in output_tools if t.name in wanted]
        final_allowed = False
    return [*function_tools, *output_tools], final_allowed


def _final_answer_schema(call: ModelCall) -> dict[str, Any]:
    output = call.output
    if isinstance(output, JsonSchemaFormat):
        return output.schema
    if isinstance(output, JsonObjectFormat):
        # Open on purpose: a bare {"type": "object"} may be closed by strict-dialect tidying.
        return {"type": "object", "additionalProperties": True}
    return {"type": "string"}


def _rewrite_refs(node: Any, renames: dict[str, str], self_ref: str | None) -> Any:
    """A copy of `node` with local `$ref`s pointing at the hoisted definitions."""
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():  # pyright: ignore[reportUnknownVariableType]
            if key == "$ref" and isinstance(value, str):
                out[key] = _renamed_ref(value, renames, self_ref)
            else:
                out[key] = _rewrite_refs(value, renames, self_ref)
        return out
    if isinstance(node, list):
        return [_rewrite_refs(item, renames, self_ref) for item in node]  # pyright: ignore[reportUnknownVariableType]
    return node


def _renamed_ref(ref: str, renames: dict[str, str], self_ref: str | None) -> str:
    if ref == "#":
        if self_ref is None:  # pragma: no cover - callers hoist every schema that refers to itself
            raise UserError("a schema refers to its own root ('$ref': '#'), which cannot be nested")
        return self_ref
    for defs_key in _DEFS_KEYS:
        prefix = f"#/{defs_key}/"
        if ref.startswith(prefix):
            head, sep, tail = ref[len(prefix) :].partition("/")
            if head in renames:
                return f"#/$defs/{renames[head]}{sep}{tail}"
    return ref


def _mentions_root_ref(node: Any) -> bool:
    if isinstance(node, dict):
        mapping: dict[str, Any] = node  # pyright: ignore[reportUnknownVariableType]
        return any((k == "$ref" and v == "#") or _mentions_root_ref(v) for k, v in mapping.items())
    if isinstance(node, list):
        items: list[Any] = node  # pyright: ignore[reportUnknownVariableType]
        return any(_mentions_root_ref(v) for v in items)
    return False


def _nest(schema: dict[str, Any], prefix: str, root_defs: dict[str, Any]) -> dict[str, Any]:
    """`schema` made safe to nest inside another document.

    `$ref`s resolve against the document root, so the schema's own `$defs` move to the root under
    names prefixed per branch (two tools may both define `Item`), and a schema that refers to its own
    root becomes a root definition itself.
    """
    body = {k: v for k, v in schema.items() if k not in _DEFS_KEYS and k != "$schema"}
    renames: dict[str, str] = {}
    local_defs: dict[str, Any] = {}
    for defs_key in _DEFS_KEYS:
        defs = schema.get(defs_key)
        if isinstance(defs, dict):
            for name, definition in defs.items():  # pyright: ignore[reportUnknownVariableType]
                renames[str(name)] = f"{prefix}{name}"  # pyright: ignore[reportUnknownArgumentType]
                local_defs[str(name)] = definition  # pyright: ignore[reportUnknownArgumentType]
    self_ref = f"#/$defs/{prefix}" if _mentions_root_ref(schema) else None
    for name, definition in local_defs.items():
        root_defs[renames[name]] = _rewrite_refs(definition, renames, self_ref)
    nested = _rewrite_refs(body, renames, self_ref)
    if self_ref is not None:
        root_defs[prefix] = nested
        return {"$ref": self_ref}
    return nested


def _branch(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def _emulation_schema(tools: Sequence[ToolDefinition], final: dict[str, Any] | None) -> dict[str, Any]:
    root_defs: dict[str, Any] = {}
    branches: list[dict[str, Any]] = []
    for i, tool in enumerate(tools):
        arguments = _nest(tool.parameters_json_schema, f"tool{i}_", root_defs)
        branches.append(
            _branch({_TOOL_KEY: {"const": tool.name}, _ARGUMENTS_KEY: arguments}, [_TOOL_KEY, _ARGUMENTS_KEY])
        )
    if final is not None:
        branches.append(_branch({FINAL_ANSWER_KEY: _nest(final, "final_", root_defs)}, [FINAL_ANSWER_KEY]))
    schema: dict[str, Any] = branches[0] if len(branches) == 1 else {"anyOf": branches}
    if root_defs:
        schema = {**schema, "$defs": root_defs}
    return schema


def _compact(value: Any) -> str:
    return msgspec.json.encode(value).decode()


def _instruction(call: ModelCall, tools: Sequence[ToolDefinition], final_allowed: bool) -> str:
    lines = ["Reply with exactly one JSON object and nothing else."]
    if tools:
        lines.append(
            'To call a tool, reply {"tool": "<tool name>", "arguments": {<the tool\'s arguments>}}. '
            "The tool's result comes back in the next message; then call another tool or answer."
        )
    if final_allowed:
        output = call.output
        if isinstance(output, JsonSchemaFormat):
            what = f" ({output.description})" if output.description else ""
            lines.append(
                'To give the final result, reply {"final_answer": <value>} where the value matches '
                f"this JSON schema{what}: {_compact(output.schema)}"
            )
        elif isinstance(output, JsonObjectFormat):
            lines.append('To give the final result, reply {"final_answer": {<a JSON object>}}.')
        else:
            lines.append('To answer the user, reply {"final_answer": "<your answer>"}.')
    elif tools:
        lines.append("You must call one of the tools now.")
    if tools:
        lines.append("")
        lines.append("Available tools:")
        for tool in tools:
            description = f" {tool.description.strip()}" if tool.description else ""
            lines.append(
                f"- {tool.name}:{description} Arguments schema: {_compact(tool.parameters_json_schema)}"
            )
    return "\n".join(lines)


def _call_as_text(part: ToolCallPart) -> str:
    try:
        arguments: Any = part.args_as_dict()
    except (ValueError, msgspec.DecodeError):
        # Arguments the model got wrong earlier stay as it wrote them, so a retry prompt about
        # them still makes sense.
        return f'{{"{_TOOL_KEY}": {_compact(part.tool_name)}, "{_ARGUMENTS_KEY}": {part.args_as_json_str()}}}'
    return _compact({_TOOL_KEY: part.tool_name, _ARGUMENTS_KEY: arguments})


def _rewrite_request_part(part: ModelRequestPart) -> ModelRequestPart:
    # No call IDs in the text: they are random, and random tokens in the prompt make a small model's
    # greedy answer vary from run to run (measured: an occasional tool-call loop with them, none
    # without). Emulated turns hold one call each, so results follow their call unambiguously.
    match part:
        case ToolReturnPart():
            text = f"Result of the tool {part.tool_name}:\n{part.model_response_str()}"
            return UserPromptPart(content=text, timestamp=part.timestamp)
        case RetryPromptPart(tool_name=str(tool_name)):
            text = f"The call of the tool {tool_name} failed:\n{part.model_response()}"
            return UserPromptPart(content=text, timestamp=part.timestamp)
        case _:
            # Parts not bound to a tool call: the Chat codec encodes (or refuses) every other kind.
            return part


def _rewrite_history(messages: Sequence[Message]) -> list[Message]:
    """The history as the model would have written it in the emulated dialogue.

    Native tool-call parts and tool-role results would be sent as `tool_calls` and `tool` messages
    the model never learned to produce here; showing its earlier calls as the JSON it is asked for
    keeps the conversation consistent (and works on servers without tool support in their template).
    """
    rewritten: list[Message] = []
    for message in messages:
        if isinstance(message, ModelRequest):
            if any(isinstance(p, ToolReturnPart | RetryPromptPart) for p in message.parts):
                parts = [_rewrite_request_part(p) for p in message.parts]
                message = msgspec.structs.replace(message, parts=parts)
        elif any(isinstance(p, ToolCallPart) for p in message.parts):
            response_parts: list[ModelResponsePart] = [
                TextPart(content=_call_as_text(p)) if isinstance(p, ToolCallPart) else p
                for p in message.parts
            ]
            message = msgspec.structs.replace(message, parts=response_parts)
        rewritten.append(message)
    return rewritten


def encode_emulated_tools(call: ModelCall) -> ModelCall:
    """The call to send to a model that emulates tools through constrained output.

    The step's tools and output tools become one strict JSON-schema output (see the module docs),
    the format is explained in an instruction appended to `instructions`, earlier tool calls and
    results in the history are rewritten into the same JSON dialogue, and `tool_choice` /
    `parallel_tool_calls` are consumed here (`"required"` and named choices drop the final-answer
    branch, `"none"` drops the function tools). A call without tools is returned unchanged.
    """
    if not needs_tool_emulation(call):
        return call
    tools, final_allowed = _offered_tools(call)
    if not tools and not final_allowed:
        raise UserError(
            "the call offers no tool it may call and does not allow a final answer "
            "(tool_choice='none' with output tools only); allow text output or a tool"
        )
    final = _final_answer_schema(call) if final_allowed else None
    schema = _emulation_schema(tools, final)
    instruction = _instruction(call, tools, final_allowed)
    instructions = f"{call.instructions.rstrip()}\n\n{instruction}" if call.instructions else instruction
    settings = msgspec.structs.replace(call.settings, tool_choice=None, parallel_tool_calls=None)
    return msgspec.structs.replace(
        call,
        messages=_rewrite_history(call.messages),
        instructions=instructions,
        tools=(),
        output_tools=(),
        output=JsonSchemaFormat(
            name=EMULATED_OUTPUT_NAME,
            schema=schema,
            description="Either one tool call or the final answer.",
            # Sent exactly as written: llama.cpp (and other grammar-constrained servers) enforce
            # any schema exactly, while `strict=True` would make the OpenAI codec rewrite optional
            # tool arguments into required-but-nullable ones, changing what the tools accept.
            strict=False,
        ),
        allow_text_output=True,
        settings=settings,
    )


# --- decoding -------------------------------------------------------------------------------------

_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.S)


def _answer_parts(text: str, call: ModelCall) -> list[ModelResponsePart] | None:
    """The parts an emulated answer stands for, or `None` when it is not one of the offered shapes."""
    fenced = _FENCE.match(text)
    if fenced is not None:  # servers that do not enforce the schema sometimes fence it
        text = fenced.group(1)
    try:
        value = bounded_json.decode_value(text.strip(), _ANSWER_LIMITS)
    except bounded_json.JsonError:
        return None
    if not isinstance(value, dict):
        return None
    answer: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
    keys = set(answer)
    if keys == {_TOOL_KEY, _ARGUMENTS_KEY} and isinstance(answer[_TOOL_KEY], str):
        # Unknown names and invalid arguments still become calls: the agent answers them with a
        # retry prompt, exactly as for a native tool call.
        return [
            ToolCallPart(
                tool_name=answer[_TOOL_KEY],
                args=_compact(answer[_ARGUMENTS_KEY]),
                tool_call_id=new_tool_call_id(),
            )
        ]
    if keys == {FINAL_ANSWER_KEY}:
        final = answer[FINAL_ANSWER_KEY]
        if isinstance(call.output, TextFormat) and isinstance(final, str):
            return [TextPart(content=final)]
        return [TextPart(content=_compact(final))]
    return None


def _replace_text(response: ModelResponse, decoded: list[ModelResponsePart]) -> ModelResponse:
    parts: list[ModelResponsePart] = []
    inserted = False
    for part in response.parts:
        if isinstance(part, TextPart):
            if not inserted:
                parts.extend(decoded)
                inserted = True
            continue
        parts.append(part)
    finish = response.finish_reason
    if finish == "stop" and any(isinstance(p, ToolCallPart) for p in decoded):
        finish = "tool_call"
    return msgspec.structs.replace(response, parts=parts, finish_reason=finish)


def decode_emulated_tools(response: ModelResponse, call: ModelCall) -> ModelResponse:
    """`response` with its emulated JSON answer turned into tool-call parts or a final-answer text part.

    `call` is the ORIGINAL call (before [`encode_emulated_tools`][ferrule.providers.openai._tool_emulation.encode_emulated_tools]).
    Text that is not one of the offered shapes is kept verbatim; a call without tools returns
    `response` unchanged. Tool calls get fresh IDs and the finish reason `"tool_call"`.
    """
    if not needs_tool_emulation(call):
        return response
    text = response.text
    if text is None:
        return response
    decoded = _answer_parts(text, call)
    if decoded is None:
        return response
    return _replace_text(response, decoded)


# --- streaming ------------------------------------------------------------------------------------

_WS = " \t\r\n"


def _skip_ws(buf: str, i: int) -> int:
    while i < len(buf) and buf[i] in _WS:
        i += 1
    return i


class _AnswerScanner:
    """Finds a final answer's string in streamed JSON text and yields it unescaped, as it arrives."""

    __slots__ = ("_buf", "_mode", "_raw")

    def __init__(self) -> None:
        self._buf = ""
        self._mode = "prefix"  # prefix -> string -> done, or other (not a streamable final answer)
        self._raw = ""

    @property
    def streaming(self) -> bool:
        """Whether a final-answer string has been recognised (text deltas may follow)."""
        return self._mode in ("string", "done")

    def feed(self, chunk: str) -> str:
        """Consume `chunk`; return the newly known final-answer text (may be empty)."""
        if self._mode == "prefix":
            self._buf += chunk
            state, end = self._match_prefix(self._buf)
            if state == "more":
                return ""
            if state == "other":
                self._mode = "other"
                self._buf = ""
                return ""
            self._mode = "string"
            chunk = self._buf[end:]
            self._buf = ""
        if self._mode != "string":
            return ""
        self._raw += chunk
        return self._drain()

    @staticmethod
    def _match_prefix(buf: str) -> tuple[str, int]:
        """`("string", end)` after `{"final_answer": "`, `"more"` if undecided, `"other"` otherwise."""
        i = _skip_ws(buf, 0)
        for expected in ("{", '"'):
            if i >= len(buf):
                return "more", 0
            if buf[i] != expected:
                return "other", 0
            i = _skip_ws(buf, i + 1) if expected == "{" else i + 1
        key_end = buf.find('"', i)
        key = buf[i:] if key_end < 0 else buf[i:key_end]
        if not FINAL_ANSWER_KEY.startswith(key) or (key_end >= 0 and key != FINAL_ANSWER_KEY):
            return "other", 0
        if key_end < 0:
            return "more", 0
        i = _skip_ws(buf, key_end + 1)
        if i >= len(buf):
            return "more", 0
        if buf[i] != ":":
            return "other", 0
        i = _skip_ws(buf, i + 1)
        if i >= len(buf):
            return "more", 0
        if buf[i] != '"':
            return "other", 0
        return "string", i + 1

    def _drain(self) -> str:
        raw = self._raw
        i = 0
        safe = 0
        closed = False
        while i < len(raw):
            c = raw[i]
            if c == '"':
                closed = True
                break
            if c == "\\":
                if i + 1 >= len(raw):
                    break
                if raw[i + 1] == "u":
                    if i + 6 > len(raw):
                        break
                    code = raw[i + 2 : i + 6]
                    # A high surrogate only decodes together with the low one that follows it.
                    if code[0] in "dD" and code[1] in "89abAB":
                        if i + 12 > len(raw):
                            break
                        i += 12
                    else:
                        i += 6
                else:
                    i += 2
            else:
                i += 1
            safe = i
        if closed:
            safe = i
            self._mode = "done"
        piece, self._raw = raw[:safe], raw[safe:]
        if not piece:
            return ""
        try:
            return msgspec.json.decode(f'"{piece}"'.encode(), type=str)
        except msgspec.DecodeError:
            self._mode = "other"
            return ""


async def emulated_tool_stream(  # noqa: C901 - one pass over the stream events; the state is local to it
    events: AsyncIterator[ModelStreamEvent], call: ModelCall
) -> AsyncIterator[ModelStreamEvent]:
    """Turn the stream of an emulated call (see the module docs) into ordinary stream events.

    `events` is the model's stream for the ENCODED call, `call` the original one. Thinking and other
    non-text parts pass through (re-indexed); the JSON text is consumed, a final answer's string is
    streamed as text deltas while it arrives, tool calls appear as complete parts when the response
    completes, and the completed response is the decoded one. The inner stream is closed when this
    one is.
    """
    if not needs_tool_emulation(call):
        async for event in events:
            yield event
        return
    scanner = _AnswerScanner()
    index_map: dict[int, int] = {}
    text_indices: set[int] = set()
    next_index = 0
    answer_index: int | None = None
    streamed: list[str] = []
    try:
        async for event in events:
            if isinstance(event, ResponseCompleted):
                decoded = decode_emulated_tools(event.response, call)
                for part in decoded.parts if decoded is not event.response else ():
                    if not isinstance(part, TextPart | ToolCallPart) or part in event.response.parts:
                        continue
                    if isinstance(part, TextPart) and answer_index is not None:
                        sent = "".join(streamed)
                        if part.content.startswith(sent) and len(part.content) > len(sent):
                            yield PartDeltaEvent(answer_index, TextPartDelta(part.content[len(sent) :]))
                        yield PartEndEvent(answer_index, part)
                        answer_index = None
                        continue
                    yield PartStartEvent(next_index, part)
                    yield PartEndEvent(next_index, part)
                    next_index += 1
                if decoded is event.response:
                    # Not an emulated answer: show the verbatim text the model produced.
                    for part in event.response.parts:
                        if isinstance(part, TextPart):
                            index = answer_index if answer_index is not None else next_index
                            if answer_index is None:
                                yield PartStartEvent(index, TextPart(content=""))
                                next_index += 1
                            yield PartEndEvent(index, part)
                            answer_index = None
                elif answer_index is not None:  # pragma: no cover - a streamed answer always decodes to text
                    yield PartEndEvent(answer_index, TextPart(content="".join(streamed)))
                yield ResponseCompleted(decoded)
                return
            part = event.part if isinstance(event, PartStartEvent | PartEndEvent) else None
            delta = event.delta if isinstance(event, PartDeltaEvent) else None
            if isinstance(part, TextPart) or isinstance(delta, TextPartDelta) or event.index in text_indices:
                text_indices.add(event.index)
                if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
                    chunk = event.part.content
                elif isinstance(delta, TextPartDelta):
                    chunk = delta.content_delta
                else:
                    continue
                was_streaming = scanner.streaming
                piece = scanner.feed(chunk)
                if scanner.streaming and not was_streaming:
                    answer_index = next_index
                    next_index += 1
                    yield PartStartEvent(answer_index, TextPart(content=""))
                if piece and answer_index is not None:
                    streamed.append(piece)
                    yield PartDeltaEvent(answer_index, TextPartDelta(piece))
                continue
            if isinstance(event, PartStartEvent):
                index_map[event.index] = next_index
                next_index += 1
            mapped = index_map.get(event.index)
            if mapped is None:
                continue
            if isinstance(event, PartStartEvent):
                yield PartStartEvent(mapped, event.part)
            elif isinstance(event, PartDeltaEvent):
                yield PartDeltaEvent(mapped, event.delta)
            else:
                yield PartEndEvent(mapped, event.part)
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()
