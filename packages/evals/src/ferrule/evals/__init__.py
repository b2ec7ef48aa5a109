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

from ._case import Case
from ._case import RunOptions
from ._compare import CI_FORMAT
from ._compare import EXIT_PASS
from ._compare import EXIT_REGRESSION
from ._compare import AnalysisChange
from ._compare import Comparison
from ._compare import EvaluationChange
from ._compare import RunChange
from ._compare import Status
from ._compare import StatusCounts
from ._compare import UsageDelta
from ._compare import compare_reports
from ._dataset import MAX_CASES
from ._dataset import MAX_RUNS
from ._dataset import Dataset
from ._dataset import ExecutionOptions
from ._dataset import RetryEvent
from ._dataset import RetryPolicy
from ._dataset import Task
from ._errors import AmbiguousEvaluator
from ._errors import CaseIdentityMismatch
from ._errors import ComparisonError
from ._errors import DuplicateCaseName
from ._errors import DuplicateEntry
from ._errors import DuplicateEvaluatorName
from ._errors import EvalConfigError
from ._errors import EvalError
from ._errors import InvalidCase
from ._errors import InvalidEvalDocument
from ._errors import InvalidEvaluationResult
from ._errors import InvalidExecutionOptions
from ._errors import InvalidGraderOutput
from ._errors import InvalidGraderScore
from ._errors import InvalidReportAnalysis
from ._errors import TraceEvaluationRequiresTelemetry
from ._errors import UnknownEvaluator
from ._errors import UnserializableValue
from ._errors import UnsupportedCaseOptions
from ._evaluators import Contains
from ._evaluators import Evaluator
from ._evaluators import EvaluatorOutput
from ._evaluators import ExactMatch
from ._evaluators import FunctionEvaluator
from ._evaluators import HasSpan
from ._evaluators import MeanScore
from ._evaluators import MinPassRate
from ._evaluators import ReportEvaluator
from ._evaluators import TraceContext
from ._evaluators import TraceEvaluator
from ._evaluators import ValidJson
from ._evaluators import evaluator
from ._events import EvalEvent
from ._events import EvalEventKind
from ._events import EvalHook
from ._grader import GRADER_INSTRUCTIONS
from ._grader import MAX_REASON_CHARS
from ._grader import GraderOutput
from ._grader import ModelGrader
from ._io import DATASET_FORMAT
from ._io import DOCUMENT_LIMITS
from ._io import REPORT_FORMAT
from ._io import AnyEvaluator
from ._io import EvaluatorRegistry
from ._io import dump_dataset_json
from ._io import dump_dataset_yaml
from ._io import dump_report_json
from ._io import dump_report_yaml
from ._io import load_dataset_file
from ._io import load_dataset_json
from ._io import load_dataset_yaml
from ._io import load_report_file
from ._io import load_report_json
from ._io import load_report_yaml
from ._io import run_dataset_file
from ._io import save_report
from ._report import Analysis
from ._report import CaseResult
from ._report import CaseSummary
from ._report import EvaluationResult
from ._report import Report
from ._report import ReportCase
from ._report import ScoreStatistics
from ._report import Summary
from ._spans import AttributeValue
from ._spans import SpanEvent
from ._spans import SpanKind
from ._spans import SpanRecord
from ._spans import SpanStatus

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
