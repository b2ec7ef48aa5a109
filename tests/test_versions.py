"""Versions and the wiring of every distribution (docs/versioning.md, CONTRIBUTING.md).

Each distribution's version is written once, as its top module's `__version__`; sibling ferrule
dependencies are bounded to the 0.x series they are built with; the meta-distribution has an extra
for every package; and every package is a workspace member and has an isolated test environment.
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = sorted(path.parent for path in ROOT.glob("packages/*/pyproject.toml"))
META = ROOT / "packages" / "ferrule"
"""The meta-distribution: no module of its own, so its version stays in its pyproject."""
BASE = {"ferrule-core", "ferrule-agent"}
"""What `pip install ferrule` brings without an extra."""


def _project(folder: Path) -> dict[str, Any]:
    return tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))


def _literal_version(path: Path) -> str:
    """The string assigned to `__version__` at the top level of `path`."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if (
            isinstance(node, ast.Assign)
            and [getattr(target, "id", None) for target in node.targets] == ["__version__"]
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            return node.value.value
    raise AssertionError(f"{path} assigns no string literal to __version__")


def _versions() -> dict[str, Version]:
    """Every distribution's version, read from where it is written."""
    found: dict[str, Version] = {}
    for folder in PACKAGES:
        data = _project(folder)
        project = data["project"]
        if folder == META:
            found[project["name"]] = Version(project["version"])
        else:
            found[project["name"]] = Version(
                _literal_version(folder / data["tool"]["hatch"]["version"]["path"])
            )
    return found


def _requirements(project: dict[str, Any], data: dict[str, Any]) -> list[str]:
    requirements: list[str] = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        requirements.extend(extra)
    for group in data.get("dependency-groups", {}).values():
        requirements.extend(item for item in group if isinstance(item, str))
    return requirements


@pytest.mark.parametrize("folder", [f for f in PACKAGES if f != META], ids=lambda f: f.name)
def test_version_is_written_once_in_the_top_module(folder: Path) -> None:
    data = _project(folder)
    project = data["project"]
    assert "version" not in project, "the version belongs in the top module's __version__ only"
    assert project["dynamic"] == ["version"]
    path = folder / data["tool"]["hatch"]["version"]["path"]
    assert path.name == "__init__.py"
    module_name = ".".join(path.parent.relative_to(folder / "src").parts)
    module = importlib.import_module(module_name)
    assert Path(module.__file__ or "").resolve() == path.resolve(), "the version source is not the module"
    written = _literal_version(path)
    assert module.__version__ == written == importlib.metadata.version(project["name"])
    assert "__version__" in module.__all__
    assert Version(written).release[0] == 0, "docs/versioning.md describes the 0.x series only"


def test_meta_distribution_version_matches_its_metadata() -> None:
    project = _project(META)["project"]
    assert importlib.metadata.version("ferrule") == project["version"]


def test_reading_the_version_loads_no_module() -> None:
    # `import ferrule.core` must stay cheap: the version is a literal, not a metadata lookup.
    code = (
        "import sys; import ferrule.core; before = set(sys.modules); "
        "assert ferrule.core.__version__; print(sorted(set(sys.modules) - before))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_sibling_dependencies_are_bounded_to_their_minor_series() -> None:
    versions = _versions()
    checked = 0
    for folder in PACKAGES:
        data = _project(folder)
        project = data["project"]
        for text in _requirements(project, data):
            requirement = Requirement(text)
            if requirement.name not in versions or requirement.name == project["name"]:
                continue
            major, minor = versions[requirement.name].release[:2]
            expected = SpecifierSet(f">={major}.{minor},<{major}.{minor + 1}")
            assert requirement.specifier == expected, f"{project['name']}: {text!r} should say {expected}"
            checked += 1
    assert checked >= 20


def test_meta_distribution_has_an_extra_for_every_package() -> None:
    extras: dict[str, list[str]] = _project(META)["project"]["optional-dependencies"]
    names = {_project(folder)["project"]["name"] for folder in PACKAGES if folder != META}
    for name in names - BASE:
        extra = name.removeprefix("ferrule-")
        assert extra in extras, f"the ferrule meta-distribution has no [{extra}] extra"
        assert [Requirement(r).name for r in extras[extra]] == [name]
    assert {Requirement(r).name for r in extras["all"]} == names - BASE
    assert set(extras) == {name.removeprefix("ferrule-") for name in names - BASE} | {"all"}


def test_every_package_is_a_workspace_member_with_an_isolated_environment() -> None:
    root = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    envs = root["tool"]["hatch"]["envs"]
    members = {m if isinstance(m, str) else m["path"] for m in envs["default"]["workspace"]["members"]}
    assert members == {f"packages/{folder.name}" for folder in PACKAGES}
    isolated = set(envs["iso"]["matrix"][0]["pkg"])
    assert isolated == {folder.name for folder in PACKAGES if folder != META}


@pytest.mark.parametrize("folder", PACKAGES, ids=lambda f: f.name)
def test_every_distribution_ships_the_licence(folder: Path) -> None:
    # hatchling puts the project folder's LICENSE into the wheel's dist-info/licenses; each package's
    # LICENSE is a link to the repository's one, so the text exists once.
    licence = folder / "LICENSE"
    assert licence.is_symlink(), f"{licence} should link to ../../LICENSE"
    assert licence.resolve() == (folder.parents[1] / "LICENSE").resolve()
    assert licence.read_text(encoding="utf-8").startswith("MIT License")


def _declared_entry_points(project: dict[str, Any]) -> set[tuple[str, str, str]]:
    groups: dict[str, dict[str, str]] = {
        **project.get("entry-points", {}),
        "console_scripts": project.get("scripts", {}),
        "gui_scripts": project.get("gui-scripts", {}),
    }
    return {(group, name, value) for group, entries in groups.items() for name, value in entries.items()}


@pytest.mark.parametrize("folder", PACKAGES, ids=lambda f: f.name)
def test_installed_entry_points_are_the_ones_the_checkout_declares(folder: Path) -> None:
    # An editable install writes its entry points once; an environment made before a rename keeps
    # pointing at modules that no longer exist (the CI failure this guards against), so say so here,
    # once, instead of as eight unrelated-looking failures elsewhere.
    project = _project(folder)["project"]
    declared = _declared_entry_points(project)
    dist = importlib.metadata.distribution(project["name"])
    installed = {(entry.group, entry.name, entry.value) for entry in dist.entry_points}
    assert installed == declared, (
        f"{project['name']} is installed with stale metadata (installed {sorted(installed - declared)}, "
        f"declared {sorted(declared - installed)}): recreate the environment (`hatch env remove default`)"
    )
