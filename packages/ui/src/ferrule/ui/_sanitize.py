"""Turning browser-supplied history into canonical messages that can never carry authority."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import msgspec

from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import UserPromptPart

from ._body import check_history_length
from ._errors import ClientInputError
from ._limits import DEFAULT_LIMITS
from ._limits import UILimits

__all__ = ["BrowserMessage", "sanitize_messages", "split_prompt"]

# Roles a browser may claim that would give its text authority it must not have: instructions
# (system, developer), tool results (tool), or the model's own state (reasoning, activity).
_REFUSED_ROLES = frozenset({"system", "developer", "tool", "activity", "reasoning"})


class BrowserMessage(msgspec.Struct, frozen=True):
    """One message of a browser's history, reduced to its role and text by a protocol adapter."""

    role: str
    """The role the browser claims (`"user"`, `"assistant"`, or a refused one)."""
    text: str
    """The message's text."""


def sanitize_messages(
    browser_messages: Sequence[BrowserMessage],
    *,
    allow_assistant: bool = False,
    limits: UILimits = DEFAULT_LIMITS,
) -> list[Message]:
    """Canonical history from a browser's messages: user text, and assistant text only when allowed.

    Browser IDs are never read. `system`, `developer`, `tool`, `activity` and `reasoning` messages
    (and any unknown role) are refused with `ClientInputError`: client history can never become
    instructions or tool results. Assistant messages are dropped unless `allow_assistant`; when
    allowed they become plain `TextPart` responses (never tool calls). Empty messages are dropped.
    Message count and text sizes are bounded by `limits` (`ClientInputError`, status 413).
    """
    check_history_length(len(browser_messages), limits)
    out: list[Message] = []
    total = 0
    for index, message in enumerate(browser_messages):
        role = message.role
        if role in _REFUSED_ROLES:
            raise ClientInputError(
                f"message {index} has role {role!r}, which a browser may not send: instructions and tool "
                "results come from the server, never from client history"
            )
        kind: Literal["user", "assistant"]
        if role == "user":
            kind = "user"
        elif role == "assistant":
            if not allow_assistant:
                continue
            kind = "assistant"
        else:
            raise ClientInputError(
                f"message {index} has unknown role {role!r}; expected 'user' or 'assistant'"
            )
        size = len(message.text.encode())
        if size > limits.max_text_bytes:
            raise ClientInputError(
                f"message {index} has {size} bytes of text; the limit is {limits.max_text_bytes}", status=413
            )
        total += size
        if total > limits.max_total_text_bytes:
            raise ClientInputError(
                f"the history has more than {limits.max_total_text_bytes} bytes of text", status=413
            )
        if not message.text:
            continue
        if kind == "user":
            out.append(ModelRequest(parts=[UserPromptPart(content=message.text)]))
        else:
            out.append(ModelResponse(parts=[TextPart(content=message.text)]))
    return out


def split_prompt(history: list[Message]) -> tuple[str, list[Message]]:
    """The last message's user text and the history before it; `ClientInputError` if the last
    message is not the user's text (what a new run needs)."""
    if history:
        last = history[-1]
        if isinstance(last, ModelRequest) and len(last.parts) == 1:
            part = last.parts[0]
            if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                return part.content, history[:-1]
    raise ClientInputError("the last message must be the user's, with text")
