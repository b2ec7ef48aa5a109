"""Plans for ferrule agents.

Two layers, one package:

* **Plans** (`Plan`, `PlanStep`, `run`): immutable, revisable plans of application functions with
  approval gates, advisors and trace-linked observer events, run in dependency order;
  `PlanCapability` exposes one to an agent as the `execute_dynamic_plan` tool.
* **Model-planned runs** (`PlanningAgent`): request -> route -> plan -> execute -> observe
  evidence -> replan -> answer. The planner writes a `PlanDocument` (version 1: steps over a tool
  catalog with dependencies, conditions, RFC 6901 bindings and `required`), bound to one synthetic
  output tool with a forced tool choice; it is validated before any tool runs; steps run in bounded
  parallel batches, false conditions skip branches without calling their tools, a failed required
  step triggers a bounded replan that never re-executes successful work, and a final composer
  turns the evidence into the answer, within one `PlanBudget`.

```python
from ferrule.planning import PlanningAgent

agent = PlanningAgent("openai:gpt-5-mini", tools=[weather, outdoor, indoor, itinerary])
result = await agent.run("Plan tonight in Shenzhen based on the weather", mode="complex")
print(result.output, result.stats, result.actions)
```
"""

from __future__ import annotations

from ._agent import PATCH_TOOL, PLAN_TOOL, ROUTE_TOOL, PlanningAgent, PlanStream
from ._budget import PlanBudget
from ._capability import CAPABILITY_ID, TOOL_NAME, PlanCapability
from ._catalog import MAX_AGENT_TOOL_CALLS, MAX_CATALOG_TOOLS, Catalog
from ._compile import validate_plan
from ._document import (
    PLAN_VERSION,
    AgentTask,
    PlanDocument,
    PlanPatch,
    StepBinding,
    StepCondition,
    TaskStep,
)
from ._errors import PlanDenied, PlanError
from ._events import (
    Advice,
    AdviceEvent,
    ApprovalEvent,
    BatchEndEvent,
    BatchStartEvent,
    PlanCompletedEvent,
    PlanCreatedEvent,
    PlanEvent,
    PlanFailedEvent,
    PlanRevisedEvent,
    ReplanEvent,
    StepEndEvent,
    StepFailedEvent,
    StepSkippedEvent,
    StepStartEvent,
)
from ._limits import (
    MAX_ADVICE_CHARS,
    MAX_ADVISORS,
    MAX_AGENT_PROMPT_CHARS,
    MAX_BINDINGS,
    MAX_ERROR_CHARS,
    MAX_PLAN_STEPS,
    MAX_POINTER_CHARS,
    MAX_STEP_ID_CHARS,
    MAX_TITLE_CHARS,
    PLAN_DOCUMENT,
)
from ._mermaid import render_mermaid
from ._plan import (
    Advisor,
    Decision,
    Observer,
    Plan,
    PlanOutcome,
    PlanPaused,
    PlanStep,
    StepContext,
    StepFunction,
    run,
)
from ._pointer import PointerError, format_pointer, parse_pointer
from ._results import (
    ActionReceipt,
    ActionStatus,
    ConfirmationRequest,
    Evidence,
    PlanningResult,
    PlanReport,
    PlanStats,
    PlanWarning,
    StepResult,
    StepStatus,
)
from ._run_errors import PlanBudgetExceeded, PlanRunError, PlanStepError, PlanTimeoutError
from ._runner import Mode, Router

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "CAPABILITY_ID",
    "MAX_ADVICE_CHARS",
    "MAX_ADVISORS",
    "MAX_AGENT_PROMPT_CHARS",
    "MAX_AGENT_TOOL_CALLS",
    "MAX_BINDINGS",
    "MAX_CATALOG_TOOLS",
    "MAX_ERROR_CHARS",
    "MAX_PLAN_STEPS",
    "MAX_POINTER_CHARS",
    "MAX_STEP_ID_CHARS",
    "MAX_TITLE_CHARS",
    "PATCH_TOOL",
    "PLAN_DOCUMENT",
    "PLAN_TOOL",
    "PLAN_VERSION",
    "ROUTE_TOOL",
    "TOOL_NAME",
    "ActionReceipt",
    "ActionStatus",
    "Advice",
    "AdviceEvent",
    "Advisor",
    "AgentTask",
    "ApprovalEvent",
    "BatchEndEvent",
    "BatchStartEvent",
    "Catalog",
    "ConfirmationRequest",
    "Decision",
    "Evidence",
    "Mode",
    "Observer",
    "Plan",
    "PlanBudget",
    "PlanBudgetExceeded",
    "PlanCapability",
    "PlanCompletedEvent",
    "PlanCreatedEvent",
    "PlanDenied",
    "PlanDocument",
    "PlanError",
    "PlanEvent",
    "PlanFailedEvent",
    "PlanOutcome",
    "PlanPatch",
    "PlanPaused",
    "PlanReport",
    "PlanRevisedEvent",
    "PlanRunError",
    "PlanStats",
    "PlanStep",
    "PlanStepError",
    "PlanStream",
    "PlanTimeoutError",
    "PlanWarning",
    "PlanningAgent",
    "PlanningResult",
    "PointerError",
    "ReplanEvent",
    "Router",
    "StepBinding",
    "StepCondition",
    "StepContext",
    "StepEndEvent",
    "StepFailedEvent",
    "StepFunction",
    "StepResult",
    "StepSkippedEvent",
    "StepStartEvent",
    "StepStatus",
    "TaskStep",
    "format_pointer",
    "parse_pointer",
    "render_mermaid",
    "run",
    "validate_plan",
]
