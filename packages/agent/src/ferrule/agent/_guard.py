"""The side-effect controls of an agent: `guard=` (authorization) and `confirm=` (confirmation).

The guard sees every valid function call (the framework's own tools excepted) with its tool and
validated arguments before anything else decides on it; a denial becomes the call's `denied`
result, recorded on its receipt, and never a retry unless the guard raises `ModelRetry`. The
confirmation callback answers the calls that need approval instead of pausing the run; without it
they pause exactly as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING
from typing import Any

import anyio
import msgspec

from ferrule.core import bounded_json
from ferrule.core.errors import UserError

from ._context import RunContext
from ._controls import ConfirmFn
from ._controls import GuardFn
from ._deferred import Approved
from ._deferred import DeferredCall
from ._deferred import Denied
from ._errors import DecisionError
from ._errors import ModelRetry
from ._pause import args_object
from ._tools import Tool
from ._util import is_async
from ._util import settled

if TYPE_CHECKING:
    from ._calls import ToolCallState
    from ._state import LoopState

__all__ = ["apply_guard", "ask_guard", "confirmed"]

_NOT_AUTHORIZED = "The call of {name!r} was not authorized; it did not run."
_NOT_CONFIRMED = "The call of {name!r} was not confirmed; it did not run."


def _is_framework(run: LoopState, tool: Tool[Any]) -> bool:
    ext = getattr(run, "ext", None)
    return ext is not None and bool(ext.is_framework(tool))


async def apply_guard(run: LoopState, guard: GuardFn, calls: list[ToolCallState]) -> None:
    """Ask the guard about every valid function call not yet decided; record each denial as its decision."""
    for c in calls:
        tool = c.tool
        if c.kind != "function" or tool is None or c.decision is not None or _is_framework(run, tool):
            continue
        ctx = run.call_context(tool, c.part.tool_call_id)
        try:
            denied = await ask_guard(guard, ctx, tool, c.args)
        except ModelRetry as retry:
            c.reject(retry.message)
            continue
        if denied is not None:
            c.decision = denied


async def ask_guard(guard: GuardFn, ctx: RunContext[Any], tool: Tool[Any], args: Any) -> Denied | None:
    """The guard's decision on one call of `tool` with validated `args`: `None` lets it run.

    A sync guard runs inline, an async one is awaited. `False` becomes `Denied` with the default
    text (`The call of 'x' was not authorized; it did not run.`), a `Denied(message)` is returned
    as it is. `ModelRetry` raised by the guard propagates: what a retry means is the caller's to
    decide. Any other return value raises `UserError`.
    """
    verdict: Any = await settled(guard(ctx, tool, args))
    if verdict is None or verdict is True:
        return None
    if verdict is False:
        return Denied(message=_NOT_AUTHORIZED.format(name=tool.name))
    if isinstance(verdict, Denied):
        return verdict
    raise UserError(f"the guard returned {verdict!r}; return True, None, False or Denied(message)")


async def confirmed(
    run: LoopState, confirm: ConfirmFn, calls: list[ToolCallState], deferred: list[DeferredCall]
) -> bool:
    """Decide the calls waiting for approval with `confirm`; whether the run can go on without a pause.

    A response that also calls an external tool pauses as a whole (its result must come from the
    application), so nothing is asked then.
    """
    if any(d.kind == "external" for d in deferred):
        return False
    waiting = _waiting(calls, deferred)
    if waiting is None:
        return False  # fail closed: a waiting call not found here pauses instead of running unasked
    for c in waiting:
        tool = c.tool
        assert tool is not None
        ctx = run.call_context(tool, c.part.tool_call_id)
        verdict = await _call(confirm, ctx, tool, c.args)
        if verdict is True:
            c.decision = Approved()
        elif verdict is False:
            c.decision = Denied(message=_NOT_CONFIRMED.format(name=tool.name))
        elif isinstance(verdict, Denied):
            c.decision = verdict
        elif isinstance(verdict, Approved):
            if verdict.override_args is not None:
                try:
                    c.args = tool.validate_args(verdict.override_args)
                except (bounded_json.JsonError, msgspec.ValidationError, ValueError, TypeError) as exc:
                    raise DecisionError(
                        f"override_args from confirm= for call {c.part.tool_call_id!r} are invalid: {exc}"
                    ) from exc
            c.decision = verdict
        else:
            raise UserError(
                f"confirm= returned {verdict!r}; return True, False, Approved(...) or Denied(...)"
            )
    return True


def _waiting(calls: list[ToolCallState], deferred: list[DeferredCall]) -> list[ToolCallState] | None:
    """The calls `deferred` was made from, matched by position, not by ID.

    `deferred_calls` lists the waiting calls in call order, so `deferred` is a subsequence of
    `calls`: each entry is the next undecided call of its ID, tool and arguments. A response decided
    here never pauses, so two of its calls may share an ID (a pause refuses that): the ID alone
    would also ask about, and decide, a call that needs no confirmation. `None` when an entry
    matches no call.
    """
    waiting: list[ToolCallState] = []
    entries = iter(deferred)
    entry = next(entries, None)
    for c in calls:
        if entry is None:
            break
        part = c.part
        if (
            c.kind == "function"
            and c.tool is not None
            and c.decision is None
            and part.tool_call_id == entry.tool_call_id
            and part.tool_name == entry.tool_name
            and args_object(part.args) == entry.args
        ):
            waiting.append(c)
            entry = next(entries, None)
    return waiting if entry is None else None


async def _call(confirm: ConfirmFn, ctx: RunContext[Any], tool: Tool[Any], args: Any) -> Any:
    """An async callback awaited; a sync one in a worker thread (it may well wait for a person)."""
    fn: Callable[..., Any] = confirm
    if is_async(fn):
        return await fn(ctx, tool, args)
    result: Any = await anyio.to_thread.run_sync(lambda: fn(ctx, tool, args), abandon_on_cancel=True)
    return await settled(result)
