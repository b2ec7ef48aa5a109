"""The runnable programs in `docs/examples`: where they are, and running one as its reader would."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

__all__ = ["EXAMPLES", "load_example", "needs_examples", "run_example"]

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
"""The examples folder of the checkout."""

needs_examples = pytest.mark.skipif(
    not EXAMPLES.is_dir(), reason="docs/examples is not part of this checkout"
)
"""Skips a test module where the checkout has no docs/examples (an installed package's tests)."""


def run_example(*args: str, cwd: Path = EXAMPLES) -> subprocess.CompletedProcess[str]:
    """Run `python *args` in `cwd` (default the examples folder) with the offline scripted model: the
    `FERRULE_EXAMPLE_MODEL` variable that switches an example to a real model is removed."""
    env = {k: v for k, v in os.environ.items() if k != "FERRULE_EXAMPLE_MODEL"}
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=120, check=False, env=env, cwd=cwd
    )


def load_example(name: str) -> ModuleType:
    """Import `docs/examples/<name>.py` as a new module (never registered in `sys.modules`); skips
    where the checkout has no such example."""
    path = EXAMPLES / f"{name}.py"
    if not path.is_file():
        pytest.skip("docs/examples is not part of this checkout")
    spec = importlib.util.spec_from_file_location(f"docs_example_{name}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
