"""What a model-planned run returns: evidence, action receipts, warnings, statistics."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from typing import Literal
from typing import TypeAlias

import msgspec

from ferrule.agent import ActionReceipt
from ferrule.agent import ActionStatus
from ferrule.agent import Risk
from ferrule.agent import SideEffect
from ferrule.core.usage import RunUsage

from ._document import PlanDocument
from ._pointer import parse_pointer
from ._pointer import resolve

__all__ = [
    "ActionReceipt",
    "ActionStatus",
    "ConfirmationRequest",
    "Evidence",
    "PlanReport",
    "PlanStats",
    "PlanWarning",
    "PlanningResult",
    "StepResult",
    "StepStatus",
]

StepStatus: TypeAlias = Literal[
    "pending", "succeeded", "failed", "skipped", "unknown", "denied", "confirmation_required"
]
"""Where a plan-document step stands."""


class ConfirmationRequest(msgspec.Struct, frozen=True, kw_only=True):
    """What a `PlanningAgent(confirm=...)` callback decides on: one step's call to a tool that needs approval."""

    step_id: str
    """The step."""
    tool_name: str
    """The tool."""
    args: dict[str, Any]
    """The validated arguments, after bindings."""
    side_effect: SideEffect
    """The tool's declared side effect."""
    tool_call_id: str
    """The ID the call will have (and its receipt)."""
    risk: Risk = "low"
    """The tool's declared risk."""


class Evidence(msgspec.Struct, frozen=True, kw_only=True):
    """One successful step's output (or, in chat mode, one tool result), addressable by JSON Pointer."""

    step_id: str | None
    """The step (`None` in chat mode)."""
    capability: str
    """The tool, or `agent` for an agentic step."""
    value: Any
    """The output as plain JSON values."""
    tool_call_id: str | None = None
    """The call that produced it."""

    def get(self, pointer: str = "") -> Any:
        """The value at an RFC 6901 pointer inside `value` (`PointerError` if there is none)."""
        return resolve(self.value, parse_pointer(pointer))


class PlanWarning(msgspec.Struct, frozen=True, kw_only=True):
    """A non-fatal problem: a skipped step, an optional step that failed, a call that was not confirmed."""

    kind: Literal[
        "step_skipped", "optional_step_failed", "not_confirmed", "denied", "content_dropped", "replanned"
    ]
    """What happened."""
    message: str
    """What it means."""
    step_id: str | None = None
    """The step concerned, if any."""


class PlanStats(msgspec.Struct, frozen=True, kw_only=True):
    """Counters and durations of one run."""

    steps: int = 0
    """Steps that ran (tool or agent calls started), across revisions."""
    skipped: int = 0
    """Steps skipped (their tools never called)."""
    failed: int = 0
    """Step runs that did not succeed."""
    batches: int = 0
    """Parallel batches started."""
    model_calls: int = 0
    """Model requests: router, planner, replanner, agentic steps and composer."""
    tool_calls: int = 0
    """Tool calls: tool steps plus the calls of agentic steps (or of the chat loop)."""
    replans: int = 0
    """Patches applied."""
    planning_seconds: float = 0.0
    """Time in the planner and replanner."""
    execution_seconds: float = 0.0
    """Time executing steps."""
    composing_seconds: float = 0.0
    """Time in the final composer."""
    total_seconds: float = 0.0
    """The whole run, routing included."""


class StepResult(msgspec.Struct, frozen=True, kw_only=True):
    """The final state of one step of the last revision (or of a replaced one)."""

    id: str
    """The step."""
    status: StepStatus
    """Where it ended."""
    capability: str
    """The tool, or `agent`."""
    revision: int
    """The revision it belongs to."""
    input: Any = None
    """The input it was called with, after bindings (when it ran)."""
    output: Any = None
    """Its output (when it succeeded)."""
    error: str | None = None
    """Why it failed or was skipped."""


class PlanReport(msgspec.Struct, frozen=True, kw_only=True):
    """What a run did: also attached as `error.report` to a `PlanRunError`."""

    plan: PlanDocument | None
    """The last revision of the plan (`None` in chat mode or before planning finished)."""
    revision: int
    """Its revision number (0 without a plan)."""
    steps: Mapping[str, StepResult]
    """Each step's final state, in declaration order; replaced steps stay under their own revision."""
    evidence: tuple[Evidence, ...]
    """Outputs of the steps that succeeded, in completion order."""
    actions: tuple[ActionReceipt, ...]
    """A receipt for every call to a tool that is not read-only, in the order the calls were made."""
    warnings: tuple[PlanWarning, ...]
    """Non-fatal problems."""
    stats: PlanStats
    """Counters and durations."""
    usage: RunUsage
    """Usage of every model request and tool call of the run."""


class PlanningResult(msgspec.Struct, frozen=True, kw_only=True):
    """The answer of a `PlanningAgent` run, with everything that led to it."""

    output: str
    """The answer: the composer's text (complex mode) or the agent's (chat mode)."""
    mode: Literal["chat", "complex"]
    """How the request was handled."""
    report: PlanReport
    """Plan, steps, evidence, actions, warnings, statistics and usage."""

    @property
    def plan(self) -> PlanDocument | None:
        """The final plan revision (complex mode)."""
        return self.report.plan

    @property
    def evidence(self) -> tuple[Evidence, ...]:
        """Outputs the answer was composed from."""
        return self.report.evidence

    @property
    def actions(self) -> tuple[ActionReceipt, ...]:
        """Receipts of the side-effecting calls."""
        return self.report.actions

    @property
    def warnings(self) -> tuple[PlanWarning, ...]:
        """Non-fatal problems."""
        return self.report.warnings

    @property
    def stats(self) -> PlanStats:
        """Counters and durations."""
        return self.report.stats

    def usage(self) -> RunUsage:
        """Usage of the whole run."""
        return self.report.usage

    def evidence_of(self, step_id: str) -> Evidence:
        """The evidence of one step (`KeyError` if it did not succeed)."""
        for item in self.report.evidence:
            if item.step_id == step_id:
                return item
        raise KeyError(step_id)
