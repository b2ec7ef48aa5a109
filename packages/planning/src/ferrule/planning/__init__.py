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

from ._agent import PATCH_TOOL
from ._agent import PLAN_TOOL
from ._agent import ROUTE_TOOL
from ._agent import PlanningAgent
from ._agent import PlanStream
from ._budget import PlanBudget
from ._capability import CAPABILITY_ID
from ._capability import TOOL_NAME
from ._capability import PlanCapability
from ._catalog import MAX_AGENT_TOOL_CALLS
from ._catalog import MAX_CATALOG_TOOLS
from ._catalog import Catalog
from ._compile import validate_plan
from ._document import PLAN_VERSION
from ._document import AgentTask
from ._document import PlanDocument
from ._document import PlanPatch
from ._document import StepBinding
from ._document import StepCondition
from ._document import TaskStep
from ._errors import PlanDenied
from ._errors import PlanError
from ._events import Advice
from ._events import AdviceEvent
from ._events import ApprovalEvent
from ._events import BatchEndEvent
from ._events import BatchStartEvent
from ._events import PlanCompletedEvent
from ._events import PlanCreatedEvent
from ._events import PlanEvent
from ._events import PlanFailedEvent
from ._events import PlanRevisedEvent
from ._events import ReplanEvent
from ._events import StepEndEvent
from ._events import StepFailedEvent
from ._events import StepSkippedEvent
from ._events import StepStartEvent
from ._limits import MAX_ADVICE_CHARS
from ._limits import MAX_ADVISORS
from ._limits import MAX_AGENT_PROMPT_CHARS
from ._limits import MAX_BINDINGS
from ._limits import MAX_ERROR_CHARS
from ._limits import MAX_PLAN_STEPS
from ._limits import MAX_POINTER_CHARS
from ._limits import MAX_STEP_ID_CHARS
from ._limits import MAX_TITLE_CHARS
from ._limits import PLAN_DOCUMENT
from ._mermaid import render_mermaid
from ._plan import Advisor
from ._plan import Decision
from ._plan import Observer
from ._plan import Plan
from ._plan import PlanOutcome
from ._plan import PlanPaused
from ._plan import PlanStep
from ._plan import StepContext
from ._plan import StepFunction
from ._plan import run
from ._pointer import PointerError
from ._pointer import format_pointer
from ._pointer import parse_pointer
from ._results import ActionReceipt
from ._results import ActionStatus
from ._results import ConfirmationRequest
from ._results import Evidence
from ._results import PlanningResult
from ._results import PlanReport
from ._results import PlanStats
from ._results import PlanWarning
from ._results import StepResult
from ._results import StepStatus
from ._run_errors import PlanBudgetExceeded
from ._run_errors import PlanRunError
from ._run_errors import PlanStepError
from ._run_errors import PlanTimeoutError
from ._runner import Mode
from ._runner import Router

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
