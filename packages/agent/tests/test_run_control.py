"""Run control: deadlines and cancellation across model calls, retries, tools and validators."""

from __future__ import annotations

from collections.abc import AsyncIterator
from collections.abc import Callable
from collections.abc import Sequence

import anyio
import pytest

from ferrule.agent import Agent
from ferrule.agent import RetryPolicy
from ferrule.agent import Tool
from ferrule.agent import run_state_of
from ferrule.agent.exceptions import RunTimeoutError
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.errors import AuthenticationError
from ferrule.core.errors import RateLimitError
from ferrule.core.errors import ServerError
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.settings import ModelSettings
from tests.support.scripts import Script
from tests.support.scripts import text

from ._support import Hang

pytestmark = pytest.mark.anyio


def one_call(name: str, call_id: str = "c1") -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(tool_name=name, args={}, tool_call_id=call_id)])


class Failing:
    """A model function that raises a fresh `error()` at every request; `attempts` counts them."""

    def __init__(self, error: Callable[[], Exception]) -> None:
        self.error = error
        self.attempts = 0

    def __call__(self, messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        self.attempts += 1
        raise self.error()


async def test_deadline_inside_a_tool_cancels_and_records_unknown_outcome() -> None:
    transfer = Hang()
    agent = Agent(
        FunctionModel(Script(one_call("transfer"))), tools=[transfer.tool("transfer")], run_timeout=0.1
    )
    with anyio.fail_after(5):
        with pytest.raises(RunTimeoutError) as info:
            await agent.run("x")
    assert transfer.cancelled.is_set()
    state = run_state_of(info.value)
    assert state is not None
    assert [c.tool_call_id for c in state.unknown_outcomes] == ["c1"]
    closing = state.messages[-1]
    assert isinstance(closing, ModelRequest)
    part = closing.parts[0]
    assert isinstance(part, ToolReturnPart)
    assert part.outcome == "interrupted"
    assert "outcome is unknown" in part.content


async def test_deadline_inside_a_read_only_tool_is_just_interrupted() -> None:
    async def lookup() -> str:
        await anyio.sleep(10)
        return "x"

    agent = Agent(FunctionModel(Script(one_call("lookup"))), tools=[Tool(lookup, side_effect="read_only")])
    with pytest.raises(RunTimeoutError) as info:
        await agent.run("x", timeout=0.05)
    state = run_state_of(info.value)
    assert state is not None
    assert state.unknown_outcomes == []


async def test_deadline_during_model_request() -> None:
    async def slow(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        await anyio.sleep(10)
        return text("late")

    with pytest.raises(RunTimeoutError):
        await Agent(FunctionModel(slow)).run("x", timeout=0.05)


async def test_deadline_during_streaming_and_output_validation() -> None:
    async def stream(messages: Sequence[Message], info: AgentInfo) -> AsyncIterator[str]:
        yield "a"
        await anyio.sleep(10)
        yield "b"

    with pytest.raises(RunTimeoutError):
        async with Agent(FunctionModel(stream_function=stream)).run_stream("x", timeout=0.05) as s:
            await s.get_output()

    async def slow_validator(output: str) -> str:
        await anyio.sleep(10)
        return output

    agent = Agent(FunctionModel(Script(text("x"))), output_validators=[slow_validator])
    with pytest.raises(RunTimeoutError):
        await agent.run("x", timeout=0.05)


async def test_run_timeout_is_tightened_by_per_run_timeout() -> None:
    async def slow(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        await anyio.sleep(0.3)
        return text("ok")

    agent = Agent(FunctionModel(slow), run_timeout=10)
    with pytest.raises(RunTimeoutError):
        await agent.run("x", timeout=0.05)
    assert (await agent.run("x")).output == "ok"


async def test_outer_cancellation_drains_tools() -> None:
    hang = Hang()
    script = Script(
        ModelResponse(parts=[ToolCallPart(tool_name="hang", args={}, tool_call_id=f"h{i}") for i in range(3)])
    )
    agent = Agent(FunctionModel(script), tools=[hang.tool("hang")])
    async with anyio.create_task_group() as tg:
        tg.start_soon(agent.run, "x")
        await hang.started.wait()
        tg.cancel_scope.cancel()
    assert hang.cancelled.is_set()


async def test_transient_errors_are_retried_with_policy() -> None:
    attempts = 0

    def flaky(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            raise RateLimitError("slow down", retry_after=0.0)
        if attempts == 2:
            raise ServerError("oops")
        return text("ok")

    agent = Agent(FunctionModel(flaky), retry_policy=RetryPolicy(max_retries=2, initial_delay=0.001))
    result = await agent.run("x")
    assert result.output == "ok"
    assert attempts == 3
    assert result.usage.requests == 1


async def test_non_retryable_errors_and_exhausted_retries_propagate() -> None:
    denied = Failing(lambda: AuthenticationError("bad key"))
    with pytest.raises(AuthenticationError):
        await Agent(FunctionModel(denied), retry_policy=RetryPolicy(max_retries=5, initial_delay=0)).run("x")
    assert denied.attempts == 1

    always = Failing(lambda: ServerError("down"))
    with pytest.raises(ServerError) as info:
        await Agent(FunctionModel(always), retry_policy=RetryPolicy(max_retries=2, initial_delay=0)).run("x")
    assert always.attempts == 3
    state = run_state_of(info.value)
    assert state is not None
    assert state.usage.requests == 0


async def test_retry_wait_bounded_by_deadline() -> None:
    limited = Failing(lambda: RateLimitError("wait", retry_after=30))
    agent = Agent(FunctionModel(limited), retry_policy=RetryPolicy(max_retries=3, max_total_delay=None))
    with anyio.fail_after(5):
        with pytest.raises(RateLimitError) as info:
            await agent.run("x", timeout=2)
    assert limited.attempts == 1
    assert any("run deadline" in n for n in info.value.__notes__)


async def test_attempt_timeout_from_settings_is_retried() -> None:
    attempts = 0

    async def sometimes_slow(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            await anyio.sleep(10)
        return text("fast")

    agent = Agent(
        FunctionModel(sometimes_slow),
        model_settings=ModelSettings(timeout=0.05),
        retry_policy=RetryPolicy(max_retries=1, initial_delay=0),
    )
    assert (await agent.run("x")).output == "fast"
    assert attempts == 2


async def test_resumed_run_gets_a_fresh_deadline() -> None:
    def danger() -> str:
        return "ok"

    agent = Agent(
        FunctionModel(Script(one_call("danger"), text("done"))), tools=[Tool(danger, requires_approval=True)]
    )
    paused = await agent.run_until_pause("x", timeout=0.5)
    from ferrule.agent import Approved
    from ferrule.agent import Paused

    assert isinstance(paused, Paused)
    await anyio.sleep(0.6)  # the first invocation's budget is long gone
    result = await agent.resume(paused, {"c1": Approved()}, timeout=5)
    assert not isinstance(result, Paused)
    assert result.output == "done"
