"""A graph whose agent node pauses for approval, driven across two processes by test_agent_nodes.py.

    python approval_graph.py start SNAPSHOT LOG     # runs until the pause, writes the snapshot
    python approval_graph.py resume SNAPSHOT LOG    # approves, finishes, prints the output

LOG receives one line per model request and per tool/step execution, so the test can see what
ran in which process.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import anyio
import msgspec

from ferrule.agent import Agent
from ferrule.agent import AgentRunResult
from ferrule.agent import Approved
from ferrule.agent import Tool
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.messages import Message
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.graph import GraphBuilder
from ferrule.graph import GraphContext
from ferrule.graph import Interrupted
from ferrule.graph import JsonCodec
from ferrule.graph.agent import Conversation
from ferrule.graph.agent import agent_node


class State(msgspec.Struct):
    conversation: Conversation = msgspec.field(default_factory=Conversation)
    prepared: int = 0


def log(line: str) -> None:
    with open(sys.argv[3], "a") as f:
        f.write(line + "\n")


def model(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
    answered = any(isinstance(p, ToolReturnPart) for m in messages for p in m.parts)
    log(f"model request {'after tool' if answered else 'first'}")
    if answered:
        return ModelResponse(parts=[TextPart("paid 250 to alice")])
    return ModelResponse(parts=[ToolCallPart("pay", {"to": "alice", "amount": 250}, tool_call_id="call-1")])


def pay(to: str, amount: int) -> str:
    """Pay someone."""
    log(f"pay {to} {amount}")
    return "ok"


def build():
    agent = Agent(FunctionModel(model), tools=[Tool(pay, requires_approval=True)])
    g = GraphBuilder[State, None, str, str, str](definition_id="approval-demo")
    g.start(lambda ctx, text: text)

    def prepare_request(ctx: GraphContext[State, None], text: str) -> str:
        log("step prepare_request")
        ctx.state.prepared += 1
        return text.strip()

    def apply(ctx: GraphContext[State, None], result: AgentRunResult[str]) -> str:
        ctx.state.conversation.append_run(result)
        return result.output

    g.step("prepare_request", prepare_request)
    g.step("payer", agent_node(agent, prepare=lambda ctx, text: text, apply=apply))
    g.end(lambda ctx, text: f"{text} ({ctx.state.conversation.usage.requests} requests)")
    g.entry("prepare_request")
    g.connect("prepare_request", "payer")
    g.finish("payer")
    return g.build()


CODEC = JsonCodec(State, str)


async def main() -> None:
    graph = build()
    path = Path(sys.argv[2])
    if sys.argv[1] == "start":
        run = await graph.iter("  Pay alice 250.  ", state=State())
        while True:
            step = await run.next()
            if isinstance(step, Interrupted):
                print("paused at", step.interrupt.node, [p.tool_name for p in step.interrupt.pending])
                path.write_bytes(run.snapshot(CODEC))  # noqa: ASYNC240 - a test script
                return
    run = graph.resume_snapshot(path.read_bytes(), CODEC)  # noqa: ASYNC240 - a test script
    assert run.interrupt is not None
    decisions = {p.tool_call_id: Approved() for p in run.interrupt.pending}
    await run.resume(decisions)
    print(run.output, "prepared", run.state.prepared)


if __name__ == "__main__":
    anyio.run(main)
