"""An agent with a tool: the model calls `get_weather`, then answers from its result.

Runs offline with a scripted FunctionModel. Set FERRULE_EXAMPLE_MODEL (e.g. "openai:gpt-5-mini")
to use a real model through an installed provider package instead.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from ferrule.agent import Agent
from ferrule.agent import RunContext
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart


@dataclass
class Forecasts:
    """Application dependencies: here, a tiny in-memory weather service."""

    by_city: dict[str, str]


def scripted_model(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
    """Stands in for a real model: call the tool once, then answer from its result."""
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    results = [p for p in last.parts if isinstance(p, ToolReturnPart)]
    if not results:
        return ModelResponse(parts=[ToolCallPart(tool_name="get_weather", args={"city": "Paris"})])
    return ModelResponse(parts=[TextPart(f"The weather in Paris: {results[0].content}.")])


agent = Agent(
    os.environ.get("FERRULE_EXAMPLE_MODEL") or FunctionModel(scripted_model),
    instructions="Answer weather questions with the get_weather tool.",
    deps_type=Forecasts,
)


@agent.tool(side_effect="read_only")
def get_weather(ctx: RunContext[Forecasts], city: str) -> str:
    """Get the current weather for a city.

    Args:
        city: The city's name, e.g. "Paris".
    """
    return ctx.deps.by_city.get(city, "unknown")


if __name__ == "__main__":
    result = agent.run_sync("What is the weather in Paris?", deps=Forecasts({"Paris": "sunny, 21 °C"}))
    print(result.output)
    print(f"requests={result.usage.requests} tool_calls={result.usage.tool_calls}")
