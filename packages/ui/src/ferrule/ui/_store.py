"""The deprecated store of paused UI runs: a protocol keyed by conversation, and an in-memory one.

The apps keep paused runs in the agent's `CheckpointStore` (see `_pauses`); `app(store=...)` with a
`PausedRunStore` still works, with a `DeprecationWarning`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Protocol
from typing import runtime_checkable

from ferrule.agent import PausedState

from ._errors import StoreFullError

__all__ = ["InMemoryPausedRunStore", "PausedRunStore"]


@runtime_checkable
class PausedRunStore(Protocol):
    """Holds one paused run per key until it is resumed (deprecated: the apps use the agent's `CheckpointStore`).

    The apps key runs by conversation (AI SDK chat id, AG-UI thread id). `consume` must be atomic
    and single-use: of two concurrent calls for the same key at most one returns the state, so a
    decision posted twice resumes the run once.
    """

    async def save(self, run_id: str, state: PausedState) -> None:
        """Store `state` under `run_id`, replacing what was there."""
        ...

    async def load(self, run_id: str) -> PausedState | None:
        """The state stored under `run_id`, left in place; `None` if there is none."""
        ...

    async def consume(self, run_id: str) -> PausedState | None:
        """Remove and return the state under `run_id`; `None` if there is none (or it was consumed)."""
        ...


class InMemoryPausedRunStore:
    """A `PausedRunStore` in this process's memory, for one worker process.

    At most `max_runs` runs are held; `save` past that raises `StoreFullError` rather than silently
    dropping a run someone may still approve.
    """

    def __init__(self, max_runs: int = 1024) -> None:
        if max_runs < 1:
            raise ValueError("max_runs must be at least 1")
        self.max_runs = max_runs
        """The most paused runs held at once."""
        self._runs: OrderedDict[str, PausedState] = OrderedDict()
        # The apps call from one event loop; the lock makes the store safe from threads as well.
        self._lock = threading.Lock()

    async def save(self, run_id: str, state: PausedState) -> None:
        """Store `state` under `run_id`."""
        with self._lock:
            if run_id not in self._runs and len(self._runs) >= self.max_runs:
                raise StoreFullError(
                    f"the store holds {self.max_runs} paused runs (max_runs); resume or discard some, "
                    "or use a larger or durable store"
                )
            self._runs[run_id] = state

    async def load(self, run_id: str) -> PausedState | None:
        """The state under `run_id`, or `None`."""
        with self._lock:
            return self._runs.get(run_id)

    async def consume(self, run_id: str) -> PausedState | None:
        """Remove and return the state under `run_id`, or `None`."""
        with self._lock:
            return self._runs.pop(run_id, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._runs)
