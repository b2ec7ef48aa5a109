"""ferrule's agent loop.

```python
from ferrule.agent import Agent

agent = Agent("openai:gpt-5-mini", instructions="Be concise.")
result = agent.run_sync("What is the capital of France?")
print(result.output)
```

`Agent` runs one loop for `run`, `run_sync`, `run_stream`, `iter`, `run_until_pause` and `resume`.
Tools are typed functions (`Tool`, `@agent.tool`), output is text or typed (`ToolOutput`,
`NativeOutput`, `PromptedOutput`), and `ferrule.agent.testing` has models for tests.

Extension points: `toolsets` (`FunctionToolset`, namespaces, per-step preparers), `capabilities`
(eager and on-demand bundles), `policies` (`ToolPolicy`), `hooks` (`HookEvent`),
`history_processors`, `context_budget`, `PendingMessageQueue`, `multi_agent` (delegation scopes),
`pricing` (exact nano-USD cost), side-effect safety (`risk`/`confirmation` on tools, `guard=`,
`confirm=`, `ActionReceipt`s, single-use checkpoints in a `CheckpointStore`), `JsonlObserver` and OpenTelemetry (`instrument=True`). `spec` describes an agent
as data (`AgentSpec`: parse, validate, resolve); it is imported only when used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ferrule.core.retry import RetryPolicy

from ._agent import Agent, EndStrategy
from ._checkpoints import CheckpointStore, InMemoryCheckpointStore, SqliteCheckpointStore
from ._context import RunContext
from ._controls import CheckpointBinding, ConfirmFn, GuardFn
from ._deferred import (
    Approved,
    Decision,
    DeferredCall,
    DeferredToolRequests,
    DeferredToolResults,
    Denied,
    ExternalResult,
    Paused,
    PausedState,
    ResumeDecisions,
    ToolApproved,
    ToolDenied,
)
from ._events import (
    AgentEvent,
    AgentStreamEvent,
    DeferredToolCallsEvent,
    EnqueuedMessagesEvent,
    FinalResultEvent,
    FinalStep,
    FunctionToolCallEvent,
    FunctionToolResultEvent,
    ModelResponseStep,
    OutputRetryEvent,
    PartialOutputEvent,
    PausedStep,
    RunStep,
    ToolResultsStep,
)
from ._guard import ask_guard
from ._options import ResumeOptions, RunOptions
from ._output import NativeOutput, PromptedOutput, StructuredDict, TextOutput, ToolOutput
from ._queue import PendingMessageQueue
from ._receipts import ActionReceipt, ActionStatus, receipts_from_messages
from ._result import AgentRun, AgentRunResult, StreamedRunResult
from ._state import HistoryView
from ._sync_tools import ToolThreads
from ._tools import Confirmation, Risk, SideEffect, Tool, ToolLimits, ToolReturn
from ._util import refuse_in_event_loop
from .correlation import RunCorrelation
from .exceptions import (
    AgentRunError,
    CheckpointConsumedError,
    ModelRetry,
    PauseRequiredError,
    PendingMessageQueueClosed,
    RunState,
    UnexpectedModelBehavior,
    run_state_of,
)
from .hooks import HookEvent
from .policies import ToolPolicy

if TYPE_CHECKING:
    from ._instrument import InstrumentationSettings
    from ._observe import JsonlObserver
    from .capabilities import Capability, CapabilityLayer, CapabilitySnapshot
    from .context_budget import ContextBudget
    from .pricing import Pricing
    from .spec import AgentSpec
    from .toolsets import AbstractToolset, FunctionToolset

__version__ = "0.1.0"

__all__ = [
    "ActionReceipt",
    "ActionStatus",
    "CheckpointBinding",
    "CheckpointConsumedError",
    "CheckpointStore",
    "Confirmation",
    "ConfirmFn",
    "GuardFn",
    "InMemoryCheckpointStore",
    "JsonlObserver",
    "Risk",
    "SqliteCheckpointStore",
    "AgentSpec",
    "ToolPolicy",
    "Pricing",
    "PendingMessageQueueClosed",
    "PendingMessageQueue",
    "HookEvent",
    "FunctionToolset",
    "EnqueuedMessagesEvent",
    "ContextBudget",
    "CapabilitySnapshot",
    "CapabilityLayer",
    "Capability",
    "AbstractToolset",
    "Agent",
    "AgentEvent",
    "AgentRun",
    "AgentRunError",
    "AgentRunResult",
    "AgentStreamEvent",
    "Approved",
    "Decision",
    "DeferredCall",
    "DeferredToolCallsEvent",
    "DeferredToolRequests",
    "DeferredToolResults",
    "Denied",
    "EndStrategy",
    "ExternalResult",
    "FinalResultEvent",
    "FinalStep",
    "FunctionToolCallEvent",
    "FunctionToolResultEvent",
    "HistoryView",
    "InstrumentationSettings",
    "ModelResponseStep",
    "ModelRetry",
    "NativeOutput",
    "OutputRetryEvent",
    "PartialOutputEvent",
    "PauseRequiredError",
    "Paused",
    "PausedState",
    "PausedStep",
    "PromptedOutput",
    "ResumeDecisions",
    "ResumeOptions",
    "RetryPolicy",
    "RunContext",
    "RunCorrelation",
    "RunOptions",
    "RunState",
    "RunStep",
    "SideEffect",
    "StreamedRunResult",
    "StructuredDict",
    "TextOutput",
    "Tool",
    "ToolApproved",
    "ToolDenied",
    "ToolLimits",
    "ToolOutput",
    "ToolResultsStep",
    "ToolReturn",
    "ToolThreads",
    "UnexpectedModelBehavior",
    "ask_guard",
    "receipts_from_messages",
    "refuse_in_event_loop",
    "run_state_of",
    "__version__",
]


# Public names whose modules load on first use, so that `import ferrule.agent` does not pay for
# them (tests/test_import_cost.py keeps it so): name -> module.
_LAZY: dict[str, str] = {
    "AbstractToolset": "toolsets",
    "Capability": "capabilities",
    "CapabilityLayer": "capabilities",
    "CapabilitySnapshot": "capabilities",
    "ContextBudget": "context_budget",
    "FunctionToolset": "toolsets",
    "InstrumentationSettings": "_instrument",
    "JsonlObserver": "_observe",
    "Pricing": "pricing",
}


def __getattr__(name: str) -> Any:
    if name == "AgentSpec":
        from .spec import AgentSpec

        return AgentSpec
    module = _LAZY.get(name)
    if module is not None:
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        globals()[name] = value  # later look-ups skip this function
        return value
    raise AttributeError(f"module 'ferrule.agent' has no attribute {name!r}")
