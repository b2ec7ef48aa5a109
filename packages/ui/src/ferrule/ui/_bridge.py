"""The bridge from an agent's stream events to protocol-neutral UI events, and back from decisions."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Sequence
from typing import Any
from typing import Final
from typing import Literal
from typing import assert_never

import msgspec

from ferrule.agent import AgentStreamEvent
from ferrule.agent import Approved
from ferrule.agent import Decision
from ferrule.agent import DeferredCall
from ferrule.agent import DeferredToolCallsEvent
from ferrule.agent import Denied
from ferrule.agent import EnqueuedMessagesEvent
from ferrule.agent import FinalResultEvent
from ferrule.agent import FunctionToolCallEvent
from ferrule.agent import FunctionToolResultEvent
from ferrule.agent import OutputRetryEvent
from ferrule.agent import PartialOutputEvent
from ferrule.agent import Paused
from ferrule.agent import StreamedRunResult
from ferrule.core import bounded_json
from ferrule.core.errors import FerruleError
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import TextPart
from ferrule.core.messages import ThinkingPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.model import PartDeltaEvent
from ferrule.core.model import PartEndEvent
from ferrule.core.model import PartStartEvent
from ferrule.core.model import ResponseCompleted
from ferrule.core.model import TextPartDelta
from ferrule.core.model import ThinkingPartDelta
from ferrule.core.model import ToolCallPartDelta

from ._body import client_id
from ._custom import custom_value
from ._errors import ClientInputError
from ._errors import UIError
from ._events import ApprovalRequested
from ._events import ApprovalResolved
from ._events import CustomValue
from ._events import FinalResult
from ._events import ReasoningDelta
from ._events import ReasoningEnd
from ._events import ReasoningStart
from ._events import RunError
from ._events import RunFinished
from ._events import RunStarted
from ._events import TextDelta
from ._events import TextEnd
from ._events import TextStart
from ._events import ToolCallArgs
from ._events import ToolCallEnd
from ._events import ToolCallStart
from ._events import ToolFailed
from ._events import ToolResult
from ._events import UIEvent
from ._ids import check_id
from ._limits import DEFAULT_LIMITS
from ._limits import UILimits

__all__ = [
    "APPROVAL_PREFIX",
    "ApprovalResponse",
    "UIBridge",
    "approval_id_for",
    "decisions_from",
    "error_message",
]

logger = logging.getLogger("ferrule.ui")

APPROVAL_PREFIX: Final = "approval-"
"""Approval identities are this prefix followed by the tool call's identity."""

_MAX_ERROR_CHARS: Final = 500


class ApprovalResponse(msgspec.Struct, frozen=True, kw_only=True):
    """One decision posted by a browser, after a protocol adapter parsed it."""

    approval_id: str
    """The approval answered (from `ApprovalRequested.approval_id`)."""
    approved: bool
    """Whether the call may run."""
    reason: str | None = None
    """The user's reason; for a denial it is passed on to the model."""


def approval_id_for(tool_call_id: str) -> str:
    """The approval identity of a deferred call."""
    return APPROVAL_PREFIX + tool_call_id


def decisions_from(
    pending: Sequence[DeferredCall],
    responses: Sequence[ApprovalResponse],
    *,
    limits: UILimits = DEFAULT_LIMITS,
) -> dict[str, Decision]:
    """The agent's decisions (`{tool_call_id: Approved() | Denied(...)}`) from a browser's responses.

    Every pending call needs exactly one response. Unknown, duplicate or missing approval
    identities, an oversized reason, too many responses, or an approval of an external call (whose
    result only the application can supply) raise `ClientInputError` before anything runs.
    """
    if len(responses) > limits.max_approvals:
        raise ClientInputError(
            f"{len(responses)} approval decisions were posted; the limit is {limits.max_approvals}",
            status=413,
        )
    by_approval = {approval_id_for(call.tool_call_id): call for call in pending}
    decisions: dict[str, Decision] = {}
    for response in responses:
        approval_id = client_id(
            "approval_id", response.approval_id, limits.max_id_bytes + len(APPROVAL_PREFIX)
        )
        call = by_approval.get(approval_id)
        if call is None:
            raise ClientInputError(
                f"approval {approval_id!r} does not belong to the paused run; it waits for "
                + (", ".join(repr(a) for a in by_approval) or "nothing"),
                status=409,
            )
        if call.tool_call_id in decisions:
            raise ClientInputError(f"approval {approval_id!r} was answered twice in one request")
        reason = response.reason
        if reason is not None and len(reason.encode()) > limits.max_reason_bytes:
            raise ClientInputError(
                f"the reason given for {approval_id!r} is longer than {limits.max_reason_bytes} bytes",
                status=413,
            )
        if response.approved:
            if call.kind == "external":
                raise ClientInputError(
                    f"{call.tool_name!r} ({approval_id!r}) is an external tool: its result must come from the "
                    "application, a browser can only deny it"
                )
            decisions[call.tool_call_id] = Approved()
        else:
            message = "The user denied this tool call."
            if reason:
                message += f" Reason: {reason}"
            decisions[call.tool_call_id] = Denied(message=message)
    missing = [approval_id for approval_id, call in by_approval.items() if call.tool_call_id not in decisions]
    if missing:
        raise ClientInputError(
            "every pending approval needs a decision; missing: " + ", ".join(repr(a) for a in missing)
        )
    return decisions


def error_message(error: BaseException) -> tuple[str, str]:
    """The `(message, code)` a browser may see for a failed run.

    ferrule's own errors keep their message (they never hold credentials); an application
    exception is reported by class name only, since its message may hold anything.
    """
    code = type(error).__name__
    if isinstance(error, FerruleError):
        text = str(error)
        if len(text) > _MAX_ERROR_CHARS:
            text = text[:_MAX_ERROR_CHARS] + "..."
        return text, code
    return f"the run failed with {code}; the details are in the server log", code


_Block = Literal["text", "reasoning"]
_Open = tuple[_Block | Literal["tool"], str]

# The UI events of a streamed block of each kind: its start, its deltas, its end.
_BLOCKS: Final[
    dict[_Block, tuple[Callable[[str], UIEvent], Callable[[str, str], UIEvent], Callable[[str], UIEvent]]]
] = {
    "text": (TextStart, TextDelta, TextEnd),
    "reasoning": (ReasoningStart, ReasoningDelta, ReasoningEnd),
}


class UIBridge:
    """Translates one run's `AgentStreamEvent`s into `UIEvent`s.

    ```python
    bridge = UIBridge(thread_id, run_id)
    async with agent.run_stream(prompt) as stream:
        async for ui_event in bridge.stream(stream):
            send(ferrule.ui.vercel.encode(ui_event))
    ```

    Or drive it by hand: `start()`, `feed(event)` for each agent event, then `finish(paused)` or
    `fail(error)`; each returns the UI events to deliver, in order. Every identity (thread, run,
    part, tool call, tool name, approval, custom name) is validated before it is delivered; an
    invalid one raises `InvalidIdentifierError`. `announced_tool_calls` names calls the client
    already has (a resumed segment), so they are not announced again.
    """

    def __init__(
        self,
        thread_id: str,
        run_id: str,
        *,
        message_id: str | None = None,
        announced_tool_calls: Iterable[str] = (),
        limits: UILimits = DEFAULT_LIMITS,
    ) -> None:
        self.limits = limits
        """The limits identities and custom values are checked against."""
        self.thread_id = check_id("thread_id", thread_id, limits.max_id_bytes)
        """The conversation."""
        self.run_id = check_id("run_id", run_id, limits.max_id_bytes)
        """This run."""
        self.message_id = (
            None if message_id is None else check_id("message_id", message_id, limits.max_id_bytes)
        )
        """The assistant message continued, if any."""
        self._parts = 0
        self._open: dict[int, _Open] = {}
        # Tool calls announced to the client (by this bridge or an earlier segment), and ended.
        self._announced: set[str] = set(announced_tool_calls)
        self._ended: set[str] = set(self._announced)
        self._tool_names: dict[str, str] = {}
        # Streamed tool calls by part index (see _part_start).
        self._calls: dict[int, list[Any]] = {}
        self._approvals: list[ApprovalRequested] = []
        self._pending: list[DeferredCall] = []
        self._output: Any = None
        self._done = False

    # --- the run ----------------------------------------------------------------------------------

    def start(self) -> list[UIEvent]:
        """The events that open the run."""
        return [RunStarted(self.thread_id, self.run_id, self.message_id)]

    def feed(self, event: AgentStreamEvent) -> list[UIEvent]:
        """The UI events one agent stream event causes (often none)."""
        out: list[UIEvent] = []
        match event:  # the per-delta events first
            case PartDeltaEvent():
                self._part_delta(event.index, event.delta, out)
            case PartialOutputEvent() | EnqueuedMessagesEvent():
                pass  # text is already streamed as deltas; queued messages are the server's own
            case PartStartEvent(index=index, part=part):
                self._part_start(index, part, out)
            case PartEndEvent(index=index, part=part):
                self._part_end(index, part, out)
            case ResponseCompleted(response=response):
                for index in sorted(self._open):
                    part = response.parts[index] if index < len(response.parts) else None
                    self._part_end(index, part, out)
            case FunctionToolCallEvent(part=part):
                self._announce_whole(part.tool_call_id, part.tool_name, part.args, out)
            case FunctionToolResultEvent(result=result):
                self._tool_result(result, out)
            case FinalResultEvent(output=output, tool_name=tool_name, tool_call_id=tool_call_id):
                if tool_call_id is not None and tool_call_id in self._announced and tool_name is not None:
                    out.append(ToolResult(tool_call_id, tool_name, output))
                self._output = output
                out.append(FinalResult(output))
            case DeferredToolCallsEvent(calls=calls):
                for call in calls:
                    self._announce_whole(call.tool_call_id, call.tool_name, call.args, out)
                    request = ApprovalRequested(
                        approval_id=approval_id_for(call.tool_call_id),
                        tool_call_id=call.tool_call_id,
                        tool_name=call.tool_name,
                        args=_args_value(call.args),
                        kind=call.kind,
                    )
                    self._approvals.append(request)
                    self._pending.append(call)
                    out.append(request)
            case OutputRetryEvent(part=part):
                # A rejected output-tool call is closed so the client does not wait on it.
                if part.tool_name is not None and part.tool_call_id in self._announced:
                    out.append(ToolFailed(part.tool_call_id, part.tool_name, part.model_response()))
            case _:
                assert_never(event)
        return out

    def finish(self, paused: Paused | None = None) -> list[UIEvent]:
        """The events that close the run: open parts end, then `RunFinished` (with approvals if paused)."""
        out: list[UIEvent] = []
        self._close_all(out)
        if paused is not None and not self._approvals:
            # The pause happened without a DeferredToolCallsEvent reaching this bridge.
            self.feed(DeferredToolCallsEvent(list(paused.pending)))
        self._done = True
        output = None if self._approvals else self._output
        out.append(RunFinished(self.thread_id, self.run_id, output, tuple(self._approvals)))
        return out

    def fail(self, error: BaseException) -> list[UIEvent]:
        """The event reporting a failed run (see `error_message` for what the browser is told)."""
        self._done = True
        message, code = error_message(error)
        return [RunError(self.thread_id, self.run_id, message, code)]

    async def stream(self, stream: StreamedRunResult[Any]) -> AsyncIterator[UIEvent]:
        """Every UI event of a streamed run, from `RunStarted` to `RunFinished` or `RunError`.

        A run that fails ends with `RunError` (the exception is logged to the `ferrule.ui` logger,
        not raised); cancellation propagates.
        """
        for ui in self.start():
            yield ui
        try:
            async for event in stream:
                if isinstance(event, PartialOutputEvent):
                    continue  # one per streamed delta, and nothing for the client (see feed)
                for ui in self.feed(event):
                    yield ui
        except Exception as exc:
            logger.exception("ferrule.ui: run %s of thread %s failed", self.run_id, self.thread_id)
            for ui in self.fail(exc):
                yield ui
            return
        for ui in self.finish(stream.paused):
            yield ui

    # --- values and decisions ---------------------------------------------------------------------

    def custom(self, name: str, value: Any, *, id: str | None = None) -> CustomValue:
        """A typed custom value for the browser (see `custom_value`)."""
        return custom_value(name, value, id=id, limits=self.limits)

    @property
    def approvals(self) -> list[ApprovalRequested]:
        """The approvals this run asked for."""
        return list(self._approvals)

    def decisions_from(self, responses: Sequence[ApprovalResponse]) -> dict[str, Decision]:
        """Decisions for `agent.resume` from the browser's answers to this bridge's approvals."""
        if not self._pending:
            raise UIError("this run asked for no approvals")
        return decisions_from(self._pending, responses, limits=self.limits)

    @staticmethod
    def resolved(
        pending: Sequence[DeferredCall], decisions: dict[str, Decision], responses: Sequence[ApprovalResponse]
    ) -> list[UIEvent]:
        """`ApprovalResolved` events confirming accepted decisions, for the start of the resumed stream."""
        reasons = {r.approval_id: r.reason for r in responses}
        out: list[UIEvent] = []
        for call in pending:
            decision = decisions.get(call.tool_call_id)
            if decision is None:
                continue
            approval_id = approval_id_for(call.tool_call_id)
            out.append(
                ApprovalResolved(
                    approval_id=approval_id,
                    tool_call_id=call.tool_call_id,
                    approved=isinstance(decision, Approved),
                    reason=reasons.get(approval_id),
                )
            )
        return out

    # --- parts ------------------------------------------------------------------------------------

    def _part_start(self, index: int, part: Any, out: list[UIEvent]) -> None:
        self._end_blocks(index, out)
        if isinstance(part, TextPart):
            self._open_block(index, "text", part.content, out)
        elif isinstance(part, ThinkingPart):
            self._open_block(index, "reasoning", part.content, out)
        elif isinstance(part, ToolCallPart):
            self._open[index] = ("tool", part.tool_call_id)
            # [call id, name, announced, named at start]: a name given at the start is whole, and
            # deltas repeating it are not appended (the convention of ferrule.core.streaming).
            self._calls[index] = [part.tool_call_id, part.tool_name, False, bool(part.tool_name)]
            args = part.args
            if isinstance(args, str) and args:
                self._announce_streamed(index, out)
                out.append(ToolCallArgs(part.tool_call_id, args))
        # Provider-native tool calls, files and other parts have no neutral UI event yet.

    def _part_delta(self, index: int, delta: Any, out: list[UIEvent]) -> None:
        kind: _Block
        match delta:
            case TextPartDelta():
                kind, text = "text", delta.content_delta
            case ThinkingPartDelta():
                kind, text = "reasoning", delta.content_delta
            case ToolCallPartDelta():
                self._tool_call_delta(index, delta, out)
                return
            case _:
                assert_never(delta)
        if not text:
            return
        current = self._open.get(index)
        if current is not None and current[0] == kind:
            out.append(_BLOCKS[kind][1](current[1], text))
        else:
            self._end_blocks(index, out)
            self._open_block(index, kind, text, out)

    def _tool_call_delta(self, index: int, delta: ToolCallPartDelta, out: list[UIEvent]) -> None:
        call = self._calls.get(index)
        if call is None:
            return
        if not call[2]:
            if delta.tool_call_id and not call[0]:
                call[0] = delta.tool_call_id
                self._open[index] = ("tool", delta.tool_call_id)
            if delta.tool_name_delta and not call[3]:
                call[1] = call[1] + delta.tool_name_delta
        args = delta.args_delta
        if isinstance(args, str) and args:
            self._announce_streamed(index, out)
            out.append(ToolCallArgs(call[0], args))

    def _end_blocks(self, index: int, out: list[UIEvent]) -> None:
        # A new part ends the text and reasoning before it (clients render one block at a time); a
        # later delta for one of them opens a new block.
        for other in sorted(self._open):
            if other == index or self._open[other][0] != "tool":
                self._part_end(other, None, out)

    def _open_block(self, index: int, kind: _Block, text: str, out: list[UIEvent]) -> None:
        self._parts += 1
        part_id = f"{self.run_id}-{self._parts}"
        self._open[index] = (kind, part_id)
        start, delta, _ = _BLOCKS[kind]
        out.append(start(part_id))
        if text:
            out.append(delta(part_id, text))

    def _announce_streamed(self, index: int, out: list[UIEvent]) -> None:
        self._announce_call(self._calls[index], out)

    def _announce_call(self, call: list[Any], out: list[UIEvent]) -> None:
        if call[2]:
            return
        call[2] = True
        if call[0] in self._announced:
            return  # the client has it from an earlier segment
        tool_call_id = check_id("tool_call_id", call[0], self.limits.max_id_bytes)
        tool_name = check_id("tool_name", call[1], self.limits.max_id_bytes)
        self._announced.add(tool_call_id)
        self._tool_names[tool_call_id] = tool_name
        out.append(ToolCallStart(tool_call_id, tool_name))

    def _part_end(self, index: int, part: Any, out: list[UIEvent]) -> None:
        current = self._open.pop(index, None)
        if current is None:
            return
        kind, part_id = current
        if kind != "tool":
            out.append(_BLOCKS[kind][2](part_id))
        else:
            call = self._calls.pop(index)
            if isinstance(part, ToolCallPart):
                if call[2] and part.tool_call_id != call[0]:
                    raise UIError(
                        f"the model changed tool call id {call[0]!r} to {part.tool_call_id!r} after it was "
                        "announced to the client"
                    )
                call[0], call[1] = part.tool_call_id, part.tool_name
                args: Any = part.args
            else:
                args = None
            if call[0] in self._ended:
                return
            self._announce_call(call, out)
            self._ended.add(call[0])
            out.append(ToolCallEnd(call[0], call[1], _args_value(args)))

    def _close_all(self, out: list[UIEvent]) -> None:
        for index in sorted(self._open):
            self._part_end(index, None, out)

    def _announce_whole(self, tool_call_id: str, tool_name: str, args: Any, out: list[UIEvent]) -> None:
        if tool_call_id in self._ended:
            return
        if tool_call_id not in self._announced:
            check_id("tool_call_id", tool_call_id, self.limits.max_id_bytes)
            check_id("tool_name", tool_name, self.limits.max_id_bytes)
            self._announced.add(tool_call_id)
            self._tool_names[tool_call_id] = tool_name
            out.append(ToolCallStart(tool_call_id, tool_name))
        self._ended.add(tool_call_id)
        out.append(ToolCallEnd(tool_call_id, tool_name, _args_value(args)))

    def _tool_result(self, result: ToolReturnPart | RetryPromptPart, out: list[UIEvent]) -> None:
        tool_call_id = check_id("tool_call_id", result.tool_call_id, self.limits.max_id_bytes)
        name = result.tool_name or self._tool_names.get(tool_call_id, "")
        tool_name = check_id("tool_name", name, self.limits.max_id_bytes)
        if isinstance(result, RetryPromptPart):
            out.append(ToolFailed(tool_call_id, tool_name, result.model_response()))
            return
        match result.outcome:
            case "success":
                out.append(ToolResult(tool_call_id, tool_name, result.content))
            case "denied":
                out.append(ToolFailed(tool_call_id, tool_name, result.model_response_str(), denied=True))
            case "failed" | "interrupted" | "retried":
                out.append(ToolFailed(tool_call_id, tool_name, result.model_response_str()))
            case _:
                assert_never(result.outcome)


def _args_value(args: str | dict[str, Any] | None) -> Any:
    """Arguments as a JSON value: decoded (bounded) when they are JSON text, else the raw text."""
    if args is None:
        return {}
    if isinstance(args, dict):
        return args
    if not args.strip():
        return {}
    try:
        return bounded_json.decode_value(args, bounded_json.TOOL_ARGUMENTS)
    except bounded_json.JsonError:
        return args
