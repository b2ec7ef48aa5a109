"""Plan documents (M-07): the JSON Schema, the semantic rules and the bounds, each naming the step."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from ferrule.agent import Tool
from ferrule.core.errors import UserError
from ferrule.core.json_schema import compile_validator
from ferrule.planning import MAX_BINDINGS
from ferrule.planning import MAX_STEP_ID_CHARS
from ferrule.planning import PLAN_DOCUMENT
from ferrule.planning import Catalog
from ferrule.planning import PlanDocument
from ferrule.planning import PlanError
from ferrule.planning import validate_plan

from .conftest import Recorder
from .conftest import plan
from .conftest import reads_off_dependencies
from .conftest import step


@pytest.fixture
def catalog() -> Catalog:
    tools = Recorder()
    return Catalog(
        [
            tools.tool("lookup"),
            tools.tool("report", params={"city": {"type": "string"}, "temperature": {"type": "integer"}}),
            tools.tool("notify", params={"to": {"type": "string"}}, side_effect="non_idempotent"),
        ],
        agentic_steps=True,
    )


def reject(doc: Any, catalog: Catalog, match: str, step_id: str | None, **options: Any) -> PlanError:
    with pytest.raises(PlanError, match=match) as raised:
        validate_plan(doc, catalog, **options)
    assert raised.value.step_id == step_id
    return raised.value


def test_the_seed_weather_shape_validates_and_is_normalized(catalog: Catalog) -> None:
    doc = plan(
        step("weather"),
        step(
            "outdoor",
            "report",
            depends_on=["weather"],
            condition={"source_step": "weather", "source_path": "outdoor_suitable", "equals": True},
            bindings=[{"source_step": "weather", "source_path": "temperature", "target_path": "temperature"}],
        ),
        step("compose", "lookup", depends_on=["outdoor"], required=False),
    )
    validated = validate_plan(doc, catalog)
    assert isinstance(validated, PlanDocument)
    outdoor = validated.steps[1]
    assert outdoor.condition is not None
    assert outdoor.condition.source_path == "/outdoor_suitable"
    assert outdoor.bindings[0].source_path == "/temperature"
    assert outdoor.bindings[0].target_path == "/temperature"
    assert validated.steps[2].required is False
    # JSON text and the Struct itself validate the same way.
    assert validate_plan(json.dumps(doc), catalog) == validated
    assert validate_plan(validated, catalog) == validated


def test_semantic_rules_name_the_step(catalog: Catalog) -> None:
    reject(plan(step("a"), step("a")), catalog, "must be unique", "a")
    reject(
        plan(step("a", depends_on=["b"]), step("b", depends_on=["c"]), step("c", depends_on=["a"])),
        catalog,
        "cycle: 'a' -> 'b' -> 'c' -> 'a'",
        "a",
    )
    reject(plan(step("a", depends_on=["a"])), catalog, "depend on itself", "a")
    reject(plan(step("a", depends_on=["ghost"])), catalog, "'ghost', which is not a step", "a")
    reject(plan(step("a"), step("b", depends_on=["a", "a"])), catalog, "listed twice", "b")
    reject(
        reads_off_dependencies(condition={"source_step": "x", "source_path": "/ok", "equals": 1}),
        catalog,
        "condition reads step 'x', which is not one of its dependencies",
        "b",
    )
    reject(
        reads_off_dependencies(bindings=[{"source_step": "x", "source_path": "/t", "target_path": "/t"}]),
        catalog,
        "binding reads step 'x', which is not one of its dependencies",
        "b",
    )
    reject(plan(step("a", "rm_rf")), catalog, "capability 'rm_rf' is not in the step's tool catalog", "a")
    reject(
        plan(step("a", input={"city": 3})),
        catalog,
        r"does not fit tool 'lookup': \$.city: must be string",
        "a",
    )
    reject(plan(step("a", input={"town": "x"})), catalog, "does not fit tool 'lookup'", "a")
    reject(
        plan(
            step("a"),
            step("b", depends_on=["a"], condition={"source_step": "a", "source_path": "/x~2", "equals": 1}),
        ),
        catalog,
        "not an RFC 6901 JSON Pointer",
        "b",
    )
    reject(
        plan(
            step("a"),
            step(
                "b", depends_on=["a"], bindings=[{"source_step": "a", "source_path": "/x", "target_path": ""}]
            ),
        ),
        catalog,
        "must name a member of the input",
        "b",
    )
    reject({"version": 1, "steps": [{"id": "a", "input": {}}]}, catalog, "exactly one of 'capability'", "a")


def test_malformed_documents(catalog: Catalog) -> None:
    reject({"version": 2, "steps": [step("a")]}, catalog, "version must be 1", None)
    reject({"version": 1, "steps": []}, catalog, "at least one step", None)
    reject({"version": 1}, catalog, "malformed", None)
    reject(
        {"version": 1, "steps": [step("a"), {"id": 5, "capability": "lookup"}]},
        catalog,
        r"malformed: Expected `str`, got `int` - at `\$.steps\[1\].id`",
        "#1",
    )
    reject({"version": 1, "steps": [step("a", extra=1)]}, catalog, "unknown field `extra`", "a")
    reject("{not json", catalog, "not valid JSON", None)
    reject('{"version": 1, "steps": [' + "1," * 1500 + "1]}", catalog, "max_items", None)
    reject(b"[]", catalog, "malformed", None)
    reject(42, catalog, "must be a JSON object", None)


def test_bounds_exact_and_one_past(catalog: Catalog) -> None:
    exact = plan(*[step(f"s{i}") for i in range(5)])
    assert len(validate_plan(exact, catalog, max_steps=5).steps) == 5
    reject(plan(*[step(f"s{i}") for i in range(6)]), catalog, "PlanBudget.max_steps=5", "s5", max_steps=5)
    validate_plan(plan(step("i" * MAX_STEP_ID_CHARS)), catalog)
    reject(plan(step("i" * (MAX_STEP_ID_CHARS + 1))), catalog, "limit is 64", "i" * MAX_STEP_ID_CHARS + "...")
    binding = {"source_step": "a", "source_path": "/t", "target_path": "/t"}
    validate_plan(plan(step("a"), step("b", depends_on=["a"], bindings=[binding] * MAX_BINDINGS)), catalog)
    reject(
        plan(step("a"), step("b", depends_on=["a"], bindings=[binding] * (MAX_BINDINGS + 1))),
        catalog,
        f"at most {MAX_BINDINGS} bindings",
        "b",
    )
    big = json.dumps(plan(step("a", input={"city": "x" * (PLAN_DOCUMENT.max_string_bytes + 1)})))
    reject(big, catalog, "max_string_bytes", None)


def test_agentic_steps_are_checked(catalog: Catalog) -> None:
    agentic = {"id": "research", "agent": {"prompt": "find it", "tools": ["lookup"], "max_tool_calls": 2}}
    validate_plan({"version": 1, "steps": [agentic]}, catalog)
    cases: list[tuple[dict[str, Any], str]] = [
        ({"prompt": "x", "tools": ["shell"], "max_tool_calls": 2}, "allowlist names 'shell'"),
        ({"prompt": "x", "tools": [], "max_tool_calls": 2}, "non-empty tool allowlist"),
        ({"prompt": "x", "tools": ["lookup", "lookup"], "max_tool_calls": 2}, "twice"),
        ({"prompt": "x", "tools": ["lookup"], "max_tool_calls": 0}, "from 1 to 32"),
        ({"prompt": "x", "tools": ["lookup"], "max_tool_calls": 33}, "from 1 to 32"),
        ({"prompt": " ", "tools": ["lookup"], "max_tool_calls": 1}, "non-empty prompt"),
    ]
    for task, match in cases:
        reject({"version": 1, "steps": [{"id": "r", "agent": task}]}, catalog, match, "r")
    plain = Catalog([Recorder().tool("lookup")])
    reject({"version": 1, "steps": [agentic]}, plain, "agentic steps are not enabled", "research")


def test_the_document_schema_agrees_with_validation(catalog: Catalog) -> None:
    schema = catalog.document_schema(max_steps=3)
    validator = compile_validator(schema)
    good = [
        plan(
            step("a"),
            step(
                "b",
                "report",
                depends_on=["a"],
                bindings=[{"source_step": "a", "source_path": "/t", "target_path": "/temperature"}],
            ),
        ),
        {
            "version": 1,
            "steps": [{"id": "r", "agent": {"prompt": "p", "tools": ["lookup"], "max_tool_calls": 1}}],
        },
    ]
    for doc in good:
        validate_plan(doc, catalog, max_steps=3)
        assert validator.is_valid(doc)
    bad = [
        plan(step("a", "rm_rf")),
        plan(step("a", input={"city": 3})),
        plan(*[step(f"s{i}") for i in range(4)]),
        {"version": 2, "steps": [step("a")]},
        plan(step("a", color="red")),
    ]
    for doc in bad:
        assert not validator.is_valid(doc)
        with pytest.raises(PlanError):
            validate_plan(doc, catalog, max_steps=3)
    steps_schema = schema["properties"]["steps"]
    assert steps_schema["maxItems"] == 3
    branches = steps_schema["items"]["anyOf"]
    assert [b["properties"].get("capability", {}).get("const") for b in branches] == [
        "lookup",
        "report",
        "notify",
        None,
    ]
    # Inputs may leave out what a binding will fill: the tool's `required` is dropped, the rest kept.
    assert branches[1]["properties"]["input"] == {"$ref": "#/$defs/input_1"}
    report_input = schema["$defs"]["input_1"]
    assert "required" not in report_input
    assert report_input["additionalProperties"] is False
    assert set(report_input["properties"]) == {"city", "temperature"}
    patch = catalog.document_schema(max_steps=3, kind="patch")
    assert patch["required"] == ["replace", "steps"]


class Place(msgspec.Struct):
    city: str
    country: str


def locate(place: Place) -> str:
    """Locate a place."""
    return place.city


def test_tool_schemas_with_definitions_are_embedded() -> None:
    catalog = Catalog([Tool(locate, side_effect="read_only")])
    schema = catalog.document_schema(max_steps=2)
    assert "t0_Place" in schema["$defs"]
    doc = plan(step("a", "locate", input={"place": {"city": "Lyon", "country": "FR"}}))
    assert compile_validator(schema).is_valid(doc)
    validate_plan(doc, catalog)
    with pytest.raises(PlanError, match="does not fit tool 'locate'"):
        validate_plan(plan(step("a", "locate", input={"place": {"city": 1}})), catalog)


def test_catalog_construction_errors() -> None:
    with pytest.raises(UserError, match="at least one tool"):
        Catalog([])
    with pytest.raises(UserError, match="named 'lookup'"):
        Catalog([Recorder().tool("lookup"), Recorder().tool("lookup")])
    with pytest.raises(UserError, match="is external"):
        Catalog([Tool.external_tool("remote", parameters_json_schema={"type": "object", "properties": {}})])


def test_the_numbered_schema_admits_only_valid_structure(catalog: Catalog) -> None:
    numbered = compile_validator(catalog.document_schema(max_steps=3, constrained=True))
    plain = compile_validator(catalog.document_schema(max_steps=3))
    good = plan(
        step("s1"),
        step(
            "s2",
            "report",
            input={"city": "Oslo", "temperature": 0},
            depends_on=["s1"],
            condition={"source_step": "s1", "source_path": "/ok", "equals": True},
            bindings=[{"source_step": "s1", "source_path": "/t", "target_path": "/temperature"}],
        ),
        step("s3", depends_on=["s1", "s2"]),
    )
    assert numbered.is_valid(good)
    assert plain.is_valid(good)
    validate_plan(good, catalog)
    bad = [
        plan(step("a")),  # IDs are numbered
        plan(step("s1", depends_on=["s1"])),  # no reference to itself
        plan(step("s1"), step("s2", depends_on=["s3"]), step("s3")),  # nor to a later step (no cycles)
        plan(step("s1"), step("s1")),  # nor a duplicate ID
        plan(step("s1", "report")),  # inputs are complete: temperature is missing
        plan(*[step(f"s{i}") for i in range(1, 5)]),  # at most max_steps
        plan(step("s1"), step("s2", condition={"source_step": "s9", "source_path": "/x", "equals": 1})),
    ]
    for doc in bad:
        assert not numbered.is_valid(doc), doc


def test_the_numbered_patch_schema_replaces_failed_steps_building_on_succeeded_ones(catalog: Catalog) -> None:
    schema = catalog.document_schema(
        max_steps=4, kind="patch", replaceable=["s2", "s3"], succeeded=["s1"], constrained=True
    )
    validator = compile_validator(schema)
    assert validator.is_valid({"replace": ["s2"], "steps": [step("s2", depends_on=["s1"])]})
    assert not validator.is_valid({"replace": ["s1"], "steps": []})  # succeeded: never replaced
    assert not validator.is_valid({"replace": ["s2"], "steps": [step("s4")]})  # replacements keep the IDs
    assert not validator.is_valid({"replace": ["s2"], "steps": [step("s2", depends_on=["s3"])]})
    plain = catalog.document_schema(max_steps=4, kind="patch", replaceable=["s2"])
    assert plain["properties"]["replace"]["items"] == {"enum": ["s2"]}
