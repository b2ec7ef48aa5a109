"""docs/examples/durable_dbos.py runs as docs/durable.md shows, on SQLite and on PostgreSQL."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ferrule.durable.dbos import DatabaseUrl

EXAMPLES = Path(__file__).resolve().parents[3] / "docs" / "examples"


def test_the_dbos_example_runs_its_tool_once(database: DatabaseUrl) -> None:
    out = subprocess.run(
        [sys.executable, "durable_dbos.py", database.url],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=EXAMPLES,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "Order 42 is on its way.",
        "Order 42 is on its way.",
        "shipped 1 time(s)",
    ]
