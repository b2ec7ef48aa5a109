"""`PendingMessageQueue`: messages sent into a running agent, entering history at safe points."""

from __future__ import annotations

import _thread
import copy
from collections.abc import Sequence

from ferrule.core.errors import UserError
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import UserContent
from ferrule.core.messages import UserPromptPart

from ._errors import PendingMessageQueueClosed

__all__ = ["DEFAULT_MAX_PENDING", "PendingMessageQueue"]

DEFAULT_MAX_PENDING = 256
"""Default most messages a queue holds before `enqueue` refuses more."""


class PendingMessageQueue:
    """A thread-safe FIFO of user messages for one run (`run(..., pending_messages=queue)`).

    Any thread or task may `enqueue` while the run is going. Accepted messages enter the run's
    history only at safe boundaries: before a model request (which includes right after tool
    results) and after a final response, which then becomes provisional: the model is asked
    again with the new messages instead of the run ending. Finishing checks and closes the queue
    under one lock, so an `enqueue` is either accepted for another model step or refused with
    `PendingMessageQueueClosed`; it never disappears behind a final result.

    If the run pauses, accepted messages move into the paused state and enter history right after
    the deferred calls' results on resume. A failed or cancelled run closes the queue and discards
    what had not entered history.
    """

    __slots__ = ("_closed", "_items", "_lock", "max_messages")

    def __init__(self, *, max_messages: int = DEFAULT_MAX_PENDING) -> None:
        if max_messages < 1:
            raise UserError(f"max_messages must be >= 1, got {max_messages}")
        self.max_messages = max_messages
        """Most messages the queue holds at once."""
        self._items: list[ModelRequest] = []
        self._closed = False
        self._lock = _thread.allocate_lock()  # threading.Lock without importing threading

    def enqueue(self, *messages: str | Sequence[UserContent] | ModelRequest) -> None:
        """Add messages (text, rich user content, or whole requests) as one batch.

        Requests are copied, so the caller may reuse its objects. Raises `PendingMessageQueueClosed`
        after the run ended and `UserError` when the batch would exceed `max_messages`.
        """
        batch: list[ModelRequest] = []
        for message in messages:
            if isinstance(message, ModelRequest):
                batch.append(copy.deepcopy(message))
            elif isinstance(message, str):
                batch.append(ModelRequest(parts=[UserPromptPart(content=message)]))
            else:
                batch.append(ModelRequest(parts=[UserPromptPart(content=list(message))]))
        with self._lock:
            if self._closed:
                raise PendingMessageQueueClosed(
                    "the run this queue belongs to has ended; start a new run with the message instead"
                )
            if len(self._items) + len(batch) > self.max_messages:
                raise UserError(
                    f"the pending message queue holds at most {self.max_messages} messages; "
                    "wait for the run to take some, or raise max_messages"
                )
            self._items.extend(batch)

    def close(self) -> None:
        """Refuse further messages and discard those not yet taken."""
        with self._lock:
            self._closed = True
            self._items.clear()

    @property
    def closed(self) -> bool:
        """Whether the queue refuses new messages."""
        return self._closed

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def take(self) -> list[ModelRequest]:
        """Remove and return the waiting messages (the run calls this at safe boundaries)."""
        with self._lock:
            items = self._items
            self._items = []
            return items

    def take_or_close(self) -> list[ModelRequest]:
        """Finalization: the waiting messages, or, when there are none, close the queue atomically."""
        with self._lock:
            if self._items:
                items = self._items
                self._items = []
                return items
            self._closed = True
            return []
