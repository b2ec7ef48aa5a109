"""The command on the embedded local model (no API key): the real Qwen2.5-Coder 0.5B through llama.cpp,
in a real terminal, so the download progress bar shows when the model is not cached yet."""

from __future__ import annotations

import json
import sys

import pytest

from ferrule.providers.llamacpp import cached_model_path

from .conftest import Terminal
from .conftest import needs_program

MODEL = "qwen2.5-coder-0.5b"


@pytest.mark.slow
@needs_program("tmux")
def test_run_on_the_local_model_without_an_api_key(terminal: Terminal) -> None:
    cached = cached_model_path(MODEL) is not None
    terminal.start(
        [
            sys.executable,
            "-m",
            "ferrule.cli",
            "run",
            "--model",
            f"llamacpp:{MODEL}",
            "--max-tokens",
            "12",
            "--json",
            "Reply with one word: hello.",
        ]
    )
    screen = terminal.wait_for("EXIT=", limit=1800)
    assert "EXIT=0" in screen, screen
    if not cached:
        assert f"ferrule: fetching {MODEL}" in screen  # the first use shows the download progress
    line = next(row for row in screen.splitlines() if row.startswith('{"status"'))
    document = json.loads(line)
    assert document["status"] == "ok"
    assert document["model"] == f"llamacpp:{MODEL}"
    assert isinstance(document["output"], str)
    assert document["output"].strip()
    assert document["usage"]["requests"] == 1
    assert 0 < document["usage"]["output_tokens"] <= 12
