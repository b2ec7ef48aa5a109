"""A streamed run's own task, and the hand-off of its events from that task to the consumer's."""

from __future__ import annotations

import sys
from collections.abc import Callable
from collections.abc import Coroutine
from types import TracebackType
from typing import TYPE_CHECKING
from typing import Any
from typing import Protocol

import anyio
import anyio.abc
import anyio.lowlevel

if TYPE_CHECKING:
    import asyncio

__all__ = ["BUFFER", "Background", "Handoff", "let_others_run"]

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

    __slots__ = ("_data", "_loop", "_space", "closed", "items")

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.closed = False
        self._loop = _asyncio_loop()  # made in the run's loop: asked once, not at every wait
        self._data: _Signal | None = None  # the consumer is waiting for events
        self._space: _Signal | None = None  # the run is waiting for the consumer

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
        space = self._space = _signal(self._loop)
        await space.wait()

    async def take(self) -> list[Any]:
        """Every event waiting (at least one), or `[]` once the run has ended and none is left."""
        while not self.items:
            if self.closed:
                return []
            data = self._data = _signal(self._loop)
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


class _Signal(Protocol):
    """A one-shot wake-up of one waiting task: `anyio.Event`'s `set` and `wait`."""

    def set(self) -> Any: ...

    async def wait(self) -> Any: ...


class _Wakeup:
    """`_Signal` on asyncio: one future, set once. An `anyio.Event` costs about 2 µs to make here
    (it asks sniffio which library runs, then makes an `asyncio.Event`, whose `wait` makes a future
    anyway); the consumer of a streamed run makes one each time it catches up with the run."""

    __slots__ = ("_future",)

    def __init__(self, future: asyncio.Future[None]) -> None:
        self._future = future

    def set(self) -> None:
        future = self._future
        if not future.done():  # a waiter cancelled meanwhile cancelled the future
            future.set_result(None)

    async def wait(self) -> None:
        await self._future


def _signal(loop: Any) -> _Signal:
    """A fresh `_Signal`: on asyncio (`loop`) a future of the loop, anywhere else (trio) an `anyio.Event`."""
    if loop is not None:
        return _Wakeup(loop.create_future())
    return anyio.Event()


def _asyncio_loop() -> Any:
    """The running asyncio event loop, or `None` (trio)."""
    # Asked of asyncio only when it is imported (a running asyncio loop imported it), as
    # `ferrule.core`'s clock does: a trio program pays one dictionary lookup.
    asyncio = sys.modules.get("asyncio")
    return asyncio._get_running_loop() if asyncio is not None else None


class Background:
    """One task beside the body of an `async with`, in the style of a task group of one.

    Leaving the block waits for the task to end, and re-raises what it raised other than its
    cancellation; `cancel` (or a body that raises) cancels it, through an anyio cancel scope, so
    its shielded clean-up still runs in full. On asyncio the task is one of asyncio's own: an
    anyio task group takes about 39 µs to start and join a task here, a task and a cancel scope
    about 11 µs, and a streamed run starts one per run. Anywhere else (trio) it is an anyio task
    group's.
    """

    __slots__ = ("_call", "_group", "_scope", "_task")

    def __init__(self, function: Callable[..., Coroutine[Any, Any, None]], *args: Any) -> None:
        self._call = (function, args)
        self._scope: anyio.CancelScope | None = None  # the task's, on asyncio
        self._task: asyncio.Task[None] | None = None
        self._group: anyio.abc.TaskGroup | None = None

    async def __aenter__(self) -> Background:
        function, args = self._call
        loop = _asyncio_loop()
        if loop is not None:
            scope = self._scope = anyio.CancelScope()
            self._task = loop.create_task(_in_scope(scope, function(*args)))
        else:
            group = self._group = anyio.create_task_group()
            await group.__aenter__()
            group.start_soon(function, *args)
        return self

    def cancel(self) -> None:
        """Cancel the task; the block still waits for it to end."""
        group = self._group
        scope = group.cancel_scope if group is not None else self._scope
        assert scope is not None  # entered
        scope.cancel()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        group = self._group
        if group is not None:
            return bool(await group.__aexit__(exc_type, exc, tb))
        task = self._task
        assert task is not None  # entered
        if exc_type is not None:
            self.cancel()
        if not task.done():
            await self._join(task)
        task.result()  # what the task raised, other than the cancellation of its own scope
        return False

    async def _join(self, task: asyncio.Task[None]) -> None:
        """Wait for `task` to end; cancelled meanwhile, cancel it too, wait on, then re-raise."""
        import asyncio

        cancelled: asyncio.CancelledError | None = None
        while not task.done():
            try:
                await asyncio.wait((task,))
            except asyncio.CancelledError as exc:
                cancelled = exc
                self.cancel()
        if cancelled is not None:
            raise cancelled


async def _in_scope(scope: anyio.CancelScope, coroutine: Coroutine[Any, Any, None]) -> None:
    with scope:
        await coroutine


async def let_others_run() -> None:
    """A checkpoint after which every other task that was ready has had its turn.

    One checkpoint does that on asyncio, whose ready tasks run in the order they became ready;
    trio runs each batch of ready tasks in either order, so a task that checkpoints once may run
    again before another that was ready with it, and a second checkpoint gives that one its turn.
    """
    if _asyncio_loop() is not None:
        # anyio's checkpoint on asyncio, without its lookup of the running library.
        await sys.modules["asyncio"].sleep(0)
        return
    await anyio.lowlevel.checkpoint()
    await anyio.lowlevel.checkpoint()
