"""UIBridge: agent stream events to UI events, identities, approvals and decisions, errors."""

from __future__ import annotations

from collections.abc import AsyncIterator
from collections.abc import Sequence
from typing import Any

import msgspec
import pytest

from ferrule.agent import Agent
from ferrule.agent import Approved
from ferrule.agent import DeferredCall
from ferrule.agent import Denied
from ferrule.agent import ModelRetry
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import DeltaThinking
from ferrule.agent.testing import DeltaToolCall
from ferrule.agent.testing import DeltaToolCalls
from ferrule.agent.testing import FunctionModel
from ferrule.core.errors import UserError
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ToolReturnPart
from ferrule.ui import ApprovalRequested
from ferrule.ui import ApprovalResponse
from ferrule.ui import ClientInputError
from ferrule.ui import FinalResult
from ferrule.ui import InvalidIdentifierError
from ferrule.ui import ReasoningDelta
from ferrule.ui import ReasoningEnd
from ferrule.ui import ReasoningStart
from ferrule.ui import RunError
from ferrule.ui import RunFinished
from ferrule.ui import RunStarted
from ferrule.ui import TextDelta
from ferrule.ui import TextEnd
from ferrule.ui import TextStart
from ferrule.ui import ToolCallArgs
from ferrule.ui import ToolCallEnd
from ferrule.ui import ToolCallStart
from ferrule.ui import ToolFailed
from ferrule.ui import ToolResult
from ferrule.ui import UIBridge
from ferrule.ui import UIEvent
from ferrule.ui import UILimits
from ferrule.ui import decisions_from
from ferrule.ui import error_message

pytestmark = pytest.mark.anyio


def had_results(messages: Sequence[Message]) -> list[ToolReturnPart]:
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    return [p for p in last.parts if isinstance(p, ToolReturnPart)]


async def weather_stream(
    messages: Sequence[Message], info: AgentInfo
) -> AsyncIterator[str | DeltaToolCalls | DeltaThinking]:
    if had_results(messages):
        yield "Sunny "
        yield "in Paris."
        return
    yield DeltaThinking(content="The user wants weather.")
    yield "Checking. "
    yield {0: DeltaToolCall(name="weather", json_args='{"city": ', tool_call_id="c1")}
    yield {0: DeltaToolCall(json_args='"Paris"}')}


def weather(city: str) -> str:
    """The weather."""
    return f"sunny in {city}"


async def collect(agent: Agent[Any, Any], prompt: str, bridge: UIBridge) -> list[UIEvent]:
    async with agent.run_stream(prompt) as stream:
        return [e async for e in bridge.stream(stream)]


async def test_text_reasoning_tool_call_and_result_in_order() -> None:
    agent = Agent(FunctionModel(stream_function=weather_stream), tools=[weather])
    events = await collect(agent, "Weather?", UIBridge("thread-1", "run-1"))
    kinds = [type(e).__name__ for e in events]
    assert kinds == [
        "RunStarted",
        "ReasoningStart",
        "ReasoningDelta",
        "ReasoningEnd",
        "TextStart",
        "TextDelta",
        "TextEnd",
        "ToolCallStart",
        "ToolCallArgs",
        "ToolCallArgs",
        "ToolCallEnd",
        "ToolResult",
        "TextStart",
        "TextDelta",
        "TextDelta",
        "TextEnd",
        "FinalResult",
        "RunFinished",
    ]
    assert events[0] == RunStarted("thread-1", "run-1")
    reasoning = events[1]
    assert isinstance(reasoning, ReasoningStart)
    assert events[2] == ReasoningDelta(reasoning.part_id, "The user wants weather.")
    assert events[3] == ReasoningEnd(reasoning.part_id)
    assert events[7] == ToolCallStart("c1", "weather")  # the name is not doubled by the repeated delta
    assert [e.delta for e in events if isinstance(e, ToolCallArgs)] == ['{"city": ', '"Paris"}']
    assert events[10] == ToolCallEnd("c1", "weather", {"city": "Paris"})
    assert events[11] == ToolResult("c1", "weather", "sunny in Paris")
    starts = [e.part_id for e in events if isinstance(e, TextStart)]
    assert len({*starts, reasoning.part_id}) == 3  # every part has its own identity
    assert all(p.startswith("run-1-") for p in starts)
    assert (
        "".join(e.delta for e in events if isinstance(e, TextDelta) and e.part_id == starts[1])
        == "Sunny in Paris."
    )
    assert events[-2] == FinalResult("Sunny in Paris.")
    assert events[-1] == RunFinished("thread-1", "run-1", "Sunny in Paris.")


async def test_a_retry_becomes_a_tool_failure() -> None:
    calls = 0

    def flaky(city: str) -> str:
        """Fails once."""
        nonlocal calls
        calls += 1
        if calls == 1:
            raise ModelRetry("try again later")
        return "ok"

    async def stream(messages: Sequence[Message], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        tries = sum(isinstance(m, ModelRequest) for m in messages)
        if tries <= 2:
            yield {0: DeltaToolCall(name="flaky", json_args='{"city": "x"}', tool_call_id=f"c{tries}")}
        else:
            yield "done"

    agent = Agent(FunctionModel(stream_function=stream), tools=[flaky], retries=2)
    events = await collect(agent, "go", UIBridge("t", "r"))
    failed = [e for e in events if isinstance(e, ToolFailed)]
    assert len(failed) == 1
    assert failed[0].tool_call_id == "c1"
    assert "try again later" in failed[0].error_text
    assert not failed[0].denied
    assert ToolResult("c2", "flaky", "ok") in events


async def pay_stream(messages: Sequence[Message], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
    results = had_results(messages)
    if results:
        yield "denied" if results[0].outcome == "denied" else "paid"
        return
    yield {0: DeltaToolCall(name="pay", json_args='{"amount": 5}', tool_call_id="p1")}


def pay(amount: int) -> str:
    """Pay."""
    return f"paid {amount}"


async def test_a_deferred_call_becomes_an_approval_request_and_decisions_resume_it() -> None:
    agent = Agent(FunctionModel(stream_function=pay_stream))
    agent.tool_plain(requires_approval=True)(pay)
    bridge = UIBridge("t", "r")
    async with agent.run_stream("pay") as stream:
        events = [e async for e in bridge.stream(stream)]
        paused = stream.paused
    assert paused is not None
    request = ApprovalRequested(
        approval_id="approval-p1", tool_call_id="p1", tool_name="pay", args={"amount": 5}
    )
    assert events[-2] == request
    finished = events[-1]
    assert finished == RunFinished("t", "r", None, (request,))
    assert isinstance(finished, RunFinished)
    assert finished.paused
    assert bridge.approvals == [request]

    decisions = bridge.decisions_from([ApprovalResponse(approval_id="approval-p1", approved=True)])
    assert decisions == {"p1": Approved()}
    resumed = UIBridge("t", "r2", announced_tool_calls=["p1"])
    async with agent.resume_stream(paused, decisions) as stream:
        again = [e async for e in resumed.stream(stream)]
    assert not any(isinstance(e, ToolCallStart) for e in again)  # the client already has the call
    assert ToolResult("p1", "pay", "paid 5") in again
    assert again[-1] == RunFinished("t", "r2", "paid")

    # A paused state resumes once (the agent's single-use checkpoints): the denial needs its own pause.
    async with agent.run_stream("pay") as stream:
        _ = [e async for e in UIBridge("t", "r").stream(stream)]
        paused = stream.paused
    assert paused is not None
    denied = decisions_from(
        paused.pending, [ApprovalResponse(approval_id="approval-p1", approved=False, reason="no")]
    )
    assert denied == {"p1": Denied(message="The user denied this tool call. Reason: no")}
    async with agent.resume_stream(paused, denied) as stream:
        events = [e async for e in UIBridge("t", "r3", announced_tool_calls=["p1"]).stream(stream)]
    assert ToolFailed("p1", "pay", "The user denied this tool call. Reason: no", denied=True) in events
    assert events[-1] == RunFinished("t", "r3", "denied")


PENDING = [
    DeferredCall(tool_call_id="a", tool_name="pay"),
    DeferredCall(tool_call_id="b", tool_name="fetch", kind="external"),
]


@pytest.mark.parametrize(
    ("responses", "message"),
    [
        ([ApprovalResponse(approval_id="approval-zzz", approved=True)], "does not belong to the paused run"),
        (
            [
                ApprovalResponse(approval_id="approval-a", approved=True),
                ApprovalResponse(approval_id="approval-a", approved=False),
            ],
            "answered twice",
        ),
        ([ApprovalResponse(approval_id="approval-a", approved=True)], "missing: 'approval-b'"),
        (
            [
                ApprovalResponse(approval_id="approval-a", approved=True),
                ApprovalResponse(approval_id="approval-b", approved=True),
            ],
            "is an external tool",
        ),
        ([ApprovalResponse(approval_id="bad id!", approved=True)], "invalid approval_id"),
    ],
    ids=["unknown", "duplicate", "missing", "external-approved", "unsafe-id"],
)
def test_decisions_are_refused_unless_exactly_one_per_pending_call(
    responses: list[ApprovalResponse], message: str
) -> None:
    with pytest.raises(ClientInputError, match=message):
        decisions_from(PENDING, responses)


def test_decision_limits_at_and_past_the_limit() -> None:
    limits = UILimits(max_reason_bytes=4, max_approvals=2)
    ok = [
        ApprovalResponse(approval_id="approval-a", approved=False, reason="abcd"),
        ApprovalResponse(approval_id="approval-b", approved=False),
    ]
    assert set(decisions_from(PENDING, ok, limits=limits)) == {"a", "b"}
    with pytest.raises(ClientInputError, match="longer than 4 bytes") as info:
        decisions_from(
            PENDING,
            [ApprovalResponse(approval_id="approval-a", approved=False, reason="abcde")],
            limits=limits,
        )
    assert info.value.status == 413
    with pytest.raises(ClientInputError, match="limit is 2"):
        decisions_from(PENDING, [*ok, ok[0]], limits=limits)


@pytest.mark.parametrize("bad", ["", "a b", "x" * 129, "<script>", "é"])
def test_identities_are_validated(bad: str) -> None:
    with pytest.raises(InvalidIdentifierError):
        UIBridge(bad, "run")
    with pytest.raises(InvalidIdentifierError):
        UIBridge("thread", bad)
    assert UIBridge("x" * 128, "a.b:c-d_e").thread_id == "x" * 128


async def test_an_unsafe_tool_call_id_from_the_model_fails_the_run_instead_of_reaching_the_browser() -> None:
    async def stream(messages: Sequence[Message], info: AgentInfo) -> AsyncIterator[DeltaToolCalls]:
        yield {0: DeltaToolCall(name="weather", json_args="{}", tool_call_id='"><img src=x>')}

    agent = Agent(FunctionModel(stream_function=stream), tools=[weather])
    events = await collect(agent, "go", UIBridge("t", "r"))
    assert not any(isinstance(e, ToolCallStart) for e in events)
    assert isinstance(events[-1], RunError)
    assert events[-1].code == "InvalidIdentifierError"
    assert "may only contain" in events[-1].message


async def test_application_errors_are_reported_without_their_message() -> None:
    def leaky(city: str) -> str:
        """Raises with a secret in its message."""
        raise RuntimeError("password=hunter2")

    async def stream(messages: Sequence[Message], info: AgentInfo) -> AsyncIterator[DeltaToolCalls]:
        yield {0: DeltaToolCall(name="leaky", json_args='{"city": "x"}', tool_call_id="c1")}

    agent = Agent(FunctionModel(stream_function=stream), tools=[leaky])
    events = await collect(agent, "go", UIBridge("t", "r"))
    error = events[-1]
    assert isinstance(error, RunError)
    assert error.code == "RuntimeError"
    assert "hunter2" not in msgspec.json.encode(events).decode()
    assert "server log" in error.message
    message, code = error_message(UserError("configure the model first"))
    assert (message, code) == ("configure the model first", "UserError")


async def test_text_before_a_tool_call_is_closed_before_the_call_starts() -> None:
    agent = Agent(FunctionModel(stream_function=weather_stream), tools=[weather])
    events = await collect(agent, "Weather?", UIBridge("t", "r"))
    first_text_end = next(i for i, e in enumerate(events) if isinstance(e, TextEnd))
    first_tool = next(i for i, e in enumerate(events) if isinstance(e, ToolCallStart))
    assert first_text_end < first_tool
