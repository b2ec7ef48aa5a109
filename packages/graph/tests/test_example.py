"""`docs/examples/graph_review.py` on the embedded 0.5B model, run as a user would: a separate process.

Assertions are on structure (rounds, the decision branches, the snapshot and resume path), never on
wording. `--bar 11` is a score no critique reaches, so the loop deterministically runs its two rounds.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ferrule.providers.llamacpp import ModelDownloadError
from ferrule.providers.llamacpp import ensure_model

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "examples" / "graph_review.py"
MODEL = "qwen2.5-coder-0.5b"

pytestmark = pytest.mark.slow


def test_review_loop_runs_two_rounds_through_a_snapshot() -> None:
    try:
        ensure_model(MODEL)
    except ModelDownloadError as exc:
        pytest.skip(f"the end-to-end model {MODEL} cannot be downloaded: {exc}")
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["FERRULE_LOCAL_MODEL"] = MODEL
    env.setdefault("FERRULE_LLAMACPP_THREADS", "1")
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "tide pools", "--rounds", "2", "--bar", "11"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    # draft and critique ran, then the run was snapshotted before the decision ...
    assert re.fullmatch(r"snapshot: \d+ bytes at enough after 2 steps", lines[0]), lines
    # ... and a freshly built graph continued from there, without running draft or critique again:
    assert lines[1] == "resumed at: enough step 2"
    # enough, revise, critique, enough: 6 steps in all.
    assert lines[2] == "steps: 6"
    assert lines[3] == "rounds: 2"
    scores = lines[4].removeprefix("scores: ").split(",")
    assert len(scores) == 2
    assert all(1 <= int(s) <= 10 for s in scores)
    assert lines[5] == "branches: revise,done"
    assert lines[6].startswith("text: ")
    assert len(lines[6]) > len("text: ")
    assert "step 1: next NextNode(name='critique'" in done.stderr
