"""`Agent`: configuration built once, and the entry points that all drive the same loop."""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from types import UnionType
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeAlias, cast, overload

import anyio
from typing_extensions import TypeVar

from ferrule.core.errors import UserError
from ferrule.core.messages import Message, ModelRequest, UserContent, UserPromptPart
from ferrule.core.model import Model, ToolDefinition
from ferrule.core.profile import ModelProfile
from ferrule.core.retry import RetryPolicy
from ferrule.core.settings import ModelSettings
from ferrule.core.usage import RunUsage, UsageLimits

from ._deferred import (
    Decision,
    ExternalResult,
    Paused,
    PausedState,
    PauseRequiredError,
    ResumeDecisions,
    check_decisions,
)
from ._errors import PausedStateError, RunTimeoutError, ToolDefinitionError, attach_state
from ._ext import NO_OPTIONS, RunExt, RunOptions
from ._instrument import InstrumentationSettings, Tracer
from ._output import (
    NativeOutput,
    OutputPlan,
    OutputSpecInfo,
    PromptedOutput,
    StructuredDict,
    TextOutput,
    ToolOutput,
    build_plan,
    normalize_spec,
    resolve_mode,
)
from ._queue import PendingMessageQueue
from ._result import AgentRun, AgentRunResult, StreamedRunResult, drive_stream
from ._run import Run, new_run_id
from ._sync_tools import ToolThreads
from ._tools import Tool, ToolLimits, as_tool
from ._url_check import check_content, check_message
from ._util import is_async as _is_async
from ._util import merged_settings as _merged
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

EndStrategy: TypeAlias = Literal["graceful", "early", "exhaustive"]
"""What happens to other calls of a response that also produced the final output.

`graceful` (default): calls before the first successful output call run, later ones are skipped.
`early`: output calls are tried first; if one succeeds, every other call is skipped.
`exhaustive`: every call runs; the first successful output call (by call order) wins.
"""

InstructionsFn: TypeAlias = Callable[..., "str | Awaitable[str | None] | None"]
"""A dynamic instruction: `fn(ctx)` or `fn()`, sync or async, returning text (or `None`)."""

_DEFAULT_LIMITS = UsageLimits()

_NONE_TYPE: Any = type(None)


class _AgentCore:
    """The per-agent state the loop reads: built once and updated when tools are added."""

    def __init__(
        self,
        *,
        name: str,
        output_info: OutputSpecInfo,
        retries: int,
        output_retries: int,
        tool_limits: ToolLimits,
        end_strategy: EndStrategy,
        retry_policy: RetryPolicy,
        tracer: Tracer | None,
        url_policy: UrlPolicy | None,
    ) -> None:
        self.name = name
        self.url_policy = url_policy  # None: the default UrlPolicy(), built on first use
        self.output_info = output_info
        self.retries = retries
        self.output_retries = output_retries
        self.tool_limits = tool_limits
        # One bounded set of worker threads per agent: hung sync calls of another agent never
        # take this agent's threads (see _sync_tools).
        self.threads = ToolThreads(tool_limits.max_sync_threads, owner=f"agent {name!r}")
        self.end_strategy: EndStrategy = end_strategy
        self.retry_policy = retry_policy
        self.tracer = tracer
        self.tools: dict[str, Tool[Any]] = {}
        self.tool_defs: tuple[ToolDefinition, ...] = ()
        self.has_prepare = False
        self._limits: dict[str, ToolLimits] = {}
        self.output_validators: list[tuple[Callable[..., Any], bool, bool]] = []
        self.history_processors: list[tuple[Callable[..., Any], bool, bool]] = []
        self._plans: dict[str, OutputPlan] = {}
        self._by_profile: dict[int, tuple[ModelProfile, OutputPlan]] = {}
        self.toolsets: list[AbstractToolset[Any]] = []
        self.capabilities: list[Capability[Any]] = []
        self.tool_policies: list[ToolPolicy] = []
        self.hooks: list[Hook] = []
        self.context_budget: ContextBudget | None = None
        self.pricing: Pricing | None = None
        self.has_deferred = False
        self.extended = False
        """Whether runs need the extension machinery (anything beyond tools, output and limits)."""

    def update_extended(self) -> None:
        self.extended = bool(
            self.toolsets
            or self.capabilities
            or self.tool_policies
            or self.hooks
            or self.context_budget is not None
            or self.has_deferred
        )

    def add_tool(self, tool: Tool[Any]) -> None:
        if tool.name in self.tools:
            raise ToolDefinitionError(f"a tool named {tool.name!r} is already registered on this agent")
        self.tools[tool.name] = tool
        self._limits[tool.name] = self.tool_limits.tightened(tool.limits, tool.timeout)
        self.tool_defs = (*self.tool_defs, tool.definition)
        self.has_prepare = self.has_prepare or tool.prepare is not None
        if tool.defer_loading:
            self.has_deferred = self.extended = True
        self._plans.clear()
        self._by_profile.clear()

    def limits_for(self, tool: Tool[Any]) -> ToolLimits:
        limits = self._limits.get(tool.name)
        if limits is not None and self.tools.get(tool.name) is tool:
            return limits
        return self.tool_limits.tightened(tool.limits, tool.timeout)

    def max_retries_for(self, tool: Tool[Any]) -> int:
        return self.retries if tool.max_retries is None else tool.max_retries

    def plan_for(self, model: Model) -> OutputPlan:
        profile = model.profile
        cached = self._by_profile.get(id(profile))
        if cached is not None and cached[0] is profile:
            return cached[1]
        plan = self._plan_for(model, profile)
        if len(self._by_profile) > 64:  # profiles are normally few and long-lived; stay bounded anyway
            self._by_profile.clear()
        self._by_profile[id(profile)] = (profile, plan)
        return plan

    def _plan_for(self, model: Model, profile: ModelProfile) -> OutputPlan:
        mode = resolve_mode(self.output_info, profile, model.system)
        key = f"{mode}:{profile.supports_json_object_output}"
        plan = self._plans.get(key)
        if plan is None:
            plan = build_plan(self.output_info, mode, profile)
            clash = [d.name for d in plan.tool_defs if d.name in self.tools]
            if clash:
                raise ToolDefinitionError(
                    f"the output tool name {clash[0]!r} clashes with a function tool; rename one of them"
                )
            self._plans[key] = plan
        return plan


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
        self._static_instructions: list[str] = []
        self._dynamic_instructions: list[tuple[Callable[..., Any], bool, bool]] = []
        tracer: Tracer | None = None
        self._instrumentation: InstrumentationSettings | None = None
        if instrument:
            settings = (
                instrument if isinstance(instrument, InstrumentationSettings) else InstrumentationSettings()
            )
            tracer = Tracer(settings, self.name)
            self._instrumentation = settings
        self._core = _AgentCore(
            name=self.name,
            output_info=normalize_spec(output_type),
            retries=retries,
            output_retries=retries if output_retries is None else output_retries,
            tool_limits=tool_limits or ToolLimits(),
            end_strategy=end_strategy,
            retry_policy=retry_policy or RetryPolicy(),
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
        core.toolsets = list(toolsets)
        core.capabilities = list(capabilities)
        if core.capabilities:
            # Structural errors surface when the agent is built; a dependency may come with the run's
            # capabilities, so unknown IDs are checked again for each run.
            with contextlib.suppress(UnknownCapabilityError):
                CapabilityRegistry(core.capabilities)
        core.tool_policies = list(tool_policies)
        for policy in core.tool_policies:
            if not isinstance(policy, ToolPolicy):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise UserError(f"tool_policies must be ToolPolicy instances, got {policy!r}")
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
                self._static_instructions.append(item)
        elif callable(item):
            self._dynamic_instructions.append((item, _takes_ctx(item, 1), _is_async(item)))
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
            from .models import infer_model

            self._resolved = infer_model(self._model)
            return self._resolved
        if isinstance(model, Model):
            return model
        resolved = self._by_name.get(model)
        if resolved is None:
            from .models import infer_model

            resolved = self._by_name[model] = infer_model(model)
        return resolved

    def _deadline(self, timeout: float | None) -> float | None:
        budget = self.run_timeout
        if timeout is not None:
            if not math.isfinite(timeout) or timeout <= 0:
                raise UserError(f"timeout must be a positive number of seconds, got {timeout!r}")
            budget = timeout if budget is None else min(budget, timeout)
        return None if budget is None else anyio.current_time() + budget

    async def _resolve_instructions(
        self, run: Run, extra: str | Sequence[str] | None, plan: OutputPlan
    ) -> str | None:
        parts: list[str] = list(self._static_instructions)
        for fn, takes_ctx, is_async in self._dynamic_instructions:
            value = fn(run.ctx) if takes_ctx else fn()
            if is_async:
                value = await value
            if value:
                parts.append(cast("str", value))
        if run.ext is not None:
            for item in run.ext.instruction_items():
                if isinstance(item, str):
                    parts.append(item)
                    continue
                fn, takes_ctx, is_async = item
                value = fn(run.ctx) if takes_ctx else fn()
                if is_async:
                    value = await value
                if value:
                    parts.append(cast("str", value))
        if extra:
            parts.extend([extra] if isinstance(extra, str) else [e for e in extra if e])
        if plan.extra_instructions:
            parts.append(plan.extra_instructions)
        return "\n\n".join(parts) if parts else None

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
        model_obj = self._resolve_model(model)
        plan = self._core.plan_for(model_obj)
        messages: list[Message] = list(message_history) if message_history else []
        new_index = len(messages)
        if prompt is None and not (messages and isinstance(messages[-1], ModelRequest)):
            raise UserError("give a user prompt, or a message_history that ends with a request")
        run_id = new_run_id()
        run = Run(
            self._core,
            model=model_obj,
            plan=plan,
            deps=deps,
            messages=messages,
            new_message_index=new_index,
            instructions=None,
            settings=_merged(model_obj.settings, self.model_settings, model_settings),
            usage_limits=usage_limits or self.usage_limits or _DEFAULT_LIMITS,
            deadline=self._deadline(timeout),
            usage=RunUsage(),
            prompt=prompt,
            run_id=run_id,
        )
        run.cancellable = cancellable
        if correlation is not None:
            if not isinstance(correlation, RunCorrelation):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise UserError(f"correlation must be a RunCorrelation, got {correlation!r}")
            run.correlation = correlation
        # Content URLs of the prompt and the history are refused before anything else happens.
        run.url_check.new_messages(messages)
        if prompt is not None and not isinstance(prompt, str):
            check_content(self._core.url_policy, prompt)
        if (
            self._core.extended
            or options is not NO_OPTIONS
            or run.usage_limits.cost_limit_nano_usd is not None
        ):
            self._extend(run, options, model_settings)
        try:
            if (self._dynamic_instructions or run.ext is not None) and run.deadline is not None:
                with anyio.fail_after(max(0.0, run.deadline - anyio.current_time())):
                    run.instructions = await self._resolve_instructions(run, instructions, plan)
            else:
                run.instructions = await self._resolve_instructions(run, instructions, plan)
        except TimeoutError as exc:
            raise RunTimeoutError("the run deadline passed while resolving instructions") from exc
        if prompt is not None:
            content = prompt if isinstance(prompt, str) else list(prompt)
            messages.append(
                ModelRequest(
                    parts=[UserPromptPart(content=content)], instructions=run.instructions, run_id=run_id
                )
            )
            run.url_check.skip_to(messages)  # the prompt was checked above
        if self._core.tracer is not None:
            run.start_span(trace_parent)
        return run

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
        if isinstance(state, Paused):
            state = state.state
        elif isinstance(state, (bytes, bytearray, str)):
            state = PausedState.from_json(state, integrity_key=integrity_key)
        elif integrity_key is not None:
            raise PausedStateError(
                "an integrity key only protects serialized state: pass the JSON bytes to resume, not a PausedState"
            )
        else:
            state.check()
        if isinstance(decisions, (bytes, bytearray, str)):
            decisions = ResumeDecisions.from_json(decisions)
        checked = check_decisions(state, decisions)
        model_obj = self._resolve_model(model)
        plan = self._core.plan_for(model_obj)
        messages = list(state.messages)
        usage = RunUsage(
            input_tokens=state.usage.input_tokens,
            cache_write_tokens=state.usage.cache_write_tokens,
            cache_read_tokens=state.usage.cache_read_tokens,
            output_tokens=state.usage.output_tokens,
            input_audio_tokens=state.usage.input_audio_tokens,
            cache_audio_read_tokens=state.usage.cache_audio_read_tokens,
            output_audio_tokens=state.usage.output_audio_tokens,
            details=dict(state.usage.details),
            requests=state.usage.requests,
            tool_calls=state.usage.tool_calls,
            cost_nano_usd=state.usage.cost_nano_usd,
        )
        run = Run(
            self._core,
            model=model_obj,
            plan=plan,
            deps=deps,
            messages=messages,
            new_message_index=state.new_message_index,
            instructions=state.instructions,
            settings=_merged(model_obj.settings, self.model_settings, model_settings),
            usage_limits=usage_limits or self.usage_limits or _DEFAULT_LIMITS,
            deadline=self._deadline(timeout),
            usage=usage,
            prompt=None,
            run_id=state.run_id,
            tool_retries=dict(state.tool_retries),
            output_retries=state.output_retries,
        )
        run.cancellable = cancellable
        if correlation is not None:
            if not isinstance(correlation, RunCorrelation):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise UserError(f"correlation must be a RunCorrelation, got {correlation!r}")
            run.correlation = correlation
        # The stored history, its queued messages and external results are content like a prompt.
        policy = self._core.url_policy
        run.url_check.new_messages(messages)
        for message in state.queued_messages:
            check_message(policy, message)
        for decision in checked.values():
            if isinstance(decision, ExternalResult):
                check_content(policy, decision.value)
        if (
            self._core.extended
            or options is not NO_OPTIONS
            or run.usage_limits.cost_limit_nano_usd is not None
        ):
            self._extend(run, options, model_settings, resumed=state.capabilities)
        run.resume_from(state, checked)
        if self._core.tracer is not None:
            run.start_span(trace_parent)
        return run

    def _extend(
        self,
        run: Run,
        options: RunOptions,
        model_settings: ModelSettings | None,
        resumed: Sequence[str] = (),
    ) -> None:
        if run.pricing is None and run.usage_limits.cost_limit_nano_usd is not None:
            run.enable_pricing(Pricing())  # a cost limit is only enforceable with prices
        if self._core.extended or options is not NO_OPTIONS:
            run.settings_layers = (self.model_settings, model_settings)
            run.ext = RunExt(run, options, resumed_capabilities=resumed)

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
            options=_options(
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
            options=_options(
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
            options=_options(
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
            options=_options(
                toolsets,
                capabilities,
                capability_layers,
                history_processors,
                context_budget,
                pending_messages,
            ),
        )
        if run.ext is None:
            yield AgentRun(run)
            return
        async with run.ext.session():
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
            options=_options(
                toolsets,
                capabilities,
                capability_layers,
                history_processors,
                context_budget,
                pending_messages,
            ),
        )
        async with _streaming(run) as stream:
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
            options=_options(
                toolsets,
                capabilities,
                capability_layers,
                history_processors,
                context_budget,
                pending_messages,
            ),
        )
        async with _streaming(run) as stream:
            yield stream


def _options(
    toolsets: Sequence[AbstractToolset[Any]],
    capabilities: Sequence[Capability[Any]],
    capability_layers: Sequence[CapabilityLayer],
    history_processors: Sequence[Callable[..., Any]],
    context_budget: ContextBudget | None,
    pending_messages: PendingMessageQueue | None,
) -> RunOptions:
    if (
        not toolsets
        and not capabilities
        and not capability_layers
        and not history_processors
        and context_budget is None
        and pending_messages is None
    ):
        return NO_OPTIONS  # the common case: no per-run extensions, nothing to build
    return RunOptions(
        toolsets=toolsets,
        capabilities=capabilities,
        capability_layers=capability_layers,
        history_processors=history_processors,
        context_budget=context_budget,
        pending_messages=pending_messages,
    )


@asynccontextmanager
async def _streaming(run: Run) -> AsyncGenerator[StreamedRunResult[Any]]:
    send, receive = anyio.create_memory_object_stream[Any](64)
    errors: list[BaseException] = []
    body_error: Exception | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(drive_stream, run, send, errors)
        stream: StreamedRunResult[Any] = StreamedRunResult(run, receive, errors)
        try:
            async with receive:
                yield stream
        except Exception as exc:
            # Re-raised below, outside the task group, so the caller sees it unwrapped.
            body_error = exc
        finally:
            # Leaving early cancels the run; its work is drained before the block exits.
            tg.cancel_scope.cancel()
    if body_error is not None:
        raise body_error
