"""The README's main job, `docs/examples/local_agent.py`, run as a user would: a separate process."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "examples" / "local_agent.py"


def test_local_agent_example_calls_its_tool_and_answers(local_model_path: Path) -> None:
    del local_model_path  # the fixture downloads and verifies the model, or skips with the reason
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["FERRULE_LOCAL_MODEL"] = "qwen2.5-coder-0.5b"
    env.setdefault("FERRULE_LLAMACPP_THREADS", "1")
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "model: local qwen2.5-coder-0.5b at http://127.0.0.1:" in done.stderr
    # The agent called the date tool with the example's dates and got the real day count back.
    assert re.search(r"-> days_between\(.*2024-03-01.*2025-01-15.*\)", done.stdout), done.stdout
    assert "<- 320" in done.stdout, done.stdout
    assert done.stdout.strip().splitlines()[-1], "the agent printed no final answer"
