"""The agent's exception classes and the run state they carry (the bottom of the agent's layers).

Every exception that ends a run carries the run's state up to the failure (history, usage, retry
counters, calls with unknown outcome): read it with [`run_state_of`][ferrule.agent.exceptions.run_state_of].
Application exceptions raised by tools, output functions and validators are re-raised unchanged
(the same object, never wrapped); the state rides on them as an attribute and a note is added.

This module imports nothing from the agent, so every other module can raise these errors. The
public home of every agent exception is `ferrule.agent.exceptions`, which also re-exports the two
families defined beside the types they carry (`PauseRequiredError` in `_deferred`, the context
budget errors in `context_budget`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Any

from ferrule.core.errors import FerruleError
from ferrule.core.errors import UserError

from ._effects import ActionReceipt

if TYPE_CHECKING:
    from ferrule.core.messages import Message
    from ferrule.core.messages import ToolCallPart
    from ferrule.core.usage import RunUsage

_STATE_ATTR = "__ferrule_run_state__"


class ModelRetry(Exception):
    """Raise from a tool, output function or output validator to ask the model to try again.

    The message is sent to the model as a retry prompt, so it must be safe for the model to read.
    Retries count against the tool's (or the output's) retry budget.
    """

    def __init__(self, message: str) -> None:
        self.message = message
        """The correction sent to the model."""
        super().__init__(message)


class RunState:
    """A run's state when it ended with an exception: what happened up to the failure."""

    __slots__ = (
        "actions",
        "messages",
        "new_message_index",
        "output_retries",
        "tool_retries",
        "unknown_outcomes",
        "usage",
    )

    def __init__(
        self,
        *,
        messages: list[Message],
        new_message_index: int,
        usage: RunUsage,
        tool_retries: dict[str, int],
        output_retries: int,
        unknown_outcomes: Sequence[ToolCallPart],
        actions: Sequence[ActionReceipt] = (),
    ) -> None:
        self.messages = messages
        """The history up to the failure (tool calls that did not finish have `interrupted` results)."""
        self.new_message_index = new_message_index
        """Index of the first message this run added."""
        self.usage = usage
        """Usage up to the failure."""
        self.tool_retries = tool_retries
        """Retries used per tool."""
        self.output_retries = output_retries
        """Output retries used."""
        self.unknown_outcomes = list(unknown_outcomes)
        """Calls of non-idempotent tools whose outcome is unknown (interrupted or timed out mid-call)."""
        self.actions = list(actions)
        """A receipt for every call of a tool that is not read-only up to the failure (the calls of
        `unknown_outcomes` are its `unknown` receipts)."""

    def all_messages(self) -> list[Message]:
        """The whole history up to the failure."""
        return list(self.messages)

    def new_messages(self) -> list[Message]:
        """The messages this run added before it failed."""
        return self.messages[self.new_message_index :]

    def __repr__(self) -> str:
        return f"RunState(messages={len(self.messages)}, usage={self.usage!r})"


def run_state_of(error: BaseException) -> RunState | None:
    """The state of the run that `error` ended, or `None` when it did not come out of a run."""
    state = getattr(error, _STATE_ATTR, None)
    return state if isinstance(state, RunState) else None


def attach_state(error: BaseException, state: RunState) -> None:
    """Record `state` on `error` (once) so `run_state_of` can find it; used by the loop."""
    if getattr(error, _STATE_ATTR, None) is not None:
        return
    try:
        setattr(error, _STATE_ATTR, state)
    except (AttributeError, TypeError):  # pragma: no cover - exceptions with __slots__ and no __dict__
        return
    if not isinstance(error, FerruleError):
        error.add_note(
            "ferrule: this exception ended an agent run; its history and usage are available via "
            "ferrule.agent.exceptions.run_state_of(error)"
        )


class AgentRunError(FerruleError):
    """Base class of the errors that end an agent run."""

    @property
    def run_state(self) -> RunState | None:
        """The run's state at the failure (also available through `run_state_of`)."""
        return run_state_of(self)


class UnexpectedModelBehavior(AgentRunError):
    """The model behaved in a way the agent cannot recover from."""

    def __init__(self, message: str, *, body: Any = None) -> None:
        self.message = message
        """What went wrong."""
        self.body = body
        """The offending content, when useful for diagnosis."""
        super().__init__(message)


class ToolRetriesExceeded(UnexpectedModelBehavior):
    """A tool asked for (or caused) more retries than its budget allows."""

    def __init__(self, tool_name: str, max_retries: int) -> None:
        self.tool_name = tool_name
        """The tool whose budget ran out."""
        self.max_retries = max_retries
        """The tool's retry budget."""
        super().__init__(
            f"tool {tool_name!r} exceeded its retry budget of {max_retries}; "
            "raise Tool(max_retries=...) or Agent(retries=...), or fix the tool's schema or description"
        )


class OutputRetriesExceeded(UnexpectedModelBehavior):
    """The model failed to produce valid output within the output retry budget."""

    def __init__(self, max_retries: int, last_error: str) -> None:
        self.max_retries = max_retries
        """The output retry budget."""
        self.last_error = last_error
        """Why the last output was rejected."""
        super().__init__(
            f"the model's output was rejected more than {max_retries} times (last: {last_error}); "
            "raise Agent(output_retries=...) or simplify the output type"
        )


class EmptyResponseError(UnexpectedModelBehavior):
    """The model kept returning empty responses (no text and no tool call)."""


class OutputTruncatedError(UnexpectedModelBehavior):
    """The model stopped because it reached its token limit (finish reason `length`)."""


class ContentFilteredResponseError(UnexpectedModelBehavior):
    """The provider stopped the response on content-policy grounds (finish reason `content_filter`)."""


class IncompleteToolCallError(UnexpectedModelBehavior):
    """A tool call in the response is incomplete (no name, or arguments cut off by the token limit)."""


class DuplicateToolCallIdError(UnexpectedModelBehavior):
    """A response that pauses holds two tool calls with one ID; nothing of the response was executed.

    Decisions are keyed by call ID, so they could not tell the two calls apart: the model (or its
    provider adapter) must give each call of a response a unique ID.
    """

    def __init__(self, tool_call_id: str, tool_names: Sequence[str]) -> None:
        self.tool_call_id = tool_call_id
        """The ID two calls share."""
        names = ", ".join(sorted(set(tool_names)))
        super().__init__(
            f"the model response holds two tool calls with ID {tool_call_id!r} ({names}) and pauses for "
            "decisions, which are keyed by call ID: a decision could apply to the wrong call. Nothing of "
            "the response was executed: use a model (or provider adapter) that gives each call of a response "
            "a unique ID"
        )


class RunTimeoutError(AgentRunError, TimeoutError):
    """The run's absolute deadline (`run_timeout` / `timeout=`) passed; in-flight work was drained."""


class RunCancelledError(AgentRunError):
    """The run was cancelled through its handle (`AgentRun.cancel()` / `StreamedRunResult.cancel()`)."""


class ToolThreadsExhaustedError(AgentRunError):
    """Every worker thread of the agent's sync tools is held by a call that timed out or was cancelled.

    Those calls are still running (a sync function cannot be interrupted); no sync tool of the
    agent can run until one of them returns. The message names the tools holding the threads.
    """


class PausedStateError(UserError):
    """A paused state could not be accepted; nothing was executed."""


class PausedStateEncodeError(PausedStateError):
    """A paused state cannot be written as JSON: a value in it (typically a tool's
    `ToolReturn(metadata=...)`) is not JSON data. The message names where it is."""


class PausedStateVersionError(PausedStateError):
    """The paused state was written by a newer (or unknown) format version."""


class PausedStateIntegrityError(PausedStateError):
    """The paused state's integrity check failed (tampered, unsigned, or signed with another key)."""


class DecisionError(PausedStateError):
    """The decisions passed to `resume` do not match the paused calls; nothing was executed."""


class ToolDefinitionError(UserError):
    """A tool cannot be built from the given function or options."""


class OutputSpecError(UserError):
    """The output type or output mode cannot be used (or is not supported by the model)."""


class PendingMessageQueueClosed(UserError):
    """Messages were enqueued after the run ended (or the queue was closed); they were not accepted."""


class UnknownCostError(AgentRunError):
    """The run has a cost limit, but the price of a response is unknown, so the limit cannot hold."""
