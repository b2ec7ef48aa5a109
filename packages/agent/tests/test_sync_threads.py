"""Sync tools run on worker threads bounded per agent: hung calls of one agent never stall another."""

from __future__ import annotations

import threading
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Sequence

import anyio
import anyio.lowlevel
import anyio.to_thread
import pytest

from ferrule.agent import Agent
from ferrule.agent import RunContext
from ferrule.agent import Tool
from ferrule.agent import ToolLimits
from ferrule.agent import ToolThreads
from ferrule.agent.exceptions import ToolThreadsExhaustedError
from ferrule.agent.exceptions import run_state_of
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart

from ._support import request_parts

pytestmark = pytest.mark.anyio

# A guard so that a regression fails the test instead of hanging the suite; nothing is timed.
GUARD_SECONDS = 60


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set at the end of each test, so that every hung tool thread returns."""
    event = threading.Event()
    yield event
    event.set()


def hanging(release: threading.Event) -> tuple[threading.Event, Callable[[], str]]:
    """A sync function that blocks until `release` is set, and an event set once it has started."""
    started = threading.Event()

    def hang() -> str:
        started.set()
        release.wait()
        return "late"

    return started, hang


def calls_then_text(name: str, count: int, rounds: int = 1) -> FunctionModel:
    """A model that calls `name` `count` times in parallel for `rounds` responses, then answers."""
    seen: list[int] = []

    def respond(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        seen.append(1)
        if len(seen) <= rounds:
            return ModelResponse(
                parts=[
                    ToolCallPart(tool_name=name, args={}, tool_call_id=f"{name}-{len(seen)}-{i}")
                    for i in range(count)
                ]
            )
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(respond)


async def test_hung_sync_calls_of_one_agent_do_not_block_another_agents_sync_tool(
    release: threading.Event,
) -> None:
    _, hang = hanging(release)
    # As many hung calls as an agent has threads (the default 40): with one shared pool, no other
    # sync tool in the process could run after this.
    hung = Agent(
        calls_then_text("hang", 40),
        name="hung",
        tools=[Tool(hang, side_effect="read_only", timeout=0.05)],
        tool_limits=ToolLimits(max_concurrency=64),
        retries=5,
    )
    with anyio.fail_after(GUARD_SECONDS):
        result = await hung.run("go")
    assert result.output == "done"
    answers = [p for m in result.all_messages() if isinstance(m, ModelRequest) for p in m.parts]
    assert sum(isinstance(p, RetryPromptPart) and "timed out" in str(p.content) for p in answers) == 40
    assert hung._core.threads.abandoned == 40

    ran: list[str] = []

    def lookup() -> str:
        ran.append(threading.current_thread().name)
        return "found"

    other = Agent(calls_then_text("lookup", 1), name="other", tools=[lookup])
    with anyio.fail_after(GUARD_SECONDS):
        result = await other.run("go")
    assert result.output == "done"
    assert ran == ["ferrule-tool"]


async def test_a_full_set_of_abandoned_threads_fails_with_a_clear_error(release: threading.Event) -> None:
    _, hang = hanging(release)
    agent = Agent(
        calls_then_text("hang", 2, rounds=2),
        name="support",
        tools=[Tool(hang, side_effect="read_only", timeout=0.05)],
        tool_limits=ToolLimits(max_sync_threads=2),
        retries=5,
    )
    with anyio.fail_after(GUARD_SECONDS), pytest.raises(ToolThreadsExhaustedError) as caught:
        await agent.run("go")
    message = str(caught.value)
    assert message.startswith(
        "all 2 worker threads for the sync tools of agent 'support' are held by calls that timed out "
        "or were cancelled and are still running ('hang' x2); no sync tool of agent 'support' can run "
        "until one of them returns."
    )
    assert "ToolLimits.max_sync_threads" in message
    state = run_state_of(caught.value)
    assert state is not None
    last = state.messages[-1]
    assert isinstance(last, ModelRequest)
    assert last.state == "interrupted"


async def test_calls_wait_for_a_busy_thread_instead_of_failing() -> None:
    lock = threading.Lock()
    running: list[int] = [0]
    most: list[int] = [0]

    def work(ctx: RunContext[None]) -> str:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        try:
            return f"ok {ctx.tool_call_id}"
        finally:
            with lock:
                running[0] -= 1

    agent = Agent(
        calls_then_text("work", 6),
        tools=[Tool(work, side_effect="read_only")],
        tool_limits=ToolLimits(max_sync_threads=1),
    )
    with anyio.fail_after(GUARD_SECONDS):
        result = await agent.run("go")
    returns = request_parts(result.all_messages(), ToolReturnPart)
    assert [p.content for p in returns] == [f"ok work-1-{i}" for i in range(6)]
    assert most == [1]


async def test_an_abandoned_call_gives_its_thread_back_when_it_returns(release: threading.Event) -> None:
    threads = ToolThreads(1, owner="the test")
    started, hang = hanging(release)
    with anyio.move_on_after(0.05):
        await threads.run(hang, (), {}, name="hang")
    assert started.is_set()
    assert (threads.running, threads.abandoned) == (1, 1)
    with pytest.raises(
        ToolThreadsExhaustedError, match=r"all 1 worker threads for the sync tools of the test"
    ):
        await threads.run(lambda: "x", (), {}, name="quick")
    release.set()
    with anyio.fail_after(GUARD_SECONDS):
        # The hung call returns in its own thread, which signals no event loop: poll until it has.
        while threads.running:  # noqa: ASYNC110
            await anyio.sleep(0.001)
    assert (threads.running, threads.abandoned) == (0, 0)
    assert await threads.run(lambda: "x", (), {}, name="quick") == "x"


async def test_a_waiting_call_fails_once_every_thread_it_waits_for_is_abandoned(
    release: threading.Event,
) -> None:
    threads = ToolThreads(1, owner="the test")
    started, hang = hanging(release)
    outcome: list[BaseException] = []

    async def second() -> None:
        try:
            await threads.run(lambda: "x", (), {}, name="quick")
        except ToolThreadsExhaustedError as exc:
            outcome.append(exc)

    first = anyio.CancelScope()

    async def run_first() -> None:
        with first:
            await threads.run(hang, (), {}, name="hang")

    with anyio.fail_after(GUARD_SECONDS):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run_first)
            await anyio.to_thread.run_sync(started.wait, abandon_on_cancel=True)
            tg.start_soon(second)
            while not threads._waiters:
                await anyio.lowlevel.checkpoint()
            first.cancel()  # the only running call is abandoned: the waiter must not wait on
    assert len(outcome) == 1
    assert "('hang')" in str(outcome[0])


async def test_sync_functions_keep_the_callers_context_variables() -> None:
    import contextvars

    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    threads = ToolThreads(2)
    var.set("caller")
    assert await threads.run(var.get, (), {}, name="get") == "caller"


async def test_exceptions_of_sync_functions_reach_the_caller() -> None:
    threads = ToolThreads(1)

    def boom() -> None:
        raise LookupError("nope")

    with pytest.raises(LookupError, match="nope"):
        await threads.run(boom, (), {}, name="boom")
    assert threads.running == 0


def test_limits_are_validated() -> None:
    with pytest.raises(ValueError, match="max_sync_threads must be at least 1"):
        ToolLimits(max_sync_threads=0)
    with pytest.raises(ValueError, match="at least 1"):
        ToolThreads(0)
    tightened = ToolLimits(max_sync_threads=3).tightened(ToolLimits(max_sync_threads=50))
    assert tightened.max_sync_threads == 3  # agent-level: a tool's limits never change it
