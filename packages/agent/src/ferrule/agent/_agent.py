"""`Agent`: configuration built once, and the entry points that all drive the same loop."""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
from collections.abc import AsyncGenerator
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Generator
from collections.abc import Mapping
from collections.abc import Sequence
from contextlib import asynccontextmanager
from types import UnionType
from typing import TYPE_CHECKING
from typing import Any
from typing import Generic
from typing import TypeAlias
from typing import cast
from typing import overload

import anyio
from typing_extensions import TypeVar
from typing_extensions import Unpack

from ferrule.core.errors import UserError
from ferrule.core.messages import UserContent
from ferrule.core.model import Model
from ferrule.core.retry import RetryPolicy
from ferrule.core.settings import ModelSettings
from ferrule.core.usage import UsageLimits

from ._checkpoints import CheckpointConsumedError
from ._checkpoints import CheckpointStore
from ._continue import continued_state
from ._continue import end_with_requests
from ._controls import CheckpointBinding
from ._controls import ConfirmFn
from ._controls import GuardFn
from ._controls import SideEffectControls
from ._controls import checkpoint_store_of
from ._core import AgentCore
from ._core import EndStrategy
from ._deferred import Decision
from ._deferred import DeferredToolResults
from ._deferred import Paused
from ._deferred import PausedState
from ._deferred import PauseRequiredError
from ._errors import attach_state
from ._options import RESUME_KEYS
from ._options import RUN_KEYS
from ._options import ResumeOptions
from ._options import RunOptions
from ._options import SharedOptions
from ._options import check_keys
from ._output import NativeOutput
from ._output import PromptedOutput
from ._output import StructuredDict
from ._output import TextOutput
from ._output import ToolOutput
from ._output_build import normalize_spec
from ._result import AgentRun
from ._result import AgentRunResult
from ._result import StreamedRunResult
from ._result import streaming
from ._run import Run
from ._run_options import EXTENSION_KEYS
from ._run_options import NO_OPTIONS
from ._run_options import run_options
from ._start import RunSettings
from ._start import resume_run
from ._start import start_run
from ._tools import Tool
from ._tools import ToolLimits
from ._tools import as_tool
from ._util import is_async as _is_async
from ._util import refuse_in_event_loop
from ._util import takes_ctx as _takes_ctx
from ._util import tighter
from .hooks import Hook
from .hooks import check_hooks
from .policies import ToolPolicy

if TYPE_CHECKING:
    from ferrule.core.url_policy import UrlPolicy

    from ._instrument import InstrumentationSettings
    from ._instrument import Tracer
    from .capabilities import Capability
    from .context_budget import ContextBudget
    from .pricing import Pricing
    from .toolsets import AbstractToolset

__all__ = ["Agent", "EndStrategy"]

DepsT = TypeVar("DepsT", default=None)
OutputT = TypeVar("OutputT", default=str)

InstructionsFn: TypeAlias = Callable[..., "str | Awaitable[str | None] | None"]
"""A dynamic instruction: `fn(ctx)` or `fn()`, sync or async, returning text (or `None`)."""

_DEFAULT_LIMITS = UsageLimits()
# Frozen defaults, shared by every agent that does not pass its own (one less Struct per agent).
_DEFAULT_TOOL_LIMITS = ToolLimits()
_DEFAULT_RETRY_POLICY = RetryPolicy()

_NONE_TYPE: Any = type(None)


class _Unset:
    """The absence of an `override` argument (`None` is a valid deps value)."""


_UNSET: Any = _Unset()


class _Override:
    __slots__ = ("deps", "model")

    def __init__(self, model: Any, deps: Any) -> None:
        self.model = model
        self.deps = deps


def _retries(retries: Any, output_retries: int | None) -> tuple[int, int | None]:
    """`retries=` as PydanticAI accepts it: an int, or a mapping of `tools` and `output` retries."""
    if isinstance(retries, bool) or not isinstance(retries, (int, Mapping)):
        raise UserError(
            f"retries must be an int (or {{'tools': n, 'output': m}}), got {retries!r}; "
            "ferrule's equivalent is Agent(retries=n, output_retries=m)"
        )
    if isinstance(retries, int):
        return retries, output_retries
    given = cast("Mapping[str, Any]", retries)
    unknown = sorted(set(given) - {"tools", "output"})
    if unknown or not all(isinstance(v, int) and not isinstance(v, bool) for v in given.values()):
        raise UserError(
            f"retries= as a mapping takes int values for 'tools' and 'output', got {dict(given)!r}; "
            "ferrule's equivalent is Agent(retries=n, output_retries=m)"
        )
    if output_retries is not None and "output" in given:
        raise UserError(
            "give the output retries once: retries={'output': ...} or output_retries=..., not both"
        )
    # PydanticAI's default for a budget the mapping leaves out is 1, as for `retries=`.
    tools = int(given.get("tools", 1))
    output = int(given["output"]) if "output" in given else output_retries
    return tools, 1 if output is None else output


class Agent(Generic[DepsT, OutputT]):
    """An agent: a model, instructions, tools and an output type, run by one loop.

    Build it once and reuse it: schemas, validators and output plans are prepared here, not per
    run. `run`, `run_sync`, `run_stream`, `iter`, `run_until_pause` and `resume` all drive the same
    loop.
    """

    def __init__(
        self,
        model: Model | str | None = None,
        *,
        output_type: type[OutputT]
        | ToolOutput[OutputT]
        | NativeOutput[OutputT]
        | PromptedOutput[OutputT]
        | TextOutput[OutputT]
        | StructuredDict
        | Sequence[Any]
        | UnionType
        | Callable[..., OutputT] = str,
        instructions: str | InstructionsFn | Sequence[str | InstructionsFn] | None = None,
        system_prompt: str | Sequence[str] = (),
        deps_type: type[DepsT] = _NONE_TYPE,
        name: str | None = None,
        model_settings: ModelSettings | None = None,
        retries: int | Mapping[str, int] = 1,
        output_retries: int | None = None,
        tools: Sequence[Tool[DepsT] | Callable[..., Any]] = (),
        usage_limits: UsageLimits | None = None,
        end_strategy: EndStrategy = "graceful",
        tool_limits: ToolLimits | None = None,
        run_timeout: float | None = None,
        retry_policy: RetryPolicy | None = None,
        history_processors: Sequence[Callable[..., Any]] = (),
        output_validators: Sequence[Callable[..., Any]] = (),
        instrument: bool | InstrumentationSettings = False,
        toolsets: Sequence[AbstractToolset[DepsT]] = (),
        capabilities: Sequence[Capability[DepsT]] = (),
        tool_policies: Sequence[ToolPolicy] = (),
        hooks: Sequence[Hook] = (),
        context_budget: ContextBudget | None = None,
        pricing: bool | Pricing = False,
        url_policy: UrlPolicy | None = None,
        guard: GuardFn | None = None,
        confirm: ConfirmFn | None = None,
        checkpoint_store: CheckpointStore | None = None,
        checkpoint_binding: CheckpointBinding = "called_tools",
    ) -> None:
        retries, output_retries = _retries(retries, output_retries)
        _check_run_options(retries, output_retries, end_strategy, run_timeout)
        self.name = name or "agent"
        """The agent's name (used in telemetry)."""
        self.deps_type = deps_type
        """The type of the dependencies runs receive (for type checking only)."""
        self.model_settings = model_settings
        """Agent-level settings, merged over the model's and under each run's."""
        self.usage_limits = usage_limits
        """Default usage limits of a run."""
        self.run_timeout = run_timeout
        """Seconds one invocation may take; runs may tighten it with `timeout=`."""
        self._model = model
        self._resolved: Model | None = model if isinstance(model, Model) else None
        self._by_name: dict[str, Model] = {}  # run(model="provider:name") resolves each string once
        self._override: contextvars.ContextVar[_Override | None] = contextvars.ContextVar(
            "ferrule_agent_override", default=None
        )
        tracer: Tracer | None = None
        self._instrumentation: InstrumentationSettings | None = None
        if instrument:
            # Telemetry, capabilities and toolsets are imported by the agents that use them.
            from ._instrument import InstrumentationSettings
            from ._instrument import Tracer

            settings = (
                instrument if isinstance(instrument, InstrumentationSettings) else InstrumentationSettings()
            )
            tracer = Tracer(settings, self.name)
            self._instrumentation = settings
        self._core = AgentCore(
            name=self.name,
            output_info=normalize_spec(output_type),
            retries=retries,
            output_retries=retries if output_retries is None else output_retries,
            tool_limits=tool_limits or _DEFAULT_TOOL_LIMITS,
            end_strategy=end_strategy,
            retry_policy=retry_policy or _DEFAULT_RETRY_POLICY,
            tracer=tracer,
            url_policy=url_policy,
        )
        self._core.system_prompts.extend(_static_system_prompts(system_prompt))
        if instructions is not None:
            items: Sequence[Any] = (
                [instructions] if isinstance(instructions, str) or callable(instructions) else instructions
            )
            for item in items:
                self._add_instruction(item)
        for item in tools:
            self._core.add_tool(as_tool(item))
        for processor in history_processors:
            self._core.history_processors.append((processor, _takes_ctx(processor, 2), _is_async(processor)))
        for validator in output_validators:
            self.output_validator(validator)
        core = self._core
        # The core starts with empty lists of its own: copy only what was given.
        if toolsets:
            from .toolsets import AbstractToolset

            for toolset in toolsets:
                if not isinstance(toolset, AbstractToolset):  # pyright: ignore[reportUnnecessaryIsInstance]
                    raise UserError(f"toolsets must be AbstractToolset instances, got {toolset!r}")
            core.toolsets = list(toolsets)
        if capabilities:
            from .capabilities import CapabilityRegistry
            from .capabilities import UnknownCapabilityError

            core.capabilities = list(capabilities)
            # Structural errors surface when the agent is built; a dependency may come with the run's
            # capabilities, so unknown IDs are checked again for each run.
            with contextlib.suppress(UnknownCapabilityError):
                CapabilityRegistry(core.capabilities)
        if tool_policies:
            core.tool_policies = list(tool_policies)
        for policy in core.tool_policies:
            if not isinstance(policy, ToolPolicy):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise UserError(f"tool_policies must be ToolPolicy instances, got {policy!r}")
        if hooks:
            core.hooks = check_hooks(hooks)
        core.context_budget = context_budget
        cost_limit = usage_limits is not None and usage_limits.cost_limit_nano_usd is not None
        if pricing is not False or cost_limit:
            from .pricing import Pricing  # loaded only by an agent that prices its requests

            core.pricing = pricing if isinstance(pricing, Pricing) else Pricing() if pricing else None
            if core.pricing is None and cost_limit:
                core.pricing = Pricing()  # a cost limit is only enforceable with prices
        if (
            guard is not None
            or confirm is not None
            or checkpoint_store is not None
            or checkpoint_binding != "called_tools"
        ):
            core.side_effects = SideEffectControls(guard, confirm, checkpoint_store, checkpoint_binding)
        core.update_extended()

    def __repr__(self) -> str:
        return f"Agent(name={self.name!r}, model={self._model!r}, tools={list(self._core.tools)})"

    @property
    def checkpoint_store(self) -> CheckpointStore:
        """The store this agent's pauses are saved to and its resumes claim from.

        The `checkpoint_store=` it was built with, else the process-wide in-memory store.
        """
        return checkpoint_store_of(self._core.side_effects)

    # --- configuration ------------------------------------------------------------------------------

    def _add_instruction(self, item: str | InstructionsFn) -> None:
        if isinstance(item, str):
            if item:
                self._core.static_instructions.append(item)
        elif callable(item):
            self._core.dynamic_instructions.append((item, _takes_ctx(item, 1), _is_async(item)))
        else:
            raise UserError(f"instructions must be strings or functions, got {item!r}")

    def instructions(self, fn: InstructionsFn) -> InstructionsFn:
        """Decorator: add a dynamic instruction `fn(ctx)` (or `fn()`), evaluated once per run."""
        self._add_instruction(fn)
        return fn

    @overload
    def system_prompt(self, fn: InstructionsFn, /) -> InstructionsFn: ...
    @overload
    def system_prompt(self, /, *, dynamic: bool = False) -> Callable[[InstructionsFn], InstructionsFn]: ...
    def system_prompt(self, fn: InstructionsFn | None = None, /, *, dynamic: bool = False) -> Any:
        """Decorator: a system prompt function `fn(ctx)` (or `fn()`), with PydanticAI's meaning.

        Its text is written as a `SystemPromptPart` into the first request of a run that starts without
        a message history, and stays in the history (instructions, by contrast, go with every request
        and are never stored as parts). With `dynamic=True` the part carries the function's name as
        `dynamic_ref` and is re-evaluated when a later run continues that history.
        """

        def register(function: InstructionsFn) -> InstructionsFn:
            if not callable(function):
                raise UserError(f"@agent.system_prompt decorates a function, got {function!r}")
            callback = (function, _takes_ctx(function, 1), _is_async(function))
            self._core.system_prompts.append(callback)
            if dynamic:
                self._core.dynamic_prompts[getattr(function, "__qualname__", repr(function))] = callback
            return function

        return register(fn) if fn is not None else register

    def output_validator(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Decorator: add an output validator `fn(ctx, output)` (or `fn(output)`), run in order.

        It returns the (possibly transformed) output or raises `ModelRetry`. Validators run inline on
        the event loop: keep them fast, or make them async.
        """
        self._core.output_validators.append((fn, _takes_ctx(fn, 2), _is_async(fn)))
        return fn

    @overload
    def tool(self, fn: Callable[..., Any], /) -> Callable[..., Any]: ...
    @overload
    def tool(self, /, **options: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]: ...
    def tool(self, fn: Callable[..., Any] | None = None, /, **options: Any) -> Any:
        """Decorator: register a tool whose first parameter is a `RunContext`. Options as for `Tool`."""
        return self._register(fn, True, options)

    @overload
    def tool_plain(self, fn: Callable[..., Any], /) -> Callable[..., Any]: ...
    @overload
    def tool_plain(self, /, **options: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]: ...
    def tool_plain(self, fn: Callable[..., Any] | None = None, /, **options: Any) -> Any:
        """Decorator: register a tool without a `RunContext` parameter. Options as for `Tool`."""
        return self._register(fn, False, options)

    def _register(self, fn: Callable[..., Any] | None, takes_ctx: bool, options: dict[str, Any]) -> Any:
        def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
            self._core.add_tool(Tool(function, takes_ctx=takes_ctx, **options))
            return function

        return decorate(fn) if fn is not None else decorate

    def add_tool(self, tool: Tool[DepsT] | Callable[..., Any]) -> None:
        """Register a tool (a `Tool` or a function)."""
        self._core.add_tool(as_tool(tool))

    @property
    def tools(self) -> dict[str, Tool[Any]]:
        """The registered tools by name (read-only view; use `add_tool` to add)."""
        return dict(self._core.tools)

    @property
    def model(self) -> Model | str | None:
        """The default model (instance or `provider:model` string)."""
        return self._model

    @property
    def instrumentation(self) -> InstrumentationSettings | None:
        """The OpenTelemetry settings of `instrument=`, or `None` when the agent is not instrumented."""
        return self._instrumentation

    # --- run set-up ---------------------------------------------------------------------------------

    def _resolve_model(self, model: Model | str | None) -> Model:
        if model is None:
            if self._resolved is not None:
                return self._resolved
            if self._model is None:
                raise UserError("no model: pass Agent(model=...) or run(..., model=...)")
            from .model_strings import infer_model

            self._resolved = infer_model(self._model)
            return self._resolved
        if isinstance(model, Model):
            return model
        resolved = self._by_name.get(model)
        if resolved is None:
            from .model_strings import infer_model

            resolved = self._by_name[model] = infer_model(model)
        return resolved

    def _deadline(self, timeout: float | None) -> float | None:
        if timeout is not None and (not math.isfinite(timeout) or timeout <= 0):
            raise UserError(f"timeout must be a positive number of seconds, got {timeout!r}")
        budget = tighter(self.run_timeout, timeout)
        return None if budget is None else anyio.current_time() + budget

    def _settings(self, options: SharedOptions[Any], cancellable: bool) -> RunSettings:
        model = options.get("model")
        deps = options.get("deps")
        override = self._override.get()
        if override is not None:
            if not isinstance(override.model, _Unset):
                model = override.model
            if override.deps is not _UNSET:
                deps = override.deps
        return RunSettings(
            model=self._resolve_model(model),
            deps=deps,
            layers=(self.model_settings, options.get("model_settings")),
            usage_limits=options.get("usage_limits") or self.usage_limits or _DEFAULT_LIMITS,
            deadline=self._deadline(options.get("timeout")),
            cancellable=cancellable,
            # Most runs pass no extension: six lookups and a call fewer.
            options=NO_OPTIONS
            if EXTENSION_KEYS.isdisjoint(options)
            else run_options(
                options.get("toolsets", ()),
                options.get("capabilities", ()),
                options.get("capability_layers", ()),
                options.get("history_processors", ()),
                options.get("context_budget"),
                options.get("pending_messages"),
            ),
            correlation=options.get("correlation"),
            trace_parent=options.get("trace_parent"),
        )

    def _start(
        self,
        method: str,
        prompt: str | Sequence[UserContent] | None,
        options: RunOptions[Any],
        cancellable: bool = False,
    ) -> Awaitable[Run]:
        """`start_run` with the entry point's options (not a coroutine of its own: one frame fewer)."""
        check_keys(method, options, RUN_KEYS)
        given = self._settings(options, cancellable)
        return start_run(
            self._core, given, prompt, options.get("message_history"), options.get("instructions")
        )

    async def _resume_run(
        self,
        method: str,
        state: PausedState | Paused | bytes | str | None,
        decisions: Mapping[str, Decision] | bytes | str | None,
        options: ResumeOptions[Any],
        cancellable: bool = False,
    ) -> Run:
        check_keys(method, options, RESUME_KEYS)
        state, decisions = await self._checkpoint(
            state, decisions, options.get("run_id"), options.get("state_id")
        )
        given = self._settings(options, cancellable)
        return resume_run(self._core, given, state, decisions, options.get("integrity_key"))

    async def _continue(
        self,
        results: DeferredToolResults,
        prompt: str | Sequence[UserContent] | None,
        options: RunOptions[Any],
    ) -> Run:
        """The run a PydanticAI-style `run(message_history=..., deferred_tool_results=...)` continues."""
        check_keys("run", options, RUN_KEYS)
        state, decisions = await continued_state(
            self._core, results, options.get("message_history"), prompt, options.get("instructions")
        )
        return resume_run(self._core, self._settings(options, False), state, decisions, None)

    async def _checkpoint(
        self,
        state: PausedState | Paused | bytes | str | None,
        decisions: Mapping[str, Decision] | bytes | str | None,
        run_id: str | None,
        state_id: str | None,
    ) -> tuple[PausedState | Paused | bytes | str, Mapping[str, Decision] | bytes | str]:
        """The state to resume (given, or the run's latest checkpoint) and its decisions."""
        if decisions is None:
            raise UserError("resume needs decisions: one Approved, Denied or ExternalResult per pending call")
        if state is not None:
            if run_id is not None or state_id is not None:
                raise UserError("resume takes a paused state or run_id= (with state_id=), not both")
            return state, decisions
        if run_id is None:
            raise UserError("resume needs the paused state, or run_id= to load it from the checkpoint store")
        loaded = await checkpoint_store_of(self._core.side_effects).load(run_id)
        if state_id is not None and loaded.state_id != state_id:
            raise CheckpointConsumedError(
                f"the paused state {state_id!r} of run {run_id!r} was superseded by a newer pause "
                f"({loaded.state_id!r}); nothing was executed. Decide the run's latest checkpoint"
            )
        return loaded, decisions

    # --- entry points -------------------------------------------------------------------------------

    async def run(
        self,
        user_prompt: str | Sequence[UserContent] | None = None,
        *,
        event_handler: Callable[[Any], Awaitable[None]] | None = None,
        deferred_tool_results: DeferredToolResults | None = None,
        **options: Unpack[RunOptions[DepsT]],
    ) -> AgentRunResult[OutputT]:
        """Run until the model produces valid output; returns the result.

        Raises `PauseRequiredError` if a tool needs approval or external execution: use
        `run_until_pause` for agents with deferred tools, or list `DeferredToolRequests` in the
        output types to end the run with it, then continue it with `deferred_tool_results=` and
        the run's history (PydanticAI's form; see docs/agent.md). `event_handler`, when given,
        receives every stream event (the model is then called in streaming mode). The keyword
        options are [`RunOptions`][ferrule.agent.RunOptions]: `correlation` (a `RunCorrelation`)
        reaches the `run_start` hook event and the agent span; `trace_parent` (an OpenTelemetry
        `Context`) is the agent span's parent. Every entry point takes both.
        """
        if deferred_tool_results is not None:
            run = await self._continue(deferred_tool_results, user_prompt, options)
        else:
            run = await self._start("run", user_prompt, options)
        await run.run_to_end(event_handler)
        if run.paused is not None and not end_with_requests(run):
            error = PauseRequiredError(run.paused)
            attach_state(error, run.state())
            raise error
        return AgentRunResult(run)

    def run_sync(
        self,
        user_prompt: str | Sequence[UserContent] | None = None,
        *,
        backend: str = "asyncio",
        deferred_tool_results: DeferredToolResults | None = None,
        **options: Unpack[RunOptions[DepsT]],
    ) -> AgentRunResult[OutputT]:
        """The blocking form of `run` (same keyword options), for code without an event loop."""
        check_keys("run_sync", options, RUN_KEYS)
        call = functools.partial(
            self.run, user_prompt, deferred_tool_results=deferred_tool_results, **options
        )
        refuse_in_event_loop("run_sync", "run")
        try:
            return anyio.run(call, backend=backend)
        except PauseRequiredError as exc:
            exc.called("run_sync")
            raise

    def run_until_pause_sync(
        self,
        user_prompt: str | Sequence[UserContent] | None = None,
        *,
        backend: str = "asyncio",
        event_handler: Callable[[Any], Awaitable[None]] | None = None,
        **options: Unpack[RunOptions[DepsT]],
    ) -> AgentRunResult[OutputT] | Paused:
        """The blocking form of `run_until_pause` (same keyword options), for code without an event loop."""
        check_keys("run_until_pause_sync", options, RUN_KEYS)
        call = functools.partial(self.run_until_pause, user_prompt, event_handler=event_handler, **options)
        refuse_in_event_loop("run_until_pause_sync", "run_until_pause")
        return anyio.run(call, backend=backend)

    def resume_sync(
        self,
        state: PausedState | Paused | bytes | str,
        decisions: Mapping[str, Decision] | bytes | str,
        *,
        backend: str = "asyncio",
        event_handler: Callable[[Any], Awaitable[None]] | None = None,
        **options: Unpack[ResumeOptions[DepsT]],
    ) -> AgentRunResult[OutputT] | Paused:
        """The blocking form of `resume` (same keyword options): a synchronous approval round trip."""
        check_keys("resume_sync", options, RESUME_KEYS)
        call = functools.partial(self.resume, state, decisions, event_handler=event_handler, **options)
        refuse_in_event_loop("resume_sync", "resume")
        return anyio.run(call, backend=backend)

    @contextlib.contextmanager
    def override(self, *, model: Model | str | _Unset = _UNSET, deps: Any = _UNSET) -> Generator[None]:
        """Replace the model and/or the deps of every run started inside the block (for tests).

        As in PydanticAI, the override wins over `model=`/`deps=` given to a run. It is scoped by a
        context variable: tasks and threads started inside the block see it, other code does not.
        """
        current = self._override.get()
        merged = _Override(
            model=current.model if current is not None and isinstance(model, _Unset) else model,
            deps=current.deps if current is not None and deps is _UNSET else deps,
        )
        if not isinstance(merged.model, _Unset):
            self._resolve_model(merged.model)  # a bad model string fails here, not in the first run
        token = self._override.set(merged)
        try:
            yield
        finally:
            self._override.reset(token)

    async def run_until_pause(
        self,
        user_prompt: str | Sequence[UserContent] | None = None,
        *,
        event_handler: Callable[[Any], Awaitable[None]] | None = None,
        **options: Unpack[RunOptions[DepsT]],
    ) -> AgentRunResult[OutputT] | Paused:
        """Run until output, or until deferred calls need decisions (then returns `Paused`)."""
        run = await self._start("run_until_pause", user_prompt, options)
        await run.run_to_end(event_handler)
        return run.paused if run.paused is not None else AgentRunResult(run)

    async def resume(
        self,
        state: PausedState | Paused | bytes | str | None = None,
        decisions: Mapping[str, Decision] | bytes | str | None = None,
        *,
        event_handler: Callable[[Any], Awaitable[None]] | None = None,
        **options: Unpack[ResumeOptions[DepsT]],
    ) -> AgentRunResult[OutputT] | Paused:
        """Continue a paused run with exactly one decision per pending call.

        Approved calls and the response's immediate calls execute; denials become error results;
        external results are appended as given. The original model request is not replayed. The
        state and decisions are checked before anything executes. A resumed run gets a fresh
        deadline and may pause again.

        Pass the state, or `run_id=` to load the run's latest checkpoint from the agent's
        `checkpoint_store` (`state_id=` pins the checkpoint the decisions were made for). Either
        way the state is claimed once, atomically, before any call runs: resuming it again raises
        `CheckpointConsumedError` and executes nothing. The keyword options are
        [`ResumeOptions`][ferrule.agent.ResumeOptions].
        """
        run = await self._resume_run("resume", state, decisions, options)
        await run.run_to_end(event_handler)
        return run.paused if run.paused is not None else AgentRunResult(run)

    @asynccontextmanager
    async def iter(
        self,
        user_prompt: str | Sequence[UserContent] | None = None,
        **options: Unpack[RunOptions[DepsT]],
    ) -> AsyncGenerator[AgentRun[OutputT]]:
        """Drive the run one step at a time: `async with agent.iter(...) as run: async for step in run`."""
        run = await self._start("iter", user_prompt, options, cancellable=True)
        async with run.session():
            yield AgentRun(run)

    @asynccontextmanager
    async def run_stream(
        self,
        user_prompt: str | Sequence[UserContent] | None = None,
        **options: Unpack[RunOptions[DepsT]],
    ) -> AsyncGenerator[StreamedRunResult[OutputT]]:
        """Stream the run: `async with agent.run_stream(...) as stream: async for event in stream`."""
        run = await self._start("run_stream", user_prompt, options, cancellable=True)
        async with streaming(run) as stream:
            yield stream

    @asynccontextmanager
    async def resume_stream(
        self,
        state: PausedState | Paused | bytes | str | None = None,
        decisions: Mapping[str, Decision] | bytes | str | None = None,
        **options: Unpack[ResumeOptions[DepsT]],
    ) -> AsyncGenerator[StreamedRunResult[OutputT]]:
        """`resume`, streamed like `run_stream`."""
        run = await self._resume_run("resume_stream", state, decisions, options, cancellable=True)
        async with streaming(run) as stream:
            yield stream


def _check_run_options(
    retries: int, output_retries: int | None, end_strategy: str, run_timeout: float | None
) -> None:
    """Refuse the scalar run options `Agent` takes that cannot work, before anything is built."""
    if retries < 0:
        raise UserError(f"retries must be >= 0, got {retries}")
    if output_retries is not None and output_retries < 0:
        raise UserError(f"output_retries must be >= 0, got {output_retries}")
    if end_strategy not in ("graceful", "early", "exhaustive"):
        raise UserError(f"end_strategy must be 'graceful', 'early' or 'exhaustive', got {end_strategy!r}")
    if run_timeout is not None and (not math.isfinite(run_timeout) or run_timeout <= 0):
        raise UserError(f"run_timeout must be a positive number of seconds, got {run_timeout!r}")


def _static_system_prompts(system_prompt: str | Sequence[str]) -> list[str]:
    """The non-empty strings of `Agent(system_prompt=...)`; anything else is refused."""
    prompts: list[str] = []
    for prompt in [system_prompt] if isinstance(system_prompt, str) else system_prompt:
        if not isinstance(prompt, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(
                f"system_prompt must be a string or a sequence of strings, got {prompt!r}; "
                "register a function with @agent.system_prompt"
            )
        if prompt:
            prompts.append(prompt)
    return prompts
