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

Within each distribution the modules form a layered order: no module cycle, counting every import
(at load time, lazily inside a function, or only under `if TYPE_CHECKING:`), so a lower module never
names a higher one, not even for a type (a low module that must describe a higher one's object
names a small protocol instead). Every cycle fails, load-time or lazy or type-only; there is no
allowlist.

Usage: `python tools/check_layers.py [REPO]`; prints one line per violation and exits 1 if any.
"""

from __future__ import annotations

import ast
import importlib.metadata
import itertools
import re
import sys
import tomllib
from collections.abc import Mapping
from collections.abc import Sequence
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


ImportKind = str
"""`load`: runs when the module loads; `lazy`: inside a function; `type`: under `if TYPE_CHECKING:`."""


def _source_modules(src: Path) -> dict[str, Path]:
    """Every module of one distribution's `src` folder by dotted name (a package by its own name)."""
    found: dict[str, Path] = {}
    for path in sorted(src.rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports_with_kind(tree: ast.Module) -> list[tuple[ast.Import | ast.ImportFrom, ImportKind]]:
    """Every import statement of a module with where it runs."""
    found: list[tuple[ast.Import | ast.ImportFrom, ImportKind]] = []

    def visit(node: ast.AST, kind: ImportKind) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append((child, kind))
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(child, "type" if kind == "type" else "lazy")
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                for statement in child.body:
                    visit_statement(statement, "type")
                for statement in child.orelse:
                    visit_statement(statement, kind)
            else:
                visit(child, kind)

    def visit_statement(statement: ast.stmt, kind: ImportKind) -> None:
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            found.append((statement, kind))
        else:
            visit(statement, kind)

    visit(tree, "load")
    return found


def module_graph(src: Path) -> dict[str, dict[str, ImportKind]]:
    """The imports between one distribution's own modules: `graph[a][b]` is how `a` imports `b`
    (`load` when any import of it runs at load time, else `lazy`, else `type`)."""
    modules = _source_modules(src)
    rank = {"type": 0, "lazy": 1, "load": 2}
    graph: dict[str, dict[str, ImportKind]] = {name: {} for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node, kind in _imports_with_kind(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    pieces = package.split(".")
                    pieces = pieces[: len(pieces) - (node.level - 1)]
                    base = ".".join([*pieces, *([node.module] if node.module else [])])
                for alias in node.names:
                    # `from pkg import sub` imports the submodule; `from mod import name` the module.
                    targets.append(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
            for target in targets:
                if target in modules and target != name:
                    previous = graph[name].get(target)
                    if previous is None or rank[kind] > rank[previous]:
                        graph[name][target] = kind
    return graph


def cycles(graph: Mapping[str, Mapping[str, ImportKind]]) -> list[list[str]]:
    """The strongly connected components of more than one module, each sorted (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def connect(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


def _cycle_path(graph: Mapping[str, Mapping[str, ImportKind]], members: list[str]) -> list[str]:
    """A shortest closed path through a component, from its first module back to it (for the message)."""
    inside = set(members)
    start = members[0]
    parent: dict[str, str] = {start: start}
    queue = [start]
    for node in queue:  # breadth first: the queue grows while it is walked
        for target in sorted(graph[node]):
            if target == start:
                path = [node]
                while path[-1] != start:
                    path.append(parent[path[-1]])
                return [*reversed(path), start]
            if target in inside and target not in parent:
                parent[target] = node
                queue.append(target)
    raise AssertionError(f"{members} is not a cycle")  # pragma: no cover - Tarjan found one


def check_cycles(repo: Path) -> list[str]:
    """Every module cycle in the repository's distributions, as readable lines."""
    problems: list[str] = []
    for pyproject in sorted(repo.glob("packages/*/pyproject.toml")):
        src = pyproject.parent / "src"
        graph = module_graph(src)
        load_only = {
            name: {t: k for t, k in targets.items() if k == "load"} for name, targets in graph.items()
        }
        load_cycles = [frozenset(c) for c in cycles(load_only)]
        for members in cycles(graph):
            key = frozenset(members)
            where = pyproject.parent.relative_to(repo)
            loading = [c for c in load_cycles if c <= key]
            if loading:
                cycle = _cycle_path(load_only, sorted(loading[0]))
                problems.append(f"{where}: modules import each other at load time: {' -> '.join(cycle)}")
                continue
            path = _cycle_path(graph, members)
            steps = "".join(
                f"{a} -> " if graph[a][b] == "load" else f"{a} -[{graph[a][b]}]-> "
                for a, b in itertools.pairwise(path)
            )
            joined = f" (the circle joins {', '.join(members)})" if len(members) > len(path) - 1 else ""
            problems.append(
                f"{where}: import cycle {steps}{path[-1]}{joined}; a lower module must not name a higher "
                "one, even for types (pass what it needs, or name a small protocol)"
            )
    return problems


def main(argv: list[str]) -> int:
    repo = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[1]
    problems = check(repo) + check_cycles(repo)
    for line in problems:
        print(line)
    if problems:
        print(f"{len(problems)} layering problem(s)")
        return 1
    print("layers ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
