"""The layering check fails on upward, sideways (agent <-> provider) and undeclared imports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TOOL = REPO / "tools" / "check_layers.py"


def make_package(root: Path, name: str, module: str, deps: list[str], source: str) -> None:
    folder = root / "packages" / name
    src = folder / "src" / Path(*module.split("."))
    src.mkdir(parents=True)
    (src / "__init__.py").write_text(source)
    dep_list = ", ".join(f'"{d}"' for d in deps)
    (folder / "pyproject.toml").write_text(
        f'[project]\nname = "ferrule-{name}"\ndependencies = [{dep_list}]\n'
    )


def run(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(TOOL), str(root)], capture_output=True, text=True, check=False)


def test_clean_tree_passes(tmp_path: Path) -> None:
    make_package(tmp_path, "core", "ferrule.core", [], "X = 1\n")
    make_package(tmp_path, "agent", "ferrule.agent", ["ferrule-core"], "from ferrule.core import X\n")
    result = run(tmp_path)
    assert result.returncode == 0, result.stdout
    assert "layers ok" in result.stdout


def test_upward_import_fails(tmp_path: Path) -> None:
    make_package(tmp_path, "core", "ferrule.core", [], "import ferrule.agent\n")
    make_package(tmp_path, "agent", "ferrule.agent", ["ferrule-core"], "")
    result = run(tmp_path)
    assert result.returncode == 1
    assert "imports ferrule.agent (layer 1) from layer 0" in result.stdout


def test_provider_importing_agent_fails(tmp_path: Path) -> None:
    make_package(tmp_path, "core", "ferrule.core", [], "")
    make_package(tmp_path, "agent", "ferrule.agent", ["ferrule-core"], "")
    make_package(
        tmp_path,
        "foo",
        "ferrule.providers.foo",
        ["ferrule-core", "ferrule-agent"],
        "def f():\n    import ferrule.agent\n",
    )
    result = run(tmp_path)
    assert result.returncode == 1
    assert "meet only in ferrule.core" in result.stdout


def test_undeclared_dependency_fails(tmp_path: Path) -> None:
    make_package(tmp_path, "core", "ferrule.core", [], "")
    make_package(tmp_path, "agent", "ferrule.agent", [], "from ferrule.core import messages\n")
    result = run(tmp_path)
    assert result.returncode == 1
    assert "does not declare ferrule-core" in result.stdout


def test_namespace_init_is_rejected(tmp_path: Path) -> None:
    make_package(tmp_path, "core", "ferrule.core", [], "")
    (tmp_path / "packages" / "core" / "src" / "ferrule" / "__init__.py").write_text("")
    result = run(tmp_path)
    assert result.returncode == 1
    assert "breaks the ferrule namespace package" in result.stdout
