"""Small helpers shared by the agent's modules."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Iterable
from typing import TYPE_CHECKING
from typing import Any
from typing import TypeAlias
from typing import TypeVar
from typing import cast

import anyio

from ferrule.core.errors import UserError
from ferrule.core.settings import ModelSettings
from ferrule.core.settings import merge_settings

if TYPE_CHECKING:
    from ferrule.core.messages import ToolCallPart

__all__ = [
    "Callback",
    "InstructionItem",
    "duplicate_call_id",
    "instruction_texts",
    "is_async",
    "merged_settings",
    "normalize_callback",
    "refuse_in_event_loop",
    "settled",
    "takes_ctx",
    "tighter",
]

Callback: TypeAlias = tuple[Callable[..., Any], bool, bool]
"""`(fn, takes_ctx, is_async)`: a user callback in the form the loop calls it."""
InstructionItem: TypeAlias = "str | Callback"
"""One instruction: static text, or a callback `fn(ctx)` / `fn()` returning text or `None`."""

_NO_SETTINGS = ModelSettings()

T = TypeVar("T")
N = TypeVar("N", int, float)


async def settled(value: Awaitable[T] | T) -> T:
    """`value`, awaited first when it is awaitable: what a callback that may be sync or async returned."""
    if inspect.isawaitable(value):
        return await cast("Awaitable[T]", value)
    return cast("T", value)


def tighter(a: N | None, b: N | None) -> N | None:
    """The lower of two optional limits (or deadlines), `None` meaning none: the one set, or `None`."""
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


def duplicate_call_id(calls: Iterable[ToolCallPart]) -> str | None:
    """The first tool call ID that two of `calls` share, or `None` when every ID is unique."""
    seen: set[str] = set()
    for part in calls:
        call_id = part.tool_call_id
        if call_id in seen:
            return call_id
        seen.add(call_id)
    return None


def takes_ctx(fn: Callable[..., Any], arity_with_ctx: int) -> bool:
    """Whether `fn` takes a `RunContext` first: it has at least `arity_with_ctx` required positionals."""
    try:
        params = [
            p
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
        ]
    except (TypeError, ValueError):
        return False
    return len(params) >= arity_with_ctx


def is_async(fn: Callable[..., Any]) -> bool:
    """Whether calling `fn` returns a coroutine (functions and callable objects)."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004


def normalize_callback(fn: Callable[..., Any], arity_with_ctx: int) -> Callback:
    """`(fn, takes_ctx, is_async)`, the form the loop calls callbacks in."""
    return (fn, takes_ctx(fn, arity_with_ctx), is_async(fn))


def merged_settings(*layers: ModelSettings | None) -> ModelSettings:
    """Merge settings layers in order, sharing one empty instance when there are none."""
    present = [layer for layer in layers if layer is not None]
    if not present:
        return _NO_SETTINGS  # frozen, so one shared instance is safe
    if len(present) == 1:
        return present[0]
    return merge_settings(*present)


async def instruction_texts(ctx: Any, items: Iterable[InstructionItem]) -> list[str]:
    """The non-empty texts of `items` in order, calling each callback with `ctx` when it takes one."""
    texts: list[str] = []
    for item in items:
        if isinstance(item, str):
            texts.append(item)
            continue
        fn, wants_ctx, awaited = item
        value = fn(ctx) if wants_ctx else fn()
        if awaited:
            value = await value
        if value:
            texts.append(cast("str", value))
    return texts


def refuse_in_event_loop(method: str, async_method: str) -> None:
    """Refuse the blocking entry point `method` inside a running event loop, naming the `async_method` to await.

    The caller then runs its coroutine with `anyio.run` itself: the guard adds no frame to the run.
    """
    try:
        anyio.get_current_task()
    except Exception:  # no running event loop: the normal case
        return
    raise UserError(f"{method}() cannot be called from async code; use `await agent.{async_method}(...)`")
