"""Evaluations for ferrule agents.

```python
from ferrule.evals import Case, Dataset, ExactMatch, ExecutionOptions, compare_reports

dataset = Dataset(
    [Case("add", "What is 2 + 3? Answer with the number only.", expected="5")],
    evaluators=[ExactMatch(strip=True)],
)
report = await dataset.run(agent, options=ExecutionOptions(repetitions=3, max_concurrency=4))
report.print()
comparison = compare_reports(baseline, report)
print(comparison.to_ci_json().decode(), comparison.exit_code())
```

A dataset runs an ordinary `Agent` (or `async fn(inputs)`) over named cases, with repetitions,
independent task and evaluator retry policies and bounded concurrency; its `Report` is in source
order whatever finishes first. Evaluators are deterministic (`ExactMatch`, `Contains`,
`ValidJson`, your own `Evaluator`), model-graded (`ModelGrader`), over spans (`TraceEvaluator`,
`HasSpan`) or report-wide (`ReportEvaluator`, `MinPassRate`, `MeanScore`). Datasets and reports
are strict, bounded JSON or YAML files; `compare_reports` classifies every change and gives the
CI verdict.
"""

from __future__ import annotations

from ._case import Case, RunOptions
from ._compare import (
    CI_FORMAT,
    EXIT_PASS,
    EXIT_REGRESSION,
    AnalysisChange,
    Comparison,
    EvaluationChange,
    RunChange,
    Status,
    StatusCounts,
    UsageDelta,
    compare_reports,
)
from ._dataset import (
    MAX_CASES,
    MAX_RUNS,
    Dataset,
    ExecutionOptions,
    RetryEvent,
    RetryPolicy,
    Task,
)
from ._errors import (
    AmbiguousEvaluator,
    CaseIdentityMismatch,
    ComparisonError,
    DuplicateCaseName,
    DuplicateEntry,
    DuplicateEvaluatorName,
    EvalConfigError,
    EvalError,
    InvalidCase,
    InvalidEvalDocument,
    InvalidEvaluationResult,
    InvalidExecutionOptions,
    InvalidGraderOutput,
    InvalidGraderScore,
    InvalidReportAnalysis,
    TraceEvaluationRequiresTelemetry,
    UnknownEvaluator,
    UnserializableValue,
    UnsupportedCaseOptions,
)
from ._evaluators import (
    Contains,
    Evaluator,
    EvaluatorOutput,
    ExactMatch,
    FunctionEvaluator,
    HasSpan,
    MeanScore,
    MinPassRate,
    ReportEvaluator,
    TraceContext,
    TraceEvaluator,
    ValidJson,
    evaluator,
)
from ._events import EvalEvent, EvalEventKind, EvalHook
from ._grader import GRADER_INSTRUCTIONS, MAX_REASON_CHARS, GraderOutput, ModelGrader
from ._io import (
    DATASET_FORMAT,
    DOCUMENT_LIMITS,
    REPORT_FORMAT,
    AnyEvaluator,
    EvaluatorRegistry,
    dump_dataset_json,
    dump_dataset_yaml,
    dump_report_json,
    dump_report_yaml,
    load_dataset_file,
    load_dataset_json,
    load_dataset_yaml,
    load_report_file,
    load_report_json,
    load_report_yaml,
    run_dataset_file,
    save_report,
)
from ._report import (
    Analysis,
    CaseResult,
    CaseSummary,
    EvaluationResult,
    Report,
    ReportCase,
    ScoreStatistics,
    Summary,
)
from ._spans import AttributeValue, SpanEvent, SpanKind, SpanRecord, SpanStatus

__version__ = "0.1.0"

__all__ = [
    "CI_FORMAT",
    "DATASET_FORMAT",
    "DOCUMENT_LIMITS",
    "EXIT_PASS",
    "EXIT_REGRESSION",
    "GRADER_INSTRUCTIONS",
    "MAX_CASES",
    "MAX_REASON_CHARS",
    "MAX_RUNS",
    "REPORT_FORMAT",
    "AmbiguousEvaluator",
    "Analysis",
    "AnalysisChange",
    "AnyEvaluator",
    "AttributeValue",
    "Case",
    "CaseIdentityMismatch",
    "CaseResult",
    "CaseSummary",
    "Comparison",
    "ComparisonError",
    "Contains",
    "Dataset",
    "DuplicateCaseName",
    "DuplicateEntry",
    "DuplicateEvaluatorName",
    "EvalConfigError",
    "EvalError",
    "EvalEvent",
    "EvalEventKind",
    "EvalHook",
    "EvaluationChange",
    "EvaluationResult",
    "Evaluator",
    "EvaluatorOutput",
    "EvaluatorRegistry",
    "ExactMatch",
    "ExecutionOptions",
    "FunctionEvaluator",
    "GraderOutput",
    "HasSpan",
    "InvalidCase",
    "InvalidEvalDocument",
    "InvalidEvaluationResult",
    "InvalidExecutionOptions",
    "InvalidGraderOutput",
    "InvalidGraderScore",
    "InvalidReportAnalysis",
    "MeanScore",
    "MinPassRate",
    "ModelGrader",
    "Report",
    "ReportCase",
    "ReportEvaluator",
    "RetryEvent",
    "RetryPolicy",
    "RunChange",
    "RunOptions",
    "ScoreStatistics",
    "SpanEvent",
    "SpanKind",
    "SpanRecord",
    "SpanStatus",
    "Status",
    "StatusCounts",
    "Summary",
    "Task",
    "TraceContext",
    "TraceEvaluationRequiresTelemetry",
    "TraceEvaluator",
    "UnknownEvaluator",
    "UnserializableValue",
    "UnsupportedCaseOptions",
    "UsageDelta",
    "ValidJson",
    "compare_reports",
    "dump_dataset_json",
    "dump_dataset_yaml",
    "dump_report_json",
    "dump_report_yaml",
    "evaluator",
    "load_dataset_file",
    "load_dataset_json",
    "load_dataset_yaml",
    "load_report_file",
    "load_report_json",
    "load_report_yaml",
    "run_dataset_file",
    "save_report",
    "__version__",
]
