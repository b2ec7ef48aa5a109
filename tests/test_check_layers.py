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


def test_undeclared_third_party_import_fails(tmp_path: Path) -> None:
    # ferrule-openai imported msgspec and httpx2 without declaring them.
    make_package(tmp_path, "core", "ferrule.core", ["msgspec>=0.19"], "import msgspec\n")
    make_package(
        tmp_path,
        "openai",
        "ferrule.providers.openai",
        ["ferrule-core"],
        "import msgspec\nimport httpx2.client\n",
    )
    result = run(tmp_path)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert "packages/openai/src/ferrule/providers/openai/__init__.py: imports httpx2 but" in lines[0]
    assert lines[0].endswith("ferrule-openai does not declare httpx2")
    assert lines[1].endswith("ferrule-openai does not declare msgspec")
    assert "2 layering problem(s)" in result.stdout


def test_declared_third_party_imports_pass_by_distribution_name(tmp_path: Path) -> None:
    # `yaml` is provided by PyYAML, declared in any spelling; extras count as declared.
    source = "import yaml\nfrom msgspec import Struct\n\ndef lazy():\n    import hypothesis\n"
    make_package(tmp_path, "core", "ferrule.core", ["PyYAML>=6", "msgspec[yaml]>=0.19"], source)
    pyproject = tmp_path / "packages" / "core" / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text() + '[project.optional-dependencies]\nfuzz = ["hypothesis>=6"]\n'
    )
    result = run(tmp_path)
    assert result.returncode == 0, result.stdout


def test_type_checking_and_lazy_imports_count(tmp_path: Path) -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from anyio.abc import TaskGroup\n"
        "def later():\n    import importlib\n    return importlib.import_module('opentelemetry.trace')\n"
    )
    make_package(tmp_path, "core", "ferrule.core", [], source)
    result = run(tmp_path)
    assert result.returncode == 1
    assert "imports anyio but ferrule-core does not declare anyio" in result.stdout
    assert "imports opentelemetry but ferrule-core does not declare" in result.stdout
    assert "opentelemetry-api" in result.stdout


def test_standard_library_and_ambient_modules_need_no_declaration(tmp_path: Path) -> None:
    source = (
        "import json\nimport __future__\nfrom collections.abc import Mapping\n\ndef f():\n    import trio\n"
    )
    make_package(tmp_path, "core", "ferrule.core", [], source)
    result = run(tmp_path)
    assert result.returncode == 0, result.stdout
