"""A durable agent run on DBOS with SQLite: a run that is asked for twice runs once.

    python durable_dbos.py [DATABASE]     # DATABASE: a SQLite file (a temporary one by default)

The run `order-42` is a DBOS workflow; its two model requests and its tool call are DBOS steps in
the SQLite file. Asking for the same run again (here, or in a process started after a crash)
returns the recorded outcome: the tool is not called again. Runs offline (a scripted model).
Pass a `postgresql://...` URL instead of a file to run on PostgreSQL.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from dbos import DBOS

from ferrule.agent import Agent
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.messages import Message
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.durable.dbos import DBOSAgent
from ferrule.durable.dbos import database_url

shipments: list[str] = []


def scripted_model(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
    if any(isinstance(m, ModelResponse) for m in messages):
        return ModelResponse(parts=[TextPart("Order 42 is on its way.")])
    return ModelResponse(parts=[ToolCallPart("ship", {"order": "42"}, tool_call_id="ship-1")])


def ship(order: str) -> str:
    """Ship an order."""
    shipments.append(order)
    return f"order {order} shipped"


agent = Agent(FunctionModel(scripted_model), tools=[ship])
durable = DBOSAgent(agent, name="shop")  # before DBOS.launch(): recovery finds the workflow by name


async def main(database: str) -> None:
    url = database_url(database)
    DBOS(config={"name": "ferrule-example", "system_database_url": url.url, "log_level": "WARNING"})
    DBOS.launch()
    try:
        print(await durable.run("Ship order 42", workflow_id="order-42"))
        print(await durable.run("Ship order 42", workflow_id="order-42"))
        print(f"shipped {len(shipments)} time(s)")
    finally:
        DBOS.destroy()


if __name__ == "__main__":
    if len(sys.argv) > 1:
        asyncio.run(main(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as folder:
            asyncio.run(main(str(Path(folder) / "agent.sqlite")))
