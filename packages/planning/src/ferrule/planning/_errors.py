"""The exceptions of ferrule.planning raised before a plan runs (`_run_errors` holds those that end a run)."""

from __future__ import annotations

from ferrule.core.errors import FerruleError
from ferrule.core.errors import UserError

__all__ = ["PlanDenied", "PlanError"]


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
