"""Report comparison: the classification matrix, ordering, deltas, identity checks and the CI JSON."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from ferrule.core.usage import RunUsage
from ferrule.evals import CI_FORMAT
from ferrule.evals import EXIT_PASS
from ferrule.evals import EXIT_REGRESSION
from ferrule.evals import Analysis
from ferrule.evals import CaseIdentityMismatch
from ferrule.evals import CaseResult
from ferrule.evals import DuplicateEntry
from ferrule.evals import EvaluationResult
from ferrule.evals import Report
from ferrule.evals import ReportCase
from ferrule.evals import compare_reports

GOLDEN = Path(__file__).parent / "golden" / "ci_comparison.json"

ABSENT = "absent"
STATES: list[Any] = [ABSENT, None, True, False]

# (baseline, candidate) -> (status, regression, improvement)
MATRIX: dict[tuple[Any, Any], tuple[str, bool, bool]] = {
    (ABSENT, None): ("added", False, False),
    (ABSENT, True): ("added", False, True),
    (ABSENT, False): ("added", True, False),  # a newly failing check
    (None, ABSENT): ("removed", False, False),  # a score-only entry: no assertion was removed
    (True, ABSENT): ("removed", True, False),  # a removed assertion
    (False, ABSENT): ("removed", True, False),
    (None, None): ("unchanged", False, False),
    (None, True): ("improved", False, True),
    (None, False): ("regressed", True, False),
    (True, None): ("regressed", True, False),  # the verdict was dropped
    (True, True): ("unchanged", False, False),
    (True, False): ("regressed", True, False),
    (False, None): ("regressed", True, False),
    (False, True): ("improved", False, True),
    (False, False): ("unchanged", False, False),
}


def run(
    case_index: int,
    repetition: int,
    *evaluations: EvaluationResult,
    name: str | None = None,
    usage: RunUsage | None = None,
    latency: float = 0.0,
) -> CaseResult:
    return CaseResult(
        case_index=case_index,
        case_name=name or f"case-{case_index}",
        repetition=repetition,
        repetitions=2,
        task_attempts=1,
        output="out",
        usage=usage or RunUsage(),
        latency_seconds=latency,
        evaluations=evaluations,
    )


def report(*results: CaseResult, analyses: tuple[Analysis, ...] = (), name: str = "suite") -> Report:
    count = max((r.case_index for r in results), default=-1) + 1
    names = {r.case_index: r.case_name for r in results}
    return Report(
        name=name,
        cases=tuple(ReportCase(name=names.get(i, f"case-{i}"), inputs=i) for i in range(count)),
        evaluators=(),
        trace_evaluators=(),
        report_evaluators=(),
        results=results,
        analyses=analyses,
    )


def evaluations(state: Any, score: float | None = None) -> tuple[EvaluationResult, ...]:
    return () if state == ABSENT else (EvaluationResult(name="e", passed=state, score=score),)


@pytest.mark.parametrize(("before", "after"), list(MATRIX))
def test_evaluation_classification_matrix(before: Any, after: Any) -> None:
    comparison = compare_reports(
        report(run(0, 1, *evaluations(before))), report(run(0, 1, *evaluations(after)))
    )
    (change,) = comparison.runs[0].evaluations
    assert (change.status, change.regression, change.improvement) == MATRIX[(before, after)]
    assert comparison.regression_free() is not MATRIX[(before, after)][1]
    assert comparison.exit_code() == (EXIT_REGRESSION if MATRIX[(before, after)][1] else EXIT_PASS)
    conclusion = json.loads(comparison.to_ci_json())["conclusion"]
    assert conclusion == ("pass" if comparison.regression_free() else "fail")


@pytest.mark.parametrize(("before", "after"), list(MATRIX))
def test_analysis_classification_matrix(before: Any, after: Any) -> None:
    def analyses(state: Any) -> tuple[Analysis, ...]:
        return () if state == ABSENT else (Analysis(name="gate", assertion=state, value=0.5),)

    comparison = compare_reports(report(analyses=analyses(before)), report(analyses=analyses(after)))
    (change,) = comparison.analyses
    assert (change.status, change.regression, change.improvement) == MATRIX[(before, after)]
    assert comparison.regression_free() is not MATRIX[(before, after)][1]


def test_runs_are_matched_by_identity_and_classified_by_their_assertions() -> None:
    ok, bad = EvaluationResult(name="e", passed=True), EvaluationResult(name="e", passed=False)
    baseline = report(run(0, 1, ok), run(0, 2, ok), run(1, 1, bad), run(2, 1, ok), run(3, 1))
    candidate = report(run(4, 1, bad), run(1, 1, ok), run(0, 1, ok), run(0, 2, bad), run(5, 1, ok), run(3, 1))
    comparison = compare_reports(baseline, candidate)
    # Baseline order, then candidate-only runs in candidate order.
    assert [(r.case_index, r.repetition, r.status) for r in comparison.runs] == [
        (0, 1, "unchanged"),
        (0, 2, "regressed"),
        (1, 1, "improved"),
        (2, 1, "removed"),
        (3, 1, "unchanged"),
        (4, 1, "added"),
        (5, 1, "added"),
    ]
    assert [r.regression for r in comparison.runs] == [False, True, False, True, False, True, False]
    counts = comparison.run_counts()
    assert (counts.unchanged, counts.improved, counts.regressed, counts.added, counts.removed) == (
        2,
        1,
        1,
        2,
        1,
    )
    assert (counts.regressions, counts.improvements) == (3, 2)
    assert not comparison.regression_free()
    # Evaluations: baseline order, then candidate-only names.
    mixed = compare_reports(
        report(run(0, 1, EvaluationResult(name="a", passed=True), EvaluationResult(name="b", score=0.5))),
        report(run(0, 1, EvaluationResult(name="c", passed=True), EvaluationResult(name="a", passed=True))),
    )
    assert [(e.name, e.status) for e in mixed.runs[0].evaluations] == [
        ("a", "unchanged"),
        ("b", "removed"),
        ("c", "added"),
    ]
    assert mixed.regression_free()  # a removed score and an added passing check are not regressions
    assert mixed.improvements() == 1


def test_scores_move_deltas_never_verdicts() -> None:
    comparison = compare_reports(
        report(run(0, 1, *evaluations(True, 0.9))), report(run(0, 1, *evaluations(True, 0.4)))
    )
    (change,) = comparison.runs[0].evaluations
    assert change.status == "unchanged"
    assert change.score_delta == pytest.approx(-0.5)
    assert comparison.regression_free()
    nan = compare_reports(
        report(run(0, 1, *evaluations(None, float("nan")))), report(run(0, 1, *evaluations(None, 0.4)))
    )
    assert nan.runs[0].evaluations[0].score_delta is None  # only finite scores make a delta
    assert nan.runs[0].evaluations[0].baseline_score is None


def test_usage_latency_cost_and_pass_rate_deltas_are_signed() -> None:
    ok = EvaluationResult(name="e", passed=True)
    bad = EvaluationResult(name="e", passed=False)
    base_usage = RunUsage(input_tokens=100, output_tokens=50, requests=2, tool_calls=1, cost_nano_usd=1_000)
    cand_usage = RunUsage(input_tokens=80, output_tokens=70, requests=1, tool_calls=3, cost_nano_usd=700)
    comparison = compare_reports(
        report(run(0, 1, ok, usage=base_usage, latency=2.0), run(1, 1, bad, usage=base_usage, latency=1.0)),
        report(run(0, 1, ok, usage=cand_usage, latency=1.5), run(1, 1, ok, usage=cand_usage, latency=1.0)),
    )
    delta = comparison.runs[0].delta
    assert delta is not None
    assert (delta.input_tokens, delta.output_tokens, delta.total_tokens) == (-20, 20, 0)
    assert (delta.requests, delta.tool_calls, delta.cost_nano_usd) == (-1, 2, -300)
    assert delta.latency_seconds == pytest.approx(-0.5)
    totals = comparison.totals
    assert (totals.input_tokens, totals.tool_calls, totals.cost_nano_usd) == (-40, 4, -600)
    assert totals.latency_seconds == pytest.approx(-0.5)
    assert (comparison.baseline_pass_rate, comparison.candidate_pass_rate) == (0.5, 1.0)
    assert comparison.pass_rate_delta == pytest.approx(0.5)
    unknown = compare_reports(
        report(run(0, 1, usage=RunUsage(cost_nano_usd=5))),
        report(run(0, 1, usage=RunUsage(cost_nano_usd=None))),
    )
    assert unknown.totals.cost_nano_usd is None
    assert unknown.runs[0].delta is not None
    assert unknown.runs[0].delta.cost_nano_usd is None
    empty = compare_reports(report(), report())
    assert (empty.pass_rate_delta, empty.runs, empty.regression_free()) == (None, (), True)


def test_identity_mismatches_and_duplicates_are_refused_before_comparing() -> None:
    with pytest.raises(CaseIdentityMismatch, match="'case-0' in the baseline but 'other'"):
        compare_reports(report(run(0, 1)), report(run(0, 1, name="other")))
    with pytest.raises(DuplicateEntry, match="baseline report holds case 0 repetition 1 twice"):
        compare_reports(report(run(0, 1), run(0, 1)), report())
    twice = (EvaluationResult(name="e", passed=True), EvaluationResult(name="e", passed=False))
    with pytest.raises(
        DuplicateEntry, match="candidate report holds an evaluation of case 0 repetition 1 named 'e'"
    ):
        compare_reports(report(), report(run(0, 1, *twice)))
    with pytest.raises(DuplicateEntry, match="an analysis named 'gate' twice"):
        compare_reports(report(analyses=(Analysis(name="gate"), Analysis(name="gate"))), report())


def golden_pair() -> tuple[Report, Report]:
    exact_ok, exact_bad = (
        EvaluationResult(name="exact", passed=True),
        EvaluationResult(name="exact", passed=False),
    )
    baseline = report(
        run(0, 1, exact_ok, EvaluationResult(name="grader", passed=True, score=0.75), usage=RunUsage(input_tokens=120, output_tokens=30, requests=1, cost_nano_usd=4_200), latency=0.5),
        run(0, 2, exact_ok, EvaluationResult(name="grader", passed=True, score=1.0), usage=RunUsage(input_tokens=120, output_tokens=28, requests=1, cost_nano_usd=4_100), latency=0.25),
        run(1, 1, exact_bad, EvaluationResult(name="grader", passed=False, score=0.25), usage=RunUsage(input_tokens=90, output_tokens=12, requests=1, cost_nano_usd=2_000), latency=0.125),
        run(2, 1, exact_ok, usage=RunUsage(input_tokens=60, output_tokens=6, requests=2, tool_calls=1, cost_nano_usd=1_500), latency=1.0),
        analyses=(Analysis(name="min_pass_rate", assertion=False, value=0.75, unit="ratio", reason="3 of 4"),),
        name="golden",
    )  # fmt: skip
    candidate = report(
        run(0, 1, exact_ok, EvaluationResult(name="grader", passed=True, score=0.5), usage=RunUsage(input_tokens=118, output_tokens=25, requests=1, cost_nano_usd=4_000), latency=0.5),
        run(0, 2, exact_bad, EvaluationResult(name="grader", passed=True, score=1.0), usage=RunUsage(input_tokens=118, output_tokens=40, requests=1, cost_nano_usd=4_600), latency=0.75),
        run(1, 1, exact_ok, usage=RunUsage(input_tokens=90, output_tokens=10, requests=1, cost_nano_usd=1_900), latency=0.125),
        run(3, 1, exact_ok, usage=RunUsage(input_tokens=40, output_tokens=4, requests=1, cost_nano_usd=900), latency=0.25),
        analyses=(Analysis(name="min_pass_rate", assertion=True, value=0.75, unit="ratio", reason="3 of 4"),),
        name="golden",
    )  # fmt: skip
    return baseline, candidate


def test_ci_json_matches_the_golden_file_byte_for_byte() -> None:
    # Regenerate after an intended change with FERRULE_UPDATE_GOLDEN=1, then review the diff.
    baseline, candidate = golden_pair()
    data = compare_reports(baseline, candidate).to_ci_json()
    if os.environ.get("FERRULE_UPDATE_GOLDEN") == "1":
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_bytes(data)
    assert data == GOLDEN.read_bytes()


def test_the_golden_comparison_says_what_happened() -> None:
    baseline, candidate = golden_pair()
    comparison = compare_reports(baseline, candidate)
    document = json.loads(comparison.to_ci_json())
    assert list(document)[:5] == ["format", "version", "conclusion", "regressions", "improvements"]
    assert (document["format"], document["version"]) == (CI_FORMAT, 1)
    # Regressions: (0,2) exact newly failing + its run; case 1's grader assertion removed; case 2's run removed
    # (it asserted) with its exact check.
    assert document["conclusion"] == "fail"
    assert not comparison.regression_free()
    assert document["counts"]["runs"] == {
        "unchanged": 1, "improved": 1, "regressed": 1, "added": 1, "removed": 1, "regressions": 2, "improvements": 2,
    }  # fmt: skip
    assert document["counts"]["evaluations"]["regressions"] == 3
    assert document["counts"]["analyses"]["improved"] == 1
    assert document["regressions"] == comparison.regressions() == 5
    text = GOLDEN.read_text()
    for forbidden in ("timestamp", "host", "python", "platform", "_at"):
        assert forbidden not in text.lower(), forbidden
    # The same reports always give the same bytes.
    assert compare_reports(*golden_pair()).to_ci_json() == comparison.to_ci_json()
