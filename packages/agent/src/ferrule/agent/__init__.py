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
from typing import TYPE_CHECKING
from typing import Any

from ferrule.core.retry import RetryPolicy

from ._agent import Agent
from ._agent import EndStrategy
from ._checkpoints import CheckpointStore
from ._checkpoints import InMemoryCheckpointStore
from ._checkpoints import SqliteCheckpointStore
from ._context import RunContext
from ._controls import CheckpointBinding
from ._controls import ConfirmFn
from ._controls import GuardFn
from ._deferred import Approved
from ._deferred import Decision
from ._deferred import DeferredCall
from ._deferred import DeferredToolRequests
from ._deferred import DeferredToolResults
from ._deferred import Denied
from ._deferred import ExternalResult
from ._deferred import Paused
from ._deferred import PausedState
from ._deferred import ResumeDecisions
from ._deferred import ToolApproved
from ._deferred import ToolDenied
from ._events import AgentEvent
from ._events import AgentStreamEvent
from ._events import DeferredToolCallsEvent
from ._events import EnqueuedMessagesEvent
from ._events import FinalResultEvent
from ._events import FinalStep
from ._events import FunctionToolCallEvent
from ._events import FunctionToolResultEvent
from ._events import ModelResponseStep
from ._events import OutputRetryEvent
from ._events import PartialOutputEvent
from ._events import PausedStep
from ._events import RunStep
from ._events import ToolResultsStep
from ._guard import ask_guard
from ._options import ResumeOptions
from ._options import RunOptions
from ._output import NativeOutput
from ._output import PromptedOutput
from ._output import StructuredDict
from ._output import TextOutput
from ._output import ToolOutput
from ._queue import PendingMessageQueue
from ._receipts import ActionReceipt
from ._receipts import ActionStatus
from ._receipts import receipts_from_messages
from ._result import AgentRun
from ._result import AgentRunResult
from ._result import StreamedRunResult
from ._state import HistoryView
from ._sync_tools import ToolThreads
from ._tools import Confirmation
from ._tools import Risk
from ._tools import SideEffect
from ._tools import Tool
from ._tools import ToolLimits
from ._tools import ToolReturn
from ._util import refuse_in_event_loop
from .correlation import RunCorrelation
from .exceptions import AgentRunError
from .exceptions import CheckpointConsumedError
from .exceptions import ModelRetry
from .exceptions import PauseRequiredError
from .exceptions import PendingMessageQueueClosed
from .exceptions import RunState
from .exceptions import UnexpectedModelBehavior
from .exceptions import run_state_of
from .hooks import HookEvent
from .policies import ToolPolicy

if TYPE_CHECKING:
    from ._instrument import InstrumentationSettings
    from ._observe import JsonlObserver
    from .capabilities import Capability
    from .capabilities import CapabilityLayer
    from .capabilities import CapabilitySnapshot
    from .context_budget import ContextBudget
    from .pricing import Pricing
    from .spec import AgentSpec
    from .toolsets import AbstractToolset
    from .toolsets import FunctionToolset

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
