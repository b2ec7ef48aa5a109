"""An in-memory durable engine for tests of `ferrule.agent.durable` and of what binds to it.

`Engine` is a `StepRunner` that records each step's JSON once and returns the record on replay;
`crash_at = (step ID prefix, "before" | "inside" | "after")` makes the matching step raise `Crash`
(a process dying: nothing after it runs) before running, after running without a record, or after
running. A started non-idempotent step without a record is an unknown outcome, as in DBOS.
"""

from __future__ import annotations

from collections.abc import Awaitable
from collections.abc import Callable

from ferrule.agent.durable import Step
from ferrule.agent.durable import unknown_outcome

__all__ = ["Crash", "Engine"]


class Crash(BaseException):
    """The process dies here (nothing after it runs, nothing is recorded)."""


class Engine:
    """An engine double: records each step's JSON once; a `crash_at` step dies before or after running."""

    def __init__(self) -> None:
        self.records: dict[str, str] = {}
        self.started: set[str] = set()
        self.executed: list[str] = []
        self.crash_at: tuple[str, str] | None = None  # (step ID prefix, "before" | "inside" | "after")

    async def run_step(self, step: Step, execute: Callable[[], Awaitable[str]]) -> str:
        if step.id in self.records:
            return self.records[step.id]
        if step.side_effect == "non_idempotent":
            if step.id in self.started:
                return unknown_outcome()
            self.started.add(step.id)
        crash = self.crash_at if self.crash_at and step.id.startswith(self.crash_at[0]) else None
        if crash and crash[1] == "before":
            raise Crash
        self.executed.append(step.id)
        if crash and crash[1] == "inside":
            await execute()
            raise Crash
        recorded = await execute()
        if crash and crash[1] == "after":
            raise Crash
        self.records[step.id] = recorded
        return recorded
