"""`Agent`: configuration built once, and the entry points that all drive the same loop."""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from types import UnionType
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, overload

import anyio
from typing_extensions import TypeVar

from ferrule.core.errors import UserError
from ferrule.core.messages import Message, UserContent
from ferrule.core.model import Model
from ferrule.core.retry import RetryPolicy
from ferrule.core.settings import ModelSettings
from ferrule.core.usage import UsageLimits

from ._core import AgentCore, EndStrategy
from ._deferred import (
    Decision,
    Paused,
    PausedState,
    PauseRequiredError,
)
from ._errors import attach_state
from ._ext import NO_OPTIONS, RunOptions, run_options
from ._instrument import InstrumentationSettings, Tracer
from ._output import (
    NativeOutput,
    PromptedOutput,
    StructuredDict,
    TextOutput,
    ToolOutput,
    normalize_spec,
)
from ._queue import PendingMessageQueue
from ._result import AgentRun, AgentRunResult, StreamedRunResult, streaming
from ._run import Run
from ._start import RunSettings, resume_run, start_run
from ._tools import Tool, ToolLimits, as_tool
from ._util import is_async as _is_async
from ._util import takes_ctx as _takes_ctx
from .capabilities import Capability, CapabilityLayer, CapabilityRegistry, UnknownCapabilityError
from .context_budget import ContextBudget
from .correlation import RunCorrelation
from .hooks import Hook, check_hooks
from .policies import ToolPolicy
from .pricing import Pricing
from .toolsets import AbstractToolset

if TYPE_CHECKING:
    from ferrule.core.url_policy import UrlPolicy

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
        deps_type: type[DepsT] = _NONE_TYPE,
        name: str | None = None,
        model_settings: ModelSettings | None = None,
        retries: int = 1,
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
    ) -> None:
        if retries < 0:
            raise UserError(f"retries must be >= 0, got {retries}")
        if output_retries is not None and output_retries < 0:
            raise UserError(f"output_retries must be >= 0, got {output_retries}")
        if end_strategy not in ("graceful", "early", "exhaustive"):
            raise UserError(f"end_strategy must be 'graceful', 'early' or 'exhaustive', got {end_strategy!r}")
        if run_timeout is not None and (not math.isfinite(run_timeout) or run_timeout <= 0):
            raise UserError(f"run_timeout must be a positive number of seconds, got {run_timeout!r}")
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
        tracer: Tracer | None = None
        self._instrumentation: InstrumentationSettings | None = None
        if instrument:
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
        for toolset in toolsets:
            if not isinstance(toolset, AbstractToolset):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise UserError(f"toolsets must be AbstractToolset instances, got {toolset!r}")
        # The core starts with empty lists of its own: copy only what was given.
        if toolsets:
            core.toolsets = list(toolsets)
        if capabilities:
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
        core.pricing = pricing if isinstance(pricing, Pricing) else Pricing() if pricing else None
        if core.pricing is None and usage_limits is not None and usage_limits.cost_limit_nano_usd is not None:
            core.pricing = Pricing()  # a cost limit is only enforceable with prices
        core.update_extended()

    def __repr__(self) -> str:
        return f"Agent(name={self.name!r}, model={self._model!r}, tools={list(self._core.tools)})"

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
        budget = self.run_timeout
        if timeout is not None:
            if not math.isfinite(timeout) or timeout <= 0:
                raise UserError(f"timeout must be a positive number of seconds, got {timeout!r}")
            budget = timeout if budget is None else min(budget, timeout)
        return None if budget is None else anyio.current_time() + budget

    def _settings(
        self,
        model: Model | str | None,
        deps: Any,
        model_settings: ModelSettings | None,
        usage_limits: UsageLimits | None,
        timeout: float | None,
        options: RunOptions,
        correlation: RunCorrelation | None,
        trace_parent: Any,
        *,
        cancellable: bool = False,
    ) -> RunSettings:
        return RunSettings(
            model=self._resolve_model(model),
            deps=deps,
            layers=(self.model_settings, model_settings),
            usage_limits=usage_limits or self.usage_limits or _DEFAULT_LIMITS,
            deadline=self._deadline(timeout),
            cancellable=cancellable,
            options=options,
            correlation=correlation,
            trace_parent=trace_parent,
        )

    async def _start(
        self,
        prompt: str | Sequence[UserContent] | None,
        *,
        message_history: Sequence[Message] | None,
        deps: Any,
        model: Model | str | None,
        model_settings: ModelSettings | None,
        usage_limits: UsageLimits | None,
        instructions: str | Sequence[str] | None,
        timeout: float | None,  # noqa: ASYNC109 - the run deadline, enforced by the loop's cancel scope
        cancellable: bool = False,
        options: RunOptions = NO_OPTIONS,
        correlation: RunCorrelation | None = None,
        trace_parent: Any = None,
    ) -> Run:
        given = self._settings(
            model,
            deps,
            model_settings,
            usage_limits,
            timeout,
            options,
            correlation,
            trace_parent,
            cancellable=cancellable,
        )
        return await start_run(self._core, given, prompt, message_history, instructions)

    def _resume_run(
        self,
        state: PausedState | Paused | bytes | str,
        decisions: Mapping[str, Decision] | bytes | str,
        *,
        deps: Any,
        model: Model | str | None,
        model_settings: ModelSettings | None,
        usage_limits: UsageLimits | None,
        timeout: float | None,
        integrity_key: bytes | None,
        cancellable: bool = False,
        options: RunOptions = NO_OPTIONS,
        correlation: RunCorrelation | None = None,
        trace_parent: Any = None,
    ) -> Run:
        given = self._settings(
            model,
            deps,
            model_settings,
            usage_limits,
            timeout,
            options,
            correlation,
            trace_parent,
            cancellable=cancellable,
        )
        return resume_run(self._core, given, state, decisions, integrity_key)

    # --- entry points -------------------------------------------------------------------------------

    async def run(
        self,
        user_prompt: str | Sequence[UserContent] | None = None,
        *,
        message_history: Sequence[Message] | None = None,
        deps: DepsT = None,
        model: Model | str | None = None,
        model_settings: ModelSettings | None = None,
        usage_limits: UsageLimits | None = None,
        instructions: str | Sequence[str] | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - the run deadline, enforced by the loop's cancel scope
        event_handler: Callable[[Any], Awaitable[None]] | None = None,
        toolsets: Sequence[AbstractToolset[DepsT]] = (),
        capabilities: Sequence[Capability[DepsT]] = (),
        capability_layers: Sequence[CapabilityLayer] = (),
        history_processors: Sequence[Callable[..., Any]] = (),
        context_budget: ContextBudget | None = None,
        pending_messages: PendingMessageQueue | None = None,
        correlation: RunCorrelation | None = None,
        trace_parent: Any = None,
    ) -> AgentRunResult[OutputT]:
        """Run until the model produces valid output; returns the result.

        Raises `PauseRequiredError` if a tool needs approval or external execution: use
        `run_until_pause` for agents with deferred tools. `event_handler`, when given, receives every
        stream event (the model is then called in streaming mode). `correlation` (a
        `RunCorrelation`) reaches the `run_start` hook event and the agent span; `trace_parent` (an
        OpenTelemetry `Context`) is the agent span's parent. Every entry point takes both.
        """
        run = await self._start(
            user_prompt,
            message_history=message_history,
            deps=deps,
            model=model,
            model_settings=model_settings,
            usage_limits=usage_limits,
            instructions=instructions,
            timeout=timeout,
            correlation=correlation,
            trace_parent=trace_parent,
            options=run_options(
                toolsets,
                capabilities,
                capability_layers,
                history_processors,
                context_budget,
                pending_messages,
            ),
        )
        await run.run_to_end(event_handler)
        if run.paused is not None:
            error = PauseRequiredError(run.paused)
            attach_state(error, run.state())
            raise error
        return AgentRunResult(run)

    def run_sync(
        self,
        user_prompt: str | Sequence[UserContent] | None = None,
        *,
        message_history: Sequence[Message] | None = None,
        deps: DepsT = None,
        model: Model | str | None = None,
        model_settings: ModelSettings | None = None,
        usage_limits: UsageLimits | None = None,
        instructions: str | Sequence[str] | None = None,
        timeout: float | None = None,
        backend: str = "asyncio",
        toolsets: Sequence[AbstractToolset[DepsT]] = (),
        capabilities: Sequence[Capability[DepsT]] = (),
        capability_layers: Sequence[CapabilityLayer] = (),
        history_processors: Sequence[Callable[..., Any]] = (),
        context_budget: ContextBudget | None = None,
        pending_messages: PendingMessageQueue | None = None,
        correlation: RunCorrelation | None = None,
        trace_parent: Any = None,
    ) -> AgentRunResult[OutputT]:
        """The blocking form of `run`, for code without an event loop."""
        call = functools.partial(
            self.run,
            user_prompt,
            message_history=message_history,
            deps=deps,
            model=model,
            model_settings=model_settings,
            usage_limits=usage_limits,
            instructions=instructions,
            timeout=timeout,
            toolsets=toolsets,
            capabilities=capabilities,
            capability_layers=capability_layers,
            history_processors=history_processors,
            context_budget=context_budget,
            pending_messages=pending_messages,
            correlation=correlation,
            trace_parent=trace_parent,
        )
        try:
            anyio.get_current_task()
        except Exception:  # no running event loop: the normal case
            pass
        else:
            raise UserError("run_sync() cannot be called from async code; use `await agent.run(...)`")
        return anyio.run(call, backend=backend)

    async def run_until_pause(
        self,
        user_prompt: str | Sequence[UserContent] | None = None,
        *,
        message_history: Sequence[Message] | None = None,
        deps: DepsT = None,
        model: Model | str | None = None,
        model_settings: ModelSettings | None = None,
        usage_limits: UsageLimits | None = None,
        instructions: str | Sequence[str] | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - the run deadline, enforced by the loop's cancel scope
        event_handler: Callable[[Any], Awaitable[None]] | None = None,
        toolsets: Sequence[AbstractToolset[DepsT]] = (),
        capabilities: Sequence[Capability[DepsT]] = (),
        capability_layers: Sequence[CapabilityLayer] = (),
        history_processors: Sequence[Callable[..., Any]] = (),
        context_budget: ContextBudget | None = None,
        pending_messages: PendingMessageQueue | None = None,
        correlation: RunCorrelation | None = None,
        trace_parent: Any = None,
    ) -> AgentRunResult[OutputT] | Paused:
        """Run until output, or until deferred calls need decisions (then returns `Paused`)."""
        run = await self._start(
            user_prompt,
            message_history=message_history,
            deps=deps,
            model=model,
            model_settings=model_settings,
            usage_limits=usage_limits,
            instructions=instructions,
            timeout=timeout,
            correlation=correlation,
            trace_parent=trace_parent,
            options=run_options(
                toolsets,
                capabilities,
                capability_layers,
                history_processors,
                context_budget,
                pending_messages,
            ),
        )
        await run.run_to_end(event_handler)
        return run.paused if run.paused is not None else AgentRunResult(run)

    async def resume(
        self,
        state: PausedState | Paused | bytes | str,
        decisions: Mapping[str, Decision] | bytes | str,
        *,
        deps: DepsT = None,
        integrity_key: bytes | None = None,
        model: Model | str | None = None,
        model_settings: ModelSettings | None = None,
        usage_limits: UsageLimits | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - the run deadline, enforced by the loop's cancel scope
        event_handler: Callable[[Any], Awaitable[None]] | None = None,
        toolsets: Sequence[AbstractToolset[DepsT]] = (),
        capabilities: Sequence[Capability[DepsT]] = (),
        capability_layers: Sequence[CapabilityLayer] = (),
        history_processors: Sequence[Callable[..., Any]] = (),
        context_budget: ContextBudget | None = None,
        pending_messages: PendingMessageQueue | None = None,
        correlation: RunCorrelation | None = None,
        trace_parent: Any = None,
    ) -> AgentRunResult[OutputT] | Paused:
        """Continue a paused run with exactly one decision per pending call.

        Approved calls and the response's immediate calls execute; denials become error results;
        external results are appended as given. The original model request is not replayed. The
        state and decisions are checked before anything executes. A resumed run gets a fresh
        deadline and may pause again.
        """
        run = self._resume_run(
            state,
            decisions,
            deps=deps,
            model=model,
            model_settings=model_settings,
            usage_limits=usage_limits,
            timeout=timeout,
            correlation=correlation,
            trace_parent=trace_parent,
            integrity_key=integrity_key,
            options=run_options(
                toolsets,
                capabilities,
                capability_layers,
                history_processors,
                context_budget,
                pending_messages,
            ),
        )
        await run.run_to_end(event_handler)
        return run.paused if run.paused is not None else AgentRunResult(run)

    @asynccontextmanager
    async def iter(
        self,
        user_prompt: str | Sequence[UserContent] | None = None,
        *,
        message_history: Sequence[Message] | None = None,
        deps: DepsT = None,
        model: Model | str | None = None,
        model_settings: ModelSettings | None = None,
        usage_limits: UsageLimits | None = None,
        instructions: str | Sequence[str] | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - the run deadline, enforced by the loop's cancel scope
        toolsets: Sequence[AbstractToolset[DepsT]] = (),
        capabilities: Sequence[Capability[DepsT]] = (),
        capability_layers: Sequence[CapabilityLayer] = (),
        history_processors: Sequence[Callable[..., Any]] = (),
        context_budget: ContextBudget | None = None,
        pending_messages: PendingMessageQueue | None = None,
        correlation: RunCorrelation | None = None,
        trace_parent: Any = None,
    ) -> AsyncGenerator[AgentRun[OutputT]]:
        """Drive the run one step at a time: `async with agent.iter(...) as run: async for step in run`."""
        run = await self._start(
            user_prompt,
            message_history=message_history,
            deps=deps,
            model=model,
            model_settings=model_settings,
            usage_limits=usage_limits,
            instructions=instructions,
            timeout=timeout,
            correlation=correlation,
            trace_parent=trace_parent,
            cancellable=True,
            options=run_options(
                toolsets,
                capabilities,
                capability_layers,
                history_processors,
                context_budget,
                pending_messages,
            ),
        )
        async with run.session():
            yield AgentRun(run)

    @asynccontextmanager
    async def run_stream(
        self,
        user_prompt: str | Sequence[UserContent] | None = None,
        *,
        message_history: Sequence[Message] | None = None,
        deps: DepsT = None,
        model: Model | str | None = None,
        model_settings: ModelSettings | None = None,
        usage_limits: UsageLimits | None = None,
        instructions: str | Sequence[str] | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - the run deadline, enforced by the loop's cancel scope
        toolsets: Sequence[AbstractToolset[DepsT]] = (),
        capabilities: Sequence[Capability[DepsT]] = (),
        capability_layers: Sequence[CapabilityLayer] = (),
        history_processors: Sequence[Callable[..., Any]] = (),
        context_budget: ContextBudget | None = None,
        pending_messages: PendingMessageQueue | None = None,
        correlation: RunCorrelation | None = None,
        trace_parent: Any = None,
    ) -> AsyncGenerator[StreamedRunResult[OutputT]]:
        """Stream the run: `async with agent.run_stream(...) as stream: async for event in stream`."""
        run = await self._start(
            user_prompt,
            message_history=message_history,
            deps=deps,
            model=model,
            model_settings=model_settings,
            usage_limits=usage_limits,
            instructions=instructions,
            timeout=timeout,
            correlation=correlation,
            trace_parent=trace_parent,
            cancellable=True,
            options=run_options(
                toolsets,
                capabilities,
                capability_layers,
                history_processors,
                context_budget,
                pending_messages,
            ),
        )
        async with streaming(run) as stream:
            yield stream

    @asynccontextmanager
    async def resume_stream(
        self,
        state: PausedState | Paused | bytes | str,
        decisions: Mapping[str, Decision] | bytes | str,
        *,
        deps: DepsT = None,
        integrity_key: bytes | None = None,
        model: Model | str | None = None,
        model_settings: ModelSettings | None = None,
        usage_limits: UsageLimits | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - the run deadline, enforced by the loop's cancel scope
        toolsets: Sequence[AbstractToolset[DepsT]] = (),
        capabilities: Sequence[Capability[DepsT]] = (),
        capability_layers: Sequence[CapabilityLayer] = (),
        history_processors: Sequence[Callable[..., Any]] = (),
        context_budget: ContextBudget | None = None,
        pending_messages: PendingMessageQueue | None = None,
        correlation: RunCorrelation | None = None,
        trace_parent: Any = None,
    ) -> AsyncGenerator[StreamedRunResult[OutputT]]:
        """`resume`, streamed like `run_stream`."""
        run = self._resume_run(
            state,
            decisions,
            deps=deps,
            model=model,
            model_settings=model_settings,
            usage_limits=usage_limits,
            timeout=timeout,
            correlation=correlation,
            trace_parent=trace_parent,
            integrity_key=integrity_key,
            cancellable=True,
            options=run_options(
                toolsets,
                capabilities,
                capability_layers,
                history_processors,
                context_budget,
                pending_messages,
            ),
        )
        async with streaming(run) as stream:
            yield stream
