"""UI events as official AG-UI events, and AG-UI's run input parsed back."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from typing import Final
from typing import Literal
from typing import assert_never
from typing import cast

import msgspec

from ferrule import ui
from ferrule.agent import Decision
from ferrule.agent import DeferredCall

from .._body import check_history_length
from .._body import client_id
from .._body import decode_body
from .._bridge import ApprovalResponse
from .._bridge import decisions_from
from .._errors import ClientInputError
from .._limits import DEFAULT_LIMITS
from .._limits import UILimits
from .._sanitize import BrowserMessage

__all__ = [
    "APPROVAL_REASON",
    "CONTENT_TYPE",
    "ContentPart",
    "InputMessage",
    "ResumeEntry",
    "RunAgentInput",
    "browser_messages",
    "encode",
    "encode_jsonl",
    "encode_sse",
    "parse_approval",
    "parse_run_input",
]

CONTENT_TYPE: Final = "text/event-stream"
"""The content type of an AG-UI SSE response."""

APPROVAL_REASON: Final = "tool_approval"
"""The `reason` of the interrupts ferrule raises for tool approvals."""

# The JSON schema of an approval's resume payload, advertised on each interrupt.
_RESPONSE_SCHEMA: Final = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["approved"],
    "additionalProperties": False,
}

_encoder = msgspec.json.Encoder()


def encode(event: ui.UIEvent) -> list[dict[str, Any]]:
    """The AG-UI events (JSON objects, camelCase, as `@ag-ui/core` defines them) for one UI event.

    A UI event maps to zero or more AG-UI events: a reasoning start opens both the reasoning
    block and its message; approval requests travel inside `RUN_FINISHED`'s interrupt outcome, and
    `FinalResult` inside `RUN_FINISHED.result`, so those two encode to nothing by themselves.
    """
    match event:
        case ui.RunStarted(thread_id=thread_id, run_id=run_id):
            return [{"type": "RUN_STARTED", "threadId": thread_id, "runId": run_id}]
        case ui.TextStart(part_id=part_id):
            return [{"type": "TEXT_MESSAGE_START", "messageId": part_id, "role": "assistant"}]
        case ui.TextDelta(part_id=part_id, delta=delta):
            return [{"type": "TEXT_MESSAGE_CONTENT", "messageId": part_id, "delta": delta}]
        case ui.TextEnd(part_id=part_id):
            return [{"type": "TEXT_MESSAGE_END", "messageId": part_id}]
        case ui.ReasoningStart(part_id=part_id):
            return [
                {"type": "REASONING_START", "messageId": part_id},
                {"type": "REASONING_MESSAGE_START", "messageId": part_id, "role": "reasoning"},
            ]
        case ui.ReasoningDelta(part_id=part_id, delta=delta):
            return [{"type": "REASONING_MESSAGE_CONTENT", "messageId": part_id, "delta": delta}]
        case ui.ReasoningEnd(part_id=part_id):
            return [
                {"type": "REASONING_MESSAGE_END", "messageId": part_id},
                {"type": "REASONING_END", "messageId": part_id},
            ]
        case ui.ToolCallStart(tool_call_id=tool_call_id, tool_name=tool_name):
            return [{"type": "TOOL_CALL_START", "toolCallId": tool_call_id, "toolCallName": tool_name}]
        case ui.ToolCallArgs(tool_call_id=tool_call_id, delta=delta):
            return [{"type": "TOOL_CALL_ARGS", "toolCallId": tool_call_id, "delta": delta}]
        case ui.ToolCallEnd(tool_call_id=tool_call_id):
            return [{"type": "TOOL_CALL_END", "toolCallId": tool_call_id}]
        case ui.ToolResult(tool_call_id=tool_call_id, output=output):
            return [_tool_result(tool_call_id, _as_text(output))]
        case ui.ToolFailed(tool_call_id=tool_call_id, error_text=error_text, denied=denied):
            # The event has no error field: the outcome rides in metadata (user space by AG-UI's rules).
            result = _tool_result(tool_call_id, error_text)
            result["metadata"] = {"ferrule": {"outcome": "denied" if denied else "failed"}}
            return [result]
        case ui.CustomValue(name=name, value=value):
            return [{"type": "CUSTOM", "name": name, "value": msgspec.json.decode(value)}]
        case ui.RunFinished(thread_id=thread_id, run_id=run_id, output=output, approvals=approvals):
            finished: dict[str, Any] = {"type": "RUN_FINISHED", "threadId": thread_id, "runId": run_id}
            if approvals:
                finished["outcome"] = {"type": "interrupt", "interrupts": [_interrupt(a) for a in approvals]}
            else:
                finished["outcome"] = {"type": "success"}
                if output is not None:
                    finished["result"] = msgspec.json.decode(_encoder.encode(output))
            return [finished]
        case ui.RunError(message=message, code=code):
            return [{"type": "RUN_ERROR", "message": message, "code": code}]
        case ui.ApprovalRequested() | ui.ApprovalResolved() | ui.FinalResult():
            return []
        case _:
            assert_never(event)


def encode_sse(event: ui.UIEvent) -> bytes:
    """`encode(event)` as SSE records (`data: {...}\\n\\n` each), what `HttpAgent` reads."""
    delta = _delta_json(event)
    if delta is not None:
        return b"data: " + delta + b"\n\n"
    return b"".join([b"data: " + _encoder.encode(e) + b"\n\n" for e in encode(event)])


def encode_jsonl(event: ui.UIEvent) -> bytes:
    """`encode(event)` as newline-delimited JSON, one AG-UI event a line."""
    delta = _delta_json(event)
    if delta is not None:
        return delta + b"\n"
    return b"".join([_encoder.encode(e) + b"\n" for e in encode(event)])


# The JSON of the delta events around their two strings: the bytes `encode` and the encoder give
# (the protocol tests compare the two for every event).
_TEXT_CONTENT: Final = (b'{"type":"TEXT_MESSAGE_CONTENT","messageId":', b',"delta":')
_REASONING_CONTENT: Final = (b'{"type":"REASONING_MESSAGE_CONTENT","messageId":', b',"delta":')
_TOOL_CALL_ARGS: Final = (b'{"type":"TOOL_CALL_ARGS","toolCallId":', b',"delta":')


def _delta_json(event: ui.UIEvent) -> bytes | None:
    """The one AG-UI event of a delta, written without building it (a stream is mostly deltas)."""
    match event:
        case ui.TextDelta():
            head, key, delta = _TEXT_CONTENT, event.part_id, event.delta
        case ui.ReasoningDelta():
            head, key, delta = _REASONING_CONTENT, event.part_id, event.delta
        case ui.ToolCallArgs():
            head, key, delta = _TOOL_CALL_ARGS, event.tool_call_id, event.delta
        case _:
            return None
    return b"".join((head[0], _encoder.encode(key), head[1], _encoder.encode(delta), b"}"))


def _tool_result(tool_call_id: str, content: str) -> dict[str, Any]:
    return {
        "type": "TOOL_CALL_RESULT",
        "messageId": f"result-{tool_call_id}",
        "toolCallId": tool_call_id,
        "content": content,
        "role": "tool",
    }


def _as_text(output: Any) -> str:
    return output if isinstance(output, str) else _encoder.encode(output).decode()


def _interrupt(approval: ui.ApprovalRequested) -> dict[str, Any]:
    return {
        "id": approval.approval_id,
        "reason": APPROVAL_REASON,
        "message": f"Approve calling {approval.tool_name}?",
        "toolCallId": approval.tool_call_id,
        "responseSchema": _RESPONSE_SCHEMA,
        "metadata": {"toolName": approval.tool_name, "args": approval.args, "kind": approval.kind},
    }


# --- input ------------------------------------------------------------------------------------------


class ContentPart(msgspec.Struct, frozen=True, kw_only=True):
    """A content part of an AG-UI message (only `text` parts are accepted)."""

    type: str
    """The part's type."""
    text: str | None = None
    """The text of a `text` part."""


class InputMessage(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """An AG-UI message as a client sends it; only the fields ferrule reads are typed."""

    role: str
    """`user`, `assistant`, `tool`, `system`, `developer`, `activity` or `reasoning`."""
    id: str | None = None
    """The client's message id (never used)."""
    content: str | list[ContentPart] | dict[str, Any] | None = None
    """The text, content parts, or an activity's content."""


class ResumeEntry(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The client's answer to one interrupt."""

    interrupt_id: str
    """The interrupt answered."""
    status: Literal["resolved", "cancelled"]
    """`resolved` with a payload, or `cancelled` (a denial)."""
    payload: Any = None
    """For an approval: `{"approved": bool, "reason"?: str}`."""


class RunAgentInput(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The body an AG-UI client posts to run an agent."""

    thread_id: str
    """The conversation."""
    run_id: str
    """The run the client asks for."""
    messages: list[InputMessage] = []
    """The client's history."""
    tools: list[dict[str, Any]] = []
    """Frontend tools the client offers (refused by the apps when not empty)."""
    context: list[dict[str, Any]] = []
    """Client context items (refused by the apps when not empty: they would act as instructions)."""
    state: Any = None
    """Shared state (refused by the apps when not empty)."""
    forwarded_props: Any = None
    """Extra client properties (ignored)."""
    parent_run_id: str | None = None
    """The run this one continues."""
    protocol_version: str | None = None
    """The client's protocol version."""
    resume: list[ResumeEntry] | None = None
    """Answers to the interrupts of the previous run."""


def parse_run_input(body: bytes | str, *, limits: UILimits = DEFAULT_LIMITS) -> RunAgentInput:
    """Decode a posted `RunAgentInput` under `limits`; raises `ClientInputError` (400/413) when it is
    malformed, too large, or its thread or run id is not a safe identity."""
    run_input = decode_body(body, RunAgentInput, "RunAgentInput", limits)
    client_id("threadId", run_input.thread_id, limits.max_id_bytes)
    client_id("runId", run_input.run_id, limits.max_id_bytes)
    check_history_length(len(run_input.messages), limits)
    return run_input


def browser_messages(run_input: RunAgentInput, *, limits: UILimits = DEFAULT_LIMITS) -> list[BrowserMessage]:
    """The client's history reduced to role and text, for `sanitize_messages`.

    `tool`, `activity` and `reasoning` messages are the client's record of what the server
    streamed (a client appends them itself): they are display state, dropped here and never
    turned into history. Assistant tool calls are dropped the same way. A `system` or `developer`
    message is kept so that `sanitize_messages` refuses it. Non-text content parts are refused.
    """
    out: list[BrowserMessage] = []
    for index, message in enumerate(run_input.messages):
        if message.role in ("tool", "activity", "reasoning"):
            continue
        content = message.content
        if content is None:
            text = ""
        elif isinstance(content, str):
            text = content
        elif isinstance(content, list):
            if len(content) > limits.max_parts:
                raise ClientInputError(
                    f"message {index} has {len(content)} content parts; the limit is {limits.max_parts}",
                    status=413,
                )
            texts: list[str] = []
            for part in content:
                if part.type != "text" or part.text is None:
                    raise ClientInputError(
                        f"message {index} has a {part.type!r} content part; only text is accepted"
                    )
                texts.append(part.text)
            text = "".join(texts)
        else:
            raise ClientInputError(f"message {index} ({message.role!r}) has object content; expected text")
        out.append(BrowserMessage(role=message.role, text=text))
    return out


def parse_approval(
    run_input: RunAgentInput, pending: Sequence[DeferredCall], *, limits: UILimits = DEFAULT_LIMITS
) -> tuple[dict[str, Decision], list[ApprovalResponse]]:
    """Decisions for `agent.resume` from the input's `resume` entries answering `pending`'s interrupts.

    `resolved` entries need a payload `{"approved": bool, "reason"?: str}`; `cancelled` denies. Every
    interrupt needs exactly one entry; anything else raises `ClientInputError`. Returns the
    decisions and the parsed responses.
    """
    entries = run_input.resume or []
    responses: list[ApprovalResponse] = []
    for entry in entries:
        if entry.status == "cancelled":
            responses.append(ApprovalResponse(approval_id=entry.interrupt_id, approved=False))
            continue
        payload: Any = entry.payload
        if not isinstance(payload, dict) or not isinstance(payload.get("approved"), bool):  # pyright: ignore[reportUnknownMemberType]
            raise ClientInputError(
                f"the resume entry for {entry.interrupt_id!r} needs a payload {{'approved': true|false}}"
            )
        fields = cast("dict[str, Any]", payload)
        extra = set(fields) - {"approved", "reason"}
        if extra:
            raise ClientInputError(
                f"the resume payload for {entry.interrupt_id!r} has unknown keys: {', '.join(sorted(extra))}"
            )
        reason = fields.get("reason")
        if reason is not None and not isinstance(reason, str):
            raise ClientInputError(f"the reason for {entry.interrupt_id!r} must be a string")
        approved: bool = fields["approved"]
        responses.append(ApprovalResponse(approval_id=entry.interrupt_id, approved=approved, reason=reason))
    return decisions_from(pending, responses, limits=limits), responses
