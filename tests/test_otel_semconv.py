"""Every span, metric and attribute an instrumented agent emits is in the OpenTelemetry semantic
conventions registry, version 1.44.0 (the GenAI conventions, status development), or in ferrule's own
`ferrule.` namespace; and the attributes the conventions ask for are there (`server.address` and
`server.port` on chat spans, `gen_ai.tool.description` on tool spans, registered
`gen_ai.provider.name` values, `gen_ai.client.operation.duration` only for client operations).

The allowed sets below are written from the 1.44.0 registry and signal definitions (docs/extensions.md,
OpenTelemetry, names the version). `test_the_allowed_sets_are_in_the_registry` checks every name against the
registry as opentelemetry-semantic-conventions ships it, so a typo here cannot pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ferrule.agent import Agent
from ferrule.agent import InstrumentationSettings
from ferrule.agent import ModelRetry
from ferrule.agent._instrument import SEMCONV_VERSION
from ferrule.agent._instrument import provider_name
from ferrule.core.settings import ModelSettings
from ferrule.core.url_policy import UrlPolicy
from ferrule.providers.openai import OpenAIChatModel
from ferrule.providers.openai import OpenAIProvider
from tests.support.chat_server import StartChatServer
from tests.support.chat_server import Turn
from tests.support.chat_server import chat_server

__all__ = ["chat_server"]

pytestmark = pytest.mark.anyio

VERSION = "1.44.0"
"""The semantic conventions version these sets are written from."""

_CONTENT = {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions"}
_USAGE = {
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.cache_read.input_tokens",
    "gen_ai.usage.cache_creation.input_tokens",
    "gen_ai.usage.reasoning.output_tokens",
}
_REQUEST = {
    "gen_ai.request.model",
    "gen_ai.request.max_tokens",
    "gen_ai.request.temperature",
    "gen_ai.request.top_p",
    "gen_ai.request.top_k",
    "gen_ai.request.seed",
    "gen_ai.request.stop_sequences",
    "gen_ai.request.frequency_penalty",
    "gen_ai.request.presence_penalty",
    "gen_ai.request.choice.count",
}

SPAN_ATTRIBUTES: dict[str, set[str]] = {
    # Inference span ("{gen_ai.operation.name} {gen_ai.request.model}", kind CLIENT).
    "chat": {
        "gen_ai.operation.name",
        "gen_ai.provider.name",
        "gen_ai.conversation.id",
        "gen_ai.output.type",
        "gen_ai.response.id",
        "gen_ai.response.model",
        "gen_ai.response.finish_reasons",
        "gen_ai.tool.definitions",
        "server.address",
        "server.port",
        "error.type",
        *_REQUEST,
        *_USAGE,
        *_CONTENT,
    },
    # Invoke-agent span ("invoke_agent {gen_ai.agent.name}").
    "invoke_agent": {
        "gen_ai.operation.name",
        "gen_ai.provider.name",
        "gen_ai.agent.name",
        "gen_ai.agent.id",
        "gen_ai.agent.description",
        "gen_ai.agent.version",
        "gen_ai.conversation.id",
        "gen_ai.data_source.id",
        "gen_ai.output.type",
        "gen_ai.response.id",
        "gen_ai.response.model",
        "gen_ai.response.finish_reasons",
        "gen_ai.tool.definitions",
        "server.address",
        "server.port",
        "error.type",
        *_REQUEST,
        *_USAGE,
        *_CONTENT,
    },
    # Execute-tool span ("execute_tool {gen_ai.tool.name}", kind INTERNAL).
    "execute_tool": {
        "gen_ai.operation.name",
        "gen_ai.tool.name",
        "gen_ai.tool.call.id",
        "gen_ai.tool.description",
        "gen_ai.tool.type",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
        "error.type",
    },
}
"""The attributes each GenAI span may carry (besides ferrule's own `ferrule.*` ones)."""

REQUIRED_SPAN_ATTRIBUTES: dict[str, set[str]] = {
    "chat": {
        "gen_ai.operation.name",
        "gen_ai.provider.name",
        "gen_ai.request.model",
        "server.address",
        "server.port",
    },
    "invoke_agent": {"gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.agent.name"},
    "execute_tool": {
        "gen_ai.operation.name",
        "gen_ai.tool.name",
        "gen_ai.tool.call.id",
        "gen_ai.tool.description",
    },
}
"""What these runs must carry: required or conditionally required there, or recommended and known."""

_METRIC_COMMON = {
    "gen_ai.operation.name",
    "gen_ai.provider.name",
    "gen_ai.request.model",
    "gen_ai.response.model",
    "server.address",
    "server.port",
}
METRIC_ATTRIBUTES: dict[str, set[str]] = {
    "gen_ai.client.token.usage": {*_METRIC_COMMON, "gen_ai.token.type"},
    "gen_ai.client.operation.duration": {*_METRIC_COMMON, "error.type"},
}
"""The GenAI client metrics and their attributes."""

CLIENT_OPERATIONS = {"chat", "generate_content", "text_completion", "embeddings", "retrieval"}
"""Operations `gen_ai.client.*` metrics describe: calls to a model, not tools or the agent itself."""

PROVIDER_NAMES = {
    "openai",
    "gcp.gen_ai",
    "gcp.vertex_ai",
    "gcp.gemini",
    "anthropic",
    "cohere",
    "azure.ai.inference",
    "azure.ai.openai",
    "ibm.watsonx.ai",
    "aws.bedrock",
    "perplexity",
    "x_ai",
    "deepseek",
    "groq",
    "mistral_ai",
}
"""The registered `gen_ai.provider.name` values."""


def test_the_version_is_the_one_the_code_and_docs_name() -> None:
    assert SEMCONV_VERSION == VERSION
    page = Path(__file__).resolve().parents[1] / "docs" / "extensions.md"  # its OpenTelemetry section
    assert f"OpenTelemetry semantic conventions {VERSION}" in " ".join(
        page.read_text(encoding="utf-8").split()
    )


def test_the_allowed_sets_are_in_the_registry() -> None:
    schemas = pytest.importorskip("opentelemetry.semconv.schemas")
    if "V1_44_0" not in {s.name for s in schemas.Schemas}:
        pytest.skip("opentelemetry-semantic-conventions predates the 1.44.0 registry")
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes
    from opentelemetry.semconv._incubating.metrics import gen_ai_metrics
    from opentelemetry.semconv.attributes import error_attributes
    from opentelemetry.semconv.attributes import server_attributes

    def names(module: Any) -> set[str]:
        found: set[str] = set()
        for key in dir(module):
            value: object = getattr(module, key)
            if key.isupper() and isinstance(value, str):
                found.add(value)
        return found

    registry = names(gen_ai_attributes) | names(server_attributes) | names(error_attributes)
    written = set[str]().union(*SPAN_ATTRIBUTES.values(), *METRIC_ATTRIBUTES.values())
    assert written - registry == set()
    assert set(METRIC_ATTRIBUTES) <= names(gen_ai_metrics)
    # Deprecated in the Python package only because the GenAI registry moved to its own repository.
    provider_values: Any = getattr(gen_ai_attributes, "GenAiProviderNameValues")  # noqa: B009
    operation_values: Any = getattr(gen_ai_attributes, "GenAiOperationNameValues")  # noqa: B009
    assert {e.value for e in provider_values} == PROVIDER_NAMES
    operations = {e.value for e in operation_values}
    assert {"chat", "invoke_agent", "execute_tool"} | CLIENT_OPERATIONS <= operations


@pytest.mark.parametrize(
    ("ferrule", "registered"),
    [
        ("openai", "openai"),
        ("anthropic", "anthropic"),
        ("google-gla", "gcp.gemini"),
        ("google-vertex", "gcp.vertex_ai"),
        ("azure", "azure.ai.openai"),
        ("bedrock", "aws.bedrock"),
        ("groq", "groq"),
        ("deepseek", "deepseek"),
        ("mistral", "mistral_ai"),
        ("xai", "x_ai"),
    ],
)
def test_provider_names_are_the_registered_values(ferrule: str, registered: str) -> None:
    assert provider_name(ferrule) == registered
    assert registered in PROVIDER_NAMES


def test_an_unregistered_provider_keeps_its_own_name() -> None:
    assert provider_name("ollama") == "ollama"  # the conventions: a custom value when none applies


def _check_attributes(where: str, attributes: Mapping[str, Any], allowed: set[str]) -> None:
    for key in attributes:
        if key.startswith("ferrule."):
            continue
        assert key in allowed, f"{where}: {key!r} is not a {VERSION} attribute of it"


async def test_every_span_and_metric_follows_the_conventions(chat_server: StartChatServer) -> None:
    server = chat_server(
        [
            Turn(tool_calls=[("weather", {"city": "Paris"}), ("broken", {})]),
            Turn(text="Sunny in Paris."),
        ]
    )
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    settings = InstrumentationSettings(
        tracer_provider=tracer_provider,
        meter_provider=MeterProvider(metric_readers=[reader]),
        include_content=True,
    )
    provider = OpenAIProvider(
        api_key="sk-test-key", base_url=server.base_url, url_policy=UrlPolicy.local(server.origin)
    )
    agent = Agent(
        OpenAIChatModel("gpt-4o", provider=provider),
        instructions="Be brief.",
        model_settings=ModelSettings(temperature=0.0, max_tokens=64),
        instrument=settings,
        name="forecaster",
        retries=2,
    )

    @agent.tool_plain
    def weather(city: str) -> str:
        """Get the weather in a city."""
        return f"sunny in {city}"

    @agent.tool_plain
    def broken() -> str:
        """A tool that asks for a retry."""
        raise ModelRetry("not now")

    result = await agent.run("Weather in Paris?")
    assert result.output == "Sunny in Paris."

    spans: Sequence[ReadableSpan] = exporter.get_finished_spans()
    operations = [str((s.attributes or {})["gen_ai.operation.name"]) for s in spans]
    assert sorted(operations) == ["chat", "chat", "execute_tool", "execute_tool", "invoke_agent"]
    origin = urlsplit(server.origin)
    for span in spans:
        attributes = dict(span.attributes or {})
        operation = str(attributes["gen_ai.operation.name"])
        _check_attributes(span.name, attributes, SPAN_ATTRIBUTES[operation])
        missing = REQUIRED_SPAN_ATTRIBUTES[operation] - set(attributes)
        assert missing == set(), f"{span.name} lacks {missing}"
        if operation == "chat":
            assert span.name == "chat gpt-4o"
            assert (attributes["server.address"], attributes["server.port"]) == (origin.hostname, origin.port)
            assert attributes["gen_ai.provider.name"] == "openai"
        elif operation == "execute_tool":
            assert span.name == f"execute_tool {attributes['gen_ai.tool.name']}"
        else:
            assert span.name == "invoke_agent forecaster"
    descriptions = {
        (s.attributes or {})["gen_ai.tool.name"]: (s.attributes or {})["gen_ai.tool.description"]
        for s in spans
        if (s.attributes or {})["gen_ai.operation.name"] == "execute_tool"
    }
    assert descriptions == {
        "weather": "Get the weather in a city.",
        "broken": "A tool that asks for a retry.",
    }

    data = reader.get_metrics_data()
    assert data is not None
    metrics = [m for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics]
    assert {m.name for m in metrics} >= set(METRIC_ATTRIBUTES)
    for metric in metrics:
        points: list[Any] = list(metric.data.data_points)
        assert points, metric.name
        if metric.name.startswith("ferrule."):
            for point in points:
                allowed = set[str]().union(
                    *METRIC_ATTRIBUTES.values(), {"gen_ai.tool.name", "gen_ai.agent.name"}
                )
                _check_attributes(metric.name, dict(point.attributes or {}), allowed)
            continue
        assert metric.name in METRIC_ATTRIBUTES, f"{metric.name} is not a {VERSION} GenAI metric"
        for point in points:
            attributes = dict(point.attributes or {})
            _check_attributes(metric.name, attributes, METRIC_ATTRIBUTES[metric.name])
            assert attributes["gen_ai.operation.name"] in CLIENT_OPERATIONS, (metric.name, attributes)
            assert attributes["server.address"] == origin.hostname
