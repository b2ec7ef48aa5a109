"""The exceptions that end a model-planned run after it started; each carries the run's report so far."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ferrule.core.errors import FerruleError

if TYPE_CHECKING:
    from ._results import PlanReport

__all__ = ["PlanBudgetExceeded", "PlanRunError", "PlanStepError", "PlanTimeoutError"]


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
