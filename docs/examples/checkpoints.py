"""Side effects that cannot happen twice: a guarded, confirmed refund, checkpointed in SQLite.

    python checkpoints.py start DB        # runs until the refund needs confirmation; prints the run ID
    python checkpoints.py resume DB RUN   # another process approves it by run ID and finishes the run
    python checkpoints.py resume DB RUN   # ... a second resume of the same run executes nothing

The pause lives in a SQLite file (`SqliteCheckpointStore`); resuming claims it once, atomically, so
an approval delivered twice (or to two workers) refunds once. The guard refuses refunds over 500;
every call that is not read-only gets an action receipt. Without arguments all three steps run,
each in its own process. Runs offline.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ferrule.agent import Agent
from ferrule.agent import Approved
from ferrule.agent import CheckpointConsumedError
from ferrule.agent import Denied
from ferrule.agent import Paused
from ferrule.agent import RunContext
from ferrule.agent import SqliteCheckpointStore
from ferrule.agent import Tool
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart


def scripted_model(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    results = [p for p in last.parts if isinstance(p, ToolReturnPart)]
    if not results:
        return ModelResponse(
            parts=[
                ToolCallPart(tool_name="refund", args={"order": "A-17", "cents": 1200}, tool_call_id="big"),
                ToolCallPart(tool_name="refund", args={"order": "A-18", "cents": 300}, tool_call_id="small"),
            ]
        )
    return ModelResponse(parts=[TextPart("; ".join(f"{p.tool_call_id}: {p.content}" for p in results))])


def refund(order: str, cents: int) -> str:
    """Refund an order."""
    print(f"[process {os.getpid()}] refunding {cents} cents on {order}")
    return f"refunded {cents}"


def guard(ctx: RunContext[None], tool: Tool[Any], args: Any) -> Denied | None:
    """Authorization: refunds over 500 cents need a manager, whoever approves them."""
    return Denied(message="refunds over 500 cents need a manager") if args.cents > 500 else None


def build_agent(db: str) -> Agent:
    """Every process builds the agent from the same definition and the same store file."""
    return Agent(
        FunctionModel(scripted_model),
        tools=[Tool(refund, side_effect="non_idempotent", risk="high", confirmation="always")],
        guard=guard,
        checkpoint_store=SqliteCheckpointStore(db),
    )


async def start(db: str) -> None:
    outcome = await build_agent(db).run_until_pause("Refund orders A-17 and A-18.")
    assert isinstance(outcome, Paused), "expected a pause for confirmation"
    for receipt in outcome.actions:
        print(f"receipt: {receipt.tool_call_id} {receipt.status}")
    print(f"run: {outcome.state.run_id}")


async def resume(db: str, run_id: str) -> None:
    try:
        result = await build_agent(db).resume(run_id=run_id, decisions={"small": Approved()})
    except CheckpointConsumedError:
        print("already resumed: nothing executed")
        return
    assert not isinstance(result, Paused)
    print(f"output: {result.output}")
    for receipt in result.actions:
        print(f"receipt: {receipt.tool_call_id} {receipt.status} ({receipt.detail or 'ok'})")


def main(argv: list[str]) -> None:
    import anyio

    match argv:
        case ["start", db]:
            anyio.run(start, db)
        case ["resume", db, run_id]:
            anyio.run(resume, db, run_id)
        case _:
            with tempfile.TemporaryDirectory() as folder:
                db = str(Path(folder) / "checkpoints.sqlite")
                started = subprocess.run(
                    [sys.executable, __file__, "start", db], check=True, capture_output=True, text=True
                )
                print(started.stdout, end="")
                run_id = started.stdout.rsplit("run: ", 1)[1].strip()
                for _ in range(2):
                    subprocess.run([sys.executable, __file__, "resume", db, run_id], check=True)


if __name__ == "__main__":
    main(sys.argv[1:])
