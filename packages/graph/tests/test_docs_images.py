"""The committed pictures in docs/images were rendered from the graphs as they are now."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "tools" / "docs" / "render_mermaid.py"

pytestmark = pytest.mark.skipif(not SCRIPT.exists(), reason="tools/ is not part of this checkout")


def _render_mermaid() -> Any:
    spec = importlib.util.spec_from_file_location("render_mermaid", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _graphs_only(tool: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # The plan pictures need ferrule-planning, which this distribution does not depend on.
    graphs = {name: produce for name, produce in tool.PICTURES.items() if name.startswith("graph_")}
    assert graphs
    monkeypatch.setattr(tool, "PICTURES", graphs)


def test_committed_pictures_match_the_current_mermaid_text(monkeypatch: pytest.MonkeyPatch) -> None:
    tool = _render_mermaid()
    _graphs_only(tool, monkeypatch)
    assert tool.stale() == [], "run `hatch run docs-graphs` and commit docs/images/"


def test_the_check_notices_a_changed_graph(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool = _render_mermaid()
    monkeypatch.setattr(tool, "IMAGES", tmp_path)
    _graphs_only(tool, monkeypatch)
    name = "graph_review"
    text = tool.PICTURES[name]()
    (tmp_path / f"{name}.mmd").write_text(text)
    (tmp_path / f"{name}.svg").write_text(f"<!-- {tool.MARKER} {tool.digest(text)} -->\n<svg/>")
    assert tool.stale() == []
    (tmp_path / f"{name}.svg").write_text(f"<!-- {tool.MARKER} {tool.digest(text + ' ')} -->\n<svg/>")
    assert len(tool.stale()) == 1
    (tmp_path / f"{name}.mmd").write_text(text.replace("revise", "rework"))
    assert len(tool.stale()) == 2
