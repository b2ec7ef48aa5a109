"""Plan documents (version 1): the model-planned DAG of seed 002, its patches and its validation."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any
from typing import Final
from typing import cast

import msgspec

from ferrule.core import bounded_json

from ._errors import PlanError
from ._limits import MAX_AGENT_PROMPT_CHARS
from ._limits import PLAN_DOCUMENT

__all__ = [
    "PLAN_VERSION",
    "AgentTask",
    "PlanDocument",
    "PlanPatch",
    "StepBinding",
    "StepCondition",
    "TaskStep",
]

PLAN_VERSION: Final = 1
"""The plan-document version this package reads and writes."""


class StepCondition(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Run the step only if a dependency's output has a value at a path."""

    source_step: str
    """The step whose output is tested; it must be one of the step's `depends_on`."""
    source_path: str
    """RFC 6901 JSON Pointer into that output (`/outdoor_suitable`; the leading `/` may be left out)."""
    equals: Any
    """The JSON value the pointed-at value must equal (`true` is not `1`)."""


class StepBinding(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Copy a value from a dependency's output into the step's input before the call."""

    source_step: str
    """The step whose output is read; it must be one of the step's `depends_on`."""
    source_path: str
    """RFC 6901 JSON Pointer into that output."""
    target_path: str
    """RFC 6901 JSON Pointer into the step's input where the value is written (objects on the way are created)."""


class AgentTask(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """An agentic step: a bounded agent sub-run with an explicit tool allowlist."""

    prompt: str
    """What the sub-agent is asked to do (the step's bound input is appended as JSON)."""
    tools: tuple[str, ...]
    """The catalog tools it may call, and no others."""
    max_tool_calls: int
    """Most tool calls it may make (within the plan's remaining `max_tool_calls`)."""


class TaskStep(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """One step of a plan document: a tool call (`capability` + `input`) or an agentic step (`agent`)."""

    id: str
    """Unique within the plan."""
    capability: str | None = None
    """The catalog tool the step calls."""
    input: dict[str, Any] = msgspec.field(default_factory=dict)  # pyright: ignore[reportUnknownVariableType]
    """The tool's arguments before bindings (validated against the tool's schema after them)."""
    depends_on: tuple[str, ...] = ()
    """Steps that must finish (succeed or be skipped) first."""
    condition: StepCondition | None = None
    """Run only if this holds; otherwise the step is skipped and its tool never called."""
    bindings: tuple[StepBinding, ...] = ()
    """Values copied from dependencies' outputs into `input`."""
    required: bool = True
    """A failed required step triggers a replan; a failed optional one only a warning."""
    agent: AgentTask | None = None
    """Makes this an agentic step (instead of `capability`)."""
    title: str | None = None
    """What the step does, for people."""


class PlanDocument(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A model-planned DAG: `{"version": 1, "steps": [...]}`."""

    version: int
    """Always 1."""
    steps: tuple[TaskStep, ...]
    """The steps in declaration order (ties of the dependency order are broken by it)."""

    def to_json(self) -> bytes:
        """The document as compact JSON."""
        return msgspec.json.encode(self)


class PlanPatch(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A replanner's repair: remove the `replace` steps and add `steps` in their place."""

    replace: tuple[str, ...]
    """Steps to remove: every failed required step, plus any not yet started ones; never a succeeded one."""
    steps: tuple[TaskStep, ...]
    """The new steps, inserted where the first replaced step was (IDs may reuse the replaced ones)."""
    version: int = PLAN_VERSION
    """Always 1."""


@dataclasses.dataclass(frozen=True, slots=True)
class CompiledStep:
    """A validated step with its pointers parsed."""

    doc: TaskStep
    index: int
    condition: tuple[str, tuple[str, ...], Any] | None
    bindings: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]

    @property
    def id(self) -> str:
        return self.doc.id


@dataclasses.dataclass(frozen=True, slots=True)
class CompiledPlan:
    """A validated plan document: normalized, with parsed pointers and a dependency order."""

    document: PlanDocument
    steps: tuple[CompiledStep, ...]
    by_id: Mapping[str, CompiledStep]
    order: tuple[str, ...]


def _step_of(value: Any, path: str | None) -> str | None:
    """The ID of the step a msgspec error path like `$.steps[2].id` points into, when readable."""
    if not path or not path.startswith("$.steps[") or not isinstance(value, Mapping):
        return None
    index_text = path[len("$.steps[") :].split("]", 1)[0]
    steps = cast("Mapping[str, Any]", value).get("steps")
    if not index_text.isdigit() or not isinstance(steps, list):
        return None
    items = cast("list[Any]", steps)
    index = int(index_text)
    if index < len(items) and isinstance(items[index], Mapping):
        step_id = cast("Mapping[str, Any]", items[index]).get("id")
        if isinstance(step_id, str):
            return step_id
    return f"#{index}"


def decode_document(document: Any, kind: type[Any], what: str) -> Any:
    """`document` (a Struct, a mapping or JSON text) as a `kind` Struct, within `PLAN_DOCUMENT` limits."""
    if isinstance(document, kind):
        return document
    if isinstance(document, (str, bytes, bytearray, memoryview)):
        try:
            document = bounded_json.decode(cast("bounded_json.JsonInput", document), limits=PLAN_DOCUMENT)
        except bounded_json.JsonError as exc:
            raise PlanError(f"the {what} is not valid JSON within its limits: {exc}") from None
    elif isinstance(document, Mapping):
        try:
            bounded_json.validate(msgspec.json.encode(document), PLAN_DOCUMENT)
        except (TypeError, msgspec.EncodeError) as exc:
            raise PlanError(f"the {what} is not plain JSON data: {exc}") from None
        except bounded_json.JsonError as exc:
            raise PlanError(f"the {what} exceeds its limits: {exc}") from None
    else:
        raise PlanError(f"the {what} must be a JSON object, got {type(document).__name__}")
    try:
        return msgspec.convert(document, kind)
    except msgspec.ValidationError as exc:
        text = str(exc)
        path = text.rsplit(" - at `", 1)[1].rstrip("`") if " - at `" in text else None
        raise PlanError(f"the {what} is malformed: {text}", step_id=_step_of(document, path)) from None


def prompt_check(agent_prompt: str, step_id: str) -> None:
    """Check an agentic step's prompt."""
    if not agent_prompt.strip():
        raise PlanError("an agentic step needs a non-empty prompt", step_id=step_id)
    if len(agent_prompt) > MAX_AGENT_PROMPT_CHARS:
        raise PlanError(
            f"the agentic step's prompt is longer than {MAX_AGENT_PROMPT_CHARS} characters", step_id=step_id
        )
