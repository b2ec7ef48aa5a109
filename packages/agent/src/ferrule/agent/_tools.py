"""Tools: typed Python functions the model can call, with schemas and validation built once."""

from __future__ import annotations

import dataclasses
import inspect
import math
import typing
import weakref
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Annotated
from typing import Any
from typing import Final
from typing import Generic
from typing import Literal
from typing import TypeAlias
from typing import cast
from typing import get_origin

import msgspec

from ferrule.core import bounded_json
from ferrule.core.errors import UserError
from ferrule.core.messages import UserContent
from ferrule.core.model import ToolDefinition

from ._context import DepsT
from ._context import RunContext
from ._effects import Confirmation
from ._effects import Risk
from ._effects import SideEffect
from ._errors import ToolDefinitionError
from ._foreign import PydanticShape
from ._foreign import described
from ._foreign import enc_hook
from ._foreign import model as pydantic_model
from ._foreign import pydantic_error_details
from ._foreign import uses_pydantic
from ._schema import SchemaMismatch
from ._schema import check_against
from ._schema import compile_schema
from ._schema import strip_title
from ._schema import type_schema
from ._sync_tools import DEFAULT_SYNC_THREADS
from ._sync_tools import ToolThreads
from ._util import is_async
from ._util import tighter

if TYPE_CHECKING:
    # The docstring parser (its patterns) loads with the first tool built from a function.
    from ._docstring import DocstringFormat

__all__ = [
    "Confirmation",
    "Origin",
    "Risk",
    "SideEffect",
    "Tool",
    "ToolLimits",
    "ToolReturn",
]

Origin: TypeAlias = Literal["application", "mcp", "workflow"]
"""Where a tool comes from: the application, an MCP server, or the framework's workflow itself."""

ApprovalPredicate: TypeAlias = Callable[[RunContext[Any], Any], "bool | Awaitable[bool]"]
"""`predicate(ctx, args)` deciding on validated arguments whether a call needs approval."""

_KIB = 1024
_KEEP: Any = object()  # "leave this field as it is" in `Tool.replace`
_MIB = 1024 * 1024


class ToolLimits(msgspec.Struct, frozen=True, kw_only=True):
    """Bounds on tool execution; per-tool limits can only tighten the agent's."""

    max_concurrency: int = 8
    """Calls of one model response that may run at the same time."""
    max_queue: int = 64
    """Calls that may wait for a free slot; calls beyond it get a retry prompt without running."""
    max_result_bytes: int = 1 * _MIB
    """Largest encoded (JSON) tool result accepted into history."""
    max_follow_ups: int = 16
    """Most follow-up user content items one call may add (`ToolReturn.content`)."""
    max_follow_up_bytes: int = 1 * _MIB
    """Largest total of follow-up strings and binary data one call may add."""
    timeout: float | None = None
    """Seconds one call may run; `None` means only the run deadline applies."""
    max_tool_calls: int | None = None
    """Function tool calls allowed in a whole run (checked before each batch runs); agent-level only."""
    max_sync_threads: int = DEFAULT_SYNC_THREADS
    """Worker threads the agent's sync tools and output functions may occupy at once, across all its
    runs, counting calls that timed out but are still running; agent-level only."""

    def __post_init__(self) -> None:
        for name in (
            "max_concurrency",
            "max_queue",
            "max_result_bytes",
            "max_follow_ups",
            "max_follow_up_bytes",
        ):
            value = getattr(self, name)
            if value < 0 or (name == "max_concurrency" and value < 1):
                raise ValueError(f"ToolLimits.{name} must be positive, got {value}")
        if self.timeout is not None and (not math.isfinite(self.timeout) or self.timeout <= 0):
            raise ValueError(f"ToolLimits.timeout must be a positive number of seconds, got {self.timeout!r}")
        if self.max_sync_threads < 1:
            raise ValueError(f"ToolLimits.max_sync_threads must be at least 1, got {self.max_sync_threads}")
        if self.max_tool_calls is not None and self.max_tool_calls < 0:
            raise ValueError(f"ToolLimits.max_tool_calls must be >= 0, got {self.max_tool_calls}")

    def tightened(self, other: ToolLimits | None, timeout: float | None = None) -> ToolLimits:
        """The stricter of these limits and `other` (and an extra `timeout`), field by field."""
        if other is None and timeout is None:
            return self
        o = other or self
        return ToolLimits(
            max_concurrency=min(self.max_concurrency, o.max_concurrency),
            max_queue=min(self.max_queue, o.max_queue),
            max_result_bytes=min(self.max_result_bytes, o.max_result_bytes),
            max_follow_ups=min(self.max_follow_ups, o.max_follow_ups),
            max_follow_up_bytes=min(self.max_follow_up_bytes, o.max_follow_up_bytes),
            timeout=tighter(tighter(self.timeout, o.timeout), timeout),
            max_tool_calls=self.max_tool_calls,
            max_sync_threads=self.max_sync_threads,
        )


@dataclasses.dataclass(frozen=True, slots=True)
class ToolReturn:
    """A tool result plus follow-up content for the model (images, documents, text).

    `return_value` becomes the tool result; `content` is added as a user prompt after all tool
    results of the step, in call order; `metadata` is kept on the result and never sent.
    """

    return_value: Any
    """The value sent back as the tool's result."""
    content: str | Sequence[UserContent] | None = None
    """Follow-up user content sent after the tool results."""
    metadata: Any = None
    """Application data stored on the result part; never sent to the model."""


def _is_run_context(annotation: Any) -> bool:
    if annotation is RunContext or get_origin(annotation) is RunContext:
        return True
    return isinstance(annotation, str) and (
        annotation == "RunContext" or annotation.startswith("RunContext[")
    )


class Tool(Generic[DepsT]):
    """A function the model can call.

    Schema and descriptions come from the signature and docstring; arguments are validated with a
    msgspec Struct built once, here (a pydantic model instead when the signature mentions pydantic). Sync functions run in a worker thread (see `call`); async ones
    are awaited. The first parameter may be a `RunContext[Deps]`.
    """

    __slots__ = (
        "_call_sync",
        "_field_names",
        "_raw",
        "_shape",
        "_threads",
        "_validator",
        "args_type",
        "confirmation",
        "defer_loading",
        "definition",
        "description",
        "function",
        "is_async",
        "kind",
        "limits",
        "max_retries",
        "metadata",
        "name",
        "origin",
        "parameters_json_schema",
        "prepare",
        "requires_approval",
        "risk",
        "sequential",
        "side_effect",
        "strict",
        "takes_ctx",
        "timeout",
    )

    def __init__(
        self,
        function: Callable[..., Any] | None,
        *,
        name: str | None = None,
        description: str | None = None,
        takes_ctx: bool | None = None,
        max_retries: int | None = None,
        requires_approval: bool | ApprovalPredicate = False,
        external: bool = False,
        parameters_json_schema: dict[str, Any] | None = None,
        sequential: bool = False,
        timeout: float | None = None,
        limits: ToolLimits | None = None,
        side_effect: SideEffect = "non_idempotent",
        risk: Risk = "low",
        confirmation: Confirmation = "never",
        strict: bool | None = None,
        metadata: dict[str, Any] | None = None,
        prepare: Callable[
            [RunContext[DepsT], ToolDefinition], ToolDefinition | Awaitable[ToolDefinition | None] | None
        ]
        | None = None,
        docstring_format: DocstringFormat = "auto",
        require_parameter_descriptions: bool = False,
        defer_loading: bool = False,
        origin: Origin = "application",
    ) -> None:
        if origin not in ("application", "mcp", "workflow"):
            raise ToolDefinitionError(f"origin must be 'application', 'mcp' or 'workflow', got {origin!r}")
        if side_effect not in ("read_only", "idempotent", "non_idempotent"):
            raise ToolDefinitionError(
                f"side_effect must be 'read_only', 'idempotent' or 'non_idempotent', got {side_effect!r}"
            )
        if risk not in ("low", "medium", "high"):
            raise ToolDefinitionError(f"risk must be 'low', 'medium' or 'high', got {risk!r}")
        if confirmation not in ("never", "always", "risk"):
            raise ToolDefinitionError(
                f"confirmation must be 'never', 'always' or 'risk', got {confirmation!r}"
            )
        if timeout is not None and (not math.isfinite(timeout) or timeout <= 0):
            raise ToolDefinitionError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if max_retries is not None and max_retries < 0:
            raise ToolDefinitionError(f"max_retries must be >= 0, got {max_retries}")
        self.function = function
        """The Python function (`None` for an external tool)."""
        self.max_retries = max_retries
        """Retry budget of this tool; `None` uses the agent's `retries`."""
        self.risk: Risk = risk
        """How much harm a wrong call can do (recorded on receipts; `confirmation="risk"` reads it)."""
        self.confirmation: Confirmation = confirmation
        """When calls need confirmation; `always` (or `risk` with `risk="high"`) sets `requires_approval`."""
        if confirmation == "always" or (confirmation == "risk" and risk == "high"):
            # One mechanism for every confirmation: the approval path (pause, `confirm=`, planning).
            requires_approval = True
        self.requires_approval = requires_approval
        """`True`, or a predicate on validated arguments, when calls need an approval decision."""
        self.kind: Literal["function", "external"] = "external" if external else "function"
        """`external` tools are never called here: their results come from `resume` decisions.

        Describe one by a typed function (used only for its signature and docstring) or by
        `Tool.external_tool(name, parameters_json_schema=...)`."""
        self.sequential = sequential
        """The tool runs alone: it waits for running calls and later calls wait for it."""
        self.timeout = timeout
        """Seconds one call may run (also tightens `limits.timeout`)."""
        self.limits = limits
        """Per-tool limits; they can only tighten the agent's `tool_limits`."""
        self.side_effect: SideEffect = side_effect
        """What a call does to the world; decides how an unknown outcome is handled."""
        self.strict = strict
        """Ask the provider to enforce the schema exactly."""
        self.metadata = metadata
        """Application data; never sent to the model."""
        self.prepare = prepare
        """Called before each model request to modify or hide (return `None`) the definition."""
        self.defer_loading = defer_loading
        """Kept out of the request until the built-in `tool_search` tool surfaces it."""
        self.origin: Origin = origin
        """Where the tool comes from; durable runs make `application` and `mcp` calls engine steps and
        run `workflow` tools (deterministic framework tools) inline. Providers see no difference."""
        self._validator: Any = None
        self._shape: PydanticShape | None = None
        self._raw = False
        self._threads: ToolThreads | None = None
        if external and function is None:
            if not name:
                raise ToolDefinitionError("an external tool needs a name")
            self.name = name
            """The tool's name as the model sees it."""
            self.description = description
            """What the tool does, for the model."""
            self.takes_ctx = False
            """Whether the function takes a `RunContext` first."""
            self.is_async = True
            """Whether the function is a coroutine function."""
            schema = parameters_json_schema or {
                "type": "object",
                "properties": {},
                "additionalProperties": False,
            }
            self.parameters_json_schema = schema
            """JSON Schema of the arguments object."""
            self.args_type: Any = dict[str, Any]
            """The msgspec type arguments are decoded into."""
            self._field_names: tuple[str, ...] = ()
            self._call_sync = None
            try:
                self._validator = compile_schema(schema)
            except UserError as exc:
                raise ToolDefinitionError(
                    f"the schema of external tool {name!r} is not usable: {exc}"
                ) from exc
        else:
            if function is None:
                raise ToolDefinitionError("Tool() needs a function (or external=True with a schema)")
            # An external tool may be described by a typed function that is never called here.
            inputs: _BuildInputs = (
                name,
                description,
                takes_ctx,
                docstring_format,
                require_parameter_descriptions,
                strict,
            )
            self._build_once(function, inputs, parameters_json_schema)
        self.definition = self._definition()
        """The definition offered to the model."""

    @classmethod
    def external_tool(
        cls,
        name: str,
        *,
        parameters_json_schema: dict[str, Any],
        description: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Tool[Any]:
        """A tool executed outside the agent: calls pause the run until `resume` supplies a result."""
        return cls(
            None,
            name=name,
            description=description,
            external=True,
            parameters_json_schema=parameters_json_schema,
            metadata=metadata,
        )

    @classmethod
    def from_schema(
        cls,
        function: Callable[..., Any],
        *,
        name: str,
        parameters_json_schema: dict[str, Any],
        description: str | None = None,
        takes_ctx: bool = True,
        **options: Any,
    ) -> Tool[Any]:
        """A tool whose arguments are one JSON object checked against a hand-written schema.

        `function(ctx, args)` (or `function(args)` with `takes_ctx=False`), sync or async, receives
        the validated arguments as a `dict`. The schema must use the local JSON Schema dialect
        (`ferrule.core.json_schema`); other options are those of `Tool` (`timeout`, `side_effect`,
        `requires_approval`, `metadata`, ...). Used for tools described by a schema rather than a
        signature, such as MCP tools.
        """
        tool = cls(
            None,
            name=name,
            description=description,
            external=True,
            parameters_json_schema=parameters_json_schema,
            **options,
        )
        tool.kind = "function"
        tool.function = function
        tool.takes_ctx = takes_ctx
        tool.is_async = is_async(function)
        tool._call_sync = None if tool.is_async else function
        tool._raw = True
        tool.definition = tool._definition()
        return tool

    def _build_once(
        self,
        function: Callable[..., Any],
        inputs: _BuildInputs,
        parameters_json_schema: dict[str, Any] | None,
    ) -> None:
        """`_build`, or what an earlier `_build` of the same function with the same options derived.

        Reading the signature and deriving the argument Struct and its schema is most of the cost
        of a tool (and of `Agent(model, tools=[fn])`): it is done once per function and options,
        so applications that build an agent per request do not repeat it. The cached values are
        never mutated (`replace` shares them between copies as well); a hand-written schema (a
        dict, unhashable) is not cached.
        """
        cacheable = parameters_json_schema is None
        built: tuple[Any, ...] | None = None
        if cacheable:
            try:
                built = _BUILT.get(function, {}).get(inputs)
            except TypeError:  # a callable that cannot be weakly referenced (a builtin): not cached
                cacheable = False
        if built is None:
            self._build(function, inputs, parameters_json_schema)
            if cacheable:
                built = tuple(getattr(self, attribute) for attribute in _DERIVED)
                _BUILT.setdefault(function, {})[inputs] = built
            return
        for attribute, value in zip(_DERIVED, built, strict=True):
            setattr(self, attribute, value)
        self._call_sync = None if self.is_async else function

    def _build(
        self,
        function: Callable[..., Any],
        inputs: _BuildInputs,
        parameters_json_schema: dict[str, Any] | None,
    ) -> None:
        name, description, takes_ctx, docstring_format, require_descriptions, strict = inputs
        fn_name = getattr(function, "__name__", None)
        self.name = name or fn_name or ""
        if not self.name or self.name == "<lambda>":
            raise ToolDefinitionError("give the tool a name: Tool(fn, name=...) (lambdas have none)")
        self.is_async = is_async(function)
        try:
            signature = inspect.signature(function)
        except (TypeError, ValueError) as exc:
            raise ToolDefinitionError(f"cannot read the signature of tool {self.name!r}: {exc}") from exc
        try:
            hints = typing.get_type_hints(function, include_extras=True)
        except Exception:
            hints = {}
        params = list(signature.parameters.values())
        first_is_ctx = bool(params) and _is_run_context(hints.get(params[0].name, params[0].annotation))
        if takes_ctx is None:
            takes_ctx = first_is_ctx
        if takes_ctx:
            if not params:
                raise ToolDefinitionError(f"tool {self.name!r} takes a RunContext but has no parameters")
            params = params[1:]
        self.takes_ctx = takes_ctx
        from ._docstring import parse_docstring

        summary, param_docs = parse_docstring(inspect.getdoc(function), docstring_format)
        self.description = description if description is not None else summary
        fields: list[tuple[str, Any, str | None, Any]] = []
        for param in params:
            if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
                raise ToolDefinitionError(
                    f"tool {self.name!r} has *{param.name}: tools need named parameters so a schema can describe them"
                )
            if param.kind is inspect.Parameter.POSITIONAL_ONLY:
                raise ToolDefinitionError(
                    f"tool {self.name!r} has the positional-only parameter {param.name!r}; make it a normal parameter"
                )
            annotation = hints.get(param.name, param.annotation)
            if isinstance(annotation, str):
                annotation = _resolve(function, annotation, self.name, param.name)
            if annotation is inspect.Parameter.empty:
                if strict is not False:
                    raise ToolDefinitionError(
                        f"tool {self.name!r}: parameter {param.name!r} has no type annotation; annotate it "
                        "(`Any` accepts any JSON value), or pass strict=False to the tool to accept any "
                        "JSON value for unannotated parameters"
                    )
                annotation = Any
            if _is_run_context(annotation):
                raise ToolDefinitionError(
                    f"tool {self.name!r}: RunContext must be the first parameter, not {param.name!r}"
                )
            doc = param_docs.get(param.name)
            if not doc and require_descriptions:
                raise ToolDefinitionError(f"tool {self.name!r}: parameter {param.name!r} has no description")
            fields.append((param.name, annotation, doc, param.default))
        if any(uses_pydantic(annotation) for _, annotation, _, _ in fields):
            schema = self._build_pydantic(fields)
        else:
            schema = self._build_msgspec(fields)
        if parameters_json_schema is not None:
            schema = parameters_json_schema
        schema.setdefault("properties", {})
        self.parameters_json_schema = schema
        self._field_names = tuple(name for name, *_ in fields)
        self._call_sync = None if self.is_async else function

    def _build_msgspec(self, fields: list[tuple[str, Any, str | None, Any]]) -> dict[str, Any]:
        """The argument Struct of plain (msgspec-supported) parameter types, and its schema."""
        members: list[tuple[str, Any] | tuple[str, Any, Any]] = []
        for name, annotation, doc, default in fields:
            if doc:
                annotation = Annotated[annotation, msgspec.Meta(description=doc)]
            members.append(
                (name, annotation) if default is inspect.Parameter.empty else (name, annotation, default)
            )
        try:
            self.args_type = msgspec.defstruct(
                f"{self.name}_args", members, kw_only=True, forbid_unknown_fields=True
            )
            return strip_title(type_schema(self.args_type))
        except (UserError, TypeError, ValueError) as exc:
            for name, annotation, _, _ in fields:
                try:
                    type_schema(annotation)
                except (UserError, TypeError, ValueError) as field_exc:
                    raise ToolDefinitionError(
                        f"tool {self.name!r}: parameter {name!r} has the type {_type_name(annotation)}, which has no "
                        f"JSON Schema ({field_exc}); use a msgspec Struct, a dataclass, a TypedDict, an attrs "
                        "class or a pydantic model (with pydantic installed), or builtin types"
                    ) from exc
            raise ToolDefinitionError(
                f"cannot build an argument schema for tool {self.name!r}: {exc}"
            ) from exc

    def _build_pydantic(self, fields: list[tuple[str, Any, str | None, Any]]) -> dict[str, Any]:
        """A pydantic model of the parameters (some mention pydantic), validated by pydantic."""
        members: list[tuple[str, Any, Any]] = []
        for name, annotation, doc, default in fields:
            members.append(
                (
                    name,
                    described(annotation, doc) if doc else annotation,
                    ... if default is inspect.Parameter.empty else default,
                )
            )
        try:
            self.args_type = pydantic_model(f"{self.name}_args", members)
            self._shape = PydanticShape(self.args_type)
        except (UserError, TypeError, ValueError) as exc:
            raise ToolDefinitionError(
                f"cannot build an argument schema for tool {self.name!r}: {exc}"
            ) from exc
        return strip_title(dict(self._shape.schema))

    def _definition(self) -> ToolDefinition:
        kind: Literal["function", "external", "unapproved"] = "function"
        if self.kind == "external":
            kind = "external"
        elif self.requires_approval is not False:
            kind = "unapproved"
        return ToolDefinition(
            name=self.name,
            parameters_json_schema=self.parameters_json_schema,
            description=self.description,
            strict=self.strict,
            kind=kind,
            sequential=self.sequential,
            defer_loading=self.defer_loading,
            metadata=self.metadata,
        )

    def replace(
        self,
        *,
        name: str | None = None,
        description: Any = _KEEP,
        metadata: Any = _KEEP,
        defer_loading: bool | None = None,
        strict: Any = _KEEP,
        requires_approval: Any = _KEEP,
    ) -> Tool[DepsT]:
        """A copy offered under another name, description, metadata, loading mode or approval; same function."""
        # type(self): a subclass stays a subclass when a toolset wrapper renames or re-describes it.
        clone = cast("Tool[DepsT]", object.__new__(type(self)))
        for slot in Tool.__slots__:
            setattr(clone, slot, getattr(self, slot))
        if name is not None:
            clone.name = name
        if description is not _KEEP:
            clone.description = description
        if metadata is not _KEEP:
            clone.metadata = metadata
        if defer_loading is not None:
            clone.defer_loading = defer_loading
        if strict is not _KEEP:
            clone.strict = strict
        if requires_approval is not _KEEP:
            clone.requires_approval = requires_approval
        clone.definition = clone._definition()
        return clone

    # --- validation and calls ------------------------------------------------------------------

    def validate_args(self, args: str | dict[str, Any] | None) -> Any:
        """Decode and validate raw model arguments; raises `ValueError` subclasses on bad input.

        Raises `bounded_json.JsonError` for malformed or oversized JSON and `msgspec.ValidationError`
        (`pydantic.ValidationError` for a signature that mentions pydantic; both are `ValueError`s)
        for arguments that do not match the signature.
        """
        if self._validator is not None:
            value = self._decode_plain(args)
            check_against(self._validator, value)
            return value
        if self._shape is not None:
            return self._shape.validate(self._decode_plain(args))
        if args is None:
            return msgspec.convert({}, self.args_type)
        if isinstance(args, str):
            if not args.strip():
                return msgspec.convert({}, self.args_type)
            return bounded_json.decode(args, type=self.args_type, limits=bounded_json.TOOL_ARGUMENTS)
        return msgspec.convert(args, self.args_type)

    @staticmethod
    def _decode_plain(args: str | dict[str, Any] | None) -> Any:
        if args is None:
            return {}
        if isinstance(args, str):
            if not args.strip():
                return {}
            value = bounded_json.decode(args, type=dict[str, Any], limits=bounded_json.TOOL_ARGUMENTS)
            return value
        return args

    def kwargs(self, args: Any) -> dict[str, Any]:
        """The keyword arguments of a validated arguments object."""
        if isinstance(args, dict):
            return cast("dict[str, Any]", args)
        return {name: getattr(args, name) for name in self._field_names}

    def json_kwargs(self, args: Any) -> dict[str, Any]:
        """`kwargs(args)` as JSON data, e.g. to show a call for confirmation: pydantic models among
        the arguments are dumped (`model_dump(mode="json")`), msgspec-encodable values encoded."""
        encoded = msgspec.json.encode(self.kwargs(args), enc_hook=enc_hook)
        return cast("dict[str, Any]", msgspec.json.decode(encoded))

    async def call(self, ctx: RunContext[Any], args: Any, *, threads: ToolThreads | None = None) -> Any:
        """Call the function with validated arguments.

        A sync function runs in a worker thread of `threads` (an agent passes its own); without
        it, in one of this tool's own `ToolThreads`.
        """
        function = self.function
        assert function is not None
        if self._raw:
            positional = (ctx, args) if self.takes_ctx else (args,)
            if self.is_async:
                return await function(*positional)
            return await self._pool(threads).run(function, positional, {}, name=self.name)
        kwargs = {name: getattr(args, name) for name in self._field_names}
        if self.is_async:
            if self.takes_ctx:
                return await function(ctx, **kwargs)
            return await function(**kwargs)
        positional = (ctx,) if self.takes_ctx else ()
        return await self._pool(threads).run(function, positional, kwargs, name=self.name)

    def _pool(self, threads: ToolThreads | None) -> ToolThreads:
        if threads is not None:
            return threads
        own = self._threads
        if own is None:
            own = self._threads = ToolThreads(owner=f"tool {self.name!r}")
        return own

    def __repr__(self) -> str:
        return (
            f"Tool({self.name!r}, kind={self.kind!r}, side_effect={self.side_effect!r}, risk={self.risk!r})"
        )


_BuildInputs: TypeAlias = "tuple[str | None, str | None, bool | None, DocstringFormat, bool, bool | None]"
"""Every input of `Tool._build` but the function and a hand-written schema, the build cache's key:
name, description, takes_ctx, docstring format, require_descriptions and strict. `strict` decides
whether an unannotated parameter is refused, so a lenient build must not answer for a strict one.
A plain tuple, not a NamedTuple: one is made per tool an agent is built with, and a NamedTuple's
constructor costs ten times a tuple's."""


# What `Tool._build` derives from a function: the attributes a cached build copies. A test builds a
# tool fresh and from the cache and compares every slot, so an attribute `_build` gains is not lost.
_DERIVED: Final = (
    "name",
    "is_async",
    "takes_ctx",
    "description",
    "args_type",
    "parameters_json_schema",
    "_field_names",
    "_shape",
)

# What `Tool._build` derived from each function, per naming, docstring and strictness options; an
# entry goes with its function.
_BUILT: weakref.WeakKeyDictionary[Callable[..., Any], dict[_BuildInputs, tuple[Any, ...]]] = (
    weakref.WeakKeyDictionary()
)


def _resolve(function: Callable[..., Any], annotation: str, tool: str, param: str) -> Any:
    """Evaluate one string annotation in the function's module, or explain why it cannot be."""
    namespace = dict(getattr(function, "__globals__", {}))
    try:
        return eval(annotation, namespace)
    except Exception as exc:
        raise ToolDefinitionError(
            f"tool {tool!r}: cannot resolve the annotation {annotation!r} of parameter {param!r} ({exc}); "
            "define the type at module level (string annotations are evaluated in the function's module)"
        ) from exc


def _type_name(tp: Any) -> str:
    name = getattr(tp, "__qualname__", None)
    return name if isinstance(name, str) and get_origin(tp) is None else repr(tp)


def as_tool(item: Tool[Any] | Callable[..., Any]) -> Tool[Any]:
    """`item` itself if it is a `Tool`, else a `Tool` built from the function."""
    if isinstance(item, Tool):
        return cast("Tool[Any]", item)
    if not callable(item):
        raise ToolDefinitionError(f"tools must be functions or Tool objects, got {item!r}")
    return Tool(item)


def args_error_details(error: Exception) -> list[dict[str, Any]] | str:
    """Retry-prompt content describing why arguments were rejected."""
    text = str(error)
    path: str | None = getattr(error, "path", None)
    msg = text
    if " - at `" in text:
        msg, _, rest = text.partition(" - at `")
        path = rest.rstrip("`")
    loc: list[Any] = []
    if path:
        for piece in path.removeprefix("$").replace("[", ".").replace("]", "").split("."):
            if piece:
                loc.append(int(piece) if piece.isdigit() else piece)
    if isinstance(error, bounded_json.MalformedJsonError):
        return f"The arguments are not valid JSON ({error.reason}); send a JSON object."
    if isinstance(error, bounded_json.JsonLimitError):
        return f"The arguments were rejected: {error}"
    if isinstance(error, SchemaMismatch):
        return [{"type": "invalid_argument", "loc": error.loc, "msg": str(error)}]
    foreign = pydantic_error_details(error)
    if foreign is not None:
        return foreign
    return [{"type": "invalid_argument", "loc": loc, "msg": msg}]
