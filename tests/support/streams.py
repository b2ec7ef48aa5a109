"""Stream checkpoints for the crash tests: a `StreamCheckpointStore` in a file that outlives the
worker process, a one-line description of each delivered event, and the check that a run killed
mid-stream delivered no committed event twice."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ferrule.core.model import ResponseCompleted
from tests.support.crash import effects
from tests.support.crash import record_effect

__all__ = ["FileStore", "assert_delivered_once", "describe", "wait_until_settled"]


class FileStore:
    """A `StreamCheckpointStore` in a file that outlives the process (one fsynced line per commit)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    async def committed(self, checkpoint_id: str) -> int:
        ordinals = [
            int(line.rsplit(" ", 1)[1]) for line in effects(self.path) if line.startswith(checkpoint_id + " ")
        ]
        return max(ordinals, default=-1) + 1

    async def commit(self, checkpoint_id: str, ordinal: int) -> None:
        record_effect(self.path, f"{checkpoint_id} {ordinal}")

    async def delivered(self, key: str) -> bool:
        return f"key {key}" in effects(self.path)

    async def mark_delivered(self, key: str) -> None:
        record_effect(self.path, f"key {key}")


def describe(event: Any) -> str:
    """One line naming a stream event and what it carries."""
    if isinstance(event, ResponseCompleted):
        return f"completed {[getattr(p, 'content', getattr(p, 'args', None)) for p in event.response.parts]}"
    shown = next(
        (getattr(event, a) for a in ("delta", "part", "result", "snapshot") if hasattr(event, a)), ""
    )
    return f"{type(event).__name__} {shown!r}"


def wait_until_settled(events_log: Path, commits_log: Path) -> list[str]:
    """Wait until the first words are delivered and every delivered event committed; the events.

    The worker is held mid-stream by the chat server; the wait is a safety net, not a timing check.
    """

    def settled() -> bool:
        delivered = effects(events_log)
        return any("content_delta='The'" in line for line in delivered) and len(effects(commits_log)) == len(
            delivered
        )

    deadline = time.monotonic() + 120
    while not settled() and time.monotonic() < deadline:
        time.sleep(0.05)
    return effects(events_log)


def assert_delivered_once(events_log: Path, commits_log: Path, before: list[str], final: str) -> None:
    """After the restart: the events delivered `before` the kill came once, the rest followed.

    An event delivered but not yet committed when the worker died comes again (at least once);
    any other repeat is a failure.
    """
    events = effects(events_log)
    assert events[: len(before)] == before
    rest = events[len(before) :]
    if rest and before and rest[0] == before[-1]:
        rest = rest[1:]
    unique = before + rest
    assert len(set(unique)) == len(unique), f"a committed event was delivered twice: {events}"
    ordinals: dict[str, list[int]] = {}
    for line in effects(commits_log):
        checkpoint_id, _, ordinal = line.rpartition(" ")
        ordinals.setdefault(checkpoint_id, []).append(int(ordinal))
    assert all(n == list(range(len(n))) for n in ordinals.values()), (
        f"ordinals not once, in order: {ordinals}"
    )
    assert sum(len(n) for n in ordinals.values()) == len(unique), "every delivered event committed once"
    assert final in unique
