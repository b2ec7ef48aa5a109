"""The hand-off of a streamed run's events from the run's task to the consumer's."""

from __future__ import annotations

from typing import Any

import anyio

__all__ = ["BUFFER", "Handoff"]

BUFFER = 64
"""Events the run may get ahead of the consumer before it waits for the consumer to take them."""


class Handoff:
    """Events from the run's task to the consumer's: a list the run appends to and the consumer
    takes whole, so a burst of events crosses between the tasks in one switch.

    The run waits (a checkpoint) only when `limit` events are waiting, the consumer only when
    none is; each wait is on an event made for it, set by the other side. Called with an event,
    it is the run's `emit`; the model stream hands its events over with `offer` and awaits only
    when `offer` says the consumer is behind.
    """

    __slots__ = ("_data", "_doubled", "_space", "_splits", "closed", "items", "limit")

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.closed = False
        self.limit = BUFFER
        """How many waiting items make the run wait: half `BUFFER` while an item may be two
        events to the consumer (`pairs`), so that it never sees more than `BUFFER` at a time."""
        self._doubled = False  # the run: items may stand for an event and one the consumer makes
        # The consumer makes those events: so assumed until it says otherwise (`stream_text`).
        self._splits = True
        self._data: anyio.Event | None = None  # the consumer is waiting for events
        self._space: anyio.Event | None = None  # the run is waiting for the consumer

    async def __call__(self, event: Any) -> None:
        """Hand `event` over; wait only when the consumer is `limit` events behind."""
        if self.offer(event):
            await self.wait()

    def pairs(self, *, run: bool | None = None, consumer: bool | None = None) -> None:
        """Say whether an item may now stand for two events: the run's side (it hands over what
        the consumer may make a second event of) or the consumer's (it makes them)."""
        if run is not None:
            self._doubled = run
        if consumer is not None:
            self._splits = consumer
        self.limit = BUFFER // 2 if self._doubled and self._splits else BUFFER

    def offer(self, event: Any) -> bool:
        """Hand `event` over without waiting; `True` when the run must now `wait` for the consumer."""
        items = self.items
        items.append(event)
        data = self._data
        if data is not None:
            self._data = None
            data.set()
        return len(items) >= self.limit

    async def extend(self, events: list[Any]) -> None:
        """`offer` and `wait` for each of `events` (at least one), the most that fit at a time."""
        start = 0
        end = len(events)
        while True:
            # At least one: markers are offered without waiting, so `limit` may be passed by one.
            cut = start + max(1, self.limit - len(self.items))
            if cut >= end:
                if start:
                    events = events[start:]
                self.items += events[:-1]
                if self.offer(events[-1]):
                    await self.wait()
                return
            self.items += events[start : cut - 1]
            self.offer(events[cut - 1])
            await self.wait()
            start = cut

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
