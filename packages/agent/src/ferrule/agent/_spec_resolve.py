"""Phases 2 and 3 of agent specifications: the dry-run validation and the resolution into an `Agent`."""

from __future__ import annotations

import re
from collections.abc import Callable
from collections.abc import Collection
from collections.abc import Iterable
from collections.abc import Mapping
from typing import TYPE_CHECKING
from typing import Any
from typing import cast

import msgspec

from ._spec_document import AgentSpecData
from ._spec_document import CapabilityCatalog
from ._spec_document import CapabilityInfo
from ._spec_document import CapabilityResolver
from ._spec_document import ModelRef
from ._spec_document import ModelResolver
from ._spec_document import ProblemKind
from ._spec_document import ProviderCheck
from ._spec_document import ResolvedModel
from ._spec_document import SpecProblem
from ._spec_document import SpecResolutionError
from ._spec_document import SpecValidationError
from ._spec_document import ToolsetResolver
from ._spec_document import ValidationReport
from ._tools import Tool
from ._util import settled

if TYPE_CHECKING:
    from ferrule.core.model import Model

    from ._agent import Agent
    from .capabilities import Capability
    from .toolsets import AbstractToolset

_ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}")


def _mcp_env_names(spec: AgentSpecData) -> tuple[list[str], list[str]]:
    """`${NAME}` references in the MCP servers: (without a default, with a default)."""
    required: list[str] = []
    optional: list[str] = []
    stack: list[Any] = [spec.mcp_servers]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(cast("dict[str, Any]", item).values())
        elif isinstance(item, list):
            stack.extend(cast("list[Any]", item))
        elif isinstance(item, str):
            for match in _ENV_REFERENCE.finditer(item):
                (optional if match.group(2) is not None else required).append(match.group(1))
    return sorted(set(required)), sorted(set(optional) - set(required))


def required_env(spec: AgentSpecData, model: ModelRef | None = None) -> list[str]:
    """The names the spec needs, in first-use order without repeats."""
    names: list[str] = []
    ref = model or spec.model
    if ref is not None and ref.api_key_env is not None:
        names.append(ref.api_key_env)
    names.extend(spec.env)
    names.extend(_mcp_env_names(spec)[0])
    return list(dict.fromkeys(names))


class _Checker:
    def __init__(self) -> None:
        self.problems: list[SpecProblem] = []
        self.unchecked: list[str] = []

    def add(self, path: str, kind: ProblemKind, message: str) -> None:
        self.problems.append(SpecProblem(path=path, kind=kind, message=message))


def _capability_lookup(
    capabilities: CapabilityResolver | Iterable[CapabilityInfo | Capability[Any]] | None,
) -> CapabilityResolver | None:
    if capabilities is None or isinstance(capabilities, CapabilityResolver):
        return capabilities
    return CapabilityCatalog(capabilities)


def _plan_capabilities(spec: AgentSpecData, catalog: CapabilityResolver, check: _Checker) -> list[str]:
    """The requested capabilities with their transitive dependencies, dependencies first.

    Dependencies are followed before anything is looked up for validation, so a missing or
    cyclic dependency is reported against the capability that pulled it in.
    """
    order: list[str] = []
    visiting: list[str] = []
    done: set[str] = set()
    infos: dict[str, CapabilityInfo | None] = {}

    def info_of(capability_id: str) -> CapabilityInfo | None:
        if capability_id not in infos:
            infos[capability_id] = catalog.lookup(capability_id)
        return infos[capability_id]

    def visit(capability_id: str, path: str, via: str | None) -> None:
        if capability_id in done:
            return
        if capability_id in visiting:
            cycle = " -> ".join([*visiting[visiting.index(capability_id) :], capability_id])
            check.add(path, "capability", f"capability dependencies form a cycle: {cycle}")
            return
        info = info_of(capability_id)
        if info is None:
            needed = f" (a dependency of {via!r})" if via is not None else ""
            check.add(path, "capability", f"the capability catalog has no {capability_id!r}{needed}")
            done.add(capability_id)
            return
        visiting.append(capability_id)
        for dependency in info.dependencies:
            visit(dependency, path, capability_id)
        visiting.pop()
        done.add(capability_id)
        order.append(capability_id)

    for i, ref in enumerate(spec.capabilities):
        visit(ref.id, f"$.capabilities[{i}]", None)
    for i, ref in enumerate(spec.capabilities):
        info = infos.get(ref.id)
        if info is None:
            continue
        path = f"$.capabilities[{i}].config"
        if info.config_schema is None:
            if ref.config:
                check.add(path, "capability", f"capability {ref.id!r} takes no configuration")
            continue
        from ferrule.core.errors import FerruleError
        from ferrule.core.json_schema import compile_validator

        try:
            compile_validator(info.config_schema).validate(dict(ref.config))
        except FerruleError as exc:
            check.add(path, "capability", f"does not match the config schema of {ref.id!r}: {exc}")
    return order


def _check_model(
    ref: ModelRef | None,
    providers: Collection[str] | Mapping[str, ProviderCheck | None] | None,
    check: _Checker,
) -> None:
    if ref is None:
        check.add(
            "$.model", "model", "no model: set 'model' (e.g. 'openai:gpt-5-mini') or pass one to resolve"
        )
        return
    if providers is None:
        from .model_strings import installed_providers

        providers = installed_providers()
    if ref.provider not in providers:
        from .model_strings import unknown_provider_message

        check.add("$.model.provider", "provider", unknown_provider_message(ref.provider, sorted(providers)))
    elif isinstance(providers, Mapping):
        provider_check = cast("Mapping[str, ProviderCheck | None]", providers)[ref.provider]
        if provider_check is not None:
            for message in provider_check(ref):
                check.add("$.model", "provider", message)
    if ref.base_url is not None:
        _check_url(ref, check)


def _check_url(ref: ModelRef, check: _Checker) -> None:
    from ferrule.core.errors import UrlPolicyError

    try:
        ref.url_policy().check(ref.base_url or "")
    except UrlPolicyError as exc:
        hint = (
            ""
            if ref.allow_local_url
            else "; set allow_local_url: true for a server on this machine or network"
        )
        check.add("$.model.base_url", "url", f"{exc}{hint}")


def validate(
    spec: AgentSpecData,
    *,
    providers: Collection[str] | Mapping[str, ProviderCheck | None] | None,
    capabilities: CapabilityResolver | Iterable[CapabilityInfo | Capability[Any]] | None,
    tools: Mapping[str, Tool[Any] | Callable[..., Any]] | None,
    output_types: Mapping[str, Any] | None,
    env_allowlist: Collection[str] | None,
    environ: Mapping[str, str],
    model: ModelRef | None,
    resolving: bool,
) -> ValidationReport:
    """Every local check of phase 2 (see `AgentSpec.validate`)."""
    check = _Checker()
    ref = model or spec.model
    _check_model(ref, providers, check)

    planned: list[str] = []
    if spec.capabilities:
        catalog = _capability_lookup(capabilities)
        if catalog is None:
            check.unchecked.append("capabilities")
        else:
            planned = _plan_capabilities(spec, catalog, check)

    if spec.tools:
        if tools is None:
            check.unchecked.append("tools")
        else:
            for i, tool in enumerate(spec.tools):
                if tool.name not in tools:
                    known = ", ".join(sorted(tools)) or "none"
                    check.add(
                        f"$.tools[{i}]", "tool", f"no registered tool {tool.name!r} (registered: {known})"
                    )

    output = spec.output
    if output is not None:
        if output.type is not None:
            if output_types is None:
                check.unchecked.append("output")
            elif output.type not in output_types:
                known = ", ".join(sorted(output_types)) or "none"
                check.add(
                    "$.output.type",
                    "output",
                    f"no registered output type {output.type!r} (registered: {known})",
                )
        elif output.schema is not None:
            from ferrule.core.errors import FerruleError
            from ferrule.core.json_schema import check_schema

            try:
                check_schema(output.schema)
            except FerruleError as exc:
                check.add("$.output.schema", "output", str(exc))
            if output.schema.get("type") != "object":
                check.add(
                    "$.output.schema",
                    "output",
                    "the output schema must describe an object ('type': 'object')",
                )

    names = required_env(spec, ref)
    allowed = set(names) if env_allowlist is None else set(env_allowlist)
    missing: list[str] = []
    for name in names:
        if name not in allowed:
            check.add(
                "$.env",
                "env",
                f"the specification needs the environment variable {name!r}, which is not in the allowlist; "
                "allow it explicitly if you trust this specification",
            )
        elif name not in environ:  # presence only: the value is not read in this phase
            missing.append(name)
            check.add("$.env", "env", f"the environment variable {name!r} is not set")

    if spec.mcp_servers and resolving is False:
        check.unchecked.append("mcp_servers")

    if resolving:
        for what in check.unchecked:
            check.add(
                f"$.{what}",
                _KIND[what],
                f"the specification uses {what} but no registry was given to resolve them",
            )
    return ValidationReport(
        problems=tuple(check.problems),
        required_env=tuple(names),
        missing_env=tuple(missing),
        capabilities=tuple(planned),
        unchecked=tuple(check.unchecked) if not resolving else (),
    )


_KIND: dict[str, ProblemKind] = {
    "capabilities": "capability",
    "tools": "tool",
    "output": "output",
    "mcp_servers": "mcp",
}


async def resolve(
    spec: AgentSpecData,
    *,
    model_resolver: ModelResolver,
    capability_resolver: CapabilityResolver | Iterable[CapabilityInfo | Capability[Any]] | None,
    tools: Mapping[str, Tool[Any] | Callable[..., Any]] | None,
    output_types: Mapping[str, Any] | None,
    toolset_resolver: ToolsetResolver | None,
    providers: Collection[str] | Mapping[str, ProviderCheck | None] | None,
    env_allowlist: Collection[str] | None,
    environ: Mapping[str, str],
    model: ModelRef | None,
) -> tuple[Agent[Any, Any], Model, list[AbstractToolset[Any]], Callable[[], Any] | None]:
    """Phase 3 (see `AgentSpec.resolve`): the agent, its model, the MCP toolsets built for it, and
    the model's cleanup callback."""
    from ._agent import Agent
    from .capabilities import Capability
    from .context_budget import ContextBudget

    catalog = _capability_lookup(capability_resolver)
    report = validate(
        spec,
        providers=providers,
        capabilities=catalog,
        tools=tools,
        output_types=output_types,
        env_allowlist=env_allowlist,
        environ=environ,
        model=model,
        resolving=True,
    )
    problems = list(report.problems)
    if spec.mcp_servers and toolset_resolver is None:
        problems.append(
            SpecProblem(
                path="$.mcp_servers",
                kind="mcp",
                message="the specification has MCP servers; pass toolset_resolver=ferrule.mcp.load_mcp_config",
            )
        )
    if problems:
        raise SpecValidationError(msgspec.structs.replace(report, problems=tuple(problems)))
    ref = model or spec.model
    assert ref is not None  # validate reported a missing model
    # Only now are values read, and only of the names checked above (plus allowlisted optional
    # `${NAME:-default}` references that are set).
    env = {name: environ[name] for name in report.required_env}
    allowed = set(report.required_env) if env_allowlist is None else set(env_allowlist)
    for name in _mcp_env_names(spec)[1]:
        if (env_allowlist is None or name in allowed) and name in environ:
            env[name] = environ[name]

    built: list[Capability[Any]] = []
    by_id = {c.id: c for c in spec.capabilities}
    for capability_id in report.capabilities:
        assert catalog is not None
        ref_config = by_id[capability_id].config if capability_id in by_id else {}
        capability = await settled(catalog.create(capability_id, dict(ref_config)))
        if not isinstance(capability, Capability):
            raise SpecResolutionError(
                f"the capability resolver returned {type(capability).__name__} for {capability_id!r}, not a Capability"
            )
        built.append(cast("Capability[Any]", capability))

    agent_tools: list[Tool[Any]] = []
    for tool_ref in spec.tools:
        assert tools is not None
        agent_tools.append(
            _tool_for(
                tools[tool_ref.name], tool_ref.name, tool_ref.requires_approval or spec.require_tool_approval
            )
        )

    toolsets: list[AbstractToolset[Any]] = []
    if spec.mcp_servers:
        assert toolset_resolver is not None
        options: dict[str, Any] = {"requires_approval": True} if spec.require_tool_approval else {}
        toolsets = list(toolset_resolver({"mcpServers": spec.mcp_servers}, env=env, **options))

    output_type: Any = str
    if spec.output is not None:
        output_type = _output_type(spec, output_types)

    resolved: Any = await settled(model_resolver(ref, env))  # checked below: resolvers are application code
    cleanup: Callable[[], Any] | None = None
    if isinstance(resolved, ResolvedModel):
        cleanup = resolved.close
        resolved = resolved.model
    from ferrule.core.model import Model

    if not isinstance(resolved, Model):
        raise SpecResolutionError(f"the model resolver returned {type(resolved).__name__}, not a Model")
    built_model: Model = resolved

    # Left out when the spec leaves them out, so the agent's own defaults apply.
    options_: dict[str, Any] = {
        option: value
        for option in ("retries", "output_retries", "end_strategy")
        if (value := getattr(spec, option)) is not None
    }
    try:
        agent: Agent[Any, Any] = Agent(
            built_model,
            output_type=output_type,
            instructions=spec.instructions,
            name=spec.name,
            model_settings=spec.model_settings,
            tools=agent_tools,
            usage_limits=spec.usage_limits,
            tool_limits=spec.tool_limits,
            run_timeout=spec.run_timeout,
            retry_policy=spec.retry_policy,
            toolsets=toolsets,
            capabilities=built,
            context_budget=ContextBudget(**cast("dict[str, Any]", spec.context_budget))
            if spec.context_budget
            else None,
            **options_,
        )
    except BaseException:
        if cleanup is not None:
            await settled(cleanup())
        raise
    return agent, built_model, toolsets, cleanup


def _tool_for(registered: Tool[Any] | Callable[..., Any], name: str, requires_approval: bool) -> Tool[Any]:
    tool = cast("Tool[Any]", registered) if isinstance(registered, Tool) else Tool[Any](registered, name=name)
    if tool.name != name:
        tool = tool.replace(name=name)
    if requires_approval and tool.kind != "external" and tool.requires_approval is False:
        tool = tool.replace(requires_approval=True)
    return tool


def _output_type(spec: AgentSpecData, output_types: Mapping[str, Any] | None) -> Any:
    from ._output import NativeOutput
    from ._output import PromptedOutput
    from ._output import StructuredDict
    from ._output import ToolOutput

    output = spec.output
    assert output is not None
    target: Any
    if output.type is not None:
        assert output_types is not None
        target = output_types[output.type]
    else:
        assert output.schema is not None
        target = StructuredDict(schema=dict(output.schema), name=output.name, description=output.description)
    match output.mode:
        case "tool":
            return ToolOutput(target, name=output.name, description=output.description)
        case "native":
            return NativeOutput(target, name=output.name, description=output.description)
        case "prompted":
            return PromptedOutput(target, name=output.name, description=output.description)
