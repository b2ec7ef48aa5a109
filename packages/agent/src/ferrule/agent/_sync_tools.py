"""Worker threads for sync tools: a bounded set per agent, isolated from every other agent.

A sync function cannot be interrupted. When its caller stops waiting (the call's timeout, the run
deadline, a cancellation) its thread runs on until the function returns. Such an *abandoned* call
keeps counting against the `ToolThreads` it was started under, and only against it: the threads
themselves come from a process-wide cache of idle workers that has no limit of its own, so hung
calls of one agent never delay the tools of another. When every thread of a `ToolThreads` is held
by an abandoned call, the next call fails at once with `ToolThreadsExhaustedError` instead of
waiting for a thread that may never come back.
"""

from __future__ import annotations

import contextlib
import contextvars
import queue
import sys
import threading
from collections.abc import Callable
from typing import Any

import anyio

from .exceptions import ToolThreadsExhaustedError

__all__ = ["DEFAULT_SYNC_THREADS", "ToolThreads"]

DEFAULT_SYNC_THREADS = 40
"""Threads one agent's sync functions may occupy at once (anyio's default worker-thread limit)."""

_IDLE_SECONDS = 10.0  # an idle worker thread exits after this long

_idle: list[queue.SimpleQueue[_Job]] = []  # inboxes of idle workers; the last one is the warmest
_idle_lock = threading.Lock()


def _call_soon() -> Callable[[Callable[[], object]], object]:
    """A thread-safe "run this soon in the current event loop", for asyncio or trio."""
    # asyncio is only consulted when it is already imported: a trio program never pays for it.
    asyncio = sys.modules.get("asyncio")
    loop = asyncio._get_running_loop() if asyncio is not None else None
    if loop is not None:
        return loop.call_soon_threadsafe
    trio = sys.modules["trio"]  # anyio runs on asyncio or trio, so this is trio
    return trio.lowlevel.current_trio_token().run_sync_soon


class _Signal:
    """A one-shot wake-up, set from any thread and awaited in the event loop that created it."""

    __slots__ = ("_event", "_soon")

    def __init__(self) -> None:
        self._event = anyio.Event()
        self._soon = _call_soon()

    def set(self) -> None:
        # A loop that has ended has nobody left to wake.
        with contextlib.suppress(Exception):
            self._soon(self._event.set)

    async def wait(self) -> None:
        await self._event.wait()


class _Job:
    __slots__ = (
        "abandoned",
        "args",
        "context",
        "error",
        "finished",
        "function",
        "kwargs",
        "name",
        "owner",
        "signal",
        "value",
    )

    def __init__(
        self,
        owner: ToolThreads,
        name: str,
        function: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> None:
        self.owner = owner
        self.name = name
        self.function = function
        self.args = args
        self.kwargs = kwargs
        self.context = contextvars.copy_context()
        self.signal = _Signal()
        self.value: Any = None
        self.error: BaseException | None = None
        self.finished = False
        self.abandoned = False

    def run(self) -> None:
        try:
            self.value = self.context.run(self.function, *self.args, **self.kwargs)
        except BaseException as exc:  # delivered to the caller, which re-raises it
            self.error = exc
        self.owner._finished(self)  # pyright: ignore[reportPrivateUsage]


def _work(inbox: queue.SimpleQueue[_Job]) -> None:
    job = inbox.get()
    while True:
        job.run()
        del job  # an idle worker holds no reference to the last call's result
        with _idle_lock:
            _idle.append(inbox)
        try:
            job = inbox.get(timeout=_IDLE_SECONDS)
        except queue.Empty:
            with _idle_lock:
                try:
                    _idle.remove(inbox)
                except ValueError:  # a caller took this worker just now: its job is on the way
                    pass
                else:
                    return
            job = inbox.get()


def _dispatch(job: _Job) -> None:
    with _idle_lock:
        inbox = _idle.pop() if _idle else None
    if inbox is None:
        inbox = queue.SimpleQueue[_Job]()
        # Daemon threads: a sync tool that never returns must not keep the interpreter from exiting.
        threading.Thread(target=_work, args=(inbox,), name="ferrule-tool", daemon=True).start()
    inbox.put(job)


class ToolThreads:
    """The worker threads that the sync functions of one agent (or one tool) may occupy at once.

    Every agent has its own, sized by `ToolLimits.max_sync_threads`; a `Tool` called directly,
    outside an agent, uses one of its own. A call waits for a free thread while other calls are
    still running (the wait counts against the call's timeout). A call abandoned by its caller
    keeps its thread, and its place in this limit, until its function returns; when every place is
    held by abandoned calls, the next call raises `ToolThreadsExhaustedError` at once.
    """

    __slots__ = ("_abandoned", "_lock", "_running", "_waiters", "limit", "owner")

    def __init__(self, limit: int = DEFAULT_SYNC_THREADS, *, owner: str = "this agent") -> None:
        if limit < 1:
            raise ValueError(f"the sync thread limit must be at least 1, got {limit}")
        self.limit = limit
        """Threads that may be occupied at once, abandoned calls included."""
        self.owner = owner
        """Who the threads belong to, as error messages name it (e.g. `agent 'support'`)."""
        self._lock = threading.Lock()
        self._running = 0
        self._abandoned: dict[_Job, None] = {}  # insertion-ordered set
        self._waiters: list[_Signal] = []

    @property
    def running(self) -> int:
        """Threads occupied now, by calls in progress or abandoned."""
        return self._running

    @property
    def abandoned(self) -> int:
        """Threads occupied by calls whose caller stopped waiting (timed out or cancelled)."""
        return len(self._abandoned)

    async def run(
        self, function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], *, name: str
    ) -> Any:
        """Call `function(*args, **kwargs)` in a worker thread, with the caller's context variables.

        Cancellation does not wait for the thread: the call is abandoned, and its outcome unknown.
        """
        await self._acquire()
        job = _Job(self, name, function, args, kwargs)
        try:
            _dispatch(job)
        except BaseException:
            self._finished(job)  # no thread took it (the system refused a new thread): free the place
            raise
        try:
            await job.signal.wait()
        except BaseException:
            self._abandon(job)
            raise
        if job.error is not None:
            error = job.error
            job.error = None  # break the reference cycle through the traceback
            raise error
        return job.value

    async def _acquire(self) -> None:
        while True:
            with self._lock:
                if self._running < self.limit:
                    self._running += 1
                    return
                if len(self._abandoned) >= self._running:
                    raise ToolThreadsExhaustedError(self._exhausted())
                signal = _Signal()
                self._waiters.append(signal)
            try:
                await signal.wait()
            finally:
                with self._lock:
                    if signal in self._waiters:
                        self._waiters.remove(signal)

    def _exhausted(self) -> str:
        counts: dict[str, int] = {}
        for job in self._abandoned:
            counts[job.name] = counts.get(job.name, 0) + 1
        held = ", ".join(f"{name!r} x{count}" if count > 1 else repr(name) for name, count in counts.items())
        return (
            f"all {self.limit} worker threads for the sync tools of {self.owner} are held by calls that timed "
            f"out or were cancelled and are still running ({held}); no sync tool of {self.owner} can run "
            "until one of them returns. Make those functions return (bound their own blocking I/O), make "
            "them async so they can be cancelled, or raise ToolLimits.max_sync_threads"
        )

    def _abandon(self, job: _Job) -> None:
        with self._lock:
            if job.finished:
                return
            job.abandoned = True
            self._abandoned[job] = None
            waiters = self._waiters
            self._waiters = []
        # Waiters that counted on this call finishing re-check: they may have to fail now.
        for waiter in waiters:
            waiter.set()

    def _finished(self, job: _Job) -> None:
        """Called in the worker thread when the function returned."""
        with self._lock:
            self._running -= 1
            job.finished = True
            if job.abandoned:
                del self._abandoned[job]
            waiters = self._waiters
            self._waiters = []
        if not job.abandoned:
            job.signal.set()
        for waiter in waiters:
            waiter.set()

    def __repr__(self) -> str:
        return f"ToolThreads(limit={self.limit}, running={self._running}, abandoned={len(self._abandoned)})"
