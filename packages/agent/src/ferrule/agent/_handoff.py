"""The hand-off of a streamed run's events from the run's task to the consumer's."""

from __future__ import annotations

from typing import Any

import anyio

__all__ = ["Handoff"]

_BUFFER = 64
"""Events the run may get ahead of the consumer before it waits for the consumer to take them."""


class Handoff:
    """Events from the run's task to the consumer's: a list the run appends to and the consumer
    takes whole, so a burst of events crosses between the tasks in one switch.

    The run waits (a checkpoint) only when `_BUFFER` events are waiting, the consumer only when
    none is; each wait is on an event made for it, set by the other side. Called with an event,
    it is the run's `emit`; the model stream hands its events over with `offer` and awaits only
    when `offer` says the consumer is behind.
    """

    __slots__ = ("_data", "_space", "closed", "items")

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.closed = False
        self._data: anyio.Event | None = None  # the consumer is waiting for events
        self._space: anyio.Event | None = None  # the run is waiting for the consumer

    async def __call__(self, event: Any) -> None:
        """Hand `event` over; wait only when the consumer is `_BUFFER` events behind."""
        if self.offer(event):
            await self.wait()

    def offer(self, event: Any) -> bool:
        """Hand `event` over without waiting; `True` when the run must now `wait` for the consumer."""
        items = self.items
        items.append(event)
        data = self._data
        if data is not None:
            self._data = None
            data.set()
        return len(items) >= _BUFFER

    def offer_all(self, events: list[Any]) -> bool:
        """`offer` of every one of `events` (at least one) at once."""
        self.items += events[:-1]
        return self.offer(events[-1])

    async def wait(self) -> None:
        """Wait until the consumer has taken the events waiting."""
        space = self._space = anyio.Event()
        await space.wait()

    async def take(self) -> list[Any]:
        """Every event waiting (at least one), or `[]` once the run has ended and none is left."""
        while not self.items:
            if self.closed:
                return []
            data = self._data = anyio.Event()
            await data.wait()
        items = self.items
        self.items = []
        space = self._space
        if space is not None:
            self._space = None
            space.set()
        return items

    def close(self) -> None:
        """The run has ended: the consumer takes what is left, then sees the end."""
        self.closed = True
        data = self._data
        if data is not None:
            self._data = None
            data.set()
