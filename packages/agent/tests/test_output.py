"""Output: text, typed output by tool / native / prompted mode, functions, validators, end strategies."""

from __future__ import annotations

import dataclasses
import json
from typing import Any
from typing import TypedDict

import msgspec
import pytest
from inline_snapshot import snapshot

from ferrule.agent import Agent
from ferrule.agent import ModelRetry
from ferrule.agent import NativeOutput
from ferrule.agent import PromptedOutput
from ferrule.agent import RunContext
from ferrule.agent import StructuredDict
from ferrule.agent import TextOutput
from ferrule.agent import ToolOutput
from ferrule.agent import run_state_of
from ferrule.agent.exceptions import EmptyResponseError
from ferrule.agent.exceptions import OutputRetriesExceeded
from ferrule.agent.exceptions import OutputSpecError
from ferrule.agent.testing import FunctionModel
from ferrule.agent.testing import TestModel
from ferrule.agent.testing import full_profile
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.model import JsonObjectFormat
from ferrule.core.model import JsonSchemaFormat
from ferrule.core.model import TextFormat
from ferrule.core.profile import ModelProfile
from tests.support.scripts import Script
from tests.support.scripts import recorded
from tests.support.scripts import text

pytestmark = pytest.mark.anyio


class City(msgspec.Struct):
    """A city and its population."""

    name: str
    population: int


@dataclasses.dataclass
class Weather:
    summary: str
    celsius: float


class Pet(TypedDict):
    species: str
    age: int


class Cat(msgspec.Struct):
    meow: str


class Dog(msgspec.Struct):
    bark: str


def call(name: str, args: Any, call_id: str = "o1") -> ToolCallPart:
    return ToolCallPart(tool_name=name, args=args, tool_call_id=call_id)


def model(script: Script, **profile: Any) -> FunctionModel:
    base = full_profile()
    return FunctionModel(script, profile=msgspec.structs.replace(base, **profile) if profile else base)


# --- tool output ---------------------------------------------------------------------------------------


async def test_struct_output_via_output_tool() -> None:
    script = Script(ModelResponse(parts=[call("final_result", '{"name": "Paris", "population": 2100000}')]))
    result = await Agent(model(script), output_type=City).run("x")
    assert result.output == City("Paris", 2100000)
    assert result.output_tool_name == "final_result"
    info = script.infos[0]
    assert not info.allow_text_output
    (tool,) = info.output_tools
    assert tool.kind == "output"
    assert tool.description == "A city and its population."
    assert tool.parameters_json_schema["required"] == ["name", "population"]
    # History is closed with the output tool's result.
    closing = result.all_messages()[-1]
    assert isinstance(closing, ModelRequest)
    assert isinstance(closing.parts[0], ToolReturnPart)
    assert closing.parts[0].content == "Final result processed."


@pytest.mark.parametrize(
    ("output_type", "args", "expected"),
    [
        (Weather, {"summary": "sun", "celsius": 21.5}, Weather("sun", 21.5)),
        (Pet, {"species": "cat", "age": 3}, {"species": "cat", "age": 3}),
        (int, {"value": 42}, 42),
        (list[str], {"value": ["a", "b"]}, ["a", "b"]),
        (bool, {"value": True}, True),
        (float | list[int], {"value": [1]}, [1]),
    ],
)
async def test_other_output_types(output_type: Any, args: Any, expected: Any) -> None:
    script = Script(ModelResponse(parts=[call("final_result", args)]))
    result = await Agent(model(script), output_type=output_type).run("x")
    assert result.output == expected
    schema = script.infos[0].output_tools[0].parameters_json_schema
    assert schema["type"] == "object"
    if "value" in args:
        assert schema["required"] == ["value"]


async def test_union_of_structs_gets_one_tool_per_member() -> None:
    script = Script(ModelResponse(parts=[call("final_result_Dog", {"bark": "woof"})]))
    result = await Agent(model(script), output_type=Cat | Dog).run("x")
    assert result.output == Dog("woof")
    assert [t.name for t in script.infos[0].output_tools] == ["final_result_Cat", "final_result_Dog"]


async def test_text_or_structured_output() -> None:
    script = Script(text("just text"))
    agent = Agent(model(script), output_type=[str, City])
    result = await agent.run("x")
    assert result.output == "just text"
    assert script.infos[0].allow_text_output
    script2 = Script(ModelResponse(parts=[call("final_result", {"name": "A", "population": 1})]))
    assert (await Agent(model(script2), output_type=[str, City]).run("x")).output == City("A", 1)


async def test_custom_output_tool_name() -> None:
    script = Script(ModelResponse(parts=[call("answer", {"name": "A", "population": 1})]))
    result = await Agent(model(script), output_type=ToolOutput(City, name="answer", description="d")).run("x")
    assert result.output == City("A", 1)
    assert script.infos[0].output_tools[0].description == "d"


async def test_plain_text_when_tool_output_required_gets_retry() -> None:
    script = Script(
        text("no tool"), ModelResponse(parts=[call("final_result", {"name": "A", "population": 1})])
    )
    result = await Agent(model(script), output_type=City).run("x")
    assert result.output == City("A", 1)
    assert recorded(result.all_messages()) == snapshot(
        [
            {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "x"}], "run_id": "run-1"},
            {
                "kind": "response",
                "parts": [{"part_kind": "text", "content": "no tool"}],
                "usage": {"input_tokens": 51, "output_tokens": 2},
                "model_name": "function",
                "provider_name": "function",
                "run_id": "run-1",
            },
            {
                "kind": "request",
                "parts": [
                    {
                        "part_kind": "retry-prompt",
                        "content": "Plain text responses are not permitted, please include your response in a tool call",
                        "tool_call_id": "call-1",
                    }
                ],
                "run_id": "run-1",
            },
            {
                "kind": "response",
                "parts": [
                    {
                        "part_kind": "tool-call",
                        "tool_name": "final_result",
                        "args": {"name": "A", "population": 1},
                        "tool_call_id": "o1",
                    }
                ],
                "usage": {"input_tokens": 67, "output_tokens": 5},
                "model_name": "function",
                "provider_name": "function",
                "run_id": "run-1",
            },
            {
                "kind": "request",
                "parts": [
                    {
                        "part_kind": "tool-return",
                        "tool_name": "final_result",
                        "content": "Final result processed.",
                        "tool_call_id": "o1",
                    }
                ],
                "run_id": "run-1",
            },
        ]
    )


async def test_invalid_output_args_retry_with_details() -> None:
    script = Script(
        ModelResponse(parts=[call("final_result", {"name": "A"}, "bad")]),
        ModelResponse(parts=[call("final_result", {"name": "A", "population": 1}, "good")]),
    )
    result = await Agent(model(script), output_type=City).run("x")
    assert recorded(result.all_messages()) == snapshot(
        [
            {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "x"}], "run_id": "run-1"},
            {
                "kind": "response",
                "parts": [
                    {
                        "part_kind": "tool-call",
                        "tool_name": "final_result",
                        "args": {"name": "A"},
                        "tool_call_id": "bad",
                    }
                ],
                "usage": {"input_tokens": 51, "output_tokens": 3},
                "model_name": "function",
                "provider_name": "function",
                "run_id": "run-1",
            },
            {
                "kind": "request",
                "parts": [
                    {
                        "part_kind": "retry-prompt",
                        "content": [
                            {
                                "type": "invalid_argument",
                                "loc": [],
                                "msg": "Object missing required field `population`",
                            }
                        ],
                        "tool_name": "final_result",
                        "tool_call_id": "bad",
                    }
                ],
                "run_id": "run-1",
            },
            {
                "kind": "response",
                "parts": [
                    {
                        "part_kind": "tool-call",
                        "tool_name": "final_result",
                        "args": {"name": "A", "population": 1},
                        "tool_call_id": "good",
                    }
                ],
                "usage": {"input_tokens": 59, "output_tokens": 5},
                "model_name": "function",
                "provider_name": "function",
                "run_id": "run-1",
            },
            {
                "kind": "request",
                "parts": [
                    {
                        "part_kind": "tool-return",
                        "tool_name": "final_result",
                        "content": "Final result processed.",
                        "tool_call_id": "good",
                    }
                ],
                "run_id": "run-1",
            },
        ]
    )


@pytest.mark.parametrize(("retries", "failures", "ok"), [(2, 2, True), (2, 3, False)])
async def test_output_retries_exact_and_exhausted(retries: int, failures: int, ok: bool) -> None:
    bad = [ModelResponse(parts=[call("final_result", {"name": "A"})]) for _ in range(failures)]
    script = Script(*bad, ModelResponse(parts=[call("final_result", {"name": "A", "population": 1})]))
    agent = Agent(model(script), output_type=City, output_retries=retries)
    if ok:
        assert (await agent.run("x")).output == City("A", 1)
    else:
        with pytest.raises(OutputRetriesExceeded, match="more than 2 times") as info:
            await agent.run("x")
        state = run_state_of(info.value)
        assert state is not None
        assert state.output_retries == 3


# --- native and prompted ---------------------------------------------------------------------------


async def test_native_output() -> None:
    script = Script(text('{"name": "Rome", "population": 2800000}'))
    result = await Agent(model(script), output_type=NativeOutput(City, strict=True)).run("x")
    assert result.output == City("Rome", 2800000)
    fmt = script.infos[0].output
    assert isinstance(fmt, JsonSchemaFormat)
    assert fmt.name == "City"
    assert fmt.strict is True
    assert fmt.schema["required"] == ["name", "population"]
    assert script.infos[0].output_tools == ()


async def test_native_union_becomes_any_of() -> None:
    script = Script(text('{"bark": "woof"}'))
    result = await Agent(model(script), output_type=NativeOutput([Cat, Dog])).run("x")
    assert result.output == Dog("woof")
    fmt = script.infos[0].output
    assert isinstance(fmt, JsonSchemaFormat)
    assert len(fmt.schema["anyOf"]) == 2


async def test_native_scalar_is_wrapped() -> None:
    script = Script(text('{"value": 7}'))
    assert (await Agent(model(script), output_type=NativeOutput(int)).run("x")).output == 7


async def test_native_invalid_json_gets_retry() -> None:
    script = Script(text("not json"), text('{"name": "A", "population": 1}'))
    result = await Agent(model(script), output_type=NativeOutput(City)).run("x")
    assert result.output == City("A", 1)
    retry = result.all_messages()[2].parts[0]
    assert isinstance(retry, RetryPromptPart)
    assert "not valid JSON" in retry.content


async def test_prompted_output_uses_json_object_mode_when_supported() -> None:
    script = Script(text('Here:\n```json\n{"name": "A", "population": 1}\n```'))
    result = await Agent(model(script), output_type=PromptedOutput(City), instructions="Be nice.").run("x")
    assert result.output == City("A", 1)
    info = script.infos[0]
    assert isinstance(info.output, JsonObjectFormat)
    assert info.instructions is not None
    assert info.instructions.startswith("Be nice.\n\nAlways respond with a JSON object")
    assert '"population"' in info.instructions


async def test_prompted_output_text_mode_and_template() -> None:
    script = Script(text('{"name": "A", "population": 1}'))
    agent = Agent(
        model(script, supports_json_object_output=False),
        output_type=PromptedOutput(City, template="Schema: {schema}"),
    )
    assert (await agent.run("x")).output == City("A", 1)
    assert isinstance(script.infos[0].output, TextFormat)
    assert script.infos[0].instructions is not None
    assert script.infos[0].instructions.startswith("Schema: {")
    with pytest.raises(OutputSpecError, match="schema"):
        PromptedOutput(City, template="no marker")


@pytest.mark.parametrize(
    ("profile", "expected"),
    [
        ({"default_structured_output_mode": "tool"}, "tool"),
        ({"default_structured_output_mode": "native"}, "native"),
        ({"default_structured_output_mode": "prompted"}, "prompted"),
        ({"default_structured_output_mode": "tool", "supports_tools": False}, "native"),
        ({"default_structured_output_mode": "native", "supports_json_schema_output": False}, "tool"),
        ({"supports_tools": False, "supports_json_schema_output": False}, "prompted"),
    ],
)
async def test_default_mode_comes_from_the_profile(profile: dict[str, Any], expected: str) -> None:
    responses = {
        "tool": ModelResponse(parts=[call("final_result", {"name": "A", "population": 1})]),
        "native": text('{"name": "A", "population": 1}'),
        "prompted": text('{"name": "A", "population": 1}'),
    }
    script = Script(responses[expected])
    result = await Agent(model(script, **profile), output_type=City).run("x")
    assert result.output == City("A", 1)
    info = script.infos[0]
    mode = (
        "tool" if info.output_tools else "native" if isinstance(info.output, JsonSchemaFormat) else "prompted"
    )
    assert mode == expected


async def test_explicit_mode_unsupported_fails_before_request() -> None:
    script = Script(text("x"))
    agent = Agent(model(script, supports_json_schema_output=False), output_type=NativeOutput(City))
    with pytest.raises(OutputSpecError, match="native JSON-schema"):
        await agent.run("x")
    assert script.infos == []
    with pytest.raises(OutputSpecError, match="mixes"):
        Agent(model(script), output_type=[NativeOutput(City), ToolOutput(Cat)])


# --- functions and validators ------------------------------------------------------------------------


async def test_output_function() -> None:
    def make_city(ctx: RunContext[int], name: str, population: int) -> City:
        """Build the city."""
        if population < 0:
            raise ModelRetry("population must be positive")
        return City(name.upper(), population * ctx.deps)

    script = Script(
        ModelResponse(parts=[call("final_result", {"name": "a", "population": -1})]),
        ModelResponse(parts=[call("final_result", {"name": "a", "population": 2})]),
    )
    result = await Agent(model(script), output_type=make_city, deps_type=int).run("x", deps=10)
    assert result.output == City("A", 20)
    assert script.infos[0].output_tools[0].description == "Build the city."
    retry = result.all_messages()[2].parts[0]
    assert isinstance(retry, RetryPromptPart)
    assert retry.content == "population must be positive"


async def test_output_function_error_fails_the_run() -> None:
    def explode(x: int) -> int:
        raise RuntimeError("boom")

    script = Script(ModelResponse(parts=[call("final_result", {"x": 1})]))
    with pytest.raises(RuntimeError, match="boom"):
        await Agent(model(script), output_type=explode).run("x")


async def test_text_output_function() -> None:
    script = Script(text("hello"))
    result = await Agent(model(script), output_type=TextOutput(str.upper)).run("x")
    assert result.output == "HELLO"


async def test_validators_run_in_order_transform_and_retry() -> None:
    order: list[str] = []
    script = Script(text("bad"), text("good"))
    agent = Agent(model(script))

    @agent.output_validator
    def first(ctx: RunContext[None], output: str) -> str:
        order.append(f"first:{output}")
        if output == "bad":
            raise ModelRetry("say good")
        return output + "!"

    @agent.output_validator
    async def second(output: str) -> str:
        order.append(f"second:{output}")
        return output.upper()

    result = await agent.run("x")
    assert result.output == "GOOD!"
    assert order == ["first:bad", "first:good", "second:good!"]
    retry = result.all_messages()[2].parts[0]
    assert isinstance(retry, RetryPromptPart)
    assert retry.content == "say good"


async def test_transformed_structured_output_is_revalidated() -> None:
    script = Script(
        ModelResponse(parts=[call("final_result", {"name": "A", "population": 1})]),
        ModelResponse(parts=[call("final_result", {"name": "B", "population": 2})]),
    )
    calls = 0

    def corrupt(output: City) -> Any:
        nonlocal calls
        calls += 1
        return {"name": "X"} if calls == 1 else City(output.name, output.population + 1)

    agent = Agent(model(script), output_type=City, output_validators=[corrupt])
    result = await agent.run("x")
    assert result.output == City("B", 3)


async def test_validator_exception_fails_the_run() -> None:
    def broken(output: str) -> str:
        raise ValueError("validator bug")

    with pytest.raises(ValueError, match="validator bug"):
        await Agent(model(Script(text("x"))), output_validators=[broken]).run("x")


async def test_structured_dict_output() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}, "required": ["n"]}
    script = Script(
        ModelResponse(parts=[call("final_result", {"n": 0}, "a")]),
        ModelResponse(parts=[call("final_result", {"n": 2}, "b")]),
    )
    result = await Agent(model(script), output_type=StructuredDict(schema)).run("x")
    assert result.output == {"n": 2}
    assert isinstance(result.all_messages()[2].parts[0], RetryPromptPart)


# --- empty responses and end strategies ---------------------------------------------------------------


async def test_empty_response_retry_then_error() -> None:
    script = Script(ModelResponse(parts=[]), text("now text"))
    result = await Agent(model(script), output_retries=1).run("x")
    assert result.output == "now text"
    assert recorded(result.all_messages()) == snapshot(
        [
            {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "x"}], "run_id": "run-1"},
            {
                "kind": "response",
                "parts": [],
                "usage": {"input_tokens": 51},
                "model_name": "function",
                "provider_name": "function",
                "run_id": "run-1",
            },
            {
                "kind": "request",
                "parts": [
                    {
                        "part_kind": "retry-prompt",
                        "content": "Your response was empty. Respond with text or call a tool.",
                        "tool_call_id": "call-1",
                    }
                ],
                "run_id": "run-1",
            },
            {
                "kind": "response",
                "parts": [{"part_kind": "text", "content": "now text"}],
                "usage": {"input_tokens": 62, "output_tokens": 2},
                "model_name": "function",
                "provider_name": "function",
                "run_id": "run-1",
            },
        ]
    )
    script = Script(ModelResponse(parts=[]), ModelResponse(parts=[TextPart("  ")]))
    with pytest.raises(EmptyResponseError):
        await Agent(model(script), output_retries=1).run("x")


def _mixed_response() -> ModelResponse:
    return ModelResponse(
        parts=[
            ToolCallPart(tool_name="before", args={}, tool_call_id="b"),
            ToolCallPart(tool_name="final_result", args={"name": "bad"}, tool_call_id="o_bad"),
            ToolCallPart(tool_name="final_result", args={"name": "A", "population": 1}, tool_call_id="o_ok"),
            ToolCallPart(tool_name="after", args={}, tool_call_id="a"),
            ToolCallPart(
                tool_name="final_result", args={"name": "B", "population": 2}, tool_call_id="o_late"
            ),
        ]
    )


SKIPPED = "Tool not executed - a final result was already processed."


@pytest.mark.parametrize(
    ("strategy", "ran", "before_result", "after_result"),
    [
        ("graceful", ["before"], "b", SKIPPED),
        ("early", [], SKIPPED, SKIPPED),
        ("exhaustive", ["before", "after"], "b", "a"),
    ],
)
async def test_end_strategies(strategy: Any, ran: list[str], before_result: str, after_result: str) -> None:
    executed: list[str] = []

    def before() -> str:
        executed.append("before")
        return "b"

    def after() -> str:
        executed.append("after")
        return "a"

    script = Script(_mixed_response())
    agent = Agent(model(script), output_type=City, tools=[before, after], end_strategy=strategy)
    result = await agent.run("x")
    assert result.output == City("A", 1)
    assert sorted(executed) == sorted(ran)
    # The closing request: every call's result in call order, the skipped ones saying why.
    assert recorded(result.all_messages()[-1:]) == [
        {
            "kind": "request",
            "parts": [
                {
                    "part_kind": "tool-return",
                    "tool_name": "before",
                    "content": before_result,
                    "tool_call_id": "call-1",
                },
                {
                    "part_kind": "retry-prompt",
                    "content": [
                        {
                            "type": "invalid_argument",
                            "loc": [],
                            "msg": "Object missing required field `population`",
                        }
                    ],
                    "tool_name": "final_result",
                    "tool_call_id": "call-2",
                },
                {
                    "part_kind": "tool-return",
                    "tool_name": "final_result",
                    "content": "Final result processed.",
                    "tool_call_id": "call-3",
                },
                {
                    "part_kind": "tool-return",
                    "tool_name": "after",
                    "content": after_result,
                    "tool_call_id": "call-4",
                },
                {
                    "part_kind": "tool-return",
                    "tool_name": "final_result",
                    "content": "Output tool not used - a final result was already processed.",
                    "tool_call_id": "call-5",
                },
            ],
            "run_id": "run-1",
        }
    ]


async def test_text_before_tool_calls_is_not_the_answer() -> None:
    script = Script(
        ModelResponse(
            parts=[TextPart("Let me check."), ToolCallPart(tool_name="lookup", args={}, tool_call_id="l")]
        ),
        text("It is sunny."),
    )

    def lookup() -> str:
        return "sunny"

    result = await Agent(model(script), tools=[lookup]).run("x")
    assert result.output == "It is sunny."
    assert result.usage.requests == 2


async def test_test_model_produces_schema_valid_output() -> None:
    class Report(msgspec.Struct):
        title: str
        items: list[int]
        score: float = 1.0

    calls: list[str] = []

    def lookup(q: str) -> str:
        calls.append(q)
        return "r"

    result = await Agent(TestModel(), output_type=Report, tools=[lookup]).run("x")
    assert isinstance(result.output, Report)
    assert calls == ["a"]
    native = await Agent(TestModel(), output_type=NativeOutput(Report)).run("x")
    assert isinstance(native.output, Report)
    prompted = await Agent(TestModel(), output_type=PromptedOutput(Report)).run("x")
    assert isinstance(prompted.output, Report)
    custom = await Agent(TestModel(custom_output_args={"title": "t", "items": [1]}), output_type=Report).run(
        "x"
    )
    assert custom.output == Report("t", [1])
    assert json.loads((await Agent(TestModel(), tools=[lookup]).run("x")).output) == {"lookup": "r"}


def test_output_spec_errors() -> None:
    with pytest.raises(OutputSpecError, match="None"):
        Agent(TestModel(), output_type=None)  # pyright: ignore[reportArgumentType]  # the refusal under test
    with pytest.raises(OutputSpecError):
        Agent(TestModel(), output_type=[TextOutput(str.upper), TextOutput(str.lower)])


async def test_model_without_tools_cannot_mix_text_and_structured() -> None:
    agent = Agent(FunctionModel(lambda m, i: text("x"), profile=ModelProfile()), output_type=[str, City])
    with pytest.raises(OutputSpecError, match="does not support tools"):
        await agent.run("x")


async def test_output_tool_name_clash_is_reported() -> None:
    def final_result() -> str:
        return ""

    agent = Agent(model(Script(text("x"))), output_type=City, tools=[final_result])
    with pytest.raises(Exception, match="clashes with a function tool"):
        await agent.run("x")
