"""A separate process of the single-use resume race (`test_side_effects.py`, N-05).

`pause DB EFFECTS` runs an agent until its approval pause (saved to the SQLite store) and prints
the run ID; `resume DB EFFECTS RUN_ID GO` waits until the file GO exists, then resumes the run from
the store and prints `won` or `consumed`. The tool appends one line to EFFECTS per execution.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence

import anyio

from ferrule.agent import Agent
from ferrule.agent import Approved
from ferrule.agent import Paused
from ferrule.agent import SqliteCheckpointStore
from ferrule.agent import Tool
from ferrule.agent.exceptions import CheckpointConsumedError
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import UserPromptPart


def build_agent(db: str, effects: str) -> Agent[None, str]:
    """The agent definition both kinds of process build."""

    def respond(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        if isinstance(last.parts[0], UserPromptPart):
            return ModelResponse(
                parts=[ToolCallPart(tool_name="charge", args={"cents": 500}, tool_call_id="c1")]
            )
        return ModelResponse(parts=[TextPart("charged")])

    def charge(cents: int) -> str:
        """Charge the card."""
        with open(effects, "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()} {cents}\n")
        return "ok"

    tool = Tool(charge, side_effect="non_idempotent", risk="high", confirmation="always")
    return Agent(FunctionModel(respond), tools=[tool], checkpoint_store=SqliteCheckpointStore(db))


async def _pause(db: str, effects: str) -> None:
    outcome = await build_agent(db, effects).run_until_pause("charge me")
    assert isinstance(outcome, Paused)
    print(outcome.state.run_id)


async def _resume(db: str, effects: str, run_id: str) -> None:
    agent = build_agent(db, effects)
    try:
        await agent.resume(run_id=run_id, decisions={"c1": Approved()})
    except CheckpointConsumedError:
        print("consumed")
    else:
        print("won")


def main(argv: list[str]) -> None:
    match argv:
        case ["pause", db, effects]:
            anyio.run(_pause, db, effects)
        case ["resume", db, effects, run_id, go]:
            while not os.path.exists(go):  # both racers start, then both are released at once
                time.sleep(0.001)
            anyio.run(_resume, db, effects, run_id)
        case _:
            raise SystemExit(f"usage: {__doc__}")


if __name__ == "__main__":
    main(sys.argv[1:])
