"""The committed pictures in docs/images were rendered from the graphs as they are now."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "tools" / "docs" / "render_graphs.py"

pytestmark = pytest.mark.skipif(not SCRIPT.exists(), reason="tools/ is not part of this checkout")


def _render_graphs():
    spec = importlib.util.spec_from_file_location("render_graphs", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_pictures_match_the_current_mermaid_text() -> None:
    tool = _render_graphs()
    assert tool.stale() == [], "run `hatch run docs-graphs` and commit docs/images/"


def test_the_check_notices_a_changed_graph(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool = _render_graphs()
    monkeypatch.setattr(tool, "IMAGES", tmp_path)
    name = next(iter(tool.GRAPHS))
    text = tool.GRAPHS[name]()
    (tmp_path / f"{name}.mmd").write_text(text)
    (tmp_path / f"{name}.svg").write_text(f"<!-- {tool.MARKER} {tool.digest(text)} -->\n<svg/>")
    assert tool.stale() == []
    (tmp_path / f"{name}.svg").write_text(f"<!-- {tool.MARKER} {tool.digest(text + ' ')} -->\n<svg/>")
    assert len(tool.stale()) == 1
    (tmp_path / f"{name}.mmd").write_text(text.replace("revise", "rework"))
    assert len(tool.stale()) == 2
