"""The parallel tool scheduler: concurrency and queue limits, timeouts, sequential tools, failures."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from inline_snapshot import snapshot

from ferrule.agent import Agent
from ferrule.agent import Tool
from ferrule.agent import ToolLimits
from ferrule.agent import run_state_of
from ferrule.agent.testing import FunctionModel
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.usage import UsageLimitExceeded
from ferrule.core.usage import UsageLimits
from tests.support.scripts import Script
from tests.support.scripts import recorded
from tests.support.scripts import text

from ._support import parts_at

pytestmark = pytest.mark.anyio


def many(name: str, count: int, args: Any = None) -> ModelResponse:
    return ModelResponse(
        parts=[
            ToolCallPart(
                tool_name=name, args=args if args is not None else {"i": i}, tool_call_id=f"{name}_{i}"
            )
            for i in range(count)
        ]
    )


class Gauge:
    """Counts calls running at the same time."""

    def __init__(self) -> None:
        self.active = 0
        self.peak = 0
        self.order: list[str] = []

    async def enter(self, label: str, delay: float = 0.01) -> None:
        self.active += 1
        self.peak = max(self.peak, self.active)
        self.order.append(f"start {label}")
        try:
            await anyio.sleep(delay)
        finally:
            self.active -= 1
            self.order.append(f"end {label}")


async def test_parallel_calls_run_concurrently_and_results_keep_call_order() -> None:
    gauge = Gauge()

    async def work(i: int) -> int:
        # Later calls finish first.
        await gauge.enter(str(i), 0.05 - i * 0.01)
        return i

    agent = Agent(FunctionModel(Script(many("work", 4))), tools=[work])
    result = await agent.run("x")
    parts = parts_at(result.all_messages())
    assert [p.content for p in parts] == [0, 1, 2, 3]
    assert [p.tool_call_id for p in parts] == ["work_0", "work_1", "work_2", "work_3"]
    assert gauge.peak == 4


@pytest.mark.parametrize(("limit", "calls"), [(3, 3), (3, 4)])
async def test_agent_concurrency_limit_exact_and_past(limit: int, calls: int) -> None:
    gauge = Gauge()

    async def work(i: int) -> int:
        await gauge.enter(str(i))
        return i

    agent = Agent(
        FunctionModel(Script(many("work", calls))),
        tools=[work],
        tool_limits=ToolLimits(max_concurrency=limit),
    )
    result = await agent.run("x")
    assert gauge.peak == min(limit, calls)
    assert [p.content for p in parts_at(result.all_messages())] == list(range(calls))


async def test_per_tool_concurrency_limit() -> None:
    gauge_a, gauge_b = Gauge(), Gauge()

    async def a(i: int) -> int:
        await gauge_a.enter(str(i))
        return i

    async def b(i: int) -> int:
        await gauge_b.enter(str(i))
        return i

    response = ModelResponse(parts=[*many("a", 4).parts, *many("b", 4).parts])
    tools = [Tool(a, limits=ToolLimits(max_concurrency=2)), Tool(b)]
    await Agent(FunctionModel(Script(response)), tools=tools).run("x")
    assert gauge_a.peak == 2
    assert gauge_b.peak == 4


@pytest.mark.parametrize(("calls", "overflow"), [(5, 0), (6, 1)])
async def test_agent_queue_limit_exact_and_past(calls: int, overflow: int) -> None:
    ran: list[int] = []

    async def work(i: int) -> int:
        ran.append(i)
        return i

    limits = ToolLimits(max_concurrency=2, max_queue=3)  # 5 calls fit
    agent = Agent(FunctionModel(Script(many("work", calls))), tools=[work], tool_limits=limits)
    result = await agent.run("x")
    parts = parts_at(result.all_messages())
    rejected = [p for p in parts if isinstance(p, RetryPromptPart)]
    assert len(rejected) == overflow
    assert len(ran) == calls - overflow
    if overflow:
        assert "rejected without running" in rejected[0].content
        assert rejected[0].tool_call_id == f"work_{calls - 1}"


async def test_per_tool_queue_limit() -> None:
    async def work(i: int) -> int:
        return i

    tool = Tool(work, limits=ToolLimits(max_concurrency=1, max_queue=1))
    result = await Agent(FunctionModel(Script(many("work", 3))), tools=[tool]).run("x")
    parts = parts_at(result.all_messages())
    assert [type(p) for p in parts] == [ToolReturnPart, ToolReturnPart, RetryPromptPart]


async def test_sequential_tool_runs_alone_among_parallel_ones() -> None:
    gauge = Gauge()
    seen_active_in_sequential: list[int] = []

    async def par(i: int) -> int:
        await gauge.enter(f"p{i}")
        return i

    async def seq(i: int) -> int:
        seen_active_in_sequential.append(gauge.active)
        gauge.order.append("seq")
        await anyio.sleep(0.01)
        seen_active_in_sequential.append(gauge.active)
        return i

    response = ModelResponse(
        parts=[
            ToolCallPart(tool_name="par", args={"i": 0}, tool_call_id="p0"),
            ToolCallPart(tool_name="par", args={"i": 1}, tool_call_id="p1"),
            ToolCallPart(tool_name="seq", args={"i": 2}, tool_call_id="s2"),
            ToolCallPart(tool_name="par", args={"i": 3}, tool_call_id="p3"),
        ]
    )
    agent = Agent(FunctionModel(Script(response)), tools=[par, Tool(seq, sequential=True)])
    result = await agent.run("x")
    assert seen_active_in_sequential == [0, 0]
    assert gauge.order.index("seq") > gauge.order.index("end p0")
    assert gauge.order.index("seq") > gauge.order.index("end p1")
    assert gauge.order.index("start p3") > gauge.order.index("seq")
    assert [p.tool_call_id for p in parts_at(result.all_messages())] == ["p0", "p1", "s2", "p3"]


async def test_timeout_of_read_only_tool_is_a_retry_prompt() -> None:
    async def slow() -> str:
        await anyio.sleep(10)
        return "never"

    agent = Agent(
        FunctionModel(Script(many("slow", 1, {}))), tools=[Tool(slow, timeout=0.05, side_effect="read_only")]
    )
    result = await agent.run("x")
    part = parts_at(result.all_messages())[0]
    assert isinstance(part, RetryPromptPart)
    assert "timed out after 0.05 seconds" in part.content
    assert result.unknown_outcomes == []


async def test_timeout_of_non_idempotent_tool_records_unknown_outcome_and_never_retries() -> None:
    calls = 0

    async def charge() -> str:
        nonlocal calls
        calls += 1
        await anyio.sleep(10)
        return "charged"

    agent = Agent(FunctionModel(Script(many("charge", 1, {}))), tools=[Tool(charge, timeout=0.05)])
    result = await agent.run("x")
    assert recorded(result.all_messages()) == snapshot(
        [
            {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "x"}], "run_id": "run-1"},
            {
                "kind": "response",
                "parts": [
                    {"part_kind": "tool-call", "tool_name": "charge", "args": {}, "tool_call_id": "charge_0"}
                ],
                "usage": {"input_tokens": 51, "output_tokens": 2},
                "model_name": "function",
                "provider_name": "function",
                "run_id": "run-1",
            },
            {
                "kind": "request",
                "parts": [
                    {
                        "part_kind": "tool-return",
                        "tool_name": "charge",
                        "content": "Tool 'charge' timed out after 0.05 seconds while running. Its outcome is unknown: it may or may not have taken effect. Do not assume it succeeded, and do not call it again without checking its effect first.",
                        "tool_call_id": "charge_0",
                        "metadata": {"ferrule_outcome": "unknown"},
                        "outcome": "interrupted",
                    }
                ],
                "run_id": "run-1",
            },
            {
                "kind": "response",
                "parts": [{"part_kind": "text", "content": "done"}],
                "usage": {"input_tokens": 90, "output_tokens": 1},
                "model_name": "function",
                "provider_name": "function",
                "run_id": "run-1",
            },
        ]
    )
    assert [c.tool_call_id for c in result.unknown_outcomes] == ["charge_0"]
    assert calls == 1


async def test_agent_wide_timeout_applies_to_every_tool() -> None:
    async def slow() -> str:
        await anyio.sleep(10)
        return "never"

    agent = Agent(
        FunctionModel(Script(many("slow", 1, {}))),
        tools=[Tool(slow, side_effect="idempotent")],
        tool_limits=ToolLimits(timeout=0.05),
    )
    part = parts_at((await agent.run("x")).all_messages())[0]
    assert isinstance(part, RetryPromptPart)


async def test_fatal_failure_cancels_and_drains_the_others() -> None:
    cancelled: list[int] = []
    finished: list[int] = []

    class Boom(Exception):
        pass

    async def work(i: int) -> int:
        if i == 1:
            await anyio.sleep(0.01)
            raise Boom("tool failed")
        try:
            await anyio.sleep(5)
        except anyio.get_cancelled_exc_class():
            cancelled.append(i)
            raise
        finished.append(i)
        return i

    agent = Agent(FunctionModel(Script(many("work", 4))), tools=[Tool(work, side_effect="read_only")])
    with pytest.raises(Boom) as info:
        await agent.run("x")
    assert sorted(cancelled) == [0, 2, 3]
    assert finished == []
    state = run_state_of(info.value)
    assert state is not None
    assert state.usage.tool_calls == 4
    # Every call has a result: the failed one, and the three it interrupted.
    assert recorded(state.messages) == snapshot(
        [
            {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "x"}], "run_id": "run-1"},
            {
                "kind": "response",
                "parts": [
                    {
                        "part_kind": "tool-call",
                        "tool_name": "work",
                        "args": {"i": 0},
                        "tool_call_id": "work_0",
                    },
                    {
                        "part_kind": "tool-call",
                        "tool_name": "work",
                        "args": {"i": 1},
                        "tool_call_id": "work_1",
                    },
                    {
                        "part_kind": "tool-call",
                        "tool_name": "work",
                        "args": {"i": 2},
                        "tool_call_id": "work_2",
                    },
                    {
                        "part_kind": "tool-call",
                        "tool_name": "work",
                        "args": {"i": 3},
                        "tool_call_id": "work_3",
                    },
                ],
                "usage": {"input_tokens": 51, "output_tokens": 12},
                "model_name": "function",
                "provider_name": "function",
                "run_id": "run-1",
            },
            {
                "kind": "request",
                "parts": [
                    {
                        "part_kind": "tool-return",
                        "tool_name": "work",
                        "content": "The call of 'work' was interrupted before it finished (Boom).",
                        "tool_call_id": "work_0",
                        "outcome": "interrupted",
                    },
                    {
                        "part_kind": "tool-return",
                        "tool_name": "work",
                        "content": "The tool failed with an unexpected error (Boom); the run stopped.",
                        "tool_call_id": "work_1",
                        "outcome": "failed",
                    },
                    {
                        "part_kind": "tool-return",
                        "tool_name": "work",
                        "content": "The call of 'work' was interrupted before it finished (Boom).",
                        "tool_call_id": "work_2",
                        "outcome": "interrupted",
                    },
                    {
                        "part_kind": "tool-return",
                        "tool_name": "work",
                        "content": "The call of 'work' was interrupted before it finished (Boom).",
                        "tool_call_id": "work_3",
                        "outcome": "interrupted",
                    },
                ],
                "run_id": "run-1",
                "state": "interrupted",
            },
        ]
    )
    assert any("run_state_of" in note for note in getattr(info.value, "__notes__", []))


async def test_fatal_failure_of_single_call_is_raised_unchanged() -> None:
    error = KeyError("missing")

    def broken() -> str:
        raise error

    with pytest.raises(KeyError) as info:
        await Agent(FunctionModel(Script(many("broken", 1, {}))), tools=[broken]).run("x")
    assert info.value is error
    state = run_state_of(info.value)
    assert state is not None
    assert len(state.messages) == 3


@pytest.mark.parametrize(("limit", "ok"), [(4, True), (3, False)])
async def test_max_tool_calls_per_run_exact_and_past(limit: int, ok: bool) -> None:
    ran = 0

    async def work(i: int) -> int:
        nonlocal ran
        ran += 1
        return i

    script = Script(many("work", 2), many("work", 2), text("done"))
    agent = Agent(FunctionModel(script), tools=[work], tool_limits=ToolLimits(max_tool_calls=limit))
    if ok:
        result = await agent.run("x")
        assert result.usage.tool_calls == 4
    else:
        with pytest.raises(UsageLimitExceeded, match="max_tool_calls"):
            await agent.run("x")
        assert ran == 2  # the second batch never started


async def test_usage_limits_tool_calls_limit_checked_before_the_batch() -> None:
    ran = 0

    async def work(i: int) -> int:
        nonlocal ran
        ran += 1
        return i

    agent = Agent(FunctionModel(Script(many("work", 3))), tools=[work])
    with pytest.raises(UsageLimitExceeded, match="tool_calls_limit"):
        await agent.run("x", usage_limits=UsageLimits(tool_calls_limit=2))
    assert ran == 0
    result = await Agent(FunctionModel(Script(many("work", 3))), tools=[work]).run(
        "x", usage_limits=UsageLimits(tool_calls_limit=3)
    )
    assert result.usage.tool_calls == 3
