"""README.md's first example runs as printed, without an API key, on the embedded local model."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ferrule.providers.llamacpp import ModelDownloadError
from ferrule.providers.llamacpp import ensure_model

README = Path(__file__).resolve().parents[1] / "README.md"
MODEL = "qwen2.5-coder-0.5b"

pytestmark = pytest.mark.slow


def first_example() -> str:
    found = re.search(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
    assert found is not None, "README.md has no Python example"
    return found[1]


def test_first_example_needs_no_api_key_and_names_the_small_local_model() -> None:
    code = first_example()
    assert f'Agent("llamacpp:{MODEL}"' in code
    assert "api_key" not in code.lower()


def test_first_example_runs_its_tool_on_the_local_model() -> None:
    try:
        ensure_model(MODEL)
    except ModelDownloadError as exc:
        pytest.skip(f"the end-to-end model {MODEL} cannot be downloaded: {exc}")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.setdefault("FERRULE_LLAMACPP_THREADS", "1")
    done = subprocess.run(
        [sys.executable, "-c", first_example()],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    output, usage = done.stdout.strip().splitlines()[-2:]
    # The model called the tool once (a second request carried its result) and answered with it.
    assert re.fullmatch(r"RunUsage\(.*requests=2, tool_calls=1\)", usage), done.stdout
    assert "18.5" in output, done.stdout
