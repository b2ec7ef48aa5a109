"""Trace evaluators: per-case span copies from instrumented agents, under concurrency and retries."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import anyio
import pytest

pytest.importorskip("opentelemetry.sdk", reason="opentelemetry-sdk is a test dependency of ferrule-evals")

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NoOpTracerProvider

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
from ferrule.core.messages import UserPromptPart
from ferrule.core.usage import RequestUsage
from ferrule.evals import Case
from ferrule.evals import Dataset
from ferrule.evals import EvaluationResult
from ferrule.evals import ExactMatch
from ferrule.evals import ExecutionOptions
from ferrule.evals import HasSpan
from ferrule.evals import RetryPolicy
from ferrule.evals import TraceContext
from ferrule.evals import TraceEvaluationRequiresTelemetry
from ferrule.evals import TraceEvaluator
from ferrule.evals import dump_report_json
from ferrule.evals import dump_report_yaml
from ferrule.evals import load_report_json
from ferrule.evals import load_report_yaml

pytestmark = pytest.mark.anyio


class ToolModel:
    """Calls `lookup(key=<prompt>)` once, then answers with the tool's result; counts requests."""

    def __init__(self, fail_first: int = 0) -> None:
        self.calls = 0
        self.fail_first = fail_first

    async def __call__(self, messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        self.calls += 1
        if self.calls <= self.fail_first:
            raise RuntimeError(f"model failure {self.calls}")
        await anyio.lowlevel.checkpoint()  # lets concurrent cases interleave
        request = messages[-1]
        assert isinstance(request, ModelRequest)
        returns = [p for p in request.parts if isinstance(p, ToolReturnPart)]
        if not returns:
            asked = request.parts[-1]
            assert isinstance(asked, UserPromptPart)
            prompt = asked.content
            return ModelResponse(
                parts=[ToolCallPart(tool_name="lookup", args={"key": prompt})],
                usage=RequestUsage(input_tokens=20, output_tokens=5),
                finish_reason="tool_call",
            )
        return ModelResponse(
            parts=[TextPart(str(returns[0].content))],
            usage=RequestUsage(input_tokens=30, output_tokens=3),
            finish_reason="stop",
        )


async def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: The key.
    """
    for _ in range(3):
        await anyio.lowlevel.checkpoint()
    return f"value of {key}"


def instrumented(model: Any) -> tuple[Agent[None, str], InMemorySpanExporter, InMemoryMetricReader]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    settings = InstrumentationSettings(
        tracer_provider=provider, meter_provider=MeterProvider(metric_readers=[reader]), include_content=True
    )
    return Agent(FunctionModel(model), tools=[lookup], instrument=settings, name="looker"), exporter, reader


class ToolArguments(TraceEvaluator):
    """Passes when the run's tool span carries this case's own key (proves spans landed in the right case)."""

    name = "own_tool_call"

    def evaluate(self, context: TraceContext) -> EvaluationResult:
        (span,) = context.find(prefix="execute_tool ")
        arguments = json.loads(str(span.attributes["gen_ai.tool.call.arguments"]))
        return EvaluationResult(
            passed=arguments == {"key": context.case.inputs}, score=float(len(context.spans))
        )


CASES = [Case(f"c{i}", f"k{i}", expected=f"value of k{i}") for i in range(6)]


async def test_each_case_holds_copies_of_its_own_spans_under_concurrency() -> None:
    agent, exporter, reader = instrumented(ToolModel())
    dataset = Dataset(
        CASES,
        evaluators=[ExactMatch()],
        trace_evaluators=[
            ToolArguments(),
            HasSpan(prefix="chat ", min_count=2, max_count=2, evaluator_name="two_chats"),
        ],
    )
    report = await dataset.run(agent, options=ExecutionOptions(repetitions=2, max_concurrency=4))
    assert report.passed()
    originals = exporter.get_finished_spans()
    assert len(originals) == 12 * 4  # the exporter still receives every original span
    copied = [s for r in report.results for s in r.spans]
    original_ids: list[str] = []
    for span in originals:
        assert span.context is not None
        original_ids.append(format(span.context.span_id, "016x"))
    assert sorted(s.span_id for s in copied) == sorted(original_ids)
    for result in report.results:
        names = sorted(s.name for s in result.spans)
        assert names == ["chat function", "chat function", "execute_tool lookup", "invoke_agent looker"]
        assert len({s.trace_id for s in result.spans}) == 1  # one trace per case run
        # Trace evaluations follow the ordinary ones, in dataset order.
        assert [e.name for e in result.evaluations] == ["exact_match", "own_tool_call", "two_chats"]
        assert all(e.passed for e in result.evaluations)
        root = next(s for s in result.spans if s.parent_span_id is None)
        assert root.name == "invoke_agent looker"
        assert root.kind == "INTERNAL"
        assert root.attributes["ferrule.usage.requests"] == 2  # typed: an int stays an int
        assert isinstance(root.attributes["gen_ai.usage.input_tokens"], int)
        chat = next(s for s in result.spans if s.name.startswith("chat "))
        assert chat.kind == "CLIENT"
        assert chat.attributes["gen_ai.response.finish_reasons"] in (("tool_call",), ("stop",))
        assert chat.end_time_unix_nano is not None
        assert chat.duration_seconds is not None
    # Metrics still reach the configured meter provider.
    metrics = reader.get_metrics_data()
    assert metrics is not None
    names = {m.name for rm in metrics.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}
    assert {"gen_ai.client.token.usage", "gen_ai.client.operation.duration"} <= names


async def test_spans_are_those_of_the_successful_attempt_only() -> None:
    agent, exporter, _ = instrumented(ToolModel(fail_first=1))
    report = await Dataset(CASES[:1], trace_evaluators=[HasSpan(prefix="invoke_agent ", max_count=1)]).run(
        agent, options=ExecutionOptions(task_retry=RetryPolicy(max_attempts=2))
    )
    (result,) = report.results
    assert result.task_attempts == 2
    assert all(s.status != "ERROR" for s in result.spans)
    assert len(result.spans) == 4
    failed = [s for s in exporter.get_finished_spans() if s.status.status_code.name == "ERROR"]
    assert failed, "the failed attempt's spans were exported, just not kept for the case"


async def test_trace_evaluators_use_the_evaluator_retry_policy() -> None:
    tries = 0

    class Flaky(TraceEvaluator):
        name = "flaky"

        def evaluate(self, context: TraceContext) -> bool:
            nonlocal tries
            tries += 1
            if tries == 1:
                raise RuntimeError("once")
            return True

    agent, _, _ = instrumented(ToolModel())
    report = await Dataset(CASES[:1], trace_evaluators=[Flaky()]).run(
        agent, options=ExecutionOptions(evaluator_retry=RetryPolicy(max_attempts=2))
    )
    assert report.results[0].evaluations[0] == EvaluationResult(name="flaky", passed=True, attempts=2)


async def test_trace_evaluators_require_telemetry_before_the_first_model_call() -> None:
    model = ToolModel()
    dataset = Dataset(CASES, trace_evaluators=[HasSpan(prefix="chat ")])
    with pytest.raises(TraceEvaluationRequiresTelemetry, match="not instrumented"):
        await dataset.run(Agent(FunctionModel(model), tools=[lookup]))
    no_sdk = Agent(
        FunctionModel(model),
        tools=[lookup],
        instrument=InstrumentationSettings(tracer_provider=NoOpTracerProvider()),
    )
    with pytest.raises(TraceEvaluationRequiresTelemetry, match="cannot take span processors"):
        await dataset.run(no_sdk)

    async def task(inputs: str) -> str:
        raise AssertionError("never called")

    with pytest.raises(TraceEvaluationRequiresTelemetry, match="tracer_provider"):
        await dataset.run(task)
    assert model.calls == 0


async def test_a_function_task_names_its_tracer_provider() -> None:
    agent, exporter, _ = instrumented(ToolModel())
    provider = agent.instrumentation.tracer_provider if agent.instrumentation else None

    async def task(inputs: str) -> Any:
        return await agent.run(inputs)

    report = await Dataset(CASES[:2], trace_evaluators=[ToolArguments()]).run(
        task, options=ExecutionOptions(tracer_provider=provider)
    )
    assert report.passed()
    assert [len(r.spans) for r in report.results] == [4, 4]
    assert len(exporter.get_finished_spans()) == 8


async def test_an_uninstrumented_agent_records_no_spans() -> None:
    report = await Dataset(CASES[:1]).run(Agent(FunctionModel(ToolModel()), tools=[lookup]))
    assert report.results[0].spans == ()


async def test_reports_with_spans_round_trip_with_lowercase_hex_ids() -> None:
    agent, _, _ = instrumented(ToolModel())
    report = await Dataset(CASES[:2], trace_evaluators=[ToolArguments()]).run(agent)
    data = dump_report_json(report)
    document = json.loads(data)
    span = document["runs"][0]["spans"][0]
    assert len(span["trace_id"]) == 32
    assert span["trace_id"] == span["trace_id"].lower()
    assert len(span["span_id"]) == 16
    assert int(span["span_id"], 16) > 0
    typed = {k: v["type"] for s in document["runs"][0]["spans"] for k, v in s["attributes"].items()}
    assert typed["gen_ai.usage.input_tokens"] == "int"
    assert typed["gen_ai.operation.name"] == "string"
    assert typed["gen_ai.response.finish_reasons"] == "string_array"
    for loaded in (load_report_json(data), load_report_yaml(dump_report_yaml(report))):
        assert dump_report_json(loaded) == data
        assert loaded.results[0].spans == report.results[0].spans
