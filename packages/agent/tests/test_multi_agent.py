"""Multi-agent scopes: delegate, subagent and handoff under one bounded session."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import pytest

from ferrule.agent import Agent
from ferrule.agent import Capability
from ferrule.agent import RunContext
from ferrule.agent.exceptions import RunCancelledError
from ferrule.agent.exceptions import RunTimeoutError
from ferrule.agent.multi_agent import MultiAgentLimits
from ferrule.agent.multi_agent import Scope
from ferrule.agent.multi_agent import ScopeDepthExceeded
from ferrule.agent.multi_agent import ScopeRunLimitExceeded
from ferrule.agent.multi_agent import Session
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.errors import UserError
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import UserPromptPart
from ferrule.core.usage import RequestUsage
from ferrule.core.usage import UsageLimitExceeded
from ferrule.core.usage import UsageLimits

pytestmark = pytest.mark.anyio


def answering(text: str, *, seen: list[list[Message]] | None = None) -> Agent[Any, str]:
    def model(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        if seen is not None:
            seen.append(list(messages))
        return ModelResponse(parts=[TextPart(text)], usage=RequestUsage(input_tokens=10, output_tokens=5))

    return Agent(FunctionModel(model), name=text)


async def test_delegate_and_handoff_track_depth_runs_and_usage() -> None:
    session = Session()
    root = session.root()
    planned = await root.delegate(answering("plan"), "make a plan")
    written = await root.handoff(answering("report"), "write it")
    assert (planned.output, written.output) == ("plan", "report")
    assert session.runs == 2
    assert session.usage.requests == 2
    assert session.usage.input_tokens == 20
    assert [(r.transition, r.depth, r.agent_name, r.ok) for r in session.records] == [
        ("delegate", 1, "plan", True),
        ("handoff", 0, "report", True),
    ]


async def test_depth_limit_at_exactly_and_past() -> None:
    session = Session(limits=MultiAgentLimits(max_depth=2))
    root = session.root()
    result = await root.delegate(answering("one"), "go")
    deeper = root.child(result)
    assert deeper.depth == 1
    await deeper.subagent(answering("two"), "go")  # depth 2: exactly the limit
    deepest = deeper.child(result)
    with pytest.raises(ScopeDepthExceeded, match="depth 3"):
        await deepest.delegate(answering("three"), "go")
    await deepest.handoff(answering("same depth"), "go")  # handoffs do not add depth
    assert session.runs == 3


async def test_run_limit_at_exactly_and_past() -> None:
    session = Session(limits=MultiAgentLimits(max_runs=2))
    root = session.root()
    await root.delegate(answering("a"), "go")
    await root.delegate(answering("b"), "go")
    with pytest.raises(ScopeRunLimitExceeded, match="max_runs=2"):
        await root.delegate(answering("c"), "go")


async def test_failed_runs_count_and_contribute_observed_usage() -> None:
    def model(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(
                parts=[ToolCallPart(tool_name="explode", args={}, tool_call_id="x")],
                usage=RequestUsage(input_tokens=7),
            )
        return ModelResponse(parts=[TextPart("never")])

    def explode() -> str:
        raise ValueError("broken tool")

    failing = Agent(FunctionModel(model), tools=[explode], name="failing")
    session = Session()
    with pytest.raises(ValueError, match="broken tool"):
        await session.root().delegate(failing, "go")
    assert session.runs == 1
    assert session.usage.requests == 1
    assert session.usage.input_tokens == 7
    assert session.records[0].ok is False
    assert session.records[0].error == "ValueError"


async def test_cumulative_request_limit_tightens_each_run() -> None:
    def looping(requests: int) -> Agent[Any, str]:
        def model(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
            if len(messages) < 2 * requests - 1:
                return ModelResponse(
                    parts=[ToolCallPart(tool_name="noop", args={}, tool_call_id=f"n{len(messages)}")]
                )
            return ModelResponse(parts=[TextPart("done")])

        def noop() -> str:
            return "ok"

        return Agent(FunctionModel(model), tools=[noop])

    # exactly the cumulative limit: 1 + 4 requests of 5
    session = Session(limits=MultiAgentLimits(usage_limits=UsageLimits(request_limit=5)))
    root = session.root()
    await root.delegate(answering("one request"), "go")
    await root.delegate(looping(4), "go")
    assert session.usage.requests == 5
    with pytest.raises(UsageLimitExceeded, match="request_limit"):
        await root.delegate(answering("no budget left"), "go")
    assert session.runs == 2  # refused before it started
    # one past: the second run is stopped when it would make the sixth request
    session = Session(limits=MultiAgentLimits(usage_limits=UsageLimits(request_limit=5)))
    root = session.root()
    await root.delegate(answering("one request"), "go")
    with pytest.raises(UsageLimitExceeded, match="request_limit"):
        await root.delegate(looping(5), "go")
    assert session.usage.requests == 5


async def test_shared_and_isolated_context() -> None:
    seen: list[list[Message]] = []
    deps_seen: list[Any] = []

    def model(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        return ModelResponse(parts=[TextPart("ok")])

    agent = Agent(FunctionModel(model), deps_type=str)

    @agent.instructions
    def remember(ctx: RunContext[str]) -> str:
        deps_seen.append(ctx.deps)
        return ""

    history: list[Message] = [
        ModelRequest(parts=[UserPromptPart(content="earlier")]),
        ModelResponse(parts=[TextPart("e")]),
    ]
    root = Session().root(deps="shared-deps", message_history=history)
    await root.delegate(agent, "shared", context="shared")
    await root.delegate(agent, "isolated")
    await root.delegate(agent, "explicit", deps="mine")
    assert len(seen[0]) == 3
    assert len(seen[1]) == 1
    assert deps_seen == ["shared-deps", None, "mine"]
    with pytest.raises(UserError, match="context"):
        await root.delegate(agent, "x", context="global")


async def test_shared_deadline() -> None:
    async def slow(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        await anyio.sleep(10)
        return ModelResponse(parts=[TextPart("late")])

    session = Session(timeout=0.05)
    root = session.root()
    with pytest.raises(RunTimeoutError):
        await root.delegate(Agent(FunctionModel(slow)), "go")
    await anyio.sleep(0.06)
    with pytest.raises(RunTimeoutError, match="deadline passed before the run could start"):
        await root.delegate(answering("x"), "go")


async def test_cancel_stops_running_and_refuses_new_runs() -> None:
    started = anyio.Event()

    async def slow(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        started.set()
        await anyio.sleep(10)
        return ModelResponse(parts=[TextPart("late")])

    session = Session()
    root = session.root()
    errors: list[BaseException] = []

    async def run() -> None:
        try:
            await root.delegate(Agent(FunctionModel(slow)), "go")
        except RunCancelledError as exc:
            errors.append(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await started.wait()
        session.cancel()
    assert len(errors) == 1
    with pytest.raises(RunCancelledError):
        await root.delegate(answering("x"), "go")


async def test_from_context_continues_the_tree_from_a_tool() -> None:
    session = Session(limits=MultiAgentLimits(max_depth=2))
    helper = answering("helped")
    depths: list[int] = []

    async def ask_helper(ctx: RunContext[str], question: str) -> str:
        scope = Scope.from_context(ctx)
        depths.append(scope.depth)
        result = await scope.delegate(helper, question, context="shared")
        return result.output

    def model(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(
                parts=[ToolCallPart(tool_name="ask_helper", args={"question": "q"}, tool_call_id="a")]
            )
        return ModelResponse(parts=[TextPart("final")])

    outer = Agent(FunctionModel(model), tools=[ask_helper], deps_type=str, name="outer")
    result = await session.root(deps="d").delegate(outer, "go", context="shared")
    assert result.output == "final"
    assert depths == [1]
    assert [(r.agent_name, r.depth) for r in session.records] == [("helped", 2), ("outer", 1)]


async def test_from_context_outside_a_scope_needs_a_session() -> None:
    captured: list[Scope] = []

    def tool(ctx: RunContext[None]) -> str:
        with pytest.raises(UserError, match="Scope"):
            Scope.from_context(ctx)
        captured.append(Scope.from_context(ctx, session=Session()))
        return "ok"

    def model(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart(tool_name="tool", args={}, tool_call_id="t")])
        return ModelResponse(parts=[TextPart("done")])

    await Agent(FunctionModel(model), tools=[tool]).run("go")
    assert captured[0].depth == 0


async def test_capabilities_go_to_nested_and_subagent_tiers_and_can_be_inherited() -> None:
    seen: list[str | None] = []

    def model(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        seen.append(info.instructions)
        return ModelResponse(parts=[TextPart("ok")])

    agent = Agent(FunctionModel(model), capabilities=[Capability("own", instructions="own")])
    root = Session().root(capabilities=[Capability("parent", instructions="parent")])
    await root.subagent(
        agent, "go", capabilities=[Capability("sub", instructions="sub")], inherit_capabilities=True
    )
    await root.delegate(agent, "go", capabilities=[Capability("nested", instructions="nested")])
    assert seen == ["parent\n\nown\n\nsub", "own\n\nnested"]


def test_limits_validate() -> None:
    with pytest.raises(ValueError, match="max_runs"):
        MultiAgentLimits(max_runs=0)
    with pytest.raises(ValueError, match="max_depth"):
        MultiAgentLimits(max_depth=-1)
    with pytest.raises(UserError):
        Session(timeout=0)
