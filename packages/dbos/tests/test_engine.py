"""The engine under the adapter: a DBOS worker killed with SIGKILL resumes on SQLite and PostgreSQL.

These check the test infrastructure the durable-agent tests stand on (the worker harness, the
throwaway PostgreSQL cluster, `database_url`) against the real engine: a step that completed is not
run again after a crash, a step interrupted between its side effect and its checkpoint is.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ferrule.durable.dbos import DatabaseUrl
from tests.support.crash import Worker
from tests.support.crash import effects

from .conftest import WORKERS


@pytest.mark.parametrize(
    ("crash_at", "expected"),
    [
        ("after-0", ["step 0", "step 1", "step 2"]),
        ("1", ["step 0", "step 1", "step 1", "step 2"]),
    ],
    ids=["after-a-checkpoint", "inside-a-step"],
)
def test_killed_worker_resumes_where_it_stopped(
    database: DatabaseUrl, tmp_path: Path, crash_at: str, expected: list[str]
) -> None:
    log = tmp_path / "effects.log"
    first = Worker(WORKERS / "steps.py", [database.url, "wf-1", str(log), crash_at], logs=tmp_path)
    first.wait_for("step-done 0")
    first.killed_itself()
    assert "result 31" not in first.lines
    second = Worker(WORKERS / "steps.py", [database.url, "wf-1", str(log), "never"], logs=tmp_path)
    lines = second.finish()
    assert "result 31" in lines
    assert effects(log) == expected
