"""`agent.override(model=...)` in a unit test, as PydanticAI's testing docs write it."""

import asyncio

from ferrule.agent import Agent  # was: from pydantic_ai import Agent
from ferrule.agent.testing import TestModel  # was: from pydantic_ai.models.test import TestModel

my_agent = Agent(
    "test", instructions="..."
)  # the docs use "openai:gpt-5"; the compat environment has no openai extra


async def test_my_agent():
    """Unit test for my_agent, to be run by pytest."""
    m = TestModel()
    with my_agent.override(model=m):
        result = await my_agent.run("Testing my agent...")
        assert result.output == "success (no tool calls)"
    print(result.output)


asyncio.run(test_my_agent())
#> success (no tool calls)
