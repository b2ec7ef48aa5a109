"""`PlanningAgent`: request -> route -> plan -> execute -> observe evidence -> replan -> answer."""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator
from collections.abc import AsyncIterator
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from contextlib import asynccontextmanager
from typing import Any
from typing import Literal

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream

from ferrule.agent import Agent
from ferrule.agent import GuardFn
from ferrule.agent import Tool
from ferrule.agent import ToolThreads
from ferrule.agent import refuse_in_event_loop
from ferrule.agent.hooks import Hook
from ferrule.agent.models import infer_model
from ferrule.core.errors import UserError
from ferrule.core.model import Model
from ferrule.core.settings import ModelSettings

from ._budget import PlanBudget
from ._catalog import Catalog
from ._document import PlanDocument
from ._document import decode_document
from ._results import ConfirmationRequest
from ._results import PlanningResult
from ._roles import StructuredRole
from ._runner import Mode
from ._runner import Router
from ._runner import Runner

__all__ = ["PlanStream", "PlanningAgent"]

PLAN_TOOL = "Plan"
"""The planner's synthetic output tool."""
PATCH_TOOL = "Patch"
"""The replanner's synthetic output tool."""
ROUTE_TOOL = "Route"
"""The model router's synthetic output tool."""

_PLANNER = """\
Do not answer the request: submit ONE plan with {tool}. A plan is {{"version": 1, "steps": [...]}}, \
at most {max_steps} steps; steps whose dependencies are done run in parallel. A step has "id", \
"capability" (a tool below) and "input" (its arguments); optionally "depends_on" (ids of earlier \
steps), "condition" {{"source_step", "source_path", "equals"}} (run only if the value at the JSON \
Pointer source_path, e.g. "/rain", of that step's output equals "equals"), "bindings" \
[{{"source_step", "source_path", "target_path"}}] (copy a value of that step's output into this \
step's input) and "required": false (the answer can do without it). A condition's or binding's \
source_step must be in depends_on.{agentic}
Tools:
{catalog}"""

_AGENTIC = """
Instead of "capability", a step may have "agent": {"prompt", "tools", "max_tool_calls"}: a \
sub-agent that may call only those tools, at most max_tool_calls times."""

_REPLANNER = """\
A required step of the plan failed. Submit ONE patch with {tool}: {{"replace": [ids], "steps": \
[new steps]}}. "replace" lists every failed required step (and any not started step to change); \
"steps" take their place, written like plan steps. Succeeded steps keep their outputs and never \
run again: do not replace them; new steps may depend on them. At most {max_steps} steps in all.
Tools:
{catalog}"""

_ROUTER = """\
Decide how the request should be handled and answer with {tool}: "chat" when a direct answer, \
possibly after one or two independent tool calls, is enough; "complex" when it needs several steps \
that depend on each other's results."""

_COMPOSER = """\
Write the final answer to the user's request from the evidence the steps gathered (the JSON after \
the request). Use only that evidence. When a step was skipped, failed or not confirmed, say what \
that means for the answer. Answer the user directly; do not describe plans, steps or JSON."""

_STEP = "Do the task with the tools you are given, then answer with a short summary of the result."

_ROUTE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"mode": {"enum": ["chat", "complex"]}},
    "required": ["mode"],
    "additionalProperties": False,
}


def _with_context(text: str, instructions: str | None) -> str:
    return f"{instructions}\n\n{text}" if instructions else text


class _Outcome:
    """The last item of a stream's channel: how the run ended (the stream reads it, never yields it)."""

    __slots__ = ("error", "result")

    def __init__(self, result: PlanningResult | None, error: Exception | None) -> None:
        self.result = result
        self.error = error


class PlanStream:
    """The events of a streamed run: plan events, then the composer's (or chat loop's) agent events."""

    __slots__ = ("_receive", "_result")

    def __init__(self, receive: MemoryObjectReceiveStream[Any]) -> None:
        self._receive = receive
        self._result: PlanningResult | None = None

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._events()

    async def _events(self) -> AsyncGenerator[Any]:
        async for event in self._receive:
            if isinstance(event, _Outcome):
                if event.error is not None:
                    raise event.error
                self._result = event.result
                return
            yield event

    @property
    def result(self) -> PlanningResult:
        """The run's result, once every event was read (a failed run raised from the iteration)."""
        if self._result is None:
            raise UserError("the stream has not finished: read every event first")
        return self._result


class PlanningAgent:
    """An agent that answers simple requests with its tool loop and complex ones with a validated plan.

    Complex mode: the planner (one model call bound to the synthetic `Plan` output tool) writes a
    plan document over the tool catalog; it is validated before any tool runs; independent steps run
    in parallel batches, conditions skip branches (their tools are never called), bindings pass
    evidence into later inputs; a failed required step triggers at most `max_replans` patches that
    keep every successful output; a final composer call turns the evidence into the answer. All of it
    within one `PlanBudget`. `guard=` (the agent's `GuardFn`) sees every tool call the run would
    make, plan steps, agentic steps and chat mode alike, before anything else decides on it.
    """

    def __init__(
        self,
        model: Model | str,
        *,
        tools: Sequence[Tool[Any] | Callable[..., Any]],
        instructions: str | None = None,
        budget: PlanBudget | None = None,
        planner_model: Model | str | None = None,
        composer_model: Model | str | None = None,
        router: Router | Literal["model"] | None = None,
        default_mode: Mode = "complex",
        confirm: Callable[[ConfirmationRequest], bool | Awaitable[bool]] | None = None,
        guard: GuardFn | None = None,
        agentic_steps: bool = False,
        plan_retries: int = 1,
        model_settings: ModelSettings | None = None,
        name: str = "planning",
        hooks: Sequence[Hook] = (),
    ) -> None:
        if default_mode not in ("chat", "complex"):
            raise UserError(f"default_mode must be 'chat' or 'complex', got {default_mode!r}")
        if router is not None and router != "model" and not callable(router):
            raise UserError("router must be None, 'model' or a function router(prompt) -> 'chat' | 'complex'")
        if plan_retries < 0:
            raise UserError(f"plan_retries must be >= 0, got {plan_retries}")
        self.name = name
        """The agent's name."""
        self.catalog = Catalog(tools, agentic_steps=agentic_steps)
        """The tools plan steps (and chat mode) may call."""
        self.budget = budget or PlanBudget()
        """The limits of every run."""
        self.router: Router | Literal["model"] | None = router
        """How a run without `mode=` is routed (`None`: `default_mode`)."""
        self.default_mode: Mode = default_mode
        """The mode used when neither `mode=` nor a router decides."""
        self.confirm = confirm
        """Decides on calls to tools that need approval; without it they are not made (`confirmation_required`)."""
        self.guard = guard
        """Authorizes every tool call of a run before confirmation is considered (`None`: all allowed)."""
        self._models = (model, planner_model or model, composer_model or model)
        self._resolved: tuple[Model, Model, Model] | None = None
        max_steps = self.budget.max_steps
        catalog_text = self.catalog.describe()
        self._hooks: tuple[Hook, ...] = tuple(hooks)
        self._planner = StructuredRole(
            name=PLAN_TOOL,
            description="Submit the plan: a JSON plan document (version 1) over the tool catalog.",
            schema=self.catalog.document_schema(max_steps=max_steps),
            constrained_schema=self.catalog.document_schema(max_steps=max_steps, constrained=True),
            instructions=_with_context(
                _PLANNER.format(
                    tool=PLAN_TOOL,
                    max_steps=max_steps,
                    agentic=_AGENTIC if agentic_steps else "",
                    catalog=catalog_text,
                ),
                instructions,
            ),
            retries=plan_retries,
            settings=model_settings,
            hooks=self._hooks,
        )
        self._replanner = StructuredRole(
            name=PATCH_TOOL,
            description="Submit the patch that repairs the plan.",
            schema=self.catalog.document_schema(max_steps=max_steps, kind="patch"),
            instructions=_with_context(
                _REPLANNER.format(tool=PATCH_TOOL, max_steps=max_steps, catalog=catalog_text), instructions
            ),
            retries=plan_retries,
            settings=model_settings,
            hooks=self._hooks,
        )
        self._route = StructuredRole(
            name=ROUTE_TOOL,
            description="Choose how to handle the request.",
            schema=_ROUTE_SCHEMA,
            instructions=_with_context(_ROUTER.format(tool=ROUTE_TOOL), instructions),
            retries=plan_retries,
            settings=model_settings,
            hooks=self._hooks,
        )
        self._composer: Agent[Any, str] = Agent(
            instructions=_with_context(_COMPOSER, instructions),
            model_settings=model_settings,
            name=f"{name}-composer",
            hooks=self._hooks,
        )
        self._chat: Agent[Any, str] = Agent(
            tools=list(self.catalog.tools.values()),
            instructions=instructions,
            model_settings=model_settings,
            name=f"{name}-chat",
            hooks=self._hooks,
            guard=guard,
        )
        self._step_settings = model_settings
        self._threads = ToolThreads(owner=f"planning agent {name!r}")

    def __repr__(self) -> str:
        return f"PlanningAgent(name={self.name!r}, tools={list(self.catalog.tools)})"

    def _models_now(self) -> tuple[Model, Model, Model]:
        if self._resolved is None:
            model, planner, composer = self._models
            resolved = infer_model(model)
            self._resolved = (
                resolved,
                resolved if planner is model else infer_model(planner),
                resolved if composer is model else infer_model(composer),
            )
        return self._resolved

    def _runner(
        self, prompt: str, deps: Any, trace: str | None, handler: Callable[[Any], Awaitable[None]] | None
    ) -> Runner:
        if not isinstance(prompt, str) or not prompt.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError("a planning run needs a non-empty text prompt")
        model, planner, composer = self._models_now()
        return Runner(
            prompt=prompt,
            model=model,
            planner_model=planner,
            composer_model=composer,
            catalog=self.catalog,
            budget=self.budget,
            planner=self._planner,
            replanner=self._replanner,
            composer=self._composer,
            chat=self._chat,
            route_role=self._route,
            router=self.router,
            default_mode=self.default_mode,
            step_instructions=_STEP,
            step_settings=self._step_settings,
            hooks=self._hooks,
            confirm=self.confirm,
            guard=self.guard,
            threads=self._threads,
            deps=deps,
            trace=trace,
            handler=handler,
        )

    async def run(
        self,
        prompt: str,
        *,
        mode: Mode | None = None,
        deps: Any = None,
        trace: str | None = None,
        event_handler: Callable[[Any], Awaitable[None]] | None = None,
    ) -> PlanningResult:
        """Answer `prompt`: `mode="chat"` (the agent loop), `"complex"` (plan and execute), or routed.

        Without `mode`, the router decides (`router=`), else `default_mode`. `event_handler`
        receives every plan event and then the composer's ordinary stream events. Raises
        `PlanError` (invalid plan, nothing ran), `PlanStepError`, `PlanBudgetExceeded` or
        `PlanTimeoutError` (all with `.report`).
        """
        if mode is not None and mode not in ("chat", "complex"):
            raise UserError(f"mode must be 'chat' or 'complex', got {mode!r}")
        runner = self._runner(prompt, deps, trace, event_handler)
        chosen, answer, report = await runner.run(mode, None)
        return PlanningResult(output=answer, mode=chosen, report=report)

    async def execute(
        self,
        plan: PlanDocument | Mapping[str, Any] | str | bytes,
        prompt: str,
        *,
        deps: Any = None,
        trace: str | None = None,
        event_handler: Callable[[Any], Awaitable[None]] | None = None,
    ) -> PlanningResult:
        """Run a plan document you wrote (validated first, exactly like a planned one), then replan and compose."""
        document: PlanDocument = decode_document(plan, PlanDocument, "plan document")
        runner = self._runner(prompt, deps, trace, event_handler)
        chosen, answer, report = await runner.run("complex", document)
        return PlanningResult(output=answer, mode=chosen, report=report)

    def run_sync(
        self,
        prompt: str,
        *,
        mode: Mode | None = None,
        deps: Any = None,
        trace: str | None = None,
        backend: str = "asyncio",
    ) -> PlanningResult:
        """The blocking form of `run`, for code without an event loop."""
        refuse_in_event_loop("run_sync", "run")
        call = functools.partial(self.run, prompt, mode=mode, deps=deps, trace=trace)
        return anyio.run(call, backend=backend)

    @asynccontextmanager
    async def run_stream(
        self, prompt: str, *, mode: Mode | None = None, deps: Any = None, trace: str | None = None
    ) -> AsyncGenerator[PlanStream]:
        """Stream a run: `async with agent.run_stream(...) as stream: async for event in stream`.

        Leaving the block early cancels the run. Errors are raised from the iteration.
        """
        send, receive = anyio.create_memory_object_stream[Any](64)
        stream = PlanStream(receive)

        async def produce() -> None:
            async with send:
                try:
                    result = await self.run(
                        prompt, mode=mode, deps=deps, trace=trace, event_handler=send.send
                    )
                except Exception as exc:
                    await send.send(_Outcome(None, exc))
                else:
                    await send.send(_Outcome(result, None))

        failure: Exception | None = None
        async with anyio.create_task_group() as group, receive:
            group.start_soon(produce)
            try:
                yield stream
            except Exception as exc:  # re-raised below, outside the task group, so never wrapped
                failure = exc
            finally:
                group.cancel_scope.cancel()
        if failure is not None:
            raise failure
