"""Tool emulation through constrained JSON output: encoding, decoding and the stream transform."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import fastjsonschema
import msgspec
import pytest

from ferrule.core.errors import UserError
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import TextPart
from ferrule.core.messages import ThinkingPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.messages import UserPromptPart
from ferrule.core.model import JsonObjectFormat
from ferrule.core.model import JsonSchemaFormat
from ferrule.core.model import ModelCall
from ferrule.core.model import ModelStreamEvent
from ferrule.core.model import PartDeltaEvent
from ferrule.core.model import PartEndEvent
from ferrule.core.model import PartStartEvent
from ferrule.core.model import ResponseCompleted
from ferrule.core.model import TextPartDelta
from ferrule.core.model import ThinkingPartDelta
from ferrule.core.model import ToolDefinition
from ferrule.core.settings import ModelSettings
from ferrule.core.streaming import ResponseBuilder
from ferrule.providers.openai._tool_emulation import EMULATED_OUTPUT_NAME
from ferrule.providers.openai._tool_emulation import _AnswerScanner
from ferrule.providers.openai._tool_emulation import decode_emulated_tools
from ferrule.providers.openai._tool_emulation import emulated_tool_stream
from ferrule.providers.openai._tool_emulation import encode_emulated_tools
from ferrule.providers.openai._tool_emulation import needs_tool_emulation
from tests.support.provtests import object_tool

WEATHER = object_tool(
    "get_weather",
    {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
    required=["city"],
    description="Get the weather in a city.",
)
TIME = ToolDefinition(name="get_time", parameters_json_schema={"type": "object", "properties": {}})
ANSWER = object_tool("final_result", {"score": {"type": "integer"}}, kind="output")


def _call(**kwargs: Any) -> ModelCall:
    kwargs.setdefault("messages", [ModelRequest.user_text_prompt("What is the weather in Paris?")])
    return ModelCall(**kwargs)


def _validator(call: ModelCall) -> Any:
    assert isinstance(call.output, JsonSchemaFormat)
    return fastjsonschema.compile(call.output.schema)


def _accepts(validate: Any, value: Any) -> bool:
    try:
        validate(value)
    except fastjsonschema.JsonSchemaException:
        return False
    return True


# --- encoding -------------------------------------------------------------------------------------


def test_call_without_tools_is_unchanged() -> None:
    call = _call()
    assert not needs_tool_emulation(call)
    assert encode_emulated_tools(call) is call
    response = ModelResponse(parts=[TextPart(content='{"tool": "x", "arguments": {}}')])
    assert decode_emulated_tools(response, call) is response


def test_encode_replaces_tools_by_one_schema_output() -> None:
    call = _call(tools=[WEATHER, TIME], instructions="Be brief.")
    wire = encode_emulated_tools(call)
    assert wire.tools == ()
    assert wire.output_tools == ()
    assert isinstance(wire.output, JsonSchemaFormat)
    assert wire.output.name == EMULATED_OUTPUT_NAME
    branches = wire.output.schema["anyOf"]
    assert [b["properties"].get("tool") for b in branches] == [
        {"const": "get_weather"},
        {"const": "get_time"},
        None,
    ]
    assert branches[2]["properties"] == {"final_answer": {"type": "string"}}
    assert all(b["additionalProperties"] is False for b in branches)
    assert wire.instructions is not None
    assert wire.instructions.startswith("Be brief.\n\n")
    assert "get_weather: Get the weather in a city." in wire.instructions
    assert '"final_answer"' in wire.instructions
    # the original call is untouched
    assert call.tools == [WEATHER, TIME]
    assert call.instructions == "Be brief."


def test_encoded_schema_accepts_exactly_the_offered_shapes() -> None:
    validate = _validator(encode_emulated_tools(_call(tools=[WEATHER, TIME])))
    assert _accepts(validate, {"tool": "get_weather", "arguments": {"city": "Paris"}})
    assert _accepts(validate, {"tool": "get_time", "arguments": {}})
    assert _accepts(validate, {"final_answer": "It is sunny."})
    assert not _accepts(validate, {"tool": "get_weather", "arguments": {}})  # city is required
    assert not _accepts(validate, {"tool": "get_weather", "arguments": {"city": "P", "unit": "k"}})
    assert not _accepts(validate, {"tool": "delete_everything", "arguments": {}})
    assert not _accepts(validate, {"final_answer": 3})
    assert not _accepts(validate, {"final_answer": "x", "tool": "get_time"})


def test_single_branch_is_not_wrapped_in_any_of() -> None:
    wire = encode_emulated_tools(_call(output_tools=[ANSWER], allow_text_output=False))
    assert isinstance(wire.output, JsonSchemaFormat)
    assert "anyOf" not in wire.output.schema
    assert wire.output.schema["properties"]["tool"] == {"const": "final_result"}
    assert "You must call one of the tools now." in (wire.instructions or "")


def test_json_schema_output_becomes_the_final_answer_branch() -> None:
    output = JsonSchemaFormat(
        name="city",
        schema={"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        description="A city.",
    )
    wire = encode_emulated_tools(_call(tools=[WEATHER], output=output, allow_text_output=False))
    validate = _validator(wire)
    assert _accepts(validate, {"final_answer": {"name": "Paris"}})
    assert not _accepts(validate, {"final_answer": "Paris"})
    assert "(A city.)" in (wire.instructions or "")


def test_json_object_output_branch_stays_open() -> None:
    validate = _validator(encode_emulated_tools(_call(tools=[TIME], output=JsonObjectFormat())))
    assert _accepts(validate, {"final_answer": {"anything": [1, 2]}})
    assert not _accepts(validate, {"final_answer": "text"})


def test_tool_choice_is_consumed_by_the_schema() -> None:
    required = encode_emulated_tools(
        _call(tools=[WEATHER, TIME], settings=ModelSettings(tool_choice="required"))
    )
    assert isinstance(required.output, JsonSchemaFormat)
    assert len(required.output.schema["anyOf"]) == 2
    assert required.settings.tool_choice is None

    named = encode_emulated_tools(
        _call(tools=[WEATHER, TIME], settings=ModelSettings(tool_choice=["get_time"]))
    )
    assert isinstance(named.output, JsonSchemaFormat)
    assert named.output.schema["properties"]["tool"] == {"const": "get_time"}

    none = encode_emulated_tools(
        _call(tools=[WEATHER], settings=ModelSettings(tool_choice="none", parallel_tool_calls=False))
    )
    assert isinstance(none.output, JsonSchemaFormat)
    assert none.output.schema["properties"] == {"final_answer": {"type": "string"}}
    assert none.settings.parallel_tool_calls is None


def test_tool_choice_naming_an_absent_tool_fails_before_the_request() -> None:
    with pytest.raises(UserError, match="'nope'"):
        encode_emulated_tools(_call(tools=[WEATHER], settings=ModelSettings(tool_choice=["nope"])))


def test_no_branch_left_is_a_user_error() -> None:
    call = _call(
        output_tools=[ANSWER], allow_text_output=False, settings=ModelSettings(tool_choice=["final_result"])
    )
    assert encode_emulated_tools(call).output is not None  # one output tool is still a branch
    with pytest.raises(UserError, match="no tool"):
        encode_emulated_tools(
            _call(tools=[WEATHER], allow_text_output=False, settings=ModelSettings(tool_choice="none"))
        )


def test_deferred_tools_are_not_offered() -> None:
    deferred = ToolDefinition(name="rare", defer_loading=True)
    wire = encode_emulated_tools(_call(tools=[WEATHER, deferred]))
    assert isinstance(wire.output, JsonSchemaFormat)
    assert "rare" not in msgspec.json.encode(wire.output.schema).decode()


def test_defs_are_hoisted_and_renamed_per_tool() -> None:
    def tool(name: str, item: dict[str, Any]) -> ToolDefinition:
        return ToolDefinition(
            name=name,
            parameters_json_schema={
                "type": "object",
                "properties": {"item": {"$ref": "#/$defs/Item"}},
                "required": ["item"],
                "$defs": {"Item": item},
            },
        )

    a = tool("a", {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    b = tool("b", {"type": "object", "properties": {"s": {"type": "string"}}, "required": ["s"]})
    wire = encode_emulated_tools(_call(tools=[a, b]))
    assert isinstance(wire.output, JsonSchemaFormat)
    schema = wire.output.schema
    assert set(schema["$defs"]) == {"tool0_Item", "tool1_Item"}
    validate = fastjsonschema.compile(schema)
    assert _accepts(validate, {"tool": "a", "arguments": {"item": {"n": 1}}})
    assert _accepts(validate, {"tool": "b", "arguments": {"item": {"s": "x"}}})
    assert not _accepts(validate, {"tool": "a", "arguments": {"item": {"s": "x"}}})


def test_recursive_schema_referring_to_its_root_is_hoisted() -> None:
    tree = object_tool("tree", {"children": {"type": "array", "items": {"$ref": "#"}}})
    wire = encode_emulated_tools(_call(tools=[tree]))
    assert isinstance(wire.output, JsonSchemaFormat)
    validate = fastjsonschema.compile(wire.output.schema)
    assert _accepts(validate, {"tool": "tree", "arguments": {"children": [{"children": []}]}})
    assert not _accepts(validate, {"tool": "tree", "arguments": {"children": [{"children": 1}]}})


def test_history_is_rewritten_into_the_json_dialogue() -> None:
    call_part = ToolCallPart(tool_name="get_weather", args='{"city": "Paris"}', tool_call_id="c1")
    bad_call = ToolCallPart(tool_name="get_weather", args="{not json", tool_call_id="c2")
    messages = [
        ModelRequest.user_text_prompt("Weather?"),
        ModelResponse(parts=[ThinkingPart(content="hmm"), call_part, bad_call]),
        ModelRequest(
            parts=[
                ToolReturnPart(tool_name="get_weather", content={"temp": 21}, tool_call_id="c1"),
                RetryPromptPart(content="city is required", tool_name="get_weather", tool_call_id="c2"),
                RetryPromptPart(content="answer in French"),
            ]
        ),
    ]
    wire = encode_emulated_tools(_call(messages=messages, tools=[WEATHER]))
    response = wire.messages[1]
    assert isinstance(response, ModelResponse)
    assert isinstance(response.parts[0], ThinkingPart)
    assert [p.content for p in response.parts[1:] if isinstance(p, TextPart)] == [
        '{"tool":"get_weather","arguments":{"city":"Paris"}}',
        '{"tool": "get_weather", "arguments": {not json}',
    ]
    request = wire.messages[2]
    assert isinstance(request, ModelRequest)
    first, second, third = request.parts
    assert isinstance(first, UserPromptPart)
    assert '{"temp":21}' in str(first.content)
    assert isinstance(second, UserPromptPart)
    assert "city is required" in str(second.content)
    assert isinstance(third, RetryPromptPart)  # output retries keep their own part
    assert wire.messages[0] is messages[0]


# --- decoding -------------------------------------------------------------------------------------


def _response(text: str, **kwargs: Any) -> ModelResponse:
    return ModelResponse(parts=[TextPart(content=text)], finish_reason="stop", **kwargs)


def test_decode_tool_call() -> None:
    call = _call(tools=[WEATHER])
    decoded = decode_emulated_tools(
        _response('{"tool": "get_weather", "arguments": {"city": "Paris"}}'), call
    )
    [part] = decoded.parts
    assert isinstance(part, ToolCallPart)
    assert part.tool_name == "get_weather"
    assert part.args_as_dict() == {"city": "Paris"}
    assert part.tool_call_id.startswith("call_")
    assert decoded.finish_reason == "tool_call"


def test_decoded_tool_calls_get_distinct_ids() -> None:
    call = _call(tools=[TIME])
    text = '{"tool": "get_time", "arguments": {}}'
    first = decode_emulated_tools(_response(text), call).tool_calls[0]
    second = decode_emulated_tools(_response(text), call).tool_calls[0]
    assert first.tool_call_id != second.tool_call_id


def test_decode_final_answer_text_and_structured() -> None:
    decoded = decode_emulated_tools(_response('{"final_answer": "Sunny, 21 °C"}'), _call(tools=[WEATHER]))
    assert decoded.parts == [TextPart(content="Sunny, 21 °C")]
    assert decoded.finish_reason == "stop"
    structured = _call(tools=[WEATHER], output=JsonSchemaFormat(name="x", schema={"type": "object"}))
    decoded = decode_emulated_tools(_response('{"final_answer": {"name": "Paris"}}'), structured)
    assert decoded.text == '{"name":"Paris"}'


def test_decode_keeps_thinking_and_position() -> None:
    response = ModelResponse(
        parts=[
            ThinkingPart(content="plan"),
            TextPart(content='{"tool": "get_time",'),
            TextPart(content=' "arguments": {}}'),
        ]
    )
    decoded = decode_emulated_tools(response, _call(tools=[TIME]))
    assert isinstance(decoded.parts[0], ThinkingPart)
    assert isinstance(decoded.parts[1], ToolCallPart)
    assert len(decoded.parts) == 2


@pytest.mark.parametrize(
    "text",
    [
        '{"tool": "get_weather", "arguments": {"city": "Par',  # truncated
        "It is sunny.",  # not JSON
        '["get_weather"]',  # not an object
        '{"tool": "get_weather"}',  # arguments missing
        '{"answer": "x"}',  # unknown key
        '{"tool": 3, "arguments": {}}',  # name not a string
    ],
)
def test_malformed_answers_stay_verbatim(text: str) -> None:
    response = _response(text)
    decoded = decode_emulated_tools(response, _call(tools=[WEATHER]))
    assert decoded is response
    assert decoded.text == text


def test_unknown_tool_name_still_becomes_a_call_for_the_agent_to_reject() -> None:
    decoded = decode_emulated_tools(
        _response('{"tool": "nope", "arguments": {"a": 1}}'), _call(tools=[WEATHER])
    )
    assert decoded.tool_calls[0].tool_name == "nope"


def test_fenced_answer_from_an_unconstrained_server_is_decoded() -> None:
    decoded = decode_emulated_tools(_response('```json\n{"final_answer": "ok"}\n```'), _call(tools=[WEATHER]))
    assert decoded.text == "ok"


# --- streaming ------------------------------------------------------------------------------------


def _scan(chunks: list[str]) -> tuple[str, bool]:
    scanner = _AnswerScanner()
    out = "".join(scanner.feed(c) for c in chunks)
    return out, scanner.streaming


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"final_answer": "Hello, world"}', "Hello, world"),
        ('  {\n  "final_answer" :  "a\\"b\\\\c\\n"}', 'a"b\\c\n'),
        ('{"final_answer": "caf\\u00e9 \\ud83d\\ude00!"}', "café 😀!"),
        ('{"final_answer": ""}', ""),
    ],
)
def test_scanner_streams_the_final_answer_at_any_chunking(text: str, expected: str) -> None:
    for size in (1, 2, 3, 7, len(text)):
        chunks = [text[i : i + size] for i in range(0, len(text), size)]
        out, streaming = _scan(chunks)
        assert streaming
        assert out == expected, (size, out)


@pytest.mark.parametrize(
    "text",
    [
        '{"tool": "get_time", "arguments": {}}',
        '{"final_answer": {"a": 1}}',
        "plain text",
        '{"final_answers": "x"}',
    ],
)
def test_scanner_does_not_stream_other_shapes(text: str) -> None:
    for size in (1, 4, len(text)):
        out, streaming = _scan([text[i : i + size] for i in range(0, len(text), size)])
        assert (out, streaming) == ("", False)


async def _inner(chunks: list[str], *, thinking: str | None = None) -> AsyncIterator[ModelStreamEvent]:
    builder = ResponseBuilder()
    if thinking is not None:
        for event in builder.thinking(thinking, key="think"):
            yield event
    for chunk in chunks:
        for event in builder.text(chunk, key="text"):
            yield event
    for event in builder.finish():
        yield event
    yield ResponseCompleted(ModelResponse(parts=builder.parts, finish_reason="stop"))


async def _collect(stream: AsyncIterator[ModelStreamEvent]) -> list[ModelStreamEvent]:
    return [event async for event in stream]


def _chunks(text: str, size: int = 3) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


@pytest.mark.anyio
async def test_stream_final_answer_is_streamed_as_text_deltas() -> None:
    call = _call(tools=[WEATHER])
    events = await _collect(
        emulated_tool_stream(_inner(_chunks('{"final_answer": "It is sunny in Paris."}')), call)
    )
    deltas = [
        e.delta.content_delta
        for e in events
        if isinstance(e, PartDeltaEvent) and isinstance(e.delta, TextPartDelta)
    ]
    assert len(deltas) > 3
    assert "".join(deltas) == "It is sunny in Paris."
    assert isinstance(events[0], PartStartEvent)
    assert events[0].part == TextPart(content="")
    end = [e for e in events if isinstance(e, PartEndEvent)]
    assert end == [PartEndEvent(0, TextPart(content="It is sunny in Paris."))]
    completed = events[-1]
    assert isinstance(completed, ResponseCompleted)
    assert completed.response.parts == [TextPart(content="It is sunny in Paris.")]


@pytest.mark.anyio
async def test_stream_tool_call_appears_as_a_complete_part() -> None:
    call = _call(tools=[WEATHER])
    text = '{"tool": "get_weather", "arguments": {"city": "Paris"}}'
    events = await _collect(emulated_tool_stream(_inner(_chunks(text), thinking="let me see"), call))
    kinds = [(type(e).__name__, getattr(e, "index", None)) for e in events]
    assert kinds[0] == ("PartStartEvent", 0)  # thinking passes through
    assert any(isinstance(e, PartDeltaEvent) and isinstance(e.delta, ThinkingPartDelta) for e in events)
    assert not any(isinstance(e, PartDeltaEvent) and isinstance(e.delta, TextPartDelta) for e in events)
    starts = [e for e in events if isinstance(e, PartStartEvent) and isinstance(e.part, ToolCallPart)]
    assert len(starts) == 1
    assert starts[0].index == 1
    completed = events[-1]
    assert isinstance(completed, ResponseCompleted)
    [thinking, tool_call] = completed.response.parts
    assert isinstance(thinking, ThinkingPart)
    assert thinking.content == "let me see"
    assert isinstance(tool_call, ToolCallPart)
    assert tool_call == starts[0].part
    assert completed.response.finish_reason == "tool_call"


@pytest.mark.anyio
async def test_stream_malformed_answer_ends_as_verbatim_text() -> None:
    call = _call(tools=[WEATHER])
    text = '{"final_answer": "cut sho'
    events = await _collect(emulated_tool_stream(_inner(_chunks(text)), call))
    completed = events[-1]
    assert isinstance(completed, ResponseCompleted)
    assert completed.response.text == text
    ends = [e for e in events if isinstance(e, PartEndEvent)]
    assert [e.part for e in ends] == [TextPart(content=text)]


@pytest.mark.anyio
async def test_stream_without_tools_passes_through() -> None:
    call = _call()
    inner = await _collect(_inner(["Hel", "lo"]))
    outer = await _collect(emulated_tool_stream(_inner(["Hel", "lo"]), call))
    assert [type(e) for e in inner] == [type(e) for e in outer]
    assert isinstance(outer[-1], ResponseCompleted)
    assert outer[-1].response.text == "Hello"


@pytest.mark.anyio
async def test_stream_closing_early_closes_the_inner_stream() -> None:
    closed: list[bool] = []

    async def inner() -> AsyncIterator[ModelStreamEvent]:
        try:
            async for event in _inner(_chunks('{"final_answer": "long answer here"}', 2)):
                yield event
        finally:
            closed.append(True)

    stream = emulated_tool_stream(inner(), _call(tools=[WEATHER]))
    async for event in stream:
        if isinstance(event, PartDeltaEvent):
            break
    await stream.aclose()  # type: ignore[attr-defined]
    assert closed == [True]
