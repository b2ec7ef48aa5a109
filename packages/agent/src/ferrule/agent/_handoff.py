"""The hand-off of a streamed run's events from the run's task to the consumer's."""

from __future__ import annotations

import sys
from typing import Any

import anyio
import anyio.lowlevel

__all__ = ["BUFFER", "Handoff", "let_others_run"]

BUFFER = 64
"""Events the run may get ahead of the consumer before it waits for the consumer to take them, and
the most events the consumer is given between two checkpoints."""


class Handoff:
    """Events from the run's task to the consumer's: a list the run appends to and the consumer
    takes whole, so a burst of events crosses between the tasks in one switch.

    The run waits (a checkpoint) only when `BUFFER` events are waiting, the consumer only when
    none is; each wait is on an event made for it, set by the other side. Called with an event,
    it is the run's `emit`; the model stream hands its events over with `offer` (a network read's
    with `extend`) and awaits only when the consumer is behind. The consumer cuts what it takes
    into runs of at most `BUFFER` events with a checkpoint between them
    (`StreamedRunResult._batches`, `let_others_run`), so that a consumer that never awaits still
    lets other tasks run, and the run is not resumed once per `BUFFER` events only to move the
    next ones from a list it already holds.
    """

    __slots__ = ("_data", "_space", "closed", "items")

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.closed = False
        self._data: anyio.Event | None = None  # the consumer is waiting for events
        self._space: anyio.Event | None = None  # the run is waiting for the consumer

    async def __call__(self, event: Any) -> None:
        """Hand `event` over; wait only when the consumer is `BUFFER` events behind."""
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
        return len(items) >= BUFFER

    async def extend(self, events: list[Any]) -> None:
        """`offer` `events` (at least one) together; `wait` if the consumer is now behind."""
        self.items += events[:-1]
        if self.offer(events[-1]):
            await self.wait()

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


async def let_others_run() -> None:
    """A checkpoint after which every other task that was ready has had its turn.

    One checkpoint does that on asyncio, whose ready tasks run in the order they became ready;
    trio runs each batch of ready tasks in either order, so a task that checkpoints once may run
    again before another that was ready with it, and a second checkpoint gives that one its turn.
    """
    # Asked of asyncio only when it is imported (a running asyncio loop imported it), as
    # `ferrule.core`'s clock does: a trio program pays one dictionary lookup.
    asyncio = sys.modules.get("asyncio")
    if asyncio is not None and asyncio._get_running_loop() is not None:
        # anyio's checkpoint on asyncio, without its lookup of the running library.
        await asyncio.sleep(0)
        return
    await anyio.lowlevel.checkpoint()
    await anyio.lowlevel.checkpoint()
