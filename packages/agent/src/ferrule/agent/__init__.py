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
"""

from __future__ import annotations

from ferrule.core.retry import RetryPolicy

from ._agent import Agent, EndStrategy
from ._context import RunContext
from ._deferred import (
    Approved,
    Decision,
    DeferredCall,
    Denied,
    ExternalResult,
    Paused,
    PausedState,
    ResumeDecisions,
)
from ._events import (
    AgentEvent,
    AgentStreamEvent,
    DeferredToolCallsEvent,
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
from ._instrument import InstrumentationSettings
from ._output import NativeOutput, PromptedOutput, StructuredDict, TextOutput, ToolOutput
from ._result import AgentRun, AgentRunResult, StreamedRunResult
from ._run import HistoryView
from ._tools import SideEffect, Tool, ToolLimits, ToolReturn
from .exceptions import (
    AgentRunError,
    ModelRetry,
    PauseRequiredError,
    RunState,
    UnexpectedModelBehavior,
    run_state_of,
)

__all__ = [
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
    "RetryPolicy",
    "RunContext",
    "RunState",
    "RunStep",
    "SideEffect",
    "StreamedRunResult",
    "StructuredDict",
    "TextOutput",
    "Tool",
    "ToolLimits",
    "ToolOutput",
    "ToolResultsStep",
    "ToolReturn",
    "UnexpectedModelBehavior",
    "run_state_of",
]
