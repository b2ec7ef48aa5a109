"""Plan documents as Mermaid, and the committed pictures of docs/planning.md."""

from __future__ import annotations

from ferrule.planning import Catalog
from ferrule.planning import render_mermaid
from ferrule.planning import validate_plan
from tests.support.docs_pictures import render_mermaid_tool

from .conftest import ROOT
from .conftest import Recorder
from .conftest import plan
from .conftest import step


def test_steps_edges_conditions_and_bindings() -> None:
    tools = Recorder()
    catalog = Catalog(
        [tools.tool("lookup"), tools.tool("report", params={"t": {"type": "integer"}})], agentic_steps=True
    )
    doc = validate_plan(
        plan(
            step("a"),
            step(
                "b",
                "report",
                input={},
                depends_on=["a"],
                condition={"source_step": "a", "source_path": "ok", "equals": True},
                bindings=[{"source_step": "a", "source_path": "/t", "target_path": "/t"}],
                required=False,
                title="Report it",
            ),
            {
                "id": "c",
                "agent": {"prompt": "p", "tools": ["lookup"], "max_tool_calls": 1},
                "depends_on": ["a", "b"],
            },
        ),
        catalog,
    )
    assert render_mermaid(doc, title="Demo") == (
        "---\n"
        "title: Demo\n"
        "---\n"
        "flowchart TD\n"
        '    s0["a<br/>lookup"]\n'
        '    s1(["b<br/>report<br/><i>Report it</i>"])\n'
        '    s2[["c<br/>agent: lookup"]]\n'
        '    s0 -->|"if /ok = true; /t → /t"| s1\n'
        "    s0 --> s2\n"
        "    s1 --> s2\n"
    )


def test_every_label_is_escaped() -> None:
    tools = Recorder()
    catalog = Catalog([tools.tool("lookup")])
    hostile = 'x"]; click s0 "javascript:alert(1)" <b>|{}'
    doc = validate_plan(
        plan(
            step(hostile),
            step(
                "b",
                depends_on=[hostile],
                condition={"source_step": hostile, "source_path": "/a|b", "equals": '"]-->'},
                title="line\nbreak <script>",
            ),
        ),
        catalog,
    )
    text = render_mermaid(doc, title='evil"title')
    body = text.split("flowchart TD\n", 1)[1]
    for line in body.splitlines():
        label = line.split('"', 1)[1].rsplit('"', 1)[0] if '"' in line else ""
        for forbidden in ('"', "<b>", "<script>", "|", "[", "]", "{", "}", "\n"):
            assert forbidden not in label, (forbidden, line)
    assert "#34;" in text  # the quote, as a Mermaid entity
    assert "line break #60;script#62;" in text
    assert "title: evil#34;title" in text


def test_the_committed_pictures_match_the_current_plans() -> None:
    # The graph pictures need ferrule-graph, which this distribution does not depend on.
    tool = render_mermaid_tool("plan_")
    assert set(tool.PICTURES) == {"plan_household", "plan_weather"}
    assert tool.stale() == []
    for name in ("plan_household", "plan_weather"):
        svg = (ROOT / "docs" / "images" / f"{name}.svg").read_text()
        assert svg.startswith("<!-- ferrule-mermaid-sha256: ")
        assert "<svg" in svg
        mmd = (ROOT / "docs" / "images" / f"{name}.mmd").read_text()
        assert tool.recorded_digest(svg) == tool.digest(mmd)
    # A changed plan would be caught: the text of another plan does not match the household picture.
    assert tool.digest(tool.PICTURES["plan_weather"]()) != tool.recorded_digest(
        (ROOT / "docs" / "images" / "plan_household.svg").read_text()
    )
