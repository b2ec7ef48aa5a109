"""Server-sent events for provider codec tests: single events and whole bodies built from JSON payloads."""

from __future__ import annotations

import json
from typing import Any

from ferrule.core.sse import SseEvent

__all__ = ["sse_body", "sse_event", "typed_event"]


def _data(payload: Any) -> str:
    return payload if isinstance(payload, str) else json.dumps(payload)


def sse_event(payload: Any, *, event: str = "message") -> SseEvent:
    """One event whose data is `payload`: a string as it is, anything else as JSON."""
    return SseEvent(event=event, data=_data(payload))


def typed_event(payload: dict[str, Any]) -> SseEvent:
    """One event named after the payload's `type` (as the Messages and Responses APIs send them)."""
    return SseEvent(event=payload["type"], data=json.dumps(payload))


def sse_body(*payloads: Any, typed: bool = False, done: bool = False, line_break: str = "\n") -> bytes:
    """The SSE body of `payloads` (each one event, as `sse_event` writes its data).

    `typed` adds each payload's `type` as its `event:` line; `done` ends the body with OpenAI's
    `data: [DONE]`; `line_break` is `"\\r\\n"` to send CRLF line ends.
    """
    blocks: list[str] = []
    for payload in payloads:
        lines = [f"event: {payload['type']}"] if typed else []
        lines.append(f"data: {_data(payload)}")
        blocks.append(line_break.join(lines) + line_break * 2)
    if done:
        blocks.append(f"data: [DONE]{line_break * 2}")
    return "".join(blocks).encode()
