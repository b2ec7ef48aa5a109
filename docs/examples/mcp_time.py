"""An agent that calls the `mcp-server-time` MCP server over stdio and prints the tool's result.

Runs offline with a scripted FunctionModel (set FERRULE_EXAMPLE_MODEL, e.g. "openai:gpt-5-mini",
to use a real model). Needs `ferrule-mcp` (`python tools/install.py ferrule-mcp` from a checkout) and
`pip install mcp-server-time`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from ferrule.agent import Agent
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.mcp import MCPServerStdio

# The server runs as a child process with an explicit environment (PATH, HOME, locale; no secrets)
# and is started on first use, then stopped and reaped when the run ends.
time_server = MCPServerStdio(
    sys.executable,
    ["-m", "mcp_server_time", "--local-timezone", "UTC"],
    id="time",
    namespace=True,  # the model sees time__get_current_time, time__convert_time
    trust_annotations=True,  # the server marks its tools read-only; believe it (retries are then safe)
)


def scripted_model(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
    """Stands in for a real model: call the time tool once, then answer from its result."""
    last = messages[-1]
    results = (
        [p for p in last.parts if isinstance(p, ToolReturnPart)] if isinstance(last, ModelRequest) else []
    )
    if not results:
        offered = ", ".join(t.name for t in info.function_tools)
        print(f"tools offered: {offered}")
        return ModelResponse(
            parts=[ToolCallPart(tool_name="time__get_current_time", args={"timezone": "UTC"})]
        )
    now = results[0].content
    return ModelResponse(
        parts=[TextPart(f"It is {now['datetime']} ({now['day_of_week']}) in {now['timezone']}.")]
    )


agent = Agent(
    os.environ.get("FERRULE_EXAMPLE_MODEL") or FunctionModel(scripted_model),
    instructions="Answer questions about the time with the time tools.",
    toolsets=[time_server],
)

if __name__ == "__main__":
    result = agent.run_sync("What time is it in UTC?")
    for message in result.new_messages():
        for part in message.parts:
            if isinstance(part, ToolReturnPart):
                print(f"tool result: {part.content}")
    print(result.output)
    print(f"server process {time_server.pid} exited with status {time_server.returncode}")
