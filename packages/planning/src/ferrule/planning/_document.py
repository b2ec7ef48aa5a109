"""Plan documents (version 1): the model-planned DAG of seed 002, its patches and its validation."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, cast

import msgspec

from ferrule.core import bounded_json
from ferrule.core.json_schema import SchemaValidationError, compile_validator, render_path

from ._errors import PlanError
from ._graph import CycleError, topological_order
from ._limits import MAX_AGENT_PROMPT_CHARS, MAX_BINDINGS, MAX_TITLE_CHARS, PLAN_DOCUMENT, check_step_id
from ._pointer import PointerError, format_pointer, parse_pointer

if TYPE_CHECKING:
    from ._catalog import Catalog

__all__ = [
    "PLAN_VERSION",
    "AgentTask",
    "PlanDocument",
    "PlanPatch",
    "StepBinding",
    "StepCondition",
    "TaskStep",
    "validate_plan",
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


def _pointer(text: str, step_id: str, what: str) -> tuple[str, ...]:
    try:
        return parse_pointer(text)
    except PointerError as exc:
        raise PlanError(f"{what} {text!r} is not an RFC 6901 JSON Pointer: {exc}", step_id=step_id) from None


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


def check_step(step: TaskStep, index: int, ids: set[str], catalog: Catalog) -> CompiledStep:
    """Validate one step against the catalog and the plan's IDs (everything but cycles)."""
    sid = step.id
    if step.title is not None and len(step.title) > MAX_TITLE_CHARS:
        raise PlanError(f"the title is longer than {MAX_TITLE_CHARS} characters", step_id=sid)
    if (step.capability is None) == (step.agent is None):
        raise PlanError(
            "a step needs exactly one of 'capability' (a tool) and 'agent' (an agentic step)", step_id=sid
        )
    if step.capability is not None:
        tool = catalog.tools.get(step.capability)
        if tool is None:
            raise PlanError(
                f"capability {step.capability!r} is not in the step's tool catalog ({catalog.names_text()})",
                step_id=sid,
            )
        try:
            catalog.input_validator(step.capability).validate(step.input)
        except SchemaValidationError as exc:
            raise PlanError(f"the input does not fit tool {step.capability!r}: {exc}", step_id=sid) from None
    else:
        task = step.agent
        assert task is not None
        catalog.check_agent_task(task, sid)
    seen: set[str] = set()
    for dep in step.depends_on:
        if dep == sid:
            raise PlanError("a step cannot depend on itself", step_id=sid)
        if dep not in ids:
            raise PlanError(f"depends on {dep!r}, which is not a step of the plan", step_id=sid)
        if dep in seen:
            raise PlanError(f"dependency {dep!r} is listed twice", step_id=sid)
        seen.add(dep)
    condition = None
    if step.condition is not None:
        source = step.condition.source_step
        if source not in seen:
            raise PlanError(
                f"its condition reads step {source!r}, which is not one of its dependencies; add it to depends_on",
                step_id=sid,
            )
        condition = (
            source,
            _pointer(step.condition.source_path, sid, "condition source_path"),
            step.condition.equals,
        )
    if len(step.bindings) > MAX_BINDINGS:
        raise PlanError(f"a step has at most {MAX_BINDINGS} bindings", step_id=sid)
    bindings: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = []
    for binding in step.bindings:
        if binding.source_step not in seen:
            raise PlanError(
                f"a binding reads step {binding.source_step!r}, which is not one of its dependencies; "
                "add it to depends_on",
                step_id=sid,
            )
        target = _pointer(binding.target_path, sid, "binding target_path")
        if not target:
            raise PlanError(
                "a binding's target_path must name a member of the input, not the whole input", step_id=sid
            )
        bindings.append(
            (binding.source_step, _pointer(binding.source_path, sid, "binding source_path"), target)
        )
    return CompiledStep(doc=step, index=index, condition=condition, bindings=tuple(bindings))


def _normalized(step: CompiledStep) -> TaskStep:
    doc = step.doc
    changes: dict[str, Any] = {}
    if step.condition is not None and doc.condition is not None:
        changes["condition"] = msgspec.structs.replace(
            doc.condition, source_path=format_pointer(step.condition[1])
        )
    if step.bindings:
        changes["bindings"] = tuple(
            StepBinding(source_step=src, source_path=format_pointer(path), target_path=format_pointer(target))
            for src, path, target in step.bindings
        )
    return msgspec.structs.replace(doc, **changes) if changes else doc


def compile_plan(document: PlanDocument, catalog: Catalog, *, max_steps: int) -> CompiledPlan:
    """Validate a decoded document against the catalog, the bounds and the semantic rules."""
    if document.version != PLAN_VERSION:
        raise PlanError(f"version must be {PLAN_VERSION}, got {document.version!r}")
    steps = document.steps
    if not steps:
        raise PlanError("a plan needs at least one step")
    if len(steps) > max_steps:
        raise PlanError(
            f"the plan has {len(steps)} steps and this is step {max_steps + 1}; PlanBudget.max_steps={max_steps}",
            step_id=steps[max_steps].id,
        )
    ids: set[str] = set()
    for step in steps:
        check_step_id(step.id)
        if step.id in ids:
            raise PlanError("two steps have this ID; step IDs must be unique", step_id=step.id)
        ids.add(step.id)
    compiled = tuple(check_step(step, i, ids, catalog) for i, step in enumerate(steps))
    try:
        order = topological_order([s.id for s in steps], [s.depends_on for s in steps])
    except CycleError as cycle:
        raise PlanError(f"the dependencies form a cycle: {cycle}", step_id=cycle.path[0]) from None
    normalized = PlanDocument(version=PLAN_VERSION, steps=tuple(_normalized(s) for s in compiled))
    compiled = tuple(dataclasses.replace(s, doc=n) for s, n in zip(compiled, normalized.steps, strict=True))
    validator = compile_validator(catalog.document_schema(max_steps=max_steps))
    try:
        validator.validate(msgspec.to_builtins(normalized))
    except SchemaValidationError as exc:  # the semantic rules above are stricter; this is the schema's word
        raise PlanError(
            f"the plan does not match the plan JSON Schema at {render_path(exc.path)}: {exc.message}"
        ) from None
    return CompiledPlan(
        document=normalized,
        steps=compiled,
        by_id={s.id: s for s in compiled},
        order=tuple(order),
    )


def validate_plan(
    document: PlanDocument | Mapping[str, Any] | str | bytes, catalog: Catalog, *, max_steps: int = 12
) -> PlanDocument:
    """Validate a plan document (a `PlanDocument`, a mapping or JSON text) and return it normalized.

    Raises `PlanError` naming the offending step for a document that is malformed, cyclic,
    conditions or binds on a step that is not among its dependencies, names a tool outside the
    catalog, has an input that does not fit its tool, or exceeds a bound. Pointers come back in
    canonical RFC 6901 form (`temperature` becomes `/temperature`).
    """
    decoded: PlanDocument = decode_document(document, PlanDocument, "plan document")
    return compile_plan(decoded, catalog, max_steps=max_steps).document


def prompt_check(agent_prompt: str, step_id: str) -> None:
    """Check an agentic step's prompt."""
    if not agent_prompt.strip():
        raise PlanError("an agentic step needs a non-empty prompt", step_id=step_id)
    if len(agent_prompt) > MAX_AGENT_PROMPT_CHARS:
        raise PlanError(
            f"the agentic step's prompt is longer than {MAX_AGENT_PROMPT_CHARS} characters", step_id=step_id
        )
