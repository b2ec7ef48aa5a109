"""Render the example graphs of the docs to SVG with a real Mermaid renderer (mermaid-cli).

    hatch run docs-graphs              # npm ci in tools/docs, then render every graph
    python tools/docs/render_graphs.py          # render (needs `npm ci` in tools/docs first)
    python tools/docs/render_graphs.py --check  # exit 1 if a committed picture is out of date

For each graph this writes `docs/images/<name>.mmd` (the Mermaid text from `graph.render_mermaid()`)
and `docs/images/<name>.svg`, rendered by `@mermaid-js/mermaid-cli` (pinned in
tools/docs/package.json) in Debian's Chromium (`tools/docs/puppeteer-config.json`). The SVG carries
the SHA-256 of the text it was rendered from, so a test can tell a stale picture without rendering.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "tools" / "docs"
IMAGES = ROOT / "docs" / "images"
MARKER = "ferrule-mermaid-sha256:"


def _example(name: str) -> ModuleType:
    path = ROOT / "docs" / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"docs_example_{name}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _graph_review() -> str:
    return _example("graph_review").build_graph(None).render_mermaid(title="draft, critique, revise")


GRAPHS: dict[str, Callable[[], str]] = {"graph_review": _graph_review}
"""Every picture: its file name and the function producing its Mermaid text."""


def digest(text: str) -> str:
    """The SHA-256 an SVG records for the Mermaid text it was rendered from."""
    return hashlib.sha256(text.encode()).hexdigest()


def recorded_digest(svg: str) -> str | None:
    """The digest recorded in a rendered SVG, if any."""
    start = svg.find(MARKER)
    if start < 0:
        return None
    return svg[start + len(MARKER) :].split("-->", 1)[0].strip()


def render(text: str, svg: Path) -> None:
    """Render Mermaid text to an SVG file and record the text's digest in it."""
    mmdc = TOOLS / "node_modules" / ".bin" / "mmdc"
    if not mmdc.exists():
        raise SystemExit(
            "mermaid-cli is not installed: run `PUPPETEER_SKIP_DOWNLOAD=1 npm ci --prefix tools/docs` "
            "(it uses Debian's /usr/bin/chromium, see tools/docs/puppeteer-config.json)"
        )
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "graph.mmd"
        source.write_text(text)
        out = Path(tmp) / "graph.svg"
        subprocess.run(
            [
                str(mmdc),
                "-q",
                "-p",
                str(TOOLS / "puppeteer-config.json"),
                "-b",
                "white",
                "-i",
                str(source),
                "-o",
                str(out),
            ],
            check=True,
            timeout=300,
        )
        rendered = out.read_text()
    svg.write_text(f"<!-- {MARKER} {digest(text)} -->\n{rendered}")


def stale() -> list[str]:
    """The pictures whose committed text or SVG does not match the current graphs."""
    problems: list[str] = []
    for name, produce in GRAPHS.items():
        text = produce()
        mmd, svg = IMAGES / f"{name}.mmd", IMAGES / f"{name}.svg"
        if not mmd.exists() or mmd.read_text() != text:
            problems.append(f"docs/images/{mmd.name} differs from the graph's render_mermaid()")
        if not svg.exists() or recorded_digest(svg.read_text()) != digest(text):
            problems.append(f"docs/images/{svg.name} was not rendered from the current Mermaid text")
    return problems


def main(argv: list[str] | None = None) -> int:
    """Render (or with `--check`, verify) every picture; returns the exit status."""
    parser = argparse.ArgumentParser(description="Render the docs' graph pictures with mermaid-cli.")
    parser.add_argument("--check", action="store_true", help="only check that the pictures are up to date")
    args = parser.parse_args(argv)
    if args.check:
        problems = stale()
        for problem in problems:
            print(problem, file=sys.stderr)
        if problems:
            print("run `hatch run docs-graphs` and commit docs/images/", file=sys.stderr)
        return 1 if problems else 0
    IMAGES.mkdir(parents=True, exist_ok=True)
    for name, produce in GRAPHS.items():
        text = produce()
        (IMAGES / f"{name}.mmd").write_text(text)
        render(text, IMAGES / f"{name}.svg")
        print(f"docs/images/{name}.svg")
    return 0


if __name__ == "__main__":
    sys.exit(main())
