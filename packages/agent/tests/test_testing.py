"""FunctionModel and TestModel are real models that follow the stream contract."""

from __future__ import annotations

from collections.abc import AsyncIterator
from collections.abc import Sequence

import msgspec
import pytest

from ferrule.agent import Agent
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import DeltaThinking
from ferrule.agent.testing import DeltaToolCall
from ferrule.agent.testing import DeltaToolCalls
from ferrule.agent.testing import FunctionModel
from ferrule.agent.testing import TestModel
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ThinkingPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.model import Model
from ferrule.core.model import ModelCall
from ferrule.core.model import ResponseCompleted

pytestmark = pytest.mark.anyio


def call() -> ModelCall:
    return ModelCall(messages=[ModelRequest.user_text_prompt("hi there")])


async def test_function_model_sync_and_async() -> None:
    def sync(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart("sync")])

    async def asynchronous(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart("async")])

    for fn, expected in ((sync, "sync"), (asynchronous, "async")):
        model = FunctionModel(fn)
        assert isinstance(model, Model)
        response = await model.request(call())
        assert response.text == expected
        assert response.model_name == f"function:{fn.__name__}"
        assert response.usage.input_tokens > 0
        events = [e async for e in model.stream(call())]
        assert isinstance(events[-1], ResponseCompleted)
        assert events[-1].response.text == expected


async def test_function_model_stream_function_builds_the_complete_response() -> None:
    async def stream(
        messages: Sequence[Message], info: AgentInfo
    ) -> AsyncIterator[str | DeltaToolCalls | DeltaThinking]:
        yield DeltaThinking(content="hmm", signature="sig")
        yield "Hello "
        yield "world"
        yield {0: DeltaToolCall(name="t", json_args='{"a"', tool_call_id="c0")}
        yield {1: DeltaToolCall(name="u", json_args="{}", tool_call_id="c1")}
        yield {0: DeltaToolCall(json_args=": 1}")}

    model = FunctionModel(stream_function=stream)
    events = [e async for e in model.stream(call())]
    final = events[-1]
    assert isinstance(final, ResponseCompleted)
    response = final.response
    assert isinstance(response.parts[0], ThinkingPart)
    assert response.parts[0].signature == "sig"
    assert response.text == "Hello world"
    calls = [p for p in response.parts if isinstance(p, ToolCallPart)]
    assert [(c.tool_name, c.args, c.tool_call_id) for c in calls] == [
        ("t", '{"a": 1}', "c0"),
        ("u", "{}", "c1"),
    ]
    assert response.finish_reason == "tool_call"
    # A buffered request on a stream-only model consumes the stream.
    assert (await model.request(call())).text == "Hello world"


async def test_function_model_rejects_bad_output() -> None:
    with pytest.raises(TypeError):
        FunctionModel()
    model = FunctionModel(lambda m, i: "not a response")  # type: ignore[arg-type,return-value]
    with pytest.raises(TypeError, match="ModelResponse"):
        await model.request(call())


async def test_test_model_calls_each_tool_once_then_answers() -> None:
    seen: list[tuple[str, int]] = []

    def search(query: str, limit: int = 3) -> str:
        seen.append((query, limit))
        return "found"

    async def count(n: int) -> int:
        return n + 1

    model = TestModel()
    result = await Agent(model, tools=[search, count]).run("x")
    assert seen == [("a", 3)]
    assert msgspec.json.decode(result.output) == {"search": "found", "count": 1}
    assert result.usage.requests == 2
    only = await Agent(TestModel(call_tools=["count"], custom_output_text="bye"), tools=[search, count]).run(
        "x"
    )
    assert only.output == "bye"
    assert seen == [("a", 3)]


async def test_test_model_streams() -> None:
    async with Agent(TestModel(custom_output_text="one two three")).run_stream("x") as stream:
        chunks = [c async for c in stream.stream_text(delta=True)]
    assert chunks == ["one", " two", " three"]
