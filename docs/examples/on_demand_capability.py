"""An on-demand capability: the first request carries only a catalog line and `load_capability`;
when the model loads `billing`, its dependency loads first, its instructions come back as the tool
result, and its tools are offered from the next request on.

Runs offline with a scripted FunctionModel. Set FERRULE_EXAMPLE_MODEL (e.g. "openai:gpt-5-mini")
to use a real model through an installed provider package instead.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ferrule.agent import Agent
from ferrule.agent import Capability
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart


def refund(order_id: str, cents: int) -> str:
    """Refund part of an order.

    Args:
        order_id: The order to refund.
        cents: The amount, in cents.
    """
    return f"refunded {cents} cents on {order_id}"


accounts = Capability(
    "accounts",
    description="Customer account lookups.",
    instructions="Always confirm the customer's identity first.",
    loading="on_demand",
)
billing = Capability(
    "billing",
    description="Refunds and invoices.",
    instructions="Amounts are in cents.",
    tools=[refund],
    loading="on_demand",
    dependencies=["accounts"],
)


def scripted_model(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
    """Stands in for a real model: load billing, refund, then answer."""
    print(f"step {len(messages) // 2 + 1}: tools = {', '.join(d.name for d in info.function_tools)}")
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    results = [p for p in last.parts if isinstance(p, ToolReturnPart)]
    if not results:
        return ModelResponse(
            parts=[ToolCallPart(tool_name="load_capability", args={"capability": "billing"})]
        )
    if results[0].tool_name == "load_capability":
        print("loaded:", str(results[0].content).splitlines()[0])
        return ModelResponse(
            parts=[ToolCallPart(tool_name="refund", args={"order_id": "A17", "cents": 1250})]
        )
    return ModelResponse(parts=[TextPart(f"Done: {results[0].content}.")])


agent = Agent(
    os.environ.get("FERRULE_EXAMPLE_MODEL") or FunctionModel(scripted_model),
    instructions="You are a support agent.",
    capabilities=[accounts, billing],
)

if __name__ == "__main__":
    result = agent.run_sync("Please refund $12.50 on order A17.")
    print(result.output)
