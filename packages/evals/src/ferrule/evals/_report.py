"""Reports: what a dataset run produced, in source order, with summaries, statistics and renderings."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ._report_data import Analysis
from ._report_data import CaseResult
from ._report_data import CaseSummary
from ._report_data import EvaluationResult
from ._report_data import ReportCase
from ._report_data import ReportData
from ._report_data import ScoreStatistics
from ._report_data import Summary

if TYPE_CHECKING:
    from rich.console import Console

    from ._compare import Comparison

__all__ = [
    "Analysis",
    "CaseResult",
    "CaseSummary",
    "EvaluationResult",
    "Report",
    "ReportCase",
    "ScoreStatistics",
    "Summary",
]


class Report(ReportData, frozen=True, kw_only=True):
    """The outcome of a dataset run: one `CaseResult` per case and repetition, in source order.

    `results` is ordered by case index, then repetition, whatever order the runs finished in.
    """

    def print(self, *, console: Console | None = None, comparison: Comparison | None = None) -> None:
        """Print the report as a table to the terminal (cases x evaluators, usage, cost, a summary line)."""
        from ._render import print_report

        print_report(self, console=console, comparison=comparison)

    def render_text(self, *, width: int = 120, comparison: Comparison | None = None) -> str:
        """The table `print()` shows, as plain text of at most `width` columns."""
        from ._render import render_text

        return render_text(self, width=width, comparison=comparison)

    def html(self, *, comparison: Comparison | None = None, title: str | None = None) -> str:
        """The report as one self-contained HTML page (no scripts, no network assets)."""
        from ._render import render_html

        return render_html(self, comparison=comparison, title=title)

    def to_html(
        self, path: str | Path, *, comparison: Comparison | None = None, title: str | None = None
    ) -> Path:
        """Write `html()` to `path` (UTF-8); returns the path."""
        target = Path(path)
        target.write_text(self.html(comparison=comparison, title=title), encoding="utf-8")
        return target
