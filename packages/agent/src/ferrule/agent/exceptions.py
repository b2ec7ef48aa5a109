"""Exceptions of the agent loop: the public home of every agent exception.

Every exception that ends a run carries the run's state up to the failure (history, usage, retry
counters, calls with unknown outcome): read it with [`run_state_of`][ferrule.agent.exceptions.run_state_of].
Application exceptions raised by tools, output functions and validators are re-raised unchanged
(the same object, never wrapped); the state rides on them as an attribute and a note is added.

The classes are defined in the lowest module that can hold them (`_errors`, or beside the type
they carry: `PauseRequiredError` with `Paused`, the context budget errors with `ContextOverflow`),
so that no module of the agent has to import a higher one to raise them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

from ferrule.core.usage import UsageLimitExceeded

from ._checkpoints import CheckpointConsumedError
from ._checkpoints import CheckpointError
from ._checkpoints import CheckpointNotFoundError
from ._deferred import PauseRequiredError
from ._errors import AgentRunError
from ._errors import ContentFilteredResponseError
from ._errors import DecisionError
from ._errors import DuplicateToolCallIdError
from ._errors import EmptyResponseError
from ._errors import IncompleteToolCallError
from ._errors import ModelRetry
from ._errors import OutputRetriesExceeded
from ._errors import OutputSpecError
from ._errors import OutputTruncatedError
from ._errors import PausedStateEncodeError
from ._errors import PausedStateError
from ._errors import PausedStateIntegrityError
from ._errors import PausedStateVersionError
from ._errors import PendingMessageQueueClosed
from ._errors import RunCancelledError
from ._errors import RunState
from ._errors import RunTimeoutError
from ._errors import ToolDefinitionError
from ._errors import ToolRetriesExceeded
from ._errors import ToolThreadsExhaustedError
from ._errors import UnexpectedModelBehavior
from ._errors import UnknownCostError
from ._errors import run_state_of

if TYPE_CHECKING:
    from .context_budget import ContextBudgetExceeded
    from .context_budget import ContextMediaTooLarge
    from .context_budget import ContextPromptTooLarge
    from .context_budget import ContextSchemaTooLarge
    from .context_budget import ContextTokenLimitExceeded
    from .context_budget import ContextToolsTooLarge

__all__ = [
    "AgentRunError",
    "CheckpointConsumedError",
    "CheckpointError",
    "CheckpointNotFoundError",
    "ContextBudgetExceeded",
    "ContextMediaTooLarge",
    "ContextPromptTooLarge",
    "ContextSchemaTooLarge",
    "ContextTokenLimitExceeded",
    "ContextToolsTooLarge",
    "ContentFilteredResponseError",
    "DecisionError",
    "DuplicateToolCallIdError",
    "EmptyResponseError",
    "IncompleteToolCallError",
    "ModelRetry",
    "OutputRetriesExceeded",
    "OutputSpecError",
    "OutputTruncatedError",
    "PauseRequiredError",
    "PendingMessageQueueClosed",
    "PausedStateEncodeError",
    "PausedStateError",
    "PausedStateIntegrityError",
    "PausedStateVersionError",
    "RunCancelledError",
    "RunState",
    "RunTimeoutError",
    "ToolDefinitionError",
    "ToolRetriesExceeded",
    "ToolThreadsExhaustedError",
    "UnexpectedModelBehavior",
    "UnknownCostError",
    "UsageLimitExceeded",
    "run_state_of",
]

# Every `Context...` name is one of the context budget's errors (the imports under TYPE_CHECKING).
_CONTEXT_BUDGET_ERRORS = frozenset(name for name in __all__ if name.startswith("Context"))


def __getattr__(name: str) -> Any:
    # The context budget's errors load with `ferrule.agent.context_budget` (an agent or run with a
    # budget imports it), not with every module that imports an agent exception.
    if name not in _CONTEXT_BUDGET_ERRORS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import context_budget

    value = getattr(context_budget, name)
    globals()[name] = value  # later look-ups skip this function
    return value
