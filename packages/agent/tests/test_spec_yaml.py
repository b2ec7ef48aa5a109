"""YAML specifications are read by `ferrule.core.bounded_yaml`: YAML 1.2 core schema, strict, bounded."""

from __future__ import annotations

import json
import sys

import pytest

from ferrule.agent.spec import AgentSpec
from ferrule.agent.spec import SpecParseError
from ferrule.agent.spec import load_document
from ferrule.core.bounded_json import JsonLimits


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("name: a\nmodel: test:x\nname: b\n", r"duplicate key 'name' \(line 3\)"),
        (
            "model: test:x\nmodel_settings:\n  max_tokens: 10\n  temperature: 0.2\n  max_tokens: 20\n",
            r"duplicate key 'max_tokens' \(line 5\)",
        ),
    ],
)
def test_duplicate_keys_are_refused_with_the_key_and_line(text: str, match: str) -> None:
    """PyYAML's own loader kept the last value: the first one was lost without a word."""
    with pytest.raises(SpecParseError, match=match) as raised:
        AgentSpec.parse(text, format="yaml", origin="agent.yaml")
    assert str(raised.value).startswith("agent.yaml is not a usable YAML document: ")


def test_yes_on_and_dates_are_strings() -> None:
    spec = AgentSpec.parse("name: on\ninstructions: [yes, 2026-01-01, 1:30]\n", format="yaml")
    assert spec.name == "on"
    assert spec.instructions == ["yes", "2026-01-01", "1:30"]


@pytest.mark.parametrize("word", ["yes", "no", "on", "off", "Yes", "OFF"])
def test_a_boolean_given_yes_is_refused_by_the_type_check(word: str) -> None:
    document = {"tools": [{"name": "other", "requires_approval": word}]}
    with pytest.raises(SpecParseError) as from_json:
        AgentSpec.parse(json.dumps(document))
    with pytest.raises(SpecParseError) as from_yaml:
        AgentSpec.parse(f"tools:\n- name: other\n  requires_approval: {word}\n", format="yaml")
    assert "Expected `bool`, got `str`" in str(from_yaml.value)
    assert str(from_yaml.value) == str(from_json.value)
    spec = AgentSpec.parse("tools:\n- name: other\n  requires_approval: true\n", format="yaml")
    assert spec == AgentSpec.parse(json.dumps({"tools": [{"name": "other", "requires_approval": True}]}))


def test_numbers_follow_yaml_1_2() -> None:
    """`012` is twelve (YAML 1.1 read ten) and `1e3` a float (YAML 1.1 read a string)."""
    assert load_document("a: 012\nb: 1e3\nc: 0o17\n", format="yaml") == {"a": 12, "b": 1000.0, "c": 15}


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (
            "name: !!str x\n",
            r"explicit tags \(tag:yaml.org,2002:str\) are not allowed in data files \(line 1\)",
        ),
        ("name: !custom x\n", "explicit tags"),
        ("tools: !!seq [a]\n", "explicit tags"),
        ("a: 1\nb: *x\n", r"uses a YAML alias \(line 2\)"),
        ("a: &x 1\n", r"defines a YAML anchor \(line 1\)"),
        ("name: x\n---\nname: y\n", "must hold exactly one YAML document, found more than one"),
        ("# nothing\n", "must hold exactly one YAML document, found 0"),
        (b"name: \xff\n", "is not UTF-8: invalid UTF-8 at byte 6"),
    ],
)
def test_refusals_keep_the_spec_wording(text: str | bytes, match: str) -> None:
    with pytest.raises(SpecParseError, match=match) as raised:
        AgentSpec.parse(text, format="yaml", origin="agent.yaml")
    assert str(raised.value).startswith("agent.yaml ")


TINY = JsonLimits(name="tiny", max_bytes=64, max_depth=3, max_string_bytes=8, max_items=4, max_number_chars=6)


@pytest.mark.parametrize(
    ("at_limit", "past_limit", "match"),
    [
        ("a: [[1]]", "a: [[[1]]]", r"nests deeper than the limit of 3 levels \(tiny\)"),
        ("a: xxxxxxxx", "a: xxxxxxxxx", "max_string_bytes=8 of the 'tiny' limits"),
        ("xxxxxxxx: 1", "xxxxxxxxx: 1", "max_string_bytes=8"),
        ("[1, 2, 3, 4]", "[1, 2, 3, 4, 5]", "max_items=4"),
        ("a: 123456", "a: 1234567", "max_number_chars=6"),
        ("a: 1 #" + "x" * 58, "a: 1 #" + "x" * 59, "65 bytes, more than the limit of 64 bytes"),
    ],
)
def test_yaml_bounds_at_the_limit_and_one_past(at_limit: str, past_limit: str, match: str) -> None:
    load_document(at_limit, format="yaml", limits=TINY)
    with pytest.raises(SpecParseError, match=match) as raised:
        load_document(past_limit, format="yaml", limits=TINY, origin="agent.yaml")
    assert str(raised.value).startswith("agent.yaml ")


def test_missing_pyyaml_names_the_agent_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "yaml", None)  # `import yaml` now raises ImportError
    with pytest.raises(
        SpecParseError, match=r"agent.yaml is YAML, which needs PyYAML: .*ferrule-agent\[yaml\]"
    ):
        AgentSpec.parse("name: x\n", format="yaml", origin="agent.yaml")
    assert AgentSpec.parse('{"name": "x"}').name == "x"  # JSON needs nothing more
