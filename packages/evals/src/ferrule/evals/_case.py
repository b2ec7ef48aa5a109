"""Cases: the named inputs a dataset runs its task on."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

import msgspec

from ferrule.core.messages import Message
from ferrule.core.settings import ModelSettings
from ferrule.core.usage import UsageLimits

__all__ = ["Case", "RunOptions"]


class RunOptions(msgspec.Struct, frozen=True, kw_only=True):
    """Per-case keyword arguments of `Agent.run` (only for tasks that are agents).

    They may hold dependencies, histories and callbacks, so a case with any of them set cannot be
    written to a dataset file (`UnsupportedCaseOptions`).
    """

    deps: Any = None
    """The run's dependencies."""
    model_settings: ModelSettings | None = None
    """Settings merged over the agent's for this case."""
    usage_limits: UsageLimits | None = None
    """Usage limits of this case's run."""
    instructions: str | Sequence[str] | None = None
    """Run-specific instructions added to the agent's."""
    message_history: Sequence[Message] | None = None
    """A history the run continues."""
    timeout: float | None = None
    """Seconds the run may take."""

    def is_default(self) -> bool:
        """Whether every option is unset (such a case can be serialized)."""
        return all(getattr(self, field) is None for field in self.__struct_fields__)


class Case(msgspec.Struct, frozen=True):
    """One named case: the task's inputs, the expected value and metadata for evaluators.

    For an `Agent` task `inputs` is the user prompt (a `str`); a function task receives `inputs`
    as they are. Evaluators see the case read-only: do not mutate `inputs`, `expected` or
    `metadata`.
    """

    name: str
    """A name unique within the dataset; reports and comparisons show it."""
    inputs: Any
    """What the task receives: the prompt for an agent, any value for a function."""
    expected: Any = None
    """The expected output, for evaluators that compare (`ExactMatch`, `Contains`, `ModelGrader`)."""
    metadata: Mapping[str, Any] | None = None
    """Application data for evaluators and reports; never sent to a model."""
    run_options: RunOptions | None = None
    """Per-case `Agent.run` arguments (not serializable)."""
