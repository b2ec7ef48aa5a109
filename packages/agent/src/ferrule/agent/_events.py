"""Agent stream events and the steps of step-wise iteration."""

from __future__ import annotations

from typing import Any
from typing import TypeAlias

import msgspec

from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.model import ModelStreamEvent

from ._deferred import DeferredCall

__all__ = [
    "AgentEvent",
    "AgentStreamEvent",
    "DeferredToolCallsEvent",
    "EnqueuedMessagesEvent",
    "FinalResultEvent",
    "FunctionToolCallEvent",
    "FunctionToolResultEvent",
    "ModelResponseStep",
    "OutputRetryEvent",
    "PartialOutputEvent",
    "PausedStep",
    "RunStep",
    "ToolResultsStep",
    "FinalStep",
]


class FunctionToolCallEvent(msgspec.Struct, frozen=True, tag="function_tool_call", tag_field="event_kind"):
    """A function tool call is about to be handled (emitted in call order, before any runs)."""

    part: ToolCallPart
    """The call."""


class FunctionToolResultEvent(
    msgspec.Struct, frozen=True, tag="function_tool_result", tag_field="event_kind"
):
    """A function tool call finished: its result, or the retry prompt sent instead."""

    result: ToolReturnPart | RetryPromptPart
    """The result part that enters history."""

    @property
    def tool_call_id(self) -> str:
        """The ID of the call."""
        return self.result.tool_call_id


class PartialOutputEvent(msgspec.Struct, frozen=True, tag="partial_output", tag_field="event_kind"):
    """The output accumulated so far (provisional; only `FinalResultEvent` is accepted output)."""

    snapshot: Any
    """The text so far, or the repaired JSON snapshot of structured output."""
    output: Any = None
    """The snapshot converted to the output type, when it already converts (else `None`)."""
    has_output: bool = False
    """Whether `output` holds a converted value."""
    tool_name: str | None = None
    """The output tool being streamed, in tool mode."""


class FinalResultEvent(msgspec.Struct, frozen=True, tag="final_result", tag_field="event_kind"):
    """The run's output, after full validation; emitted once."""

    output: Any
    """The validated output."""
    tool_name: str | None = None
    """The output tool that produced it, if any."""
    tool_call_id: str | None = None
    """The ID of that output tool call, if any."""


class DeferredToolCallsEvent(msgspec.Struct, frozen=True, tag="deferred_tool_calls", tag_field="event_kind"):
    """The run pauses: these calls need decisions."""

    calls: list[DeferredCall]
    """The pending calls."""


class EnqueuedMessagesEvent(msgspec.Struct, frozen=True, tag="enqueued_messages", tag_field="event_kind"):
    """Messages from the run's `PendingMessageQueue` entered the history."""

    messages: list[ModelRequest]
    """The requests added, in order."""


class OutputRetryEvent(msgspec.Struct, frozen=True, tag="output_retry", tag_field="event_kind"):
    """The model's output was rejected and a correction is sent back."""

    part: RetryPromptPart
    """The retry prompt."""


AgentEvent: TypeAlias = (
    FunctionToolCallEvent
    | FunctionToolResultEvent
    | PartialOutputEvent
    | FinalResultEvent
    | DeferredToolCallsEvent
    | OutputRetryEvent
    | EnqueuedMessagesEvent
)
"""An event the agent adds to the model's events."""

AgentStreamEvent: TypeAlias = ModelStreamEvent | AgentEvent
"""Any event of an agent stream: raw model events first, then the agent's events."""


# --- steps of step-wise iteration ------------------------------------------------------------------


class ModelResponseStep(msgspec.Struct, frozen=True, tag="model_response", tag_field="step_kind"):
    """The model answered (the response is already in history)."""

    response: ModelResponse
    """The response."""


class ToolResultsStep(msgspec.Struct, frozen=True, tag="tool_results", tag_field="step_kind"):
    """Tool results (and retry prompts) were appended; the next step asks the model again."""

    request: ModelRequest
    """The request holding the results."""


class FinalStep(msgspec.Struct, frozen=True, tag="final", tag_field="step_kind"):
    """The run finished with validated output."""

    output: Any
    """The output."""


class PausedStep(msgspec.Struct, frozen=True, tag="paused", tag_field="step_kind"):
    """The run paused for decisions on deferred calls."""

    calls: list[DeferredCall]
    """The pending calls."""


RunStep: TypeAlias = ModelResponseStep | ToolResultsStep | FinalStep | PausedStep
"""One step of `Agent.iter`."""
