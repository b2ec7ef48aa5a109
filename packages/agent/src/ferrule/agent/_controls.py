"""The agent's side-effect settings: `guard=`, `confirm=`, its checkpoint store and binding."""

from __future__ import annotations

from collections.abc import Awaitable
from collections.abc import Callable
from typing import Any
from typing import Literal
from typing import TypeAlias

from ferrule.core.errors import UserError

from ._checkpoints import CheckpointStore
from ._checkpoints import default_checkpoint_store
from ._context import RunContext
from ._deferred import Approved
from ._deferred import Denied
from ._tools import Tool

__all__ = ["CheckpointBinding", "ConfirmFn", "GuardFn", "SideEffectControls", "checkpoint_store_of"]

GuardFn: TypeAlias = Callable[
    [RunContext[Any], Tool[Any], Any], "bool | Denied | Awaitable[bool | Denied | None] | None"
]
"""`guard(ctx, tool, args)`: `True`/`None` allows the call, `False` or `Denied(message)` denies it,
raising `ModelRetry` sends the model a retry prompt. Sync guards run inline: keep them fast."""

ConfirmFn: TypeAlias = Callable[
    [RunContext[Any], Tool[Any], Any], "bool | Approved | Denied | Awaitable[bool | Approved | Denied]"
]
"""`confirm(ctx, tool, args)` for a call that needs approval: `True`/`Approved(...)` runs it,
`False`/`Denied(message)` denies it. Sync callbacks run in a worker thread."""

CheckpointBinding: TypeAlias = Literal["called_tools", "catalog"]
"""What a paused state is bound to: the definitions of the tools its response called (default), or
of every tool the run offered at the pause."""


class SideEffectControls:
    """The agent's `guard`, `confirm`, checkpoint store and checkpoint binding."""

    __slots__ = ("binding", "confirm", "guard", "store")

    def __init__(
        self,
        guard: GuardFn | None,
        confirm: ConfirmFn | None,
        store: CheckpointStore | None,
        binding: CheckpointBinding,
    ) -> None:
        for name, fn in (("guard", guard), ("confirm", confirm)):
            if fn is not None and not callable(fn):
                raise UserError(f"{name}= must be a function (ctx, tool, args), got {fn!r}")
        if store is not None and not isinstance(store, CheckpointStore):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(
                f"checkpoint_store= must implement CheckpointStore (save, load, consume), got {store!r}"
            )
        if binding not in ("called_tools", "catalog"):
            raise UserError(f"checkpoint_binding must be 'called_tools' or 'catalog', got {binding!r}")
        self.guard = guard
        self.confirm = confirm
        self.store = store
        self.binding: CheckpointBinding = binding


def checkpoint_store_of(controls: SideEffectControls | None) -> CheckpointStore:
    """The store pauses are saved to and resumes claim from."""
    if controls is not None and controls.store is not None:
        return controls.store
    return default_checkpoint_store()
