"""The errors of `ferrule.evals`.

Two families matter to a caller such as the command line: `EvalConfigError` (a dataset, an
evaluator name or a file is wrong; fix the input) and everything else raised by a run. Errors of the
task, of evaluators and of hooks are never wrapped: they propagate as the very objects raised.
"""

from __future__ import annotations

from ferrule.core.errors import FerruleError
from ferrule.core.errors import UserError

__all__ = [
    "AmbiguousEvaluator",
    "CaseIdentityMismatch",
    "ComparisonError",
    "DuplicateCaseName",
    "DuplicateEntry",
    "DuplicateEvaluatorName",
    "EvalConfigError",
    "EvalError",
    "InvalidCase",
    "InvalidEvalDocument",
    "InvalidEvaluationResult",
    "InvalidExecutionOptions",
    "InvalidGraderOutput",
    "InvalidGraderScore",
    "InvalidReportAnalysis",
    "TraceEvaluationRequiresTelemetry",
    "UnknownEvaluator",
    "UnserializableValue",
    "UnsupportedCaseOptions",
]


class EvalError(FerruleError):
    """Base class of every error `ferrule.evals` raises on purpose."""


class EvalConfigError(EvalError, UserError):
    """A dataset, its evaluators or an evaluation file is wrong; a command line maps it to its config/file exit code."""


class InvalidExecutionOptions(EvalError, UserError):
    """`ExecutionOptions` or a `RetryPolicy` cannot work (zero repetitions, concurrency or attempts, ...).

    Raised before the task, an evaluator or a hook is called.
    """


class InvalidCase(EvalConfigError):
    """A case cannot be run by the task it was given (e.g. non-text inputs for an `Agent`)."""


class DuplicateCaseName(EvalConfigError):
    """Two cases of one dataset have the same name."""


class DuplicateEvaluatorName(EvalConfigError):
    """Two evaluators of one dataset (ordinary, trace or report) have the same name."""


class UnknownEvaluator(EvalConfigError):
    """A dataset file names an evaluator the `EvaluatorRegistry` does not have."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        """The name the file asked for."""
        listed = ", ".join(known) if known else "none"
        super().__init__(f"unknown evaluator {name!r}; the registry has: {listed}")


class AmbiguousEvaluator(EvalConfigError):
    """A dataset file names an evaluator registered more than once."""

    def __init__(self, name: str, count: int) -> None:
        self.name = name
        """The ambiguous name."""
        super().__init__(
            f"evaluator {name!r} is registered {count} times; register exactly one evaluator under that name"
        )


class UnsupportedCaseOptions(EvalConfigError):
    """A case with non-default `run_options` cannot be written to a file.

    Run options may hold dependencies, callbacks, histories or credentials; dropping them silently
    would change what the dataset means, so serialization refuses instead.
    """


class UnserializableValue(EvalConfigError):
    """A value (case inputs, expected value, metadata, output) has no JSON representation."""


class InvalidEvalDocument(EvalConfigError):
    """A dataset or report document is malformed, over its size limits, of another version, or strictly invalid."""


class InvalidEvaluationResult(EvalError):
    """An evaluator returned something other than an `EvaluationResult`, a `bool` or a number."""


class InvalidGraderScore(EvalError):
    """A `ModelGrader`'s model answered a score that is not a finite number from 0 to 1."""

    def __init__(self, evaluator: str, score: float) -> None:
        self.evaluator = evaluator
        """The grader's name."""
        self.score = score
        """The rejected score."""
        super().__init__(
            f"grader {evaluator!r} answered score {score!r}; a score must be a finite number from 0 to 1"
        )


class InvalidGraderOutput(EvalError):
    """A `ModelGrader`'s agent produced an output that is not a `GraderOutput`."""


class InvalidReportAnalysis(EvalError):
    """A report evaluator returned something other than an `Analysis`, or a non-finite value."""


class TraceEvaluationRequiresTelemetry(EvalError, UserError):
    """The dataset has trace evaluators but the task's spans cannot be captured.

    Raised before the task is called: instrument the agent (`Agent(instrument=...)`) with an
    OpenTelemetry SDK `TracerProvider` (or pass `ExecutionOptions(tracer_provider=...)` for a
    function task).
    """


class ComparisonError(EvalError):
    """Two reports cannot be compared."""


class CaseIdentityMismatch(ComparisonError):
    """The same `(case_index, repetition)` names different cases in the two reports."""


class DuplicateEntry(ComparisonError):
    """A report holds one run identity, evaluation name or analysis name twice."""
