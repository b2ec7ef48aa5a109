"""Action receipts: what became of every call of a tool that is not read-only.

Receipts are read from the history when asked for (`AgentRunResult.actions`), never built per
step: each tool result already records its outcome (`success`, `failed`, `denied`, an
`interrupted` call whose outcome is unknown), and a retry prompt answering a call means it failed.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any
from typing import Final
from typing import TypeAlias
from typing import cast

from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart

from ._effects import ActionReceipt
from ._effects import ActionStatus
from ._tools import Tool

__all__ = [
    "MAX_DETAIL_CHARS",
    "TOOL_NOT_EXECUTED",
    "ActionReceipt",
    "ActionStatus",
    "WAITING",
    "receipts_from_messages",
    "run_actions",
    "receipt",
    "safe_detail",
]

TOOL_NOT_EXECUTED: Final = "Tool not executed - a final result was already processed."
"""The result of a call skipped because a final result was already processed (it did not run)."""

WAITING: Final = "the call waits for a decision and has not run"
"""The `detail` of a `confirmation_required` receipt."""

MAX_DETAIL_CHARS: Final = 1000
"""Longest `detail` kept on a receipt (the rest is cut and marked)."""


def safe_detail(text: str) -> str:
    """`text` with credentials redacted and cut to `MAX_DETAIL_CHARS`: safe on receipts and in logs."""
    from ferrule.core.http import redact_text

    text = redact_text(text)
    if len(text) <= MAX_DETAIL_CHARS:
        return text
    return f"{text[:MAX_DETAIL_CHARS]}... [{len(text) - MAX_DETAIL_CHARS} more characters]"


ToolLookup: TypeAlias = Callable[[str], "Tool[Any] | None"]
"""The tool a call named, or `None` when the run does not know it (any more)."""


def receipts_from_messages(
    messages: Iterable[Message],
    tools: Mapping[str, Tool[Any]] | ToolLookup,
    *,
    step_id: str | None = None,
    pending: Sequence[str] = (),
) -> list[ActionReceipt]:
    """A receipt for each call in `messages` of a tool that is not read-only, in result order.

    `tools` resolves tool names (a mapping, or a function). A call of a tool it does not know is
    skipped: output tools, names the model made up, and tools the run no longer offers. The calls
    named in `pending` (waiting for approval, no result yet) get `confirmation_required` receipts.
    """
    lookup: ToolLookup = cast("Mapping[str, Tool[Any]]", tools).get if isinstance(tools, Mapping) else tools
    calls: dict[str, ToolCallPart] = {}
    receipts: list[ActionReceipt] = []
    for message in messages:
        if isinstance(message, ModelResponse):
            for part in message.parts:
                if isinstance(part, ToolCallPart):
                    calls[part.tool_call_id] = part
            continue
        assert isinstance(message, ModelRequest)
        for part in message.parts:
            if not isinstance(part, (ToolReturnPart, RetryPromptPart)):
                continue
            call = calls.get(part.tool_call_id)
            if call is None or not part.tool_name:
                continue  # an output tool's or a malformed response's retry: no tool call of ours
            tool = lookup(call.tool_name)
            if tool is not None and tool.side_effect != "read_only":
                receipts.append(_receipt(call, part, tool, step_id))
    for call_id in pending:
        call = calls.get(call_id)
        tool = lookup(call.tool_name) if call is not None else None
        if call is None or tool is None or tool.side_effect == "read_only":
            continue
        receipts.append(receipt(call, tool, "confirmation_required", WAITING, step_id))
    return receipts


def receipt(
    call: ToolCallPart, tool: Tool[Any], status: ActionStatus, detail: str | None, step_id: str | None = None
) -> ActionReceipt:
    """The receipt of `call` of `tool`: settled from its result, or without a result in the history
    yet (it waits, or is already denied)."""
    return ActionReceipt(
        tool_call_id=call.tool_call_id,
        tool_name=call.tool_name,
        status=status,
        side_effect=tool.side_effect,
        risk=tool.risk,
        detail=detail,
        step_id=step_id,
    )


def run_actions(
    messages: Sequence[Message],
    start: int,
    step_tools: Mapping[str, Tool[Any]],
    agent_tools: Mapping[str, Tool[Any]],
) -> list[ActionReceipt]:
    """The receipts of a run's messages from `start`, its tools looked up in the last step's offer,
    then the agent's own tools."""

    def lookup(name: str) -> Tool[Any] | None:
        return step_tools.get(name) or agent_tools.get(name)

    return receipts_from_messages(messages[start:], lookup)


def _receipt(
    call: ToolCallPart, part: ToolReturnPart | RetryPromptPart, tool: Tool[Any], step_id: str | None
) -> ActionReceipt:
    status: ActionStatus
    detail: str | None = None
    if isinstance(part, RetryPromptPart):
        status, detail = "failed", safe_detail(part.model_response())
    else:
        match part.outcome:
            case "success" if part.content == TOOL_NOT_EXECUTED:
                status, detail = "failed", "not executed: a final result was already processed"
            case "success":
                status = "succeeded"
            case "denied":
                status, detail = "denied", safe_detail(part.model_response_str())
            case "interrupted":
                raw: Any = part.metadata
                metadata = cast("dict[str, Any]", raw) if isinstance(raw, dict) else {}
                unknown = metadata.get("ferrule_outcome") == "unknown"
                status = "unknown" if unknown else "failed"
                detail = safe_detail(part.model_response_str())
            case "failed" | "retried":
                status, detail = "failed", safe_detail(part.model_response_str())
    return receipt(call, tool, status, detail, step_id)
