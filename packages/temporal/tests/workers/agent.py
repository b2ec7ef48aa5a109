"""A Temporal worker (and client) running a ferrule agent as the `ferrule.agent` workflow.

`python agent.py ADDRESS WORKFLOW_ID EFFECT_LOG CHAT_BASE_URL MODE TASK_QUEUE` runs a worker for
the agent on TASK_QUEUE, starts the run WORKFLOW_ID of "add twice" (or attaches to it) and prints
`result <output JSON>` when it ends. Tools record each call in EFFECT_LOG. MODE:

- `run`: just run (the test may SIGKILL the process at any point).
- `crash-in-charge`: the non-idempotent `charge` tool SIGKILLs itself after recording its effect.
- `pause`: print `paused <n> <call IDs>` once the run waits for approval, then wait to be killed.
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

from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.worker import Worker

from ferrule.agent import Agent, Approved, Denied, Tool
from ferrule.core.url_policy import UrlPolicy
from ferrule.durable.temporal import ACTIVITIES, AgentWorkflow, TemporalAgent, workflow_runner
from ferrule.providers.openai import OpenAIChatModel, OpenAIProvider
from tests.support.crash import record_effect

ADDRESS, WORKFLOW_ID, LOG, BASE_URL, MODE, QUEUE = sys.argv[1:7]
API_KEY = os.environ["FERRULE_TEST_API_KEY"]


def add(a: int, b: int) -> int:
    """Add two numbers."""
    record_effect(Path(LOG), f"add {a} {b}")
    return a + b


def charge(cents: int) -> str:
    """Charge the customer."""
    record_effect(Path(LOG), f"charge {cents}")
    if MODE == "crash-in-charge":
        os.kill(os.getpid(), signal.SIGKILL)
    return "charged"


def ship(order: str) -> str:
    """Ship an order (needs approval)."""
    record_effect(Path(LOG), f"ship {order}")
    return f"shipped {order}"


provider = OpenAIProvider(
    api_key=API_KEY, base_url=BASE_URL, url_policy=UrlPolicy.local(BASE_URL.removesuffix("/v1"))
)
agent = Agent(
    OpenAIChatModel("gpt-4o", provider=provider),
    tools=[Tool(add, side_effect="idempotent"), Tool(charge), Tool(ship, requires_approval=True)],
)
# A short activity timeout: a killed worker's activity is retried (or found unknown) soon after.
durable = TemporalAgent(agent, name="adder", activity_timeout=3.0)


async def main() -> None:
    client = await Client.connect(ADDRESS)
    async with Worker(
        client,
        task_queue=QUEUE,
        workflows=[AgentWorkflow],
        activities=ACTIVITIES,
        workflow_runner=workflow_runner(),
    ):
        try:
            handle = await durable.start(client, "add twice", task_queue=QUEUE, workflow_id=WORKFLOW_ID)
        except WorkflowAlreadyStartedError:
            handle = client.get_workflow_handle(WORKFLOW_ID, result_type=str)
        if MODE in ("pause", "approve", "deny"):
            pending = None
            while pending is None:
                pending = await durable.pending(handle)
                await asyncio.sleep(0.1)
            if MODE == "pause":
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
        history = await handle.fetch_history()
        print(f"history {json.dumps(json.loads(history.to_json()))}", flush=True)


asyncio.run(main())
sys.stdout.flush()
os._exit(0)  # temporalio/sdk-python#300
