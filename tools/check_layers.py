"""Fail if any ferrule module imports a ferrule package from its own layer or a higher one.

Layers (DESIGN.md): 0 core; 1 agent and providers; 2 mcp, graph, evals, realtime, ui, planning; 3 cli and
durable adapters. A distribution may import ferrule code only from its own layer or lower ones, and every
ferrule distribution it imports must be among its declared dependencies. Within layer 1 the agent and
the providers never import each other: they meet only in the core model contract (a provider package
may build on another provider package, as ferrule-llamacpp builds on ferrule-openai).

Usage: `python tools/check_layers.py [REPO]`; prints one line per violation and exits 1 if any.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

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


def _dist_name(requirement: str) -> str:
    return re.split(r"[\s<>=!~\[;@]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def check(repo: Path) -> list[str]:
    """Return every violation as a readable line."""
    problems: list[str] = []
    roots: dict[str, str] = {}  # import root -> distribution
    packages: list[tuple[Path, str, set[str]]] = []
    for pyproject in sorted(repo.glob("packages/*/pyproject.toml")):
        meta = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
        dist = str(meta.get("name", "")).lower()
        deps = {_dist_name(d) for d in meta.get("dependencies", [])}
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
            for module in imported_modules(path):
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
