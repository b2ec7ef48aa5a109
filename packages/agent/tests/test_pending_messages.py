"""PendingMessageQueue: thread-safe, enters history only at safe boundaries, never lost or duplicated."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import anyio
import pytest
from inline_snapshot import snapshot

from ferrule.agent import Agent
from ferrule.agent import Approved
from ferrule.agent import EnqueuedMessagesEvent
from ferrule.agent import Paused
from ferrule.agent import PendingMessageQueue
from ferrule.agent import PendingMessageQueueClosed
from ferrule.agent import Tool
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.errors import UserError
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import UserPromptPart
from tests.support.scripts import recorded

from ._support import request_parts

pytestmark = pytest.mark.anyio


def prompts(messages: Sequence[Message]) -> list[str]:
    return [p.content for p in request_parts(messages, UserPromptPart) if isinstance(p.content, str)]


async def test_messages_enqueued_during_a_tool_enter_before_the_next_request() -> None:
    queue = PendingMessageQueue()
    seen: list[list[str]] = []

    def slow(x: int) -> int:
        queue.enqueue("by the way, use metric units")  # from the tool's worker thread
        return x

    def model(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        seen.append(prompts(messages))
        if len(seen) == 1:
            return ModelResponse(parts=[ToolCallPart(tool_name="slow", args={"x": 1}, tool_call_id="c")])
        return ModelResponse(parts=[TextPart("done")])

    result = await Agent(FunctionModel(model), tools=[slow]).run("go", pending_messages=queue)
    assert seen == [["go"], ["go", "by the way, use metric units"]]
    # The queued request comes after the tool results, never between a call and its result.
    assert recorded(result.all_messages()) == snapshot(
        [
            {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "go"}], "run_id": "run-1"},
            {
                "kind": "response",
                "parts": [
                    {"part_kind": "tool-call", "tool_name": "slow", "args": {"x": 1}, "tool_call_id": "c"}
                ],
                "usage": {"input_tokens": 51, "output_tokens": 3},
                "model_name": "function:model",
                "provider_name": "function",
                "run_id": "run-1",
            },
            {
                "kind": "request",
                "parts": [
                    {"part_kind": "tool-return", "tool_name": "slow", "content": 1, "tool_call_id": "c"}
                ],
                "run_id": "run-1",
            },
            {
                "kind": "request",
                "parts": [{"part_kind": "user-prompt", "content": "by the way, use metric units"}],
                "run_id": "run-1",
            },
            {
                "kind": "response",
                "parts": [{"part_kind": "text", "content": "done"}],
                "usage": {"input_tokens": 61, "output_tokens": 1},
                "model_name": "function:model",
                "provider_name": "function",
                "run_id": "run-1",
            },
        ]
    )
    assert queue.closed


async def test_a_final_answer_is_provisional_while_messages_wait() -> None:
    queue = PendingMessageQueue()
    answers = iter(["first answer", "second answer"])

    def model(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        text = next(answers)
        if text == "first answer":
            queue.enqueue("one more thing")
        return ModelResponse(parts=[TextPart(text)])

    result = await Agent(FunctionModel(model)).run("go", pending_messages=queue)
    assert result.output == "second answer"
    assert recorded(result.all_messages()) == snapshot(
        [
            {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "go"}], "run_id": "run-1"},
            {
                "kind": "response",
                "parts": [{"part_kind": "text", "content": "first answer"}],
                "usage": {"input_tokens": 51, "output_tokens": 2},
                "model_name": "function:model",
                "provider_name": "function",
                "run_id": "run-1",
            },
            {
                "kind": "request",
                "parts": [{"part_kind": "user-prompt", "content": "one more thing"}],
                "run_id": "run-1",
            },
            {
                "kind": "response",
                "parts": [{"part_kind": "text", "content": "second answer"}],
                "usage": {"input_tokens": 56, "output_tokens": 2},
                "model_name": "function:model",
                "provider_name": "function",
                "run_id": "run-1",
            },
        ]
    )
    with pytest.raises(PendingMessageQueueClosed):
        queue.enqueue("too late")


async def test_enqueue_from_other_threads_is_never_lost() -> None:
    queue = PendingMessageQueue()
    started = threading.Event()
    total = 20

    def producer() -> None:
        started.wait()
        for i in range(total):
            queue.enqueue(f"m{i}")

    thread = threading.Thread(target=producer)
    thread.start()
    steps = 0

    async def model(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        nonlocal steps
        steps += 1
        started.set()
        if len(prompts(messages)) < total + 1:
            await anyio.sleep(0.001)
            return ModelResponse(parts=[ToolCallPart(tool_name="wait", args={}, tool_call_id=f"w{steps}")])
        return ModelResponse(parts=[TextPart("all in")])

    def wait() -> str:
        return "waited"

    result = await Agent(FunctionModel(model), tools=[wait]).run(
        "go", pending_messages=queue, usage_limits=None
    )
    thread.join()
    assert prompts(result.all_messages()) == ["go", *[f"m{i}" for i in range(total)]]


async def test_stream_reports_enqueued_messages() -> None:
    queue = PendingMessageQueue()
    queue.enqueue("early")

    def model(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart("ok")])

    async with Agent(FunctionModel(model)).run_stream("go", pending_messages=queue) as stream:
        events = [e async for e in stream]
    enqueued = [e for e in events if isinstance(e, EnqueuedMessagesEvent)]
    assert len(enqueued) == 1
    assert enqueued[0].messages[0].parts[0].content == "early"  # type: ignore[union-attr]


async def test_failure_closes_the_queue_and_discards() -> None:
    queue = PendingMessageQueue()

    def model(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        queue.enqueue("lost")
        raise RuntimeError("down")

    with pytest.raises(RuntimeError):
        await Agent(FunctionModel(model)).run("go", pending_messages=queue)
    assert queue.closed
    assert len(queue) == 0


async def test_pause_keeps_accepted_messages_and_resume_inserts_them_after_the_results() -> None:
    queue = PendingMessageQueue()

    def pay(amount: int) -> str:
        """Pay."""
        return "paid"

    def first(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        queue.enqueue("also: send a receipt")
        return ModelResponse(parts=[ToolCallPart(tool_name="pay", args={"amount": 3}, tool_call_id="p")])

    paused = await Agent(FunctionModel(first), tools=[Tool(pay, requires_approval=True)]).run_until_pause(
        "pay", pending_messages=queue
    )
    assert isinstance(paused, Paused)
    data = paused.to_json()
    seen: list[list[str]] = []

    def second(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        seen.append(prompts(messages))
        return ModelResponse(parts=[TextPart("done")])

    resumed = await Agent(FunctionModel(second), tools=[Tool(pay, requires_approval=True)]).resume(
        data, {"p": Approved()}
    )
    assert not isinstance(resumed, Paused)
    assert seen == [["pay", "also: send a receipt"]]
    assert recorded(resumed.all_messages()) == snapshot(
        [
            {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "pay"}], "run_id": "run-1"},
            {
                "kind": "response",
                "parts": [
                    {"part_kind": "tool-call", "tool_name": "pay", "args": {"amount": 3}, "tool_call_id": "p"}
                ],
                "usage": {"input_tokens": 51, "output_tokens": 3},
                "model_name": "function:first",
                "provider_name": "function",
                "run_id": "run-1",
            },
            {
                "kind": "request",
                "parts": [
                    {"part_kind": "tool-return", "tool_name": "pay", "content": "paid", "tool_call_id": "p"}
                ],
                "run_id": "run-1",
            },
            {
                "kind": "request",
                "parts": [{"part_kind": "user-prompt", "content": "also: send a receipt"}],
                "run_id": "run-1",
            },
            {
                "kind": "response",
                "parts": [{"part_kind": "text", "content": "done"}],
                "usage": {"input_tokens": 59, "output_tokens": 1},
                "model_name": "function:second",
                "provider_name": "function",
                "run_id": "run-1",
            },
        ]
    )


def test_queue_limit_at_and_past() -> None:
    queue = PendingMessageQueue(max_messages=2)
    queue.enqueue("a", "b")
    with pytest.raises(UserError, match="at most 2"):
        queue.enqueue("c")
    assert [m.parts[0].content for m in queue.take()] == ["a", "b"]  # type: ignore[union-attr]
    with pytest.raises(UserError):
        PendingMessageQueue(max_messages=0)


def test_enqueued_requests_are_copied() -> None:
    queue = PendingMessageQueue()
    request = ModelRequest(parts=[UserPromptPart(content="x")])
    queue.enqueue(request, ["rich", "content"])
    request.parts.clear()
    taken: list[Any] = queue.take()
    assert taken[0].parts[0].content == "x"
    assert taken[1].parts[0].content == ["rich", "content"]
