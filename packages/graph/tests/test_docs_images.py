"""The committed pictures in docs/images were rendered from the graphs as they are now."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.docs_pictures import render_mermaid_tool


def test_committed_pictures_match_the_current_mermaid_text() -> None:
    # The plan pictures need ferrule-planning, which this distribution does not depend on.
    tool = render_mermaid_tool("graph_")
    assert tool.stale() == [], "run `hatch run docs-graphs` and commit docs/images/"


def test_the_check_notices_a_changed_graph(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool = render_mermaid_tool("graph_")
    monkeypatch.setattr(tool, "IMAGES", tmp_path)
    name = "graph_review"
    text = tool.PICTURES[name]()
    (tmp_path / f"{name}.mmd").write_text(text)
    (tmp_path / f"{name}.svg").write_text(f"<!-- {tool.MARKER} {tool.digest(text)} -->\n<svg/>")
    assert tool.stale() == []
    (tmp_path / f"{name}.svg").write_text(f"<!-- {tool.MARKER} {tool.digest(text + ' ')} -->\n<svg/>")
    assert len(tool.stale()) == 1
    (tmp_path / f"{name}.mmd").write_text(text.replace("revise", "rework"))
    assert len(tool.stale()) == 2
