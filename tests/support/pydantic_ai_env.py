"""The python of the test-only `pydantic-ai-compat` hatch environment, which holds the real PydanticAI.

PydanticAI is not a dependency of any ferrule package. Tests that compare ferrule with it (the history
corpus, docs/coming-from-pydantic-ai.md) run `tools/pydantic_ai_corpus.py` or their own scripts with
this python, found through `FERRULE_PYDANTIC_AI_PYTHON`, else `hatch env find pydantic-ai-compat`;
without either they skip and say how to enable them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CORPUS_TOOL = REPO / "tools" / "pydantic_ai_corpus.py"
PYDANTIC_AI_VERSION = "2.68.0"
ENV_VAR = "FERRULE_PYDANTIC_AI_PYTHON"
SKIP_REASON = (
    f"PydanticAI compatibility needs a python with pydantic-ai-slim=={PYDANTIC_AI_VERSION}: "
    f"run `hatch env create pydantic-ai-compat` or set {ENV_VAR}"
)


def find_python() -> str | None:
    """The compat environment's python, or None when there is none."""
    configured = os.environ.get(ENV_VAR)
    if configured:
        if not Path(configured).exists():
            pytest.fail(f"{ENV_VAR}={configured!r} does not exist")
        return configured
    hatch = shutil.which("hatch")
    if hatch is None:
        return None
    try:
        found = subprocess.run(
            [hatch, "env", "find", "pydantic-ai-compat"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if found.returncode != 0 or not found.stdout.strip():
        return None
    env_dir = Path(found.stdout.strip().splitlines()[-1])
    for candidate in (env_dir / "bin" / "python", env_dir / "Scripts" / "python.exe"):
        if candidate.exists():
            return str(candidate)
    return None


def pydantic_ai_python() -> str:
    """The compat python, checked to hold the pinned PydanticAI; skips the test when there is none."""
    python = find_python()
    if python is None:
        pytest.skip(SKIP_REASON)
    version = subprocess.run(
        [python, "-c", "import importlib.metadata as m; print(m.version('pydantic-ai-slim'))"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if version.returncode != 0:
        pytest.fail(f"{python} cannot import pydantic-ai-slim: {version.stderr.strip()}")
    assert version.stdout.strip() == PYDANTIC_AI_VERSION, (
        f"{python} has pydantic-ai-slim {version.stdout.strip()}"
    )
    return python


def run_corpus_tool(python: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`tools/pydantic_ai_corpus.py ARGS` in the compat environment."""
    return subprocess.run(
        [python, str(CORPUS_TOOL), *args], capture_output=True, text=True, timeout=300, check=False
    )
