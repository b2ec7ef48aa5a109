"""Approval across processes: pause before a risky tool call, store the state, resume elsewhere.

    python approval.py start STATE_FILE     # runs until the transfer needs approval, saves state
    python approval.py resume STATE_FILE    # a second process approves and finishes the run
    python approval.py deny STATE_FILE      # ... or denies it

The state file is signed (HMAC-SHA256); a modified file is refused. Without arguments both steps
run, each in its own process. Runs offline.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ferrule.agent import Agent
from ferrule.agent import Approved
from ferrule.agent import Denied
from ferrule.agent import Paused
from ferrule.agent import RunContext
from ferrule.agent import Tool
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart

STATE_KEY = os.environ.get("FERRULE_STATE_KEY", "example-signing-key").encode()


def scripted_model(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    results = {p.tool_name: p for p in last.parts if isinstance(p, ToolReturnPart)}
    if not results:
        return ModelResponse(
            parts=[
                ToolCallPart(tool_name="balance", args={}, tool_call_id="read"),
                ToolCallPart(tool_name="transfer", args={"to": "alice", "amount": 250}, tool_call_id="pay"),
            ]
        )
    transfer = results["transfer"]
    if transfer.outcome == "denied":
        return ModelResponse(parts=[TextPart(f"Transfer not made: {transfer.content}")])
    return ModelResponse(parts=[TextPart(f"{transfer.content}; balance was {results['balance'].content}.")])


def needs_approval(ctx: RunContext[None], args: object) -> bool:
    return getattr(args, "amount", 0) > 100  # small transfers go through without asking


def balance() -> int:
    """The account balance."""
    return 1_000


def transfer(to: str, amount: int) -> str:
    """Send money to someone."""
    print(f"[process {os.getpid()}] transferring {amount} to {to}")
    return f"Sent {amount} to {to}"


def build_agent() -> Agent:
    """Both processes build the agent from the same definition."""
    return Agent(
        FunctionModel(scripted_model),
        tools=[
            Tool(balance, side_effect="read_only"),
            Tool(transfer, requires_approval=needs_approval, side_effect="non_idempotent"),
        ],
    )


async def start() -> bytes:
    """Run until the transfer needs approval; return the signed state to store."""
    outcome = await build_agent().run_until_pause("Pay alice 250.")
    assert isinstance(outcome, Paused), "expected the run to pause for approval"
    for call in outcome.pending:
        print(f"[process {os.getpid()}] waiting for approval: {call.tool_name} {call.args}")
    return outcome.to_json(integrity_key=STATE_KEY)


async def finish(state: bytes, approve: bool) -> None:
    """Resume the stored run with the operator's decision."""
    decision = Approved() if approve else Denied(message="The account owner declined.")
    outcome = await build_agent().resume(state, {"pay": decision}, integrity_key=STATE_KEY)
    assert not isinstance(outcome, Paused)
    print(f"[process {os.getpid()}] {outcome.output}")


def main(argv: list[str]) -> None:
    import anyio

    if len(argv) == 2 and argv[0] in ("start", "resume", "deny"):
        path = Path(argv[1])
        if argv[0] == "start":
            path.write_bytes(anyio.run(start))
        else:
            anyio.run(finish, path.read_bytes(), argv[0] == "resume")
        return
    with tempfile.TemporaryDirectory() as folder:
        state = Path(folder) / "paused.json"
        for step in ("start", "resume"):
            subprocess.run([sys.executable, __file__, step, str(state)], check=True)


if __name__ == "__main__":
    main(sys.argv[1:])
