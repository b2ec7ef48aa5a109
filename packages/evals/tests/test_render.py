"""The terminal table, the progress bar, the HTML page's content and the lazy imports."""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap
from html.parser import HTMLParser
from typing import Any

import pytest
from rich.console import Console

from ferrule.core.usage import RunUsage
from ferrule.evals import Case
from ferrule.evals import CaseResult
from ferrule.evals import Dataset
from ferrule.evals import EvalEvent
from ferrule.evals import EvaluationResult
from ferrule.evals import ExecutionOptions
from ferrule.evals import Report
from ferrule.evals import ReportCase
from ferrule.evals import compare_reports
from ferrule.evals import evaluator
from ferrule.evals._progress import Progress

pytestmark = pytest.mark.anyio


def sample_report(hostile: str = "[bold]x[/bold] <script>alert(1)</script>") -> Report:
    def result(index: int, repetition: int, passed: bool, score: float, cost: int | None) -> CaseResult:
        return CaseResult(
            case_index=index,
            case_name=["plain", hostile][index],
            repetition=repetition,
            repetitions=2,
            task_attempts=1 if passed else 2,
            output=hostile,
            usage=RunUsage(input_tokens=1200, output_tokens=34, requests=1, cost_nano_usd=cost),
            latency_seconds=0.5,
            evaluations=(
                EvaluationResult(name="exact", passed=passed, reason=None if passed else hostile),
                EvaluationResult(name="grader", passed=passed, score=score, attempts=1 if passed else 3),
            ),
        )

    return Report(
        name="render",
        cases=(ReportCase(name="plain", inputs="a"), ReportCase(name=hostile, inputs="b")),
        evaluators=("exact", "grader"),
        trace_evaluators=(),
        report_evaluators=(),
        results=(
            result(0, 1, True, 0.9, 1500),
            result(0, 2, True, 0.8, 1500),
            result(1, 1, False, 0.25, 2500),
            result(1, 2, True, 0.75, None),
        ),
    )


def test_the_terminal_table_shows_cases_evaluators_marks_scores_tokens_cost_and_a_summary() -> None:
    text = sample_report().render_text(width=200)
    lines = text.splitlines()
    assert lines[0].strip() == "Evaluation: render"
    header = next(line for line in lines if "case" in line and "rep" in line)
    for column in ("exact", "grader", "tokens", "cost", "latency"):
        assert column in header
    rows = [line for line in lines if "1,234" in line]
    assert len(rows) == 4
    assert "✔" in rows[0]
    assert "0.900" in rows[0]
    assert "$0.000002" in rows[0]
    assert "✘" in rows[2]
    assert "(3 tries)" in rows[2]
    assert "(2 tries)" in rows[2]
    assert "?" in rows[3]  # unknown cost
    # Markup in case names is shown literally, never interpreted.
    assert "[bold]x[/bold]" in rows[2]
    summary = " ".join(lines[-3:])
    assert "4 runs, 3 passed (75.0%)" in summary
    assert "4,936 tokens" in summary
    assert "cost ?" in summary
    assert "FAILED" in summary


def test_print_writes_to_the_given_console_with_a_comparison_line() -> None:
    report = sample_report()
    buffer = io.StringIO()
    report.print(
        console=Console(file=buffer, width=220, color_system=None), comparison=compare_reports(report, report)
    )
    out = buffer.getvalue()
    assert "vs baseline: no regressions, 0 regression(s)" in out
    assert "unchanged" in out


class Cells(HTMLParser):
    """Collects the attributes of every element, and whether any script or external reference exists."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_the_html_page_is_self_contained_and_escapes_every_value() -> None:
    report = sample_report()
    page = report.html(comparison=compare_reports(report, report))
    parser = Cells()
    parser.feed(page)
    tags = {tag for tag, _ in parser.elements}
    assert "script" not in tags
    assert "link" not in tags
    assert "img" not in tags
    assert not any(k in ("src", "href") for _, attrs in parser.elements for k in attrs)
    assert "url(" not in page
    assert "@import" not in page
    meta = next(attrs for tag, attrs in parser.elements if tag == "meta" and "http-equiv" in attrs)
    assert meta["content"] is not None
    assert "default-src 'none'" in meta["content"]
    assert "<script>alert(1)</script>" in "".join(parser.text)  # shown as text, escaped in the markup
    assert "&lt;script&gt;" in page
    rows = [attrs for tag, attrs in parser.elements if tag == "tr" and attrs.get("class") == "run"]
    assert [(r["data-case-index"], r["data-repetition"], r["data-passed"]) for r in rows] == [
        ("0", "1", "true"),
        ("0", "2", "true"),
        ("1", "1", "false"),
        ("1", "2", "true"),
    ]
    charts = [attrs for tag, attrs in parser.elements if tag == "figure"]
    assert [c["data-evaluator"] for c in charts] == ["exact", "grader"]
    bars = [attrs for tag, attrs in parser.elements if tag == "rect" and attrs.get("class") == "bar"]
    assert (
        sum(int(b["data-count"] or 0) for b in bars) == 4 + 4
    )  # pass/fail bars of exact, score bins of grader


def test_the_progress_bar_counts_runs_and_failures_on_a_terminal() -> None:
    buffer = io.StringIO()
    progress = Progress(3, console=Console(file=buffer, force_terminal=True, width=100, color_system=None))
    for passed in (True, False, True):
        result = sample_report().results[0 if passed else 2]
        progress.update(EvalEvent(kind="case_end", total_runs=3, result=result))
    progress.close()
    assert (progress.done, progress.failures) == (3, 1)
    assert "3/3 runs, 1 failed" in buffer.getvalue()


async def test_progress_is_drawn_on_request_and_quiet_when_stderr_is_not_a_terminal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    @evaluator("even")
    def even(case: Case, output: Any, usage: RunUsage) -> bool:
        return output % 2 == 0

    async def task(inputs: int) -> int:
        return inputs

    dataset = Dataset([Case(f"c{i}", i) for i in range(4)], evaluators=[even])
    await dataset.run(task)  # progress=None and the captured stderr is not a terminal
    assert capsys.readouterr().err == ""
    await dataset.run(task, options=ExecutionOptions(progress=True))
    assert "4/4 runs, 2 failed" in capsys.readouterr().err


def test_rich_and_yaml_are_imported_only_when_used() -> None:
    code = textwrap.dedent(
        """
        import sys, anyio
        from ferrule.evals import Case, Dataset, ExactMatch, dump_report_json, compare_reports

        async def task(inputs):
            return inputs

        report = anyio.run(lambda: Dataset([Case("a", 1, expected=1)], evaluators=[ExactMatch()]).run(task))
        compare_reports(report, report).to_ci_json()
        dump_report_json(report)
        report.html()
        assert "rich" not in sys.modules and "yaml" not in sys.modules, "imported too early"
        report.render_text()
        assert "rich" in sys.modules
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_exact_match_failures_show_their_reason_in_the_page() -> None:
    report = sample_report(hostile="b")
    page = report.html()
    assert '<div class="reason">b</div>' in page
