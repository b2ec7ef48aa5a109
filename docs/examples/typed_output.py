"""Typed output: the run returns a validated msgspec Struct, checked again by an output validator.

The scripted model first sends an invalid answer; the agent sends the validation error back and
the model corrects itself. Runs offline.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from ferrule.agent import Agent
from ferrule.agent import ModelRetry
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.messages import Message
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import ToolCallPart


class CityInfo(msgspec.Struct):
    """Facts about a city."""

    name: str
    country: str
    population: int


def scripted_model(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
    """Answer through the output tool; the first attempt misses a field."""
    tool = info.output_tools[0].name
    attempts = sum(isinstance(m, ModelResponse) for m in messages)
    if attempts == 0:
        args = {"name": "Lyon", "country": "France"}
    else:
        args = {"name": "Lyon", "country": "France", "population": 522_000}
    return ModelResponse(parts=[ToolCallPart(tool_name=tool, args=args)])


agent = Agent(FunctionModel(scripted_model), output_type=CityInfo, output_retries=2)


@agent.output_validator
def plausible(output: CityInfo) -> CityInfo:
    if output.population <= 0:
        raise ModelRetry("population must be positive")
    return output


if __name__ == "__main__":
    result = agent.run_sync("Tell me about Lyon.")
    city = result.output
    assert isinstance(city, CityInfo)
    print(f"{city.name}, {city.country}: {city.population}")
    print(f"requests={result.usage.requests}")
