"""What people look at: a terminal table (rich) and a self-contained HTML page with charts.

Both show the same table: one row per run (case and repetition), one column per evaluator (a
pass/fail mark and the score), then tokens, cost and latency, and a summary line. The HTML page
adds a histogram of each evaluator's scores and, given a comparison, a chart of the deltas. It has
no scripts and no external assets (its Content-Security-Policy forbids loading any), so it opens
offline and model outputs in it cannot run code: every value is HTML-escaped.
"""

from __future__ import annotations

import html
import io
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Any

from ._report_data import CaseResult
from ._report_data import EvaluationResult
from ._report_data import ReportData

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from ._compare import Comparison

PASS_MARK = "✔"
"""The mark of a passed assertion."""
FAIL_MARK = "✘"
"""The mark of a failed assertion."""
ABSENT_MARK = "\u2013"
"""The cell of an evaluator that did not run (an en dash)."""


def format_cost(nano_usd: int | None) -> str:
    """Nano-USD as dollars (`$0.000123`), `?` when unknown."""
    if nano_usd is None:
        return "?"
    dollars = nano_usd / 1e9
    if dollars == 0:
        return "$0"
    return f"${dollars:.6f}" if abs(dollars) >= 1e-6 else f"${dollars:.9f}"


def format_score(score: float | None) -> str:
    """A score with three significant decimals, or empty."""
    if score is None:
        return ""
    if not math.isfinite(score):
        return str(score)
    return f"{score:.3g}" if abs(score) >= 1000 or (score != 0 and abs(score) < 0.001) else f"{score:.3f}"


def format_rate(rate: float | None) -> str:
    """A ratio as a percentage with one decimal, or `n/a`."""
    return "n/a" if rate is None else f"{rate * 100:.1f}%"


def evaluation_cell(evaluation: EvaluationResult | None) -> str:
    """The text of one evaluator's cell: mark, then score."""
    if evaluation is None:
        return ABSENT_MARK
    parts: list[str] = []
    if evaluation.passed is not None:
        parts.append(PASS_MARK if evaluation.passed else FAIL_MARK)
    if evaluation.score is not None:
        parts.append(format_score(evaluation.score))
    if evaluation.attempts > 1:
        parts.append(f"({evaluation.attempts} tries)")
    return " ".join(parts) if parts else "·"


def summary_line(report: ReportData) -> str:
    """Runs, passed runs, pass rate, tokens and cost of the tasks, and grading usage when there is any."""
    summary = report.summary()
    usage = report.total_usage()
    line = (
        f"{summary.total_runs} runs, {summary.passed_runs} passed ({format_rate(summary.pass_rate)}), "
        f"{usage.total_tokens:,} tokens ({usage.input_tokens:,} in, {usage.output_tokens:,} out), "
        f"{usage.requests:,} requests, cost {format_cost(usage.cost_nano_usd)}"
    )
    grading = report.grading_usage()
    if grading.total_tokens or grading.requests:
        line += f"; grading {grading.total_tokens:,} tokens, cost {format_cost(grading.cost_nano_usd)}"
    if report.analyses:
        line += "; " + ", ".join(
            f"{a.name} {'' if a.assertion is None else (PASS_MARK if a.assertion else FAIL_MARK) + ' '}"
            f"{'' if a.value is None else format_score(a.value)}".rstrip()
            for a in report.analyses
        )
    line += "; " + ("PASSED" if report.passed() else "FAILED")
    return line


def comparison_line(comparison: Comparison) -> str:
    """The comparison in one line: verdict, regressions, improvements, pass-rate delta."""
    delta = comparison.pass_rate_delta
    rate = "n/a" if delta is None else f"{delta * 100:+.1f} pts"
    verdict = "no regressions" if comparison.regression_free() else "REGRESSED"
    return (
        f"vs baseline: {verdict}, {comparison.regressions()} regression(s), "
        f"{comparison.improvements()} improvement(s), pass rate {rate}, "
        f"tokens {comparison.totals.total_tokens:+,}, cost "
        f"{'?' if comparison.totals.cost_nano_usd is None else format_cost(comparison.totals.cost_nano_usd)}"
    )


def _run_statuses(comparison: Comparison | None) -> dict[tuple[int, int], str]:
    if comparison is None:
        return {}
    return {(r.case_index, r.repetition): r.status for r in comparison.runs}


def _case_label(result: CaseResult) -> str:
    label = result.case_name
    if result.task_attempts > 1:
        label += f" ({result.task_attempts} tries)"
    return label


def build_table(report: ReportData, comparison: Comparison | None = None) -> Table:
    """The rich table of a report."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title=f"Evaluation: {report.name}" if report.name else "Evaluation", title_justify="left")
    table.add_column("case", overflow="fold")
    table.add_column("rep", justify="right")
    names = report.evaluator_names()
    for name in names:
        table.add_column(name, justify="center", overflow="fold")
    table.add_column("tokens", justify="right")
    table.add_column("cost", justify="right")
    table.add_column("latency", justify="right")
    statuses = _run_statuses(comparison)
    if statuses:
        table.add_column("vs baseline")
    for result in report.results:
        cells: list[Text] = [Text(_case_label(result)), Text(str(result.repetition))]
        for name in names:
            evaluation = result.evaluation(name)
            style = (
                ""
                if evaluation is None or evaluation.passed is None
                else "green"
                if evaluation.passed
                else "red"
            )
            cells.append(Text(evaluation_cell(evaluation), style=style))
        cells.append(Text(f"{result.usage.total_tokens:,}"))
        cells.append(Text(format_cost(result.usage.cost_nano_usd)))
        cells.append(Text(f"{result.latency_seconds:.2f}s"))
        if statuses:
            status = statuses.get((result.case_index, result.repetition), "")
            cells.append(
                Text(
                    status, style="red" if status == "regressed" else "green" if status == "improved" else ""
                )
            )
        table.add_row(*cells)
    caption = summary_line(report)
    if comparison is not None:
        caption += "\n" + comparison_line(comparison)
    table.caption = caption
    table.caption_justify = "left"
    return table


def print_report(
    report: ReportData, *, console: Console | None = None, comparison: Comparison | None = None
) -> None:
    """Print the table (to stdout unless a console is given)."""
    from rich.console import Console

    (console or Console()).print(build_table(report, comparison))


def render_text(report: ReportData, *, width: int, comparison: Comparison | None) -> str:
    """The table as plain text."""
    from rich.console import Console

    buffer = io.StringIO()
    Console(file=buffer, width=width, color_system=None, force_terminal=False).print(
        build_table(report, comparison)
    )
    return buffer.getvalue()


# --- HTML -------------------------------------------------------------------------------------------

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #1d2330; background: #fff; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { border: 1px solid #d5d9e0; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f1f3f6; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.pass { background: #e3f6e8; color: #14632b; } td.fail { background: #fde4e4; color: #8a1c1c; }
td.absent { color: #9aa1ad; } .summary { font-weight: 600; }
.verdict-pass { color: #14632b; } .verdict-fail { color: #8a1c1c; }
figure { display: inline-block; margin: 8px 16px 8px 0; } figcaption { font-size: 12px; color: #4b5262; }
svg text { font: 11px system-ui, sans-serif; fill: #1d2330; }
.reason { color: #4b5262; font-size: 12px; }
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _num(value: float | int | None) -> str:
    """A number as an attribute value that reads back exactly (`repr` of floats), `""` for `None`."""
    return "" if value is None else repr(value)


def _bool(value: bool | None) -> str:
    return "" if value is None else "true" if value else "false"


def _histogram(values: Sequence[float]) -> list[tuple[float, float, int]]:
    """Ten bins over [0, 1] when every score is in it, else over [min, max] (one bin if all equal)."""
    low, high = (0.0, 1.0) if all(0.0 <= v <= 1.0 for v in values) else (min(values), max(values))
    if high == low:
        return [(low, high, len(values))]
    bins = 10
    width = (high - low) / bins
    counts = [0] * bins
    for value in values:
        counts[min(int((value - low) / width), bins - 1)] += 1
    return [(low + i * width, low + (i + 1) * width, counts[i]) for i in range(bins)]


def _score_chart(report: ReportData, name: str) -> str:
    stats = report.score_statistics(name)
    evaluations = [e for r in report.results if (e := r.evaluation(name)) is not None]
    scores = [e.score for e in evaluations if e.score is not None and math.isfinite(e.score)]
    passed = sum(1 for e in evaluations if e.passed is True)
    failed = sum(1 for e in evaluations if e.passed is False)
    if scores:
        bars = [(f"{lo:.2g}{ABSENT_MARK}{hi:.2g}", count, "#4a74d9") for lo, hi, count in _histogram(scores)]
    else:  # an assertion-only evaluator: its distribution is passed against failed
        bars = [("passed", passed, "#27ae60"), ("failed", failed, "#c0392b")]
    tallest = max((c for _, c, _ in bars), default=0) or 1
    bar_width, height, top = 36, 120, 16
    svg_width = bar_width * len(bars) + 8
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{svg_width}" height="{height + top + 34}" '
        f'role="img" aria-label="{_e(name)} score distribution">'
    ]
    for i, (label, count, colour) in enumerate(bars):
        h = round(height * count / tallest)
        x = 4 + i * bar_width
        y = top + height - h
        parts.append(
            f'<rect class="bar" data-label="{_e(label)}" data-count="{count}" x="{x + 3}" y="{y}" '
            f'width="{bar_width - 6}" height="{h}" fill="{colour}"></rect>'
        )
        parts.append(f'<text x="{x + bar_width / 2}" y="{y - 3}" text-anchor="middle">{count}</text>')
        parts.append(
            f'<text x="{x + bar_width / 2}" y="{top + height + 14}" text-anchor="middle" '
            f'transform="rotate(30 {x + bar_width / 2} {top + height + 14})">{_e(label)}</text>'
        )
    parts.append("</svg>")
    caption = f"{_e(name)}: {passed} passed, {failed} failed, {stats.count} score(s)" + (
        ""
        if stats.mean is None
        else f", mean {format_score(stats.mean)}, sd {format_score(stats.std_dev)}, "
        f"min {format_score(stats.min)}, max {format_score(stats.max)}"
    )
    return (
        f'<figure class="score-chart" data-evaluator="{_e(name)}" data-count="{stats.count}" '
        f'data-mean="{_num(stats.mean)}" data-std-dev="{_num(stats.std_dev)}" data-min="{_num(stats.min)}" '
        f'data-max="{_num(stats.max)}">{"".join(parts)}<figcaption>{caption}</figcaption></figure>'
    )


def _delta_chart(comparison: Comparison) -> str:
    """Diverging bars: the pass-rate delta, then each evaluator's mean score delta."""
    rows: list[tuple[str, float]] = []
    if comparison.pass_rate_delta is not None:
        rows.append(("pass rate", comparison.pass_rate_delta))
    by_name: dict[str, list[float]] = {}
    for change in comparison.evaluations():
        if change.score_delta is not None:
            by_name.setdefault(change.name, []).append(change.score_delta)
    for name, deltas in by_name.items():
        rows.append((f"{name} (mean score)", math.fsum(deltas) / len(deltas)))
    if not rows:
        return '<p id="delta-chart" data-rows="0">No comparable scores.</p>'
    largest = max(abs(v) for _, v in rows) or 1.0
    label_width, half, row_height = 190, 150, 22
    width = label_width + 2 * half + 70
    parts = [
        f'<svg id="delta-chart" data-rows="{len(rows)}" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{row_height * len(rows) + 10}" role="img" aria-label="comparison deltas">',
        f'<line x1="{label_width + half}" y1="0" x2="{label_width + half}" y2="{row_height * len(rows) + 10}" '
        'stroke="#9aa1ad"></line>',
    ]
    for i, (label, value) in enumerate(rows):
        y = 5 + i * row_height
        length = half * abs(value) / largest
        x = label_width + half - length if value < 0 else label_width + half
        colour = "#c0392b" if value < 0 else "#27ae60"
        parts.append(f'<text x="0" y="{y + 14}">{_e(label)}</text>')
        parts.append(
            f'<rect class="delta" data-label="{_e(label)}" data-delta="{_num(value)}" x="{x}" y="{y + 3}" '
            f'width="{length}" height="{row_height - 8}" fill="{colour}"></rect>'
        )
        parts.append(f'<text x="{label_width + 2 * half + 6}" y="{y + 14}">{value:+.3f}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _results_table(report: ReportData, comparison: Comparison | None) -> str:
    names = report.evaluator_names()
    statuses = _run_statuses(comparison)
    head = "".join(f'<th data-evaluator="{_e(n)}">{_e(n)}</th>' for n in names)
    rows: list[str] = [
        '<table id="results"><thead><tr><th>case</th><th>rep</th>'
        f"{head}<th>tokens</th><th>cost</th><th>latency (s)</th>"
        f"{'<th>vs baseline</th>' if statuses else ''}</tr></thead><tbody>"
    ]
    for result in report.results:
        usage = result.usage
        cells = [
            f'<tr class="run" data-case-index="{result.case_index}" data-repetition="{result.repetition}" '
            f'data-passed="{_bool(result.passed)}" data-task-attempts="{result.task_attempts}">',
            f'<td class="case">{_e(_case_label(result))}</td>',
            f'<td class="num">{result.repetition}</td>',
        ]
        for name in names:
            evaluation = result.evaluation(name)
            if evaluation is None:
                cells.append(f'<td class="absent" data-evaluator="{_e(name)}">{ABSENT_MARK}</td>')
                continue
            css = "" if evaluation.passed is None else "pass" if evaluation.passed else "fail"
            reason = f'<div class="reason">{_e(evaluation.reason)}</div>' if evaluation.reason else ""
            cells.append(
                f'<td class="{css}" data-evaluator="{_e(name)}" data-passed="{_bool(evaluation.passed)}" '
                f'data-score="{_num(evaluation.score)}" data-attempts="{evaluation.attempts}">'
                f"{_e(evaluation_cell(evaluation))}{reason}</td>"
            )
        cells.append(
            f'<td class="num tokens" data-input-tokens="{usage.input_tokens}" '
            f'data-output-tokens="{usage.output_tokens}" data-total-tokens="{usage.total_tokens}">'
            f"{usage.total_tokens:,}</td>"
        )
        cells.append(
            f'<td class="num cost" data-cost-nano-usd="{_num(usage.cost_nano_usd)}">'
            f"{_e(format_cost(usage.cost_nano_usd))}</td>"
        )
        cells.append(
            f'<td class="num latency" data-latency="{_num(result.latency_seconds)}">{result.latency_seconds:.3f}</td>'
        )
        if statuses:
            status = statuses.get((result.case_index, result.repetition), "")
            cells.append(f'<td class="status" data-status="{_e(status)}">{_e(status)}</td>')
        cells.append("</tr>")
        rows.append("".join(cells))
    rows.append("</tbody></table>")
    return "".join(rows)


def _analyses_table(report: ReportData) -> str:
    if not report.analyses:
        return ""
    rows = [
        '<h2>Analyses</h2><table id="analyses"><thead><tr><th>analysis</th><th>assertion</th>'
        "<th>value</th><th>reason</th></tr></thead><tbody>"
    ]
    for a in report.analyses:
        mark = "" if a.assertion is None else PASS_MARK if a.assertion else FAIL_MARK
        css = "" if a.assertion is None else "pass" if a.assertion else "fail"
        value = "" if a.value is None else format_score(a.value) + (f" {a.unit}" if a.unit else "")
        rows.append(
            f'<tr class="analysis" data-name="{_e(a.name)}" data-assertion="{_bool(a.assertion)}" '
            f'data-value="{_num(a.value)}"><td>{_e(a.name)}</td><td class="{css}">{mark}</td>'
            f'<td class="num">{_e(value)}</td><td class="reason">{_e(a.reason or "")}</td></tr>'
        )
    rows.append("</tbody></table>")
    return "".join(rows)


def _comparison_section(comparison: Comparison) -> str:
    verdict = comparison.regression_free()
    changed = [
        r
        for r in comparison.runs
        if r.status != "unchanged" or any(e.status != "unchanged" for e in r.evaluations)
    ]
    rows = "".join(
        f'<tr class="change" data-case-index="{r.case_index}" data-repetition="{r.repetition}" '
        f'data-status="{_e(r.status)}"><td>{_e(r.case_name)}</td><td class="num">{r.repetition}</td>'
        f"<td>{_e(r.status)}</td><td>"
        + _e(", ".join(f"{e.name}: {e.status}" for e in r.evaluations if e.status != "unchanged"))
        + "</td></tr>"
        for r in changed
    )
    table = (
        '<table id="changes"><thead><tr><th>case</th><th>rep</th><th>run</th><th>evaluations</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
        if changed
        else "<p>No run changed.</p>"
    )
    return (
        "<h2>Comparison with the baseline</h2>"
        f'<p id="comparison" class="summary verdict-{"pass" if verdict else "fail"}" '
        f'data-regression-free="{_bool(verdict)}" data-regressions="{comparison.regressions()}" '
        f'data-improvements="{comparison.improvements()}" data-pass-rate-delta="{_num(comparison.pass_rate_delta)}">'
        f"{_e(comparison_line(comparison))}</p>{_delta_chart(comparison)}{table}"
    )


def render_html(report: ReportData, *, comparison: Comparison | None, title: str | None) -> str:
    """One self-contained HTML page."""
    summary = report.summary()
    usage = report.total_usage()
    heading = title or (f"Evaluation: {report.name}" if report.name else "Evaluation")
    charts = "".join(_score_chart(report, name) for name in report.evaluator_names())
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        f"<title>{_e(heading)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{_e(heading)}</h1>"
        f'<p id="summary" class="summary verdict-{"pass" if report.passed() else "fail"}" '
        f'data-total-runs="{summary.total_runs}" data-passed-runs="{summary.passed_runs}" '
        f'data-pass-rate="{_num(summary.pass_rate)}" data-total-tokens="{usage.total_tokens}" '
        f'data-cost-nano-usd="{_num(usage.cost_nano_usd)}" data-passed="{_bool(report.passed())}">'
        f"{_e(summary_line(report))}</p>"
        f"{_results_table(report, comparison)}{_analyses_table(report)}"
        f"<h2>Score distributions</h2>{charts or '<p>No evaluators.</p>'}"
        f"{'' if comparison is None else _comparison_section(comparison)}"
        "</body></html>\n"
    )
