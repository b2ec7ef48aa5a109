"""Comparing a candidate report with a baseline: classification, deltas and a CI verdict.

Runs are matched by `(case_index, repetition)`, evaluations and analyses by name. Every entry is
`unchanged`, `improved`, `regressed`, `added` or `removed`, decided by assertions only (`passed`,
`assertion`): scores and values are reported as deltas but never move a verdict, so a CI job is not
failed by noise. Gate on a score with an assertion instead (an evaluator threshold, `MeanScore`).

Regressions, the entries `regression_free()` counts:

* an assertion that was true or absent and is now false (`regressed`), or that is new and false
  (`added`: a newly failing check);
* an assertion that disappeared: removed from a run, or with its whole run removed (`removed`),
  or a passing/failing verdict that became `None` (`regressed`).

Improvements: an assertion that is now true and was false or absent (`improved`), or that is new
and true (`added`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Sequence
from typing import Final
from typing import Literal
from typing import TypeAlias
from typing import TypeVar

import msgspec

from ._errors import CaseIdentityMismatch
from ._errors import DuplicateEntry
from ._report_data import Analysis
from ._report_data import CaseResult
from ._report_data import EvaluationResult
from ._report_data import ReportData

__all__ = [
    "CI_FORMAT",
    "EXIT_PASS",
    "EXIT_REGRESSION",
    "AnalysisChange",
    "Comparison",
    "EvaluationChange",
    "RunChange",
    "Status",
    "StatusCounts",
    "UsageDelta",
    "compare_reports",
]

CI_FORMAT: Final = "ferrule.eval_comparison"
"""The `format` of `Comparison.to_ci_json()`."""
EXIT_PASS: Final = 0
"""`Comparison.exit_code()` without regressions."""
EXIT_REGRESSION: Final = 1
"""`Comparison.exit_code()` with at least one regression."""

Status: TypeAlias = Literal["unchanged", "improved", "regressed", "added", "removed"]
"""How an entry changed from the baseline to the candidate."""


class _Absent:
    __slots__ = ()


_ABSENT: Final = _Absent()

_Verdict: TypeAlias = "bool | _Absent | None"


def _classify(before: _Verdict, after: _Verdict) -> tuple[Status, bool, bool]:
    """(status, regression, improvement) of one assertion's change."""
    if isinstance(before, _Absent):
        return "added", after is False, after is True
    if isinstance(after, _Absent):
        return "removed", before is not None, False
    if before == after:
        return "unchanged", False, False
    if after is None or after is False:  # a verdict lost, or newly failing
        return "regressed", True, False
    return "improved", False, True


def _delta(before: float | None, after: float | None) -> float | None:
    if before is None or after is None or not (math.isfinite(before) and math.isfinite(after)):
        return None
    return after - before


class EvaluationChange(msgspec.Struct, frozen=True, kw_only=True):
    """One evaluator's result in one run, baseline against candidate."""

    name: str
    """The evaluator's name."""
    status: Status
    """How the assertion changed."""
    regression: bool
    """Whether this counts as a regression."""
    improvement: bool
    """Whether this counts as an improvement."""
    baseline_passed: bool | None
    """The baseline's assertion (`None` when absent or score-only)."""
    candidate_passed: bool | None
    """The candidate's assertion."""
    baseline_score: float | None
    """The baseline's finite score."""
    candidate_score: float | None
    """The candidate's finite score."""
    score_delta: float | None
    """Candidate minus baseline score, when both are finite."""


class UsageDelta(msgspec.Struct, frozen=True, kw_only=True):
    """Signed differences, candidate minus baseline."""

    input_tokens: int
    """Input tokens."""
    output_tokens: int
    """Output tokens."""
    total_tokens: int
    """Input plus output tokens."""
    requests: int
    """Model requests."""
    tool_calls: int
    """Tool calls."""
    latency_seconds: float
    """Task latency in seconds."""
    cost_nano_usd: int | None
    """Cost in nano-USD, `None` when either side's cost is unknown."""


class RunChange(msgspec.Struct, frozen=True, kw_only=True):
    """One run identity `(case_index, repetition)`, baseline against candidate."""

    case_index: int
    """The case's index."""
    repetition: int
    """The repetition (1-based)."""
    case_name: str
    """The case's name."""
    status: Status
    """How the run's overall assertion (all of its assertions) changed."""
    regression: bool
    """Whether the run's change counts as a regression."""
    improvement: bool
    """Whether it counts as an improvement."""
    baseline_passed: bool | None
    """The baseline run's assertion (`None`: absent, or no assertions)."""
    candidate_passed: bool | None
    """The candidate run's assertion."""
    evaluations: tuple[EvaluationChange, ...]
    """Its evaluations: baseline order, then candidate-only ones in candidate order."""
    delta: UsageDelta | None
    """Usage and latency differences, for runs present on both sides."""


class AnalysisChange(msgspec.Struct, frozen=True, kw_only=True):
    """One report evaluator's analysis, baseline against candidate."""

    name: str
    """The report evaluator's name."""
    status: Status
    """How the assertion changed."""
    regression: bool
    """Whether this counts as a regression."""
    improvement: bool
    """Whether this counts as an improvement."""
    baseline_assertion: bool | None
    """The baseline's assertion."""
    candidate_assertion: bool | None
    """The candidate's assertion."""
    baseline_value: float | None
    """The baseline's value."""
    candidate_value: float | None
    """The candidate's value."""
    value_delta: float | None
    """Candidate minus baseline value, when both are finite."""


class StatusCounts(msgspec.Struct, frozen=True, kw_only=True):
    """How many entries of one kind have each status, and how many count as regressions/improvements."""

    unchanged: int = 0
    """Entries without a change."""
    improved: int = 0
    """Entries now passing."""
    regressed: int = 0
    """Entries now failing or without their verdict."""
    added: int = 0
    """Entries only in the candidate."""
    removed: int = 0
    """Entries only in the baseline."""
    regressions: int = 0
    """Entries that count as regressions (regressed, removed assertions, added failing)."""
    improvements: int = 0
    """Entries that count as improvements (improved, added passing)."""


def _count(entries: Iterable[EvaluationChange | RunChange | AnalysisChange]) -> StatusCounts:
    tally = {"unchanged": 0, "improved": 0, "regressed": 0, "added": 0, "removed": 0}
    regressions = improvements = 0
    for entry in entries:
        tally[entry.status] += 1
        regressions += entry.regression
        improvements += entry.improvement
    return StatusCounts(**tally, regressions=regressions, improvements=improvements)


class _PassRate(msgspec.Struct, frozen=True, kw_only=True):
    baseline: float | None
    candidate: float | None
    delta: float | None


class _CiCounts(msgspec.Struct, frozen=True, kw_only=True):
    runs: StatusCounts
    evaluations: StatusCounts
    analyses: StatusCounts


class _CiDocument(msgspec.Struct, frozen=True, kw_only=True):
    format: str
    version: int
    conclusion: Literal["pass", "fail"]
    regressions: int
    improvements: int
    baseline: str | None
    candidate: str | None
    pass_rate: _PassRate
    counts: _CiCounts
    totals: UsageDelta
    runs: tuple[RunChange, ...]
    analyses: tuple[AnalysisChange, ...]


class Comparison(msgspec.Struct, frozen=True, kw_only=True):
    """A candidate report against a baseline; `regression_free()` is the CI verdict."""

    baseline_name: str | None
    """The baseline report's dataset name."""
    candidate_name: str | None
    """The candidate report's dataset name."""
    runs: tuple[RunChange, ...]
    """Every run identity: baseline order, then candidate-only runs in candidate order."""
    analyses: tuple[AnalysisChange, ...]
    """Every analysis: baseline order, then candidate-only ones."""
    baseline_pass_rate: float | None
    """The baseline's pass rate."""
    candidate_pass_rate: float | None
    """The candidate's pass rate."""
    pass_rate_delta: float | None
    """Candidate minus baseline pass rate."""
    totals: UsageDelta
    """Differences of the reports' totals."""

    def evaluations(self) -> list[EvaluationChange]:
        """Every evaluation change, run by run."""
        return [e for run in self.runs for e in run.evaluations]

    def run_counts(self) -> StatusCounts:
        """Statuses of the runs."""
        return _count(self.runs)

    def evaluation_counts(self) -> StatusCounts:
        """Statuses of the evaluations."""
        return _count(self.evaluations())

    def analysis_counts(self) -> StatusCounts:
        """Statuses of the analyses."""
        return _count(self.analyses)

    def regressions(self) -> int:
        """Regressions over runs, evaluations and analyses."""
        return sum(
            c.regressions for c in (self.run_counts(), self.evaluation_counts(), self.analysis_counts())
        )

    def improvements(self) -> int:
        """Improvements over runs, evaluations and analyses."""
        return sum(
            c.improvements for c in (self.run_counts(), self.evaluation_counts(), self.analysis_counts())
        )

    def regression_free(self) -> bool:
        """Whether nothing regressed: no newly failing, lost or removed assertion anywhere."""
        return self.regressions() == 0

    def exit_code(self) -> int:
        """`EXIT_PASS` (0) when regression-free, else `EXIT_REGRESSION` (1): a process status for CI."""
        return EXIT_PASS if self.regression_free() else EXIT_REGRESSION

    def to_ci_json(self) -> bytes:
        """Stable, indented version-1 JSON; `"conclusion": "pass"` exactly when `regression_free()`.

        It holds only what the two reports hold (no timestamps, host or environment), so the same
        reports always give the same bytes.
        """
        runs, evaluations, analyses = self.run_counts(), self.evaluation_counts(), self.analysis_counts()
        regressions = runs.regressions + evaluations.regressions + analyses.regressions
        document = _CiDocument(
            format=CI_FORMAT,
            version=1,
            conclusion="pass" if regressions == 0 else "fail",
            regressions=regressions,
            improvements=runs.improvements + evaluations.improvements + analyses.improvements,
            baseline=self.baseline_name,
            candidate=self.candidate_name,
            pass_rate=_PassRate(
                baseline=self.baseline_pass_rate,
                candidate=self.candidate_pass_rate,
                delta=self.pass_rate_delta,
            ),
            counts=_CiCounts(runs=runs, evaluations=evaluations, analyses=analyses),
            totals=self.totals,
            runs=self.runs,
            analyses=self.analyses,
        )
        return msgspec.json.format(msgspec.json.encode(document), indent=2) + b"\n"


def _unique_runs(report: ReportData, which: str) -> dict[tuple[int, int], CaseResult]:
    runs: dict[tuple[int, int], CaseResult] = {}
    for result in report.results:
        key = (result.case_index, result.repetition)
        if key in runs:
            raise DuplicateEntry(
                f"the {which} report holds case {result.case_index} repetition {result.repetition} twice"
            )
        runs[key] = result
        _unique_names(
            (e.name for e in result.evaluations), f"an evaluation of case {key[0]} repetition {key[1]}", which
        )
    _unique_names((a.name for a in report.analyses), "an analysis", which)
    return runs


def _unique_names(names: Iterable[str], what: str, which: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise DuplicateEntry(f"the {which} report holds {what} named {name!r} twice")
        seen.add(name)


def _merge_keys(first: Sequence[str], second: Sequence[str]) -> list[str]:
    return [*first, *(k for k in second if k not in set(first))]


def _evaluation_changes(
    before: Sequence[EvaluationResult], after: Sequence[EvaluationResult]
) -> tuple[EvaluationChange, ...]:
    changes: list[EvaluationChange] = []
    for name, b, a in _by_name(before, after):
        status, regression, improvement = _classify(
            _ABSENT if b is None else b.passed, _ABSENT if a is None else a.passed
        )
        b_score = _finite(None if b is None else b.score)
        a_score = _finite(None if a is None else a.score)
        changes.append(
            EvaluationChange(
                name=name,
                status=status,
                regression=regression,
                improvement=improvement,
                baseline_passed=None if b is None else b.passed,
                candidate_passed=None if a is None else a.passed,
                baseline_score=b_score,
                candidate_score=a_score,
                score_delta=_delta(b_score, a_score),
            )
        )
    return tuple(changes)


_Named = TypeVar("_Named", EvaluationResult, Analysis)


def _by_name(
    before: Sequence[_Named], after: Sequence[_Named]
) -> Iterator[tuple[str, _Named | None, _Named | None]]:
    """Every name of either side in merged order, with its entry on each side (`None`: absent)."""
    old = {x.name: x for x in before}
    new = {x.name: x for x in after}
    for name in _merge_keys([x.name for x in before], [x.name for x in after]):
        yield name, old.get(name), new.get(name)


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _usage_delta(before: Iterable[CaseResult], after: Iterable[CaseResult]) -> UsageDelta:
    b, a = list(before), list(after)

    def total(results: list[CaseResult], field: str) -> int:
        return sum(getattr(r.usage, field) for r in results)

    b_cost = [r.usage.cost_nano_usd for r in b]
    a_cost = [r.usage.cost_nano_usd for r in a]
    cost = (
        None
        if any(c is None for c in (*b_cost, *a_cost))
        else sum(c for c in a_cost if c is not None) - sum(c for c in b_cost if c is not None)
    )
    return UsageDelta(
        input_tokens=total(a, "input_tokens") - total(b, "input_tokens"),
        output_tokens=total(a, "output_tokens") - total(b, "output_tokens"),
        total_tokens=total(a, "total_tokens") - total(b, "total_tokens"),
        requests=total(a, "requests") - total(b, "requests"),
        tool_calls=total(a, "tool_calls") - total(b, "tool_calls"),
        latency_seconds=math.fsum(r.latency_seconds for r in a) - math.fsum(r.latency_seconds for r in b),
        cost_nano_usd=cost,
    )


def _analysis_changes(before: Sequence[Analysis], after: Sequence[Analysis]) -> tuple[AnalysisChange, ...]:
    changes: list[AnalysisChange] = []
    for name, b, a in _by_name(before, after):
        status, regression, improvement = _classify(
            _ABSENT if b is None else b.assertion, _ABSENT if a is None else a.assertion
        )
        b_value = _finite(None if b is None else b.value)
        a_value = _finite(None if a is None else a.value)
        changes.append(
            AnalysisChange(
                name=name,
                status=status,
                regression=regression,
                improvement=improvement,
                baseline_assertion=None if b is None else b.assertion,
                candidate_assertion=None if a is None else a.assertion,
                baseline_value=b_value,
                candidate_value=a_value,
                value_delta=_delta(b_value, a_value),
            )
        )
    return tuple(changes)


def compare_reports(baseline: ReportData, candidate: ReportData) -> Comparison:
    """Compare `candidate` with `baseline`.

    Raises `DuplicateEntry` when either report holds a run identity, an evaluation name within a
    run or an analysis name twice, and `CaseIdentityMismatch` when one `(case_index, repetition)`
    names different cases, before comparing anything.
    """
    old = _unique_runs(baseline, "baseline")
    new = _unique_runs(candidate, "candidate")
    for key, result in old.items():
        other = new.get(key)
        if other is not None and other.case_name != result.case_name:
            raise CaseIdentityMismatch(
                f"case {key[0]} repetition {key[1]} is {result.case_name!r} in the baseline but "
                f"{other.case_name!r} in the candidate; compare reports of the same dataset"
            )
    keys = [*old, *(k for k in new if k not in old)]
    runs: list[RunChange] = []
    for key in keys:
        b, a = old.get(key), new.get(key)
        status, regression, improvement = _classify(
            _ABSENT if b is None else b.assertion(), _ABSENT if a is None else a.assertion()
        )
        present = a if a is not None else b
        assert present is not None
        runs.append(
            RunChange(
                case_index=key[0],
                repetition=key[1],
                case_name=present.case_name,
                status=status,
                regression=regression,
                improvement=improvement,
                baseline_passed=None if b is None else b.assertion(),
                candidate_passed=None if a is None else a.assertion(),
                evaluations=_evaluation_changes(
                    () if b is None else b.evaluations, () if a is None else a.evaluations
                ),
                delta=None if a is None or b is None else _usage_delta([b], [a]),
            )
        )
    b_rate, a_rate = baseline.summary().pass_rate, candidate.summary().pass_rate
    return Comparison(
        baseline_name=baseline.name,
        candidate_name=candidate.name,
        runs=tuple(runs),
        analyses=_analysis_changes(baseline.analyses, candidate.analyses),
        baseline_pass_rate=b_rate,
        candidate_pass_rate=a_rate,
        pass_rate_delta=_delta(b_rate, a_rate),
        totals=_usage_delta(baseline.results, candidate.results),
    )
