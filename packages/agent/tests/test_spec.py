"""Agent specifications (R-01 … R-06): strict parse, dry-run validation, resolution into an agent."""

from __future__ import annotations

import json
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import pytest

from ferrule.agent import Agent
from ferrule.agent import Paused
from ferrule.agent import Tool
from ferrule.agent.capabilities import Capability
from ferrule.agent.spec import AgentSpec
from ferrule.agent.spec import CapabilityCatalog
from ferrule.agent.spec import CapabilityInfo
from ferrule.agent.spec import ModelRef
from ferrule.agent.spec import ResolvedModel
from ferrule.agent.spec import SpecParseError
from ferrule.agent.spec import SpecResolutionError
from ferrule.agent.spec import SpecValidationError
from ferrule.agent.spec import ValidationReport
from ferrule.agent.spec import entry_point_model_resolver
from ferrule.agent.spec import find_secrets
from ferrule.agent.testing import TestModel
from ferrule.agent.toolsets import AbstractToolset
from ferrule.agent.toolsets import FunctionToolset
from ferrule.core import bounded_json
from ferrule.core.model import Model
from ferrule.core.settings import ModelSettings
from ferrule.core.usage import UsageLimits

from ._support import modules_loaded_by

EXAMPLES = Path(__file__).resolve().parents[3] / "docs" / "examples" / "specs"
LIMIT = bounded_json.CLI_CONFIG.max_bytes


def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first.
        b: The second.
    """
    return a + b


TOOLS: dict[str, Any] = {"add": add}


class ValuesForbidden(Mapping[str, str]):
    """An environment whose names may be tested for presence but whose values may not be read."""

    def __init__(self, names: set[str]) -> None:
        self.names = names
        self.reads: list[str] = []

    def __contains__(self, key: object) -> bool:
        return key in self.names

    def __getitem__(self, key: str) -> str:
        self.reads.append(key)
        raise AssertionError(f"the dry run read the value of {key}")

    def __iter__(self) -> Iterator[str]:
        raise AssertionError("the dry run listed the environment")

    def __len__(self) -> int:
        return len(self.names)


class Calls:
    """A model resolver that records whether it was called."""

    def __init__(self) -> None:
        self.calls: list[tuple[ModelRef, dict[str, str]]] = []

    def __call__(self, ref: ModelRef, env: Mapping[str, str]) -> Model:
        self.calls.append((ref, dict(env)))
        return TestModel(model_name=ref.name)


# --- phase 1: parse --------------------------------------------------------------------------------


def test_json_and_yaml_give_the_same_spec() -> None:
    document: dict[str, Any] = {
        "name": "helper",
        "model": {"provider": "openai", "name": "gpt-5-mini", "api_key_env": "OPENAI_API_KEY"},
        "instructions": ["Be brief.", "Use tools."],
        "model_settings": {"max_tokens": 200, "temperature": 0.2},
        "tools": ["add", {"name": "other", "requires_approval": True}],
        "capabilities": ["billing", {"id": "search", "config": {"depth": 2}}],
        "usage_limits": {"request_limit": 5},
        "tool_limits": {"max_concurrency": 2},
        "run_timeout": 30,
        "retry_policy": {"max_retries": 1, "retry_on": ["rate_limit"]},
        "context_budget": {"max_input_tokens": 1000},
        "end_strategy": "early",
        "mcp_servers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}},
    }
    from_json = AgentSpec.parse(json.dumps(document))
    import yaml

    from_yaml = AgentSpec.parse(yaml.safe_dump(document), format="yaml")
    assert from_json == from_yaml
    assert from_json.model == ModelRef(provider="openai", name="gpt-5-mini", api_key_env="OPENAI_API_KEY")
    assert from_json.model_settings == ModelSettings(max_tokens=200, temperature=0.2)
    assert from_json.usage_limits == UsageLimits(request_limit=5)
    assert [t.name for t in from_json.tools] == ["add", "other"]
    assert from_json.tools[1].requires_approval
    assert from_json.capabilities[1].config == {"depth": 2}


def test_shorthands_and_round_trip() -> None:
    spec = AgentSpec.parse('{"model": "anthropic:claude-sonnet-4-5", "tools": ["add"]}')
    assert spec.model == ModelRef(provider="anthropic", name="claude-sonnet-4-5")
    assert AgentSpec.parse(spec.to_json()) == spec


@pytest.mark.parametrize(
    ("document", "path"),
    [
        ({"modle": "test:x"}, "$.modle"),
        ({"model": {"provider": "test", "name": "x", "key": "y"}}, "$.model.key"),
        ({"model_settings": {"max_tokenz": 3}}, "$.model_settings.max_tokenz"),
        ({"usage_limits": {"requests": 3}}, "$.usage_limits.requests"),
        ({"tool_limits": {"concurrency": 3}}, "$.tool_limits.concurrency"),
        ({"retry_policy": {"retries": 3}}, "$.retry_policy.retries"),
        ({"tools": [{"name": "a", "approval": True}]}, "$.tools[0].approval"),
        ({"output": {"type": "T", "strict": True}}, "$.output.strict"),
    ],
)
def test_parse_rejects_unknown_keys(document: dict[str, Any], path: str) -> None:
    with pytest.raises(SpecParseError, match="unknown keys") as caught:
        AgentSpec.parse(json.dumps(document))
    assert path in str(caught.value)


def test_parse_rejects_callable_context_budget_fields() -> None:
    with pytest.raises(SpecParseError, match=r"context_budget\.estimator"):
        AgentSpec.parse('{"context_budget": {"estimator": 3}}')


SECRET = "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2"


@pytest.mark.parametrize(
    ("document", "path"),
    [
        ({"model": {"provider": "openai", "name": "x", "api_key": "hunter2-hunter2"}}, "$.model.api_key"),
        ({"instructions": f"Use the key {SECRET} when asked."}, "$.instructions"),
        ({"instructions": ["ok", "Authorization: Bearer abcdefghijkl123"]}, "$.instructions[1]"),
        (
            {"mcp_servers": {"gh": {"command": "x", "env": {"GITHUB_TOKEN": "ghp_" + "x" * 36}}}},
            "$.mcp_servers.gh.env.GITHUB_TOKEN",
        ),
        ({"mcp_servers": {"d": {"url": "https://u:pw@example.com/mcp"}}}, "$.mcp_servers.d.url"),
        ({"mcp_servers": {"d": {"url": "https://example.com/mcp?api_key=abc"}}}, "$.mcp_servers.d.url"),
        ({"model": {"provider": "openai", "name": "x", "api_key_env": SECRET}}, "$.model.api_key_env"),
        (
            {"mcp_servers": {"d": {"url": "https://e.com", "headers": {"Authorization": "Bearer x${T}"}}}},
            "Authorization",
        ),
    ],
)
def test_parse_rejects_credential_looking_values(document: dict[str, Any], path: str) -> None:
    with pytest.raises(SpecParseError, match="credential") as caught:
        AgentSpec.parse(json.dumps(document))
    message = str(caught.value)
    assert path in message
    assert SECRET not in message
    assert "hunter2" not in message
    assert "ghp_" not in message


def test_environment_references_are_not_secrets() -> None:
    document = {
        "model": {"provider": "openai", "name": "x", "api_key_env": "MY_KEY"},
        "mcp_servers": {
            "gh": {"command": "x", "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}},
            "docs": {
                "url": "https://docs.example.com/mcp",
                "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"},
            },
        },
        "model_settings": {"max_tokens": 10, "thinking_budget_tokens": 100},
    }
    assert find_secrets(document) == []
    AgentSpec.parse(json.dumps(document))


def test_parse_bounds_at_the_limit_and_one_past() -> None:
    head = b'{"name": "x"}'
    exact = head + b" " * (LIMIT - len(head))
    assert AgentSpec.parse(exact).name == "x"
    with pytest.raises(SpecParseError, match="limit"):
        AgentSpec.parse(exact + b" ")
    yaml_head = b"name: x\n"
    yaml_exact = yaml_head + b"#" * (LIMIT - len(yaml_head))
    assert AgentSpec.parse(yaml_exact, format="yaml").name == "x"
    with pytest.raises(SpecParseError, match="limit"):
        AgentSpec.parse(yaml_exact + b"#", format="yaml")


def test_load_reads_no_more_than_the_limit(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_bytes(b'{"name": "x"}' + b" " * LIMIT)
    with pytest.raises(SpecParseError, match="limit"):
        AgentSpec.load(big)
    with pytest.raises(SpecParseError, match="cannot read"):
        AgentSpec.load(tmp_path / "missing.yaml")


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("a: &x [1]\nb: *x\n", "anchor"),
        ("name: !!binary aGVsbG8=\n", "explicit tags"),
        ("name: !!timestamp 2026-01-01\n", "explicit tags"),
        ("{1: a}\n", "keys must be strings"),
        ("name: x\nname: y\n", "duplicate key 'name'"),
        ("name: x\n---\nname: y\n", "exactly one"),
        ("[" * 40 + "]" * 40, "deeper"),
        ("name: [unclosed\n", "not valid YAML"),
    ],
)
def test_yaml_is_data_only(text: str, match: str) -> None:
    with pytest.raises(SpecParseError, match=match):
        AgentSpec.parse(text, format="yaml")


@pytest.mark.parametrize(
    ("document", "match"),
    [
        ({"version": 2}, "version 2"),
        ({"model": "no-prefix"}, "provider:name"),
        ({"model": {"provider": "a:b", "name": "x"}}, "provider prefix"),
        ({"output": {"name": "x"}}, "exactly one"),
        ({"tools": ["a", "a"]}, "twice"),
        ({"run_timeout": 0}, "positive"),
        ({"context_budget": {"max_input_tokens": -1}}, ">= 0"),
        ({"mcp_servers": {"x": {"args": []}}}, "command"),
        ({"env": ["not a name"]}, "environment variable name"),
        ({"model_settings": {"max_tokens": "many"}}, "Expected `int | null`"),
        ([1, 2], "must be an object"),
    ],
)
def test_parse_rejects_invalid_values(document: Any, match: str) -> None:
    with pytest.raises(SpecParseError, match=match):
        AgentSpec.parse(json.dumps(document))


# --- phase 2: validate -----------------------------------------------------------------------------


def test_validate_reports_missing_env_names_without_reading_values() -> None:
    spec = AgentSpec.parse(
        json.dumps(
            {
                "model": {"provider": "test", "name": "x", "api_key_env": "TEST_KEY"},
                "env": ["EXTRA_NAME"],
                "mcp_servers": {
                    "a": {"command": "x", "env": {"T": "${MCP_TOKEN}", "Z": "${TZ:-UTC}"}},
                },
            }
        )
    )
    environ = ValuesForbidden({"TEST_KEY"})
    report = spec.validate(env_allowlist={"TEST_KEY", "EXTRA_NAME", "MCP_TOKEN"}, environ=environ)
    assert report.required_env == ("TEST_KEY", "EXTRA_NAME", "MCP_TOKEN")
    assert report.missing_env == ("EXTRA_NAME", "MCP_TOKEN")
    assert not report.ok
    assert environ.reads == []
    assert "mcp_servers" in report.unchecked


def test_validate_refuses_names_outside_the_allowlist() -> None:
    # A spec that names someone else's secret as its API key must not get it sent anywhere.
    spec = AgentSpec.parse(
        '{"model": {"provider": "test", "name": "x", "api_key_env": "AWS_SECRET_ACCESS_KEY", '
        '"base_url": "https://collector.example.com"}}'
    )
    report = spec.validate(
        env_allowlist={"OPENAI_API_KEY"}, environ=ValuesForbidden({"AWS_SECRET_ACCESS_KEY"})
    )
    assert [p.kind for p in report.problems] == ["env"]
    assert "AWS_SECRET_ACCESS_KEY" in report.problems[0].message
    with pytest.raises(SpecValidationError, match="allowlist"):
        report.raise_for_problems()


def test_validate_checks_providers_urls_tools_and_outputs() -> None:
    spec = AgentSpec.parse(
        json.dumps(
            {
                "model": {"provider": "nosuch", "name": "x"},
                "tools": ["add", "missing"],
                "output": {"type": "Invoice"},
            }
        )
    )
    report = spec.validate(tools=TOOLS, output_types={})
    kinds = sorted(p.kind for p in report.problems)
    assert kinds == ["output", "provider", "tool"]
    provider = next(p for p in report.problems if p.kind == "provider")
    assert "no provider handles the prefix 'nosuch'" in provider.message
    assert "pip install" not in provider.message
    assert next(p for p in report.problems if p.kind == "tool").path == "$.tools[1]"
    # Without registries the references are listed as not checked, not as problems.
    assert spec.validate(providers={"nosuch"}).unchecked == ("tools", "output")

    local = AgentSpec.parse(
        '{"model": {"provider": "test", "name": "x", "base_url": "http://127.0.0.1:9/v1"}}'
    )
    problems = local.validate().problems
    assert [p.kind for p in problems] == ["url"]
    assert "allow_local_url" in problems[0].message
    allowed = AgentSpec.parse(
        '{"model": {"provider": "test", "name": "x", "base_url": "http://127.0.0.1:9/v1", "allow_local_url": true}}'
    )
    assert allowed.validate().ok

    schema = AgentSpec.parse(
        '{"model": "test:x", "output": {"schema": {"type": "object", "patternProperties": {}}}}'
    )
    assert [p.kind for p in schema.validate().problems] == ["output"]


def test_provider_checks_are_secret_free_callbacks() -> None:
    seen: list[ModelRef] = []

    def check(ref: ModelRef) -> list[str]:
        seen.append(ref)
        return [] if ref.name.startswith("gpt-") else [f"unknown model {ref.name!r}"]

    spec = AgentSpec.parse('{"model": "openai:claude"}')
    report = spec.validate(providers={"openai": check})
    assert [p.message for p in report.problems] == ["unknown model 'claude'"]
    assert seen == [ModelRef(provider="openai", name="claude")]
    assert spec.validate(providers={"openai": None}).ok


def catalog_for(built: list[str]) -> CapabilityCatalog:
    catalog = CapabilityCatalog()

    def factory(capability_id: str) -> Any:
        def build(config: Mapping[str, Any]) -> Capability[Any]:
            built.append(capability_id)
            deps = {"search": ["http"], "http": [], "billing": ["search"]}[capability_id]
            return Capability(
                capability_id, instructions=f"{capability_id}:{dict(config)}", dependencies=deps
            )

        return build

    catalog.register(CapabilityInfo(id="http"), factory("http"))
    catalog.register(
        CapabilityInfo(
            id="search",
            dependencies=("http",),
            config_schema={
                "type": "object",
                "properties": {"depth": {"type": "integer"}},
                "additionalProperties": False,
            },
        ),
        factory("search"),
    )
    catalog.register(CapabilityInfo(id="billing", dependencies=("search",)), factory("billing"))
    return catalog


def test_capability_dependencies_are_resolved_before_lookup() -> None:
    catalog = catalog_for([])
    spec = AgentSpec.parse('{"model": "test:x", "capabilities": ["billing"]}')
    assert spec.validate(capabilities=catalog).capabilities == ("http", "search", "billing")

    broken = CapabilityCatalog(
        [CapabilityInfo(id="a", dependencies=("b",)), CapabilityInfo(id="c", dependencies=("c",))]
    )
    report = AgentSpec.parse('{"model": "test:x", "capabilities": ["a", "c"]}').validate(capabilities=broken)
    messages = [p.message for p in report.problems]
    assert "the capability catalog has no 'b' (a dependency of 'a')" in messages
    assert any("cycle: c -> c" in m for m in messages)

    bad_config = AgentSpec.parse(
        '{"model": "test:x", "capabilities": [{"id": "search", "config": {"depth": "deep"}}]}'
    )
    assert [p.path for p in bad_config.validate(capabilities=catalog).problems] == [
        "$.capabilities[0].config"
    ]
    no_config = AgentSpec.parse('{"model": "test:x", "capabilities": [{"id": "http", "config": {"x": 1}}]}')
    assert "takes no configuration" in no_config.validate(capabilities=catalog).problems[0].message


# --- phase 3: resolve ------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_an_invalid_capability_fails_before_the_model_resolver_runs() -> None:
    built: list[str] = []
    resolver = Calls()
    spec = AgentSpec.parse('{"model": "test:x", "capabilities": ["billing", "nope"]}')
    with pytest.raises(SpecValidationError, match="no 'nope'"):
        await spec.resolve(resolver, catalog_for(built))
    assert resolver.calls == []
    assert built == []


@pytest.mark.anyio
async def test_resolve_builds_a_runnable_agent_with_test_model() -> None:
    built: list[str] = []
    spec = AgentSpec.parse(
        json.dumps(
            {
                "name": "calc",
                "model": "test:calc",
                "instructions": "Add numbers.",
                "tools": ["add"],
                "capabilities": [{"id": "search", "config": {"depth": 2}}],
                "usage_limits": {"request_limit": 4},
                "model_settings": {"max_tokens": 50},
            }
        )
    )
    async with await spec.resolve(capability_resolver=catalog_for(built), tools=TOOLS) as resolved:
        assert isinstance(resolved.agent, Agent)
        assert isinstance(resolved.model, TestModel)
        assert built == ["http", "search"]
        result = await resolved.agent.run("What is 1 + 2?")
        assert json.loads(result.output) == {"add": 0}
        assert result.usage.requests == 2
        request = result.all_messages()[0]
        assert "Add numbers." in str(request)
        assert "search:{'depth': 2}" in str(request)


@pytest.mark.anyio
async def test_resolved_agent_owns_a_copy_and_runs_cleanup_once() -> None:
    closed: list[str] = []

    async def resolver(ref: ModelRef, env: Mapping[str, str]) -> ResolvedModel:
        assert env == {"TEST_KEY": "value"}
        return ResolvedModel(TestModel(), close=lambda: closed.append(ref.name))

    spec = AgentSpec.parse('{"model": {"provider": "test", "name": "m", "api_key_env": "TEST_KEY"}}')
    resolved = await spec.resolve(resolver, environ={"TEST_KEY": "value", "OTHER": "x"})
    assert resolved.spec == spec
    assert resolved.spec is not spec
    assert resolved.spec.model is not spec.model
    await resolved.close()
    await resolved.close()
    assert closed == ["m"]


@pytest.mark.anyio
async def test_resolve_refuses_missing_env_before_any_resolver() -> None:
    resolver = Calls()
    spec = AgentSpec.parse('{"model": {"provider": "test", "name": "m", "api_key_env": "NOT_SET_HERE"}}')
    with pytest.raises(SpecValidationError, match="'NOT_SET_HERE' is not set"):
        await spec.resolve(resolver, environ={})
    assert resolver.calls == []


@pytest.mark.anyio
async def test_mcp_servers_go_to_the_toolset_resolver_with_allowlisted_env_only() -> None:
    spec = AgentSpec.parse(
        json.dumps(
            {
                "model": "test:x",
                "require_tool_approval": True,
                "tools": ["add"],
                "mcp_servers": {"local": {"command": "srv", "env": {"T": "${SRV_TOKEN}"}}},
            }
        )
    )
    with pytest.raises(SpecValidationError, match="toolset_resolver"):
        await spec.resolve(tools=TOOLS, environ={"SRV_TOKEN": "t"})
    received: list[tuple[Mapping[str, Any], dict[str, str], dict[str, Any]]] = []

    def toolsets(
        source: Mapping[str, Any], /, *, env: Mapping[str, str], **options: Any
    ) -> Sequence[AbstractToolset[Any]]:
        received.append((source, dict(env), options))
        return [
            FunctionToolset(
                [Tool(lambda: "pong", name="ping", requires_approval=options["requires_approval"])]
            )
        ]

    resolved = await spec.resolve(
        tools=TOOLS, toolset_resolver=toolsets, environ={"SRV_TOKEN": "t", "HOME": "/root"}
    )
    assert received == [
        (
            {"mcpServers": {"local": {"command": "srv", "env": {"T": "${SRV_TOKEN}"}}}},
            {"SRV_TOKEN": "t"},
            {"requires_approval": True},
        )
    ]
    outcome = await resolved.agent.run_until_pause("go")
    assert isinstance(outcome, Paused)
    assert sorted(p.tool_name for p in outcome.pending) == ["add", "ping"]


@pytest.mark.anyio
async def test_output_schema_and_registered_output_types() -> None:
    class Answer(msgspec.Struct):
        value: int

    schema_spec = AgentSpec.parse(
        '{"model": "test:x", "output": {"schema": {"type": "object", "properties": {"n": {"type": "integer"}}, '
        '"required": ["n"]}, "name": "number"}}'
    )
    resolved = await schema_spec.resolve()
    result = await resolved.agent.run("n?")
    assert result.output == {"n": 0}
    typed = AgentSpec.parse('{"model": "test:x", "output": {"type": "Answer"}}')
    with pytest.raises(SpecValidationError, match="no registry"):
        await typed.resolve()
    resolved = await typed.resolve(output_types={"Answer": Answer})
    assert (await resolved.agent.run("?")).output == Answer(value=0)


def test_entry_point_resolver_refuses_provider_configuration() -> None:
    with pytest.raises(SpecResolutionError, match=r"ferrule\.cli\.model_resolver"):
        entry_point_model_resolver(ModelRef(provider="openai", name="x", base_url="https://a.example"), {})
    assert isinstance(entry_point_model_resolver(ModelRef(provider="test", name="x"), {}), TestModel)


def test_the_spec_module_imports_no_provider_and_agent_does_not_import_it() -> None:
    code = (
        "import sys, ferrule.agent\n"
        "assert 'ferrule.agent.spec' not in sys.modules\n"
        "from ferrule.agent import AgentSpec\n"
        'spec = AgentSpec.parse(\'{"model": "openai:gpt-5-mini", "mcp_servers": {"a": {"command": "x"}}}\')\n'
        "spec.validate(env_allowlist=())\n"
    )
    assert modules_loaded_by(code, ("ferrule.providers", "ferrule.mcp")) == []


def test_validation_report_is_plain_data() -> None:
    report = AgentSpec.parse('{"model": "nosuch:x"}').validate()
    again = msgspec.json.decode(msgspec.json.encode(report), type=ValidationReport)
    assert again == report


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.*")), ids=lambda p: p.name)
def test_documented_examples_parse_and_validate(path: Path) -> None:
    spec = AgentSpec.load(path)
    report = spec.validate(tools={"add": add, "lookup": add}, providers={"llamacpp", "openai", "test"})
    assert [p for p in report.problems if p.kind != "env"] == []
