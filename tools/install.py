"""Install ferrule distributions from this checkout, with the sibling distributions they need.

No ferrule distribution is on a package index yet, so `pip install packages/ferrule` fails: pip looks
for `ferrule-core` and `ferrule-agent` on PyPI and finds nothing. This tool reads every
`packages/*/pyproject.toml`, follows the ferrule dependencies (and the extras that bring more of
them) of what you asked for, and runs ONE `pip install` that names each of those distributions by its
folder; everything else (msgspec, httpx2, ...) comes from your package index as usual.

    python tools/install.py 'ferrule[openai]'                 # ferrule-core, -agent, -openai, ferrule
    python tools/install.py 'ferrule[openai,mcp]' --editable  # the same plus ferrule-mcp, editable
    python tools/install.py ferrule-agent ferrule-openai      # distributions by name
    python tools/install.py openai 'llamacpp[server]'         # or by folder name under packages/
    python tools/install.py packages/core packages/agent      # or by the folder's path
    python tools/install.py --dry-run 'ferrule[all]'          # print the command, run nothing

It installs into the Python that runs it (an activated virtual environment, or `--python PATH`).
`--uv` runs `uv pip install` instead of `python -m pip install` (environments made by uv have no
pip); it also passes `--reinstall-package` for each ferrule distribution, so each run installs what
the checkout holds now whatever uv has cached or installed before. Arguments after `--` go to the installer as
they are. Exit status: the installer's, or 2 for a request this tool refuses (an unknown
distribution or extra), with the reason on stderr. It needs nothing but the standard library.
"""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
"""The checkout this file belongs to."""

_REQUIREMENT = re.compile(
    r"""^\s*(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*
    (?:\[(?P<extras>[^\]]*)\])?\s*(?P<rest>[^;]*?)\s*(?:;(?P<marker>.*))?$""",
    re.X,
)


class InstallError(Exception):
    """A request this tool refuses, with what to do instead."""


@dataclass(frozen=True)
class Requirement:
    """The parts of a PEP 508 requirement this tool needs."""

    name: str
    """The normalized (PEP 503) distribution name."""
    extras: frozenset[str] = frozenset()
    """Requested extras, normalized."""
    marker: str | None = None
    """The environment marker, if any."""


@dataclass(frozen=True)
class Distribution:
    """One ferrule distribution of the checkout."""

    name: str
    """Its normalized name, e.g. `ferrule-openai`."""
    folder: Path
    """Its folder, `packages/<name>`."""
    dependencies: tuple[Requirement, ...]
    """Its unconditional requirements."""
    extras: Mapping[str, tuple[Requirement, ...]] = field(default_factory=dict[str, tuple[Requirement, ...]])
    """The requirements of each extra, by normalized extra name."""


def normalize(name: str) -> str:
    """A distribution or extra name in its PEP 503 form: lower case, runs of `-_.` as one `-`."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_requirement(text: str) -> Requirement:
    """The name, extras and marker of a requirement string; raises `InstallError` if it is none."""
    match = _REQUIREMENT.match(text)
    if match is None or "@" in match["rest"]:
        raise InstallError(f"{text!r} is not a requirement of the form NAME or NAME[EXTRA,...]")
    extras = frozenset(normalize(e.strip()) for e in (match["extras"] or "").split(",") if e.strip())
    marker = match["marker"].strip() if match["marker"] else None
    return Requirement(normalize(match["name"]), extras, marker)


def discover(root: Path) -> dict[str, Distribution]:
    """Every distribution under `root/packages`, by normalized name."""
    found: dict[str, Distribution] = {}
    for pyproject in sorted((root / "packages").glob("*/pyproject.toml")):
        project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
        extras = {
            normalize(extra): tuple(parse_requirement(r) for r in requirements)
            for extra, requirements in project.get("optional-dependencies", {}).items()
        }
        dist = Distribution(
            name=normalize(project["name"]),
            folder=pyproject.parent,
            dependencies=tuple(parse_requirement(r) for r in project.get("dependencies", [])),
            extras=extras,
        )
        found[dist.name] = dist
    return found


def _lookup(requested: Requirement, dists: Mapping[str, Distribution]) -> Distribution:
    dist = dists.get(requested.name)
    if dist is None:  # a folder name: `openai` for packages/openai
        dist = next((d for d in dists.values() if normalize(d.folder.name) == requested.name), None)
    if dist is None:
        known = ", ".join(sorted(dists))
        raise InstallError(
            f"{requested.name!r} is not a ferrule distribution of this checkout; known: {known} "
            "(other packages come from your package index: install them with pip itself)"
        )
    return dist


def _request(text: str, dists: Mapping[str, Distribution]) -> Requirement:
    """A command-line request: a requirement, or a package folder's path (`packages/core[extra]`)."""
    path, bracket, extras = text.strip().partition("[")
    if "@" in text or ("/" not in path and "\\" not in path):
        return parse_requirement(text)
    folder = Path(path).resolve()
    for dist in dists.values():
        if dist.folder.resolve() == folder:
            return parse_requirement(dist.name + bracket + extras)
    raise InstallError(
        f"{path!r} is not the folder of a ferrule distribution of this checkout (packages/NAME)"
    )


def resolve(requests: Iterable[str], dists: Mapping[str, Distribution]) -> dict[str, frozenset[str]]:
    """The ferrule distributions to install for `requests`, each with the extras it needs.

    Follows the dependencies of every distribution reached and of every extra asked of it,
    transitively; requirements that are not ferrule distributions are left to the installer.
    Raises `InstallError` for an unknown distribution or extra, and for a sibling requirement with
    an environment marker (this tool does not evaluate markers, and would otherwise install it
    unconditionally).
    """
    selected: dict[str, set[str]] = {}
    pending = [(_request(text, dists), "the command line") for text in requests]
    while pending:
        requirement, wanted_by = pending.pop()
        dist = _lookup(requirement, dists)
        if requirement.marker is not None:
            raise InstallError(
                f"{wanted_by} requires {dist.name} only when {requirement.marker!r}; tools/install.py "
                "does not evaluate environment markers: drop the marker or install it by hand"
            )
        unknown = requirement.extras - dist.extras.keys()
        if unknown:
            known = ", ".join(sorted(dist.extras)) or "none"
            raise InstallError(
                f"{dist.name} has no extra {', '.join(sorted(unknown))} (wanted by {wanted_by}); "
                f"its extras: {known}"
            )
        first_visit = dist.name not in selected
        extras = selected.setdefault(dist.name, set())
        new_extras = requirement.extras - extras
        extras |= new_extras
        follow = [
            *(dist.dependencies if first_visit else ()),
            *(r for e in new_extras for r in dist.extras[e]),
        ]
        for dependency in follow:
            if dependency.name in dists:
                pending.append((dependency, dist.name))
    return {name: frozenset(selected[name]) for name in sorted(selected)}


def install_arguments(
    selected: Mapping[str, frozenset[str]], dists: Mapping[str, Distribution], *, editable: bool
) -> list[str]:
    """The installer's arguments naming each selected distribution by its folder."""
    arguments: list[str] = []
    for name, extras in selected.items():
        folder = dists[name].folder.resolve()
        suffix = f"[{','.join(sorted(extras))}]" if extras else ""
        if editable:
            arguments += ["-e", f"{folder}{suffix}"]
        else:
            # A direct reference, so the name (and any extras) is checked against the folder's metadata.
            arguments.append(f"{name}{suffix} @ {folder.as_uri()}")
    return arguments


def command(
    selected: Mapping[str, frozenset[str]],
    dists: Mapping[str, Distribution],
    *,
    python: str,
    editable: bool = False,
    uv: bool = False,
    extra_args: Sequence[str] = (),
) -> list[str]:
    """The whole install command line."""
    if uv:
        reinstall = [arg for name in selected for arg in ("--reinstall-package", name)]
        head = [shutil.which("uv") or "uv", "pip", "install", "--python", python, *reinstall]
    else:
        head = [python, "-m", "pip", "install"]
    return [*head, *extra_args, *install_arguments(selected, dists, editable=editable)]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the tool; returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    extra_args: list[str] = []
    if "--" in args:
        at = args.index("--")
        args, extra_args = args[:at], args[at + 1 :]
    parser = argparse.ArgumentParser(
        prog="tools/install.py",
        description="Install ferrule distributions from this checkout, with the sibling distributions they need.",
    )
    parser.add_argument("requirements", nargs="+", metavar="REQUIREMENT", help="e.g. 'ferrule[openai,mcp]'")
    parser.add_argument("-e", "--editable", action="store_true", help="editable installs of the folders")
    parser.add_argument("--uv", action="store_true", help="run `uv pip install` instead of pip")
    parser.add_argument("--python", default=sys.executable, help="the interpreter to install into")
    parser.add_argument("--dry-run", action="store_true", help="print the command instead of running it")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    options = parser.parse_args(args)
    try:
        dists = discover(options.root)
        selected = resolve(options.requirements, dists)
    except InstallError as error:
        print(f"tools/install.py: {error}", file=sys.stderr)
        return 2
    line = command(
        selected,
        dists,
        python=options.python,
        editable=options.editable,
        uv=options.uv,
        extra_args=extra_args,
    )
    if options.dry_run:
        print(shlex.join(line))
        return 0
    print(f"installing {', '.join(selected)} from {options.root}", file=sys.stderr)
    return subprocess.run(line, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
