"""The layering check fails on upward, sideways (agent <-> provider) and undeclared imports, and on
module cycles inside a distribution (load-time, lazy and type-only ones)."""

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


def add_module(root: Path, package: str, module: str, source: str) -> None:
    path = root / "packages" / package / "src" / Path(*module.split("."))
    path.with_suffix(".py").write_text(source)


def test_type_only_cycle_fails(tmp_path: Path) -> None:
    make_package(tmp_path, "core", "ferrule.core", [], "")
    add_module(
        tmp_path,
        "core",
        "ferrule.core.low",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .high import H\n",
    )
    add_module(tmp_path, "core", "ferrule.core.high", "from ferrule.core.low import L\n")
    result = run(tmp_path)
    assert result.returncode == 1
    assert (
        "packages/core: import cycle ferrule.core.high -> ferrule.core.low -[type]-> ferrule.core.high;"
        in result.stdout
    )


def test_lazy_cycle_through_three_modules_fails(tmp_path: Path) -> None:
    make_package(tmp_path, "core", "ferrule.core", [], "")
    add_module(tmp_path, "core", "ferrule.core.a", "from . import b\n")
    add_module(tmp_path, "core", "ferrule.core.b", "from .c import C\n")
    add_module(tmp_path, "core", "ferrule.core.c", "def f():\n    from .a import A\n")
    result = run(tmp_path)
    assert result.returncode == 1
    assert (
        "import cycle ferrule.core.a -> ferrule.core.b -> ferrule.core.c -[lazy]-> ferrule.core.a;"
        in result.stdout
    )


def test_load_time_cycle_fails_as_such(tmp_path: Path) -> None:
    make_package(tmp_path, "agent", "ferrule.agent", [], "")
    add_module(tmp_path, "agent", "ferrule.agent._run", "from ._ext import Ext\n")
    add_module(tmp_path, "agent", "ferrule.agent._ext", "import ferrule.agent._run\n")
    result = run(tmp_path)
    assert result.returncode == 1
    assert (
        "packages/agent: modules import each other at load time: "
        "ferrule.agent._ext -> ferrule.agent._run -> ferrule.agent._ext" in result.stdout
    )


def test_a_protocol_module_breaks_the_cycle(tmp_path: Path) -> None:
    # The low module names a protocol instead of the high module's class: a layered order.
    make_package(tmp_path, "core", "ferrule.core", [], "")
    add_module(
        tmp_path, "core", "ferrule.core._protocols", "from typing import Protocol\nclass P(Protocol): ...\n"
    )
    add_module(tmp_path, "core", "ferrule.core.low", "from ._protocols import P\n")
    add_module(tmp_path, "core", "ferrule.core.high", "from .low import L\nfrom ._protocols import P\n")
    result = run(tmp_path)
    assert result.returncode == 0, result.stdout


def test_a_package_importing_its_submodules_is_no_cycle(tmp_path: Path) -> None:
    # `__init__` re-exports its submodules; a submodule importing a sibling does not import `__init__`.
    make_package(tmp_path, "core", "ferrule.core", [], "from .a import A\nfrom .b import B\n")
    add_module(tmp_path, "core", "ferrule.core.a", "A = 1\n")
    add_module(tmp_path, "core", "ferrule.core.b", "from ferrule.core.a import A\nB = A\n")
    result = run(tmp_path)
    assert result.returncode == 0, result.stdout
    # ... but a submodule that takes a name from the package itself closes a cycle through it.
    add_module(tmp_path, "core", "ferrule.core.a", "from ferrule.core import B\nA = 1\n")
    result = run(tmp_path)
    assert result.returncode == 1
    assert (
        "modules import each other at load time: ferrule.core -> ferrule.core.a -> ferrule.core"
        in result.stdout
    )


def test_the_repository_has_no_module_cycle() -> None:
    result = run(REPO)
    assert "import cycle" not in result.stdout
    assert "at load time" not in result.stdout
    assert result.returncode == 0, result.stdout


def test_a_cycle_message_names_every_module_of_the_circle(tmp_path: Path) -> None:
    make_package(tmp_path, "core", "ferrule.core", [], "")
    add_module(tmp_path, "core", "ferrule.core.a", "from .b import B\nfrom .c import C\n")
    add_module(tmp_path, "core", "ferrule.core.b", "def f():\n    from .a import A\n")
    add_module(tmp_path, "core", "ferrule.core.c", "def f():\n    from .a import A\n")
    result = run(tmp_path)
    assert result.returncode == 1
    assert "(the circle joins ferrule.core.a, ferrule.core.b, ferrule.core.c)" in result.stdout
