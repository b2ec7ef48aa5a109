"""Protocol-neutral UI events: what a browser needs to render one agent run.

`UIBridge` produces them from an agent's stream; `ferrule.ui.ag_ui.encode` and
`ferrule.ui.vercel.encode` turn each into the records of one wire protocol.
"""

from __future__ import annotations

from typing import Any
from typing import Literal
from typing import TypeAlias

import msgspec

__all__ = [
    "ApprovalRequested",
    "ApprovalResolved",
    "CustomValue",
    "FinalResult",
    "ReasoningDelta",
    "ReasoningEnd",
    "ReasoningStart",
    "RunError",
    "RunFinished",
    "RunStarted",
    "TextDelta",
    "TextEnd",
    "TextStart",
    "ToolCallArgs",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolFailed",
    "ToolResult",
    "UIEvent",
]


class RunStarted(msgspec.Struct, frozen=True, tag="run_started", tag_field="type"):
    """A run (or a resumed segment of one) starts streaming."""

    thread_id: str
    """The conversation (AG-UI thread, AI SDK chat)."""
    run_id: str
    """This run."""
    message_id: str | None = None
    """The assistant message the run writes into, when the client continues an existing one."""


class TextStart(msgspec.Struct, frozen=True, tag="text_start", tag_field="type"):
    """A text part of the assistant's answer begins."""

    part_id: str
    """The part's identity, unique within the thread."""


class TextDelta(msgspec.Struct, frozen=True, tag="text_delta", tag_field="type"):
    """More text for an open text part (never empty)."""

    part_id: str
    """The text part."""
    delta: str
    """The new text."""


class TextEnd(msgspec.Struct, frozen=True, tag="text_end", tag_field="type"):
    """A text part is complete."""

    part_id: str
    """The text part."""


class ReasoningStart(msgspec.Struct, frozen=True, tag="reasoning_start", tag_field="type"):
    """A reasoning (thinking) part begins."""

    part_id: str
    """The part's identity, unique within the thread."""


class ReasoningDelta(msgspec.Struct, frozen=True, tag="reasoning_delta", tag_field="type"):
    """More reasoning text (never empty)."""

    part_id: str
    """The reasoning part."""
    delta: str
    """The new text."""


class ReasoningEnd(msgspec.Struct, frozen=True, tag="reasoning_end", tag_field="type"):
    """A reasoning part is complete."""

    part_id: str
    """The reasoning part."""


class ToolCallStart(msgspec.Struct, frozen=True, tag="tool_call_start", tag_field="type"):
    """The model begins a tool call."""

    tool_call_id: str
    """The call's identity."""
    tool_name: str
    """The tool called."""


class ToolCallArgs(msgspec.Struct, frozen=True, tag="tool_call_args", tag_field="type"):
    """More of a tool call's JSON arguments, as streamed (never empty)."""

    tool_call_id: str
    """The call."""
    delta: str
    """The new argument text."""


class ToolCallEnd(msgspec.Struct, frozen=True, tag="tool_call_end", tag_field="type"):
    """A tool call is complete: its full arguments."""

    tool_call_id: str
    """The call."""
    tool_name: str
    """The tool called."""
    args: Any
    """The complete arguments (a JSON object; the raw text if the model sent invalid JSON)."""


class ToolResult(msgspec.Struct, frozen=True, tag="tool_result", tag_field="type"):
    """A tool call succeeded (or an output tool produced the run's output)."""

    tool_call_id: str
    """The call."""
    tool_name: str
    """The tool."""
    output: Any
    """The result value, as sent to the model."""


class ToolFailed(msgspec.Struct, frozen=True, tag="tool_failed", tag_field="type"):
    """A tool call failed, was refused, or was denied by the user."""

    tool_call_id: str
    """The call."""
    tool_name: str
    """The tool."""
    error_text: str
    """What the model was told."""
    denied: bool = False
    """Whether the call was denied at approval."""


class ApprovalRequested(msgspec.Struct, frozen=True, tag="approval_requested", tag_field="type"):
    """A tool call waits for the user's decision; the run pauses after the last of these."""

    approval_id: str
    """The identity the browser's decision must name."""
    tool_call_id: str
    """The call waiting."""
    tool_name: str
    """Its tool."""
    args: Any
    """Its arguments."""
    kind: Literal["approval", "external"] = "approval"
    """`"approval"`; `"external"` for a call whose result the application supplies (the browser can only deny it)."""


class ApprovalResolved(msgspec.Struct, frozen=True, tag="approval_resolved", tag_field="type"):
    """A decision the browser posted was accepted; the resumed run acts on it."""

    approval_id: str
    """The approval answered."""
    tool_call_id: str
    """The call it decides."""
    approved: bool
    """Whether the call may run."""
    reason: str | None = None
    """The user's reason, if any."""


class CustomValue(msgspec.Struct, frozen=True, tag="custom", tag_field="type"):
    """An application value for the browser (AG-UI `CUSTOM`, AI SDK `data-<name>`); built by `custom_value`."""

    name: str
    """The value's name."""
    value: msgspec.Raw
    """The value's JSON, checked against the size limit."""
    id: str | None = None
    """An identity; an AI SDK client replaces an earlier value with the same name and id."""


class FinalResult(msgspec.Struct, frozen=True, tag="final_result", tag_field="type"):
    """The run's validated output."""

    output: Any
    """The output."""


class RunFinished(msgspec.Struct, frozen=True, tag="run_finished", tag_field="type"):
    """The run ended: with output, or paused waiting for the approvals listed."""

    thread_id: str
    """The conversation."""
    run_id: str
    """The run."""
    output: Any = None
    """The run's output when it finished."""
    approvals: tuple[ApprovalRequested, ...] = ()
    """The decisions the run waits for; empty when it finished."""

    @property
    def paused(self) -> bool:
        """Whether the run paused for decisions."""
        return bool(self.approvals)


class RunError(msgspec.Struct, frozen=True, tag="run_error", tag_field="type"):
    """The run failed; no event follows."""

    thread_id: str
    """The conversation."""
    run_id: str
    """The run."""
    message: str
    """What went wrong, safe to show a user (application exception messages are not included)."""
    code: str
    """A stable code: the error's class name."""


UIEvent: TypeAlias = (
    RunStarted
    | TextStart
    | TextDelta
    | TextEnd
    | ReasoningStart
    | ReasoningDelta
    | ReasoningEnd
    | ToolCallStart
    | ToolCallArgs
    | ToolCallEnd
    | ToolResult
    | ToolFailed
    | ApprovalRequested
    | ApprovalResolved
    | CustomValue
    | FinalResult
    | RunFinished
    | RunError
)
"""Any protocol-neutral UI event."""
