"""The deterministic built-in evaluators and the callback interface."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from ferrule.core import bounded_json
from ferrule.core.usage import RunUsage
from ferrule.evals import Case
from ferrule.evals import Contains
from ferrule.evals import EvaluationResult
from ferrule.evals import ExactMatch
from ferrule.evals import FunctionEvaluator
from ferrule.evals import ValidJson
from ferrule.evals import evaluator

USAGE = RunUsage()


class Person(msgspec.Struct):
    name: str
    age: int


def judge(e: Any, output: Any, expected: Any = None) -> EvaluationResult:
    result = e.evaluate(Case("c", "inputs", expected=expected), output, USAGE)
    assert isinstance(result, EvaluationResult)
    return result


@pytest.mark.parametrize(
    ("output", "expected", "passed"),
    [
        ("5", "5", True),
        ("5", "5 ", False),
        (5, 5, True),
        (5, 5.0, False),  # JSON values: an integer is not a float
        (1, True, False),  # nor a boolean, although 1 == True in Python
        ({"a": 1, "b": [1, 2]}, {"b": [1, 2], "a": 1}, True),  # key order does not matter
        ([1, 2], [2, 1], False),
        (Person("Ada", 36), {"name": "Ada", "age": 36}, True),  # typed outputs compare as their JSON
        (Person("Ada", 36), {"name": "Ada", "age": 37}, False),
        (None, None, True),
    ],
)
def test_exact_match_compares_json_values(output: Any, expected: Any, passed: bool) -> None:
    result = judge(ExactMatch(), output, expected)
    assert result.passed is passed
    assert (result.reason is None) is passed


def test_exact_match_text_options() -> None:
    assert judge(ExactMatch(strip=True), " 42\n", "42").passed
    assert not judge(ExactMatch(), " 42\n", "42").passed
    assert judge(ExactMatch(case_sensitive=False), "Paris", "PARIS").passed
    assert not judge(ExactMatch(), "Paris", "PARIS").passed
    assert judge(ExactMatch(), "Paris", "PARIS").reason == "expected 'PARIS', got 'Paris'"


def test_contains_text_lists_and_mappings() -> None:
    assert judge(Contains(), "The answer is 42.", "42").passed
    assert not judge(Contains(), "The answer is 41.", "42").passed
    assert judge(Contains("paris", case_sensitive=False), "I love Paris").passed
    assert not judge(Contains("paris"), "I love Paris").passed
    assert judge(Contains(), [1, {"x": 2}], {"x": 2}).passed
    assert not judge(Contains(), [1, 2.0], 2).passed  # JSON equality: 2 is not 2.0
    assert judge(Contains("name"), {"name": "Ada"}).passed
    refused = judge(Contains(), "text", 3)
    assert refused.passed is False
    assert refused.reason == "cannot look for 3 in text"
    assert judge(Contains(), 12, 1).reason == "output of type int has no contents"


def test_valid_json_uses_the_bounded_decoder() -> None:
    assert judge(ValidJson(), '{"a": [1, 2]}').passed
    bad = judge(ValidJson(), '{"a": [1, 2}')
    assert bad.passed is False
    assert bad.reason is not None
    assert "malformed JSON" in bad.reason
    assert judge(ValidJson(), 42).reason == "output is int, not JSON text"
    limits = msgspec.structs.replace(bounded_json.TOOL_ARGUMENTS, max_depth=2, name="tiny")
    assert judge(ValidJson(limits=limits), "[[1]]").passed  # depth 2: exactly the limit
    over = judge(ValidJson(limits=limits), "[[[1]]]")
    assert over.passed is False
    assert over.reason is not None
    assert "max_depth=2" in over.reason


def test_function_evaluators_and_the_decorator() -> None:
    def short(case: Case, output: Any, usage: RunUsage) -> bool:
        return len(output) < 5

    assert FunctionEvaluator("short", short).evaluate(Case("c", "x"), "abc", USAGE) is True

    @evaluator("long")
    def long(case: Case, output: Any, usage: RunUsage) -> bool:
        return len(output) >= 5

    assert long.name == "long"
    assert long.evaluate(Case("c", "x"), "abc", USAGE) is False
    assert repr(long) == "FunctionEvaluator('long')"


def test_evaluator_names_must_not_be_empty() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        ExactMatch(name="")
