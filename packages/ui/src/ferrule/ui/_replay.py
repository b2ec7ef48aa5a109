"""A bounded window of encoded protocol records, for clients that reconnect."""

from __future__ import annotations

import itertools
from collections import deque

from ._errors import ReplayGapError

__all__ = ["ReplayBuffer"]


class ReplayBuffer:
    """Encoded records in source order, each with a monotonic sequence number (the first is 1).

    The oldest records are evicted when there are more than `max_events` of them or their bytes
    add up to more than `max_bytes`; a single record larger than `max_bytes` is kept alone until
    the next append, so the newest record is always replayable. Not thread-safe: use it from one
    event loop.
    """

    __slots__ = ("_bytes", "_next", "_records", "max_bytes", "max_events")

    def __init__(self, max_events: int = 10_000, max_bytes: int = 8 * 1024 * 1024) -> None:
        if max_events < 1 or max_bytes < 1:
            raise ValueError("ReplayBuffer needs max_events >= 1 and max_bytes >= 1")
        self.max_events = max_events
        """The most records kept."""
        self.max_bytes = max_bytes
        """The most bytes kept (the newest record is kept even when larger)."""
        self._records: deque[tuple[int, bytes]] = deque()
        self._bytes = 0
        self._next = 1

    def append(self, record: bytes) -> int:
        """Keep `record`; return its sequence number."""
        seq = self._next
        self._next += 1
        self._records.append((seq, record))
        self._bytes += len(record)
        records = self._records
        while len(records) > 1 and (len(records) > self.max_events or self._bytes > self.max_bytes):
            _, old = records.popleft()
            self._bytes -= len(old)
        return seq

    @property
    def last_seq(self) -> int:
        """The sequence number of the newest record (0 before the first)."""
        return self._next - 1

    @property
    def first_seq(self) -> int:
        """The sequence number of the oldest record kept (`last_seq + 1` when empty)."""
        return self._records[0][0] if self._records else self._next

    @property
    def size_bytes(self) -> int:
        """Bytes of the records kept."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._records)

    def replay_after(self, seq: int) -> list[tuple[int, bytes]]:
        """The records newer than `seq`, oldest first, with their sequence numbers.

        Raises `ReplayGapError` if some of them were already evicted (the client would miss records).
        """
        if seq < 0:
            raise ValueError(f"sequence numbers start at 0, got {seq}")
        if seq + 1 < self.first_seq:
            raise ReplayGapError(
                f"records {seq + 1} to {self.first_seq - 1} were evicted from the replay buffer "
                f"(max_events={self.max_events}, max_bytes={self.max_bytes}); start a new run"
            )
        if seq >= self.last_seq:
            return []
        skip = seq + 1 - self.first_seq
        return list(itertools.islice(self._records, skip, None))
