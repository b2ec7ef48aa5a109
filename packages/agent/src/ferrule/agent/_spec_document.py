"""Agent specifications as data: the document types, phase 1 (parse) and the reports and resolver
types phases 2 and 3 use (`ferrule.agent.spec` adds the phases that build things)."""

from __future__ import annotations

import os
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import Literal
from typing import Protocol
from typing import Self
from typing import TypeAlias
from typing import TypeVar
from typing import cast
from typing import runtime_checkable

import msgspec

from ferrule.core import bounded_json
from ferrule.core.model import Model
from ferrule.core.retry import RetryPolicy
from ferrule.core.settings import ModelSettings
from ferrule.core.usage import UsageLimits

from ._spec_parse import ENV_NAME
from ._spec_parse import DocumentFormat
from ._spec_parse import SpecError
from ._spec_parse import SpecParseError
from ._spec_parse import checked_convert
from ._spec_parse import load_document
from ._tools import ToolLimits

if TYPE_CHECKING:
    from ferrule.core.url_policy import UrlPolicy

    from .capabilities import Capability
    from .toolsets import AbstractToolset


T = TypeVar("T")

SPEC_VERSION = 1
"""The specification format version this release reads and writes."""

_CONTEXT_BUDGET_FIELDS = frozenset(
    {
        "max_prompt_bytes",
        "max_tool_bytes",
        "max_schema_bytes",
        "max_media_bytes",
        "max_input_tokens",
        "max_total_tokens",
        "reserve_output_tokens",
    }
)


class SpecValidationError(SpecError):
    """A specification failed its local checks; `report` holds every problem found."""

    def __init__(self, report: ValidationReport) -> None:
        self.report = report
        """The full report."""
        lines = "; ".join(f"{p.path}: {p.message}" for p in report.problems)
        super().__init__(f"the agent specification is not usable: {lines}")


class SpecResolutionError(SpecError):
    """A resolver could not build what the specification asks for."""


# --- the data ---------------------------------------------------------------------------------------


class ModelRef(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The model of a specification: a provider prefix and a model name, plus secret-free options.

    In a document, `"provider:name"` is short for `{"provider": ..., "name": ...}`.
    """

    provider: str
    """The model-string prefix of an installed provider (`openai`, `anthropic`, `llamacpp`, ...)."""
    name: str
    """The provider's model name."""
    api_key_env: str | None = None
    """The *name* of the environment variable holding the API key (never the key)."""
    base_url: str | None = None
    """The API root, for proxies and OpenAI-compatible servers."""
    allow_local_url: bool = False
    """Allow `base_url` to be a loopback or private-network address (exactly that origin)."""

    @property
    def model_string(self) -> str:
        """`provider:name`."""
        return f"{self.provider}:{self.name}"

    def url_policy(self) -> UrlPolicy:
        """The policy `base_url` must pass: the default (public HTTPS), or with `allow_local_url`
        the default plus exactly the origin of `base_url`."""
        from ferrule.core.url_policy import UrlPolicy

        if not self.allow_local_url or self.base_url is None:
            return UrlPolicy()
        from urllib.parse import urlsplit

        try:
            parts = urlsplit(self.base_url)
            # UrlPolicy normalizes the origin (default port, host case) and rejects what is not one.
            return UrlPolicy.local(f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}")
        except ValueError:
            return UrlPolicy()  # not a URL: the default policy reports it when the URL is checked


class OutputRef(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Typed output: a registered type's name, or a JSON Schema (the output is the validated object)."""

    type: str | None = None
    """The name of an output type the application registered (`output_types={"Invoice": Invoice}`)."""
    schema: dict[str, Any] | None = None
    """A JSON Schema of an object, checked against ferrule's fail-closed dialect."""
    name: str | None = None
    """The output's name, for the model."""
    description: str | None = None
    """What the output is, for the model."""
    mode: Literal["tool", "native", "prompted"] = "tool"
    """How the model is asked for it: an output tool, the provider's JSON-schema mode, or the prompt."""


class ToolRef(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A tool the application registered, by name (`"name"` is short for `{"name": ...}`)."""

    name: str
    """The registered tool name."""
    requires_approval: bool = False
    """Pause for a decision before each call of this tool."""


class CapabilityRef(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A capability from the application's catalog, by ID, with its configuration (`"id"` is short)."""

    id: str
    """The capability's stable ID."""
    config: dict[str, Any] = msgspec.field(default_factory=dict)  # pyright: ignore[reportUnknownVariableType]
    """Configuration passed to the catalog's factory, checked against its `config_schema`."""


EndStrategyName: TypeAlias = Literal["graceful", "early", "exhaustive"]


class AgentSpecData(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The fields of an `AgentSpec` and phase 1 (parse); `ferrule.agent.spec.AgentSpec` adds phases 2 and 3."""

    version: int = SPEC_VERSION
    """The format version; a newer one is refused."""
    name: str | None = None
    """The agent's name (telemetry)."""
    description: str | None = None
    """What the agent is for (documentation only)."""
    model: ModelRef | None = None
    """The model; may be left to the application (`resolve(model=...)`)."""
    instructions: str | list[str] | None = None
    """Instructions sent with every request."""
    model_settings: ModelSettings | None = None
    """Portable model settings (`ferrule.core.settings.ModelSettings` fields)."""
    output: OutputRef | None = None
    """Typed output; text when absent."""
    tools: list[ToolRef] = msgspec.field(default_factory=list)  # pyright: ignore[reportUnknownVariableType]
    """Tools the application registered, by name."""
    mcp_servers: dict[str, dict[str, Any]] = msgspec.field(default_factory=dict)  # pyright: ignore[reportUnknownVariableType]
    """MCP servers in the common `mcpServers` format (`${VAR}` expanded from allowlisted names only)."""
    capabilities: list[CapabilityRef] = msgspec.field(default_factory=list)  # pyright: ignore[reportUnknownVariableType]
    """Capabilities from the application's catalog; their dependencies are added."""
    require_tool_approval: bool = False
    """Every tool (registered and MCP) pauses for a decision before it runs."""
    usage_limits: UsageLimits | None = None
    """Request, tool-call, token and cost limits."""
    tool_limits: ToolLimits | None = None
    """Concurrency, queue, result-size and timeout limits of tool calls."""
    run_timeout: float | None = None
    """Seconds one invocation may take."""
    retry_policy: RetryPolicy | None = None
    """How model requests are retried."""
    context_budget: dict[str, int | None] | None = None
    """`ContextBudget` limits (`max_prompt_bytes`, `max_input_tokens`, `max_total_tokens`, ...)."""
    end_strategy: EndStrategyName | None = None
    """What happens to other calls of the response that produced the output."""
    retries: int | None = None
    """The default per-tool retry budget."""
    output_retries: int | None = None
    """The output retry budget."""
    env: list[str] = msgspec.field(default_factory=list)  # pyright: ignore[reportUnknownVariableType]
    """Further environment variable *names* the application's resolvers need (reported by validate)."""

    # --- phase 1 --------------------------------------------------------------------------------

    @classmethod
    def parse(
        cls,
        data: bytes | str | Mapping[str, Any],
        *,
        format: DocumentFormat = "json",
        origin: str = "the agent specification",
    ) -> Self:
        """A specification from a JSON or YAML document (or already-parsed plain data).

        Raises `SpecParseError` for malformed or oversize input (`bounded_json.CLI_CONFIG`), unknown
        keys, values of the wrong type, a newer `version`, and credential-looking values (see
        `find_secrets`); the message names the path and never the value.
        """
        document: Any
        if isinstance(data, Mapping):
            document = _copy_plain(data, origin)
        else:
            document = load_document(data, format=format, origin=origin)
        if not isinstance(document, dict):
            raise SpecParseError(f"{origin} must be an object (a mapping of fields)")
        raw = _normalize(cast("dict[str, Any]", document), origin)
        version = raw.get("version", SPEC_VERSION)
        if isinstance(version, int) and not isinstance(version, bool) and version > SPEC_VERSION:
            raise SpecParseError(
                f"{origin} has version {version}; this ferrule-agent reads up to version {SPEC_VERSION}"
            )
        hint = "; check the spelling against docs/agent.md#agent-specifications"
        spec = cast("Self", checked_convert(raw, cls, origin, hint))
        spec._check_values(origin)
        return spec

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, format: DocumentFormat | None = None) -> Self:
        """`parse` a file; the format comes from the suffix (`.yaml`/`.yml` is YAML, anything else JSON).

        At most `CLI_CONFIG.max_bytes` are read; a larger file is refused without reading it whole.
        """
        file = Path(path)
        chosen: DocumentFormat = format or ("yaml" if file.suffix.lower() in (".yaml", ".yml") else "json")
        limit = bounded_json.CLI_CONFIG.max_bytes
        try:
            with file.open("rb") as handle:
                data = handle.read(limit + 1)
        except OSError as exc:
            raise SpecParseError(
                f"cannot read the agent specification {str(file)!r}: {exc.strerror}"
            ) from None
        return cls.parse(data, format=chosen, origin=str(file))

    def _check_values(self, origin: str) -> None:
        problem = next(_value_problems(self), None)
        if problem is not None:
            raise SpecParseError(f"{origin}: $.{problem[0]} {problem[1]}")

    def to_json(self) -> bytes:
        """The specification as a JSON document (defaults omitted where the types omit them)."""
        return msgspec.json.encode(self)


def parse_document(
    data: bytes | str,
    type: type[T],
    *,
    format: DocumentFormat = "json",
    origin: str = "the document",
) -> T:
    """Read an application's own configuration the way `AgentSpec.parse` reads a specification.

    Bounded by `CLI_CONFIG`, data only, credential-looking values and unknown keys rejected (also
    inside nested msgspec Structs that do not forbid them), then converted to `type`; every
    failure is a `SpecParseError` naming the path, never the value.
    """
    document = load_document(data, format=format, origin=origin)
    if not isinstance(document, dict):
        raise SpecParseError(f"{origin} must be an object (a mapping of fields)")
    return cast("T", checked_convert(document, type, origin))


def _value_problems(spec: AgentSpecData) -> Iterator[tuple[str, str]]:
    """`(path, problem)` for values a type cannot rule out, in document order."""
    if spec.version < 1:
        yield "version", f"must be 1, not {spec.version}"
    if spec.model is not None:
        if not spec.model.provider or ":" in spec.model.provider:
            yield "model.provider", "must be a provider prefix such as 'openai' (without ':')"
        if not spec.model.name:
            yield "model.name", "must not be empty"
        if spec.model.api_key_env is not None and not ENV_NAME.match(spec.model.api_key_env):
            yield "model.api_key_env", "must be an environment variable name"
    if spec.output is not None and (spec.output.type is None) == (spec.output.schema is None):
        yield "output", "needs exactly one of 'type' (a registered output type) or 'schema'"
    yield from _duplicates("tools", [t.name for t in spec.tools])
    yield from _duplicates("capabilities", [c.id for c in spec.capabilities])
    for name, entry in spec.mcp_servers.items():
        if ("command" in entry) == ("url" in entry):
            yield f"mcp_servers.{name}", 'needs either "command" (a stdio server) or "url" (an HTTP server)'
    yield from _limit_problems(spec)


def _duplicates(field: str, names: list[str]) -> Iterator[tuple[str, str]]:
    seen: set[str] = set()
    for i, name in enumerate(names):
        if name in seen:
            yield f"{field}[{i}]", f"names {name!r} twice"
        seen.add(name)


def _limit_problems(spec: AgentSpecData) -> Iterator[tuple[str, str]]:
    if spec.run_timeout is not None and not spec.run_timeout > 0:
        yield "run_timeout", "must be a positive number of seconds"
    for field in ("retries", "output_retries"):
        value = getattr(spec, field)
        if value is not None and value < 0:
            yield field, "must be >= 0"
    for key, value in (spec.context_budget or {}).items():
        if key not in _CONTEXT_BUDGET_FIELDS:
            yield (
                f"context_budget.{key}",
                f"is not a limit; use one of {', '.join(sorted(_CONTEXT_BUDGET_FIELDS))}",
            )
        elif value is not None and value < 0:
            yield f"context_budget.{key}", "must be >= 0"
    for i, name in enumerate(spec.env):
        if not ENV_NAME.match(name):
            yield f"env[{i}]", "must be an environment variable name"


def _copy_plain(data: Mapping[str, Any], origin: str) -> Any:
    """A plain-data copy of an in-memory document, bounded like a file."""
    try:
        encoded = msgspec.json.encode(data)
    except (TypeError, msgspec.EncodeError) as exc:
        raise SpecParseError(f"{origin} must hold only JSON values: {exc}") from None
    return load_document(encoded, origin=origin)


def _normalize(document: dict[str, Any], origin: str) -> dict[str, Any]:
    """Expand the string shorthands (`model`, `tools`, `capabilities`) into their object form."""
    raw = dict(document)
    model = raw.get("model")
    if isinstance(model, str):
        provider, sep, name = model.partition(":")
        if not sep or not provider or not name:
            raise SpecParseError(
                f"{origin}: $.model must be 'provider:name' (e.g. 'openai:gpt-5-mini') or an object"
            )
        raw["model"] = {"provider": provider, "name": name}
    for key, field in (("tools", "name"), ("capabilities", "id")):
        items = raw.get(key)
        if isinstance(items, list):
            raw[key] = [{field: item} if isinstance(item, str) else item for item in cast("list[Any]", items)]
    return raw


# --- reports --------------------------------------------------------------------------------------

ProblemKind: TypeAlias = Literal["model", "provider", "env", "capability", "tool", "output", "mcp", "url"]


class SpecProblem(msgspec.Struct, frozen=True, kw_only=True):
    """One failed check: where, what kind, and what to do."""

    path: str
    """Where in the specification, e.g. `$.capabilities[1].id`."""
    kind: ProblemKind
    """Which check failed."""
    message: str
    """What is wrong and what to do (never an environment value)."""


class ValidationReport(msgspec.Struct, frozen=True, kw_only=True):
    """What the dry run found."""

    problems: tuple[SpecProblem, ...] = ()
    """Every failed check; empty when the specification can be resolved."""
    required_env: tuple[str, ...] = ()
    """The environment variable names the specification needs."""
    missing_env: tuple[str, ...] = ()
    """Allowlisted needed names that are not set (also listed as problems)."""
    capabilities: tuple[str, ...] = ()
    """The capability IDs to build, dependencies first."""
    unchecked: tuple[str, ...] = ()
    """References that were not checked because no registry was given (`tools`, `output`, ...)."""

    @property
    def ok(self) -> bool:
        """Whether no check failed."""
        return not self.problems

    def raise_for_problems(self) -> None:
        """Raise `SpecValidationError` if any check failed."""
        if self.problems:
            raise SpecValidationError(self)


# --- resolvers ------------------------------------------------------------------------------------

ProviderCheck: TypeAlias = Callable[[ModelRef], Iterable[str]]
"""A provider's secret-free check of a model reference: the problems found (empty when fine)."""


class ResolvedModel:
    """A model a resolver built, with the callback that releases what it holds (a client, a server)."""

    __slots__ = ("close", "model")

    def __init__(self, model: Model, close: Callable[[], Any] | None = None) -> None:
        self.model = model
        """The model."""
        self.close = close
        """Called (and awaited if it returns an awaitable) by `ResolvedAgent.close()`."""


ModelResolver: TypeAlias = Callable[
    [ModelRef, Mapping[str, str]], "Model | ResolvedModel | Awaitable[Model | ResolvedModel]"
]
"""`resolver(ref, env) -> Model | ResolvedModel` (sync or async); `env` holds only allowlisted names."""


class ToolsetResolver(Protocol):
    """Builds MCP toolsets from an `{"mcpServers": ...}` document (`ferrule.mcp.load_mcp_config` fits)."""

    def __call__(
        self, source: Mapping[str, Any], /, *, env: Mapping[str, str], **options: Any
    ) -> Sequence[AbstractToolset[Any]]:
        """The toolsets; `env` expands `${NAME}`, `options` (e.g. `requires_approval=True`) go to each server."""
        ...


class CapabilityInfo(msgspec.Struct, frozen=True, kw_only=True):
    """What validation needs to know about a catalog capability, without building it."""

    id: str
    """The stable ID."""
    dependencies: tuple[str, ...] = ()
    """IDs built (and activated) before this one."""
    config_schema: dict[str, Any] | None = None
    """A JSON Schema the spec's `config` must match; `None` accepts only an empty config."""
    description: str | None = None
    """One line about it."""


@runtime_checkable
class CapabilityResolver(Protocol):
    """An application's capability catalog: secret-free lookup for validation, and a factory."""

    def lookup(self, capability_id: str) -> CapabilityInfo | None:
        """The capability's info, or `None` if the catalog has no such ID."""
        ...

    def create(self, capability_id: str, config: Mapping[str, Any]) -> Any:
        """The `Capability` for `capability_id` with `config` (or an awaitable of it)."""
        ...


class CapabilityCatalog:
    """A `CapabilityResolver` over ready `Capability` objects and factories.

    `CapabilityCatalog([billing, search])` serves existing objects (config must be empty);
    `catalog.register(info, factory)` adds one built from its config by `factory(config)`.
    """

    def __init__(self, capabilities: Iterable[Capability[Any] | CapabilityInfo] = ()) -> None:
        self._entries: dict[str, tuple[CapabilityInfo, Callable[[Mapping[str, Any]], Any] | None]] = {}
        for item in capabilities:
            if isinstance(item, CapabilityInfo):
                self._entries[item.id] = (item, None)
            else:
                self.add(item)

    def add(self, capability: Capability[Any]) -> None:
        """Serve an existing capability object (it needs an `id`)."""
        if capability.id is None:
            raise SpecError("a capability served from a catalog needs an id")
        info = CapabilityInfo(
            id=capability.id, dependencies=tuple(capability.dependencies), description=capability.description
        )
        self._entries[capability.id] = (info, lambda _config, c=capability: c)

    def register(self, info: CapabilityInfo, factory: Callable[[Mapping[str, Any]], Any]) -> None:
        """Serve a capability built by `factory(config)` (sync or async)."""
        self._entries[info.id] = (info, factory)

    def lookup(self, capability_id: str) -> CapabilityInfo | None:
        """The capability's info, or `None`."""
        entry = self._entries.get(capability_id)
        return None if entry is None else entry[0]

    def create(self, capability_id: str, config: Mapping[str, Any]) -> Any:
        """Build (or hand out) the capability."""
        entry = self._entries.get(capability_id)
        if entry is None or entry[1] is None:
            raise SpecResolutionError(f"the capability catalog cannot build {capability_id!r}")
        return entry[1](config)


def entry_point_model_resolver(ref: ModelRef, env: Mapping[str, str]) -> Model:
    """The default `ModelResolver`: `provider:name` through the installed provider entry points.

    Providers read their own credentials from their conventional variables. A reference with
    `api_key_env` or `base_url` is refused: configuring a provider needs a resolver that knows it
    (`ferrule.cli.model_resolver` handles openai, anthropic, google and openai-compatible).
    """
    del env
    if ref.api_key_env is not None or ref.base_url is not None:
        raise SpecResolutionError(
            f"the default model resolver builds {ref.model_string!r} from the provider's entry point, which "
            "cannot take api_key_env or base_url; pass model_resolver=ferrule.cli.model_resolver (ferrule-cli) "
            "or your own resolver"
        )
    from .model_strings import infer_model

    return infer_model(ref.model_string)
