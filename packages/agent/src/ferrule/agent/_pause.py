"""Pause and resume: which calls need a decision, the paused state, and applying decisions.

A response whose calls include an external tool, or a call that its tool or an approval policy
wants approved, pauses the run (`pause`) into a `PausedState` instead of running anything. A resumed
run continues at that response (`resume_at`); `apply_decisions` checks the state against the tools
(re-deriving which calls need a decision, never trusting the state for that) and puts each
decision on its call before the scheduler runs them.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Sequence
from typing import Any
from typing import cast

import msgspec

from ferrule.core import bounded_json
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse

from ._calls import ToolCallState
from ._controls import checkpoint_store_of
from ._deferred import Approved
from ._deferred import Decision
from ._deferred import DeferredCall
from ._deferred import Denied
from ._deferred import ExternalResult
from ._deferred import Paused
from ._deferred import PausedState
from ._deferred import deferred_requests
from ._deferred import new_state_id
from ._deferred import now_utc
from ._errors import DecisionError
from ._errors import DuplicateToolCallIdError
from ._errors import PausedStateError
from ._events import DeferredToolCallsEvent
from ._events import PausedStep
from ._events import RunStep
from ._receipts import WAITING
from ._receipts import receipt
from ._receipts import receipts_from_messages
from ._receipts import safe_detail
from ._state import HANDLE
from ._state import PAUSED
from ._state import Emit
from ._state import LoopState
from ._state import copy_usage
from ._util import duplicate_call_id
from ._util import settled

__all__ = [
    "apply_decisions",
    "args_object",
    "deferred_calls",
    "needs_approval",
    "pause",
    "refuse_duplicate_ids",
    "resume_at",
]


async def needs_approval(run: LoopState, c: ToolCallState) -> bool:
    """Whether a function call waits for a decision: external tools always, others when their
    `requires_approval` or an approval policy says so."""
    tool = c.tool
    assert tool is not None
    if tool.kind == "external":
        return True
    predicate = tool.requires_approval
    policies = run.policies
    if predicate is False and (policies is None or not policies.approval):
        return False
    if predicate is True:
        return True
    ctx = run.call_context(tool, c.part.tool_call_id)
    if predicate is not False and await settled(predicate(ctx, c.args)):
        return True
    if policies is not None and policies.approval and not policies.exempt(tool):
        return await policies.needs_approval(ctx, c.part, c.args)
    return False


async def deferred_calls(run: LoopState, calls: list[ToolCallState]) -> list[DeferredCall]:
    """The calls of a response that wait for a decision (none: the response's calls just run)."""
    deferred: list[DeferredCall] = []
    approval_policies = run.policies is not None and bool(run.policies.approval)
    for c in calls:
        tool = c.tool
        if c.kind != "function" or tool is None or c.decision is not None:
            continue  # not a call of a known tool, or the guard denied it already
        if tool.kind != "external" and tool.requires_approval is False and not approval_policies:
            continue  # the common case, decided without a coroutine
        if await needs_approval(run, c):
            deferred.append(
                DeferredCall(
                    tool_call_id=c.part.tool_call_id,
                    tool_name=c.part.tool_name,
                    args=args_object(c.part.args),
                    kind="external" if tool.kind == "external" else "approval",
                )
            )
    return deferred


def args_object(args: str | dict[str, Any] | None) -> dict[str, Any]:
    """Validated call arguments as a JSON object, whatever form the model sent them in."""
    if isinstance(args, dict):
        return args
    if args is None or not args.strip():
        return {}
    value = bounded_json.decode_value(args, bounded_json.TOOL_ARGUMENTS)
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}


def fingerprint(run: LoopState, calls: Sequence[ToolCallState]) -> str:
    """A digest of the names, kinds and schemas of the tools `calls` call (checked on resume)."""
    return _digest(run, {c.tool.name for c in calls if c.tool is not None})


def catalog_fingerprint(run: LoopState) -> str:
    """A digest of the names, kinds and schemas of every tool the step offers (`checkpoint_binding="catalog"`)."""
    return _digest(run, run.step_tools.by_name)


def _digest(run: LoopState, names: Iterable[str]) -> str:
    import hashlib  # with the first pause, not with the agent

    digest = hashlib.sha256()
    by_name = run.step_tools.by_name
    for name in sorted(names):
        tool = by_name[name]
        digest.update(msgspec.json.encode([name, tool.kind, tool.parameters_json_schema]))
    return digest.hexdigest()


async def pause(
    run: LoopState,
    calls: list[ToolCallState],
    deferred: list[DeferredCall],
    loaded_on_demand: Sequence[str],
    emit: Emit | None,
) -> RunStep:
    """End this invocation at the response: its resumable state, nothing executed."""
    refuse_duplicate_ids(calls)
    pending_ids = {d.tool_call_id for d in deferred}
    state = PausedState(
        run_id=run.run_id,
        state_id=new_state_id(),
        created_at=now_utc(),
        messages=list(run.messages),
        new_message_index=run.new_message_index,
        instructions=run.instructions,
        usage=copy_usage(run.usage),
        tool_retries=dict(run.tool_retries),
        output_retries=run.output_retries,
        pending=deferred,
        immediate_call_ids=[
            c.part.tool_call_id
            for c in calls
            if c.kind == "function" and c.part.tool_call_id not in pending_ids
        ],
        tool_fingerprint=fingerprint(run, [c for c in calls if c.tool is not None]),
        model=run.model.system,
    )
    controls = run.core.side_effects
    if controls is not None and controls.binding == "catalog":
        state.catalog_fingerprint = catalog_fingerprint(run)
    state.capabilities = list(loaded_on_demand)
    if run.queue is not None:
        state.queued_messages = list(run.queue.take())
    # The paused response's calls have no results yet: in call order, those waiting for approval
    # and those the guard already denied (their denial is the result they will get on resume).
    actions = receipts_from_messages(run.messages[run.new_message_index : -1], run.step_tools.by_name)
    approvals = {d.tool_call_id for d in deferred if d.kind == "approval"}
    for c in calls:
        tool = c.tool
        if tool is None or tool.side_effect == "read_only":
            continue
        if c.part.tool_call_id in approvals:
            actions.append(receipt(c.part, tool, "confirmation_required", WAITING))
        elif isinstance(c.decision, Denied):
            actions.append(receipt(c.part, tool, "denied", safe_detail(c.decision.message)))
    await checkpoint_store_of(controls).save(run.run_id, state)
    run.paused = Paused(state, actions)
    if run.core.output_info.deferred_requests:
        # What `run`/`run_sync` end with (and the `run_end` hook sees) instead of PauseRequiredError.
        run.output = deferred_requests(run.paused)
    run.phase = PAUSED
    if emit is not None:
        await emit(DeferredToolCallsEvent(list(deferred)))
    return PausedStep(list(deferred))


def refuse_duplicate_ids(calls: Sequence[ToolCallState]) -> None:
    """Refuse a paused response with two calls of one ID: decisions, keyed by ID, cannot tell them apart."""
    call_id = duplicate_call_id(c.part for c in calls)
    if call_id is not None:
        names = [c.part.tool_name for c in calls if c.part.tool_call_id == call_id]
        raise DuplicateToolCallIdError(call_id, names)


def resume_at(run: LoopState, state: PausedState, decisions: dict[str, Decision]) -> None:
    """Continue at the paused response: handle its calls with `decisions`; never re-request it."""
    last = run.messages[-1]
    assert isinstance(last, ModelResponse)
    run.response = last
    run.phase = HANDLE
    run.decisions = decisions
    run.pending_state = state
    if state.queued_messages:
        run.resume_queued = [m for m in state.queued_messages if isinstance(m, ModelRequest)]


async def apply_decisions(run: LoopState, calls: list[ToolCallState], decisions: dict[str, Decision]) -> None:
    """Check the paused state against the tools, then put each decision on its call."""
    state = run.pending_state
    assert state is not None
    refuse_duplicate_ids(calls)  # a hand-built state can hold them: `pause` refuses to write one
    if fingerprint(run, [c for c in calls if c.tool is not None]) != state.tool_fingerprint:
        raise PausedStateError(
            "the tools called by the paused response changed since the pause (names, kinds or schemas differ); "
            "resume with an agent built from the same definition"
        )
    if state.catalog_fingerprint is not None and catalog_fingerprint(run) != state.catalog_fingerprint:
        raise PausedStateError(
            "the agent's tool catalog changed since the pause (the state is bound to the whole catalog: "
            "a tool was added, removed or redefined); resume with an agent built from the same definition"
        )
    # The state says which calls wait for a decision, but an unsigned (or hand-built) state can
    # say anything: which calls need one is derived again from the tools, before anything runs.
    for c in calls:
        if c.kind != "function" or c.part.tool_call_id in decisions or c.decision is not None:
            continue
        assert c.tool is not None
        if await needs_approval(run, c):
            what = "is external" if c.tool.kind == "external" else "needs approval"
            raise PausedStateError(
                f"the paused state does not list call {c.part.tool_call_id!r} ({c.part.tool_name}) as pending, "
                f"but the tool {what}; the state was modified or built by hand. Nothing was executed: "
                "resume only states written by run_until_pause (sign them with integrity_key)"
            )
    by_id = {c.part.tool_call_id: c for c in calls}
    for call_id, decision in decisions.items():
        c = by_id.get(call_id)
        if c is None or c.kind != "function":
            raise DecisionError(f"the paused call {call_id!r} is no longer a valid call of a known tool")
        assert c.tool is not None
        if c.decision is not None:
            continue  # the guard denied the call when the run resumed: that denial stands
        if c.tool.kind == "external" and isinstance(decision, Approved):
            raise DecisionError(
                f"call {call_id!r} ({c.part.tool_name}) is of an external tool: supply ExternalResult "
                "(or Denied); the paused state lists it with the wrong kind"
            )
        if c.tool.kind != "external" and isinstance(decision, ExternalResult):
            raise DecisionError(
                f"call {call_id!r} ({c.part.tool_name}) needs approval: decide with Approved or Denied; "
                "the paused state lists it with the wrong kind"
            )
        if isinstance(decision, Approved) and decision.override_args is not None:
            try:
                c.args = c.tool.validate_args(decision.override_args)
            except (bounded_json.JsonError, msgspec.ValidationError, ValueError, TypeError) as exc:
                raise DecisionError(f"override_args for call {call_id!r} are invalid: {exc}") from exc
        c.decision = decision
    # Every check passed and nothing has run: claim the state now, atomically, so that of two
    # resumes of it (in this process or, with a shared store, any other) exactly one goes on.
    await checkpoint_store_of(run.core.side_effects).consume(state.run_id, state_id=state.state_id)
    run.decisions = None
    run.pending_state = None
