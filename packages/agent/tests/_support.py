"""Helpers shared by the ferrule-agent tests (imported relatively, so the package's isolated
environment, which has only ferrule-core and ferrule-agent installed, can use them)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Sequence
from typing import Any
from typing import TypeVar
from typing import cast

import anyio

from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest

__all__ = ["Hang", "modules_loaded_by", "parts_at", "request_parts"]

P = TypeVar("P")


def parts_at(messages: Sequence[Message], index: int = 2) -> list[Any]:
    """The parts of the request at `index` (by default the one that answers the first response)."""
    request = messages[index]
    assert isinstance(request, ModelRequest)
    return list(request.parts)


def request_parts(messages: Sequence[Message], kind: type[P] | tuple[type[P], ...]) -> list[P]:
    """The parts of type `kind` of the requests in `messages`, in order."""
    return [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, kind)]


class Hang:
    """A tool that waits until it is cancelled, and the events that show it started and saw the
    cancellation. Build it inside the test (anyio events need the running backend)."""

    def __init__(self) -> None:
        self.started = anyio.Event()
        """Set when a call of the tool has begun."""
        self.cancelled = anyio.Event()
        """Set when a cancellation reached a call of the tool."""

    def tool(self, name: str) -> Callable[[], Awaitable[str]]:
        """The tool function, named `name` (the tool's name); every call waits until cancelled."""

        async def wait_until_cancelled() -> str:
            self.started.set()
            try:
                await anyio.sleep(10)
            except anyio.get_cancelled_exc_class():
                self.cancelled.set()
                raise
            return "not cancelled"

        wait_until_cancelled.__name__ = name
        return wait_until_cancelled


def modules_loaded_by(code: str, prefixes: tuple[str, ...]) -> list[str]:
    """The modules named under one of `prefixes` that a fresh interpreter holds after running `code`
    (a subprocess: what this test process has imported does not count)."""
    probe = (
        f"{code}\nimport json, sys\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.startswith({prefixes!r}))))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    return cast("list[str]", json.loads(out.stdout.strip().splitlines()[-1]))
