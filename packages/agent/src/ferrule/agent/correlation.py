"""Run correlation: the identity of the orchestration an agent run belongs to.

```python
from ferrule.agent import Agent, RunCorrelation

result = await agent.run(
    "Draft it",
    correlation=RunCorrelation(run_id=graph_run_id, node_id="draft", node_name="draft"),
    trace_parent=otel_context,       # an OpenTelemetry Context the run span becomes a child of
)
```

A graph (`ferrule.graph`) or a multi-agent `Session` passes one per agent run, so lifecycle hooks
(`HookEvent.correlation` on `run_start`) and OpenTelemetry spans (`ferrule.run.id`,
`ferrule.graph.node.id`, `ferrule.graph.node.name`, `ferrule.session.id`, ...) share the
orchestration's identity. The agent's own run ID stays `HookEvent.run_id` / `ferrule.agent.run.id`.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["RunCorrelation"]


class RunCorrelation(msgspec.Struct, frozen=True, kw_only=True):
    """Who started this agent run: a stable orchestration run ID and where in it the run sits."""

    run_id: str
    """The orchestration's stable run ID (a graph run, a multi-agent session)."""
    node_id: str | None = None
    """The graph node's ID."""
    node_name: str | None = None
    """The graph node's name."""
    session_id: str | None = None
    """The multi-agent session's ID."""
    transition: str | None = None
    """How a multi-agent scope started the run (`delegate`, `subagent`, `handoff`)."""
    depth: int | None = None
    """The run's depth in a multi-agent tree."""
    run_index: int | None = None
    """The run's position in its session's start order (1-based)."""
    target_name: str | None = None
    """The name of the agent the orchestration targeted."""

    def __post_init__(self) -> None:
        if not isinstance(self.run_id, str) or not self.run_id:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError("RunCorrelation.run_id must be a non-empty string")

    def span_attributes(self) -> dict[str, Any]:
        """The OpenTelemetry attributes of the agent span (fields that are set)."""
        attributes: dict[str, Any] = {"ferrule.run.id": self.run_id}
        for key, value in (
            ("ferrule.graph.node.id", self.node_id),
            ("ferrule.graph.node.name", self.node_name),
            ("ferrule.session.id", self.session_id),
            ("ferrule.session.transition", self.transition),
            ("ferrule.session.depth", self.depth),
            ("ferrule.session.run_index", self.run_index),
            ("ferrule.session.target_name", self.target_name),
        ):
            if value is not None:
                attributes[key] = value
        return attributes
