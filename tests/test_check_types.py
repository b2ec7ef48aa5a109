"""`tools/check_types.py` fails on any diagnostic and whenever pyright checks fewer files than git holds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TOOL = REPO / "tools" / "check_types.py"

GOOD = "def double(x: int) -> int:\n    return 2 * x\n"


LIBRARY_RULES = "reportPrivateUsage = true\nreportUnnecessaryTypeIgnoreComment = true\n"


def make_tree(
    root: Path,
    include: list[str],
    files: dict[str, str],
    exclude: list[str] | None = None,
    extra: str = LIBRARY_RULES,
) -> Path:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    listed = ", ".join(f'"{p}"' for p in include)
    excluded = ", ".join(f'"{p}"' for p in exclude or [])
    (root / "pyproject.toml").write_text(
        f'[tool.pyright]\ninclude = [{listed}]\nexclude = [{excluded}]\ntypeCheckingMode = "strict"\n{extra}'
    )
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


def run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(TOOL), str(root), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


TWO_PACKAGES = {"packages/a/src/a.py": GOOD, "packages/b/tests/test_b.py": GOOD}


def test_every_file_checked_and_clean_passes(tmp_path: Path) -> None:
    result = run(make_tree(tmp_path, ["packages"], TWO_PACKAGES))
    assert result.returncode == 0, result.stdout
    assert "types ok: pyright strict on all 2 Python files" in result.stdout


def test_a_glob_include_that_checks_nothing_fails(tmp_path: Path) -> None:
    # The pattern the workspace used before: pyright expands no such glob and checks zero files.
    result = run(make_tree(tmp_path, ["packages/*/src"], TWO_PACKAGES))
    assert result.returncode == 1
    assert "pyright analysed 0 files but the tree holds 2 Python files" in result.stdout


def test_a_root_left_out_of_include_fails(tmp_path: Path) -> None:
    files = {**TWO_PACKAGES, "tools/tool.py": GOOD}
    result = run(make_tree(tmp_path, ["packages"], files))
    assert result.returncode == 1
    assert "pyright analysed 2 files but the tree holds 3 Python files" in result.stdout


def test_an_exclude_that_drops_a_file_fails(tmp_path: Path) -> None:
    result = run(make_tree(tmp_path, ["packages"], TWO_PACKAGES, exclude=["**/tests/**"]))
    assert result.returncode == 1
    assert "pyright analysed 1 files but the tree holds 2" in result.stdout


def test_a_type_error_fails_with_its_location(tmp_path: Path) -> None:
    files = {**TWO_PACKAGES, "packages/a/src/bad.py": 'def f() -> int:\n    return "no"\n'}
    result = run(make_tree(tmp_path, ["packages"], files))
    assert result.returncode == 1
    assert "packages/a/src/bad.py:2:12: error:" in result.stdout
    assert "reportReturnType" in result.stdout


def test_a_separately_checked_file_is_checked_against_its_interpreter(tmp_path: Path) -> None:
    files = {**TWO_PACKAGES, "tools/special.py": "import pytest\n\nMARK = pytest.mark.slow\n"}
    tree = make_tree(tmp_path, ["packages", "tools"], files, exclude=["tools/special.py"])
    result = run(tree, f"--separate=tools/special.py={sys.executable}")
    assert result.returncode == 0, result.stdout
    assert "all 3 Python files" in result.stdout
    # Left out without being checked elsewhere, the file counts as missing.
    assert "the tree holds 3 Python files" in run(tree).stdout
    # Checked separately, its errors still fail the run.
    (tree / "tools" / "special.py").write_text('X: int = "no"\n')
    broken = run(tree, f"--separate=tools/special.py={sys.executable}")
    assert broken.returncode == 1
    assert "tools/special.py:1:10: error:" in broken.stdout


def test_a_stale_separate_entry_fails(tmp_path: Path) -> None:
    result = run(
        make_tree(tmp_path, ["packages"], TWO_PACKAGES), f"--separate=tools/gone.py={sys.executable}"
    )
    assert result.returncode == 1
    assert "tools/gone.py: named in SEPARATE but git holds no such file" in result.stdout


def test_a_separately_checked_file_must_be_excluded_from_the_main_run(tmp_path: Path) -> None:
    files = {**TWO_PACKAGES, "tools/special.py": GOOD}
    result = run(
        make_tree(tmp_path, ["packages", "tools"], files), f"--separate=tools/special.py={sys.executable}"
    )
    assert result.returncode == 1
    assert "pyright analysed 3 files but the tree holds 2 Python files" in result.stdout
    assert "a separately checked file is not excluded" in result.stdout


# A package whose test reaches a private name of its library module.
WHITE_BOX = {
    "packages/a/src/a.py": "_SCALE = 2\n\n\ndef double(x: int) -> int:\n    return _SCALE * x\n",
    "packages/a/tests/test_a.py": "from a import _SCALE\n\n\ndef test_scale() -> None:\n    assert _SCALE == 2\n",
    "packages/a/src/uses.py": "from a import _SCALE\n\nDOUBLE = _SCALE * 2\n",
}
A_TESTS_ENTRY = '{ root = "packages/a/tests", extraPaths = ["packages/a/src"], reportPrivateUsage = false }'
EXTRA_PATHS = 'extraPaths = ["packages/a/src"]\n'


def test_a_new_packages_tests_without_an_entry_are_checked_with_library_rules(tmp_path: Path) -> None:
    files = {k: v for k, v in WHITE_BOX.items() if k != "packages/a/src/uses.py"}
    result = run(make_tree(tmp_path, ["packages"], files, extra=LIBRARY_RULES + EXTRA_PATHS))
    assert result.returncode == 1
    assert "packages/a/tests/test_a.py:1:15: error:" in result.stdout
    assert "(reportPrivateUsage) [packages/a/tests has no executionEnvironments entry" in result.stdout
    assert 'root = "packages/a/tests"' in result.stdout  # the hint names the entry to add


def test_a_tests_entry_gives_white_box_access_to_the_tests_only(tmp_path: Path) -> None:
    extra = LIBRARY_RULES + EXTRA_PATHS + f"executionEnvironments = [{A_TESTS_ENTRY}]\n"
    result = run(make_tree(tmp_path, ["packages"], WHITE_BOX, extra=extra))
    assert result.returncode == 1
    assert "packages/a/tests/test_a.py" not in result.stdout
    assert "packages/a/src/uses.py:1:15: error:" in result.stdout  # library code keeps the rule
    assert "has no executionEnvironments entry" not in result.stdout


def test_library_rules_must_stay_on(tmp_path: Path) -> None:
    result = run(make_tree(tmp_path, ["packages"], TWO_PACKAGES, extra="reportPrivateUsage = false\n"))
    assert result.returncode == 1
    assert "[tool.pyright] reportPrivateUsage = False: library code must be checked" in result.stdout
    assert "[tool.pyright] reportUnnecessaryTypeIgnoreComment = None: library code" in result.stdout


def test_an_entry_outside_a_tests_folder_or_naming_no_folder_fails(tmp_path: Path) -> None:
    entries = '{ root = "packages/a", reportPrivateUsage = false }, { root = "packages/gone/tests" }'
    extra = LIBRARY_RULES + f"executionEnvironments = [{entries}]\n"
    result = run(make_tree(tmp_path, ["packages"], TWO_PACKAGES, extra=extra))
    assert result.returncode == 1
    assert "executionEnvironments root 'packages/a' is not in a tests folder" in result.stdout
    assert "executionEnvironments root 'packages/gone/tests' names no folder in the tree" in result.stdout
