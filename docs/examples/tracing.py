"""Tracing an agent run to the OpenTelemetry console exporter.

One trace per run: an `invoke_agent` span with a `chat <model>` span per model request and an
`execute_tool <tool>` span per tool call, carrying GenAI semantic-convention attributes (token
usage, finish reasons, tool names and call IDs). Prompts and tool arguments are left out unless
`include_content=True`. Needs `opentelemetry-sdk` (ferrule-agent itself depends only on
`opentelemetry-api`).

Runs offline with a scripted FunctionModel. Set FERRULE_EXAMPLE_MODEL (e.g. "openai:gpt-5-mini")
to use a real model through an installed provider package instead.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from ferrule.agent import Agent
from ferrule.agent import InstrumentationSettings
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.usage import RequestUsage


def scripted_model(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
    """Stands in for a real model: call the tool once, then answer from its result."""
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    results = [p for p in last.parts if isinstance(p, ToolReturnPart)]
    if not results:
        return ModelResponse(
            parts=[ToolCallPart(tool_name="population", args={"city": "Paris"})],
            usage=RequestUsage(input_tokens=42, output_tokens=9),
            finish_reason="tool_call",
        )
    return ModelResponse(
        parts=[TextPart(f"Paris has about {results[0].content} people.")],
        usage=RequestUsage(input_tokens=61, output_tokens=12),
        finish_reason="stop",
    )


def population(city: str) -> str:
    """Look up a city's population.

    Args:
        city: The city's name.
    """
    return "2.1 million"


provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))

agent = Agent(
    os.environ.get("FERRULE_EXAMPLE_MODEL") or FunctionModel(scripted_model),
    name="city-facts",
    tools=[population],
    instrument=InstrumentationSettings(tracer_provider=provider),
)

if __name__ == "__main__":
    result = agent.run_sync("How many people live in Paris?")
    provider.shutdown()
    print(result.output)
