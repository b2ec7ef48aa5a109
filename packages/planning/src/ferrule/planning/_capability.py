"""A `Plan` as an agent capability: `dynamic_workflow` with the `execute_dynamic_plan` tool."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from ferrule.agent import Capability
from ferrule.agent import RunContext
from ferrule.agent import SideEffect
from ferrule.agent import Tool
from ferrule.agent.multi_agent import Scope

from ._plan import Advisor
from ._plan import Observer
from ._plan import Plan
from ._plan import PlanOutcome
from ._plan import run

__all__ = ["CAPABILITY_ID", "TOOL_NAME", "PlanCapability"]

CAPABILITY_ID = "dynamic_workflow"
"""The capability's ID."""
TOOL_NAME = "execute_dynamic_plan"
"""The tool it contributes."""


class PlanCapability(Capability[Any]):
    """Expose one plan to an agent as the `execute_dynamic_plan` tool of the `dynamic_workflow` capability.

    If any step is gated, the tool requires approval, so the agent pauses before it runs; once that
    outer approval is granted, the tool supplies every per-step approval itself. The plan runs
    under the tool call's deadline and is cancelled with it; the tool's result is the structured
    step outputs and the plan's usage.
    """

    def __init__(
        self,
        plan: Plan,
        *,
        description: str | None = None,
        advisors: Sequence[Advisor] = (),
        observer: Observer | None = None,
        side_effect: SideEffect = "non_idempotent",
    ) -> None:
        self.plan = plan
        """The plan the tool runs."""
        self._advisors = tuple(advisors)
        self._observer = observer
        steps = ", ".join(f"{s.id} ({s.title})" for s in plan.steps)
        summary = description or f"Run the prepared workflow (revision {plan.revision}): {steps}."
        tool = Tool.from_schema(
            self._execute,
            name=TOOL_NAME,
            description=summary,
            parameters_json_schema={"type": "object", "properties": {}, "additionalProperties": False},
            requires_approval=bool(plan.gated),
            side_effect=side_effect,
        )
        super().__init__(CAPABILITY_ID, description=summary, tools=[tool])

    async def _execute(self, ctx: RunContext[Any], args: dict[str, Any]) -> dict[str, Any]:
        del args
        outcome = await run(
            self.plan,
            decisions=dict.fromkeys(self.plan.gated, True),
            advisors=self._advisors,
            observer=self._observer,
            deadline=ctx.deadline,
            scope=Scope.current(),
            deps=ctx.deps,
        )
        assert isinstance(outcome, PlanOutcome)  # every gate was decided, so it cannot pause
        return {
            "revision": outcome.revision,
            "steps": [{"id": step_id, "output": outcome.outputs[step_id]} for step_id in outcome.order],
            "usage": msgspec.to_builtins(outcome.usage),
        }
