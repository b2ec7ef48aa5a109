"""Stress: long tool loops, wide parallel steps, many concurrent runs, huge histories, no leaks.

Sized to stay well under a few seconds per backend so it runs in CI on every change.
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from ferrule.agent import Agent
from ferrule.agent import ToolLimits
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.messages import UserPromptPart
from ferrule.core.usage import UsageLimits

pytestmark = pytest.mark.anyio


def looping_model(steps: int) -> FunctionModel:
    def fn(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        count = int(last.parts[0].content) if isinstance(last.parts[0], ToolReturnPart) else 0
        if count >= steps:
            return ModelResponse(parts=[TextPart(f"finished after {count}")])
        return ModelResponse(
            parts=[ToolCallPart(tool_name="step", args={"n": count}, tool_call_id=f"s{count}")]
        )

    return FunctionModel(fn)


async def step(n: int) -> int:
    return n + 1


async def test_128_step_tool_loop() -> None:
    agent = Agent(looping_model(128), tools=[step])
    result = await agent.run("go", usage_limits=UsageLimits(request_limit=129))
    assert result.output == "finished after 128"
    assert result.usage.requests == 129
    assert result.usage.tool_calls == 128
    assert len(result.all_messages()) == 1 + 2 * 128 + 1


async def test_32_parallel_calls_in_one_step() -> None:
    active = 0
    peak = 0
    release = anyio.Event()

    async def wide(i: int) -> int:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        if active == 32:
            release.set()
        await release.wait()
        active -= 1
        return i

    def fn(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(
                parts=[ToolCallPart(tool_name="wide", args={"i": i}, tool_call_id=f"w{i}") for i in range(32)]
            )
        return ModelResponse(parts=[TextPart("ok")])

    agent = Agent(FunctionModel(fn), tools=[wide], tool_limits=ToolLimits(max_concurrency=32))
    with anyio.fail_after(10):
        result = await agent.run("x")
    assert peak == 32
    request = result.all_messages()[2]
    assert isinstance(request, ModelRequest)
    assert [p.content for p in request.parts if isinstance(p, ToolReturnPart)] == list(range(32))


async def _concurrent_runs(agent: Agent[None, str], count: int) -> list[str]:
    outputs: list[str] = [""] * count

    async def one(i: int) -> None:
        outputs[i] = (await agent.run(str(i))).output

    async with anyio.create_task_group() as tg:
        for i in range(count):
            tg.start_soon(one, i)
    return outputs


def echo_model() -> FunctionModel:
    async def fn(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        await anyio.lowlevel.checkpoint()
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        part = last.parts[0]
        if isinstance(part, UserPromptPart):
            return ModelResponse(
                parts=[ToolCallPart(tool_name="echo", args={"v": part.content}, tool_call_id="e")]
            )
        assert isinstance(part, ToolReturnPart)
        return ModelResponse(parts=[TextPart(str(part.content))])

    return FunctionModel(fn)


async def echo(v: str) -> str:
    await anyio.lowlevel.checkpoint()
    return v


async def test_1000_concurrent_runs_without_leaks() -> None:
    agent = Agent(echo_model(), tools=[echo], run_timeout=60)
    tasks_before = len(anyio.get_running_tasks())
    counts: list[int] = []
    for _ in range(3):
        outputs = await _concurrent_runs(agent, 1000)
        assert outputs == [str(i) for i in range(1000)]
        assert len(anyio.get_running_tasks()) == tasks_before
        gc.collect()
        counts.append(len(gc.get_objects()))
    # After a warm-up repetition, repeating the same work does not grow the heap per run.
    assert counts[2] - counts[1] < 500, counts


async def test_10000_message_history() -> None:
    history: list[Message] = []
    for i in range(5000):
        history.append(ModelRequest(parts=[UserPromptPart(f"question {i}")]))
        history.append(ModelResponse(parts=[TextPart(f"answer {i}")]))
    seen: list[Sequence[Message]] = []

    def fn(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        seen.append(messages)
        if len(seen) == 1:
            return ModelResponse(parts=[ToolCallPart(tool_name="step", args={"n": 1}, tool_call_id="s")])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(fn), tools=[step])
    result = await agent.run("next", message_history=history)
    assert result.output == "done"
    assert [len(s) for s in seen] == [10_001, 10_003]
    # The model sees the caller's message objects themselves: nothing is copied per step.
    assert seen[1][0] is history[0]
    assert seen[1][9_999] is history[9_999]
    assert len(history) == 10_000
    assert len(result.new_messages()) == 4
    assert len(result.all_messages_json()) > 100_000


async def test_many_streamed_runs_do_not_leak_tasks() -> None:
    agent = Agent(echo_model(), tools=[echo])
    before = len(anyio.get_running_tasks())

    async def streamed(i: int, out: list[Any]) -> None:
        async with agent.run_stream(str(i)) as s:
            out.append(await s.get_output())

    out: list[Any] = []
    async with anyio.create_task_group() as tg:
        for i in range(200):
            tg.start_soon(streamed, i, out)
    assert sorted(out, key=int) == [str(i) for i in range(200)]
    assert len(anyio.get_running_tasks()) == before
