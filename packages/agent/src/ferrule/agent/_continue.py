"""PydanticAI's deferred-tools API on ferrule's pause and resume.

A run of an agent whose output types include `DeferredToolRequests` that pauses has that output
(set by `pause`) and ends with it (`end_with_requests`) instead of raising `PauseRequiredError`; the pause is saved to the agent's
checkpoint store exactly as `run_until_pause` saves it. A later run given that run's history and
`deferred_tool_results` (`continued_state`) is a resume of that checkpoint, never a fresh
derivation from the history: the history is untrusted input, so it only names the run (the run ID
of its last response) and must equal the history the run paused with. Everything `resume` checks
then applies unchanged: exactly one valid decision per pending call, the pending calls derived
again from the current tools, the called tools' definitions unchanged, and the checkpoint claimed
once, atomically, before any call runs (a second continuation of the same pause is refused).
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from ferrule.core.errors import UserError
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import UserContent
from ferrule.core.messages import UserPromptPart
from ferrule.core.usage import RunUsage

from ._checkpoints import CheckpointNotFoundError
from ._controls import checkpoint_store_of
from ._core import AgentCore
from ._deferred import Decision
from ._deferred import DeferredToolResults
from ._deferred import PausedState
from ._errors import PausedStateError
from ._state import LoopState

__all__ = ["continued_state", "end_with_requests"]


def end_with_requests(run: LoopState) -> bool:
    """Whether a paused run ends with `DeferredToolRequests` as its output (`pause` gave it that)."""
    return run.paused is not None and run.core.output_info.deferred_requests


async def continued_state(
    core: AgentCore,
    results: DeferredToolResults,
    message_history: Sequence[Message] | None,
    prompt: str | Sequence[UserContent] | None,
    instructions: str | Sequence[str] | None,
) -> tuple[PausedState, dict[str, Decision]]:
    """The checkpoint a history that ended with `DeferredToolRequests` paused at, and the decisions."""
    if not isinstance(results, DeferredToolResults):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(f"deferred_tool_results must be a DeferredToolResults, got {results!r}")
    if instructions is not None:
        raise UserError(
            "instructions= cannot change a continued run: it keeps the instructions the run paused with"
        )
    messages = list(message_history or ())
    last = messages[-1] if messages else None
    if not isinstance(last, ModelResponse) or not last.tool_calls:
        raise UserError(
            "deferred_tool_results continues a run that ended with DeferredToolRequests: pass that run's "
            "history as message_history=result.all_messages()"
        )
    if last.run_id is None:
        raise PausedStateError(
            "the last response of message_history has no run_id, so it names no paused run; "
            "pass the history the run ended with, unchanged"
        )
    try:
        state = await checkpoint_store_of(core.side_effects).load(last.run_id)
    except CheckpointNotFoundError as exc:
        raise PausedStateError(
            f"no pause of run {last.run_id!r} is in this agent's checkpoint store: a run that ended with "
            "DeferredToolRequests continues in a process that shares its checkpoint_store "
            "(e.g. SqliteCheckpointStore), or use run_until_pause and resume with the state's JSON"
        ) from exc
    # The decisions were made for the calls the run paused at: a history that differs in anything
    # (another argument, an inserted call, an edited earlier message) is not that run's history.
    if messages != state.messages:
        raise PausedStateError(
            f"message_history is not the history run {last.run_id!r} paused with (it was modified or "
            "belongs to an older pause); nothing was executed. Pass result.all_messages() unchanged"
        )
    queued = state.queued_messages
    if prompt is not None:
        content = prompt if isinstance(prompt, str) else list(prompt)
        queued = [*queued, ModelRequest(parts=[UserPromptPart(content=content)])]
    # As in PydanticAI, the continuation is a new run: its own usage, and its own new messages.
    state = msgspec.structs.replace(
        state, new_message_index=len(messages), usage=RunUsage(), queued_messages=queued
    )
    return state, results.decisions()
