"""Durable ferrule agent runs on Temporal (https://temporal.io): the run is a Temporal workflow,
model requests, tool calls and MCP calls are activities, approval pauses are signals and updates.

`workflow_runner()` is the sandboxed runner in which ferrule's agent loop runs as workflow code.
`ferrule.durable.temporal.testing` starts the real Temporal servers shipped by the
`ferrule-temporal[testing]` extra, for tests that run without a network. `docs/durable.md` explains
when to choose Temporal or DBOS and how to run a worker.
"""

from __future__ import annotations

from ._agent import ACTIVITIES
from ._agent import AgentWorkflow
from ._agent import PendingApproval
from ._agent import TemporalAgent
from ._agent import mcp_request
from ._agent import model_request
from ._agent import registered
from ._agent import tool_call
from ._sandbox import PASSTHROUGH_MODULES
from ._sandbox import workflow_runner

__version__ = "0.1.0"

__all__ = [
    "ACTIVITIES",
    "PASSTHROUGH_MODULES",
    "AgentWorkflow",
    "PendingApproval",
    "TemporalAgent",
    "__version__",
    "mcp_request",
    "model_request",
    "registered",
    "tool_call",
    "workflow_runner",
]
