"""How an app keeps its conversations' paused runs: in the agent's `CheckpointStore`, or a legacy `PausedRunStore`.

With a checkpoint store a conversation's pause is the checkpoint of the run ID `<scope>:<key>` (for
example `vercel:chat:<chat id>`), so the conversation needs no mapping of its own: a pause found
by that run ID after a restart is the conversation's latest, and the agent's `consume` keeps every
resume single-use, in this process or any other sharing the store.
"""

from __future__ import annotations

import contextlib
import uuid
import warnings
from typing import Any
from typing import Protocol

import msgspec

from ferrule.agent import Agent
from ferrule.agent import CheckpointStore
from ferrule.agent import PausedState
from ferrule.agent.exceptions import CheckpointConsumedError
from ferrule.agent.exceptions import CheckpointNotFoundError

from ._errors import ClientInputError
from ._store import PausedRunStore

__all__ = ["CheckpointPauses", "PausedRunStorePauses", "Pauses", "pauses_for"]


def pauses_for(agent: Agent[Any, Any], store: PausedRunStore | None, scope: str) -> Pauses:
    """An app's pauses: in the agent's checkpoint store, or in `store` (deprecated) when one is given."""
    if store is None:
        return CheckpointPauses(agent.checkpoint_store, scope)
    warnings.warn(
        "app(store=PausedRunStore) is deprecated: paused runs are kept in the agent's checkpoint store; "
        "build the agent with Agent(checkpoint_store=...) (e.g. SqliteCheckpointStore) and drop store=",
        DeprecationWarning,
        stacklevel=3,
    )
    return PausedRunStorePauses(store)


class Pauses(Protocol):
    """The paused runs of one app's conversations."""

    async def waiting(self, key: str) -> PausedState | None:
        """The pause of `key` waiting for decisions; `None` if there is none."""
        ...

    async def paused(self, key: str, state: PausedState) -> None:
        """Keep the agent's new pause `state` as `key`'s (before the client hears of it)."""
        ...

    async def abandon(self, key: str) -> None:
        """Drop `key`'s unanswered pause, if any: it can no longer be resumed."""
        ...

    async def take(self, key: str, expected: PausedState, noun: str) -> PausedState:
        """The state to resume `key` from, which must still be `expected`; 409 otherwise."""
        ...

    async def restore(self, key: str, state: PausedState) -> None:
        """Put back what `take` took, when its resume never started."""
        ...


class CheckpointPauses:
    """Pauses in an agent's `CheckpointStore`, as the checkpoints of run `<scope>:<key>`."""

    def __init__(self, store: CheckpointStore, scope: str) -> None:
        self.store = store
        """The agent's checkpoint store."""
        self.scope = scope
        """The prefix of the conversations' run IDs."""

    def run_id(self, key: str) -> str:
        """The run ID the pauses of conversation `key` are checkpointed under."""
        return f"{self.scope}:{key}"

    async def waiting(self, key: str) -> PausedState | None:
        """The run's latest checkpoint, unless it was resumed (or there is none)."""
        try:
            return await self.store.load(self.run_id(key))
        except (CheckpointNotFoundError, CheckpointConsumedError):
            return None

    async def paused(self, key: str, state: PausedState) -> None:
        """Move a new run's pause under the conversation's run ID; a resumed run's is there already."""
        run_id = self.run_id(key)
        if state.run_id == run_id:
            return
        # The agent saved the pause under the run's random ID: keep it under the conversation's ID
        # (a new state ID, as the store binds each to one run) and use up the original, so that
        # exactly one checkpoint of this pause can be resumed.
        moved = msgspec.structs.replace(state, run_id=run_id, state_id=uuid.uuid4().hex)
        await self.store.save(run_id, moved)
        await self.store.consume(state.run_id, state_id=state.state_id)

    async def abandon(self, key: str) -> None:
        """Use up the conversation's latest checkpoint, if it is still pending."""
        with contextlib.suppress(CheckpointNotFoundError, CheckpointConsumedError):
            await self.store.consume(self.run_id(key))

    async def take(self, key: str, expected: PausedState, noun: str) -> PausedState:
        """`expected` itself: the agent's resume claims it in the store, atomically, before any call runs."""
        return expected

    async def restore(self, key: str, state: PausedState) -> None:
        """Nothing: `take` claimed nothing."""


class PausedRunStorePauses:
    """Pauses in a (deprecated) `PausedRunStore`, one per conversation key."""

    def __init__(self, store: PausedRunStore) -> None:
        self.store = store
        """The app's store."""

    async def waiting(self, key: str) -> PausedState | None:
        """The state stored under `key`."""
        return await self.store.load(key)

    async def paused(self, key: str, state: PausedState) -> None:
        """Store `state` under `key`."""
        await self.store.save(key, state)

    async def abandon(self, key: str) -> None:
        """Remove what is stored under `key`."""
        await self.store.consume(key)

    async def take(self, key: str, expected: PausedState, noun: str) -> PausedState:
        """Consume `key`'s state, which must still be `expected`."""
        taken = await self.store.consume(key)
        if taken is None or taken.state_id != expected.state_id:
            if taken is not None:  # another request resumed it and it paused again: not ours to take
                await self.store.save(key, taken)
            raise ClientInputError(f"the paused run of {noun} {key!r} was already resumed", status=409)
        return taken

    async def restore(self, key: str, state: PausedState) -> None:
        """Store `state` under `key` again."""
        await self.store.save(key, state)
