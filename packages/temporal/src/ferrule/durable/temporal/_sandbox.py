"""The workflow sandbox in which ferrule's agent loop runs as Temporal workflow code."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

__all__ = ["PASSTHROUGH_MODULES", "workflow_runner"]

PASSTHROUGH_MODULES = (
    "ferrule",
    "msgspec",
    "anyio",
    "sniffio",
    "typing_extensions",
    "fastjsonschema",
    "opentelemetry",
)
"""Modules workflow code takes from the worker instead of re-importing them in the sandbox: ferrule
and what its core and agent import. The loop's own code is deterministic given the recorded results
of its activities; the I/O modules (providers, HTTP) run only inside activities."""

_PRELOAD = (
    # The agent imports these on first use; imported for the first time inside the sandbox, their
    # module-level locks and threads would meet the sandbox's restricted `threading`.
    "anyio._backends._asyncio",
    "ferrule.core.json_schema",
    "ferrule.core.history",
    "ferrule.core.retry",
)


def workflow_runner(*passthrough: str) -> SandboxedWorkflowRunner:
    """Temporal's sandboxed runner, letting ferrule (and `passthrough`, e.g. your tools' module) in.

    Give it to `temporalio.worker.Worker(workflow_runner=...)`. Define agents and tools in a module
    the workflow module imports inside `workflow.unsafe.imports_passed_through()`, not in the
    workflow module itself: the sandbox runs that module again for every workflow.
    """
    from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner
    from temporalio.worker.workflow_sandbox import SandboxRestrictions

    for name in _PRELOAD:
        importlib.import_module(name)
    restrictions = SandboxRestrictions.default.with_passthrough_modules(*PASSTHROUGH_MODULES, *passthrough)
    return SandboxedWorkflowRunner(restrictions=restrictions)
