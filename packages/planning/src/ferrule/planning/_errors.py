"""The exceptions of ferrule.planning."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ferrule.core.errors import FerruleError, UserError

if TYPE_CHECKING:
    from ._results import PlanReport

__all__ = [
    "PlanBudgetExceeded",
    "PlanDenied",
    "PlanError",
    "PlanRunError",
    "PlanStepError",
    "PlanTimeoutError",
]


class PlanError(UserError):
    """A plan (or a patch) is invalid; raised before any step of it runs.

    Raised for a `Plan` built from bad steps, and for a plan document that is malformed, cyclic,
    conditions or binds on a step that is not a dependency, names a tool outside its catalog or
    exceeds a bound. `step_id` names the offending step when there is one.
    """

    def __init__(self, detail: str, *, step_id: str | None = None) -> None:
        self.step_id = step_id
        """The step the problem is in, or `None` for a problem of the whole plan."""
        self.detail = detail
        """What is wrong and what to do, without the step."""
        where = f"plan step {step_id!r}" if step_id is not None else "plan"
        super().__init__(f"{where}: {detail}")


class PlanDenied(FerruleError):
    """An approval decision explicitly denied a gated step; nothing of the plan ran."""

    def __init__(self, step_id: str, message: str | None = None) -> None:
        self.step_id = step_id
        """The denied step."""
        self.message = message
        """The reason given with the denial, if any."""
        reason = f": {message}" if message else ""
        super().__init__(f"plan step {step_id!r} was denied{reason}")


class PlanRunError(FerruleError):
    """Base class of the errors that end a model-planned run after it started.

    `report` holds what happened up to the failure: evidence of the steps that succeeded, the
    receipts of every side-effecting call (calls with an `unknown` outcome included), warnings and
    statistics.
    """

    report: PlanReport | None = None
    """What the run did before it failed (set by the runner)."""


class PlanStepError(PlanRunError):
    """A required step failed and could not be repaired within `PlanBudget.max_replans`, or its outcome
    is unknown (a side effect that may have happened is never repeated)."""

    def __init__(self, message: str, *, step_id: str, status: str) -> None:
        self.step_id = step_id
        """The step that failed."""
        self.status = status
        """`"failed"` or `"unknown"`."""
        super().__init__(message)


class PlanBudgetExceeded(PlanRunError):
    """A `PlanBudget` limit would be exceeded; raised before the step, batch or call that would exceed it."""

    def __init__(self, budget: str, maximum: int, *, what: str) -> None:
        self.budget = budget
        """The `PlanBudget` field, e.g. `"max_batches"`."""
        self.maximum = maximum
        """Its value."""
        super().__init__(f"{what} would exceed PlanBudget.{budget}={maximum}; raise it to allow more")


class PlanTimeoutError(PlanRunError):
    """The run's `PlanBudget.hard_timeout` (or the plan's deadline) passed; in-flight work was cancelled."""
