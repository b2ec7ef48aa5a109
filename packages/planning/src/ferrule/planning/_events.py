"""Plan events: what observers of `run` and streams of a `PlanningAgent` receive.

Every event names the plan run (`run_id`), the plan revision it belongs to and the parent trace
the run was given (`trace`), so events of nested runs can be linked to the work that started them.
"""

from __future__ import annotations

from typing import Any
from typing import Literal
from typing import TypeAlias
from typing import cast

import msgspec

from ._document import PlanDocument

__all__ = [
    "Advice",
    "AdviceEvent",
    "ApprovalEvent",
    "BatchEndEvent",
    "BatchStartEvent",
    "PlanCompletedEvent",
    "PlanCreatedEvent",
    "PlanEvent",
    "PlanFailedEvent",
    "PlanRevisedEvent",
    "ReplanEvent",
    "StepEndEvent",
    "StepFailedEvent",
    "StepSkippedEvent",
    "StepStartEvent",
]


class Advice(msgspec.Struct, frozen=True, kw_only=True):
    """What one advisor said about a plan revision."""

    advisor: str
    """The advisor's name (its `__name__`, or `advisor-<n>`)."""
    text: str
    """The advice, at most `MAX_ADVICE_CHARS` characters."""
    truncated: bool = False
    """Whether the advisor returned more and the rest was cut."""


class _Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="event_kind"):
    run_id: str
    """The plan run this event belongs to."""
    revision: int
    """The plan revision it concerns."""
    trace: str | None = None
    """The parent trace the run was started with (for example a W3C `traceparent`), if any."""

    @property
    def event_kind(self) -> str:
        """The event's tag, as in its JSON (`"plan_created"`, `"step_start"`, ...)."""
        return cast("str", self.__struct_config__.tag)


class PlanCreatedEvent(_Event, frozen=True, kw_only=True, tag="plan_created"):
    """The planner produced a plan document and it passed validation; nothing has run yet."""

    plan: PlanDocument
    """The validated plan."""


class PlanRevisedEvent(_Event, frozen=True, kw_only=True, tag="plan_revised"):
    """A new revision is about to be advised on or executed (sent before any of that work)."""

    step_ids: tuple[str, ...]
    """The steps of the new revision, in declaration order."""


class AdviceEvent(_Event, frozen=True, kw_only=True, tag="advice"):
    """An advisor returned advice."""

    advice: Advice
    """The advice."""


class ApprovalEvent(_Event, frozen=True, kw_only=True, tag="approval"):
    """The approval gate of one step was evaluated (before any step ran)."""

    step_id: str
    """The gated step."""
    decision: Literal["approved", "denied", "pending"]
    """What the decisions said about it; `pending` when there was none."""


class BatchStartEvent(_Event, frozen=True, kw_only=True, tag="batch_start"):
    """A batch of independent steps is about to run in parallel."""

    batch: int
    """The batch's number in the run, from 1."""
    step_ids: tuple[str, ...]
    """Its steps, in declaration order."""


class BatchEndEvent(_Event, frozen=True, kw_only=True, tag="batch_end"):
    """Every step of a batch finished."""

    batch: int
    """The batch's number in the run, from 1."""
    step_ids: tuple[str, ...]
    """Its steps, in declaration order."""


class StepStartEvent(_Event, frozen=True, kw_only=True, tag="step_start"):
    """A step is about to run."""

    step_id: str
    """The step."""
    capability: str | None = None
    """The tool a plan-document step calls (`None` for `Plan` steps and agentic steps)."""
    input: Any = None
    """The step's input after bindings (plan-document steps only)."""


class StepEndEvent(_Event, frozen=True, kw_only=True, tag="step_end"):
    """A step finished successfully."""

    step_id: str
    """The step."""
    output: Any = None
    """Its output."""


class StepSkippedEvent(_Event, frozen=True, kw_only=True, tag="step_skipped"):
    """A step will not run: its condition is false, or a dependency it needs did not produce output.

    Its tool is never called."""

    step_id: str
    """The step."""
    reason: str
    """Why it was skipped."""


class StepFailedEvent(_Event, frozen=True, kw_only=True, tag="step_failed"):
    """A plan-document step did not succeed."""

    step_id: str
    """The step."""
    status: Literal["failed", "unknown", "denied", "confirmation_required"]
    """`unknown`: a side effect may have happened (never retried); `denied` and
    `confirmation_required`: the tool was not called."""
    error: str
    """What went wrong (bounded, credentials redacted)."""


class ReplanEvent(_Event, frozen=True, kw_only=True, tag="replan"):
    """A required step failed and the replanner's patch was applied (`revision` is the new one)."""

    failed: tuple[str, ...]
    """The failed steps that triggered the replan."""
    replaced: tuple[str, ...]
    """The steps the patch removed."""
    added: tuple[str, ...]
    """The steps the patch added."""


class PlanCompletedEvent(_Event, frozen=True, kw_only=True, tag="completed"):
    """Every step of the plan finished (or was skipped)."""


class PlanFailedEvent(_Event, frozen=True, kw_only=True, tag="failed"):
    """The plan run ended with an error."""

    step_id: str | None = None
    """The step that failed, if the failure belongs to one."""
    error: str
    """The error's type and message (bounded, credentials redacted)."""


PlanEvent: TypeAlias = (
    PlanCreatedEvent
    | PlanRevisedEvent
    | AdviceEvent
    | ApprovalEvent
    | BatchStartEvent
    | BatchEndEvent
    | StepStartEvent
    | StepEndEvent
    | StepSkippedEvent
    | StepFailedEvent
    | ReplanEvent
    | PlanCompletedEvent
    | PlanFailedEvent
)
"""Any plan event (`event_kind` tells them apart)."""
