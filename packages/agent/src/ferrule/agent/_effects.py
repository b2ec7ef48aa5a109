"""What calls do to the world: side effects, risk, confirmation, and the receipt of a call.

The lowest module of the agent's side-effect vocabulary, so that tools, receipts and run states
(`RunState.actions`) can all name it.
"""

from __future__ import annotations

from typing import Literal
from typing import TypeAlias

import msgspec

__all__ = ["ActionReceipt", "ActionStatus", "Confirmation", "Risk", "SideEffect"]

SideEffect: TypeAlias = Literal["read_only", "idempotent", "non_idempotent"]
"""What calling a tool does to the world.

`read_only` and `idempotent` calls may be repeated safely: a timeout becomes a retry prompt.
A `non_idempotent` call whose outcome is unknown (it timed out or was interrupted while running)
is recorded as unknown and never retried automatically.
"""

Risk: TypeAlias = Literal["low", "medium", "high"]
"""How much harm a wrong call of a tool can do; recorded on its `ActionReceipt`s."""

Confirmation: TypeAlias = Literal["never", "always", "risk"]
"""When calls of a tool need confirmation (approval) before they run.

`never`: only when `requires_approval` says so; `always`: every call (like `requires_approval=True`);
`risk`: every call when the tool's `risk` is `"high"`, else as `never`.
"""

ActionStatus: TypeAlias = Literal["succeeded", "failed", "denied", "confirmation_required", "unknown"]
"""How a call of a tool that is not read-only ended.

`unknown`: it was interrupted or timed out while running and may have taken effect; it is never
retried automatically. `confirmation_required`: it waits for a decision and has not run.
"""


class ActionReceipt(msgspec.Struct, frozen=True, kw_only=True):
    """The record of one call of a tool that is not read-only."""

    tool_call_id: str
    """The call's ID (the tool sees it as `ctx.tool_call_id`)."""
    tool_name: str
    """The tool."""
    status: ActionStatus
    """How the call ended."""
    side_effect: SideEffect
    """The tool's declared side effect (`idempotent` or `non_idempotent`)."""
    risk: Risk = "low"
    """The tool's declared risk."""
    detail: str | None = None
    """Why it failed, was denied, waits or is unknown (bounded, credentials redacted)."""
    step_id: str | None = None
    """The plan step that made the call (`ferrule.planning`); `None` for ordinary agent runs."""
