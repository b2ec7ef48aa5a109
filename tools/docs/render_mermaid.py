"""Render the Mermaid pictures of the docs (graphs and plans) to SVG with a real renderer (mermaid-cli).

    hatch run docs-graphs                          # npm ci in tools/docs, then render every picture
    python tools/docs/render_mermaid.py            # render (needs `npm ci` in tools/docs first)
    python tools/docs/render_mermaid.py --check    # exit 1 if a committed picture is out of date

Each picture is drawn from an example of docs/examples/: a graph by `Graph.render_mermaid` (docs/graph.md)
or a plan document by `ferrule.planning.render_mermaid` (docs/planning.md). `docs/images/<name>.mmd`
holds the Mermaid text and `docs/images/<name>.svg` the picture rendered from it by
`@mermaid-js/mermaid-cli` (pinned in tools/docs/package.json) in Debian's Chromium
(tools/docs/puppeteer-config.json). The SVG records the SHA-256 of the text it was rendered from
(`<!-- ferrule-mermaid-sha256: ... -->`), so a test can tell a stale picture without rendering.
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


def _household() -> str:
    from ferrule.planning import render_mermaid

    return render_mermaid(_example("plan_household").reference_plan(), title="Weekend household plan")


def _weather() -> str:
    from ferrule.planning import render_mermaid
    from ferrule.planning import validate_plan

    example = _example("plan_weather")
    agent = example.build_agent("test:planner")
    document = validate_plan(
        {"version": 1, "steps": example.plan_for("Shenzhen", "weather_backup")}, agent.catalog
    )
    return render_mermaid(document, title="Tonight in Shenzhen")


PICTURES: dict[str, Callable[[], str]] = {
    "graph_review": _graph_review,
    "plan_household": _household,
    "plan_weather": _weather,
}
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
        source, out = Path(tmp) / "picture.mmd", Path(tmp) / "picture.svg"
        source.write_text(text)
        command = [str(mmdc), "-q", "-p", str(TOOLS / "puppeteer-config.json"), "-b", "white"]
        subprocess.run([*command, "-i", str(source), "-o", str(out)], check=True, timeout=300)
        rendered = out.read_text()
    svg.write_text(f"<!-- {MARKER} {digest(text)} -->\n{rendered}")


def stale() -> list[str]:
    """The pictures whose committed text or SVG does not match the current examples."""
    problems: list[str] = []
    for name, produce in PICTURES.items():
        text = produce()
        mmd, svg = IMAGES / f"{name}.mmd", IMAGES / f"{name}.svg"
        if not mmd.exists() or mmd.read_text() != text:
            problems.append(f"docs/images/{mmd.name} differs from render_mermaid() of its example")
        if not svg.exists() or recorded_digest(svg.read_text()) != digest(text):
            problems.append(f"docs/images/{svg.name} was not rendered from the current Mermaid text")
    return problems


def main(argv: list[str] | None = None) -> int:
    """Render (or with `--check`, verify) every picture; returns the exit status."""
    parser = argparse.ArgumentParser(description="Render the docs' Mermaid pictures with mermaid-cli.")
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
    for name, produce in PICTURES.items():
        text = produce()
        (IMAGES / f"{name}.mmd").write_text(text)
        render(text, IMAGES / f"{name}.svg")
        print(f"docs/images/{name}.svg")
    return 0


if __name__ == "__main__":
    sys.exit(main())
