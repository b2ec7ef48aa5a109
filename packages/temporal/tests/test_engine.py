"""The engine under the adapter: Temporal's real servers from the wheels, and a worker killed with
SIGKILL whose workflow the next worker completes.

These check the test infrastructure the durable-agent tests stand on (the server helper process,
the worker harness, `ferrule.durable.temporal.testing`) against the real engine: a completed
activity is not run again after a crash; an activity interrupted after its side effect is.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ferrule.durable.temporal.testing import dev_server_path
from ferrule.durable.temporal.testing import time_skipping_server_path
from tests.support.crash import Worker
from tests.support.crash import effects

from .conftest import WORKERS
from .conftest import start_server


def test_the_wheels_ship_the_server_binaries() -> None:
    assert dev_server_path().name == "temporal"
    assert time_skipping_server_path().name == "temporal-test-server"


@pytest.mark.parametrize(
    ("crash_at", "expected"),
    [
        ("before-1", ["step 0", "step 1", "step 2"]),
        ("1", ["step 0", "step 1", "step 1", "step 2"]),
    ],
    ids=["before-an-activity", "inside-an-activity"],
)
def test_killed_worker_resumes_where_it_stopped(
    temporal_server: str, tmp_path: Path, crash_at: str, expected: list[str]
) -> None:
    log = tmp_path / "effects.log"
    workflow_id = f"engine-{tmp_path.name}"
    first = Worker(
        WORKERS / "activities.py", [temporal_server, workflow_id, str(log), crash_at], logs=tmp_path
    )
    first.killed_itself()
    assert effects(log)[:1] == ["step 0"]
    second = Worker(
        WORKERS / "activities.py", [temporal_server, workflow_id, str(log), "never"], logs=tmp_path
    )
    assert "result 31" in second.finish()
    assert effects(log) == expected


def test_the_time_skipping_server_starts_from_its_wheel(tmp_path: Path) -> None:
    server = start_server("time-skipping", tmp_path)
    try:
        host, _, port = server.wait_for("address ").split(" ", 1)[1].rpartition(":")
        assert host in ("127.0.0.1", "localhost")
        assert int(port) > 0
    finally:
        assert server.terminate() == 0


def test_the_agent_loop_runs_and_replays_as_workflow_code(temporal_server: str, tmp_path: Path) -> None:
    worker = Worker(WORKERS / "loop.py", [temporal_server, f"loop-{tmp_path.name}"], logs=tmp_path)
    lines = worker.finish()
    assert 'result {"add": 0}' in lines
    # prompt, the tool call, its result, the final answer
    assert "messages 4" in lines
    assert "replayed" in lines
