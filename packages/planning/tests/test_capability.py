"""PlanCapability (M-06): a plan as the `execute_dynamic_plan` tool of the `dynamic_workflow` capability."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import pytest

from ferrule.agent import Agent
from ferrule.agent import Approved
from ferrule.agent import Paused
from ferrule.agent import PauseRequiredError
from ferrule.agent.exceptions import RunTimeoutError
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.planning import CAPABILITY_ID
from ferrule.planning import TOOL_NAME
from ferrule.planning import Plan
from ferrule.planning import PlanCapability
from ferrule.planning import PlanStep
from ferrule.planning import StepContext

pytestmark = pytest.mark.anyio


def calling_model(seen: list[Any]) -> FunctionModel:
    """Calls execute_dynamic_plan once, then answers with the tool result it got."""

    def reply(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        seen.append([t.name for t in info.function_tools])
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        results = [p for p in last.parts if isinstance(p, ToolReturnPart)]
        if not results:
            return ModelResponse(parts=[ToolCallPart(TOOL_NAME, {}, tool_call_id="call-1")])
        seen.append(results[0].content)
        return ModelResponse(parts=[TextPart("workflow finished")])

    return FunctionModel(reply)


def plan_with(ran: list[str], *, gated: bool) -> Plan:
    def fetch(ctx: StepContext[Any]) -> dict[str, int]:
        ran.append("fetch")
        return {"rows": 3}

    async def write(ctx: StepContext[Any]) -> str:
        ran.append("write")
        return f"wrote {ctx.outputs['fetch']['rows']} rows"

    return Plan(
        [
            PlanStep("fetch", "Fetch rows", run=fetch),
            PlanStep("write", "Write rows", ("fetch",), gated, run=write),
        ]
    )


async def test_ungated_plan_runs_as_a_tool_and_returns_outputs_and_usage() -> None:
    ran: list[str] = []
    seen: list[Any] = []
    capability = PlanCapability(plan_with(ran, gated=False))
    assert capability.id == CAPABILITY_ID
    agent = Agent(calling_model(seen), capabilities=[capability])
    result = await agent.run("run the workflow")
    assert result.output == "workflow finished"
    assert ran == ["fetch", "write"]
    assert seen[0] == [TOOL_NAME]
    assert seen[-1] == {
        "revision": 1,
        "steps": [{"id": "fetch", "output": {"rows": 3}}, {"id": "write", "output": "wrote 3 rows"}],
        "usage": {},
    }


async def test_a_gated_plan_makes_the_tool_require_approval_then_supplies_step_approvals() -> None:
    ran: list[str] = []
    seen: list[Any] = []
    agent = Agent(calling_model(seen), capabilities=[PlanCapability(plan_with(ran, gated=True))])
    with pytest.raises(PauseRequiredError):
        await agent.run("run the workflow")
    assert ran == []
    paused = await agent.run_until_pause("run the workflow")
    assert isinstance(paused, Paused)
    assert [(c.tool_name, c.kind) for c in paused.pending] == [(TOOL_NAME, "approval")]
    assert ran == []
    result = await agent.resume(paused.to_json(), {paused.pending[0].tool_call_id: Approved()})
    assert not isinstance(result, Paused)
    assert result.output == "workflow finished"
    assert ran == ["fetch", "write"]
    assert seen[-1]["steps"][1] == {"id": "write", "output": "wrote 3 rows"}


async def test_the_plan_runs_under_the_tool_calls_deadline_and_is_cancelled_with_it() -> None:
    deadlines: list[float | None] = []

    async def forever(ctx: StepContext[Any]) -> None:
        deadlines.append(ctx.deadline)
        await anyio.sleep_forever()

    capability = PlanCapability(Plan([PlanStep("wait", "Wait", run=forever)]))
    agent = Agent(calling_model([]), capabilities=[capability])
    started = anyio.current_time()
    with pytest.raises(RunTimeoutError):
        await agent.run("go", timeout=0.2)
    ended = anyio.current_time()
    assert len(deadlines) == 1
    deadline = deadlines[0]
    # The step saw the agent run's own deadline: set when the run started, passed when it ended.
    assert deadline is not None
    assert started + 0.2 <= deadline <= ended
