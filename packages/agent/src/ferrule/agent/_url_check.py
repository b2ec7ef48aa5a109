"""The run's URL policy, applied to every content URL before a model request carries it.

A model request sends `ImageUrl` / `AudioUrl` / `VideoUrl` / `DocumentUrl` items by URL, and some
servers (vLLM, llama.cpp, gateways) fetch such URLs themselves, on the caller's behalf. So each URL
item is checked against the agent's `UrlPolicy` before any request that carries it: the prompt and
the given history when the run starts, then, before each request, only what was appended since the
last check, plus whatever history processors or the context budget put in place of the history.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Any

from ferrule.core.messages import AudioUrl
from ferrule.core.messages import DocumentUrl
from ferrule.core.messages import ImageUrl
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ToolReturnPart
from ferrule.core.messages import UserPromptPart
from ferrule.core.messages import VideoUrl
from ferrule.core.messages import is_request

if TYPE_CHECKING:
    from ferrule.core.url_policy import UrlPolicy

__all__ = ["UrlCheck", "check_content", "check_message"]

_URL_ITEMS = (ImageUrl, AudioUrl, VideoUrl, DocumentUrl)


@functools.cache
def _default_policy() -> UrlPolicy:
    # Imported on first use: the policy module loads httpx2, which a run without URL items (or a
    # program that only imports ferrule.agent) never needs.
    from ferrule.core.url_policy import UrlPolicy

    return UrlPolicy()


def check_content(policy: UrlPolicy | None, content: Any) -> None:
    """Raise `UrlPolicyError` for the first URL item in `content` that `policy` refuses.

    `None` is the default policy (`UrlPolicy()`). Looks where the provider codecs look for media:
    `content` itself, or the items of a list. Anything nested deeper is sent as JSON text, which no
    server fetches.
    """
    if isinstance(content, _URL_ITEMS):
        (policy or _default_policy()).check(content.url)
    elif isinstance(content, (list, tuple)):
        for item in content:  # pyright: ignore[reportUnknownVariableType]
            if isinstance(item, _URL_ITEMS):
                (policy or _default_policy()).check(item.url)


def check_message(policy: UrlPolicy | None, message: Message) -> None:
    """Check the user content and tool results of a request (responses carry no URL items)."""
    if isinstance(message, ModelRequest):
        for part in message.parts:
            if isinstance(part, UserPromptPart):
                if not isinstance(part.content, str):
                    check_content(policy, part.content)
            elif isinstance(part, ToolReturnPart):
                check_content(policy, part.content)


class UrlCheck:
    """What of one run's history was checked, so that each message is checked once."""

    __slots__ = ("_seen", "checked", "policy")

    def __init__(self, policy: UrlPolicy | None) -> None:
        self.policy = policy
        self.checked = 0
        """Messages of the run's history checked so far (the history only grows)."""
        self._seen: dict[int, Message] | None = None  # checked history messages by id, once needed

    def new_messages(self, messages: list[Message]) -> None:
        """Check the messages appended to the run's history since the last check."""
        if self.checked >= len(messages):
            return
        new = messages[self.checked :] if self.checked else messages
        policy = self.policy
        # `check_message` inlined, and the requests picked out in C: a new run with a long
        # `message_history` checks all of it, and a step per message was most of that walk's cost.
        for message in filter(is_request, new):
            parts = message.parts
            # Most requests of a conversation are one plain-text prompt: nothing to look into.
            if len(parts) == 1 and type(part := parts[0]) is UserPromptPart and type(part.content) is str:
                continue
            for part in parts:
                if isinstance(part, UserPromptPart):
                    if not isinstance(part.content, str):
                        check_content(policy, part.content)
                elif isinstance(part, ToolReturnPart) and not isinstance(part.content, str):
                    check_content(policy, part.content)
        seen = self._seen
        if seen is not None:
            for message in new:
                seen[id(message)] = message
        self.checked = len(messages)

    def skip_to(self, messages: list[Message]) -> None:
        """Mark the history as checked up to its end (its new content was checked another way)."""
        if self._seen is not None:
            for message in itertools.islice(messages, self.checked, None):
                self._seen[id(message)] = message
        self.checked = len(messages)

    def replaced(self, sent: Sequence[Message], messages: list[Message]) -> None:
        """Check the messages of a request that are not the (checked) history's own messages.

        History processors and the context budget may drop, reorder or replace messages; only
        those not taken unchanged from the history need a check.
        """
        seen = self._seen
        if seen is None:
            seen = self._seen = {id(m): m for m in itertools.islice(messages, self.checked)}
        for message in sent:
            if seen.get(id(message)) is not message:
                check_message(self.policy, message)
