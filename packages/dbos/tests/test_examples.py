"""docs/examples/durable_dbos.py runs as docs/durable.md shows, on SQLite and on PostgreSQL."""

from __future__ import annotations

from ferrule.durable.dbos import DatabaseUrl
from tests.support.examples import run_example


def test_the_dbos_example_runs_its_tool_once(database: DatabaseUrl) -> None:
    out = run_example("durable_dbos.py", database.url)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "Order 42 is on its way.",
        "Order 42 is on its way.",
        "shipped 1 time(s)",
    ]
