"""`PlanningAgent(guard=...)`: the agent's `GuardFn` authorizes every tool call of a planning run
(plan tool steps, agentic steps, chat mode) before confirmation, and a denial runs nothing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from ferrule.agent import Denied
from ferrule.agent import ModelRetry
from ferrule.agent import RunContext
from ferrule.agent import Tool
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.errors import UserError
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.planning import ConfirmationRequest
from ferrule.planning import PlanningAgent
from ferrule.planning import StepFailedEvent

from .conftest import Recorder
from .conftest import Script
from .conftest import evidence_of
from .conftest import pay_plan
from .conftest import pay_tools
from .conftest import plan
from .conftest import step

pytestmark = pytest.mark.anyio


class Guard:
    """A guard that records what it saw and denies the tools named in `deny`."""

    def __init__(self, deny: dict[str, Any] | None = None) -> None:
        self.deny = deny or {}
        self.seen: list[tuple[str, Any, str | None]] = []

    def __call__(self, ctx: RunContext[Any], tool: Tool[Any], args: Any) -> bool | Denied | None:
        self.seen.append((tool.name, dict(args), ctx.tool_call_id))
        return self.deny.get(tool.name)


async def test_a_denied_step_never_calls_its_tool_and_its_receipt_says_why() -> None:
    tools = Recorder()
    guard = Guard({"pay": Denied(message="payments over 100 need a manager")})
    script = Script([pay_plan()])
    events: list[Any] = []

    async def handler(event: Any) -> None:
        events.append(event)

    agent = PlanningAgent(script.model(), tools=pay_tools(tools, requires_approval=False), guard=guard)
    result = await agent.run("go", event_handler=handler)
    assert tools.names() == ["lookup"]  # pay never ran, and receipt was skipped after it
    assert [name for name, _, _ in guard.seen] == ["lookup", "pay"]
    assert guard.seen[1][1] == {"to": "alice", "amount": 250}  # the bound, validated arguments
    assert [(a.step_id, a.tool_name, a.status, a.detail) for a in result.actions] == [
        ("pay", "pay", "denied", "payments over 100 need a manager")
    ]
    assert result.actions[0].tool_call_id == guard.seen[1][2]
    pay = result.report.steps["pay"]
    assert (pay.status, pay.error) == ("denied", "payments over 100 need a manager")
    assert result.report.steps["receipt"].status == "skipped"
    assert [w.kind for w in result.warnings] == ["denied", "step_skipped"]
    assert result.stats.replans == 0  # like a declined confirmation: not a failure to replan
    failed = [e for e in events if isinstance(e, StepFailedEvent)]
    assert [(e.step_id, e.status) for e in failed] == [("pay", "denied")]
    composed = evidence_of(script.calls[-1][1])["steps"]
    assert composed[1] == {
        "step": "pay",
        "capability": "pay",
        "status": "denied",
        "note": "payments over 100 need a manager",
    }


async def test_false_denies_with_the_agents_default_text() -> None:
    tools = Recorder()
    agent = PlanningAgent(
        Script([pay_plan()]).model(),
        tools=pay_tools(tools, requires_approval=False),
        guard=Guard({"pay": False}),
    )
    result = await agent.run("go")
    assert tools.names() == ["lookup"]
    assert [(a.status, a.detail) for a in result.actions] == [
        ("denied", "The call of 'pay' was not authorized; it did not run.")
    ]


@pytest.mark.parametrize("verdict", [True, None])
async def test_an_allowing_guard_lets_every_step_run(verdict: bool | None) -> None:
    tools = Recorder()
    seen: list[str] = []

    async def guard(ctx: RunContext[Any], tool: Tool[Any], args: Any) -> bool | None:
        seen.append(tool.name)
        return verdict

    result = await PlanningAgent(
        Script([pay_plan()]).model(), tools=pay_tools(tools, requires_approval=False), guard=guard
    ).run("go")
    assert tools.names() == ["lookup", "pay", "lookup"]
    assert seen == ["lookup", "pay", "lookup"]
    assert [(a.tool_name, a.status) for a in result.actions] == [("pay", "succeeded")]


@pytest.mark.parametrize("deny", [False, True])
async def test_the_guard_is_asked_before_confirmation(deny: bool) -> None:
    tools = Recorder()
    order: list[str] = []

    def guard(ctx: RunContext[Any], tool: Tool[Any], args: Any) -> bool:
        order.append(f"guard:{tool.name}")
        return not (deny and tool.name == "pay")

    async def confirm(request: ConfirmationRequest) -> bool:
        order.append(f"confirm:{request.tool_name}")
        return True

    agent = PlanningAgent(
        Script([pay_plan()]).model(),
        tools=pay_tools(tools),
        guard=guard,
        confirm=confirm,
    )
    result = await agent.run("go")
    if deny:
        assert order == ["guard:lookup", "guard:pay"]  # a denied call is never put to confirm
        assert tools.names() == ["lookup"]
        assert [a.status for a in result.actions] == ["denied"]
    else:
        assert order == ["guard:lookup", "guard:pay", "confirm:pay", "guard:lookup"]
        assert tools.names() == ["lookup", "pay", "lookup"]
        assert [a.status for a in result.actions] == ["succeeded"]


async def test_model_retry_from_the_guard_fails_the_step_and_replans() -> None:
    tools = Recorder()

    def guard(ctx: RunContext[Any], tool: Tool[Any], args: Any) -> bool:
        if tool.name == "primary":
            raise ModelRetry("use the backup service today")
        return True

    doc = plan(step("base", "lookup"), step("fetch", "primary", depends_on=["base"]))
    script = Script(
        [doc], patches=[{"replace": ["fetch"], "steps": [step("fetch", "backup", depends_on=["base"])]}]
    )
    catalog = [
        tools.tool("lookup", {"temp": 21}),
        tools.tool("primary", {"temp": 0}, side_effect="idempotent"),
        tools.tool("backup", {"temp": 22}),
    ]
    result = await PlanningAgent(script.model(), tools=catalog, guard=guard).run("go")
    assert tools.names() == ["lookup", "backup"]  # primary never ran
    first = result.report.steps["fetch@1"]
    assert (first.status, first.error) == ("failed", "use the backup service today")
    assert [(a.tool_name, a.status, a.detail) for a in result.actions] == [
        ("primary", "failed", "use the backup service today")
    ]
    assert result.report.steps["fetch"].status == "succeeded"
    assert result.stats.replans == 1
    assert script.roles() == ["Plan", "Patch", "compose"]


@pytest.mark.parametrize("parallel", [False, True])
async def test_a_guard_answer_that_is_no_decision_is_refused(parallel: bool) -> None:
    tools = Recorder()
    steps = [step("a"), step("b")] if parallel else [step("a")]

    def guard(ctx: RunContext[Any], tool: Tool[Any], args: Any) -> Any:
        return "yes"

    agent = PlanningAgent(Script([plan(*steps)]).model(), tools=[tools.tool("lookup", 1)], guard=guard)
    with pytest.raises(UserError, match=r"the guard returned 'yes'; return True, None, False or Denied"):
        await agent.run("go")
    assert tools.names() == []


def test_a_guard_that_is_not_a_function_is_refused() -> None:
    with pytest.raises(UserError, match="guard= must be a function"):
        PlanningAgent(Script().model(), tools=[Recorder().tool("lookup", 1)], guard="no")  # pyright: ignore[reportArgumentType]


def calls_pay_once(script: Script) -> FunctionModel:
    """Chat mode and agentic sub-agents call `pay` once, then answer; everything else is `script`'s."""

    def reply(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        if not any(t.name == "pay" for t in info.function_tools):
            return script(messages, info)
        returned = [
            p
            for m in messages
            if isinstance(m, ModelRequest)
            for p in m.parts
            if isinstance(p, ToolReturnPart)
        ]
        if not returned:
            return ModelResponse(parts=[ToolCallPart("pay", {"to": "bob", "amount": 5})])
        return ModelResponse(parts=[TextPart(f"pay: {returned[0].outcome}")])

    return FunctionModel(reply)


async def test_chat_mode_calls_go_through_the_guard() -> None:
    tools = Recorder()
    guard = Guard({"pay": Denied(message="not in chat")})
    agent = PlanningAgent(
        calls_pay_once(Script()), tools=pay_tools(tools, requires_approval=False), guard=guard
    )
    result = await agent.run("pay bob", mode="chat")
    assert tools.names() == []
    assert [name for name, _, _ in guard.seen] == ["pay"]
    assert result.output == "pay: denied"
    assert [(a.tool_name, a.status, a.detail) for a in result.actions] == [("pay", "denied", "not in chat")]


async def test_agentic_step_calls_go_through_the_guard() -> None:
    tools = Recorder()
    guard = Guard({"pay": Denied(message="no sub-agent payments")})
    doc = plan({"id": "work", "agent": {"prompt": "Pay bob.", "tools": ["pay"], "max_tool_calls": 2}})
    agent = PlanningAgent(
        calls_pay_once(Script([doc])),
        tools=pay_tools(tools, requires_approval=False),
        guard=guard,
        agentic_steps=True,
    )
    result = await agent.run("go")
    assert tools.names() == []
    assert result.evidence_of("work").value == "pay: denied"
    assert [(a.step_id, a.tool_name, a.status, a.detail) for a in result.actions] == [
        ("work", "pay", "denied", "no sub-agent payments")
    ]
