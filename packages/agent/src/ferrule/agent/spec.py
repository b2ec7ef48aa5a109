"""Agent specifications: an agent described as data, in three explicit phases.

```python
from ferrule.agent.spec import AgentSpec

spec = AgentSpec.load("agent.yaml")                     # 1. strict, data-only parse
report = spec.validate(tools=TOOLS, env_allowlist={"OPENAI_API_KEY"})   # 2. dry run
report.raise_for_problems()
async with await spec.resolve(tools=TOOLS, env_allowlist={"OPENAI_API_KEY"}) as resolved:  # 3.
    result = await resolved.agent.run("Hello")
```

1. **Parse** (`AgentSpec.parse` / `AgentSpec.load`) reads JSON or YAML within the `CLI_CONFIG`
   bounds, rejects unknown keys (also inside model settings and limits) and credential-looking
   values, and never reads the environment, imports a provider or calls application code.
2. **Validate** (`spec.validate`) is a dry run: it checks the provider prefix against the
   installed provider *names* (or the application's secret-free provider checks), resolves
   transitive capability dependencies and then looks each one up in the application's catalog,
   checks tool and output references, JSON Schemas and URLs, and reports which of the needed
   environment variables are missing, looking only at allowlisted *names*, never at a value. It
   builds no model and no client.
3. **Resolve** (`await spec.resolve(...)`) runs the same checks, raises before any resolver is
   called if one fails, then reads the allowlisted variables, builds the capabilities, toolsets
   and finally the model through application-supplied resolvers, and assembles an `Agent`.

This module imports no provider package: models are built by a `ModelResolver`. The default,
`entry_point_model_resolver`, resolves `provider:name` through the installed provider entry
points (`ferrule.agent.models.infer_model`); a spec that sets `api_key_env` or `base_url` needs a
resolver that configures providers, such as `ferrule.cli.model_resolver` from `ferrule-cli`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from collections.abc import Collection
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING
from typing import Any
from typing import Self

import msgspec

from ._spec_document import SPEC_VERSION
from ._spec_document import AgentSpecData
from ._spec_document import CapabilityCatalog
from ._spec_document import CapabilityInfo
from ._spec_document import CapabilityRef
from ._spec_document import CapabilityResolver
from ._spec_document import ModelRef
from ._spec_document import ModelResolver
from ._spec_document import OutputRef
from ._spec_document import ProviderCheck
from ._spec_document import ResolvedModel
from ._spec_document import SpecProblem
from ._spec_document import SpecResolutionError
from ._spec_document import SpecValidationError
from ._spec_document import ToolRef
from ._spec_document import ToolsetResolver
from ._spec_document import ValidationReport
from ._spec_document import entry_point_model_resolver
from ._spec_document import parse_document
from ._spec_parse import DocumentFormat
from ._spec_parse import SpecError
from ._spec_parse import SpecParseError
from ._spec_parse import find_secrets
from ._spec_parse import load_document
from ._tools import Tool
from ._util import settled

if TYPE_CHECKING:
    from ferrule.core.model import Model

    from ._agent import Agent
    from .capabilities import Capability
    from .toolsets import AbstractToolset

__all__ = [
    "SPEC_VERSION",
    "AgentSpec",
    "CapabilityCatalog",
    "CapabilityInfo",
    "CapabilityRef",
    "CapabilityResolver",
    "DocumentFormat",
    "ModelRef",
    "ModelResolver",
    "OutputRef",
    "ResolvedAgent",
    "ResolvedModel",
    "SpecError",
    "SpecParseError",
    "SpecProblem",
    "SpecResolutionError",
    "SpecValidationError",
    "ToolRef",
    "ToolsetResolver",
    "ValidationReport",
    "entry_point_model_resolver",
    "find_secrets",
    "load_document",
    "parse_document",
]


class AgentSpec(AgentSpecData, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """An agent described as data (see the module docs for the three phases).

    Build one with `AgentSpec.parse(document)` or `AgentSpec.load(path)`; the constructor takes
    already-typed values and does not scan for secrets.
    """

    # --- phase 2 --------------------------------------------------------------------------------

    def required_env(self) -> list[str]:
        """The environment variable names this specification needs: `api_key_env`, `env` and every
        `${NAME}` without a default in its MCP servers, in first-use order."""
        from ._spec_resolve import required_env

        return required_env(self)

    def validate(
        self,
        *,
        providers: Collection[str] | Mapping[str, ProviderCheck | None] | None = None,
        capabilities: CapabilityResolver | Iterable[CapabilityInfo | Capability[Any]] | None = None,
        tools: Mapping[str, Tool[Any] | Callable[..., Any]] | None = None,
        output_types: Mapping[str, Any] | None = None,
        env_allowlist: Collection[str] | None = None,
        environ: Mapping[str, str] | None = None,
        model: ModelRef | None = None,
    ) -> ValidationReport:
        """The dry run: every local check, nothing built, no environment value read.

        `providers`: the provider prefixes that exist (default: the installed entry point names,
        without loading them), or a mapping of prefix to a secret-free check `fn(model_ref) ->
        problems`. `capabilities`: the application's catalog. `tools` / `output_types`: the
        registries references are checked against (`None`: not checked, listed in
        `report.unchecked`). `env_allowlist`: the variable names that may be looked at (default:
        those the spec itself names; pass an explicit set for specifications you did not write);
        a needed name outside it is a problem, an allowlisted one absent from `environ` (default
        `os.environ`) is reported in `missing_env`. `model` overrides the spec's model.
        """
        from ._spec_resolve import validate

        return validate(
            self,
            providers=providers,
            capabilities=capabilities,
            tools=tools,
            output_types=output_types,
            env_allowlist=env_allowlist,
            environ=os.environ if environ is None else environ,
            model=model,
            resolving=False,
        )

    # --- phase 3 --------------------------------------------------------------------------------

    async def resolve(
        self,
        model_resolver: ModelResolver | None = None,
        capability_resolver: CapabilityResolver | Iterable[CapabilityInfo | Capability[Any]] | None = None,
        *,
        tools: Mapping[str, Tool[Any] | Callable[..., Any]] | None = None,
        output_types: Mapping[str, Any] | None = None,
        toolset_resolver: ToolsetResolver | None = None,
        providers: Collection[str] | Mapping[str, ProviderCheck | None] | None = None,
        env_allowlist: Collection[str] | None = None,
        environ: Mapping[str, str] | None = None,
        model: ModelRef | None = None,
    ) -> ResolvedAgent:
        """Build the agent: checks first (`SpecValidationError` before any resolver runs), then
        capabilities, toolsets and, last, the model.

        `model_resolver(ref, env)` returns a `Model` or a `ResolvedModel` (a model with a cleanup
        callback), sync or async; default `entry_point_model_resolver`. `env` holds only the
        allowlisted variables the spec needs. `capability_resolver` builds catalog capabilities
        (they stay application-owned). `toolset_resolver(document, env=..., **options)` builds
        the MCP servers: `ferrule.mcp.load_mcp_config` fits as it is. A missing environment
        variable is a `SpecValidationError` here.
        """
        from ._spec_resolve import resolve

        copy = msgspec.json.decode(msgspec.json.encode(self), type=AgentSpec)
        agent, built_model, toolsets, cleanup = await resolve(
            self,
            model_resolver=model_resolver or entry_point_model_resolver,
            capability_resolver=capability_resolver,
            tools=tools,
            output_types=output_types,
            toolset_resolver=toolset_resolver,
            providers=providers,
            env_allowlist=env_allowlist,
            environ=os.environ if environ is None else environ,
            model=model,
        )
        return ResolvedAgent(agent, built_model, copy, toolsets=toolsets, cleanup=cleanup)


# --- the result -----------------------------------------------------------------------------------


class ResolvedAgent:
    """A resolved specification: the agent, its model, and a copy of the specification it came from.

    It owns the copied configuration and the model (`close()` runs the model resolver's cleanup);
    capability objects and tool functions stay the application's. Use it as an async context
    manager, or call `await close()`.
    """

    def __init__(
        self,
        agent: Agent[Any, Any],
        model: Model,
        spec: AgentSpec,
        *,
        toolsets: Sequence[AbstractToolset[Any]] = (),
        cleanup: Callable[[], Any] | None = None,
    ) -> None:
        self.agent = agent
        """The assembled agent."""
        self.model = model
        """The model the resolver built."""
        self.spec = spec
        """A copy of the specification (later changes to the caller's object do not reach it)."""
        self.toolsets = tuple(toolsets)
        """The MCP toolsets built for the spec (also on the agent); enter them to share one connection."""
        self._cleanup = cleanup
        self._closed = False

    async def close(self) -> None:
        """Run the model's cleanup callback once (later calls do nothing)."""
        if self._closed:
            return
        self._closed = True
        if self._cleanup is not None:
            await settled(self._cleanup())

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()
