"""A worker whose workflow runs ferrule's agent loop as workflow code in Temporal's sandbox.

`python loop.py ADDRESS WORKFLOW_ID` runs the workflow to its end, prints `result <output>` and
`messages <n>`, then replays the recorded history with Temporal's `Replayer` and prints `replayed`
(a non-deterministic loop would fail the replay).
"""

from __future__ import annotations

import asyncio
import os
import sys

from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import Replayer
from temporalio.worker import Worker

from ferrule.durable.temporal import workflow_runner

with workflow.unsafe.imports_passed_through():
    from loop_agent import agent  # the script's folder is on sys.path


@workflow.defn
class AgentLoop:
    @workflow.run
    async def run(self, prompt: str) -> list[str]:
        result = await agent.run(prompt)
        return [str(result.output), str(len(result.all_messages()))]


async def main(address: str, workflow_id: str) -> None:
    client = await Client.connect(address)
    async with Worker(client, task_queue="loop", workflows=[AgentLoop], workflow_runner=workflow_runner()):
        output, count = await client.execute_workflow(AgentLoop.run, "add", id=workflow_id, task_queue="loop")
    print(f"result {output}", flush=True)
    print(f"messages {count}", flush=True)
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    await Replayer(workflows=[AgentLoop], workflow_runner=workflow_runner()).replay_workflow(history)
    print("replayed", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
    sys.stdout.flush()
    os._exit(0)  # temporalio/sdk-python#300
