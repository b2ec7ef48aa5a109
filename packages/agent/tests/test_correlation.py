"""Run correlation (W-10): `correlation=` and `trace_parent=` reach hooks and the agent span."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="opentelemetry-sdk is a test dependency of the workspace")

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ferrule.agent import Agent
from ferrule.agent import Approved
from ferrule.agent import HookEvent
from ferrule.agent import InstrumentationSettings
from ferrule.agent import Paused
from ferrule.agent import RunCorrelation
from ferrule.agent import Tool
from ferrule.agent.multi_agent import Session
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.errors import UserError
from ferrule.core.messages import Message
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart

pytestmark = pytest.mark.anyio

GRAPH = RunCorrelation(run_id="graph-run-1", node_id="draft", node_name="Draft")


def text_model(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart("done")])


def traced() -> tuple[InMemorySpanExporter, TracerProvider]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter, provider


def agent_span(spans: Sequence[ReadableSpan]) -> ReadableSpan:
    [span] = [s for s in spans if s.name.startswith("invoke_agent")]
    return span


async def test_run_start_hook_carries_the_correlation() -> None:
    events: list[HookEvent] = []
    agent = Agent(FunctionModel(text_model), hooks=[events.append])
    result = await agent.run("hi", correlation=GRAPH)
    starts = [e for e in events if e.kind == "run_start"]
    assert len(starts) == 1
    assert starts[0].correlation == GRAPH
    # The agent's own run ID stays distinct from the orchestration's.
    assert starts[0].run_id == result.run_id != GRAPH.run_id
    assert all(e.correlation is None for e in events if e.kind != "run_start")


async def test_without_correlation_the_hook_field_is_none() -> None:
    events: list[HookEvent] = []
    await Agent(FunctionModel(text_model), hooks=[events.append]).run("hi")
    assert [e.correlation for e in events if e.kind == "run_start"] == [None]


async def test_agent_span_attributes_and_trace_parent() -> None:
    exporter, provider = traced()
    agent = Agent(FunctionModel(text_model), instrument=InstrumentationSettings(tracer_provider=provider))
    parent_tracer = provider.get_tracer("test")
    with parent_tracer.start_as_current_span("graph node") as node_span:
        parent_context = trace.set_span_in_context(node_span)
    # Started outside the `with`: only trace_parent can make the node span its parent.
    result = await agent.run("hi", correlation=GRAPH, trace_parent=parent_context)
    span = agent_span(exporter.get_finished_spans())
    attrs = dict(span.attributes or {})
    assert attrs["ferrule.run.id"] == "graph-run-1"
    assert attrs["ferrule.agent.run.id"] == result.run_id
    assert attrs["ferrule.graph.node.id"] == "draft"
    assert attrs["ferrule.graph.node.name"] == "Draft"
    assert "ferrule.session.id" not in attrs
    assert span.parent is not None
    assert span.parent.span_id == node_span.get_span_context().span_id
    assert span.context is not None
    assert span.context.trace_id == node_span.get_span_context().trace_id


async def test_without_correlation_the_run_id_attribute_is_the_agent_run() -> None:
    exporter, provider = traced()
    agent = Agent(FunctionModel(text_model), instrument=InstrumentationSettings(tracer_provider=provider))
    result = await agent.run("hi")
    attrs = dict(agent_span(exporter.get_finished_spans()).attributes or {})
    assert attrs["ferrule.run.id"] == attrs["ferrule.agent.run.id"] == result.run_id
    assert "ferrule.graph.node.id" not in attrs


async def test_stream_iter_and_resume_take_the_correlation() -> None:
    events: list[HookEvent] = []
    agent = Agent(FunctionModel(text_model), hooks=[events.append])
    async with agent.run_stream("hi", correlation=GRAPH) as stream:
        await stream.get_output()
    async with agent.iter("hi", correlation=GRAPH) as run:
        async for _ in run:
            pass

    calls: list[int] = []

    def pay(amount: int) -> str:
        """Pay."""
        calls.append(amount)
        return "paid"

    def paying(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        if any(isinstance(p, ToolReturnPart) for m in messages for p in m.parts):
            return ModelResponse(parts=[TextPart("ok")])
        return ModelResponse(parts=[ToolCallPart("pay", {"amount": 3}, tool_call_id="c1")])

    payer = Agent(FunctionModel(paying), tools=[Tool(pay, requires_approval=True)], hooks=[events.append])
    paused = await payer.run_until_pause("pay", correlation=GRAPH)
    assert isinstance(paused, Paused)
    resumed_correlation = RunCorrelation(run_id="graph-run-1", node_id="pay", node_name="Pay")
    await payer.resume(paused, {"c1": Approved()}, correlation=resumed_correlation)
    assert calls == [3]
    starts = [e.correlation for e in events if e.kind == "run_start"]
    assert starts == [GRAPH, GRAPH, GRAPH, resumed_correlation]


async def test_a_wrong_correlation_type_is_refused_before_the_model_runs() -> None:
    seen: list[int] = []

    def model(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        seen.append(1)
        return ModelResponse(parts=[TextPart("x")])

    bad: Any = {"run_id": "x"}
    with pytest.raises(UserError, match="RunCorrelation"):
        await Agent(FunctionModel(model)).run("hi", correlation=bad)
    assert seen == []
    with pytest.raises(ValueError, match="run_id"):
        RunCorrelation(run_id="")


async def test_multi_agent_scope_fills_the_correlation_and_trace_parent() -> None:
    exporter, provider = traced()
    events: list[HookEvent] = []
    with provider.get_tracer("test").start_as_current_span("app") as app_span:
        parent = trace.set_span_in_context(app_span)
    session = Session(session_id="sess-1", trace_parent=parent)
    settings = InstrumentationSettings(tracer_provider=provider)
    planner = Agent(FunctionModel(text_model), name="planner", hooks=[events.append], instrument=settings)
    writer = Agent(FunctionModel(text_model), name="writer", hooks=[events.append], instrument=settings)
    root = session.root()
    await root.delegate(planner, "plan")
    await root.handoff(writer, "write", correlation=GRAPH)
    starts = [e.correlation for e in events if e.kind == "run_start"]
    assert starts == [
        RunCorrelation(
            run_id="sess-1",
            session_id="sess-1",
            transition="delegate",
            depth=1,
            run_index=1,
            target_name="planner",
        ),
        # A given correlation keeps its run and node identity; the scope adds the tree position.
        RunCorrelation(
            run_id="graph-run-1",
            node_id="draft",
            node_name="Draft",
            session_id="sess-1",
            transition="handoff",
            depth=0,
            run_index=2,
            target_name="writer",
        ),
    ]
    spans = [s for s in exporter.get_finished_spans() if s.name.startswith("invoke_agent")]
    assert len(spans) == 2
    for span in spans:
        assert span.parent is not None
        assert span.parent.span_id == app_span.get_span_context().span_id
        attrs = dict(span.attributes or {})
        assert attrs["ferrule.session.id"] == "sess-1"
    by_agent = {dict(s.attributes or {})["gen_ai.agent.name"]: dict(s.attributes or {}) for s in spans}
    assert by_agent["planner"]["ferrule.session.transition"] == "delegate"
    assert by_agent["planner"]["ferrule.session.depth"] == 1
    assert by_agent["writer"]["ferrule.graph.node.id"] == "draft"
    assert by_agent["writer"]["ferrule.session.run_index"] == 2
