"""The loop's clock, read directly on asyncio, is anyio's clock on every backend."""

from __future__ import annotations

import anyio
import pytest

from ferrule.core._clock import asyncio_loop
from ferrule.core._clock import current_time

pytestmark = pytest.mark.anyio


async def test_current_time_is_anyios_clock(anyio_backend: str) -> None:
    before = anyio.current_time()
    now = current_time()
    after = anyio.current_time()
    assert before <= now <= after
    # A deadline computed from it is kept by anyio's cancel scopes: one just past ends a sleep.
    with anyio.CancelScope(deadline=current_time() + 0.01) as scope:
        await anyio.sleep(5)
    assert scope.cancelled_caught
    assert (asyncio_loop() is not None) == (anyio_backend == "asyncio")


def test_outside_a_loop_it_says_so_as_anyio_does() -> None:
    assert asyncio_loop() is None
    with pytest.raises(RuntimeError, match="event loop") as ours:
        current_time()
    with pytest.raises(RuntimeError, match="event loop") as anyios:
        anyio.current_time()
    assert type(ours.value) is type(anyios.value)
