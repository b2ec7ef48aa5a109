"""A worker process running a ferrule agent as a DBOS workflow; the durable-agent tests kill and restart it.

`python agent.py DATABASE_URL WORKFLOW_ID EFFECT_LOG CHAT_BASE_URL MODE` launches DBOS (which
recovers this executor's pending runs), starts or attaches to the run `WORKFLOW_ID` of "add twice"
against the scripted chat server, and prints `result <output>` when it completes. Tools record each
call in EFFECT_LOG. MODE:

- `run`: just run.
- `crash-before-request-1`: SIGKILL itself when the second model request is about to start (after
  the first tool call was checkpointed).
- `crash-in-charge`: the non-idempotent `charge` tool SIGKILLs itself after recording its effect.
- `pause`: print `paused <n> <call IDs>` once the run waits for approval, then wait to be killed.
- `approve` / `deny`: decide the pending `ship` call and print the result.
- `stream`: stream the run into `events.log` through a `CheckpointedStreamSink` whose committed
  ordinals are kept in `commits.log` (both beside EFFECT_LOG).
- `fail`: wait for the run to fail (its `explode` tool raises) and print `result()`'s error.
- `changed`: `add` is no longer idempotent (so its call is recorded as two steps, not one): print
  the error with which recovery of a run started by the unchanged code stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path
from typing import Any

from dbos import DBOS

from ferrule.agent import Agent
from ferrule.agent import Approved
from ferrule.agent import Denied
from ferrule.agent import Tool
from ferrule.agent.durable import CheckpointedStreamSink
from ferrule.agent.durable import DurableError
from ferrule.agent.durable import PersistedFailureError
from ferrule.agent.durable import PersistedSuspensionError
from ferrule.agent.hooks import HookEvent
from ferrule.core.url_policy import UrlPolicy
from ferrule.durable.dbos import DBOSAgent
from ferrule.providers.openai import OpenAIChatModel
from ferrule.providers.openai import OpenAIProvider
from tests.support.crash import record_effect
from tests.support.streams import FileStore
from tests.support.streams import describe

URL, WORKFLOW_ID, LOG, BASE_URL, MODE = sys.argv[1], sys.argv[2], Path(sys.argv[3]), sys.argv[4], sys.argv[5]
API_KEY = os.environ["FERRULE_TEST_API_KEY"]
ORIGIN = BASE_URL.removesuffix("/v1")

DBOS(config={"name": "ferrule-agent-test", "system_database_url": URL, "log_level": "WARNING"})


def crash() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def add(a: int, b: int) -> int:
    """Add two numbers."""
    record_effect(LOG, f"add {a} {b}")
    return a + b


def charge(cents: int) -> str:
    """Charge the customer."""
    record_effect(LOG, f"charge {cents}")
    if MODE == "crash-in-charge":
        crash()
    return "charged"


def ship(order: str) -> str:
    """Ship an order (needs approval)."""
    record_effect(LOG, f"ship {order}")
    return f"shipped {order}"


def explode() -> str:
    """A tool that fails."""
    raise RuntimeError("boom with sk-not-repeated")


def on_event(event: HookEvent) -> None:
    if MODE == "crash-before-request-1" and event.kind == "model_request_start" and event.run_step == 1:
        crash()


provider = OpenAIProvider(api_key=API_KEY, base_url=BASE_URL, url_policy=UrlPolicy.local(ORIGIN))
agent = Agent(
    OpenAIChatModel("gpt-4o", provider=provider),
    tools=[
        Tool(add, side_effect="non_idempotent" if MODE == "changed" else "idempotent"),
        Tool(charge),
        Tool(ship, requires_approval=True),
        Tool(explode, side_effect="read_only"),
    ],
    hooks=[on_event],
)


def stream_sink(workflow_id: str, segment: int) -> CheckpointedStreamSink:
    async def deliver(event: Any) -> None:
        record_effect(LOG.with_name("events.log"), describe(event))

    return CheckpointedStreamSink(
        deliver, FileStore(LOG.with_name("commits.log")), f"{workflow_id}/{segment}"
    )


durable = DBOSAgent(agent, name="adder", event_handler=stream_sink if MODE == "stream" else None)


async def main() -> None:
    DBOS.launch()
    handle = await durable.start("add twice", workflow_id=WORKFLOW_ID)
    if MODE == "pause":
        pending = await durable.pending(WORKFLOW_ID, wait_seconds=120)
        assert pending is not None
        try:
            await durable.result(WORKFLOW_ID)
        except PersistedSuspensionError as exc:
            print(f"suspended: {exc}", flush=True)
        print(f"paused {pending.pause} {' '.join(c.tool_call_id for c in pending.calls)}", flush=True)
        await asyncio.Event().wait()
    if MODE == "fail":
        with contextlib.suppress(RuntimeError):
            await handle.get_result()
        try:
            await durable.result(WORKFLOW_ID)
        except PersistedFailureError as exc:
            print(f"failed: {exc}", flush=True)
        os._exit(0)
    if MODE == "changed":
        try:
            await handle.get_result()
        except DurableError as exc:
            print(f"stopped {type(exc).__name__}: {exc}", flush=True)
        os._exit(0)
    if MODE in ("approve", "deny"):
        pending = await durable.pending(WORKFLOW_ID, wait_seconds=120)
        assert pending is not None
        decision = Approved() if MODE == "approve" else Denied(message="not today")
        decisions = {call.tool_call_id: decision for call in pending.calls}
        await durable.decide(WORKFLOW_ID, pending, decisions)
        await durable.decide(WORKFLOW_ID, pending, decisions)  # a retried send is dropped
    print(f"result {await handle.get_result()}", flush=True)
    sys.stdout.flush()
    os._exit(0)  # DBOS.destroy() would only add a second to every test


asyncio.run(main())
