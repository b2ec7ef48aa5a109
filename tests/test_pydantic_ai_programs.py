"""Programs written against PydanticAI 2.68's documented API run on ferrule with only their imports
changed (tests/pydantic_ai_programs/), and print what they say.

Each program's ferrule imports carry the PydanticAI import they replace (`# was: ...`); the test runs
the program as it is and, in the `pydantic-ai-compat` environment, with those imports put back, and
both print the program's `#>` lines. Nothing else in a program may differ between the two.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.pydantic_ai_env import pydantic_ai_python

REPO = Path(__file__).resolve().parents[1]
PROGRAMS = sorted(
    p for p in (REPO / "tests" / "pydantic_ai_programs").glob("*.py") if p.name != "conftest.py"
)
_WAS = re.compile(r"^(?P<line>.*?)\s*# was: (?P<was>.*)$", re.M)


def _expected(code: str) -> list[str]:
    return [line.strip().removeprefix("#> ") for line in code.splitlines() if line.strip().startswith("#> ")]


def _run(python: str, code: str, folder: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENAI_API_KEY": "sk-not-used"}  # the programs name openai: models they never call
    return subprocess.run(
        [python, "-c", code], cwd=folder, capture_output=True, text=True, timeout=120, check=False, env=env
    )


def test_there_are_the_acceptance_programs() -> None:
    names = {p.stem for p in PROGRAMS}
    assert {
        "output_with_field_validator",
        "tool_with_model_argument",
        "override_in_a_test",
        "override_deps",
        "system_prompts",
        "approval_round_trip",
    } <= names


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_the_program_runs_on_ferrule(program: Path, tmp_path: Path) -> None:
    code = program.read_text(encoding="utf-8")
    assert _expected(code), f"{program.name} prints nothing to compare"
    done = _run(sys.executable, code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == _expected(code)


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_the_program_is_a_pydantic_ai_program_with_other_imports(program: Path, tmp_path: Path) -> None:
    code = program.read_text(encoding="utf-8")
    swapped = _WAS.sub(lambda m: m["was"], code)
    # Only import lines differ: each changed line is an import, and nothing else names ferrule.
    for match in _WAS.finditer(code):
        assert match["line"].startswith(("from ferrule.", "import ferrule")), match["line"]
        assert match["was"].startswith(("from pydantic_ai", "import pydantic_ai")), match["was"]
    assert "ferrule" not in swapped
    python = pydantic_ai_python()
    done = _run(python, swapped, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == _expected(code)
