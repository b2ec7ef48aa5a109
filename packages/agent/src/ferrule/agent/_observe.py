"""`JsonlObserver`: one JSON object per line for every run, model, tool, plan and step event.

It is a lifecycle hook (`Agent(hooks=[observer])`) for the agent's events and an event handler
(`event_handler=observer.on_event`) for stream and plan events. By default a line holds what
happened and to what (kind, run, tool name and call ID, outcome, usage), never content; with
`details=True` it also holds model requests and responses, tool arguments and results, errors and
plan-step inputs and outputs, which contain user data. Every string written is passed through
`redact_text` (credentials, bearer tokens, API-key shapes) and bounded.
"""

from __future__ import annotations

import threading
from datetime import UTC
from datetime import datetime
from typing import Any
from typing import Final
from typing import Protocol
from typing import cast

import msgspec

from ferrule.core.messages import ModelResponse
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import ToolReturnPart

from .hooks import HookEvent

__all__ = ["MAX_FIELD_CHARS", "JsonlObserver", "TextStream"]

MAX_FIELD_CHARS: Final = 4000
"""Longest string kept in one field of a line (the rest is cut and marked)."""

# Stream events that are deltas of one part: one line each would be a line per token.
_SKIPPED_EVENTS: Final = frozenset({"part_delta"})


class TextStream(Protocol):
    """Where lines go: anything with `write(str)` (an open text file, `sys.stdout`, `io.StringIO`)."""

    def write(self, text: str, /) -> Any:
        """Write `text`."""
        ...


class JsonlObserver:
    """Write one JSON object per event to `stream`; content only with `details=True`.

    Lines are written inline, synchronously, as events happen: give it a buffered file or stream.
    `secrets` are redacted too, in every form `redact_text` knows.
    """

    __slots__ = ("_lock", "_secrets", "details", "stream")

    def __init__(self, stream: TextStream, *, details: bool = False, secrets: tuple[str, ...] = ()) -> None:
        self.stream = stream
        """Where lines are written."""
        self.details = details
        """Whether lines carry content (requests, responses, arguments, results, inputs, outputs)."""
        self._secrets = tuple(secrets)
        self._lock = threading.Lock()

    # --- agent lifecycle events -------------------------------------------------------------------

    def __call__(self, event: HookEvent) -> None:
        """The hook: one line per lifecycle event of an agent run."""
        if event.kind.startswith("stream_event"):
            return  # the stream itself is observed through `on_event`
        line: dict[str, Any] = {"event": event.kind, "run_id": event.run_id, "agent": event.agent_name}
        line["step"] = event.run_step
        if event.model is not None:
            line["model"] = event.model
        if event.tool_call is not None:
            line["tool"] = event.tool_call.tool_name
            line["tool_call_id"] = event.tool_call.tool_call_id
        if event.tool_calls is not None:
            line["tools"] = [c.tool_name for c in event.tool_calls]
        result = event.result
        if isinstance(result, ToolReturnPart):
            line["outcome"] = result.outcome
        elif isinstance(result, RetryPromptPart):
            line["outcome"] = "retry"
        if event.response is not None:
            line["finish_reason"] = event.response.finish_reason
        if event.usage is not None:
            line["usage"] = {
                "requests": event.usage.requests,
                "input_tokens": event.usage.input_tokens,
                "output_tokens": event.usage.output_tokens,
                "tool_calls": event.usage.tool_calls,
            }
        if event.error is not None:
            line["error_type"] = type(event.error).__name__
        if self.details:
            self._hook_details(event, line)
        self._write(line)

    def _hook_details(self, event: HookEvent, line: dict[str, Any]) -> None:
        if event.call is not None:
            line["request"] = {
                "messages": _plain(event.call.messages),
                "tools": [d.name for d in event.call.tools] if event.call.tools else [],
            }
        if isinstance(event.response, ModelResponse):
            line["response"] = _plain(event.response.parts)
        if event.args is not None:
            line["args"] = _plain(event.args)
        if event.result is not None:
            line["result"] = _plain(event.result.content)
        if event.output is not None:
            line["output"] = _plain(event.output)
        if event.error is not None:
            line["error"] = str(event.error)

    # --- stream and plan events -------------------------------------------------------------------

    async def on_event(self, event: Any) -> None:
        """An event handler (`event_handler=`): one line per stream or plan event (token deltas skipped)."""
        plain = _plain(event)
        fields = cast("dict[str, Any]", plain) if isinstance(plain, dict) else {}
        kind = fields.get("event_kind") or getattr(event, "event_kind", None) or type(event).__name__
        if kind in _SKIPPED_EVENTS:
            return
        line: dict[str, Any] = {"event": kind}
        for name in ("run_id", "revision", "step_id", "capability", "status", "tool_name", "tool_call_id"):
            value = fields.get(name)
            if value is not None:
                line[name] = value
        for nested in ("part", "result"):  # tool call and tool result events carry the part
            part = fields.get(nested)
            if isinstance(part, dict):
                named = cast("dict[str, Any]", part)
                for name in ("tool_name", "tool_call_id", "outcome"):
                    if named.get(name) is not None:
                        line.setdefault(name, named[name])
        if "error" in fields and fields["error"] is not None:
            line["error" if self.details else "failed"] = fields["error"] if self.details else True
        if self.details:
            line["data"] = {k: v for k, v in fields.items() if k not in line and k != "event_kind"}
        self._write(line)

    # --- writing ----------------------------------------------------------------------------------

    def _write(self, line: dict[str, Any]) -> None:
        line = {"ts": datetime.now(UTC).isoformat(timespec="milliseconds"), **line}
        text = msgspec.json.encode(self._clean(line)).decode()
        with self._lock:  # one line at a time, also from worker threads
            self.stream.write(text + "\n")

    def _clean(self, value: Any) -> Any:
        from ferrule.core.http import redact_text

        if isinstance(value, str):
            text = redact_text(value, self._secrets)
            if len(text) > MAX_FIELD_CHARS:
                text = f"{text[:MAX_FIELD_CHARS]}... [{len(text) - MAX_FIELD_CHARS} more characters]"
            return text
        if isinstance(value, dict):
            items = cast("dict[Any, Any]", value)
            return {str(k): self._clean(v) for k, v in items.items()}
        if isinstance(value, list):
            return [self._clean(v) for v in cast("list[Any]", value)]
        return value


def _plain(value: Any) -> Any:
    """`value` as plain JSON data (structs, messages, dataclasses), or its `repr` if it has none."""
    try:
        return msgspec.to_builtins(value, str_keys=True, enc_hook=repr)
    except (TypeError, ValueError, msgspec.EncodeError):
        return repr(value)
