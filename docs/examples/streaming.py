"""Streaming: text deltas as they arrive, tool events, and the final result.

The scripted model says something, calls a tool in the same response (so that first text is not
the answer), then streams its final answer. Runs offline.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from collections.abc import Sequence

import anyio

from ferrule.agent import Agent
from ferrule.agent import FinalResultEvent
from ferrule.agent import FunctionToolCallEvent
from ferrule.agent import FunctionToolResultEvent
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import DeltaToolCall
from ferrule.agent.testing import DeltaToolCalls
from ferrule.agent.testing import FunctionModel
from ferrule.core.messages import Message
from ferrule.core.messages import ModelResponse
from ferrule.core.model import PartDeltaEvent
from ferrule.core.model import TextPartDelta


async def scripted_stream(
    messages: Sequence[Message], info: AgentInfo
) -> AsyncIterator[str | DeltaToolCalls]:
    if not any(isinstance(m, ModelResponse) for m in messages):
        yield "Let me look that up. "
        yield {0: DeltaToolCall(name="population", json_args='{"city": ', tool_call_id="c1")}
        yield {0: DeltaToolCall(json_args='"Paris"}')}
    else:
        for word in ["Paris ", "has ", "about ", "2.1 ", "million ", "people."]:
            yield word


agent = Agent(FunctionModel(stream_function=scripted_stream))


@agent.tool_plain(side_effect="read_only")
async def population(city: str) -> int:
    """The population of a city."""
    return 2_100_000


async def main() -> None:
    async with agent.run_stream("How many people live in Paris?") as stream:
        async for event in stream:
            if isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
                print(f"delta: {event.delta.content_delta!r}")
            elif isinstance(event, FunctionToolCallEvent):
                print(f"tool call: {event.part.tool_name}({event.part.args_as_json_str()})")
            elif isinstance(event, FunctionToolResultEvent):
                print(f"tool result: {event.result.content!r}")
            elif isinstance(event, FinalResultEvent):
                print(f"final: {event.output}")
    print(f"output={stream.result.output!r}")


if __name__ == "__main__":
    anyio.run(main)
