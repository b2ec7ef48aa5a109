"""End to end: `ferrule.agent.Agent` on a real local model behind llama.cpp's server.

The model (Qwen2.5-Coder-0.5B) cannot call tools natively; its profile emulates them through
constrained JSON output, so these runs exercise the whole loop (tool calls, retries, typed output,
streaming) exactly as an application would. Assertions are on structure, never on wording.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import pytest

from ferrule.agent import Agent
from ferrule.agent import FunctionToolCallEvent
from ferrule.agent import FunctionToolResultEvent
from ferrule.agent import ModelRetry
from ferrule.agent import ToolOutput
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.model import Model
from ferrule.core.settings import ModelSettings
from ferrule.core.usage import UsageLimits
from ferrule.providers.llamacpp import LlamaCppServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

# A small model that loops on a tool should fail in seconds, not after the default 50 requests.
LIMITS = UsageLimits(request_limit=6)


class City(msgspec.Struct):
    """Facts about a city."""

    name: str
    country: str


def _model(server: LlamaCppServer) -> Model:
    return server.model(settings=ModelSettings(temperature=0, max_tokens=256))


def _weather_tool(calls: list[str], weather: str, *, retry_first: bool = False) -> Callable[[str], str]:
    """A `get_weather` tool reporting `weather` in the city asked about, each of which it appends to
    `calls`; with `retry_first`, its first call asks the model to call it again instead."""

    def get_weather(city: str) -> str:
        """Get the current weather in a city.

        Args:
            city: The city name.
        """
        calls.append(city)
        if retry_first and len(calls) == 1:
            raise ModelRetry("The weather service timed out. Call the tool again with the same city.")
        return f"{weather} in {city}."

    return get_weather


def _assert_a_city(output: object) -> None:
    assert isinstance(output, City)
    assert output.name
    assert output.country


async def test_agent_tool_loop(local_server: LlamaCppServer) -> None:
    calls: list[str] = []
    get_weather = _weather_tool(calls, "Sunny and 21 °C")
    agent = Agent(_model(local_server), tools=[get_weather], usage_limits=LIMITS)
    result = await agent.run("What is the weather in Paris right now?")
    assert len(calls) == 1
    assert calls[0]
    assert isinstance(result.output, str)
    assert result.output
    responses = [m for m in result.all_messages() if isinstance(m, ModelResponse)]
    assert [type(p) for r in responses for p in r.parts] == [ToolCallPart, TextPart]
    returns = [p for m in result.all_messages() for p in m.parts if isinstance(p, ToolReturnPart)]
    assert [r.tool_call_id for r in returns] == [responses[0].parts[0].tool_call_id]  # type: ignore[union-attr]
    usage = result.usage
    assert usage.requests == 2
    assert usage.tool_calls == 1
    assert usage.input_tokens > 0
    assert usage.output_tokens > 0


async def test_agent_tool_retry(local_server: LlamaCppServer) -> None:
    attempts: list[str] = []
    get_weather = _weather_tool(attempts, "Rainy and 12 °C", retry_first=True)
    agent = Agent(_model(local_server), tools=[get_weather], retries=2, usage_limits=LIMITS)
    result = await agent.run("What is the weather in London right now?")
    assert len(attempts) == 2
    retries = [p for m in result.all_messages() for p in m.parts if isinstance(p, RetryPromptPart)]
    assert len(retries) == 1
    assert retries[0].tool_name == "get_weather"
    assert isinstance(result.output, str)
    assert result.output


async def test_agent_typed_output(local_server: LlamaCppServer) -> None:
    agent = Agent(_model(local_server), output_type=City, usage_limits=LIMITS)
    result = await agent.run("Give the name and the country of the capital of France.")
    _assert_a_city(result.output)


async def test_agent_typed_output_through_an_output_tool(local_server: LlamaCppServer) -> None:
    agent = Agent(_model(local_server), output_type=ToolOutput(City), usage_limits=LIMITS)
    result = await agent.run("Give the name and the country of the capital of Italy.")
    _assert_a_city(result.output)
    [response] = [m for m in result.all_messages() if isinstance(m, ModelResponse)]
    [call] = response.parts
    assert isinstance(call, ToolCallPart)
    assert call.tool_name == "final_result"


async def test_agent_tool_then_typed_output(local_server: LlamaCppServer) -> None:
    looked_up: list[str] = []

    def find_country(city: str) -> str:
        """Find the country a city is in.

        Args:
            city: The city name.
        """
        looked_up.append(city)
        return "France"

    agent = Agent(_model(local_server), tools=[find_country], output_type=City, usage_limits=LIMITS)
    result = await agent.run(
        "Use the tool to find the country of Lyon, then answer with the city and its country."
    )
    assert looked_up
    _assert_a_city(result.output)


async def test_agent_streamed_run(local_server: LlamaCppServer) -> None:
    agent = Agent(_model(local_server), usage_limits=LIMITS)
    deltas: list[str] = []
    async with agent.run_stream("Write two sentences about the sea.") as stream:
        async for delta in stream.stream_text(delta=True):
            deltas.append(delta)
        result = stream.result
    assert len(deltas) >= 5
    assert "".join(deltas) == result.output
    assert result.usage.output_tokens > 0


async def test_agent_streamed_tool_loop(local_server: LlamaCppServer) -> None:
    def get_time(city: str) -> str:
        """Get the local time in a city.

        Args:
            city: The city name.
        """
        return f"It is 14:05 in {city}."

    agent = Agent(_model(local_server), tools=[get_time], usage_limits=LIMITS)
    events: list[object] = []
    async with agent.run_stream("What time is it in Tokyo? Use the tool.") as stream:
        async for event in stream:
            events.append(event)
        result = stream.result
    calls = [e for e in events if isinstance(e, FunctionToolCallEvent)]
    results = [e for e in events if isinstance(e, FunctionToolResultEvent)]
    assert len(calls) == 1
    assert len(results) == 1
    assert isinstance(result.output, str)
    assert result.output
