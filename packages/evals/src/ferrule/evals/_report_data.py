"""The data of reports: what a dataset run produced, in source order, with summaries and statistics
(`ferrule.evals._report.Report` adds printing and HTML)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from collections.abc import Mapping
from typing import Any

import msgspec

from ferrule.core.usage import RunUsage

from ._spans import SpanRecord


class EvaluationResult(msgspec.Struct, frozen=True, kw_only=True):
    """What one evaluator concluded about one run.

    Evaluators may return one of these (or a `bool` for `passed`, a number for `score`); the run
    fills in `name` (the evaluator's) and `attempts`.
    """

    name: str = ""
    """The evaluator's name."""
    passed: bool | None = None
    """The assertion: `True`/`False`, or `None` when the evaluator only scores."""
    score: float | None = None
    """A score (any float; built-in graders use 0 to 1), or `None`."""
    reason: str | None = None
    """Why, in words."""
    attempts: int = 1
    """Attempts the evaluator needed (`ExecutionOptions.evaluator_retry`)."""
    usage: RunUsage | None = None
    """Usage of the evaluation itself (a `ModelGrader`'s model), when it used a model."""


class Analysis(msgspec.Struct, frozen=True, kw_only=True):
    """What a report evaluator concluded about the whole report."""

    name: str = ""
    """The report evaluator's name (filled in by the run)."""
    assertion: bool | None = None
    """`False` makes `Report.passed()` false; `None` when the analysis only measures."""
    value: float | None = None
    """A finite scalar (a pass rate, a mean score, ...), or `None`."""
    unit: str | None = None
    """The unit of `value`, e.g. `ratio` or `tokens`."""
    reason: str | None = None
    """Why, in words."""


class ReportCase(msgspec.Struct, frozen=True, kw_only=True):
    """A case as the report records it (without run options)."""

    name: str
    """The case's name."""
    inputs: Any
    """The task's inputs."""
    expected: Any = None
    """The expected value."""
    metadata: Mapping[str, Any] | None = None
    """The case's metadata."""


class CaseResult(msgspec.Struct, frozen=True, kw_only=True):
    """One run of one case: the task's output and usage, and every evaluation, in evaluator order."""

    case_index: int
    """The case's position in the dataset (0-based); with `repetition` the run's stable identity."""
    case_name: str
    """The case's name."""
    repetition: int
    """Which repetition this is (1-based)."""
    repetitions: int
    """How many repetitions each case had."""
    task_attempts: int
    """Attempts the task needed (`ExecutionOptions.task_retry`)."""
    output: Any
    """The task's output (for an agent, the run's validated output)."""
    usage: RunUsage
    """The task's usage, with the cost in nano-USD when the price is known."""
    latency_seconds: float
    """Seconds the successful task attempt took."""
    evaluations: tuple[EvaluationResult, ...] = ()
    """Ordinary evaluations, then trace evaluations, each in dataset order."""
    spans: tuple[SpanRecord, ...] = ()
    """Copies of the spans the successful attempt exported (instrumented agents only)."""

    def assertion(self) -> bool | None:
        """`None` when no evaluation asserted anything, else whether every assertion passed."""
        verdicts = [e.passed for e in self.evaluations if e.passed is not None]
        if not verdicts:
            return None
        return all(verdicts)

    @property
    def passed(self) -> bool:
        """Whether no evaluation failed."""
        return self.assertion() is not False

    def evaluation(self, name: str) -> EvaluationResult | None:
        """The evaluation of the evaluator called `name`, if it ran."""
        for evaluation in self.evaluations:
            if evaluation.name == name:
                return evaluation
        return None


class Summary(msgspec.Struct, frozen=True, kw_only=True):
    """Run counts of a report or of one case."""

    total_runs: int
    """Runs (cases times repetitions)."""
    passed_runs: int
    """Runs in which no evaluation failed."""
    pass_rate: float | None
    """`passed_runs / total_runs`, or `None` when there were no runs."""

    @property
    def failed_runs(self) -> int:
        """Runs in which an evaluation failed."""
        return self.total_runs - self.passed_runs


class ScoreStatistics(msgspec.Struct, frozen=True, kw_only=True):
    """Statistics of one evaluator's finite scores (absent and non-finite scores are ignored)."""

    evaluator: str
    """The evaluator's name."""
    count: int
    """Finite scores counted."""
    min: float | None
    """The smallest, or `None` without scores."""
    max: float | None
    """The largest, or `None` without scores."""
    mean: float | None
    """The arithmetic mean, or `None` without scores."""
    std_dev: float | None
    """The population standard deviation, or `None` without scores."""


def score_statistics(evaluator: str, scores: Iterable[float | None]) -> ScoreStatistics:
    """Statistics of the finite values in `scores`."""
    values = [s for s in scores if s is not None and math.isfinite(s)]
    if not values:
        return ScoreStatistics(evaluator=evaluator, count=0, min=None, max=None, mean=None, std_dev=None)
    mean = math.fsum(values) / len(values)
    variance = math.fsum((v - mean) ** 2 for v in values) / len(values)
    return ScoreStatistics(
        evaluator=evaluator,
        count=len(values),
        min=min(values),
        max=max(values),
        mean=mean,
        std_dev=math.sqrt(variance),
    )


class CaseSummary(msgspec.Struct, frozen=True, kw_only=True):
    """The repetitions of one case, grouped."""

    case_index: int
    """The case's position in the dataset."""
    case_name: str
    """The case's name."""
    summary: Summary
    """Run counts over the case's repetitions."""
    scores: Mapping[str, ScoreStatistics]
    """Score statistics over the repetitions, by evaluator name (in evaluator order)."""
    results: tuple[CaseResult, ...]
    """The case's runs in repetition order."""


def _summary(results: Iterable[CaseResult]) -> Summary:
    total = passed = 0
    for result in results:
        total += 1
        passed += result.passed
    return Summary(total_runs=total, passed_runs=passed, pass_rate=passed / total if total else None)


def sum_usage(usages: Iterable[RunUsage]) -> RunUsage:
    """The sum of `usages` (cost unknown as soon as one is unknown; zero for none)."""
    total = RunUsage(cost_nano_usd=0)
    for usage in usages:
        total = total + usage
    return total


class ReportData(msgspec.Struct, frozen=True, kw_only=True):
    """The fields and statistics of a `Report` (the comparison and the renderer take this)."""

    name: str | None
    """The dataset's name."""
    cases: tuple[ReportCase, ...]
    """The dataset's cases in order."""
    evaluators: tuple[str, ...]
    """Names of the ordinary evaluators, in order."""
    trace_evaluators: tuple[str, ...]
    """Names of the trace evaluators, in order."""
    report_evaluators: tuple[str, ...]
    """Names of the report evaluators, in order."""
    results: tuple[CaseResult, ...]
    """Every run, by case index then repetition."""
    analyses: tuple[Analysis, ...] = ()
    """The report evaluators' analyses, in order."""

    def passed(self) -> bool:
        """Whether every run passed and no analysis assertion is false."""
        return all(r.passed for r in self.results) and all(a.assertion is not False for a in self.analyses)

    def summary(self) -> Summary:
        """Total runs, passed runs and the pass rate (`None` for an empty report)."""
        return _summary(self.results)

    def case_summary(self, case_index: int) -> CaseSummary:
        """The repetitions of the case at `case_index`, grouped."""
        if not 0 <= case_index < len(self.cases):
            raise IndexError(
                f"case_index {case_index} is not a case of this report ({len(self.cases)} cases)"
            )
        results = tuple(r for r in self.results if r.case_index == case_index)
        return CaseSummary(
            case_index=case_index,
            case_name=self.cases[case_index].name,
            summary=_summary(results),
            scores={
                name: score_statistics(name, (self._score(r, name) for r in results))
                for name in self.evaluator_names()
            },
            results=results,
        )

    def evaluator_names(self) -> tuple[str, ...]:
        """Ordinary then trace evaluator names: the columns of an evaluation table."""
        return (*self.evaluators, *self.trace_evaluators)

    @staticmethod
    def _score(result: CaseResult, name: str) -> float | None:
        evaluation = result.evaluation(name)
        return None if evaluation is None else evaluation.score

    def score_statistics(self, evaluator: str) -> ScoreStatistics:
        """Count, min, max, mean and population standard deviation of one evaluator's finite scores."""
        return score_statistics(evaluator, (self._score(r, evaluator) for r in self.results))

    def total_usage(self) -> RunUsage:
        """The tasks' usage over every run (cost `None` when any run's price is unknown)."""
        return sum_usage(r.usage for r in self.results)

    def grading_usage(self) -> RunUsage:
        """The usage of evaluations that used a model (`ModelGrader`)."""
        return sum_usage(e.usage for r in self.results for e in r.evaluations if e.usage is not None)
