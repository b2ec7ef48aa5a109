"""Dataset and report files: version-1 JSON and YAML, strict, bounded, and round-tripping exactly."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from ferrule.core.usage import RunUsage
from ferrule.evals import DOCUMENT_LIMITS
from ferrule.evals import AmbiguousEvaluator
from ferrule.evals import Analysis
from ferrule.evals import Case
from ferrule.evals import CaseResult
from ferrule.evals import Contains
from ferrule.evals import Dataset
from ferrule.evals import DuplicateEvaluatorName
from ferrule.evals import EvalConfigError
from ferrule.evals import EvaluationResult
from ferrule.evals import EvaluatorRegistry
from ferrule.evals import ExactMatch
from ferrule.evals import HasSpan
from ferrule.evals import InvalidEvalDocument
from ferrule.evals import MinPassRate
from ferrule.evals import Report
from ferrule.evals import ReportCase
from ferrule.evals import RunOptions
from ferrule.evals import SpanEvent
from ferrule.evals import SpanRecord
from ferrule.evals import UnknownEvaluator
from ferrule.evals import UnserializableValue
from ferrule.evals import UnsupportedCaseOptions
from ferrule.evals import ValidJson
from ferrule.evals import dump_dataset_json
from ferrule.evals import dump_dataset_yaml
from ferrule.evals import dump_report_json
from ferrule.evals import dump_report_yaml
from ferrule.evals import load_dataset_file
from ferrule.evals import load_dataset_json
from ferrule.evals import load_dataset_yaml
from ferrule.evals import load_report_file
from ferrule.evals import load_report_json
from ferrule.evals import load_report_yaml
from ferrule.evals import save_report
from ferrule.evals._io import _UsageDoc

REGISTRY = EvaluatorRegistry([HasSpan(prefix="chat ", evaluator_name="chats"), MinPassRate(0.8)])

DATASET = Dataset(
    [
        Case("add", "What is 2 + 3?", expected="5", metadata={"topic": "arithmetic", "level": 1}),
        Case("json", "Give me JSON", metadata={"tags": ["a", "b"], "weight": 0.5}),
        Case("struct", {"text": "Ada is 36"}, expected={"name": "Ada", "age": 36}),
    ],
    evaluators=[ExactMatch(), ValidJson()],
    trace_evaluators=[HasSpan(prefix="chat ", evaluator_name="chats")],
    report_evaluators=[MinPassRate(0.8)],
    name="smoke",
)


def test_dataset_json_and_yaml_round_trip_with_evaluators_in_order() -> None:
    data = dump_dataset_json(DATASET)
    document = json.loads(data)
    assert document["format"] == "ferrule.eval_dataset"
    assert document["version"] == 1
    assert (document["evaluators"], document["trace_evaluators"], document["report_evaluators"]) == (
        ["exact_match", "valid_json"],
        ["chats"],
        ["min_pass_rate"],
    )
    assert data.startswith(b'{\n  "format"'), "the JSON is indented"
    for loaded in (
        load_dataset_json(data, REGISTRY),
        load_dataset_yaml(dump_dataset_yaml(DATASET), REGISTRY),
    ):
        assert dump_dataset_json(loaded) == data
        assert loaded.cases == DATASET.cases
        assert [e.name for e in loaded.evaluators] == ["exact_match", "valid_json"]
        assert [type(e) for e in loaded.trace_evaluators] == [HasSpan]
        assert [type(e) for e in loaded.report_evaluators] == [MinPassRate]


def test_a_hand_written_yaml_dataset() -> None:
    text = """\
format: ferrule.eval_dataset
version: 1
name: capitals
evaluators: [contains]
cases:
  - name: france
    inputs: |
      What is the capital of France?
    expected: Paris
    metadata: {continent: europe, hard: false, population_m: 2.1, rank: 1, note: null}
  - name: norway
    inputs: "What is the capital of Norway?"
    expected: Oslo
"""
    dataset = load_dataset_yaml(text, EvaluatorRegistry())
    assert dataset.name == "capitals"
    assert [type(e) for e in dataset.evaluators] == [Contains]
    assert dataset.cases[0] == Case(
        "france",
        "What is the capital of France?\n",
        "Paris",
        {"continent": "europe", "hard": False, "population_m": 2.1, "rank": 1, "note": None},
    )


def test_missing_and_ambiguous_evaluators() -> None:
    data = dump_dataset_json(DATASET)
    with pytest.raises(UnknownEvaluator, match="'chats'") as raised:
        load_dataset_json(data, EvaluatorRegistry([MinPassRate(0.8)]))
    assert raised.value.name == "chats"
    with pytest.raises(AmbiguousEvaluator, match="'exact_match' is registered 2 times"):
        load_dataset_json(data, EvaluatorRegistry([ExactMatch(), *REGISTRY._entries[3:]]))
    with pytest.raises(UnknownEvaluator):
        load_dataset_json(data, EvaluatorRegistry(builtins=False))


def test_names_must_be_unique_across_categories_in_a_file() -> None:
    document = json.loads(dump_dataset_json(DATASET))
    document["report_evaluators"] = ["exact_match"]
    with pytest.raises(DuplicateEvaluatorName, match="'exact_match' is listed twice"):
        load_dataset_json(json.dumps(document), REGISTRY)


def test_an_evaluator_listed_under_the_wrong_kind_is_refused() -> None:
    document = json.loads(dump_dataset_json(DATASET))
    document["evaluators"] = ["min_pass_rate"]
    document["report_evaluators"] = []
    with pytest.raises(InvalidEvalDocument, match="listed under 'evaluators' but is a MinPassRate"):
        load_dataset_json(json.dumps(document), REGISTRY)


def test_cases_with_run_options_are_never_serialized() -> None:
    dataset = Dataset([Case("a", "hi", run_options=RunOptions(deps={"api_key": "sk-secret"}))])
    with pytest.raises(UnsupportedCaseOptions, match=r"run options \(deps\)") as raised:
        dump_dataset_json(dataset)
    assert "sk-secret" not in str(raised.value)
    with pytest.raises(UnsupportedCaseOptions):
        dump_dataset_yaml(dataset)
    # Default run options carry nothing and are fine.
    assert json.loads(dump_dataset_json(Dataset([Case("a", "hi", run_options=RunOptions())])))["cases"] == [
        {"name": "a", "inputs": "hi"}
    ]


MUTATIONS: list[tuple[Callable[[dict[str, Any]], object], str]] = [
    (lambda d: d.update(extra=1), "unknown field `extra`"),
    (lambda d: d["cases"][0].update(expect="5"), "unknown field `expect`"),
    (lambda d: d.update(version=2), "version 2 is not supported"),
    (lambda d: d.update(format="ferrule.eval_report"), "not a dataset document"),
    (lambda d: d.pop("cases"), "missing required field `cases`"),
    (lambda d: d["cases"][0].update(name=3), "Expected `str`, got `int`"),
]


@pytest.mark.parametrize(("mutate", "message"), MUTATIONS)
def test_dataset_documents_are_strict(mutate: Callable[[dict[str, Any]], object], message: str) -> None:
    document = json.loads(dump_dataset_json(DATASET))
    mutate(document)
    with pytest.raises(InvalidEvalDocument, match=message):
        load_dataset_json(json.dumps(document), REGISTRY)
    import yaml

    with pytest.raises(InvalidEvalDocument, match=message):
        load_dataset_yaml(yaml.safe_dump(document), REGISTRY)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "format: ferrule.eval_dataset\nversion: 1\nversion: 1\ncases: []\n",
            "duplicate key 'version' .line 3",
        ),
        (
            "format: ferrule.eval_dataset\nversion: 1\ncases:\n- name: a\n  inputs: x\n  name: b\n",
            "duplicate key 'name'",
        ),
        ("format: ferrule.eval_dataset\nversion: 1\ncases: &c []\nx: *c\n", "anchors"),
        ("format: ferrule.eval_dataset\nversion: !!int 1\ncases: []\n", "explicit tags"),
        (
            "format: ferrule.eval_dataset\nversion: 1\ncases: []\n---\nother: 1\n",
            "more than one YAML document",
        ),
        ("format: ferrule.eval_dataset\nversion: 1\ncases: [\n", "malformed YAML"),
        ("", "empty"),
        ("- 1\n", "a dataset document is an object"),
    ],
)
def test_yaml_documents_refuse_duplicate_keys_aliases_tags_and_junk(text: str, message: str) -> None:
    with pytest.raises(InvalidEvalDocument, match=message):
        load_dataset_yaml(text, REGISTRY)


def test_documents_are_bounded_by_the_cli_config_limits() -> None:
    deep: Any = "x"
    for _ in range(DOCUMENT_LIMITS.max_depth - 4):  # the case's metadata sits at depth 4
        deep = [deep]
    ok = Dataset([Case("deep", "x", metadata={"deep": deep})])
    assert load_dataset_json(dump_dataset_json(ok), REGISTRY).cases == ok.cases
    assert load_dataset_yaml(dump_dataset_yaml(ok), REGISTRY).cases == ok.cases
    too_deep = Dataset([Case("deep", "x", metadata={"deep": [deep]})])
    with pytest.raises(UnserializableValue, match="could not be read back"):
        dump_dataset_json(too_deep)
    document = json.loads(dump_dataset_json(ok))
    document["cases"][0]["metadata"]["deep"] = [deep]
    with pytest.raises(InvalidEvalDocument, match="max_depth"):
        load_dataset_json(json.dumps(document), REGISTRY)
    import yaml

    with pytest.raises(InvalidEvalDocument, match="max_depth"):
        load_dataset_yaml(yaml.safe_dump(document), REGISTRY)
    huge = (
        b'{"format": "ferrule.eval_dataset", "version": 1, "cases": [], "x": "'
        + b"x" * DOCUMENT_LIMITS.max_bytes
        + b'"}'
    )
    with pytest.raises(InvalidEvalDocument, match="max_bytes"):
        load_dataset_json(huge, REGISTRY)
    with pytest.raises(InvalidEvalDocument, match="max_bytes"):
        load_dataset_yaml(huge, REGISTRY)


def full_report() -> Report:
    span = SpanRecord(
        name="chat m",
        trace_id="0af7651916cd43dd8448eb211c80319c",
        span_id="b7ad6b7169203331",
        parent_span_id="00f067aa0ba902b7",
        kind="CLIENT",
        start_time_unix_nano=1_700_000_000_000_000_000,
        end_time_unix_nano=1_700_000_000_500_000_000,
        status="ERROR",
        status_description="boom",
        scope="ferrule.agent",
        attributes={
            "s": "text",
            "b": True,
            "i": 7,
            "d": 0.25,
            "nan": math.nan,
            "inf": -math.inf,
            "ss": ("a", "b"),
            "bs": (True, False),
            "is": (1, 2),
            "ds": (1.5, math.inf),
            "empty": (),
        },
        events=(SpanEvent(name="exception", time_unix_nano=1_700_000_000_100_000_000, attributes={"x": 1}),),
    )
    grading = RunUsage(input_tokens=40, output_tokens=9, requests=1, cost_nano_usd=12)
    return Report(
        name="full",
        cases=(
            ReportCase(name="a", inputs="2+3", expected="5", metadata={"k": [1, "v"]}),
            ReportCase(name="b", inputs={"x": 1}),
        ),
        evaluators=("exact_match", "grader"),
        trace_evaluators=("chats",),
        report_evaluators=("min_pass_rate",),
        results=(
            CaseResult(
                case_index=0,
                case_name="a",
                repetition=1,
                repetitions=2,
                task_attempts=3,
                output="5",
                usage=RunUsage(
                    input_tokens=100,
                    output_tokens=20,
                    cache_read_tokens=30,
                    requests=2,
                    tool_calls=1,
                    details={"reasoning_tokens": 5},
                    cost_nano_usd=1234,
                ),
                latency_seconds=0.125,
                evaluations=(
                    EvaluationResult(name="exact_match", passed=True),
                    EvaluationResult(
                        name="grader", passed=False, score=math.nan, reason="bad", attempts=2, usage=grading
                    ),
                    EvaluationResult(name="chats", passed=True, score=2.0),
                ),
                spans=(span,),
            ),
            CaseResult(
                case_index=1,
                case_name="b",
                repetition=2,
                repetitions=2,
                task_attempts=1,
                output={"y": [1, 2.5, None, True]},
                usage=RunUsage(),
                latency_seconds=0.0,
                evaluations=(EvaluationResult(name="grader", score=math.inf),),
            ),
        ),
        analyses=(Analysis(name="min_pass_rate", assertion=False, value=0.5, unit="ratio", reason="low"),),
    )


def test_reports_round_trip_every_field_through_json_and_yaml() -> None:
    report = full_report()
    data = dump_report_json(report)
    text = dump_report_yaml(report)
    for loaded in (load_report_json(data), load_report_yaml(text), load_report_yaml(text.encode())):
        assert dump_report_json(loaded) == data
        assert dump_report_yaml(loaded) == text
        first = loaded.results[0]
        assert (first.task_attempts, first.repetition, first.repetitions, first.latency_seconds) == (
            3,
            1,
            2,
            0.125,
        )
        assert first.usage == report.results[0].usage
        assert first.evaluations[1].usage == report.results[0].evaluations[1].usage
        score = first.evaluations[1].score
        assert score is not None
        assert math.isnan(score)
        assert loaded.results[1].evaluations[0].score == math.inf
        attributes = first.spans[0].attributes
        assert {k: type(v).__name__ for k, v in attributes.items()} == {
            "s": "str", "b": "bool", "i": "int", "d": "float", "nan": "float", "inf": "float",
            "ss": "tuple", "bs": "tuple", "is": "tuple", "ds": "tuple", "empty": "tuple",
        }  # fmt: skip
        assert attributes["is"] == (1, 2)
        assert attributes["ds"] == (1.5, math.inf)
        assert attributes["bs"] == (True, False)
        assert first.spans[0].events == report.results[0].spans[0].events
        assert loaded.analyses == report.analyses
        assert loaded.cases == report.cases
        assert loaded.results[1].output == {"y": [1, 2.5, None, True]}
    assert '"score": "NaN"' in data.decode()


def test_every_run_usage_field_has_a_place_in_the_document() -> None:
    assert set(RunUsage.__struct_fields__) <= set(_UsageDoc.__struct_fields__)


def test_typed_outputs_are_stored_as_json_values() -> None:
    class Person(msgspec.Struct):
        name: str
        age: int

    report = msgspec.structs.replace(
        full_report(), results=(msgspec.structs.replace(full_report().results[0], output=Person("Ada", 36)),)
    )
    assert load_report_json(dump_report_json(report)).results[0].output == {"name": "Ada", "age": 36}


@pytest.mark.parametrize("output", [math.nan, {"x": [math.inf]}, object()])
def test_outputs_json_cannot_hold_are_refused_not_lost(output: Any) -> None:
    report = msgspec.structs.replace(
        full_report(), results=(msgspec.structs.replace(full_report().results[0], output=output),)
    )
    with pytest.raises(UnserializableValue, match="output of case 'a'"):
        dump_report_json(report)


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("runs", 0, "case_index"), 5, "case_index 5 is not one of the 2 cases"),
        (("runs", 0, "case_name"), "b", "is not the name of case 0"),
        (("runs", 0, "repetition"), 3, "repetition 3 of 2"),
        (("runs", 0, "repetition"), 0, "Expected `int` >= 1"),
        (("runs", 0, "spans", 0, "trace_id"), "0AF7651916CD43DD8448EB211C80319C", "matching regex"),
        (("runs", 0, "spans", 0, "span_id"), "b7ad6b71", "matching regex"),
        (("runs", 0, "spans", 0, "attributes", "i", "type"), "float", "Invalid value 'float'"),
        (("runs", 0, "evaluations", 0, "attempts"), 0, "Expected `int` >= 1"),
        (("runs", 0, "usage", "secret"), 1, "unknown field `secret`"),
        (("analyses", 0, "value"), "NaN", "Expected `float | null`"),
    ],
)
def test_report_documents_are_strict_and_consistent(path: tuple[Any, ...], value: Any, message: str) -> None:
    document = json.loads(dump_report_json(full_report()))
    target = document
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(InvalidEvalDocument, match=message):
        load_report_json(json.dumps(document))


def test_files_by_suffix_atomic_saves_and_readable_errors(tmp_path: Path) -> None:
    report = full_report()
    for name in ("report.json", "report.yaml", "report.yml"):
        path = save_report(report, tmp_path / name)
        assert dump_report_json(load_report_file(path)) == dump_report_json(report)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json", "report.yaml", "report.yml"]
    umask = os.umask(0o022)
    os.umask(umask)
    assert (tmp_path / "report.json").stat().st_mode & 0o777 == 0o666 & ~umask
    (tmp_path / "dataset.yaml").write_text(dump_dataset_yaml(DATASET), encoding="utf-8")
    assert load_dataset_file(tmp_path / "dataset.yaml", REGISTRY).cases == DATASET.cases
    with pytest.raises(InvalidEvalDocument, match=r"unknown file type '\.txt'"):
        load_report_file(tmp_path / "report.txt")
    with pytest.raises(InvalidEvalDocument, match="cannot read"):
        load_report_file(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text('{"format": "ferrule.eval_report", "version": 1}', encoding="utf-8")
    with pytest.raises(InvalidEvalDocument, match=r"bad\.json: invalid report document"):
        load_report_file(tmp_path / "bad.json")
    huge = tmp_path / "huge.json"
    huge.write_bytes(b" " * (DOCUMENT_LIMITS.max_bytes * 2))
    with pytest.raises(InvalidEvalDocument, match="max_bytes"):
        load_report_file(huge)
    # Every file problem is a configuration error (a command line maps them to one exit status).
    assert issubclass(InvalidEvalDocument, EvalConfigError)
    assert issubclass(UnknownEvaluator, EvalConfigError)
