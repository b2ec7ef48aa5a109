"""`TemporalAgent`: a ferrule agent run as the `ferrule.agent` Temporal workflow.

The agent loop runs as workflow code (deterministic given its activities' results); each model
request, application tool call and MCP call is an activity (`ferrule.model_request`,
`ferrule.tool_call`, `ferrule.mcp_request`) that runs on a worker where the agent is registered
under its name. Toolsets that do I/O (MCP servers) belong to the `TemporalAgent`: the worker enters
them and lists their tools (`async with durable:`), the workflow offers those tools, and the
activities call them on the worker. Workflow-origin tools run inline in the workflow. A pause for
approval is a wait in the workflow: the `ferrule.pending` query shows it, the `ferrule.decide`
update ends it.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Generator
from collections.abc import Mapping
from collections.abc import Sequence
from contextlib import AsyncExitStack
from contextlib import aclosing
from contextlib import contextmanager
from datetime import timedelta
from types import TracebackType
from typing import Any
from typing import Self

import msgspec
from temporalio import activity
from temporalio import workflow
from temporalio.client import Client
from temporalio.client import WorkflowExecutionStatus
from temporalio.client import WorkflowHandle
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError
from temporalio.exceptions import ApplicationError
from temporalio.exceptions import TimeoutError as TemporalTimeoutError

from ferrule.agent import Agent
from ferrule.agent import DeferredCall
from ferrule.agent import Paused
from ferrule.agent import ResumeDecisions
from ferrule.agent import RunContext
from ferrule.agent import Tool
from ferrule.agent.durable import Binding
from ferrule.agent.durable import DurableError
from ferrule.agent.durable import MissingWorkerRegistrationError
from ferrule.agent.durable import PersistedFailureError
from ferrule.agent.durable import PersistedSuspensionError
from ferrule.agent.durable import Step
from ferrule.agent.durable import bind
from ferrule.agent.durable import encode_response
from ferrule.agent.durable import tool_step
from ferrule.agent.durable import unknown_outcome
from ferrule.agent.model_strings import infer_model
from ferrule.agent.toolsets import AbstractToolset
from ferrule.agent.toolsets import FunctionToolset
from ferrule.agent.toolsets import tools_of
from ferrule.core.messages import ModelResponse
from ferrule.core.model import Model
from ferrule.core.model import ModelCall
from ferrule.core.model import ResponseCompleted
from ferrule.core.retry import request_with_retry
from ferrule.core.retry import stream_with_retry
from ferrule.core.usage import RunUsage

__all__ = [
    "ACTIVITIES",
    "AgentWorkflow",
    "PendingApproval",
    "TemporalAgent",
    "mcp_request",
    "model_request",
    "registered",
    "tool_call",
]

_REGISTRY: dict[str, TemporalAgent] = {}


class PendingApproval(msgspec.Struct, frozen=True):
    """A run waiting for decisions: which pause of the run, and the calls to decide."""

    pause: int
    """The number of the pause in the run (0 for the first); decisions are sent for this pause."""
    calls: list[DeferredCall]
    """The calls that need a decision (approval, or an external result)."""


_HandlerFactory = Callable[[str, str], Callable[[Any], Awaitable[None]]]
"""`factory(workflow_id, step_id)`: the handler of one streamed model request activity."""

_PENDING = msgspec.json.Decoder(PendingApproval)
_CALL = msgspec.json.Decoder(ModelCall)


class TemporalAgent:
    """An `Agent` registered for Temporal workers and started as the `ferrule.agent` workflow.

    Build it in a module the worker imports (and the workflow code takes passed through, see
    `workflow_runner`): the name must be the same on the worker and on the client. `deps` is the
    worker's and never enters the workflow history.

    `toolsets` (MCP servers, or any toolset that does I/O) are entered on the worker by
    `async with durable:`, which lists their tools once; the workflow offers those tools and each
    call is a `ferrule.mcp_request` (or `ferrule.tool_call`) activity that finds the tool by name.
    Give such toolsets here, not to the `Agent`: the agent's own toolsets are entered in workflow
    code, where no I/O may happen.

    With `event_handler`, each model request activity streams: `event_handler(workflow_id, step_id)`
    gives the handler of that request's events, on the worker. A retried activity (its worker
    died mid-stream) delivers the request's events again from the start: wrap the handler in a
    `CheckpointedStreamSink` with checkpoint ID `f"{workflow_id}/{step_id}"` to deliver each
    committed event once. Workflow code sees each completed response, not its deltas.
    """

    def __init__(
        self,
        agent: Agent[Any, Any],
        *,
        name: str,
        deps: Any = None,
        step_namespace: str = "",
        activity_timeout: float = 300.0,
        toolsets: Sequence[AbstractToolset[Any]] = (),
        event_handler: _HandlerFactory | None = None,
    ) -> None:
        if not name:
            raise DurableError("a TemporalAgent needs a name (the workflow finds its agent by it)")
        if name in _REGISTRY:
            raise DurableError(f"a TemporalAgent named {name!r} is already registered in this process")
        model = agent.model
        if model is None:
            raise DurableError(f"the agent of TemporalAgent {name!r} has no model; give Agent(model=...)")
        self.agent = agent
        """The wrapped agent."""
        self.name = name
        """The name the workflow and activities find the agent by; keep it stable across deploys."""
        self.deps = deps
        """The dependencies of the agent's runs on this worker (never stored in the history)."""
        self.step_namespace = step_namespace
        """Prefix of the run's step IDs (`graph.<node-id>` for a graph agent node)."""
        self.activity_timeout = activity_timeout
        """Seconds one activity may run (`start_to_close_timeout`); a crashed worker's activity is
        retried, or for a non-idempotent tool reported unknown, after it."""
        self.model: Model = infer_model(model)
        """The model the `ferrule.model_request` activity calls."""
        self.toolsets = list(toolsets)
        """The toolsets the worker enters (`async with durable:`) and whose tools are activities."""
        self.event_handler = event_handler
        """Streams each model request activity to `event_handler(workflow_id, step_id)` when set."""
        self._listed: dict[str, Tool[Any]] | None = None if self.toolsets else {}
        self._offered: list[AbstractToolset[Any]] = []
        self._stack: AsyncExitStack | None = None
        _REGISTRY[name] = self

    # --- worker side ---------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        """Enter the toolsets on this worker and list their tools (the workflow offers these)."""
        if self._stack is not None:
            raise DurableError(f"TemporalAgent {self.name!r} is already entered on this worker")
        async with AsyncExitStack() as stack:
            listed: dict[str, Tool[Any]] = {}
            ctx = self.context("", None, None)
            for toolset in self.toolsets:
                await stack.enter_async_context(toolset)
                for tool in await tools_of(toolset, ctx):
                    if tool.name in listed or tool.name in self.agent.tools:
                        raise DurableError(
                            f"TemporalAgent {self.name!r} has two tools named {tool.name!r}; rename or prefix one"
                        )
                    listed[tool.name] = tool
            self._stack = stack.pop_all()
        self._listed = listed
        self._offered = [FunctionToolset(list(listed.values()))] if listed else []
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Leave the toolsets (the worker stops)."""
        stack, self._stack = self._stack, None
        self._listed = None if self.toolsets else {}
        self._offered = []
        if stack is not None:
            await stack.__aexit__(exc_type, exc, tb)

    def context(self, run_id: str, tool_name: str | None, tool_call_id: str | None) -> RunContext[Any]:
        """The `RunContext` a tool activity runs with on this worker (`deps` are the worker's)."""
        return RunContext(
            deps=self.deps,
            model=self.model,
            usage=RunUsage(),
            messages=[],
            run_id=run_id,
            tool_name=tool_name,
            tool_call_id=tool_call_id,
        )

    def tool(self, name: str) -> Tool[Any]:
        """The tool `name` of the agent or of its listed toolsets, as an activity calls it."""
        tool = self.agent.tools.get(name)
        if tool is None:
            tool = self.listed.get(name)
        if tool is None:
            raise MissingWorkerRegistrationError(
                f"agent {self.name!r} on this worker has no tool {name!r}; the worker must run the same "
                "agent definition and toolsets as the workflow"
            )
        return tool

    @property
    def listed(self) -> dict[str, Tool[Any]]:
        """The toolsets' tools by name, as listed when the worker entered them."""
        if self._listed is None:
            raise self._not_entered()
        return self._listed

    def offered(self) -> list[AbstractToolset[Any]]:
        """The run-level toolsets the workflow passes to the agent (the listed tools, fixed)."""
        if self._listed is None:
            raise self._not_entered()
        return self._offered

    def _not_entered(self) -> MissingWorkerRegistrationError:
        return MissingWorkerRegistrationError(
            f"TemporalAgent {self.name!r} has toolsets that are not entered on this worker; run the "
            "worker inside `async with durable:` so it can list and call their tools"
        )

    # --- client side ---------------------------------------------------------------------------

    async def start(
        self, client: Client, prompt: str, *, task_queue: str, workflow_id: str | None = None
    ) -> WorkflowHandle[Any, str]:
        """Start a run of `prompt` as the `ferrule.agent` workflow on `task_queue`."""
        return await client.start_workflow(
            "ferrule.agent",
            args=[self.name, prompt],
            id=workflow_id or uuid.uuid4().hex,
            task_queue=task_queue,
            result_type=str,
        )

    @staticmethod
    async def output(handle: WorkflowHandle[Any, Any]) -> Any:
        """Wait for the run to end and return its output (as JSON data)."""
        return msgspec.json.decode(await handle.result())

    @staticmethod
    async def result(handle: WorkflowHandle[Any, Any]) -> Any:
        """The output of a finished run (as JSON data), without waiting.

        Raises `PersistedSuspensionError` when the run waits for decisions, `PersistedFailureError`
        when it ended without an output (failed, terminated, cancelled, timed out: the status is
        named, no error message is repeated), and `DurableError` while it is still running.
        """
        status = (await handle.describe()).status
        if status == WorkflowExecutionStatus.COMPLETED:
            return await TemporalAgent.output(handle)
        if status is not None and status != WorkflowExecutionStatus.RUNNING:
            raise PersistedFailureError(
                f"run {handle.id!r} ended without an output ({status.name}); it will not resume"
            )
        pending = await TemporalAgent.pending(handle)
        if pending is not None:
            raise PersistedSuspensionError(
                f"run {handle.id!r} waits for the decisions of pause {pending.pause} "
                f"({', '.join(c.tool_name for c in pending.calls)}); send them with decide()"
            )
        raise DurableError(f"run {handle.id!r} has no output yet (it is running)")

    @staticmethod
    async def pending(handle: WorkflowHandle[Any, Any]) -> PendingApproval | None:
        """The run's current pause, or `None` when it is not waiting for decisions."""
        raw = await handle.query("ferrule.pending", result_type=str)
        return None if not raw else _PENDING.decode(raw)

    @staticmethod
    async def decide(
        handle: WorkflowHandle[Any, Any], pending: PendingApproval, decisions: Mapping[str, Any]
    ) -> None:
        """Send the decisions of one pause; the workflow accepts them once (a repeat is rejected)."""
        expected = {call.tool_call_id for call in pending.calls}
        if set(decisions) != expected:
            raise DurableError(
                f"pause {pending.pause} needs decisions for exactly the calls {sorted(expected)}; "
                f"got {sorted(decisions)}"
            )
        body = ResumeDecisions(decisions=dict(decisions)).to_json().decode()
        await handle.execute_update("ferrule.decide", args=[pending.pause, body])  # pyright: ignore[reportUnknownMemberType] - the by-name overload


def registered(name: str) -> TemporalAgent:
    """The `TemporalAgent` registered under `name` in this worker process."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise MissingWorkerRegistrationError(
            f"no TemporalAgent named {name!r} is registered on this worker; import the module that "
            f"builds it before starting the worker (registered: {sorted(_REGISTRY) or 'none'})"
        ) from None


# --- workflow ----------------------------------------------------------------------------------


class _TemporalSteps:
    """The `StepRunner` of Temporal workflow code: each step one activity, its ID the step ID."""

    def __init__(self, durable: TemporalAgent) -> None:
        self.durable = durable

    async def run_step(self, step: Step, execute: Callable[[], Awaitable[str]]) -> str:
        del execute  # the activity runs the step on a worker, from the step's inputs
        timeout = timedelta(seconds=self.durable.activity_timeout)
        if step.kind == "model_request":
            assert step.call is not None
            # The history is a view on the run's list; the activity gets a copy of its messages.
            call = msgspec.structs.replace(step.call, messages=list(step.call.messages))
            return await workflow.execute_activity(
                "ferrule.model_request",
                args=[self.durable.name, msgspec.json.encode(call).decode()],
                activity_id=step.id,
                start_to_close_timeout=timeout,
                result_type=str,
            )
        once = step.side_effect == "non_idempotent"
        try:
            return await workflow.execute_activity(
                f"ferrule.{step.kind}",
                args=[
                    self.durable.name,
                    step.tool_name,
                    step.tool_call_id,
                    msgspec.json.encode(step.args).decode(),
                ],
                activity_id=step.id,
                start_to_close_timeout=timeout,
                retry_policy=RetryPolicy(maximum_attempts=1) if once else None,
                result_type=str,
            )
        except ActivityError as exc:
            # A non-idempotent call that timed out (its worker died, or it hung) may have acted.
            if once and isinstance(exc.cause, TemporalTimeoutError):
                return unknown_outcome()
            raise


@workflow.defn(name="ferrule.agent", sandboxed=True)
class AgentWorkflow:
    """The workflow of a `TemporalAgent` run: `run(agent name, prompt)` returns the output as JSON."""

    def __init__(self) -> None:
        self._pending: PendingApproval | None = None
        self._decisions: dict[int, str] = {}

    @workflow.run
    async def run(self, agent_name: str, prompt: str) -> str:
        """Run the agent to its output, waiting out approval pauses."""
        durable = registered(agent_name)
        binding = Binding(workflow.info().workflow_id, durable.step_namespace)
        toolsets = durable.offered()
        with bind(binding, _TemporalSteps(durable)):
            outcome = await durable.agent.run_until_pause(prompt, deps=durable.deps, toolsets=toolsets)
            pause = 0
            while isinstance(outcome, Paused):
                self._pending = PendingApproval(pause, outcome.pending)
                await workflow.wait_condition(lambda n=pause: n in self._decisions)
                self._pending = None
                outcome = await durable.agent.resume(
                    outcome, self._decisions[pause], deps=durable.deps, toolsets=toolsets
                )
                pause += 1
        return msgspec.json.encode(outcome.output).decode()

    @workflow.query(name="ferrule.pending")
    def pending(self) -> str:
        """The current pause as JSON (empty when the run is not waiting)."""
        return "" if self._pending is None else msgspec.json.encode(self._pending).decode()

    @workflow.update(name="ferrule.decide")
    def decide(self, pause: int, decisions: str) -> None:
        """Accept the decisions of the current pause."""
        self._decisions[pause] = decisions

    @decide.validator
    def _check_decide(self, pause: int, decisions: str) -> None:
        # Single use: only the pause the run waits at, and only once.
        del decisions
        if self._pending is None or self._pending.pause != pause or pause in self._decisions:
            raise ValueError(f"the run is not waiting for the decisions of pause {pause}")


# --- activities --------------------------------------------------------------------------------


@contextmanager
def _raised_errors_are_final() -> Generator[None]:
    """An error raised by a step's own code fails the run, as it does outside Temporal.

    Temporal's default policy retries a failed activity without end; ferrule has already applied its
    retry policy to model requests, and a tool that raises is not called again by the agent either.
    Temporal still retries an activity whose worker was lost (its timeout is not a raised error).
    """
    try:
        yield
    except ApplicationError:
        raise
    except Exception as exc:
        name = type(exc).__name__
        raise ApplicationError(f"{name}: {exc}", type=name, non_retryable=True) from exc


@activity.defn(name="ferrule.model_request")
async def model_request(agent_name: str, call_json: str) -> str:
    """One model request of a registered agent's run; returns the response's JSON.

    Streamed to the agent's `event_handler` when it has one, buffered otherwise.
    """
    # A worker without the agent raises before the guard: another worker may have it.
    durable = registered(agent_name)
    # The workflow's deadline is on its own clock; the activity's timeout bounds the request here.
    call = msgspec.structs.replace(_CALL.decode(call_json), deadline=None)
    with _raised_errors_are_final():
        return await _model_request(durable, call)


async def _model_request(durable: TemporalAgent, call: ModelCall) -> str:
    factory = durable.event_handler
    if factory is None:
        return encode_response(await request_with_retry(durable.model, call))
    info = activity.info()
    handler = factory(info.workflow_id or "", info.activity_id)
    response: ModelResponse | None = None
    async with aclosing(stream_with_retry(durable.model, call)) as stream:
        async for event in stream:
            await handler(event)
            if isinstance(event, ResponseCompleted):
                response = event.response
    assert response is not None  # the model contract ends every stream with its response
    return encode_response(response)


async def _call(agent_name: str, tool_name: str, tool_call_id: str, args_json: str) -> str:
    durable = registered(agent_name)
    tool = durable.tool(tool_name)
    args = tool.validate_args(msgspec.json.decode(args_json))
    ctx = durable.context(activity.info().workflow_id or "", tool_name, tool_call_id)
    with _raised_errors_are_final():
        return await tool_step(tool_name, lambda: tool.call(ctx, args))


@activity.defn(name="ferrule.tool_call")
async def tool_call(agent_name: str, tool_name: str, tool_call_id: str, args_json: str) -> str:
    """One application tool call of a registered agent's run; returns the JSON record of its outcome."""
    return await _call(agent_name, tool_name, tool_call_id, args_json)


@activity.defn(name="ferrule.mcp_request")
async def mcp_request(agent_name: str, tool_name: str, tool_call_id: str, args_json: str) -> str:
    """One call of an MCP tool (from the toolsets the worker entered); the JSON record of its outcome."""
    return await _call(agent_name, tool_name, tool_call_id, args_json)


ACTIVITIES = [model_request, tool_call, mcp_request]
"""The activities a worker registers: `Worker(..., activities=ACTIVITIES)`."""
