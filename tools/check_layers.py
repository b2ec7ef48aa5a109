"""Fail if any ferrule module imports a ferrule package from its own layer or a higher one, or
imports a distribution its pyproject does not declare.

Layers (DESIGN.md): 0 core; 1 agent and providers; 2 mcp, graph, evals, realtime, ui, planning; 3 cli and
durable adapters. A distribution may import ferrule code only from its own layer or lower ones, and every
ferrule distribution it imports must be among its declared dependencies. Within layer 1 the agent and
the providers never import each other: they meet only in the core model contract (a provider package
may build on another provider package, as ferrule-llamacpp builds on ferrule-openai).

Every third-party module a distribution's sources import (anywhere: lazily, or only under
`if TYPE_CHECKING:`) must come from a distribution among its dependencies or optional extras. The
standard library is exempt, and so are the few modules in `AMBIENT`, each with its reason. Import
names are mapped to distributions through the packages installed in the running environment (`yaml`
is PyYAML); a module no installed distribution provides is taken to be its own distribution name.

Usage: `python tools/check_layers.py [REPO]`; prints one line per violation and exits 1 if any.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

LAYERS: dict[str, int] = {
    "ferrule.core": 0,
    "ferrule.agent": 1,
    "ferrule.providers": 1,
    "ferrule.mcp": 2,
    "ferrule.graph": 2,
    "ferrule.evals": 2,
    "ferrule.realtime": 2,
    "ferrule.ui": 2,
    "ferrule.planning": 2,
    "ferrule.cli": 3,
    "ferrule.durable": 3,
}


def component(module: str) -> str | None:
    """The import root a module belongs to: `ferrule.core`, or `ferrule.providers.openai`."""
    parts = module.split(".")
    if len(parts) < 2 or parts[0] != "ferrule":
        return None
    if parts[1] in ("providers", "durable"):
        return ".".join(parts[:3]) if len(parts) >= 3 else None
    return ".".join(parts[:2])


def layer(comp: str) -> int | None:
    """The layer of an import root, or `None` if unknown."""
    parts = comp.split(".")
    return LAYERS.get(".".join(parts[:2]))


def _agent_provider_pair(own: str, target: str) -> bool:
    kinds = {own.split(".")[1], target.split(".")[1]}
    return kinds == {"agent", "providers"}


def imported_modules(path: Path) -> set[str]:
    """Absolute module names imported anywhere in a file (lazy imports included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", None) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.add(node.args[0].value)
    return found


AMBIENT: dict[str, str] = {
    "trio": "imported only inside a running trio event loop, so the application has installed it",
}
"""Third-party modules imported without being declared, each with the reason that is safe."""


def normalize(name: str) -> str:
    """A distribution name in its PEP 503 normal form (`PyYAML` and `pyyaml` are one distribution)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _dist_name(requirement: str) -> str:
    return normalize(re.split(r"[\s<>=!~\[;@]", requirement.strip(), maxsplit=1)[0])


def providers_of(top: str, installed: Mapping[str, Sequence[str]]) -> set[str]:
    """The distributions that may provide the top-level module `top`."""
    return {normalize(d) for d in installed.get(top, ())} or {normalize(top)}


def _declared(meta: Mapping[str, Any]) -> set[str]:
    """Every distribution a pyproject's `[project]` table depends on, optional extras included."""
    requirements: list[str] = list(meta.get("dependencies", []))
    for extra in meta.get("optional-dependencies", {}).values():
        requirements.extend(extra)
    return {_dist_name(r) for r in requirements}


def check(repo: Path, installed: Mapping[str, Sequence[str]] | None = None) -> list[str]:
    """Return every violation as a readable line; `installed` maps import names to distributions."""
    if installed is None:
        installed = importlib.metadata.packages_distributions()
    problems: list[str] = []
    roots: dict[str, str] = {}  # import root -> distribution
    packages: list[tuple[Path, str, set[str]]] = []
    for pyproject in sorted(repo.glob("packages/*/pyproject.toml")):
        meta = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
        dist = normalize(str(meta.get("name", "")))
        deps = _declared(meta)
        packages.append((pyproject.parent, dist, deps))
        src = pyproject.parent / "src"
        if (src / "ferrule" / "__init__.py").exists():
            problems.append(f"{src / 'ferrule' / '__init__.py'}: breaks the ferrule namespace package")
        for init in src.rglob("*.py"):
            rel = init.relative_to(src).with_suffix("")
            comp = component(".".join(rel.parts))
            if comp is not None:
                roots.setdefault(comp, dist)
    for folder, dist, deps in packages:
        for path in sorted((folder / "src").rglob("*.py")):
            own = component(".".join(path.relative_to(folder / "src").with_suffix("").parts))
            if own is None:
                continue
            own_layer = layer(own)
            imports = imported_modules(path)
            problems.extend(_undeclared_third_party(repo, path, imports, dist, deps, installed))
            for module in imports:
                comp = component(module)
                if comp is None or comp == own or comp not in roots:
                    continue
                target_layer = layer(comp)
                if own_layer is not None and target_layer is not None and target_layer > own_layer:
                    problems.append(
                        f"{path.relative_to(repo)}: imports {module} (layer {target_layer}) from layer {own_layer}"
                    )
                if _agent_provider_pair(own, comp):
                    problems.append(
                        f"{path.relative_to(repo)}: imports {module}; the agent and providers meet only in ferrule.core"
                    )
                target_dist = roots[comp]
                if target_dist != dist and target_dist not in deps:
                    problems.append(
                        f"{path.relative_to(repo)}: imports {module} but {dist} does not declare {target_dist}"
                    )
    return problems


def _undeclared_third_party(
    repo: Path,
    path: Path,
    imports: set[str],
    dist: str,
    deps: set[str],
    installed: Mapping[str, Sequence[str]],
) -> list[str]:
    problems: list[str] = []
    for top in sorted({module.split(".", 1)[0] for module in imports}):
        if top == "ferrule" or top in sys.stdlib_module_names or top in AMBIENT:
            continue
        providers = providers_of(top, installed)
        if dist not in providers and not providers & deps:
            wanted = " or ".join(sorted(providers))
            problems.append(f"{path.relative_to(repo)}: imports {top} but {dist} does not declare {wanted}")
    return problems


def main(argv: list[str]) -> int:
    repo = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[1]
    problems = check(repo)
    for line in problems:
        print(line)
    if problems:
        print(f"{len(problems)} layering problem(s)")
        return 1
    print("layers ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
