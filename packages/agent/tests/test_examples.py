"""Every runnable example in docs/examples runs offline and prints what its docs promise."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[3] / "docs" / "examples"

pytestmark = pytest.mark.skipif(not EXAMPLES.is_dir(), reason="docs/examples is not part of this checkout")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "FERRULE_EXAMPLE_MODEL"}
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
        cwd=EXAMPLES,
    )


def test_weather() -> None:
    out = run("weather.py")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["The weather in Paris: sunny, 21 °C.", "requests=2 tool_calls=1"]


def test_typed_output() -> None:
    out = run("typed_output.py")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["Lyon, France: 522000", "requests=2"]


def test_streaming() -> None:
    out = run("streaming.py")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "delta: 'Let me look that up. '"
    assert lines[1] == 'tool call: population({"city": "Paris"})'
    assert lines[2] == "tool result: 2100000"
    assert lines[-2] == "final: Paris has about 2.1 million people."
    assert lines[-1] == "output='Paris has about 2.1 million people.'"


def test_approval_across_two_processes(tmp_path: Path) -> None:
    state = tmp_path / "paused.json"
    first = run("approval.py", "start", str(state))
    assert first.returncode == 0, first.stderr
    assert "waiting for approval: transfer" in first.stdout
    assert "transferring" not in first.stdout
    assert state.is_file()
    second = run("approval.py", "resume", str(state))
    assert second.returncode == 0, second.stderr
    assert "transferring 250 to alice" in second.stdout
    assert "Sent 250 to alice; balance was 1000." in second.stdout
    pid_first = first.stdout.split("]")[0]
    pid_second = second.stdout.split("]")[0]
    assert pid_first != pid_second


def test_approval_denied_and_tampered(tmp_path: Path) -> None:
    state = tmp_path / "paused.json"
    assert run("approval.py", "start", str(state)).returncode == 0
    denied = run("approval.py", "deny", str(state))
    assert denied.returncode == 0, denied.stderr
    assert "Transfer not made: The account owner declined." in denied.stdout
    assert "transferring" not in denied.stdout
    state.write_bytes(state.read_bytes().replace(b'"amount":250', b'"amount":25000'))
    tampered = run("approval.py", "resume", str(state))
    assert tampered.returncode != 0
    assert "PausedStateIntegrityError" in tampered.stderr
    assert "transferring" not in tampered.stdout


def test_approval_default_runs_both_processes() -> None:
    out = run("approval.py")
    assert out.returncode == 0, out.stderr
    assert "Sent 250 to alice" in out.stdout
