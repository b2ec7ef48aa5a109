"""Small helpers shared by the plan runners."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import anyio

from ._limits import clip


def safe_text(text: str) -> str:
    """`text` bounded and with credentials redacted: safe for events, receipts and models."""
    from ferrule.core.http import redact_text

    return clip(redact_text(text))


def describe_error(error: BaseException) -> str:
    """`Type: message`, bounded, with credentials redacted."""
    message = str(error)
    return safe_text(f"{type(error).__name__}: {message}" if message else type(error).__name__)


async def call_user(function: Callable[..., Any], *args: Any) -> Any:
    """Call an application callback: await an async one, run a sync one in a worker thread.

    A sync callback that is still running when the caller is cancelled is abandoned (it runs on in
    its thread) so deadlines hold.
    """
    if inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
        getattr(function, "__call__", None)  # noqa: B004 - callable objects with async __call__
    ):
        return await function(*args)
    result = await anyio.to_thread.run_sync(lambda: function(*args), abandon_on_cancel=True)
    if inspect.isawaitable(result):
        return await result
    return result


def callable_name(function: Any, fallback: str) -> str:
    """A readable name for a callback."""
    name = getattr(function, "__name__", None)
    return name if isinstance(name, str) and name and name != "<lambda>" else fallback
