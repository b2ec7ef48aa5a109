"""Evaluators: per-run checks, trace checks and report-wide analyses.

Each kind is a small class with a `name` and one `evaluate` method, sync or async. The built-ins
are deterministic; a function becomes an evaluator with `FunctionEvaluator` or `@evaluator`.
"""

from __future__ import annotations

import abc
import inspect
import math
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Any
from typing import TypeAlias
from typing import cast

import msgspec

from ferrule.core import bounded_json
from ferrule.core.usage import RunUsage

from ._case import Case
from ._errors import InvalidEvaluationResult
from ._errors import InvalidReportAnalysis
from ._report import Analysis
from ._report import EvaluationResult
from ._spans import AttributeValue
from ._spans import SpanRecord

if TYPE_CHECKING:
    from ._report import Report

__all__ = [
    "Contains",
    "EvaluatorOutput",
    "Evaluator",
    "ExactMatch",
    "FunctionEvaluator",
    "HasSpan",
    "MeanScore",
    "MinPassRate",
    "ReportEvaluator",
    "TraceContext",
    "TraceEvaluator",
    "ValidJson",
    "evaluator",
]

EvaluatorOutput: TypeAlias = EvaluationResult | bool | float
"""What an evaluator may return: a full result, a `bool` (the assertion) or a number (the score)."""


class Evaluator(abc.ABC):
    """A check of one run: `evaluate(case, output, usage)`, sync or async.

    `case`, `output` and `usage` are shared with the report and other evaluators: read them, never
    mutate them. Synchronous evaluators run on the event loop; make slow ones `async`.
    """

    name: str
    """The evaluator's name, unique within a dataset (the column of reports)."""

    @abc.abstractmethod
    def evaluate(
        self, case: Case, output: Any, usage: RunUsage
    ) -> EvaluatorOutput | Awaitable[EvaluatorOutput]:
        """Judge one run."""


class TraceContext(msgspec.Struct, frozen=True, kw_only=True):
    """What a trace evaluator sees: the run and the spans its task exported."""

    case: Case
    """The case."""
    output: Any
    """The task's output."""
    usage: RunUsage
    """The task's usage."""
    spans: tuple[SpanRecord, ...]
    """Copies of the spans of the successful task attempt, in the order they ended."""

    def find(
        self,
        name: str | None = None,
        *,
        prefix: str | None = None,
        attributes: Mapping[str, AttributeValue] | None = None,
    ) -> list[SpanRecord]:
        """Spans with this exact `name` and/or name `prefix` whose attributes include `attributes`."""
        return [s for s in self.spans if _span_matches(s, name, prefix, attributes)]


def _span_matches(
    span: SpanRecord,
    name: str | None,
    prefix: str | None,
    attributes: Mapping[str, AttributeValue] | None,
) -> bool:
    if name is not None and span.name != name:
        return False
    if prefix is not None and not span.name.startswith(prefix):
        return False
    if attributes:
        for key, value in attributes.items():
            if key not in span.attributes or not _same_json(span.attributes[key], value):
                return False
    return True


class TraceEvaluator(abc.ABC):
    """A check of one run's OpenTelemetry spans: `evaluate(context)`, sync or async.

    Trace evaluators run after the ordinary ones and need a task whose spans can be captured
    (`TraceEvaluationRequiresTelemetry` otherwise).
    """

    name: str
    """The evaluator's name, unique within a dataset."""

    @abc.abstractmethod
    def evaluate(self, context: TraceContext) -> EvaluatorOutput | Awaitable[EvaluatorOutput]:
        """Judge one run's spans."""


class ReportEvaluator(abc.ABC):
    """An analysis of the whole report, run once after every case: `evaluate(report) -> Analysis`.

    The report it receives has every run and no analyses yet.
    """

    name: str
    """The evaluator's name, unique within a dataset."""

    @abc.abstractmethod
    def evaluate(self, report: Report) -> Analysis | Awaitable[Analysis]:
        """Analyse the report."""


class FunctionEvaluator(Evaluator):
    """An evaluator from a function `fn(case, output, usage)`, sync or async."""

    def __init__(self, name: str, function: Callable[[Case, Any, RunUsage], Any]) -> None:
        self.name = name
        self.function = function
        """The function called for each run."""

    def evaluate(self, case: Case, output: Any, usage: RunUsage) -> Any:
        """Call the function."""
        return self.function(case, output, usage)

    def __repr__(self) -> str:
        return f"FunctionEvaluator({self.name!r})"


def evaluator(name: str) -> Callable[[Callable[[Case, Any, RunUsage], Any]], FunctionEvaluator]:
    """Decorator: `@evaluator("short_answer")` turns `fn(case, output, usage)` into an evaluator."""

    def wrap(function: Callable[[Case, Any, RunUsage], Any]) -> FunctionEvaluator:
        return FunctionEvaluator(name, function)

    return wrap


def _canonical(value: Any) -> bytes:
    """JSON text of `value` with sorted keys: equal exactly when the JSON values are equal.

    `1` and `1.0` and `True` stay distinct, unlike Python's `==`; Structs and dataclasses compare
    as the JSON objects they encode to.
    """
    return msgspec.json.encode(value, order="sorted")


def _same_json(a: Any, b: Any) -> bool:
    try:
        return _canonical(a) == _canonical(b)
    except (TypeError, msgspec.EncodeError):
        return a == b


def _check_name(name: str) -> str:
    if not isinstance(name, str) or not name:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"an evaluator name must be a non-empty string, got {name!r}")
    return name


class ExactMatch(Evaluator):
    """Passes when the output equals `case.expected` as JSON values (so `1 != 1.0`, Structs equal dicts).

    `strip=True` ignores surrounding whitespace and `case_sensitive=False` ignores case, for text
    outputs only.
    """

    def __init__(
        self, name: str = "exact_match", *, strip: bool = False, case_sensitive: bool = True
    ) -> None:
        self.name = _check_name(name)
        self.strip = strip
        """Compare text after removing surrounding whitespace."""
        self.case_sensitive = case_sensitive
        """Compare text case-sensitively."""

    def _text(self, value: str) -> str:
        if self.strip:
            value = value.strip()
        return value if self.case_sensitive else value.casefold()

    def evaluate(self, case: Case, output: Any, usage: RunUsage) -> EvaluationResult:
        """Compare the output with the expected value."""
        expected = case.expected
        if isinstance(output, str) and isinstance(expected, str):
            equal = self._text(output) == self._text(expected)
        else:
            equal = _same_json(output, expected)
        if equal:
            return EvaluationResult(passed=True)
        return EvaluationResult(passed=False, reason=f"expected {_short(expected)}, got {_short(output)}")


def _short(value: Any, limit: int = 200) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Contains(Evaluator):
    """Passes when the output contains `value` (default: `case.expected`).

    Text contains a substring; a list or tuple contains an element (compared as JSON); a mapping
    contains a key.
    """

    def __init__(self, value: Any = None, name: str = "contains", *, case_sensitive: bool = True) -> None:
        self.name = _check_name(name)
        self.value = value
        """What to look for; `None` uses each case's `expected`."""
        self.case_sensitive = case_sensitive
        """Compare text case-sensitively."""

    def evaluate(self, case: Case, output: Any, usage: RunUsage) -> EvaluationResult:
        """Look for the value in the output."""
        needle = case.expected if self.value is None else self.value
        if isinstance(output, str):
            if not isinstance(needle, str):
                return EvaluationResult(passed=False, reason=f"cannot look for {_short(needle)} in text")
            found = needle in output if self.case_sensitive else needle.casefold() in output.casefold()
        elif isinstance(output, Mapping):
            found = needle in output
        elif isinstance(output, (list, tuple)):
            items = cast("Sequence[Any]", output)
            found = any(_same_json(item, needle) for item in items)
        else:
            return EvaluationResult(
                passed=False, reason=f"output of type {type(output).__name__} has no contents"
            )
        if found:
            return EvaluationResult(passed=True)
        return EvaluationResult(passed=False, reason=f"{_short(needle)} not found in {_short(output)}")


class ValidJson(Evaluator):
    """Passes when the output is text holding one well-formed JSON document within `limits`.

    Uses `bounded_json.is_valid`, so a hostile output is rejected before anything is built.
    """

    def __init__(
        self, name: str = "valid_json", *, limits: bounded_json.JsonLimits = bounded_json.TOOL_ARGUMENTS
    ) -> None:
        self.name = _check_name(name)
        self.limits = limits
        """The size limits the document must respect."""

    def evaluate(self, case: Case, output: Any, usage: RunUsage) -> EvaluationResult:
        """Check the output's JSON."""
        if not isinstance(output, (str, bytes)):
            return EvaluationResult(passed=False, reason=f"output is {type(output).__name__}, not JSON text")
        if bounded_json.is_valid(output, self.limits):
            return EvaluationResult(passed=True)
        try:
            bounded_json.validate(output, self.limits)
        except bounded_json.JsonError as exc:
            return EvaluationResult(passed=False, reason=str(exc))
        raise AssertionError("unreachable: is_valid and validate disagree")  # pragma: no cover


class HasSpan(TraceEvaluator):
    """Passes when between `min_count` and `max_count` spans match (name, prefix, attributes).

    `HasSpan(prefix="execute_tool ", attributes={"gen_ai.tool.name": "add"})` checks that the
    agent called the `add` tool; `max_count=0` checks that something did not happen.
    """

    def __init__(
        self,
        name: str | None = None,
        *,
        prefix: str | None = None,
        attributes: Mapping[str, AttributeValue] | None = None,
        min_count: int = 1,
        max_count: int | None = None,
        evaluator_name: str = "has_span",
    ) -> None:
        if min_count < 0 or (max_count is not None and max_count < min_count):
            raise ValueError(f"need 0 <= min_count <= max_count, got {min_count} and {max_count}")
        self.name = _check_name(evaluator_name)
        self.span_name = name
        """The exact span name to match, if any."""
        self.prefix = prefix
        """The span name prefix to match, if any."""
        self.attributes = dict(attributes) if attributes else None
        """Attributes the span must have (typed JSON equality)."""
        self.min_count = min_count
        """The fewest matching spans that pass."""
        self.max_count = max_count
        """The most matching spans that pass (`None`: no maximum)."""

    def evaluate(self, context: TraceContext) -> EvaluationResult:
        """Count the matching spans."""
        count = len(context.find(self.span_name, prefix=self.prefix, attributes=self.attributes))
        ok = count >= self.min_count and (self.max_count is None or count <= self.max_count)
        wanted = (
            f"at least {self.min_count}"
            if self.max_count is None
            else f"{self.min_count} to {self.max_count}"
        )
        return EvaluationResult(
            passed=ok, score=float(count), reason=f"{count} matching span(s), wanted {wanted}"
        )


class MinPassRate(ReportEvaluator):
    """Asserts that the report's pass rate is at least `threshold` (an empty report fails)."""

    def __init__(self, threshold: float, name: str = "min_pass_rate") -> None:
        if not (math.isfinite(threshold) and 0 <= threshold <= 1):
            raise ValueError(f"threshold must be a number from 0 to 1, got {threshold!r}")
        self.name = _check_name(name)
        self.threshold = threshold
        """The lowest passing pass rate."""

    def evaluate(self, report: Report) -> Analysis:
        """Compare the pass rate with the threshold."""
        rate = report.summary().pass_rate
        if rate is None:
            return Analysis(assertion=False, reason="the report has no runs")
        return Analysis(
            assertion=rate >= self.threshold,
            value=rate,
            unit="ratio",
            reason=f"pass rate {rate:.4g}, threshold {self.threshold:.4g}",
        )


class MeanScore(ReportEvaluator):
    """Measures the mean of one evaluator's scores; asserts it is at least `minimum` when one is given.

    This is how a scored evaluator gates a CI job: comparisons classify runs by assertions, not by
    small score movements.
    """

    def __init__(self, evaluator: str, *, minimum: float | None = None, name: str | None = None) -> None:
        self.evaluator = evaluator
        """The evaluator whose scores are averaged."""
        self.minimum = minimum
        """The lowest passing mean, or `None` to only measure."""
        self.name = _check_name(name or f"mean_{evaluator}")

    def evaluate(self, report: Report) -> Analysis:
        """Average the scores."""
        stats = report.score_statistics(self.evaluator)
        if stats.mean is None:
            return Analysis(
                assertion=None if self.minimum is None else False,
                reason=f"no finite scores from {self.evaluator!r}",
            )
        assertion = None if self.minimum is None else stats.mean >= self.minimum
        return Analysis(
            assertion=assertion,
            value=stats.mean,
            unit="score",
            reason=f"mean of {stats.count} score(s) from {self.evaluator!r}",
        )


async def _resolve(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def normalize_result(name: str, value: Any) -> EvaluationResult:
    """Turn what an evaluator returned into an `EvaluationResult` carrying its name."""
    if isinstance(value, EvaluationResult):
        return msgspec.structs.replace(value, name=name)
    if isinstance(value, bool):
        return EvaluationResult(name=name, passed=value)
    if isinstance(value, (int, float)):
        return EvaluationResult(name=name, score=float(value))
    raise InvalidEvaluationResult(
        f"evaluator {name!r} returned {type(value).__name__}; return an EvaluationResult, a bool or a number"
    )


async def run_evaluator(evaluator: Evaluator, case: Case, output: Any, usage: RunUsage) -> EvaluationResult:
    """Call one ordinary evaluator once."""
    return normalize_result(evaluator.name, await _resolve(evaluator.evaluate(case, output, usage)))


async def run_trace_evaluator(evaluator: TraceEvaluator, context: TraceContext) -> EvaluationResult:
    """Call one trace evaluator once."""
    return normalize_result(evaluator.name, await _resolve(evaluator.evaluate(context)))


async def run_report_evaluator(evaluator: ReportEvaluator, report: Report) -> Analysis:
    """Call one report evaluator and check its analysis."""
    analysis = await _resolve(evaluator.evaluate(report))
    if not isinstance(analysis, Analysis):
        raise InvalidReportAnalysis(
            f"report evaluator {evaluator.name!r} returned {type(analysis).__name__}; return an Analysis"
        )
    value = cast("object", analysis.value)  # a Struct field is not type-checked at construction
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
    ):
        raise InvalidReportAnalysis(
            f"report evaluator {evaluator.name!r} returned the value {value!r}; a value is a finite number or None"
        )
    return msgspec.structs.replace(analysis, name=evaluator.name)
