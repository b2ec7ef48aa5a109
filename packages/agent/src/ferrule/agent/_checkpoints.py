"""Checkpoint stores: where paused states wait, and the single-use claim that resumes one.

Every pause is saved to the agent's store (`Agent(checkpoint_store=...)`, else one process-wide
in-memory store). Resuming claims the paused state with `consume` after every check has passed and
before any call runs: a state is resumed once, and a second resume of it raises
`CheckpointConsumedError` with nothing executed, in this process or, with a shared
`SqliteCheckpointStore`, in any other.

A store keeps its own copy of each state: editing the paused history in place after the pause (or
a state `load` returned) changes nothing a later resume sees.
"""

from __future__ import annotations

import collections
import contextlib
import os
import threading
from datetime import datetime
from typing import TYPE_CHECKING
from typing import Any
from typing import Final
from typing import Protocol
from typing import cast
from typing import runtime_checkable

import anyio
import msgspec

from ._deferred import PausedState
from ._deferred import checked_integrity_key
from ._errors import AgentRunError

if TYPE_CHECKING:
    import sqlite3

__all__ = [
    "DEFAULT_MAX_CHECKPOINTS",
    "CheckpointConsumedError",
    "CheckpointError",
    "CheckpointNotFoundError",
    "CheckpointStore",
    "InMemoryCheckpointStore",
    "SqliteCheckpointStore",
    "default_checkpoint_store",
]

DEFAULT_MAX_CHECKPOINTS: Final = 1024
"""Checkpoints (pending or consumed) an `InMemoryCheckpointStore` keeps before dropping the oldest."""


class CheckpointError(AgentRunError):
    """A checkpoint could not be saved, found or claimed."""


class CheckpointConsumedError(CheckpointError):
    """The paused state was already resumed (or superseded by a newer pause); nothing was executed."""


class CheckpointNotFoundError(CheckpointError):
    """The store holds no checkpoint for the run."""


@runtime_checkable
class CheckpointStore(Protocol):
    """Where paused states are kept between a pause and its single resume.

    Implementations must make `consume` atomic: of any number of concurrent claims of one state,
    exactly one returns and every other raises `CheckpointConsumedError`.
    """

    async def save(self, run_id: str, state: PausedState) -> None:
        """Keep `state` as the run's latest checkpoint; a state already consumed is refused."""
        ...

    async def load(self, run_id: str) -> PausedState:
        """The run's latest checkpoint; `CheckpointConsumedError` if it was resumed,
        `CheckpointNotFoundError` if there is none."""
        ...

    async def consume(self, run_id: str, *, state_id: str | None = None) -> None:
        """Claim a checkpoint for one resume: `state_id` (default: the run's latest) is marked used.

        A state the store never saw is recorded as used and the claim succeeds (so a state passed to
        `resume` directly is single-use too); one already used raises `CheckpointConsumedError`.
        """
        ...


def _consumed(run_id: str, state_id: str) -> CheckpointConsumedError:
    return CheckpointConsumedError(
        f"the paused state {state_id!r} of run {run_id!r} was already resumed (or superseded by a newer "
        "pause); nothing was executed. Resume the run's latest checkpoint, or start a new run"
    )


def _not_found(run_id: str) -> CheckpointNotFoundError:
    return CheckpointNotFoundError(
        f"the checkpoint store holds no paused state for run {run_id!r}: it never paused with this store, "
        "or its checkpoint was dropped (InMemoryCheckpointStore keeps the newest max_checkpoints)"
    )


class _Record:
    __slots__ = ("consumed", "run_id", "state")

    def __init__(self, run_id: str, state: PausedState | None, consumed: bool) -> None:
        self.run_id = run_id
        self.state = state
        self.consumed = consumed


# Values `_detached` keeps without looking inside: immutable, and most of a state's leaves.
_IMMUTABLE: Final = frozenset({str, int, float, bool, bytes, type(None), datetime})


def _detached(value: Any) -> Any:
    """`value` with every Struct, list, dict and tuple in it copied, so no caller shares them.

    Other values are immutable scalars or application objects (e.g. a tool's `metadata`), kept as
    they are: unlike a JSON round trip, this never fails and keeps every value's type.
    """
    if isinstance(value, msgspec.Struct):
        changed: dict[str, Any] = {}
        for name in value.__struct_fields__:
            item = getattr(value, name)
            if type(item) not in _IMMUTABLE:
                changed[name] = _detached(item)
        return msgspec.structs.replace(value, **changed)
    kind: type[Any] = type(cast("object", value))  # exact types: a subclass may not rebuild from its items
    if kind is list:
        return [i if type(i) in _IMMUTABLE else _detached(i) for i in cast("list[Any]", value)]
    if kind is dict:
        return {
            k: i if type(i) in _IMMUTABLE else _detached(i) for k, i in cast("dict[Any, Any]", value).items()
        }
    if kind is tuple:
        return tuple(i if type(i) in _IMMUTABLE else _detached(i) for i in cast("tuple[Any, ...]", value))
    return value


class InMemoryCheckpointStore:
    """A process-local `CheckpointStore`: a bounded map guarded by a lock (safe across event loops).

    It keeps a copy of each saved state and hands out a fresh copy on every `load` (like the SQLite
    store, which keeps serialized states), so callers never share message objects with it.

    It keeps the newest `max_checkpoints` records, pending or consumed; older ones are dropped (a
    dropped consumed record no longer blocks a second resume of that state in this process: use a
    `SqliteCheckpointStore` when that matters).
    """

    __slots__ = ("_latest", "_lock", "_records", "max_checkpoints")

    def __init__(self, *, max_checkpoints: int = DEFAULT_MAX_CHECKPOINTS) -> None:
        if max_checkpoints < 1:
            raise ValueError(f"max_checkpoints must be at least 1, got {max_checkpoints}")
        self.max_checkpoints = max_checkpoints
        """How many records are kept before the oldest is dropped."""
        self._records: collections.OrderedDict[str, _Record] = collections.OrderedDict()
        self._latest: dict[str, str] = {}
        self._lock = threading.Lock()

    async def save(self, run_id: str, state: PausedState) -> None:
        """Keep a copy of `state` as the run's latest checkpoint."""
        kept: PausedState = _detached(state)
        with self._lock:
            record = self._records.get(state.state_id)
            if record is not None and record.consumed:
                raise _consumed(run_id, state.state_id)
            self._records[state.state_id] = _Record(run_id, kept, False)
            self._records.move_to_end(state.state_id)
            self._latest[run_id] = state.state_id
            while len(self._records) > self.max_checkpoints:
                old_id, old = self._records.popitem(last=False)
                if self._latest.get(old.run_id) == old_id:
                    del self._latest[old.run_id]

    async def load(self, run_id: str) -> PausedState:
        """A fresh copy of the run's latest checkpoint."""
        with self._lock:
            state_id = self._latest.get(run_id)
            record = self._records.get(state_id) if state_id is not None else None
            if state_id is None or record is None:
                raise _not_found(run_id)
            if record.consumed or record.state is None:
                raise _consumed(run_id, state_id)
            state = record.state
        return _detached(state)

    async def consume(self, run_id: str, *, state_id: str | None = None) -> None:
        """Claim a checkpoint (the run's latest by default) for one resume."""
        with self._lock:
            if state_id is None:
                state_id = self._latest.get(run_id)
                if state_id is None:
                    raise _not_found(run_id)
            record = self._records.get(state_id)
            if record is None:
                self._records[state_id] = _Record(run_id, None, True)
                if len(self._records) > self.max_checkpoints:
                    self._records.popitem(last=False)
                return
            if record.consumed or record.run_id != run_id:
                raise _consumed(run_id, state_id)
            record.consumed = True
            record.state = None  # a used state is never needed again


_default: list[InMemoryCheckpointStore] = []
_default_lock = threading.Lock()


def default_checkpoint_store() -> InMemoryCheckpointStore:
    """The process-wide store of agents built without `checkpoint_store=` (created on first use)."""
    if not _default:
        with _default_lock:
            if not _default:
                _default.append(InMemoryCheckpointStore())
    return _default[0]


_SCHEMA = """
CREATE TABLE IF NOT EXISTS ferrule_checkpoints (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    state_id TEXT NOT NULL UNIQUE,
    run_id TEXT NOT NULL,
    state BLOB,
    consumed INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS ferrule_checkpoints_run ON ferrule_checkpoints (run_id, seq);
"""


class SqliteCheckpointStore:
    """A `CheckpointStore` in a SQLite database file (stdlib `sqlite3`), shared by processes.

    `consume` is one conditional `INSERT ... ON CONFLICT DO UPDATE`: SQLite serializes writers, so
    of concurrent claims of one state in any number of processes exactly one succeeds. States are
    stored as `PausedState.to_json` envelopes, signed with `integrity_key` when given (and then
    refused on load unless their signature matches). Every database call runs in a worker thread
    with its own connection, never on the event loop. A consumed state's document is deleted; its
    marker stays so the state cannot be resumed again.
    """

    __slots__ = ("_integrity_key", "_ready", "_ready_lock", "path", "timeout")

    def __init__(
        self, path: str | os.PathLike[str], *, integrity_key: bytes | None = None, timeout: float = 30.0
    ) -> None:
        self.path = os.fspath(path)
        """The database file."""
        self.timeout = timeout
        """Seconds a call waits for another connection's write lock before failing."""
        self._integrity_key = checked_integrity_key(integrity_key)  # refused here, not at the first save
        self._ready = False
        self._ready_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SqliteCheckpointStore({self.path!r}, signed={self._integrity_key is not None})"

    def _connect(self) -> sqlite3.Connection:
        import sqlite3  # loaded with the first SQLite store used, not with the agent

        connection = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
        if not self._ready:
            with self._ready_lock:
                if not self._ready:
                    connection.executescript(_SCHEMA)
                    self._ready = True
        return connection

    async def save(self, run_id: str, state: PausedState) -> None:
        """Keep `state` as the run's latest checkpoint."""
        document = state.to_json(integrity_key=self._integrity_key)
        await anyio.to_thread.run_sync(self._save, run_id, state.state_id, document)

    def _save(self, run_id: str, state_id: str, document: bytes) -> None:
        with contextlib.closing(self._connect()) as db:
            cursor = db.execute(
                "INSERT INTO ferrule_checkpoints (state_id, run_id, state) VALUES (?, ?, ?) "
                "ON CONFLICT (state_id) DO UPDATE SET state = excluded.state WHERE consumed = 0",
                (state_id, run_id, document),
            )
            if cursor.rowcount != 1:
                raise _consumed(run_id, state_id)

    async def load(self, run_id: str) -> PausedState:
        """The run's latest checkpoint (read and verified in a worker thread)."""
        return await anyio.to_thread.run_sync(self._load, run_id)

    def _load(self, run_id: str) -> PausedState:
        with contextlib.closing(self._connect()) as db:
            row = db.execute(
                "SELECT state_id, state, consumed FROM ferrule_checkpoints WHERE run_id = ? "
                "ORDER BY seq DESC LIMIT 1",
                (run_id,),
            ).fetchone()
        if row is None:
            raise _not_found(run_id)
        state_id, document, consumed = row
        if consumed or document is None:
            raise _consumed(run_id, state_id)
        return PausedState.from_json(document, integrity_key=self._integrity_key)

    async def consume(self, run_id: str, *, state_id: str | None = None) -> None:
        """Claim a checkpoint (the run's latest by default) for one resume, atomically."""
        await anyio.to_thread.run_sync(self._consume, run_id, state_id)

    def _consume(self, run_id: str, state_id: str | None) -> None:
        with contextlib.closing(self._connect()) as db:
            if state_id is None:
                row = db.execute(
                    "SELECT state_id FROM ferrule_checkpoints WHERE run_id = ? ORDER BY seq DESC LIMIT 1",
                    (run_id,),
                ).fetchone()
                if row is None:
                    raise _not_found(run_id)
                state_id = str(row[0])
            cursor = db.execute(
                "INSERT INTO ferrule_checkpoints (state_id, run_id, state, consumed) VALUES (?, ?, NULL, 1) "
                "ON CONFLICT (state_id) DO UPDATE SET consumed = 1, state = NULL "
                "WHERE consumed = 0 AND run_id = excluded.run_id",
                (state_id, run_id),
            )
            if cursor.rowcount != 1:
                raise _consumed(run_id, state_id)
