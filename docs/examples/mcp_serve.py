"""A ferrule agent served as an MCP server over stdio, called by the official MCP SDK client.

`python mcp_serve.py` starts itself again as `python mcp_serve.py serve` (the MCP server on
stdin/stdout), connects to it with `mcp.Client`, lists the tools and asks the agent a question.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import anyio

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
from ferrule.core.messages import UserPromptPart
from ferrule.mcp import expose_agent


def scripted_model(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
    """Looks up the city named in the prompt with the `population` tool, then answers."""
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    results = [p for p in last.parts if isinstance(p, ToolReturnPart)]
    if not results:
        prompt = next(p.content for p in last.parts if isinstance(p, UserPromptPart))
        city = str(prompt).rstrip("?").split()[-1]
        return ModelResponse(parts=[ToolCallPart(tool_name="population", args={"city": city})])
    return ModelResponse(parts=[TextPart(f"About {results[0].content:,} people live there.")])


agent = Agent(FunctionModel(scripted_model), name="geo", deps_type=dict[str, int])


@agent.tool(side_effect="read_only")
def population(ctx: RunContext[dict[str, int]], city: str) -> int:
    """The population of a city.

    Args:
        city: The city's name.
    """
    return ctx.deps.get(city, 0)


server = expose_agent(
    agent, deps={"Paris": 2_100_000, "Lyon": 522_000}, description="Answers geography questions."
)


async def ask() -> None:
    from mcp import Client
    from mcp import StdioServerParameters
    from mcp.types import TextContent

    params = StdioServerParameters(command=sys.executable, args=[__file__, "serve"])
    async with Client(params, cache=None) as client:
        for tool in (await client.list_tools()).tools:
            print(f"tool: {tool.name} - {tool.description}")
        result = await client.call_tool("ask_geo", {"prompt": "How many people live in Lyon?"})
        answer = result.content[0]
        assert isinstance(answer, TextContent)
        print(f"answer: {answer.text}")


if __name__ == "__main__":
    if sys.argv[1:] == ["serve"]:
        anyio.run(server.serve_stdio)
    else:
        anyio.run(ask)
