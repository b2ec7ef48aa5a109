"""A worker process running a three-step DBOS workflow; the engine tests kill and restart it.

`python steps.py DATABASE_URL WORKFLOW_ID EFFECT_LOG CRASH_AT` launches DBOS on the database (which
recovers any pending workflow of this executor), starts the workflow if it does not exist yet, and
prints `result <n>` when it completes. Each step records its effect before it returns; with
`CRASH_AT=k` the process SIGKILLs itself inside step k after recording (a crash between the side
effect and the checkpoint), with `CRASH_AT=after-k` right after step k's checkpoint.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from dbos import DBOS
from dbos import SetWorkflowID
from dbos import WorkflowHandleAsync

from tests.support.crash import record_effect

URL, WORKFLOW_ID, LOG, CRASH_AT = sys.argv[1], sys.argv[2], Path(sys.argv[3]), sys.argv[4]
DBOS(config={"name": "ferrule-engine-test", "system_database_url": URL, "log_level": "WARNING"})


def crash() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


@DBOS.step()
async def step(n: int) -> int:
    record_effect(LOG, f"step {n}")
    if str(n) == CRASH_AT:
        crash()
    return n * 10


@DBOS.workflow()
async def three_steps(base: int) -> int:
    total = base
    for n in range(3):
        total += await step(n)
        print(f"step-done {n}", flush=True)
        if f"after-{n}" == CRASH_AT:
            crash()
    return total


async def main() -> None:
    DBOS.launch()
    existing = await DBOS.list_workflows_async(workflow_ids=[WORKFLOW_ID])
    handle: WorkflowHandleAsync[int]
    if existing:
        handle = await DBOS.retrieve_workflow_async(WORKFLOW_ID)
    else:
        with SetWorkflowID(WORKFLOW_ID):
            handle = await DBOS.start_workflow_async(three_steps, 1)
    print(f"result {await handle.get_result()}", flush=True)
    DBOS.destroy()


asyncio.run(main())
