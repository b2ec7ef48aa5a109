"""A Temporal worker (and client) running a ferrule agent as the `ferrule.agent` workflow.

`python agent.py ADDRESS WORKFLOW_ID EFFECT_LOG CHAT_BASE_URL MODE TASK_QUEUE` runs a worker for
the agent on TASK_QUEUE, starts the run WORKFLOW_ID of "add twice" (or attaches to it) and prints
`result <output JSON>` when it ends. Tools record each call in EFFECT_LOG. MODE:

- `run`: just run (the test may SIGKILL the process at any point).
- `crash-before-request-1`: SIGKILL itself when the second model request activity starts, before
  it sends anything (the first tool call's activity has completed).
- `stream`: stream each model request activity into `events.log` through a
  `CheckpointedStreamSink` whose committed ordinals are kept in `commits.log` (beside EFFECT_LOG).
- `mcp`: the agent's tools include those of the real `mcp-server-time` MCP server (stdio), entered
  on the worker; the prompt is "what time is it".
- `crash-in-charge`: the non-idempotent `charge` tool SIGKILLs itself after recording its effect.
- `terminate`: terminate the run, then print `failed: <error>` (what `result()` raises).
- `broken`: the model calls the `broken` tool, which raises; print `workflow failed: <cause>` (what
  `output()` raises) and `failed: <error>` (what `result()` raises).
- `pause`: print `suspended: <error>` (what `result()` raises) and `paused <n> <call IDs>` once
  the run waits for approval, then wait to be killed.
- `approve` / `deny`: decide the pending `ship` call, print `repeat rejected` when a second
  decision for the same pause is refused, then the result.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from temporalio import activity
from temporalio.client import Client
from temporalio.client import WorkflowFailureError
from temporalio.client import WorkflowUpdateFailedError
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.worker import Worker

from ferrule.agent import Agent
from ferrule.agent import Approved
from ferrule.agent import Denied
from ferrule.agent import Tool
from ferrule.agent.durable import CheckpointedStreamSink
from ferrule.agent.durable import PersistedFailureError
from ferrule.agent.durable import PersistedSuspensionError
from ferrule.core.url_policy import UrlPolicy
from ferrule.durable.temporal import ACTIVITIES
from ferrule.durable.temporal import AgentWorkflow
from ferrule.durable.temporal import TemporalAgent
from ferrule.durable.temporal import mcp_request
from ferrule.durable.temporal import model_request
from ferrule.durable.temporal import tool_call
from ferrule.durable.temporal import workflow_runner
from ferrule.mcp import MCPServerStdio
from ferrule.providers.openai import OpenAIChatModel
from ferrule.providers.openai import OpenAIProvider
from tests.support.crash import record_effect
from tests.support.streams import FileStore
from tests.support.streams import describe

ADDRESS, WORKFLOW_ID, LOG, BASE_URL, MODE, QUEUE = sys.argv[1:7]
API_KEY = os.environ["FERRULE_TEST_API_KEY"]


def crash() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def add(a: int, b: int) -> int:
    """Add two numbers."""
    record_effect(Path(LOG), f"add {a} {b}")
    return a + b


def charge(cents: int) -> str:
    """Charge the customer."""
    record_effect(Path(LOG), f"charge {cents}")
    if MODE == "crash-in-charge":
        crash()
    return "charged"


def ship(order: str) -> str:
    """Ship an order (needs approval)."""
    record_effect(Path(LOG), f"ship {order}")
    return f"shipped {order}"


def broken(order: str) -> str:
    """Look an order up (always raises)."""
    record_effect(Path(LOG), f"broken {order}")
    raise ValueError(f"no such order: {order}")


async def zone() -> str:
    """The customer's time zone (workflow-origin: deterministic, runs inline in workflow code)."""
    return "UTC"


provider = OpenAIProvider(
    api_key=API_KEY, base_url=BASE_URL, url_policy=UrlPolicy.local(BASE_URL.removesuffix("/v1"))
)
agent = Agent(
    OpenAIChatModel("gpt-4o", provider=provider),
    tools=[
        Tool(add, side_effect="idempotent"),
        Tool(charge),
        Tool(ship, requires_approval=True),
        Tool(broken, side_effect="read_only"),
        Tool(zone, side_effect="read_only", origin="workflow"),
    ],
)


def stream_sink(workflow_id: str, step_id: str) -> CheckpointedStreamSink:
    async def deliver(event: Any) -> None:
        record_effect(Path(LOG).with_name("events.log"), describe(event))

    return CheckpointedStreamSink(
        deliver, FileStore(Path(LOG).with_name("commits.log")), f"{workflow_id}/{step_id}"
    )


@activity.defn(name="ferrule.model_request")
async def model_request_or_crash(agent_name: str, call_json: str) -> str:
    """The model request activity, killing the worker as the second request starts."""
    if activity.info().activity_id == "step.1.model_request":
        crash()
    return await model_request(agent_name, call_json)


time_server = MCPServerStdio(sys.executable, ["-m", "mcp_server_time", "--local-timezone", "UTC"], id="time")
# A short activity timeout: a killed worker's activity is retried (or found unknown) soon after.
durable = TemporalAgent(
    agent,
    name="adder",
    activity_timeout=3.0,
    toolsets=[time_server] if MODE == "mcp" else [],
    event_handler=stream_sink if MODE == "stream" else None,
)
activities = (
    [model_request_or_crash, tool_call, mcp_request] if MODE == "crash-before-request-1" else ACTIVITIES
)


async def main() -> None:
    client = await Client.connect(ADDRESS)
    prompt = "what time is it" if MODE == "mcp" else "add twice"
    async with (
        durable,
        Worker(
            client,
            task_queue=QUEUE,
            workflows=[AgentWorkflow],
            activities=activities,
            workflow_runner=workflow_runner(),
        ),
    ):
        try:
            handle = await durable.start(client, prompt, task_queue=QUEUE, workflow_id=WORKFLOW_ID)
        except WorkflowAlreadyStartedError:
            handle = client.get_workflow_handle(WORKFLOW_ID, result_type=str)
        if MODE == "terminate":
            await handle.terminate("stopped by the test")
            try:
                await durable.result(handle)
            except PersistedFailureError as exc:
                print(f"failed: {exc}", flush=True)
            return
        if MODE == "broken":
            try:
                await durable.output(handle)
            except WorkflowFailureError as exc:
                print(f"workflow failed: {exc.cause}: {exc.cause.__cause__}", flush=True)
            try:
                await durable.result(handle)
            except PersistedFailureError as exc:
                print(f"failed: {exc}", flush=True)
            return
        if MODE in ("pause", "approve", "deny"):
            pending = None
            while pending is None:
                pending = await durable.pending(handle)
                await asyncio.sleep(0.1)
            if MODE == "pause":
                try:
                    await durable.result(handle)
                except PersistedSuspensionError as exc:
                    print(f"suspended: {exc}", flush=True)
                print(f"paused {pending.pause} {' '.join(c.tool_call_id for c in pending.calls)}", flush=True)
                await asyncio.Event().wait()
            decision = Approved() if MODE == "approve" else Denied(message="not today")
            decisions = {call.tool_call_id: decision for call in pending.calls}
            await durable.decide(handle, pending, decisions)
            try:
                await durable.decide(handle, pending, decisions)
            except WorkflowUpdateFailedError:
                print("repeat rejected", flush=True)
        print(f"result {await durable.output(handle)}", flush=True)
        print(f"finished {await durable.result(handle)}", flush=True)
        history = await handle.fetch_history()
        print(f"history {json.dumps(json.loads(history.to_json()))}", flush=True)


asyncio.run(main())
sys.stdout.flush()
os._exit(0)  # temporalio/sdk-python#300
