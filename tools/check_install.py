"""Install every ferrule distribution from this checkout into fresh virtual environments, as users do.

Each case is one fresh environment and one `tools/install.py` command, run as a user runs it: every
distribution alone, the extras the package READMEs show, and the combinations README.md documents
(through pip in a `python -m venv` environment once, through uv everywhere else, which is much faster
and shares the cache hatch fills). Each case then checks, in that environment:

* exactly the ferrule distributions `tools/install.py` resolved are installed, each from its folder of
  this checkout (PEP 610 `direct_url.json`; editable where asked), none from a package index;
* every one has the checkout's version, and its top module imports and has that `__version__`;
* its console scripts are installed, `ferrule` stays a namespace package (no `ferrule/__init__.py`),
  and the installer's own consistency check (`pip check`) passes.

Usage: `python tools/check_install.py [--keep] [--list] [NAME_FILTER...]` (`.ci/run` runs it with no argument).
Prints one line per case and `N passed, N failed`; exits 1 if any case failed. Needs `uv` on PATH.
"""

from __future__ import annotations

import argparse
import ast
import json
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from install import ROOT
from install import discover
from install import normalize
from install import resolve

INSTALL_TOOL = ROOT / "tools" / "install.py"


@dataclass(frozen=True)
class Case:
    """One fresh environment and what is installed into it."""

    requirements: tuple[str, ...]
    """The arguments given to tools/install.py."""
    pip: bool = False
    """`python -m venv` and pip, the README's first route, instead of uv."""
    editable: bool = False
    """`--editable`."""

    @property
    def label(self) -> str:
        """How the case is named in the output."""
        how = "pip" if self.pip else "uv"
        return f"{' '.join(self.requirements)} ({how}{', editable' if self.editable else ''})"


def cases(root: Path) -> list[Case]:
    """Every distribution alone, then the documented extras and combinations."""
    alone = [Case((dist.folder.name,)) for dist in discover(root).values()]
    documented = [
        # README.md, "Install".
        Case(("ferrule[openai,mcp]",), pip=True),
        Case(("ferrule[openai]",)),
        Case(("ferrule[llamacpp]",)),
        Case(("ferrule[all]",)),
        Case(("ferrule[all]",), editable=True),
        Case(("core", "agent", "openai")),
        # The package READMEs and docs pages.
        Case(("ferrule-llamacpp[server]",)),
        Case(("ferrule-ui[server]",)),
        Case(("ferrule-cli[local]",)),
        Case(("ferrule-agent[yaml]", "ferrule-anthropic", "ferrule-google")),
    ]
    return alone + documented


def _source_version(folder: Path) -> tuple[str, str | None]:
    """The version the checkout holds for a distribution, and its top module (None for the meta one)."""
    data = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))
    project = data["project"]
    if "version" in project:
        return project["version"], None
    path = folder / data["tool"]["hatch"]["version"]["path"]
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["__version__"]:
            value = node.value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                return value.value, ".".join(path.parent.relative_to(folder / "src").parts)
    raise SystemExit(f"{path} assigns no string literal to __version__")


# Runs inside the fresh environment: what is installed there, and what its modules say.
_PROBE = """
import importlib, importlib.metadata as md, json, sys
modules = json.loads(sys.argv[1])
found = {}
for dist in md.distributions():
    name = dist.metadata["Name"]
    if not name.lower().startswith("ferrule"):
        continue
    direct = dist.read_text("direct_url.json")
    scripts = sorted(ep.name for ep in dist.entry_points if ep.group == "console_scripts")
    found[name.lower()] = {"version": dist.version, "direct_url": json.loads(direct) if direct else None,
                           "scripts": scripts}
versions = {}
for module in modules:
    versions[module] = getattr(importlib.import_module(module), "__version__", None)
import ferrule
print(json.dumps({"found": found, "versions": versions, "namespace_file": getattr(ferrule, "__file__", None)}))
"""


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, check=False, timeout=900)


def _problems(case: Case, env: Path, root: Path) -> list[str]:
    python = str(env / "bin" / "python")
    create = [sys.executable, "-m", "venv", str(env)] if case.pip else ["uv", "venv", "-q", str(env)]
    made = _run(create)
    if made.returncode != 0:
        return [f"creating the environment failed: {made.stderr.strip()}"]
    flags = ["--python", python] + (["--editable"] if case.editable else []) + ([] if case.pip else ["--uv"])
    done = _run([sys.executable, str(INSTALL_TOOL), *flags, *case.requirements, "--", "-q"])
    if done.returncode != 0:
        return [f"tools/install.py failed ({done.returncode}):\n{done.stdout}{done.stderr}"]

    dists = discover(root)
    expected = resolve(case.requirements, dists)
    sources = {name: _source_version(dists[name].folder) for name in expected}
    modules = [module for _, module in sources.values() if module is not None]
    probe = _run([python, "-c", _PROBE, json.dumps(modules)])
    if probe.returncode != 0:
        return [f"importing the installed modules failed:\n{probe.stderr}"]
    report: dict[str, Any] = json.loads(probe.stdout)
    found: dict[str, dict[str, Any]] = {normalize(name): info for name, info in report["found"].items()}

    problems: list[str] = []
    if set(found) != set(expected):
        problems.append(f"installed ferrule distributions {sorted(found)}, expected {sorted(expected)}")
    for name, (version, module) in sources.items():
        info = found.get(name)
        if info is None:
            continue
        folder = dists[name].folder.resolve()
        direct: dict[str, Any] = info["direct_url"] or {}
        dir_info: dict[str, Any] = direct.get("dir_info") or {}
        if direct.get("url") != folder.as_uri():
            problems.append(
                f"{name} was not installed from {folder}: direct_url.json is {direct or 'missing'}"
            )
        elif bool(dir_info.get("editable")) != case.editable:
            problems.append(f"{name}: editable is {not case.editable}, expected {case.editable}")
        if info["version"] != version:
            problems.append(f"{name} is installed as {info['version']}, the checkout holds {version}")
        if module is not None and report["versions"][module] != version:
            problems.append(f"{module}.__version__ is {report['versions'][module]!r}, expected {version!r}")
        declared = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))["project"]
        for script in declared.get("scripts", {}):
            if script not in info["scripts"] or not (env / "bin" / script).exists():
                problems.append(f"{name}: console script {script!r} is not installed")
    if report["namespace_file"] is not None:
        problems.append(f"ferrule is not a namespace package: {report['namespace_file']} exists")
    check = _run([python, "-m", "pip", "check"] if case.pip else ["uv", "pip", "check", "--python", python])
    if check.returncode != 0:
        problems.append(f"the installed dependencies are inconsistent:\n{check.stdout}{check.stderr}")
    return problems


def main(argv: list[str] | None = None) -> int:
    """Run every case (or those whose label contains a filter); returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="tools/check_install.py", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("filters", nargs="*", help="run only the cases whose label contains one of these")
    parser.add_argument("--keep", action="store_true", help="keep the environments (their folder is printed)")
    parser.add_argument("--list", action="store_true", help="print each case's requirements and run nothing")
    options = parser.parse_args(argv)
    if options.list:
        for case in cases(ROOT):
            print(" ".join(case.requirements))
        return 0
    if shutil.which("uv") is None:
        print("tools/check_install.py needs uv on PATH: pip install uv", file=sys.stderr)
        return 1
    selected = [c for c in cases(ROOT) if not options.filters or any(f in c.label for f in options.filters)]
    passed = failed = 0
    base = Path(tempfile.mkdtemp(prefix="ferrule-install-check-"))
    try:
        for number, case in enumerate(selected):
            env = base / f"env{number}"
            started = time.perf_counter()
            problems = _problems(case, env, ROOT)
            took = time.perf_counter() - started
            print(f"{'FAIL' if problems else 'ok  '} {case.label} [{took:.1f} s]", flush=True)
            for problem in problems:
                print("     " + problem.replace("\n", "\n     "), flush=True)
            passed, failed = passed + (not problems), failed + bool(problems)
            if not options.keep:
                shutil.rmtree(env, ignore_errors=True)
    finally:
        if options.keep:
            print(f"environments kept in {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
