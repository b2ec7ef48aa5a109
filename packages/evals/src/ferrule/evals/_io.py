"""Dataset and report files: strict, bounded, version-1 JSON and YAML documents.

Both formats go through one path: the bytes are parsed into JSON values within
`bounded_json.CLI_CONFIG` (the JSON scanner, or the strict YAML loader), the `format` and `version`
are checked, and the values are converted into Structs that forbid unknown keys. Writing checks
that the document would be read back (same limits), so a file written here always loads.
"""

from __future__ import annotations

import math
import os
import secrets
from collections.abc import Iterable
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated
from typing import Any
from typing import Final
from typing import Literal
from typing import TypeAlias
from typing import assert_never
from typing import cast

import anyio
import msgspec

from ferrule.core import bounded_json
from ferrule.core.bounded_yaml import YamlError
from ferrule.core.bounded_yaml import dump_yaml
from ferrule.core.bounded_yaml import load_yaml
from ferrule.core.usage import RunUsage

from ._case import Case
from ._dataset import Dataset
from ._dataset import ExecutionOptions
from ._dataset import Task
from ._errors import AmbiguousEvaluator
from ._errors import DuplicateEvaluatorName
from ._errors import InvalidEvalDocument
from ._errors import UnknownEvaluator
from ._errors import UnserializableValue
from ._errors import UnsupportedCaseOptions
from ._evaluators import Contains
from ._evaluators import Evaluator
from ._evaluators import ExactMatch
from ._evaluators import ReportEvaluator
from ._evaluators import TraceEvaluator
from ._evaluators import ValidJson
from ._report import Analysis
from ._report import CaseResult
from ._report import EvaluationResult
from ._report import Report
from ._report import ReportCase
from ._spans import AttributeValue
from ._spans import SpanEvent
from ._spans import SpanKind
from ._spans import SpanRecord
from ._spans import SpanStatus

__all__ = [
    "DATASET_FORMAT",
    "DOCUMENT_LIMITS",
    "REPORT_FORMAT",
    "AnyEvaluator",
    "EvaluatorRegistry",
    "dump_dataset_json",
    "dump_dataset_yaml",
    "dump_report_json",
    "dump_report_yaml",
    "load_dataset_file",
    "load_dataset_json",
    "load_dataset_yaml",
    "load_report_file",
    "load_report_json",
    "load_report_yaml",
    "run_dataset_file",
    "save_report",
]

DATASET_FORMAT: Final = "ferrule.eval_dataset"
"""The `format` of a dataset document."""
REPORT_FORMAT: Final = "ferrule.eval_report"
"""The `format` of a report document."""
_VERSION: Final = 1
DOCUMENT_LIMITS: Final = bounded_json.CLI_CONFIG
"""The limits every dataset and report document is read (and written) within."""

AnyEvaluator: TypeAlias = Evaluator | TraceEvaluator | ReportEvaluator
"""An evaluator of any kind."""


class EvaluatorRegistry:
    """The evaluators a dataset file may name, by name.

    Holds `ExactMatch()`, `Contains()` and `ValidJson()` unless `builtins=False`. Registering a
    second evaluator under a name is allowed, but a file naming it then fails with
    `AmbiguousEvaluator`.
    """

    def __init__(self, evaluators: Iterable[AnyEvaluator] = (), *, builtins: bool = True) -> None:
        self._entries: list[AnyEvaluator] = []
        if builtins:
            self._entries.extend((ExactMatch(), Contains(), ValidJson()))
        for item in evaluators:
            self.register(item)

    def register(self, evaluator: AnyEvaluator) -> None:
        """Add an evaluator of any kind."""
        if not isinstance(evaluator, (Evaluator, TraceEvaluator, ReportEvaluator)):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(f"not an evaluator: {evaluator!r}")
        self._entries.append(evaluator)

    def names(self) -> list[str]:
        """Every registered name, in registration order (duplicates once)."""
        return list(dict.fromkeys(e.name for e in self._entries))

    def resolve(self, name: str) -> AnyEvaluator:
        """The one evaluator called `name` (`UnknownEvaluator`, `AmbiguousEvaluator`)."""
        found = [e for e in self._entries if e.name == name]
        if not found:
            raise UnknownEvaluator(name, self.names())
        if len(found) > 1:
            raise AmbiguousEvaluator(name, len(found))
        return found[0]


# --- documents --------------------------------------------------------------------------------------

NonFinite: TypeAlias = Literal["NaN", "Infinity", "-Infinity"]
_Hex32 = Annotated[str, msgspec.Meta(pattern="^[0-9a-f]{32}$")]
_Hex16 = Annotated[str, msgspec.Meta(pattern="^[0-9a-f]{16}$")]
_Count = Annotated[int, msgspec.Meta(ge=0)]
_Positive = Annotated[int, msgspec.Meta(ge=1)]


class _Doc(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, omit_defaults=True):
    pass


class _Header(msgspec.Struct):
    format: Any = None
    version: Any = None


class _CaseDoc(_Doc, kw_only=True):
    name: str
    inputs: Any
    expected: Any = None
    metadata: dict[str, Any] | None = None


class _DatasetDoc(_Doc, kw_only=True):
    format: str
    version: int
    name: str | None = None
    evaluators: list[str] = []
    trace_evaluators: list[str] = []
    report_evaluators: list[str] = []
    cases: list[_CaseDoc]


class _UsageDoc(_Doc, kw_only=True):
    input_tokens: _Count = 0
    cache_write_tokens: _Count = 0
    cache_read_tokens: _Count = 0
    output_tokens: _Count = 0
    input_audio_tokens: _Count = 0
    cache_audio_read_tokens: _Count = 0
    output_audio_tokens: _Count = 0
    details: dict[str, int] = {}
    requests: _Count = 0
    tool_calls: _Count = 0
    cost_nano_usd: int | None = None


class _EvaluationDoc(_Doc, kw_only=True):
    name: str
    passed: bool | None = None
    score: float | NonFinite | None = None
    reason: str | None = None
    attempts: _Positive = 1
    usage: _UsageDoc | None = None


class _AnalysisDoc(_Doc, kw_only=True):
    name: str
    assertion: bool | None = None
    value: float | None = None
    unit: str | None = None
    reason: str | None = None


class _Attr(msgspec.Struct, forbid_unknown_fields=True, tag_field="type"):
    pass


class _StringAttr(_Attr, tag="string"):
    value: str


class _BoolAttr(_Attr, tag="bool"):
    value: bool


class _IntAttr(_Attr, tag="int"):
    value: int


class _DoubleAttr(_Attr, tag="double"):
    value: float | NonFinite


class _StringArrayAttr(_Attr, tag="string_array"):
    value: list[str]


class _BoolArrayAttr(_Attr, tag="bool_array"):
    value: list[bool]


class _IntArrayAttr(_Attr, tag="int_array"):
    value: list[int]


class _DoubleArrayAttr(_Attr, tag="double_array"):
    value: list[float | NonFinite]


_AttrDoc: TypeAlias = (
    _StringAttr
    | _BoolAttr
    | _IntAttr
    | _DoubleAttr
    | _StringArrayAttr
    | _BoolArrayAttr
    | _IntArrayAttr
    | _DoubleArrayAttr
)


class _SpanEventDoc(_Doc, kw_only=True):
    name: str
    time_unix_nano: _Count
    attributes: dict[str, _AttrDoc] = {}


class _SpanDoc(_Doc, kw_only=True):
    name: str
    trace_id: _Hex32
    span_id: _Hex16
    parent_span_id: _Hex16 | None = None
    kind: SpanKind = "INTERNAL"
    start_time_unix_nano: _Count = 0
    end_time_unix_nano: _Count | None = None
    status: SpanStatus = "UNSET"
    status_description: str | None = None
    scope: str | None = None
    attributes: dict[str, _AttrDoc] = {}
    events: list[_SpanEventDoc] = []


class _RunDoc(_Doc, kw_only=True):
    case_index: _Count
    case_name: str
    repetition: _Positive
    repetitions: _Positive
    task_attempts: _Positive
    output: Any
    usage: _UsageDoc
    latency_seconds: Annotated[float, msgspec.Meta(ge=0)]
    evaluations: list[_EvaluationDoc] = []
    spans: list[_SpanDoc] = []


# A report's document is the document of the dataset it ran (the same fields, in the same order),
# followed by the runs and the analyses.
class _ReportDoc(_DatasetDoc, kw_only=True):
    runs: list[_RunDoc]
    analyses: list[_AnalysisDoc] = []


# --- values -----------------------------------------------------------------------------------------


def _json_value(value: Any, what: str) -> Any:
    """`value` as JSON values; refuses what JSON would lose (non-finite floats, unencodable objects)."""
    try:
        plain = msgspec.to_builtins(value)
    except (TypeError, msgspec.EncodeError) as exc:
        raise UnserializableValue(f"{what} has no JSON form: {exc}") from None
    _check_finite(plain, what)
    return plain


def _check_finite(value: Any, what: str) -> None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                raise UnserializableValue(
                    f"{what} holds the non-finite number {item!r}, which JSON cannot hold"
                )
        elif isinstance(item, dict):
            stack.extend(cast("dict[str, Any]", item).values())
        elif isinstance(item, list):
            stack.extend(cast("list[Any]", item))


def _float_out(value: float) -> float | NonFinite:
    if math.isfinite(value):
        return value
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def _float_in(value: float | NonFinite) -> float:
    if not isinstance(value, str):
        return float(value)
    return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}[value]


def _usage_out(usage: RunUsage) -> _UsageDoc:
    fields = msgspec.structs.asdict(usage)
    try:
        return _UsageDoc(**fields)
    except TypeError as exc:  # a counter added to RunUsage that this version does not know
        raise UnserializableValue(f"usage field not representable in a version-1 report: {exc}") from None


def _usage_in(doc: _UsageDoc) -> RunUsage:
    return RunUsage(**msgspec.structs.asdict(doc))


def _attr_out(key: str, value: AttributeValue) -> _AttrDoc:
    if isinstance(value, bool):
        return _BoolAttr(value)
    if isinstance(value, int):
        return _IntAttr(value)
    if isinstance(value, float):
        return _DoubleAttr(_float_out(value))
    if isinstance(value, str):
        return _StringAttr(value)
    items = list(value)
    if all(isinstance(v, bool) for v in items) and items:
        return _BoolArrayAttr([bool(v) for v in items])
    if all(isinstance(v, int) and not isinstance(v, bool) for v in items) and items:
        return _IntArrayAttr([int(v) for v in items])
    if all(isinstance(v, float) for v in items) and items:
        return _DoubleArrayAttr([_float_out(float(v)) for v in items])
    if all(isinstance(v, str) for v in items):
        return _StringArrayAttr([str(v) for v in items])
    raise UnserializableValue(f"span attribute {key!r} mixes value types: {value!r}")


def _attr_in(doc: _AttrDoc) -> AttributeValue:
    match doc:
        case _StringAttr() | _BoolAttr() | _IntAttr():
            return doc.value
        case _DoubleAttr():
            return _float_in(doc.value)
        case _StringArrayAttr():
            return tuple(doc.value)
        case _BoolArrayAttr():
            return tuple(doc.value)
        case _IntArrayAttr():
            return tuple(doc.value)
        case _DoubleArrayAttr():
            return tuple(_float_in(v) for v in doc.value)
        case _:
            assert_never(doc)


def _attrs_out(attributes: Mapping[str, AttributeValue]) -> dict[str, _AttrDoc]:
    return {k: _attr_out(k, v) for k, v in attributes.items()}


def _attrs_in(attributes: Mapping[str, _AttrDoc]) -> dict[str, AttributeValue]:
    return {k: _attr_in(v) for k, v in attributes.items()}


def _span_out(span: SpanRecord) -> _SpanDoc:
    # The document has the record's fields (a field it lacks fails here, never drops silently);
    # only attributes and events change form.
    fields = msgspec.structs.asdict(span)
    fields["attributes"] = _attrs_out(span.attributes)
    fields["events"] = [
        _SpanEventDoc(name=e.name, time_unix_nano=e.time_unix_nano, attributes=_attrs_out(e.attributes))
        for e in span.events
    ]
    return _SpanDoc(**fields)


def _span_in(doc: _SpanDoc) -> SpanRecord:
    fields = msgspec.structs.asdict(doc)
    fields["attributes"] = _attrs_in(doc.attributes)
    fields["events"] = tuple(
        SpanEvent(name=e.name, time_unix_nano=e.time_unix_nano, attributes=_attrs_in(e.attributes))
        for e in doc.events
    )
    return SpanRecord(**fields)


def _case_out(name: str, inputs: Any, expected: Any, metadata: Mapping[str, Any] | None) -> _CaseDoc:
    return _CaseDoc(
        name=name,
        inputs=_json_value(inputs, f"case {name!r} inputs"),
        expected=_json_value(expected, f"case {name!r} expected value"),
        metadata=None if metadata is None else _json_value(dict(metadata), f"case {name!r} metadata"),
    )


# --- encoding ---------------------------------------------------------------------------------------

_ENCODER: Final = msgspec.json.Encoder()


def _encode_json(doc: msgspec.Struct, what: str) -> bytes:
    data = msgspec.json.format(_ENCODER.encode(doc), indent=2) + b"\n"
    try:
        bounded_json.validate(data, DOCUMENT_LIMITS)
    except bounded_json.JsonError as exc:
        raise UnserializableValue(f"the {what} could not be read back: {exc}") from None
    return data


def _encode_yaml(doc: msgspec.Struct, what: str) -> str:
    _encode_json(doc, what)  # the same structural limits as the JSON form
    text = dump_yaml(msgspec.to_builtins(doc))
    size = len(text.encode("utf-8"))
    if size > DOCUMENT_LIMITS.max_bytes:
        raise UnserializableValue(
            f"the {what} as YAML is {size} bytes, over max_bytes={DOCUMENT_LIMITS.max_bytes} of the "
            f"{DOCUMENT_LIMITS.name!r} limits; use JSON or split it"
        )
    return text


def _dataset_doc(dataset: Dataset) -> _DatasetDoc:
    cases: list[_CaseDoc] = []
    for case in dataset.cases:
        if case.run_options is not None and not case.run_options.is_default():
            set_fields = [
                f for f in case.run_options.__struct_fields__ if getattr(case.run_options, f) is not None
            ]
            raise UnsupportedCaseOptions(
                f"case {case.name!r} has run options ({', '.join(set_fields)}), which may hold dependencies, "
                "callbacks or credentials and are never written to a file; remove them or keep the dataset in code"
            )
        cases.append(_case_out(case.name, case.inputs, case.expected, case.metadata))
    return _DatasetDoc(
        format=DATASET_FORMAT,
        version=_VERSION,
        name=dataset.name,
        evaluators=[e.name for e in dataset.evaluators],
        trace_evaluators=[e.name for e in dataset.trace_evaluators],
        report_evaluators=[e.name for e in dataset.report_evaluators],
        cases=cases,
    )


def dump_dataset_json(dataset: Dataset) -> bytes:
    """The dataset as an indented version-1 JSON document (cases, metadata, evaluator names in order)."""
    return _encode_json(_dataset_doc(dataset), "dataset")


def dump_dataset_yaml(dataset: Dataset) -> str:
    """The dataset as a version-1 YAML document."""
    return _encode_yaml(_dataset_doc(dataset), "dataset")


def _evaluation_out(e: EvaluationResult) -> _EvaluationDoc:
    return _EvaluationDoc(
        name=e.name,
        passed=e.passed,
        score=None if e.score is None else _float_out(e.score),
        reason=e.reason,
        attempts=e.attempts,
        usage=None if e.usage is None else _usage_out(e.usage),
    )


def _run_out(r: CaseResult) -> _RunDoc:
    return _RunDoc(
        case_index=r.case_index,
        case_name=r.case_name,
        repetition=r.repetition,
        repetitions=r.repetitions,
        task_attempts=r.task_attempts,
        output=_json_value(r.output, f"the output of case {r.case_name!r} repetition {r.repetition}"),
        usage=_usage_out(r.usage),
        latency_seconds=r.latency_seconds,
        evaluations=[_evaluation_out(e) for e in r.evaluations],
        spans=[_span_out(s) for s in r.spans],
    )


def _report_doc(report: Report) -> _ReportDoc:
    return _ReportDoc(
        format=REPORT_FORMAT,
        version=_VERSION,
        name=report.name,
        evaluators=list(report.evaluators),
        trace_evaluators=list(report.trace_evaluators),
        report_evaluators=list(report.report_evaluators),
        cases=[_case_out(c.name, c.inputs, c.expected, c.metadata) for c in report.cases],
        runs=[_run_out(r) for r in report.results],
        analyses=[
            _AnalysisDoc(name=a.name, assertion=a.assertion, value=a.value, unit=a.unit, reason=a.reason)
            for a in report.analyses
        ],
    )


def dump_report_json(report: Report) -> bytes:
    """The report as an indented version-1 JSON document (every run, evaluation, analysis and span)."""
    return _encode_json(_report_doc(report), "report")


def dump_report_yaml(report: Report) -> str:
    """The report as a version-1 YAML document."""
    return _encode_yaml(_report_doc(report), "report")


# --- decoding ---------------------------------------------------------------------------------------


def _parse(data: str | bytes, syntax: Literal["JSON", "YAML"]) -> Any:
    try:
        if syntax == "JSON":
            return bounded_json.decode(data, limits=DOCUMENT_LIMITS)
        return load_yaml(data, DOCUMENT_LIMITS)
    except (bounded_json.JsonError, YamlError) as exc:
        raise InvalidEvalDocument(f"invalid {syntax} document: {exc}") from None


def _convert(value: Any, doc_type: type[Any], expected_format: str, what: str) -> Any:
    if not isinstance(value, dict):
        raise InvalidEvalDocument(f"a {what} document is an object, got {type(value).__name__}")
    header = msgspec.convert(value, _Header)
    if header.format != expected_format:
        raise InvalidEvalDocument(
            f"not a {what} document: format is {header.format!r}, expected {expected_format!r}"
        )
    if header.version != _VERSION:
        raise InvalidEvalDocument(
            f"{what} document version {header.version!r} is not supported; this ferrule-evals reads version {_VERSION}"
        )
    try:
        return msgspec.convert(value, doc_type, strict=True)
    except msgspec.ValidationError as exc:
        raise InvalidEvalDocument(f"invalid {what} document: {exc}") from None


def _dataset_from(doc: _DatasetDoc, registry: EvaluatorRegistry) -> Dataset:
    seen: set[str] = set()
    for name in (*doc.evaluators, *doc.trace_evaluators, *doc.report_evaluators):
        if name in seen:
            raise DuplicateEvaluatorName(
                f"evaluator name {name!r} is listed twice; names must be unique across evaluators, "
                "trace_evaluators and report_evaluators"
            )
        seen.add(name)
    ordinary = [_resolve(registry, n, Evaluator, "evaluators") for n in doc.evaluators]
    trace = [_resolve(registry, n, TraceEvaluator, "trace_evaluators") for n in doc.trace_evaluators]
    report = [_resolve(registry, n, ReportEvaluator, "report_evaluators") for n in doc.report_evaluators]
    return Dataset(
        [Case(c.name, c.inputs, c.expected, c.metadata) for c in doc.cases],
        evaluators=ordinary,
        trace_evaluators=trace,
        report_evaluators=report,
        name=doc.name,
    )


def _resolve(registry: EvaluatorRegistry, name: str, kind: type[Any], listed: str) -> Any:
    found = registry.resolve(name)
    if not isinstance(found, kind):
        raise InvalidEvalDocument(
            f"evaluator {name!r} is listed under {listed!r} but is a {type(found).__name__}, not a {kind.__name__}"
        )
    return found


def load_dataset_json(data: str | bytes, registry: EvaluatorRegistry) -> Dataset:
    """A runnable dataset from a version-1 JSON document; evaluators come from `registry`."""
    return _dataset_from(_convert(_parse(data, "JSON"), _DatasetDoc, DATASET_FORMAT, "dataset"), registry)


def load_dataset_yaml(data: str | bytes, registry: EvaluatorRegistry) -> Dataset:
    """A runnable dataset from a version-1 YAML document."""
    return _dataset_from(_convert(_parse(data, "YAML"), _DatasetDoc, DATASET_FORMAT, "dataset"), registry)


def _report_from(doc: _ReportDoc) -> Report:
    cases = tuple(
        ReportCase(name=c.name, inputs=c.inputs, expected=c.expected, metadata=c.metadata) for c in doc.cases
    )
    results: list[CaseResult] = []
    for i, run in enumerate(doc.runs):
        where = f"runs[{i}]"
        if run.case_index >= len(cases):
            raise InvalidEvalDocument(
                f"{where}: case_index {run.case_index} is not one of the {len(cases)} cases"
            )
        if cases[run.case_index].name != run.case_name:
            raise InvalidEvalDocument(
                f"{where}: case_name {run.case_name!r} is not the name of case {run.case_index} "
                f"({cases[run.case_index].name!r})"
            )
        if run.repetition > run.repetitions:
            raise InvalidEvalDocument(f"{where}: repetition {run.repetition} of {run.repetitions}")
        results.append(
            CaseResult(
                case_index=run.case_index,
                case_name=run.case_name,
                repetition=run.repetition,
                repetitions=run.repetitions,
                task_attempts=run.task_attempts,
                output=run.output,
                usage=_usage_in(run.usage),
                latency_seconds=run.latency_seconds,
                evaluations=tuple(
                    EvaluationResult(
                        name=e.name,
                        passed=e.passed,
                        score=None if e.score is None else _float_in(e.score),
                        reason=e.reason,
                        attempts=e.attempts,
                        usage=None if e.usage is None else _usage_in(e.usage),
                    )
                    for e in run.evaluations
                ),
                spans=tuple(_span_in(s) for s in run.spans),
            )
        )
    return Report(
        name=doc.name,
        cases=cases,
        evaluators=tuple(doc.evaluators),
        trace_evaluators=tuple(doc.trace_evaluators),
        report_evaluators=tuple(doc.report_evaluators),
        results=tuple(results),
        analyses=tuple(
            Analysis(name=a.name, assertion=a.assertion, value=a.value, unit=a.unit, reason=a.reason)
            for a in doc.analyses
        ),
    )


def load_report_json(data: str | bytes) -> Report:
    """A report from a version-1 JSON document (strict: unknown keys are refused)."""
    return _report_from(_convert(_parse(data, "JSON"), _ReportDoc, REPORT_FORMAT, "report"))


def load_report_yaml(data: str | bytes) -> Report:
    """A report from a version-1 YAML document (strict: unknown and duplicate keys are refused)."""
    return _report_from(_convert(_parse(data, "YAML"), _ReportDoc, REPORT_FORMAT, "report"))


# --- files ------------------------------------------------------------------------------------------


def _syntax(path: Path) -> Literal["JSON", "YAML"]:
    suffix = path.suffix.lower()
    if suffix == ".json":
        return "JSON"
    if suffix in (".yaml", ".yml"):
        return "YAML"
    raise InvalidEvalDocument(f"{path}: unknown file type {suffix!r}; use .json, .yaml or .yml")


def _read(path: Path) -> bytes:
    try:
        with path.open("rb") as file:
            # One byte past the limit is enough to reject an oversized file without reading it whole.
            return file.read(DOCUMENT_LIMITS.max_bytes + 1)
    except OSError as exc:
        raise InvalidEvalDocument(f"cannot read {path}: {exc.strerror or exc}") from None


def load_dataset_file(path: str | Path, registry: EvaluatorRegistry) -> Dataset:
    """Load a dataset from a `.json`, `.yaml` or `.yml` file."""
    target = Path(path)
    syntax = _syntax(target)
    data = _read(target)
    try:
        if syntax == "JSON":
            return load_dataset_json(data, registry)
        return load_dataset_yaml(data, registry)
    except InvalidEvalDocument as exc:
        raise InvalidEvalDocument(f"{target}: {exc}") from None


def load_report_file(path: str | Path) -> Report:
    """Load a report from a `.json`, `.yaml` or `.yml` file (a baseline, for example)."""
    target = Path(path)
    syntax = _syntax(target)
    data = _read(target)
    try:
        if syntax == "JSON":
            return load_report_json(data)
        return load_report_yaml(data)
    except InvalidEvalDocument as exc:
        raise InvalidEvalDocument(f"{target}: {exc}") from None


def save_report(report: Report, path: str | Path) -> Path:
    """Write a report to a `.json`, `.yaml` or `.yml` file atomically (temp file, fsync, rename)."""
    target = Path(path)
    data = dump_report_json(report) if _syntax(target) == "JSON" else dump_report_yaml(report).encode("utf-8")
    _write_atomic(target, data)
    return target


def _write_atomic(target: Path, data: bytes) -> None:
    temp = target.with_name(f".{target.name}.{secrets.token_hex(8)}.tmp")
    # Not mkstemp: its 0600 mode would make a report unreadable to others whatever the umask says.
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


async def run_dataset_file(
    path: str | Path,
    task: Task,
    registry: EvaluatorRegistry,
    *,
    options: ExecutionOptions | None = None,
) -> Report:
    """Load a dataset file (in a worker thread) and run it: the first half of `ferrule eval DATASET`."""
    dataset = await anyio.to_thread.run_sync(load_dataset_file, path, registry)
    return await dataset.run(task, options=options)
