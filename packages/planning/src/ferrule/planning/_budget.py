"""`PlanBudget`: the bounds of one model-planned run."""

from __future__ import annotations

import math

import msgspec

__all__ = ["PlanBudget"]


class PlanBudget(msgspec.Struct, frozen=True, kw_only=True):
    """Limits of one `PlanningAgent` run; exceeding one fails before the step, batch or call that would.

    Every field is inclusive: a run that needs exactly the limit succeeds.
    """

    max_steps: int = 12
    """Most steps in one plan revision (a plan or patched plan with more is rejected before it runs)."""
    max_batches: int = 8
    """Most parallel batches one run may start."""
    max_model_calls: int = 6
    """Most model requests: router, planner and replanner (retries included), agentic steps, composer.
    One call is kept back for the composer, so planning and steps fail first when it would be used up."""
    max_tool_calls: int = 20
    """Most tool calls: one per tool step (a batch reserves them before it starts) plus agentic steps' calls."""
    max_replans: int = 1
    """Most patches after required-step failures; the next failure fails the run."""
    max_parallel_steps: int = 4
    """Most steps in one batch."""
    hard_timeout: float | None = None
    """Seconds the whole run may take (`None`: no limit); in-flight work is cancelled when it passes."""
    max_step_output_bytes: int = 1024 * 1024
    """Largest encoded (JSON) output of one step; a larger one fails the step."""

    def __post_init__(self) -> None:
        for name in ("max_steps", "max_batches", "max_parallel_steps", "max_step_output_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"PlanBudget.{name} must be an integer >= 1, got {value!r}")
        for name in ("max_model_calls", "max_tool_calls", "max_replans"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"PlanBudget.{name} must be an integer >= 0, got {value!r}")
        if self.hard_timeout is not None and (not math.isfinite(self.hard_timeout) or self.hard_timeout <= 0):
            raise ValueError(
                f"PlanBudget.hard_timeout must be a positive number of seconds, got {self.hard_timeout!r}"
            )
