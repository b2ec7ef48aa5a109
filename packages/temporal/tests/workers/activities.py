"""A worker process running a three-activity Temporal workflow; the engine tests kill and restart it.

`python activities.py ADDRESS WORKFLOW_ID EFFECT_LOG CRASH_AT` runs a worker, starts the workflow
unless it exists, and prints `result <n>` when it completes. Each activity records its effect
before it returns; `CRASH_AT=k` SIGKILLs the process inside activity k after recording (between
the side effect and the completion Temporal records), `CRASH_AT=before-k` at activity k's start.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from datetime import timedelta
from pathlib import Path

from temporalio import activity
from temporalio import workflow
from temporalio.client import Client
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.worker import Worker

# Passed through: the sandbox would re-import the module, and its import-time Path.resolve() is
# (rightly) off limits to workflow code.
with workflow.unsafe.imports_passed_through():
    from tests.support.crash import record_effect

ARGS: dict[str, str] = {}
"""The command line, set by `main` (the sandbox's copy of this module never reads it)."""


@activity.defn
async def step(n: int) -> int:
    if ARGS["crash_at"] == f"before-{n}":
        os.kill(os.getpid(), signal.SIGKILL)
    record_effect(Path(ARGS["log"]), f"step {n}")
    if ARGS["crash_at"] == str(n):
        os.kill(os.getpid(), signal.SIGKILL)
    return n * 10


@workflow.defn
class ThreeSteps:
    @workflow.run
    async def run(self, base: int) -> int:
        total = base
        for n in range(3):
            # A killed worker heartbeats no more: the short heartbeat timeout hands the activity to
            # the next worker within seconds instead of the start-to-close timeout.
            total += await workflow.execute_activity(
                step, n, start_to_close_timeout=timedelta(minutes=2), heartbeat_timeout=timedelta(seconds=2)
            )
        return total


async def main() -> None:
    ARGS.update(zip(("address", "workflow_id", "log", "crash_at"), sys.argv[1:5], strict=True))
    client = await Client.connect(ARGS["address"])
    async with Worker(
        client,
        task_queue="engine-test",
        workflows=[ThreeSteps],
        activities=[step],
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=1),
    ):
        handle = await client.start_workflow(
            ThreeSteps.run,
            1,
            id=ARGS["workflow_id"],
            task_queue="engine-test",
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        )
        print(f"result {await handle.result()}", flush=True)


if __name__ == "__main__":  # the workflow sandbox imports this module again, without running it
    asyncio.run(main())
    sys.stdout.flush()
    os._exit(0)  # temporalio/sdk-python#300: skip the interpreter teardown that can abort
