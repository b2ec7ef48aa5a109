"""Lifecycle hooks: one ordered synchronous event stream; a failing hook stops the run."""

from __future__ import annotations

from collections.abc import AsyncIterator
from collections.abc import Sequence

import msgspec
import pytest

from ferrule.agent import Agent
from ferrule.agent import HookEvent
from ferrule.agent import ModelRetry
from ferrule.agent import run_state_of
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import DeltaToolCalls
from ferrule.agent.testing import FunctionModel
from ferrule.core.errors import UserError
from ferrule.core.messages import Message
from ferrule.core.messages import ModelResponse
from tests.support.scripts import Script
from tests.support.scripts import call
from tests.support.scripts import text

pytestmark = pytest.mark.anyio


def add(a: int, b: int) -> int:
    """Add."""
    return a + b


class Log:
    def __init__(self) -> None:
        self.events: list[HookEvent] = []

    def __call__(self, event: HookEvent) -> None:
        self.events.append(event)

    @property
    def kinds(self) -> list[str]:
        return [e.kind for e in self.events if not e.kind.startswith("stream_event")]


class Boom(Exception):
    pass


async def test_events_of_a_tool_run_in_order() -> None:
    log = Log()
    agent = Agent(FunctionModel(Script(call("add", {"a": 1, "b": 2}), text("3"))), tools=[add], hooks=[log])
    result = await agent.run("go")
    assert log.kinds == [
        "run_start",
        "model_request_start",
        "model_request_end",
        "tool_dispatch_start",
        "tool_execute_start",
        "tool_execute_end",
        "tool_dispatch_end",
        "model_request_start",
        "model_request_end",
        "output_validation_start",
        "output_validation_end",
        "run_end",
    ]
    by_kind = {e.kind: e for e in log.events}
    assert all(e.run_id == result.run_id for e in log.events)
    assert by_kind["model_request_start"].call is not None
    assert by_kind["tool_execute_start"].tool_call is not None
    assert by_kind["tool_execute_start"].args.a == 1
    end = by_kind["tool_execute_end"].result
    assert end is not None
    assert end.content == 3
    assert by_kind["run_end"].output == "3"
    assert by_kind["run_end"].usage is not None
    assert by_kind["run_end"].usage.requests == 2
    assert [e.run_step for e in log.events if e.kind == "model_request_start"] == [0, 1]


async def test_a_hook_that_raises_stops_the_run_and_run_error_is_emitted() -> None:
    log = Log()
    ran: list[int] = []

    def tracked(a: int, b: int) -> int:
        ran.append(a)
        return a + b

    def failing(event: HookEvent) -> None:
        if event.kind == "tool_execute_start":
            raise Boom("audit log unavailable")

    agent = Agent(
        FunctionModel(Script(call("tracked", {"a": 1, "b": 2}), text("3"))),
        tools=[tracked],
        hooks=[failing, log],
    )
    with pytest.raises(Boom, match="audit log unavailable") as caught:
        await agent.run("go")
    assert ran == []  # the tool never ran
    assert log.kinds[-1] == "run_error"
    assert log.events[-1].error is caught.value
    assert "tool_execute_start" not in log.kinds  # the failing hook came first and stopped delivery
    state = run_state_of(caught.value)
    assert state is not None
    assert state.usage.requests == 1


async def test_a_raising_run_error_hook_cannot_mask_the_failure() -> None:
    def failing(event: HookEvent) -> None:
        raise Boom(event.kind)

    agent = Agent(FunctionModel(Script()), hooks=[failing])
    with pytest.raises(Boom, match="run_start") as caught:
        await agent.run("go")
    assert any("also failed while handling run_error" in note for note in caught.value.__notes__)


async def test_model_failure_emits_request_error_then_run_error() -> None:
    log = Log()

    def broken(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        raise Boom("model down")

    with pytest.raises(Boom):
        await Agent(FunctionModel(broken), hooks=[log]).run("go")
    assert log.kinds == ["run_start", "model_request_start", "model_request_error", "run_error"]
    assert isinstance(log.events[2].error, Boom)


async def test_tool_failure_emits_execute_and_dispatch_errors() -> None:
    log = Log()

    def explode() -> str:
        raise Boom("tool broke")

    with pytest.raises(Boom):
        await Agent(FunctionModel(Script(call("explode", {}))), tools=[explode], hooks=[log]).run("go")
    assert log.kinds[-4:] == ["tool_execute_start", "tool_execute_error", "tool_dispatch_error", "run_error"]


async def test_rejected_output_emits_validation_error() -> None:
    log = Log()

    def validator(output: str) -> str:
        if output == "bad":
            raise ModelRetry("try again")
        return output

    agent = Agent(
        FunctionModel(Script(text("bad"), text("good"))), hooks=[log], output_validators=[validator]
    )
    await agent.run("go")
    errors = [e for e in log.events if e.kind == "output_validation_error"]
    assert len(errors) == 1
    assert isinstance(errors[0].error, ModelRetry)
    assert errors[0].error.message == "try again"


async def test_structured_output_tool_emits_validation_events() -> None:
    class Point(msgspec.Struct):
        x: int

    log = Log()
    script = Script(call("final_result", {"x": "nope"}), call("final_result", {"x": 2}, "c2"))
    result = await Agent(FunctionModel(script), output_type=Point, hooks=[log]).run("go")
    assert result.output == Point(x=2)
    kinds = [k for k in log.kinds if k.startswith("output_validation")]
    assert kinds == [
        "output_validation_start",
        "output_validation_error",
        "output_validation_start",
        "output_validation_end",
    ]


async def test_delivered_stream_events_have_start_and_end() -> None:
    log = Log()

    async def stream(messages: Sequence[Message], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        yield "Hello "
        yield "world"

    agent = Agent(FunctionModel(stream_function=stream), hooks=[log])
    async with agent.run_stream("go") as run:
        delivered = [event async for event in run]
    starts = [e.event for e in log.events if e.kind == "stream_event_start"]
    ends = [e.event for e in log.events if e.kind == "stream_event_end"]
    assert starts == delivered
    assert ends == delivered
    assert log.kinds[-1] == "run_end"


async def test_async_hooks_are_refused() -> None:
    async def hook(event: HookEvent) -> None:
        return None

    with pytest.raises(UserError, match="synchronous"):
        Agent(FunctionModel(Script()), hooks=[hook])  # type: ignore[list-item]
