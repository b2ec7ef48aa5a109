"""Fixtures of the ferrule-temporal tests: the real Temporal dev server for the session.

The server runs in a helper process (`workers/server.py`) started once per session and stopped at
its end; the test process never connects a Temporal client itself (see that file for why).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ferrule.durable.temporal.testing import TestServerMissingError
from ferrule.durable.temporal.testing import dev_server_path
from ferrule.durable.temporal.testing import time_skipping_server_path
from tests.support.chat_server import chat_server
from tests.support.crash import Worker
from tests.support.shared import in_ci

__all__ = ["WORKERS", "chat_server", "start_server", "temporal_server"]

WORKERS = Path(__file__).resolve().parent / "workers"


def start_server(kind: str, logs: Path) -> Worker:
    """A Temporal server of `kind` (`local` or `time-skipping`) in a helper process; `address` line."""
    try:
        dev_server_path() if kind == "local" else time_skipping_server_path()
    except TestServerMissingError as exc:
        if in_ci():
            pytest.fail(f"{exc}; CI installs the testing extra, so the Temporal tests must run")
        pytest.skip(str(exc))
    return Worker(WORKERS / "server.py", [kind], logs=logs)


@pytest.fixture(scope="session")
def temporal_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The `host:port` of a Temporal dev server (in-memory) shared by the session's tests."""
    server = start_server("local", tmp_path_factory.mktemp("temporal-server"))
    try:
        yield server.wait_for("address ").split(" ", 1)[1]
    finally:
        assert server.terminate() == 0, "the Temporal server helper did not stop cleanly"
