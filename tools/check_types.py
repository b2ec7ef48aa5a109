"""Run strict pyright over the whole tree; fail on any diagnostic and on any Python file it did not check.

pyright reports how many files it analysed but silently checks nothing under an `include` pattern it
does not expand (`packages/*/src` matched no file for months). So this counts the Python files git sees
(tracked, plus untracked ones not ignored) and requires pyright's `filesAnalyzed` to equal that count,
less the files named in `SEPARATE`: those import packages that only another hatch environment installs,
are excluded in `[tool.pyright]`, and are checked here with the same settings against that
environment's interpreter.

It also holds the configuration to the rules library code relies on: `reportPrivateUsage` and
`reportUnnecessaryTypeIgnoreComment` stay on at the top level, and an `executionEnvironments` entry (whose
rule overrides apply to every file under its root) must be rooted at a `tests` folder that exists. The
test folders are found in the tree, not listed here: a new package's tests without an entry are checked
with the library rules, and a private-name diagnostic there says which entry would give white-box access.

Usage: `python tools/check_types.py` (`hatch run types`) checks this repository, `SEPARATE` included;
`python tools/check_types.py REPO [--separate=PATH=PYTHON ...]` checks another tree, with only the
files given checked separately. Prints every problem and exits 1 if any.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from typing import NamedTuple


class Separate(NamedTuple):
    """A file pyright checks against another hatch environment's interpreter."""

    env: str
    """The hatch environment whose interpreter resolves the file's imports."""
    why: str
    """Why the default environment cannot check it."""


SEPARATE: dict[str, Separate] = {
    "tools/pydantic_ai_corpus.py": Separate(
        "pydantic-ai-compat", "imports pydantic_ai, which only the pydantic-ai-compat environment installs"
    ),
}


def python_files(repo: Path) -> list[str]:
    """Repo-relative paths of every Python file git sees: tracked, or untracked and not ignored."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", "*.py"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return sorted({line for line in out.splitlines() if line and (repo / line).is_file()})


def _pyright(repo: Path, *args: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", "pyright", "--outputjson", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        report: dict[str, Any] = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise SystemExit(
            f"pyright produced no report (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}"
        ) from None
    return report


def _diagnostics(
    repo: Path, report: Mapping[str, Any], unconfigured: frozenset[str] = frozenset()
) -> list[str]:
    """Readable error and warning lines; `unconfigured` holds the test folders without an entry of their own."""
    lines: list[str] = []
    for diag in report.get("generalDiagnostics", []):
        if diag.get("severity") not in ("error", "warning"):
            continue
        start = diag.get("range", {}).get("start", {})
        where = Path(diag.get("file", "?"))
        if where.is_relative_to(repo):
            where = where.relative_to(repo)
        message = str(diag.get("message", "")).replace("\n", " ")
        rule = f" ({diag['rule']})" if "rule" in diag else ""
        hint = ""
        folder = _test_folder(where.as_posix())
        if diag.get("rule") == "reportPrivateUsage" and folder in unconfigured:
            hint = (
                f" [{folder} has no executionEnvironments entry in [tool.pyright], so library rules apply; "
                f'white-box tests get one: {{ root = "{folder}", extraPaths = ["."], reportPrivateUsage = false }}]'
            )
        lines.append(
            f"{where}:{start.get('line', 0) + 1}:{start.get('character', 0) + 1}: "
            f"{diag['severity']}: {message}{rule}{hint}"
        )
    return lines


def _test_folder(path: str) -> str | None:
    """The `tests` folder (`tests` or `packages/<name>/tests`) a repo-relative path lies in, if any."""
    parts = path.split("/")
    if parts[0] == "tests" and len(parts) > 1:
        return "tests"
    if len(parts) > 3 and parts[0] == "packages" and parts[2] == "tests":
        return "/".join(parts[:3])
    return None


# The rules library code keeps: an override of either at the top level would switch it off everywhere.
_LIBRARY_RULES = ("reportPrivateUsage", "reportUnnecessaryTypeIgnoreComment")


def _config_problems(repo: Path, settings: Mapping[str, Any]) -> list[str]:
    """What in `[tool.pyright]` would let library code escape the rules it is held to."""
    problems = [
        f"[tool.pyright] {rule} = {settings.get(rule)!r}: library code must be checked with it on (true)"
        for rule in _LIBRARY_RULES
        if settings.get(rule) not in (True, "error", "warning")  # what this tool fails on
    ]
    for env in settings.get("executionEnvironments", []):
        root = str(env.get("root", "")).strip("/")
        if not (repo / root).is_dir():
            problems.append(f"[tool.pyright] executionEnvironments root {root!r} names no folder in the tree")
            continue
        if _test_folder(f"{root}/-") is None:
            problems.append(
                f"[tool.pyright] executionEnvironments root {root!r} is not in a tests folder (tests or "
                "packages/<name>/tests): its rule overrides would apply to library code"
            )
    return problems


def _settings(repo: Path) -> dict[str, Any]:
    pyproject = tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8"))
    settings: dict[str, Any] = pyproject.get("tool", {}).get("pyright", {})
    return settings


def _check_alone(repo: Path, path: str, python: str) -> list[str]:
    """Check one file with the project's settings but another interpreter's packages."""
    settings = {
        key: value
        for key, value in _settings(repo).items()
        if key not in ("include", "exclude", "executionEnvironments", "ignore")
    }
    with tempfile.TemporaryDirectory() as tmp:
        # pyright ignores absolute `include` entries, so the file is named relative to the config.
        settings["include"] = [os.path.relpath(repo / path, tmp)]
        config = Path(tmp) / "pyrightconfig.json"
        config.write_text(json.dumps(settings), encoding="utf-8")
        report = _pyright(repo, "--project", str(config), "--pythonpath", python)
    problems = _diagnostics(repo, report)
    analysed = int(report.get("summary", {}).get("filesAnalyzed", 0))
    if analysed != 1:
        problems.append(f"{path}: pyright analysed {analysed} files for it against {python}, expected 1")
    return problems


def check(repo: Path, separate: Mapping[str, str]) -> list[str]:
    """Every problem as a readable line; `separate` maps a repo-relative file to the interpreter it needs."""
    files = python_files(repo)
    settings = _settings(repo)
    problems = [
        f"{path}: named in SEPARATE but git holds no such file" for path in separate if path not in files
    ]
    problems.extend(_config_problems(repo, settings))
    alone = [path for path in separate if path in files]
    expected = len(files) - len(alone)
    configured = {str(env.get("root", "")).strip("/") for env in settings.get("executionEnvironments", [])}
    folders = {folder for folder in map(_test_folder, files) if folder is not None}
    # Named explicitly: pyright would otherwise prefer a pyrightconfig.json in any folder above.
    report = _pyright(repo, "--project", str(repo / "pyproject.toml"))
    problems.extend(_diagnostics(repo, report, frozenset(folders - configured)))
    analysed = int(report.get("summary", {}).get("filesAnalyzed", 0))
    if analysed != expected:
        problems.append(
            f"pyright analysed {analysed} files but the tree holds {expected} Python files to check "
            f"({len(files)} that git sees, less {len(alone)} checked separately): "
            + (
                "an `include` entry that pyright does not expand (a glob) or too wide an `exclude` in "
                "[tool.pyright] leaves files unchecked"
                if analysed < expected
                else "a separately checked file is not excluded in [tool.pyright], or pyright checks files "
                "git ignores (build output?)"
            )
        )
    for path in alone:
        problems.extend(_check_alone(repo, path, separate[path]))
    return problems


def _env_python(env: str) -> str:
    """The interpreter of a hatch environment, which must already exist (`hatch env create ENV`)."""
    found = subprocess.run(["hatch", "env", "find", env], capture_output=True, text=True, check=True)
    python = Path(found.stdout.strip()) / "bin" / "python"
    if not python.is_file():
        raise SystemExit(f"hatch environment {env!r} does not exist: run `hatch env create {env}` first")
    return str(python)


def main(argv: list[str]) -> int:
    args = argv[1:]
    given = [arg.removeprefix("--separate=") for arg in args if arg.startswith("--separate=")]
    rest = [arg for arg in args if not arg.startswith("--separate=")]
    if rest:
        repo = Path(rest[0]).resolve()
        separate = dict(item.split("=", 1) for item in given)
    else:
        repo = Path(__file__).resolve().parents[1]
        separate = {path: _env_python(spec.env) for path, spec in SEPARATE.items()}
    problems = check(repo, separate)
    for line in problems:
        print(line)
    if problems:
        print(f"{len(problems)} type-check problem(s)")
        return 1
    print(f"types ok: pyright strict on all {len(python_files(repo))} Python files")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
