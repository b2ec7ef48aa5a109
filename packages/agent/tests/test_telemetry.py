"""OpenTelemetry: GenAI spans and metrics checked with the SDK's in-memory exporter and reader."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="opentelemetry-sdk is a test dependency of the workspace")

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace import SpanProcessor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanContext
from opentelemetry.trace import SpanKind
from opentelemetry.trace import StatusCode

from ferrule.agent import Agent
from ferrule.agent import InstrumentationSettings
from ferrule.agent import Pricing
from ferrule.agent import RunContext
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.messages import Message
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.usage import RequestUsage

from ._support import modules_loaded_by

pytestmark = pytest.mark.anyio


def model_fn(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
    if len(messages) == 1:
        return ModelResponse(
            parts=[ToolCallPart(tool_name="weather", args={"city": "Paris"}, tool_call_id="call_1")],
            usage=RequestUsage(input_tokens=50, output_tokens=10, cache_read_tokens=20),
            model_name="fn-1",
            finish_reason="tool_call",
            provider_response_id="resp_1",
        )
    return ModelResponse(
        parts=[TextPart("sunny")],
        usage=RequestUsage(input_tokens=70, output_tokens=5),
        model_name="fn-1",
        finish_reason="stop",
    )


def weather(city: str) -> str:
    """Get the weather."""
    return f"sunny in {city}"


def setup(
    include_content: bool = False,
) -> tuple[InMemorySpanExporter, InMemoryMetricReader, InstrumentationSettings]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    settings = InstrumentationSettings(
        tracer_provider=tracer_provider,
        meter_provider=MeterProvider(metric_readers=[reader]),
        include_content=include_content,
    )
    return exporter, reader, settings


def by_name(spans: Sequence[ReadableSpan]) -> dict[str, ReadableSpan]:
    return {s.name: s for s in spans}


def context(span: ReadableSpan) -> SpanContext:
    assert span.context is not None
    return span.context


async def test_one_trace_with_genai_spans_and_attributes() -> None:
    exporter, _, settings = setup()
    agent = Agent(FunctionModel(model_fn), name="forecaster", tools=[weather], instrument=settings)
    result = await agent.run("Weather in Paris?", model_settings=None)
    spans = exporter.get_finished_spans()
    assert sorted(s.name for s in spans) == [
        "chat function:model_fn",
        "chat function:model_fn",
        "execute_tool weather",
        "invoke_agent forecaster",
    ]
    assert len({context(s).trace_id for s in spans}) == 1
    root = by_name(spans)["invoke_agent forecaster"]
    assert root.parent is None
    assert all(
        s.parent is not None and s.parent.span_id == context(root).span_id for s in spans if s is not root
    )
    attrs = dict(root.attributes or {})
    assert attrs["gen_ai.operation.name"] == "invoke_agent"
    assert attrs["gen_ai.agent.name"] == "forecaster"
    assert attrs["gen_ai.provider.name"] == "function"
    assert attrs["gen_ai.request.model"] == "function:model_fn"
    assert attrs["gen_ai.usage.input_tokens"] == 120
    assert attrs["gen_ai.usage.output_tokens"] == 15
    assert attrs["ferrule.run.id"] == result.run_id
    chats = sorted((s for s in spans if s.name.startswith("chat")), key=lambda s: s.start_time or 0)
    first = dict(chats[0].attributes or {})
    assert chats[0].kind == SpanKind.CLIENT
    assert first["gen_ai.operation.name"] == "chat"
    assert first["gen_ai.response.model"] == "fn-1"
    assert first["gen_ai.response.id"] == "resp_1"
    assert first["gen_ai.response.finish_reasons"] == ("tool_call",)
    assert first["gen_ai.usage.input_tokens"] == 50
    assert first["gen_ai.usage.cache_read.input_tokens"] == 20
    tool = dict(by_name(spans)["execute_tool weather"].attributes or {})
    assert tool == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "weather",
        "gen_ai.tool.call.id": "call_1",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.description": "Get the weather.",
    }


async def test_content_is_omitted_unless_enabled() -> None:
    exporter, _, settings = setup()
    await Agent(FunctionModel(model_fn), tools=[weather], instructions="Be brief.", instrument=settings).run(
        "secret"
    )
    for span in exporter.get_finished_spans():
        text = json.dumps(dict(span.attributes or {}))
        assert "secret" not in text
        assert "Paris" not in text
        assert "Be brief" not in text
    exporter, _, settings = setup(include_content=True)
    await Agent(FunctionModel(model_fn), tools=[weather], instructions="Be brief.", instrument=settings).run(
        "secret"
    )
    spans = by_name(exporter.get_finished_spans())
    tool = dict(spans["execute_tool weather"].attributes or {})
    assert json.loads(str(tool["gen_ai.tool.call.arguments"])) == {"city": "Paris"}
    assert tool["gen_ai.tool.call.result"] == "sunny in Paris"
    chats = [s for s in exporter.get_finished_spans() if s.name.startswith("chat")]
    first = dict(chats[0].attributes or {})
    assert json.loads(str(first["gen_ai.input.messages"])) == [
        {"role": "user", "parts": [{"type": "text", "content": "secret"}]}
    ]
    assert json.loads(str(first["gen_ai.system_instructions"])) == [{"type": "text", "content": "Be brief."}]
    output = json.loads(str(first["gen_ai.output.messages"]))
    assert output[0]["parts"][0]["name"] == "weather"


async def test_metrics_token_usage_and_duration() -> None:
    _, reader, settings = setup()
    await Agent(FunctionModel(model_fn), tools=[weather], instrument=settings).run("go")
    data = reader.get_metrics_data()
    assert data is not None
    metrics = {m.name: m for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}
    tokens = metrics["gen_ai.client.token.usage"]
    assert tokens.unit == "{token}"
    sums = {dict(p.attributes or {})["gen_ai.token.type"]: p.sum for p in tokens.data.data_points}  # type: ignore[union-attr]
    assert sums == {"input": 120, "output": 15}
    durations = metrics["gen_ai.client.operation.duration"]
    assert durations.unit == "s"
    operations = {dict(p.attributes or {})["gen_ai.operation.name"] for p in durations.data.data_points}  # type: ignore[union-attr]
    assert operations == {"chat"}  # the conventions define no duration metric for tool execution
    calls = metrics["ferrule.agent.tool.calls"]
    assert sum(p.value for p in calls.data.data_points) == 1  # type: ignore[union-attr]


async def test_cost_is_recorded_when_priced() -> None:
    exporter, _reader, settings = setup()
    pricing = Pricing(overrides={"fn-1": {"input_mtok": "1", "output_mtok": "2"}})
    result = await Agent(FunctionModel(model_fn), tools=[weather], instrument=settings, pricing=pricing).run(
        "go"
    )
    assert result.usage.cost_nano_usd == 120 * 1000 + 15 * 2000
    root = by_name(exporter.get_finished_spans())["invoke_agent agent"]
    assert dict(root.attributes or {})["ferrule.usage.cost_nano_usd"] == 150_000


async def test_failed_tool_and_run_record_errors() -> None:
    exporter, _, settings = setup()

    def weather(city: str) -> str:
        raise RuntimeError("station offline")

    with pytest.raises(RuntimeError):
        await Agent(FunctionModel(model_fn), tools=[weather], instrument=settings).run("go")
    spans = by_name(exporter.get_finished_spans())
    for name in ("execute_tool weather", "invoke_agent agent"):
        span = spans[name]
        assert span.status.status_code == StatusCode.ERROR
        assert dict(span.attributes or {})["error.type"] == "RuntimeError"


class BrokenExporter(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        raise ConnectionError("collector down")


class BrokenProcessor(SpanProcessor):
    def on_start(self, span: Any, parent_context: Any = None) -> None:
        raise RuntimeError("processor broke on start")

    def on_end(self, span: ReadableSpan) -> None:
        raise RuntimeError("processor broke on end")


async def test_exporter_and_processor_failures_never_fail_a_run() -> None:
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(BrokenExporter()))
    tracer_provider.add_span_processor(BrokenProcessor())
    settings = InstrumentationSettings(tracer_provider=tracer_provider, metrics=False)
    result = await Agent(FunctionModel(model_fn), tools=[weather], instrument=settings).run("go")
    assert result.output == "sunny"


async def test_nested_agent_runs_nest_under_the_tool_span() -> None:
    exporter, _, settings = setup()

    def inner_model(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart("inner answer")])

    inner = Agent(FunctionModel(inner_model), name="inner", instrument=settings)

    async def ask(ctx: RunContext[None], city: str) -> str:
        return (await inner.run(city)).output

    def outer_model(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart(tool_name="ask", args={"city": "x"}, tool_call_id="a")])
        return ModelResponse(parts=[TextPart("outer answer")])

    await Agent(FunctionModel(outer_model), name="outer", tools=[ask], instrument=settings).run("go")
    spans = by_name(exporter.get_finished_spans())
    inner_span = spans["invoke_agent inner"]
    tool_span = spans["execute_tool ask"]
    assert inner_span.parent is not None
    assert inner_span.parent.span_id == context(tool_span).span_id
    assert context(inner_span).trace_id == context(spans["invoke_agent outer"]).trace_id


def test_opentelemetry_is_not_imported_when_instrumentation_is_off() -> None:
    code = (
        "from ferrule.agent import Agent, FunctionToolset, Capability\n"
        "from ferrule.agent.testing import TestModel\n"
        "def add(a: int, b: int) -> int:\n"
        "    return a + b\n"
        "agent = Agent(TestModel(), toolsets=[FunctionToolset([add])], capabilities=[Capability('c')])\n"
        "agent.run_sync('go')\n"
    )
    assert modules_loaded_by(code, ("opentelemetry",)) == []


def test_instrumentation_property_exposes_the_settings() -> None:
    _, _, settings = setup()
    assert Agent(FunctionModel(model_fn), instrument=settings).instrumentation is settings
    assert Agent(FunctionModel(model_fn), instrument=True).instrumentation == InstrumentationSettings()
    assert Agent(FunctionModel(model_fn)).instrumentation is None
