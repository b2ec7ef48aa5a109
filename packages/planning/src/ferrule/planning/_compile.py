"""Compiling a plan document against a catalog: every step checked, the order found, the schema applied."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import msgspec

from ferrule.core.json_schema import SchemaValidationError
from ferrule.core.json_schema import compile_validator
from ferrule.core.json_schema import render_path

from ._catalog import Catalog
from ._document import PLAN_VERSION
from ._document import CompiledPlan
from ._document import CompiledStep
from ._document import PlanDocument
from ._document import StepBinding
from ._document import TaskStep
from ._document import decode_document
from ._errors import PlanError
from ._graph import CycleError
from ._graph import topological_order
from ._limits import MAX_BINDINGS
from ._limits import MAX_TITLE_CHARS
from ._limits import check_step_id
from ._pointer import PointerError
from ._pointer import format_pointer
from ._pointer import parse_pointer

__all__ = ["validate_plan"]


def _pointer(text: str, step_id: str, what: str) -> tuple[str, ...]:
    try:
        return parse_pointer(text)
    except PointerError as exc:
        raise PlanError(f"{what} {text!r} is not an RFC 6901 JSON Pointer: {exc}", step_id=step_id) from None


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
