"""Setting up one invocation: a `Run` from a prompt and history (`start_run`) or from a pause
(`resume_run`), with its extensions, instructions, URL checks and telemetry span.

Both paths share the same steps: link the run (cancellation, correlation), check the content URLs
of what it was given, give it the extension state when the agent or the run uses one, open its
span. `start_run` then resolves the
instructions (once per run) and appends the prompt; `resume_run` continues at the paused response.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Any

import anyio
import msgspec

from ferrule.core.errors import UserError
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import SystemPromptPart
from ferrule.core.messages import UserContent
from ferrule.core.messages import UserPromptPart
from ferrule.core.model import Model
from ferrule.core.settings import ModelSettings
from ferrule.core.usage import RunUsage
from ferrule.core.usage import UsageLimits

from ._core import AgentCore
from ._deferred import Decision
from ._deferred import ExternalResult
from ._deferred import Paused
from ._deferred import PausedState
from ._deferred import ResumeDecisions
from ._deferred import check_decisions
from ._errors import PausedStateError
from ._errors import RunTimeoutError
from ._pause import resume_at
from ._run import Run
from ._run import new_run_id
from ._run_options import NO_OPTIONS
from ._run_options import RunOptions
from ._state import copy_usage
from ._url_check import check_content
from ._url_check import check_message
from ._util import instruction_texts
from ._util import merged_settings
from .correlation import RunCorrelation

if TYPE_CHECKING:
    from .durable import DurableRun

__all__ = ["RunSettings", "resume_run", "start_run"]


class RunSettings(msgspec.Struct, kw_only=True):
    """What every invocation is given besides its prompt or pause: model, limits, options, links."""

    # A Struct, not a class with an `__init__`: built once per run, it costs a fifth as much.
    model: Model
    deps: Any
    layers: tuple[ModelSettings | None, ModelSettings | None]
    """The agent's and the run's settings, merged over the model's."""
    usage_limits: UsageLimits
    deadline: float | None
    cancellable: bool
    options: RunOptions
    correlation: RunCorrelation | None
    trace_parent: Any


async def start_run(
    core: AgentCore,
    given: RunSettings,
    prompt: str | Sequence[UserContent] | None,
    message_history: Sequence[Message] | None,
    instructions: str | Sequence[str] | None,
) -> Run:
    """A run of `prompt` after `message_history`, its instructions resolved."""
    model = given.model
    plan = core.plan_for(model)
    messages: list[Message] = list(message_history) if message_history else []
    if prompt is None and not (messages and isinstance(messages[-1], ModelRequest)):
        raise UserError("give a user prompt, or a message_history that ends with a request")
    bound = durable_run()
    # A durable run keeps its binding's ID, so that a replay sees the same run.
    run_id = new_run_id() if bound is None else bound.binding.run_id
    run = Run(
        core,
        model=model,
        plan=plan,
        deps=given.deps,
        messages=messages,
        new_message_index=len(messages),
        instructions=None,
        settings=merged_settings(model.settings, *given.layers),
        usage_limits=given.usage_limits,
        deadline=given.deadline,
        usage=RunUsage(),
        prompt=prompt,
        run_id=run_id,
        durable=bound,
    )
    _link(run, given)
    # Content URLs of the prompt and the history are refused before anything else happens.
    run.url_check.new_messages(messages)
    if prompt is not None and not isinstance(prompt, str):
        check_content(core.url_policy, prompt)
    _extend(run, given)
    # Nothing to resolve (the common case): no coroutine, no list, run.instructions stays None.
    if _has_instructions(run, instructions):
        try:
            if (core.dynamic_instructions or run.ext is not None) and run.deadline is not None:
                with anyio.fail_after(max(0.0, run.deadline - anyio.current_time())):
                    run.instructions = await _instructions(run, instructions)
            else:
                run.instructions = await _instructions(run, instructions)
        except TimeoutError as exc:
            raise RunTimeoutError("the run deadline passed while resolving instructions") from exc
    system: list[SystemPromptPart] = []
    if core.system_prompts and not messages:
        system = await _system_prompts(run)
    elif core.dynamic_prompts and messages:
        await _refresh_dynamic_prompts(run, messages)
    if prompt is not None:
        content = prompt if isinstance(prompt, str) else list(prompt)
        messages.append(
            ModelRequest(
                parts=[*system, UserPromptPart(content=content)],
                instructions=run.instructions,
                run_id=run_id,
            )
        )
        run.url_check.skip_to(messages)  # the prompt was checked above
    if core.tracer is not None:
        run.start_span(given.trace_parent)
    return run


def durable_run() -> DurableRun | None:
    """The durable run this task is bound to (`ferrule.agent.durable.bind`), if any."""
    # Only `durable.bind` binds a run, so a process that never imported the module has none: the
    # module is not imported for a run that is not durable.
    if "ferrule.agent.durable" not in sys.modules:
        return None
    from .durable import current

    return current()


def resume_run(
    core: AgentCore,
    given: RunSettings,
    state: PausedState | Paused | bytes | str,
    decisions: Mapping[str, Decision] | bytes | str,
    integrity_key: bytes | None,
) -> Run:
    """A run that continues at a paused response with `decisions`, checked before anything runs."""
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
    model = given.model
    messages = list(state.messages)
    run = Run(
        core,
        model=model,
        plan=core.plan_for(model),
        deps=given.deps,
        messages=messages,
        new_message_index=state.new_message_index,
        instructions=state.instructions,
        settings=merged_settings(model.settings, *given.layers),
        usage_limits=given.usage_limits,
        deadline=given.deadline,
        usage=copy_usage(state.usage),
        prompt=None,
        run_id=state.run_id,
        durable=durable_run(),
        tool_retries=dict(state.tool_retries),
        output_retries=state.output_retries,
    )
    _link(run, given)
    # The stored history, its queued messages and external results are content like a prompt.
    policy = core.url_policy
    run.url_check.new_messages(messages)
    for message in state.queued_messages:
        check_message(policy, message)
    for decision in checked.values():
        if isinstance(decision, ExternalResult):
            check_content(policy, decision.value)
    _extend(run, given, resumed=state.capabilities)
    resume_at(run, state, checked)
    if core.tracer is not None:
        run.start_span(given.trace_parent)
    return run


def _link(run: Run, given: RunSettings) -> None:
    """Whether a handle may cancel the run, and what it is correlated with."""
    if given.cancellable:  # the class default is False: a run that is not keeps no instance dict
        run.cancellable = True
    correlation = given.correlation
    if correlation is not None:
        if not isinstance(correlation, RunCorrelation):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(f"correlation must be a RunCorrelation, got {correlation!r}")
        run.correlation = correlation


def _extend(run: Run, given: RunSettings, resumed: Sequence[str] = ()) -> None:
    """Give the run the extensions it uses (and prices, when it has a cost limit)."""
    core = run.core
    options = given.options
    if run.pricing is None and run.usage_limits.cost_limit_nano_usd is not None:
        from .pricing import Pricing

        run.enable_pricing(Pricing())  # a cost limit is only enforceable with prices
    if core.extended or options is not NO_OPTIONS:
        run.extend(options, given.layers, resumed)


async def _system_prompts(run: Run) -> list[SystemPromptPart]:
    """The system prompt parts of a run without history, in registration order."""
    dynamic = {id(callback): ref for ref, callback in run.core.dynamic_prompts.items()}
    parts: list[SystemPromptPart] = []
    for item in run.core.system_prompts:
        for text in await instruction_texts(run.ctx, [item]):
            ref = None if isinstance(item, str) else dynamic.get(id(item))
            parts.append(SystemPromptPart(content=text, dynamic_ref=ref))
    return parts


async def _refresh_dynamic_prompts(run: Run, messages: list[Message]) -> None:
    """Re-evaluate the dynamic system prompts of a continued history (copies; the caller's stay as given)."""
    prompts = run.core.dynamic_prompts
    for index, message in enumerate(messages):
        if not isinstance(message, ModelRequest):
            continue
        parts = list(message.parts)
        changed = False
        for i, part in enumerate(parts):
            if isinstance(part, SystemPromptPart) and part.dynamic_ref in prompts:
                texts = await instruction_texts(run.ctx, [prompts[part.dynamic_ref]])
                parts[i] = msgspec.structs.replace(part, content="\n\n".join(texts))
                changed = True
        if changed:
            messages[index] = msgspec.structs.replace(message, parts=parts)


def _has_instructions(run: Run, extra: str | Sequence[str] | None) -> bool:
    """Whether the run has any instructions to resolve."""
    core = run.core
    return bool(
        core.static_instructions
        or core.dynamic_instructions
        or run.ext
        or extra
        or run.plan.extra_instructions
    )


async def _instructions(run: Run, extra: str | Sequence[str] | None) -> str | None:
    """The run's instructions, resolved once: the agent's, its capabilities', the run's, the output's."""
    core = run.core
    items = [*core.static_instructions, *core.dynamic_instructions]
    if run.ext is not None:
        items.extend(run.ext.instruction_items())
    parts = await instruction_texts(run.ctx, items)
    if extra:
        parts.extend([extra] if isinstance(extra, str) else [e for e in extra if e])
    if run.plan.extra_instructions:
        parts.append(run.plan.extra_instructions)
    return "\n\n".join(parts) if parts else None
