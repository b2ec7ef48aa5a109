"""docs/examples/durable_temporal.py runs as docs/durable.md shows: the run waits, then is decided."""

from __future__ import annotations

import pytest

from ferrule.durable.temporal.testing import TestServerMissingError
from ferrule.durable.temporal.testing import dev_server_path
from tests.support.examples import run_example
from tests.support.shared import in_ci


@pytest.mark.parametrize(
    ("choice", "answer"),
    [("approve", "Refund: 1500 cents refunded"), ("deny", "Refund: refunds need a receipt")],
)
def test_the_temporal_example_waits_for_its_decision(choice: str, answer: str) -> None:
    try:
        dev_server_path()
    except TestServerMissingError as exc:
        if in_ci():
            pytest.fail(f"{exc}; CI installs the testing extra, so the Temporal tests must run")
        pytest.skip(str(exc))
    out = run_example("durable_temporal.py", choice)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "waiting for: refund({'cents': 1500})" in lines
    assert lines[-1] == answer
