"""docs/coming-from-pydantic-ai.md: its code runs, prints what it says, and its claims hold in PydanticAI.

* Every Python block runs, in order, in one fresh interpreter, from a folder holding the page's
  PydanticAI history; the lines it prints are the page's `#>` comments, exactly.
* The block marked `<!-- runs-on-pydantic-ai -->` runs on the real PydanticAI 2.68 with each
  `# was:` import put back, and prints the same.
* The history the page loads is what PydanticAI's agent loop writes (regenerated and compared), and
  PydanticAI loads both ferrule's rewrite of it and the conversation the page writes.
* Every `ferrule.*` name the page mentions exists, and so does every `pydantic_ai.*` name that the
  compat environment can import without an optional extra.

The PydanticAI parts run in the test-only `pydantic-ai-compat` hatch environment and skip without it.
"""

from __future__ import annotations

import importlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ferrule.core import history
from tests.support.pydantic_ai_env import pydantic_ai_python
from tests.support.pydantic_ai_env import run_corpus_tool

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "coming-from-pydantic-ai.md"
HISTORY = Path("docs") / "examples" / "pydantic_ai_history.json"
_BLOCK = re.compile(r"(?P<marker><!-- runs-on-pydantic-ai -->\n)?```python\n(?P<code>.*?)```\n", re.S)
_VOLATILE = {"timestamp", "run_id", "conversation_id"}
"""Fields PydanticAI fills from the clock or a fresh UUID on every run."""


def blocks() -> list[tuple[bool, str]]:
    """Each Python block of the page, and whether it is marked to run on PydanticAI too."""
    return [(bool(m["marker"]), m["code"]) for m in _BLOCK.finditer(PAGE.read_text(encoding="utf-8"))]


def expected_output(code: str) -> list[str]:
    return [line.removeprefix("#> ") for line in code.splitlines() if line.startswith("#> ")]


def run_in(folder: Path, python: str, code: str) -> subprocess.CompletedProcess[str]:
    (folder / HISTORY).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(REPO / HISTORY, folder / HISTORY)
    return subprocess.run(
        [python, "-c", code], cwd=folder, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.fixture(scope="module")
def page_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    folder = tmp_path_factory.mktemp("coming_from_pydantic_ai")
    return run_in(folder, sys.executable, "\n\n".join(code for _, code in blocks())), folder


def test_every_block_runs_and_prints_what_the_page_says(
    page_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    done, _ = page_run
    assert done.returncode == 0, done.stderr
    expected = [line for _, code in blocks() for line in expected_output(code)]
    assert len(blocks()) >= 4
    assert len(expected) >= 8
    assert done.stdout.splitlines() == expected


def _degraded(value: Any) -> Any:
    """`value` with the fields PydanticAI fills from the clock or a fresh UUID set to a placeholder."""
    if isinstance(value, dict):
        return {k: "<volatile>" if k in _VOLATILE else _degraded(v) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list):
        return [_degraded(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def test_the_first_block_runs_unchanged_on_pydantic_ai(tmp_path: Path) -> None:
    python = pydantic_ai_python()
    marked = [code for on_pai, code in blocks() if on_pai]
    assert len(marked) == 1
    code = marked[0]
    swapped = re.sub(r"^.*# was: (.*)$", r"\1", code, flags=re.M)
    assert swapped.count("pydantic_ai") >= 4
    assert "ferrule" not in swapped
    done = run_in(tmp_path, python, swapped)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == expected_output(code)


def test_the_history_is_what_pydantic_ai_writes(tmp_path: Path) -> None:
    python = pydantic_ai_python()
    regenerated = tmp_path / "regenerated.json"
    made = run_corpus_tool(python, "agent-history", str(regenerated))
    assert made.returncode == 0, made.stderr
    committed = (REPO / HISTORY).read_bytes()
    assert _degraded(json.loads(regenerated.read_bytes())) == _degraded(json.loads(committed))
    # ferrule's rewrite of it loads in PydanticAI equal to PydanticAI's own messages.
    rewritten = tmp_path / "rewritten.json"
    rewritten.write_bytes(history.dump_pydantic_ai(history.load_pydantic_ai(committed)))
    judged = run_corpus_tool(python, "check", str(REPO / HISTORY), str(rewritten))
    assert judged.returncode == 0, judged.stdout + judged.stderr


def test_pydantic_ai_loads_the_conversation_the_page_writes(
    page_run: tuple[subprocess.CompletedProcess[str], Path], tmp_path: Path
) -> None:
    python = pydantic_ai_python()
    done, folder = page_run
    assert done.returncode == 0, done.stderr
    written = folder / "conversation.json"
    echoed = tmp_path / "echoed.json"
    loaded = run_corpus_tool(python, "echo", str(written), str(echoed))
    assert loaded.returncode == 0, loaded.stderr
    # Through PydanticAI and back, the conversation is the one ferrule wrote.
    assert history.load_pydantic_ai(echoed.read_bytes()) == history.load_pydantic_ai(written.read_bytes())


def _names(prefix: str) -> list[str]:
    found = re.findall(rf"`({prefix}(?:\.\w+)+)", PAGE.read_text(encoding="utf-8"))
    return sorted(set(found))


def _resolve(name: str) -> object:
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            target = getattr(target, attribute)
        return target
    raise ModuleNotFoundError(name)


def test_every_ferrule_name_on_the_page_exists() -> None:
    names = _names("ferrule")
    assert len(names) >= 30
    for name in names:
        assert _resolve(name) is not None, name


_RESOLVE_IN_PYDANTIC_AI = """
import importlib, json, sys
checked, unchecked, missing = [], [], []
for name in json.loads(sys.argv[1]):
    parts = name.split(".")
    try:
        for cut in range(len(parts), 0, -1):
            try:
                target = importlib.import_module(".".join(parts[:cut]))
            except ModuleNotFoundError as error:
                if error.name != ".".join(parts[:cut]):
                    raise
                continue
            for attribute in parts[cut:]:
                target = getattr(target, attribute)
            break
        else:
            raise AttributeError(name)
    except AttributeError:
        missing.append(name)
    except ImportError:  # a module that needs an optional extra of pydantic-ai-slim
        unchecked.append(name)
    else:
        checked.append(name)
print(json.dumps({"checked": checked, "unchecked": unchecked, "missing": missing}))
"""


def test_every_pydantic_ai_name_on_the_page_exists_in_pydantic_ai() -> None:
    python = pydantic_ai_python()
    names = _names("pydantic_ai")
    done = subprocess.run(
        [python, "-c", _RESOLVE_IN_PYDANTIC_AI, json.dumps(names)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, list[str]] = json.loads(done.stdout)
    assert report["missing"] == []
    assert len(report["checked"]) >= 20, report
