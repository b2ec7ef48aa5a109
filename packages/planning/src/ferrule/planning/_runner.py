"""One model-planned run: route -> plan -> execute in batches -> observe evidence -> replan -> answer."""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import time
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Sequence
from typing import Any
from typing import Literal
from typing import TypeAlias
from typing import cast

import anyio
import anyio.abc
import msgspec

from ferrule.agent import Agent
from ferrule.agent import GuardFn
from ferrule.agent import ModelRetry
from ferrule.agent import RunContext
from ferrule.agent import Tool
from ferrule.agent import ToolReturn
from ferrule.agent import ToolThreads
from ferrule.agent import ask_guard
from ferrule.agent import receipts_from_messages
from ferrule.agent.exceptions import RunTimeoutError
from ferrule.agent.exceptions import run_state_of
from ferrule.agent.hooks import Hook
from ferrule.core.errors import UserError
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ToolReturnPart
from ferrule.core.messages import new_tool_call_id
from ferrule.core.model import Model
from ferrule.core.usage import RunUsage
from ferrule.core.usage import UsageLimitExceeded
from ferrule.core.usage import UsageLimits

from ._budget import PlanBudget
from ._catalog import Catalog
from ._compile import compile_plan
from ._document import PLAN_VERSION
from ._document import CompiledPlan
from ._document import CompiledStep
from ._document import PlanDocument
from ._document import PlanPatch
from ._document import TaskStep
from ._document import decode_document
from ._errors import PlanError
from ._events import BatchEndEvent
from ._events import BatchStartEvent
from ._events import PlanCompletedEvent
from ._events import PlanCreatedEvent
from ._events import PlanFailedEvent
from ._events import PlanRevisedEvent
from ._events import ReplanEvent
from ._events import StepEndEvent
from ._events import StepFailedEvent
from ._events import StepSkippedEvent
from ._events import StepStartEvent
from ._limits import clip
from ._pointer import PointerError
from ._pointer import assign
from ._pointer import format_pointer
from ._pointer import json_equal
from ._pointer import parse_pointer
from ._pointer import resolve
from ._results import ActionReceipt
from ._results import ActionStatus
from ._results import ConfirmationRequest
from ._results import Evidence
from ._results import PlanReport
from ._results import PlanStats
from ._results import PlanWarning
from ._results import StepResult
from ._results import StepStatus
from ._roles import Job
from ._roles import StructuredRole
from ._run_errors import PlanBudgetExceeded
from ._run_errors import PlanRunError
from ._run_errors import PlanStepError
from ._run_errors import PlanTimeoutError
from ._util import call_user
from ._util import describe_error
from ._util import safe_text

__all__ = ["Runner"]

EventHandler = Callable[[Any], Awaitable[None]]
Mode: TypeAlias = Literal["chat", "complex"]
"""How a request is handled: the plain agent loop, or plan -> execute -> compose."""
Router: TypeAlias = Callable[[str], "Mode | Awaitable[Mode]"]
"""`router(prompt) -> "chat" | "complex"`, sync (in a worker thread) or async."""
_OK: frozenset[str] = frozenset({"succeeded", "skipped"})
_SUMMARY_CHARS = 2000


def _plain(value: Any) -> Any:
    """A deep copy of a JSON value."""
    return msgspec.json.decode(msgspec.json.encode(value))


def evidence_from_messages(messages: Sequence[Message]) -> list[Evidence]:
    """Chat-mode evidence: every successful tool result of the run."""
    found: list[Evidence] = []
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, ToolReturnPart) and part.outcome == "success" and part.tool_kind is None:
                    try:
                        value = _plain(part.content)
                    except (TypeError, msgspec.EncodeError):
                        value = part.model_response_str()
                    found.append(
                        Evidence(
                            step_id=None,
                            capability=part.tool_name,
                            value=value,
                            tool_call_id=part.tool_call_id,
                        )
                    )
    return found


@dataclasses.dataclass(slots=True)
class StepState:
    """The live state of one step of the current revision."""

    step: CompiledStep
    revision: int
    status: StepStatus = "pending"
    cleared: bool = False  # dependencies done, condition true: ready for a batch
    input: Any = None
    output: Any = None
    error: str | None = None
    repeatable: bool = True  # False once a side effect happened: a patch may not replace the step

    def result(self) -> StepResult:
        doc = self.step.doc
        return StepResult(
            id=doc.id,
            status=self.status,
            capability=doc.capability or "agent",
            revision=self.revision,
            input=self.input,
            output=self.output,
            error=self.error,
        )


@dataclasses.dataclass(kw_only=True, eq=False, repr=False)
class Runner:
    """The state of one run of a `PlanningAgent` (never shared between runs)."""

    # eq=False: a run is itself, compared and hashed by identity; repr=False: no repr of its
    # models, deps and prompt.
    prompt: str
    model: Model
    planner_model: Model
    composer_model: Model
    catalog: Catalog
    budget: PlanBudget
    planner: StructuredRole
    replanner: StructuredRole
    composer: Agent[Any, str]
    chat: Agent[Any, str]
    route_role: StructuredRole
    router: Router | Literal["model"] | None
    default_mode: Mode
    step_instructions: str
    step_settings: Any
    hooks: Sequence[Hook]
    confirm: Callable[[ConfirmationRequest], Any] | None
    guard: GuardFn | None
    threads: ToolThreads
    deps: Any
    trace: str | None
    handler: EventHandler | None

    def __post_init__(self) -> None:
        self.run_id = os.urandom(8).hex()
        self.started = time.perf_counter()
        self.deadline: float | None = None
        self.plan: CompiledPlan | None = None
        self.revision = 0
        self.states: dict[str, StepState] = {}
        self.history: list[StepResult] = []
        self.evidence: list[Evidence] = []
        self.actions: list[ActionReceipt] = []
        self.warnings: list[PlanWarning] = []
        self.usage = RunUsage()
        self.counts = {"steps": 0, "skipped": 0, "failed": 0, "batches": 0, "replans": 0}
        self.model_calls = 0
        self.tool_calls = 0
        self.seconds = {"planning": 0.0, "execution": 0.0, "composing": 0.0}

    # --- bookkeeping ------------------------------------------------------------------------------

    async def emit(self, event: Any) -> None:
        if self.handler is not None:
            await self.handler(event)

    def add_model_usage(self, usage: RunUsage) -> None:
        self.usage = self.usage + usage
        self.model_calls += usage.requests
        self.tool_calls += usage.tool_calls

    def remaining_time(self) -> float | None:
        if self.deadline is None:
            return None
        remaining = self.deadline - anyio.current_time()
        if remaining <= 0:
            raise PlanTimeoutError(f"PlanBudget.hard_timeout={self.budget.hard_timeout} s passed")
        return remaining

    def model_allowance(self, what: str, *, keep_for_composer: bool = True) -> int:
        """Model requests the next call may make; raises before it when none is left."""
        left = self.budget.max_model_calls - self.model_calls - (1 if keep_for_composer else 0)
        if left < 1:
            raise PlanBudgetExceeded("max_model_calls", self.budget.max_model_calls, what=what)
        return left

    def report(self) -> PlanReport:
        steps: dict[str, StepResult] = {}
        for item in self.history:
            steps[f"{item.id}@{item.revision}"] = item
        for step_id, state in self.states.items():
            steps[step_id] = state.result()
        return PlanReport(
            plan=self.plan.document if self.plan is not None else None,
            revision=self.revision,
            steps=steps,
            evidence=tuple(self.evidence),
            actions=tuple(self.actions),
            warnings=tuple(self.warnings),
            stats=PlanStats(
                steps=self.counts["steps"],
                skipped=self.counts["skipped"],
                failed=self.counts["failed"],
                batches=self.counts["batches"],
                model_calls=self.model_calls,
                tool_calls=self.tool_calls,
                replans=self.counts["replans"],
                planning_seconds=self.seconds["planning"],
                execution_seconds=self.seconds["execution"],
                composing_seconds=self.seconds["composing"],
                total_seconds=time.perf_counter() - self.started,
            ),
            usage=self.usage + RunUsage(),  # a snapshot: the run's own object keeps changing
        )

    def fail(self, error: PlanRunError) -> PlanRunError:
        error.report = self.report()
        return error

    # --- the run --------------------------------------------------------------------------------

    async def run(self, mode: Mode | None, document: PlanDocument | None) -> tuple[Mode, str, PlanReport]:
        """Route (unless `mode` is given), then answer in chat mode, or plan (unless `document` is
        given), execute, replan and compose; returns the mode, the answer and the report."""
        hard = self.budget.hard_timeout
        if hard is not None:
            self.deadline = anyio.current_time() + hard
        answer = ""
        with anyio.CancelScope(deadline=math.inf if self.deadline is None else self.deadline) as scope:
            try:
                if mode is None:
                    mode = await self._route()
                if mode == "chat":
                    answer = await self._chat()
                else:
                    await self._plan(document)
                    await self._execute()
                    answer = await self._compose()
            except PlanRunError as error:
                await self._failed(error)
                raise self.fail(error) from None
            except RunTimeoutError as exc:
                error = PlanTimeoutError(f"PlanBudget.hard_timeout={hard} s passed while a model call ran")
                await self._failed(error)
                raise self.fail(error) from exc
        if scope.cancelled_caught:
            error = PlanTimeoutError(f"PlanBudget.hard_timeout={hard} s passed; in-flight work was cancelled")
            await self._failed(error)
            raise self.fail(error)
        assert mode is not None
        return mode, answer, self.report()

    async def _route(self) -> Mode:
        router = self.router
        if router is None:
            return self.default_mode
        if router == "model":
            started = time.perf_counter()
            job = Job(_check_route, self.route_role.name)
            try:
                mode: Mode = await self._ask_planner(self.route_role, self.prompt, job, "routing the request")
                return mode
            finally:
                self.seconds["planning"] += time.perf_counter() - started
        assert callable(router)
        chosen = await call_user(router, self.prompt)
        if chosen not in ("chat", "complex"):
            raise UserError(f"the router returned {chosen!r}; it must return 'chat' or 'complex'")
        return chosen

    async def _chat(self) -> str:
        """Chat mode: the ordinary agent loop over the catalog's tools, within the same budget."""
        limits = UsageLimits(
            request_limit=self.model_allowance("answering in chat mode", keep_for_composer=False),
            tool_calls_limit=self.budget.max_tool_calls - self.tool_calls,
        )
        usage = RunUsage()
        messages: Sequence[Message] = ()
        try:
            result = await self.chat.run(
                self.prompt,
                model=self.model,
                deps=self.deps,
                usage_limits=limits,
                timeout=self.remaining_time(),
                event_handler=self.handler,
            )
            usage, messages = result.usage, result.new_messages()
        except Exception as exc:
            run_state = run_state_of(exc)
            if run_state is not None:
                usage, messages = run_state.usage, run_state.messages[run_state.new_message_index :]
            if isinstance(exc, UsageLimitExceeded):
                raise self._exceeded(exc, "chat mode") from exc
            raise
        finally:
            self.add_model_usage(usage)
            self.actions.extend(receipts_from_messages(messages, self.catalog.tools))
            self.evidence.extend(evidence_from_messages(messages))
        return result.output

    async def _failed(self, error: PlanRunError) -> None:
        step_id = getattr(error, "step_id", None)
        with anyio.CancelScope(shield=True):
            await self.emit(
                PlanFailedEvent(
                    run_id=self.run_id,
                    revision=self.revision,
                    trace=self.trace,
                    step_id=step_id,
                    error=describe_error(error),
                )
            )

    async def _plan(self, document: PlanDocument | None) -> None:
        started = time.perf_counter()
        try:
            if document is None:
                job = Job(self._check_plan, self.planner.name)
                compiled = cast(
                    "CompiledPlan",
                    await self._ask_planner(self.planner, self.prompt, job, "planning the request"),
                )
            else:
                compiled = compile_plan(document, self.catalog, max_steps=self.budget.max_steps)
        finally:
            self.seconds["planning"] += time.perf_counter() - started
        self.plan = compiled
        self.revision = 1
        self.states = {s.id: StepState(step=s, revision=1) for s in compiled.steps}
        await self.emit(
            PlanCreatedEvent(run_id=self.run_id, revision=1, trace=self.trace, plan=compiled.document)
        )

    def _check_plan(self, output: dict[str, Any]) -> CompiledPlan:
        decoded: PlanDocument = decode_document(output, PlanDocument, "plan document")
        return compile_plan(decoded, self.catalog, max_steps=self.budget.max_steps)

    async def _ask_planner(
        self, role: StructuredRole, prompt: str, job: Job, what: str, *, budget_what: str | None = None
    ) -> Any:
        """`role`'s checked answer from the planner model within the model-call budget (`what` is
        the step named when none is left, `budget_what` when the call runs out); its usage is
        counted even when it fails."""
        try:
            limits = UsageLimits(request_limit=self.model_allowance(what))
            try:
                return await role.call(
                    self.planner_model, prompt, job, limits=limits, remaining=self.remaining_time()
                )
            except UsageLimitExceeded as exc:
                raise self._budget_error(exc, budget_what or what, job.error) from None
        finally:
            self.add_model_usage(job.usage)

    def _exceeded(self, exc: UsageLimitExceeded, what: str) -> PlanBudgetExceeded:
        """The plan budget an agent run's tool-call or model-call limit stood for."""
        if exc.limit == "tool_calls_limit":
            return PlanBudgetExceeded("max_tool_calls", self.budget.max_tool_calls, what=what)
        return PlanBudgetExceeded("max_model_calls", self.budget.max_model_calls, what=what)

    def _budget_error(self, exc: UsageLimitExceeded, what: str, last: PlanError | None) -> PlanBudgetExceeded:
        error = PlanBudgetExceeded("max_model_calls", self.budget.max_model_calls, what=what)
        if last is not None:
            error.add_note(f"the model's last answer was rejected: {last}")
        error.__cause__ = exc
        return error

    # --- execution --------------------------------------------------------------------------------

    async def _execute(self) -> None:
        while True:
            plan = self.plan
            assert plan is not None
            await self._clear_ready(plan)
            ready = [
                s for s in plan.steps if self.states[s.id].status == "pending" and self.states[s.id].cleared
            ]
            if not ready:
                break
            batch = ready[: self.budget.max_parallel_steps]
            started = time.perf_counter()
            try:
                await self._run_batch(batch)
            finally:
                self.seconds["execution"] += time.perf_counter() - started
            broken = [
                self.states[s.id]
                for s in batch
                if s.doc.required and self.states[s.id].status in ("failed", "unknown")
            ]
            if broken:
                await self._replan(broken)
        await self.emit(PlanCompletedEvent(run_id=self.run_id, revision=self.revision, trace=self.trace))

    async def _skip(self, state: StepState, reason: str) -> None:
        state.status = "skipped"
        state.error = reason
        self.counts["skipped"] += 1
        step_id = state.step.id
        self.warnings.append(PlanWarning(kind="step_skipped", step_id=step_id, message=reason))
        await self.emit(
            StepSkippedEvent(
                run_id=self.run_id, revision=self.revision, trace=self.trace, step_id=step_id, reason=reason
            )
        )

    async def _clear_ready(self, plan: CompiledPlan) -> None:
        """Decide, in dependency order, which waiting steps are ready and which are skipped."""
        for step_id in plan.order:
            state = self.states[step_id]
            if state.status != "pending" or state.cleared:
                continue
            deps = [self.states[d] for d in state.step.doc.depends_on]
            if any(d.status == "pending" for d in deps):
                continue
            bad = next((d for d in deps if d.status not in _OK), None)
            if bad is not None:
                await self._skip(state, f"dependency {bad.step.id!r} did not succeed ({bad.status})")
                continue
            skipped = next(
                (src for src, _, _ in state.step.bindings if self.states[src].status == "skipped"), None
            )
            if skipped is not None:
                await self._skip(state, f"its binding reads step {skipped!r}, which was skipped")
                continue
            condition = state.step.condition
            if condition is not None:
                source, path, equals = condition
                source_state = self.states[source]
                where = f"{format_pointer(path) or '/'} of {source!r}"
                if source_state.status == "skipped":
                    await self._skip(state, f"its condition reads step {source!r}, which was skipped")
                    continue
                try:
                    value = resolve(source_state.output, path)
                except PointerError as exc:
                    await self._skip(state, f"its condition could not be read ({where}: {exc})")
                    continue
                if not json_equal(value, equals):
                    shown = clip(msgspec.json.encode(value).decode(), 200)
                    expected = clip(msgspec.json.encode(equals).decode(), 200)
                    await self._skip(state, f"condition false: {where} is {shown}, not {expected}")
                    continue
            state.cleared = True

    async def _run_batch(self, batch: list[CompiledStep]) -> None:
        number = self.counts["batches"] + 1
        ids = tuple(s.id for s in batch)
        if number > self.budget.max_batches:
            raise PlanBudgetExceeded(
                "max_batches", self.budget.max_batches, what=f"batch {number} (steps {', '.join(ids)})"
            )
        tool_steps = sum(1 for s in batch if s.doc.agent is None)
        if self.tool_calls + tool_steps > self.budget.max_tool_calls:
            raise PlanBudgetExceeded(
                "max_tool_calls",
                self.budget.max_tool_calls,
                what=f"the {tool_steps} tool call(s) of batch {number} after {self.tool_calls} made",
            )
        # Agentic steps get what the batch's tool steps leave, in declaration order.
        spare = self.budget.max_tool_calls - self.tool_calls - tool_steps
        spare_models = self.budget.max_model_calls - self.model_calls - 1
        allowances: dict[str, tuple[int, int]] = {}
        for step in batch:
            task = step.doc.agent
            if task is None:
                continue
            tools = min(task.max_tool_calls, spare)
            models = min(tools + 1, spare_models)
            if models < 1:
                raise PlanBudgetExceeded(
                    "max_model_calls", self.budget.max_model_calls, what=f"agentic step {step.id!r}"
                )
            spare -= tools
            spare_models -= models
            allowances[step.id] = (tools, models)
        self.counts["batches"] = number
        await self.emit(
            BatchStartEvent(
                run_id=self.run_id, revision=self.revision, trace=self.trace, batch=number, step_ids=ids
            )
        )
        if len(batch) == 1:
            await self._run_step(batch[0], allowances.get(batch[0].id))
        else:
            errors: list[BaseException] = []
            async with anyio.create_task_group() as group:
                for step in batch:
                    group.start_soon(self._guarded, group, errors, step, allowances.get(step.id))
            if errors:
                raise errors[0]
        await self.emit(
            BatchEndEvent(
                run_id=self.run_id, revision=self.revision, trace=self.trace, batch=number, step_ids=ids
            )
        )

    async def _guarded(
        self,
        group: anyio.abc.TaskGroup,
        errors: list[BaseException],
        step: CompiledStep,
        allowance: tuple[int, int] | None,
    ) -> None:
        """Run one step of a parallel batch; a run-ending error cancels the siblings and is re-raised
        by the batch itself (not wrapped in an exception group)."""
        try:
            await self._run_step(step, allowance)
        except (PlanRunError, RunTimeoutError, UserError) as exc:
            errors.append(exc)
            group.cancel_scope.cancel()

    def _bound_input(self, step: CompiledStep) -> dict[str, Any]:
        target = cast("dict[str, Any]", _plain(step.doc.input))
        for source, path, where in step.bindings:
            value = resolve(self.states[source].output, path)
            assign(target, where, _plain(value))
        return target

    async def _step_failed(self, state: StepState, status: StepStatus, error: str) -> None:
        state.status = status
        state.error = error
        self.counts["failed"] += 1
        step = state.step
        if not step.doc.required and status in ("failed", "unknown"):
            self.warnings.append(
                PlanWarning(
                    kind="optional_step_failed", step_id=step.id, message=f"optional step failed: {error}"
                )
            )
        await self.emit(
            StepFailedEvent(
                run_id=self.run_id,
                revision=self.revision,
                trace=self.trace,
                step_id=step.id,
                status=status,  # pyright: ignore[reportArgumentType]
                error=error,
            )
        )

    def _receipt(
        self, tool: Tool[Any], call_id: str, step_id: str, status: ActionStatus, detail: str | None
    ) -> None:
        if tool.side_effect != "read_only":
            self.actions.append(
                ActionReceipt(
                    tool_call_id=call_id,
                    tool_name=tool.name,
                    status=status,
                    side_effect=tool.side_effect,
                    risk=tool.risk,
                    detail=detail,
                    step_id=step_id,
                )
            )

    async def _run_step(self, step: CompiledStep, allowance: tuple[int, int] | None) -> None:
        state = self.states[step.id]
        state.cleared = False
        try:
            state.input = self._bound_input(step)
        except PointerError as exc:
            await self._step_failed(state, "failed", clip(f"a binding could not be applied: {exc}"))
            return
        if step.doc.agent is not None:
            assert allowance is not None
            await self._run_agent_step(state, allowance)
        else:
            await self._run_tool_step(state)

    def _context(self, tool: Tool[Any], call_id: str) -> RunContext[Any]:
        return RunContext(
            deps=self.deps,
            model=self.model,
            usage=self.usage,
            messages=(),
            prompt=self.prompt,
            run_id=self.run_id,
            deadline=self.deadline,
            tool_name=tool.name,
            tool_call_id=call_id,
        )

    async def _run_tool_step(self, state: StepState) -> None:
        step = state.step
        name = step.doc.capability
        assert name is not None
        tool = self.catalog.tools[name]
        try:
            args = tool.validate_args(state.input)
        except Exception as exc:  # only validation runs here: no application code
            await self._step_failed(
                state, "failed", clip(f"the bound input does not fit tool {name!r}: {exc}")
            )
            return
        call_id = new_tool_call_id()
        ctx = self._context(tool, call_id)
        if self.guard is not None and not await self._authorized(state, tool, call_id, ctx, args):
            return
        needs = tool.requires_approval
        if callable(needs):
            needs = bool(await call_user(needs, ctx, args))
        if needs:
            if self.confirm is None:
                detail = f"tool {name!r} requires confirmation and the planning agent has no confirm callback"
                self._receipt(tool, call_id, step.id, "confirmation_required", detail)
                self.warnings.append(PlanWarning(kind="not_confirmed", step_id=step.id, message=detail))
                await self._step_failed(state, "confirmation_required", detail)
                return
            request = ConfirmationRequest(
                step_id=step.id,
                tool_name=name,
                args=tool.json_kwargs(args),
                side_effect=tool.side_effect,
                tool_call_id=call_id,
                risk=tool.risk,
            )
            if not bool(await call_user(self.confirm, request)):
                detail = f"the confirm callback declined the call to {name!r}"
                self._receipt(tool, call_id, step.id, "denied", detail)
                self.warnings.append(PlanWarning(kind="denied", step_id=step.id, message=detail))
                await self._step_failed(state, "denied", detail)
                return
        self.counts["steps"] += 1
        self.tool_calls += 1
        self.usage.tool_calls += 1
        await self.emit(
            StepStartEvent(
                run_id=self.run_id,
                revision=self.revision,
                trace=self.trace,
                step_id=step.id,
                capability=name,
                input=state.input,
            )
        )
        timeout = tool.timeout
        finished = False
        try:
            with anyio.fail_after(timeout) if timeout is not None else contextlib.nullcontext():
                raw = await tool.call(ctx, args, threads=self.threads)
            finished = True
        except TimeoutError:
            error = f"tool {name!r} timed out after {timeout} s"
            if tool.side_effect == "non_idempotent":
                state.repeatable = False
                self._receipt(tool, call_id, step.id, "unknown", error + "; it may have taken effect")
                await self._step_failed(
                    state, "unknown", error + "; its outcome is unknown and it is never retried"
                )
            else:
                self._receipt(tool, call_id, step.id, "failed", error)
                await self._step_failed(state, "failed", error)
            return
        except ModelRetry as exc:
            self._receipt(tool, call_id, step.id, "failed", safe_text(exc.message))
            await self._step_failed(state, "failed", safe_text(exc.message))
            return
        except Exception as exc:
            error = describe_error(exc)
            self._receipt(tool, call_id, step.id, "failed", error)
            await self._step_failed(state, "failed", error)
            return
        finally:
            if not finished and tool.side_effect != "read_only" and state.status == "pending":
                # Torn down mid-call (hard timeout, a failing sibling): the effect may have happened.
                status: ActionStatus = "unknown" if tool.side_effect == "non_idempotent" else "failed"
                state.status = status
                state.error = "the call was interrupted"
                state.repeatable = False
                self._receipt(tool, call_id, step.id, status, "the call was interrupted")
        await self._accept_output(state, tool, call_id, raw)

    async def _authorized(
        self, state: StepState, tool: Tool[Any], call_id: str, ctx: RunContext[Any], args: Any
    ) -> bool:
        """Whether the guard lets the step call `tool`, as an agent's guard decides a model's call
        (asked first, before approval); a denial or a retry request fails the step, nothing runs."""
        assert self.guard is not None
        step_id = state.step.id
        try:
            denied = await ask_guard(self.guard, ctx, tool, args)
        except ModelRetry as retry:  # no model made this call: the failure goes to the replanner
            error = safe_text(retry.message)
            self._receipt(tool, call_id, step_id, "failed", error)
            await self._step_failed(state, "failed", error)
            return False
        if denied is None:
            return True
        detail = safe_text(denied.message)
        self._receipt(tool, call_id, step_id, "denied", detail)
        self.warnings.append(PlanWarning(kind="denied", step_id=step_id, message=detail))
        await self._step_failed(state, "denied", detail)
        return False

    async def _accept_output(self, state: StepState, tool: Tool[Any], call_id: str, raw: Any) -> None:
        step = state.step
        if isinstance(raw, ToolReturn):
            if raw.content:
                self.warnings.append(
                    PlanWarning(
                        kind="content_dropped",
                        step_id=step.id,
                        message=f"tool {tool.name!r} returned follow-up content, which plan steps do not carry",
                    )
                )
            raw = raw.return_value
        try:
            encoded = msgspec.json.encode(raw)
        except (TypeError, msgspec.EncodeError, OverflowError) as exc:
            encoded = None
            problem = f"its output is not JSON data: {exc}"
        else:
            limit = self.budget.max_step_output_bytes
            problem = (
                f"its output of {len(encoded)} bytes exceeds PlanBudget.max_step_output_bytes={limit}"
                if len(encoded) > limit
                else None
            )
        if problem is not None or encoded is None:
            # The call itself completed: a side effect took place even though the output is refused.
            state.repeatable = tool.side_effect == "read_only"
            self._receipt(tool, call_id, step.id, "succeeded", f"the call completed but {problem}")
            await self._step_failed(state, "failed", clip(f"tool {tool.name!r} ran but {problem}"))
            return
        value = msgspec.json.decode(encoded)
        self._receipt(tool, call_id, step.id, "succeeded", None)
        await self._succeeded(state, value, tool.name, call_id)

    async def _succeeded(self, state: StepState, value: Any, capability: str, call_id: str | None) -> None:
        state.status = "succeeded"
        state.output = value
        self.evidence.append(
            Evidence(step_id=state.step.id, capability=capability, value=value, tool_call_id=call_id)
        )
        await self.emit(
            StepEndEvent(
                run_id=self.run_id,
                revision=self.revision,
                trace=self.trace,
                step_id=state.step.id,
                output=value,
            )
        )

    async def _run_agent_step(self, state: StepState, allowance: tuple[int, int]) -> None:
        step = state.step
        task = step.doc.agent
        assert task is not None
        tool_limit, model_limit = allowance
        agent: Agent[Any, str] = Agent(
            self.model,
            tools=[self.catalog.tools[name] for name in task.tools],
            instructions=self.step_instructions,
            model_settings=self.step_settings,
            name=f"plan-step-{step.id}",
            hooks=self.hooks,
            guard=self.guard,
        )
        prompt = task.prompt
        if state.input:
            prompt += "\n\nInput (JSON):\n" + msgspec.json.encode(state.input).decode()
        self.counts["steps"] += 1
        await self.emit(
            StepStartEvent(
                run_id=self.run_id,
                revision=self.revision,
                trace=self.trace,
                step_id=step.id,
                input=state.input,
            )
        )
        usage = RunUsage()
        messages: Sequence[Message] = ()
        try:
            result = await agent.run(
                prompt,
                deps=self.deps,
                usage_limits=UsageLimits(request_limit=model_limit, tool_calls_limit=tool_limit),
                timeout=self.remaining_time(),
            )
        except RunTimeoutError:
            raise
        except Exception as exc:
            run_state = run_state_of(exc)
            if run_state is not None:
                usage, messages = run_state.usage, run_state.messages
            if not isinstance(exc, UsageLimitExceeded):
                await self._agent_failed(state, describe_error(exc))
            elif exc.limit == "tool_calls_limit" and tool_limit == task.max_tool_calls:
                await self._agent_failed(
                    state, f"it needed more than its max_tool_calls={tool_limit} tool calls"
                )
            else:
                raise self._exceeded(exc, f"agentic step {step.id!r}") from exc
        else:
            usage, messages = result.usage, result.all_messages()
            await self._succeeded(state, result.output, "agent", None)
        finally:
            self.add_model_usage(usage)
            receipts = receipts_from_messages(messages, self.catalog.tools, step_id=step.id)
            self.actions.extend(receipts)
            if any(
                r.status in ("succeeded", "unknown") and r.side_effect == "non_idempotent" for r in receipts
            ):
                state.repeatable = False

    async def _agent_failed(self, state: StepState, error: str) -> None:
        await self._step_failed(state, "failed", clip(f"the agentic step failed: {error}"))

    # --- replanning -------------------------------------------------------------------------------

    async def _replan(self, broken: list[StepState]) -> None:
        for state in broken:
            if state.status == "unknown" or not state.repeatable:
                raise PlanStepError(
                    f"required step {state.step.id!r} ended with an outcome that cannot be repeated safely "
                    f"({state.error}); it is never retried or replaced",
                    step_id=state.step.id,
                    status="unknown",
                )
        first = broken[0]
        if self.counts["replans"] + 1 > self.budget.max_replans:
            raise PlanStepError(
                f"required step {first.step.id!r} failed ({first.error}) and PlanBudget.max_replans="
                f"{self.budget.max_replans} replan(s) are used up",
                step_id=first.step.id,
                status="failed",
            )
        plan = self.plan
        assert plan is not None
        started = time.perf_counter()
        replaceable = [
            s.step.id for s in self.states.values() if s.status in ("failed", "pending") and s.repeatable
        ]
        succeeded = [s.step.id for s in self.states.values() if s.status == "succeeded"]
        max_steps = self.budget.max_steps
        role = self.replanner.with_schema(
            self.catalog.document_schema(max_steps=max_steps, kind="patch", replaceable=replaceable),
            self.catalog.document_schema(
                max_steps=max_steps,
                kind="patch",
                replaceable=replaceable,
                succeeded=succeeded,
                constrained=True,
            ),
        )
        job = Job(self._check_patch, role.name)
        try:
            compiled, replaced, added = cast(
                "tuple[CompiledPlan, tuple[str, ...], tuple[str, ...]]",
                await self._ask_planner(
                    role,
                    self._replan_prompt(plan),
                    job,
                    f"replanning after step {first.step.id!r} failed",
                    budget_what="replanning",
                ),
            )
        finally:
            self.seconds["planning"] += time.perf_counter() - started
        for step_id in replaced:
            self.history.append(self.states.pop(step_id).result())
        self.revision += 1
        self.counts["replans"] += 1
        self.plan = compiled
        for step in compiled.steps:
            kept = self.states.get(step.id)
            if kept is None:
                self.states[step.id] = StepState(step=step, revision=self.revision)
            else:
                kept.step = step
        self.states = {s.id: self.states[s.id] for s in compiled.steps}
        failed = tuple(s.step.id for s in broken)
        self.warnings.append(
            PlanWarning(
                kind="replanned",
                step_id=first.step.id,
                message=f"revision {self.revision} replaced {', '.join(replaced)} after {', '.join(failed)} failed",
            )
        )
        await self.emit(
            ReplanEvent(
                run_id=self.run_id,
                revision=self.revision,
                trace=self.trace,
                failed=failed,
                replaced=replaced,
                added=added,
            )
        )
        await self.emit(
            PlanRevisedEvent(
                run_id=self.run_id,
                revision=self.revision,
                trace=self.trace,
                step_ids=tuple(s.id for s in compiled.steps),
            )
        )

    def _check_patch(self, output: dict[str, Any]) -> tuple[CompiledPlan, tuple[str, ...], tuple[str, ...]]:
        patch: PlanPatch = decode_document(output, PlanPatch, "patch")
        return apply_patch(self, patch)

    def _replan_prompt(self, plan: CompiledPlan) -> str:
        failed = [s.step.id for s in self.states.values() if s.status == "failed" and s.step.doc.required]
        lines = [
            f"The request was: {self.prompt}",
            "",
            f"Plan revision {self.revision}:",
            plan.document.to_json().decode(),
            "",
            "Step results:",
        ]
        for step in plan.steps:
            state = self.states[step.id]
            if state.status == "succeeded":
                shown = clip(msgspec.json.encode(state.output).decode(), _SUMMARY_CHARS)
                lines.append(f"- {step.id}: succeeded; output: {shown}")
            elif state.status == "pending":
                lines.append(f"- {step.id}: not started")
            else:
                lines.append(f"- {step.id}: {state.status}: {state.error}")
        lines += [
            "",
            f"Submit a patch with {self.replanner.name}: 'replace' lists the failed required steps "
            f"({', '.join(failed)}) and any not started steps you want to change; 'steps' are the new steps "
            "that take their place. "
            "Steps that succeeded keep their outputs and never run again: do not replace them, but new "
            "steps may depend on them.",
        ]
        return "\n".join(lines)

    # --- composing --------------------------------------------------------------------------------

    def _evidence_prompt(self) -> str:
        plan = self.plan
        assert plan is not None
        steps: list[dict[str, Any]] = []
        for step in plan.steps:
            state = self.states[step.id]
            entry: dict[str, Any] = {
                "step": step.id,
                "capability": step.doc.capability or "agent",
                "status": state.status,
            }
            if state.status == "succeeded":
                entry["output"] = state.output
            elif state.error:
                entry["note"] = state.error
            steps.append(entry)
        body: dict[str, Any] = {"steps": steps}
        if self.warnings:
            body["warnings"] = [w.message for w in self.warnings]
        return f"Request: {self.prompt}\n\nEvidence (JSON):\n{msgspec.json.encode(body).decode()}"

    async def _compose(self) -> str:
        started = time.perf_counter()
        limits = UsageLimits(
            request_limit=self.model_allowance("composing the answer", keep_for_composer=False)
        )
        usage = RunUsage()
        try:
            result = await self.composer.run(
                self._evidence_prompt(),
                model=self.composer_model,
                deps=self.deps,
                usage_limits=limits,
                timeout=self.remaining_time(),
                event_handler=self.handler,
            )
            usage = result.usage
        except Exception as exc:
            run_state = run_state_of(exc)
            if run_state is not None:
                usage = run_state.usage
            if isinstance(exc, UsageLimitExceeded):  # only its request limit is set
                raise PlanBudgetExceeded(
                    "max_model_calls", self.budget.max_model_calls, what="composing the answer"
                ) from exc
            raise
        finally:
            self.add_model_usage(usage)
            self.seconds["composing"] += time.perf_counter() - started
        return result.output


def _canonical(step: TaskStep) -> TaskStep:
    """`step` with its pointers in canonical form (as a validated plan holds them), where they parse."""
    try:
        condition = step.condition
        if condition is not None:
            condition = msgspec.structs.replace(
                condition, source_path=format_pointer(parse_pointer(condition.source_path))
            )
        bindings = tuple(
            msgspec.structs.replace(
                b,
                source_path=format_pointer(parse_pointer(b.source_path)),
                target_path=format_pointer(parse_pointer(b.target_path)),
            )
            for b in step.bindings
        )
    except PointerError:
        return step
    return msgspec.structs.replace(step, condition=condition, bindings=bindings)


def _check_route(output: dict[str, Any]) -> Mode:
    mode = output.get("mode")
    if mode not in ("chat", "complex"):
        raise PlanError(f"the route must be 'chat' or 'complex', got {mode!r}")
    return mode


def apply_patch(runner: Runner, patch: PlanPatch) -> tuple[CompiledPlan, tuple[str, ...], tuple[str, ...]]:
    """The next revision: the patch's steps in place of the replaced ones; checks what may be replaced."""
    plan = runner.plan
    assert plan is not None
    if patch.version != PLAN_VERSION:
        raise PlanError(f"the patch's version must be {PLAN_VERSION}, got {patch.version!r}")
    replace = list(dict.fromkeys(patch.replace))
    if len(replace) != len(patch.replace):
        raise PlanError("the patch lists a step in 'replace' twice")
    for step_id in replace:
        state = runner.states.get(step_id)
        if state is None:
            raise PlanError("the patch replaces a step that is not in the plan", step_id=step_id)
        if state.status == "succeeded":
            raise PlanError(
                "the step succeeded: its output is kept and it is never run again, so a patch cannot replace it",
                step_id=step_id,
            )
        if state.status not in ("failed", "pending"):
            raise PlanError(
                f"the step is {state.status}; a patch replaces failed or not started steps", step_id=step_id
            )
        if not state.repeatable:
            raise PlanError(
                "the step's side effect may have happened, so it is never replaced", step_id=step_id
            )
    for state in runner.states.values():
        if state.status == "failed" and state.step.doc.required and state.step.id not in replace:
            raise PlanError("the patch must replace this failed required step", step_id=state.step.id)
    removed = set(replace)
    kept_ids = {s.id for s in plan.steps if s.id not in removed}
    added: list[TaskStep] = []
    for new in patch.steps:
        if new.id in kept_ids:
            # Models often repeat the whole plan: a kept step repeated unchanged is not a change.
            if _canonical(new) == plan.by_id[new.id].doc:
                continue
            raise PlanError(
                "a patch step reuses the ID of a step the patch keeps, with changes", step_id=new.id
            )
        added.append(new)
    first = min(runner.states[step_id].step.index for step_id in replace)
    steps: list[TaskStep] = []
    for step in plan.steps:
        if step.index == first:
            steps.extend(added)
        if step.id not in removed:
            steps.append(step.doc)
    compiled = compile_plan(
        PlanDocument(version=PLAN_VERSION, steps=tuple(steps)),
        runner.catalog,
        max_steps=runner.budget.max_steps,
    )
    return compiled, tuple(replace), tuple(s.id for s in added)
