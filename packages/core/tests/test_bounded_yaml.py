"""`ferrule.core.bounded_yaml`: YAML 1.2 core schema, refusals with their line, limits, round trip."""

from __future__ import annotations

import math
import subprocess
import sys
from typing import Any
from typing import cast

import msgspec
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from ferrule.core import bounded_json
from ferrule.core.bounded_json import JsonLimitError
from ferrule.core.bounded_json import JsonLimits
from ferrule.core.bounded_yaml import YamlError
from ferrule.core.bounded_yaml import YamlProblem
from ferrule.core.bounded_yaml import dump_yaml
from ferrule.core.bounded_yaml import load_yaml

WIDE = bounded_json.CLI_CONFIG


def test_core_schema_keeps_yes_no_dates_and_sexagesimals_as_strings() -> None:
    text = (
        "a: yes\nb: no\nc: on\nd: true\ne: ~\nf: 0x1f\ng: 0o17\nh: -.inf\n"
        "i: 012\nj: 1:30\nk: 2026-01-01\nl: Off\nm: 1e3\nn: 1_000\no: 'true'\np: null\n"
    )
    assert load_yaml(text, WIDE) == {
        "a": "yes",
        "b": "no",
        "c": "on",
        "d": True,
        "e": None,
        "f": 31,
        "g": 15,
        "h": -math.inf,
        "i": 12,  # decimal, not YAML 1.1's octal 10
        "j": "1:30",  # not YAML 1.1's sexagesimal 90
        "k": "2026-01-01",
        "l": "Off",
        "m": 1000.0,
        "n": "1_000",
        "o": "true",
        "p": None,
    }


@pytest.mark.parametrize(
    ("text", "problem", "message", "line"),
    [
        ("a: 1\nb: 2\na: 3\n", "duplicate_key", "duplicate key 'a'", 3),
        ("x:\n  - k: 1\n    k: 2\n", "duplicate_key", "duplicate key 'k'", 3),
        ("a: &x [1]\n", "anchor", r"anchors \(&x\)", 1),
        ("a: 1\nb: *x\n", "alias", "aliases", 2),  # refused before it is resolved
        ("a: 1\nb: !!str 2\n", "tag", r"explicit tags \(tag:yaml.org,2002:str\)", 2),
        ("a: !!binary aGVsbG8=\n", "tag", "explicit tags", 1),
        ("a: !!set {x}\n", "tag", "explicit tags", 1),
        ("1: a\n", "key", "keys must be strings, got 1", 1),
        ("true: a\n", "key", "keys must be strings, got True", 1),
        ("? [a]\n: b\n", "key", "not collections", 1),
        ("a: 1\n---\nb: 2\n", "documents", "more than one YAML document", 2),
        ("a: [1\n", "malformed", "malformed YAML", 2),
    ],
)
def test_refusals_name_the_problem_and_line(text: str, problem: YamlProblem, message: str, line: int) -> None:
    with pytest.raises(YamlError, match=message) as raised:
        load_yaml(text, WIDE)
    assert (raised.value.problem, raised.value.line) == (problem, line)
    assert str(raised.value).endswith(f"(line {line})")


@pytest.mark.parametrize("text", ["", "# only a comment\n"])
def test_a_file_without_a_document_is_refused(text: str) -> None:
    with pytest.raises(YamlError, match="empty") as raised:
        load_yaml(text, WIDE)
    assert raised.value.problem == "empty"


def test_bytes_must_be_utf8() -> None:
    with pytest.raises(YamlError, match="invalid UTF-8 at byte 3") as raised:
        load_yaml(b"a: \xff\n", WIDE)
    assert raised.value.problem == "not_utf8"
    assert load_yaml("a: é\n".encode(), WIDE) == {"a": "é"}


TINY = JsonLimits(name="tiny", max_bytes=64, max_depth=3, max_string_bytes=8, max_items=4, max_number_chars=6)


@pytest.mark.parametrize(
    ("at_limit", "past_limit", "limit"),
    [
        ("a: 1 #" + "x" * 58, "a: 1 #" + "x" * 59, "max_bytes"),  # 64 bytes, then 65
        (b"a: 1 #" + b"x" * 58, b"a: 1 #" + b"x" * 59, "max_bytes"),
        ("a: 1 #" + "é" * 29, "a: 1 #" + "é" * 29 + "x", "max_bytes"),  # UTF-8 bytes, not characters
        ("a: [[1]]", "a: [[[1]]]", "max_depth"),
        ("a: xxxxxxxx", "a: xxxxxxxxx", "max_string_bytes"),
        ("a: é xxxxx", "a: éé xxxx", "max_string_bytes"),  # bytes, not characters
        ("a: 'xxxxxxxx'", "a: 'xxxxxxxxx'", "max_string_bytes"),  # quoted strings too
        ("[1, 2, 3, 4]", "[1, 2, 3, 4, 5]", "max_items"),
        ("{a: 1, b: 2, c: 3, d: 4}", "{a: 1, b: 2, c: 3, d: 4, e: 5}", "max_items"),
        ("a: 123456", "a: 1234567", "max_number_chars"),
        ("a: -.inf", "a: 1.5e+10", "max_number_chars"),
        ("xxxxxxxx: 1", "xxxxxxxxx: 1", "max_string_bytes"),  # keys are strings too
    ],
)
def test_limits_accept_exactly_the_limit_and_reject_one_past(
    at_limit: str | bytes, past_limit: str | bytes, limit: str
) -> None:
    load_yaml(at_limit, TINY)
    with pytest.raises(JsonLimitError) as raised:
        load_yaml(past_limit, TINY)
    assert (raised.value.limit, raised.value.profile) == (limit, "tiny")


def test_a_wide_document_is_refused_while_reading() -> None:
    """One item past `max_items` stops the reader there: a huge list is never built."""
    limits = msgspec.structs.replace(WIDE, max_items=10)
    with pytest.raises(JsonLimitError) as raised:
        load_yaml("[" + "1, " * 100_000 + "1]", limits)
    assert (raised.value.limit, raised.value.actual) == ("max_items", 11)


def test_pyyaml_is_imported_only_when_used() -> None:
    code = (
        "import sys; import ferrule.core.bounded_yaml as by; from ferrule.core.bounded_json import CLI_CONFIG; "
        "assert 'yaml' not in sys.modules, 'imported too early'; "
        "assert by.load_yaml('a: 1', CLI_CONFIG) == {'a': 1}; assert 'yaml' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_missing_pyyaml_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "yaml", None)  # `import yaml` now raises ImportError
    with pytest.raises(ImportError, match=r"needs PyYAML: .*'ferrule-core\[yaml\]'"):
        load_yaml("a: 1\n", WIDE)
    with pytest.raises(ImportError, match=r"'ferrule-core\[yaml\]'"):
        dump_yaml({"a": 1})


def test_dump_quotes_what_a_reader_could_mistake() -> None:
    value = {"a": "yes", "b": "1:30", "c": "012", "d": "null", "e": "plain", "f": 1.0e20, "g": None}
    text = dump_yaml(value)
    assert text == 'a: "yes"\nb: "1:30"\nc: "012"\nd: "null"\ne: plain\nf: 1.0e+20\ng: null\n'
    assert load_yaml(text, WIDE) == value
    import yaml

    # YAML 1.1 readers (PyYAML's own loader) read the same values back.
    assert yaml.safe_load(text) == value


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=True)
    | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_dump_and_load_round_trip_json_values(value: Any) -> None:
    limits = msgspec.structs.replace(bounded_json.CLI_CONFIG, max_depth=64)
    assert same(load_yaml(dump_yaml(value), limits), value)


def same(a: Any, b: Any) -> bool:
    """Equal with the same types all the way down (`1` is not `1.0`, `-0.0` is not `0.0`)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return repr(a) == repr(b)
    if isinstance(a, list):
        items = cast("list[Any]", a)
        return len(items) == len(b) and all(same(x, y) for x, y in zip(items, b, strict=True))
    if isinstance(a, dict):
        mapping = cast("dict[str, Any]", a)
        return list(mapping) == list(b) and all(same(mapping[k], b[k]) for k in mapping)
    return a == b
