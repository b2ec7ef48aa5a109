"""`DBOSAgent`: a ferrule agent whose runs are DBOS workflows and whose steps are DBOS steps."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Coroutine
from collections.abc import Mapping
from typing import Any
from typing import Generic
from typing import TypeVar

import msgspec

from dbos import DBOS
from dbos import SetWorkflowID
from dbos import WorkflowHandleAsync
from dbos import error as dbos_error  # public (`dbos.__all__`): DBOS's exception classes
from ferrule.agent import Agent
from ferrule.agent import DeferredCall
from ferrule.agent import Paused
from ferrule.agent import ResumeDecisions
from ferrule.agent.durable import PROCESS_TOKEN
from ferrule.agent.durable import Binding
from ferrule.agent.durable import DurableError
from ferrule.agent.durable import PersistedFailureError
from ferrule.agent.durable import PersistedSuspensionError
from ferrule.agent.durable import RuntimeMismatchError
from ferrule.agent.durable import Step
from ferrule.agent.durable import bind
from ferrule.agent.durable import unknown_outcome

__all__ = ["DBOSAgent", "DBOSSteps", "PendingApproval"]

DepsT = TypeVar("DepsT")
OutputT = TypeVar("OutputT")

_PENDING = "ferrule.pending"
_DECISIONS = "ferrule.decisions"


class PendingApproval(msgspec.Struct, frozen=True):
    """A durable run waiting for decisions: which pause of the run, and the calls to decide."""

    pause: int
    """The number of the pause in the run (0 for the first); decisions are sent for this pause."""
    calls: list[DeferredCall]
    """The calls that need a decision (approval, or an external result)."""


_PENDING_DECODER = msgspec.json.Decoder(PendingApproval)


class DBOSSteps:
    """The `StepRunner` of DBOS: each step a DBOS step named by its step ID, inside the run's workflow.

    A `non_idempotent` step records a start marker first; a marker written by another process
    without a recorded result means that process died inside the call, so the call is reported
    as an unknown outcome and never run again.
    """

    async def run_step(self, step: Step, execute: Callable[[], Awaitable[str]]) -> str:
        """Run `execute` as the DBOS step `step.id` (its recorded result on replay)."""
        try:
            if step.side_effect != "non_idempotent":

                async def call() -> str:
                    return await execute()

                return await DBOS.run_step_async({"name": step.id}, call)
            started_by = await DBOS.run_step_async({"name": f"{step.id}.start"}, _process_token)

            async def guarded() -> str:
                return unknown_outcome() if started_by != PROCESS_TOKEN else await execute()

            return await DBOS.run_step_async({"name": step.id}, guarded)
        except dbos_error.DBOSUnexpectedStepError as exc:
            raise RuntimeMismatchError(
                f"the workflow replayed step {step.id!r} where its history holds another step ({exc}); "
                "the agent, its tools or its prompt changed since the run started: finish the run with "
                "the code that started it, or start a new run"
            ) from None


async def _process_token() -> str:
    return PROCESS_TOKEN


_STEPS = DBOSSteps()


class DBOSAgent(Generic[DepsT, OutputT]):
    """An `Agent` whose runs are DBOS workflows: each model request, tool call and MCP call a step.

    Create it once, at import time, before `DBOS.launch()` (DBOS finds the workflow by its name
    `ferrule.agent.<name>` when it recovers a run). `deps` is given here, never persisted: a
    recovered run uses this process's. A run that pauses for approval waits inside its
    workflow, across restarts, until `decide` sends the decisions for that pause.
    """

    def __init__(
        self,
        agent: Agent[DepsT, OutputT],
        *,
        name: str,
        deps: DepsT = None,
        step_namespace: str = "",
        approval_poll_seconds: float = 86_400.0,
        event_handler: Callable[[str, int], Callable[[Any], Awaitable[None]]] | None = None,
    ) -> None:
        if not name or not name.replace("-", "_").replace(".", "_").isidentifier():
            raise DurableError(f"a DBOSAgent needs a name of letters, digits, '_', '-' or '.'; got {name!r}")
        self.agent = agent
        """The wrapped agent."""
        self.name = name
        """The workflow's name is `ferrule.agent.<name>`; keep it stable across deploys."""
        self.deps = deps
        """The dependencies every run of this process gets (never stored in the database)."""
        self.step_namespace = step_namespace
        """Prefix of the run's step IDs (`graph.<node-id>` for a graph agent node)."""
        self.approval_poll_seconds = approval_poll_seconds
        """How long one durable wait for decisions lasts before it waits again."""
        self.event_handler = event_handler
        """`event_handler(workflow_id, segment)` gives the run's event handler (the run then streams);
        `segment` counts the approval resumes before it. Replayed requests deliver their recorded
        events again, in order: wrap the handler in a `CheckpointedStreamSink` (checkpoint ID
        `f"{workflow_id}/{segment}"`) to deliver each event once."""

        async def workflow(prompt: str) -> OutputT:
            return await self._body(prompt)

        self._workflow: Callable[[str], Coroutine[Any, Any, OutputT]] = DBOS.workflow(
            name=f"ferrule.agent.{name}"
        )(workflow)

    async def _body(self, prompt: str) -> OutputT:
        workflow_id = DBOS.workflow_id
        assert workflow_id is not None  # DBOS runs this only as a workflow
        factory = self.event_handler
        with bind(Binding(workflow_id, self.step_namespace), _STEPS):
            handler = None if factory is None else factory(workflow_id, 0)
            outcome = await self.agent.run_until_pause(prompt, deps=self.deps, event_handler=handler)
            pause = 0
            while isinstance(outcome, Paused):
                pending = PendingApproval(pause, outcome.pending)
                await DBOS.set_event_async(_PENDING, msgspec.json.encode(pending).decode())
                decisions: Any = None
                while decisions is None:
                    decisions = await DBOS.recv_async(
                        _topic(pause), timeout_seconds=self.approval_poll_seconds
                    )
                pause += 1
                handler = None if factory is None else factory(workflow_id, pause)
                outcome = await self.agent.resume(outcome, decisions, deps=self.deps, event_handler=handler)
            return outcome.output

    async def start(self, prompt: str, *, workflow_id: str | None = None) -> WorkflowHandleAsync[OutputT]:
        """Start a run as the workflow `workflow_id` (a new ID when `None`), or attach to that run."""
        if workflow_id is None:
            workflow_id = uuid.uuid4().hex
        elif await DBOS.list_workflows_async(workflow_ids=[workflow_id]):
            return await DBOS.retrieve_workflow_async(workflow_id)
        with SetWorkflowID(workflow_id):
            return await DBOS.start_workflow_async(self._workflow, prompt)

    async def run(self, prompt: str, *, workflow_id: str | None = None) -> OutputT:
        """Run to the end (waiting out any approval pause) and return the output."""
        handle = await self.start(prompt, workflow_id=workflow_id)
        return await handle.get_result()

    async def result(self, workflow_id: str) -> OutputT:
        """The output of a finished run, without waiting.

        Raises `PersistedSuspensionError` when the run waits for decisions, `PersistedFailureError`
        when it ended with an error (its type is named, its message is not repeated), and
        `DurableError` when there is no such run or it is still running.
        """
        status = await DBOS.get_workflow_status_async(workflow_id)
        if status is None:
            raise DurableError(f"there is no run {workflow_id!r} in this database")
        if status.status == "SUCCESS":
            handle: WorkflowHandleAsync[OutputT] = await DBOS.retrieve_workflow_async(workflow_id)
            return await handle.get_result()
        if status.status == "ERROR" or status.status == "MAX_RECOVERY_ATTEMPTS_EXCEEDED":
            kind = type(status.error).__name__ if status.error is not None else status.status
            raise PersistedFailureError(
                f"run {workflow_id!r} ended with an error ({kind}); it will not resume"
            )
        pending = await self.pending(workflow_id, wait_seconds=0)
        if pending is not None and status.status == "PENDING":
            raise PersistedSuspensionError(
                f"run {workflow_id!r} waits for the decisions of pause {pending.pause} "
                f"({', '.join(c.tool_name for c in pending.calls)}); send them with decide()"
            )
        raise DurableError(f"run {workflow_id!r} has no output yet (status {status.status})")

    async def pending(self, workflow_id: str, *, wait_seconds: float = 60.0) -> PendingApproval | None:
        """The run's latest pause (`None` if it has not paused within `wait_seconds`)."""
        raw = await DBOS.get_event_async(workflow_id, _PENDING, timeout_seconds=wait_seconds)
        return None if raw is None else _PENDING_DECODER.decode(raw)

    async def decide(self, workflow_id: str, pending: PendingApproval, decisions: Mapping[str, Any]) -> None:
        """Send the decisions of one pause; sending them again (a retry) is ignored.

        `decisions` holds exactly one `Approved`, `Denied` or `ExternalResult` per pending call.
        """
        expected = {call.tool_call_id for call in pending.calls}
        given = set(decisions)
        if given != expected:
            raise DurableError(
                f"pause {pending.pause} of run {workflow_id!r} needs decisions for exactly the calls "
                f"{sorted(expected)}; got {sorted(given)}"
            )
        body = ResumeDecisions(decisions=dict(decisions)).to_json().decode()
        # The idempotency key makes the decisions single-use: a repeated send is dropped by DBOS.
        await DBOS.send_async(
            workflow_id, body, _topic(pending.pause), idempotency_key=f"{workflow_id}:{_topic(pending.pause)}"
        )


def _topic(pause: int) -> str:
    return f"{_DECISIONS}.{pause}"
