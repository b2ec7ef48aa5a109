"""UI events as the AI SDK's UI message stream (v1) SSE records, and the AI SDK's chat request parsed back."""

from __future__ import annotations

from typing import Any
from typing import Final
from typing import assert_never

import msgspec

from ferrule import ui

from .._body import check_history_length
from .._body import client_id
from .._body import decode_body
from .._bridge import ApprovalResponse
from .._errors import ClientInputError
from .._limits import DEFAULT_LIMITS
from .._limits import UILimits
from .._sanitize import BrowserMessage

__all__ = [
    "DONE",
    "HEADERS",
    "ChatRequest",
    "UIMessage",
    "UIMessagePart",
    "approvals_from",
    "browser_messages",
    "chunks",
    "encode",
    "parse_request",
]

HEADERS: Final[dict[str, str]] = {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    "connection": "keep-alive",
    "x-vercel-ai-ui-message-stream": "v1",
    "x-accel-buffering": "no",
}
"""The response headers of a UI message stream (the AI SDK's `UI_MESSAGE_STREAM_HEADERS`)."""

DONE: Final = b"data: [DONE]\n\n"
"""The record that terminates a UI message stream."""

_encoder = msgspec.json.Encoder()


def chunks(event: ui.UIEvent) -> list[dict[str, Any]]:  # noqa: C901 - exhaustive match over every part/event kind
    """The UI message chunks (JSON objects of the AI SDK's `uiMessageChunkSchema`) for one UI event."""
    match event:
        case ui.RunStarted(message_id=message_id):
            return [{"type": "start", "messageId": message_id} if message_id else {"type": "start"}]
        case ui.TextStart(part_id=part_id):
            return [{"type": "text-start", "id": part_id}]
        case ui.TextDelta(part_id=part_id, delta=delta):
            return [{"type": "text-delta", "id": part_id, "delta": delta}]
        case ui.TextEnd(part_id=part_id):
            return [{"type": "text-end", "id": part_id}]
        case ui.ReasoningStart(part_id=part_id):
            return [{"type": "reasoning-start", "id": part_id}]
        case ui.ReasoningDelta(part_id=part_id, delta=delta):
            return [{"type": "reasoning-delta", "id": part_id, "delta": delta}]
        case ui.ReasoningEnd(part_id=part_id):
            return [{"type": "reasoning-end", "id": part_id}]
        case ui.ToolCallStart(tool_call_id=tool_call_id, tool_name=tool_name):
            return [{"type": "tool-input-start", "toolCallId": tool_call_id, "toolName": tool_name}]
        case ui.ToolCallArgs(tool_call_id=tool_call_id, delta=delta):
            return [{"type": "tool-input-delta", "toolCallId": tool_call_id, "inputTextDelta": delta}]
        case ui.ToolCallEnd(tool_call_id=tool_call_id, tool_name=tool_name, args=args):
            return [
                {
                    "type": "tool-input-available",
                    "toolCallId": tool_call_id,
                    "toolName": tool_name,
                    "input": args,
                }
            ]
        case ui.ToolResult(tool_call_id=tool_call_id, output=output):
            return [{"type": "tool-output-available", "toolCallId": tool_call_id, "output": output}]
        case ui.ToolFailed(tool_call_id=tool_call_id, error_text=error_text, denied=denied):
            if denied:
                return [{"type": "tool-output-denied", "toolCallId": tool_call_id}]
            return [{"type": "tool-output-error", "toolCallId": tool_call_id, "errorText": error_text}]
        case ui.ApprovalRequested(approval_id=approval_id, tool_call_id=tool_call_id):
            return [{"type": "tool-approval-request", "approvalId": approval_id, "toolCallId": tool_call_id}]
        case ui.ApprovalResolved(approval_id=approval_id, approved=approved, reason=reason):
            response: dict[str, Any] = {
                "type": "tool-approval-response",
                "approvalId": approval_id,
                "approved": approved,
            }
            if reason:
                response["reason"] = reason
            return [response]
        case ui.CustomValue(name=name, value=value, id=id):
            data: dict[str, Any] = {"type": f"data-{name}", "data": value}
            if id is not None:
                data["id"] = id
            return [data]
        case ui.RunFinished(approvals=approvals):
            return [{"type": "finish", "finishReason": "tool-calls" if approvals else "stop"}]
        case ui.RunError(message=message):
            return [{"type": "error", "errorText": message}]
        case ui.FinalResult():
            return []  # the output was streamed as text (or as the output tool's result)
        case _:
            assert_never(event)


def encode(event: ui.UIEvent) -> bytes:
    """The SSE records (`data: {...}\\n\\n`) for one UI event; the terminal events (`RunFinished`,
    `RunError`) end with the `data: [DONE]` record."""
    match event:  # a stream is mostly deltas: their records are written without building a chunk
        case ui.TextDelta():
            head, key, delta = _TEXT_DELTA, event.part_id, event.delta
        case ui.ReasoningDelta():
            head, key, delta = _REASONING_DELTA, event.part_id, event.delta
        case ui.ToolCallArgs():
            head, key, delta = _TOOL_INPUT_DELTA, event.tool_call_id, event.delta
        case ui.RunFinished() | ui.RunError():
            return _records(chunks(event)) + DONE
        case _:
            return _records(chunks(event))
    return b"".join((head[0], _encoder.encode(key), head[1], _encoder.encode(delta), b"}\n\n"))


# The records of the delta chunks around their two strings: the bytes `chunks` and the encoder give
# (the protocol tests compare the two for every event).
_TEXT_DELTA: Final = (b'data: {"type":"text-delta","id":', b',"delta":')
_REASONING_DELTA: Final = (b'data: {"type":"reasoning-delta","id":', b',"delta":')
_TOOL_INPUT_DELTA: Final = (b'data: {"type":"tool-input-delta","toolCallId":', b',"inputTextDelta":')


def _records(chunks: list[dict[str, Any]]) -> bytes:
    return b"".join([b"data: " + _encoder.encode(chunk) + b"\n\n" for chunk in chunks])


# --- the chat request -------------------------------------------------------------------------------


class Approval(msgspec.Struct, frozen=True, kw_only=True):
    """A tool part's approval, as the client records it."""

    id: str
    """The approval's id (`tool-approval-request.approvalId`)."""
    approved: bool | None = None
    """The user's answer, once given."""
    reason: str | None = None
    """The user's reason."""


class UIMessagePart(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A part of a UI message; only the fields ferrule reads are typed, the rest is ignored."""

    type: str
    """`text`, `reasoning`, `tool-<name>`, `dynamic-tool`, `data-<name>`, `file`, `step-start`, ..."""
    text: str | None = None
    """The text of a `text` or `reasoning` part."""
    tool_call_id: str | None = None
    """The call of a tool part."""
    state: str | None = None
    """A tool part's state (`approval-responded` carries a decision)."""
    approval: Approval | None = None
    """A tool part's approval."""


class UIMessage(msgspec.Struct, frozen=True, kw_only=True):
    """A UI message as the AI SDK's chat sends it."""

    role: str
    """`user`, `assistant` or `system`."""
    parts: list[UIMessagePart]
    """The message's parts."""
    id: str | None = None
    """The client's message id (used only to continue an assistant message after approvals)."""


class ChatRequest(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The body `DefaultChatTransport` posts."""

    id: str
    """The chat's id."""
    messages: list[UIMessage]
    """The whole conversation as the client has it."""
    trigger: str = "submit-message"
    """`submit-message` or `regenerate-message`."""
    message_id: str | None = None
    """The message a regeneration or approval continues."""


def parse_request(body: bytes | str, *, limits: UILimits = DEFAULT_LIMITS) -> ChatRequest:
    """Decode a posted chat request under `limits`; raises `ClientInputError` (400/413) when it is
    malformed, too large, or its chat id is not a safe identity."""
    request = decode_body(body, ChatRequest, "chat request", limits)
    client_id("chat id", request.id, limits.max_id_bytes)
    if request.trigger not in ("submit-message", "regenerate-message"):
        raise ClientInputError(f"unknown trigger {request.trigger!r}")
    check_history_length(len(request.messages), limits)
    for index, message in enumerate(request.messages):
        if len(message.parts) > limits.max_parts:
            raise ClientInputError(
                f"message {index} has {len(message.parts)} parts; the limit is {limits.max_parts}", status=413
            )
    return request


def browser_messages(request: ChatRequest) -> list[BrowserMessage]:
    """The conversation reduced to role and text, for `sanitize_messages`.

    The text parts of user and assistant messages are kept. An assistant's tool, reasoning,
    data and step parts are the client's record of what the server streamed: display state,
    dropped and never turned into history. A user message with anything but text is refused
    (files are not accepted); a `system` message is kept so that `sanitize_messages` refuses it.
    """
    out: list[BrowserMessage] = []
    for index, message in enumerate(request.messages):
        texts: list[str] = []
        for part in message.parts:
            if part.type == "text":
                texts.append(part.text or "")
            elif message.role == "user":
                raise ClientInputError(f"message {index} has a {part.type!r} part; only text is accepted")
        out.append(BrowserMessage(role=message.role, text="".join(texts)))
    return out


def approvals_from(request: ChatRequest) -> tuple[str | None, list[ApprovalResponse]]:
    """The decisions in the last message, if it is an assistant message with answered approvals.

    Returns that message's id and the responses (both empty when there are none).
    """
    if not request.messages or request.messages[-1].role != "assistant":
        return None, []
    last = request.messages[-1]
    responses: list[ApprovalResponse] = []
    for part in last.parts:
        approval = part.approval
        if part.state != "approval-responded" or approval is None:
            continue
        if approval.approved is None:
            raise ClientInputError(f"the answered approval {approval.id!r} has no 'approved' value")
        responses.append(
            ApprovalResponse(approval_id=approval.id, approved=approval.approved, reason=approval.reason)
        )
    return last.id, responses
