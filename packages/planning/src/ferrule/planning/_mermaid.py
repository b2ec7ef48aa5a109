"""Plan documents as Mermaid flowcharts: steps, dependency edges, condition labels."""

from __future__ import annotations

import msgspec

from ._document import PlanDocument
from ._document import TaskStep

__all__ = ["render_mermaid"]

_SHAPES = {"tool": ("[", "]"), "agent": ("[[", "]]"), "optional": ("([", "])")}


def _escape(text: str) -> str:
    """Text safe inside a quoted Mermaid label: quotes, markup and line breaks become entities."""
    out: list[str] = []
    for ch in text:
        if ch in '"#&<>`|{}[]()':
            out.append(f"#{ord(ch)};")
        elif ch in "\r\n\t":
            out.append(" ")
        elif not ch.isprintable():
            out.append(f"#{ord(ch)};")
        else:
            out.append(ch)
    return "".join(out)


def _label(step: TaskStep) -> str:
    what = (
        step.capability
        if step.capability is not None
        else "agent: " + ", ".join(step.agent.tools if step.agent else ())
    )
    text = f"{_escape(step.id)}<br/>{_escape(what)}"
    if step.title:
        text += f"<br/><i>{_escape(step.title)}</i>"
    return text


def render_mermaid(plan: PlanDocument, *, title: str | None = None) -> str:
    """A Mermaid `flowchart TD` of the plan: one node per step, an edge per dependency.

    An edge from a condition's source reads `path = value`; bound values are listed on their
    edges; optional steps are rounded, agentic steps double-boxed. Every label is escaped, and
    nodes get generated IDs (`s0`, `s1`, ...), so no step ID or value can break the chart.
    """
    nodes = {step.id: f"s{index}" for index, step in enumerate(plan.steps)}
    lines: list[str] = []
    if title:
        lines += ["---", f"title: {_escape(title)}", "---"]
    lines.append("flowchart TD")
    for step in plan.steps:
        shape = "agent" if step.agent is not None else "tool" if step.required else "optional"
        left, right = _SHAPES[shape]
        lines.append(f'    {nodes[step.id]}{left}"{_label(step)}"{right}')
    for step in plan.steps:
        for dep in step.depends_on:
            parts: list[str] = []
            condition = step.condition
            if condition is not None and condition.source_step == dep:
                value = msgspec.json.encode(condition.equals).decode()
                parts.append(f"if {condition.source_path} = {value}")
            parts += [f"{b.source_path} → {b.target_path}" for b in step.bindings if b.source_step == dep]
            if parts:
                label = _escape("; ".join(parts))
                lines.append(f'    {nodes[dep]} -->|"{label}"| {nodes[step.id]}')
            else:
                lines.append(f"    {nodes[dep]} --> {nodes[step.id]}")
    return "\n".join(lines) + "\n"
