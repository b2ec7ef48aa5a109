"""OpenTelemetry spans and metrics for agent runs (GenAI semantic conventions).

Nothing here imports `opentelemetry` until an agent is built with `instrument=...`; without it the
loop pays one `None` check per request and per tool call. Every call into OpenTelemetry is
fail-open: an exception from the SDK, a span processor or an exporter is logged and never ends a
run.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Any
from typing import cast

import msgspec

if TYPE_CHECKING:
    from ferrule.core.messages import Message
    from ferrule.core.messages import ModelResponse
    from ferrule.core.messages import RetryPromptPart
    from ferrule.core.messages import ToolCallPart
    from ferrule.core.messages import ToolReturnPart
    from ferrule.core.model import Model
    from ferrule.core.model import ModelCall
    from ferrule.core.usage import RunUsage

    from ._context import RunContext
    from ._sync_tools import ToolThreads
    from ._tools import Tool
    from .correlation import RunCorrelation

__all__ = ["InstrumentationSettings", "Tracer"]


class InstrumentationSettings(msgspec.Struct, frozen=True, kw_only=True):
    """How an agent reports to OpenTelemetry."""

    tracer_provider: Any = None
    """The tracer provider to use; `None` uses the global one."""
    meter_provider: Any = None
    """The meter provider for the GenAI metrics; `None` uses the global one."""
    include_content: bool = False
    """Record prompts, responses, tool arguments and results (off by default: they may be sensitive)."""
    metrics: bool = True
    """Record `gen_ai.client.token.usage`, `gen_ai.client.operation.duration` and ferrule's counters."""


def _fail_open(what: str, exc: BaseException) -> None:
    import logging  # only on failures: keeps the import of the agent package light

    logging.getLogger("ferrule.agent.instrument").warning(
        "OpenTelemetry failed while %s (ignored): %r", what, exc
    )


def _json(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return msgspec.json.encode(value).decode()
    except (TypeError, msgspec.EncodeError):
        return repr(value)


class _Span:
    __slots__ = ("_metric_attrs", "_span", "_started", "_tracer", "otel")

    def __init__(self, tracer: Tracer, span: Any, metric_attrs: dict[str, Any] | None) -> None:
        self._tracer = tracer
        self.otel = tracer.otel
        self._span = span
        self._started = time.perf_counter()
        self._metric_attrs = metric_attrs

    @property
    def context(self) -> Any:
        try:
            return self.otel.trace.set_span_in_context(self._span)
        except Exception as exc:
            _fail_open("building a span context", exc)
            return None

    def set(self, key: str, value: Any) -> None:
        if value is None:
            return
        try:
            self._span.set_attribute(key, value)
        except Exception as exc:
            _fail_open("setting a span attribute", exc)

    async def call(self, tool: Tool[Any], ctx: RunContext[Any], args: Any, threads: ToolThreads) -> Any:
        """Run a tool with this span current, so nested agent runs and client spans nest under it."""
        token: Any = None
        try:
            token = self.otel.context.attach(self.context)
        except Exception as exc:
            _fail_open("attaching the tool span", exc)
        try:
            return await tool.call(ctx, args, threads=threads)
        finally:
            if token is not None:
                try:
                    self.otel.context.detach(token)
                except Exception as exc:
                    _fail_open("detaching the tool span", exc)

    def _end(self, error_type: str | None = None) -> None:
        try:
            self._span.end()
        except Exception as exc:
            _fail_open("ending a span", exc)
        if self._metric_attrs is not None:
            attrs = dict(self._metric_attrs)
            if error_type is not None:
                attrs["error.type"] = error_type
            self._tracer.record_duration(time.perf_counter() - self._started, attrs)

    def fail(self, exc: BaseException) -> None:
        name = type(exc).__qualname__
        try:
            self._span.record_exception(exc)
            self._span.set_status(
                self.otel.trace.Status(self.otel.trace.StatusCode.ERROR, type(exc).__name__)
            )
            self._span.set_attribute("error.type", name)
        except Exception as failure:
            _fail_open("recording an error", failure)
        self._end(name)

    def finish_error(self, kind: str) -> None:
        self.set("error.type", kind)
        self._end(kind)

    def finish_result(self, result: ToolReturnPart | RetryPromptPart) -> None:
        """End a tool span with its result (content only when enabled)."""
        from ferrule.core.messages import RetryPromptPart

        if self._tracer.include_content:
            self.set("gen_ai.tool.call.result", _json(result.content))
        if isinstance(result, RetryPromptPart):
            self.finish_error("retry")
        elif result.outcome != "success":
            self.finish_error(result.outcome)
        else:
            self._end()

    def finish(self, response: ModelResponse) -> None:
        """End a chat span with the response's model, finish reason and usage."""
        usage = response.usage
        self.set("gen_ai.response.model", response.model_name)
        self.set("gen_ai.response.id", response.provider_response_id)
        if response.finish_reason is not None:
            self.set("gen_ai.response.finish_reasons", [response.finish_reason])
        self.set("gen_ai.usage.input_tokens", usage.input_tokens)
        self.set("gen_ai.usage.output_tokens", usage.output_tokens)
        if usage.cache_read_tokens:
            self.set("gen_ai.usage.cache_read.input_tokens", usage.cache_read_tokens)
        if usage.cache_write_tokens:
            self.set("gen_ai.usage.cache_creation.input_tokens", usage.cache_write_tokens)
        reasoning = usage.output_reasoning_tokens or usage.details.get("reasoning_tokens", 0)
        if reasoning:
            self.set("gen_ai.usage.reasoning.output_tokens", reasoning)
        if self._tracer.include_content:
            self.set("gen_ai.output.messages", _json([_output_message(response)]))
        if self._metric_attrs is not None:
            attrs = dict(self._metric_attrs)
            if response.model_name:
                attrs["gen_ai.response.model"] = response.model_name
            self._tracer.record_tokens(usage.input_tokens, usage.output_tokens, attrs)
            self._metric_attrs = attrs
        self._end()

    def finish_run(self, usage: RunUsage) -> None:
        """End an agent span with the run's totals."""
        self.set("gen_ai.usage.input_tokens", usage.input_tokens)
        self.set("gen_ai.usage.output_tokens", usage.output_tokens)
        self.set("ferrule.usage.requests", usage.requests)
        self.set("ferrule.usage.tool_calls", usage.tool_calls)
        if usage.cost_nano_usd is not None:
            self.set("ferrule.usage.cost_nano_usd", usage.cost_nano_usd)
            self._tracer.record_cost(usage.cost_nano_usd, {"gen_ai.agent.name": self._tracer.agent_name})
        self._end()


def _input_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    from ferrule.core.messages import ModelRequest
    from ferrule.core.messages import RetryPromptPart
    from ferrule.core.messages import SystemPromptPart
    from ferrule.core.messages import ToolReturnPart
    from ferrule.core.messages import UserPromptPart

    result: list[dict[str, Any]] = []
    for message in messages:
        if not isinstance(message, ModelRequest):
            result.append(_output_message(message))
            continue
        for part in message.parts:
            if isinstance(part, SystemPromptPart):
                result.append({"role": "system", "parts": [{"type": "text", "content": part.content}]})
            elif isinstance(part, UserPromptPart):
                items: list[Any] = [part.content] if isinstance(part.content, str) else list(part.content)
                parts: list[dict[str, Any]] = []
                for item in items:
                    if isinstance(item, str):
                        parts.append({"type": "text", "content": item})
                    elif isinstance(getattr(item, "url", None), str):
                        parts.append({"type": "uri", "uri": item.url})
                    elif isinstance(getattr(item, "content", None), str):
                        parts.append({"type": "text", "content": item.content})
                    else:
                        parts.append({"type": "blob", "mime_type": getattr(item, "media_type", None)})
                result.append({"role": "user", "parts": parts})
            elif isinstance(part, ToolReturnPart):
                result.append(
                    {
                        "role": "tool",
                        "parts": [
                            {"type": "tool_call_response", "id": part.tool_call_id, "response": part.content}
                        ],
                    }
                )
            elif isinstance(part, RetryPromptPart):
                if part.tool_name is None:
                    result.append(
                        {"role": "user", "parts": [{"type": "text", "content": part.model_response()}]}
                    )
                else:
                    result.append(
                        {
                            "role": "tool",
                            "parts": [
                                {
                                    "type": "tool_call_response",
                                    "id": part.tool_call_id,
                                    "response": part.model_response(),
                                }
                            ],
                        }
                    )
    return result


def _output_message(response: ModelResponse) -> dict[str, Any]:
    from ferrule.core.messages import TextPart
    from ferrule.core.messages import ThinkingPart
    from ferrule.core.messages import ToolCallPart

    parts: list[dict[str, Any]] = []
    for part in response.parts:
        if isinstance(part, TextPart):
            parts.append({"type": "text", "content": part.content})
        elif isinstance(part, ThinkingPart):
            parts.append({"type": "reasoning", "content": part.content})
        elif isinstance(part, ToolCallPart):
            parts.append(
                {"type": "tool_call", "id": part.tool_call_id, "name": part.tool_name, "arguments": part.args}
            )
    message: dict[str, Any] = {"role": "assistant", "parts": parts}
    if response.finish_reason is not None:
        message["finish_reason"] = response.finish_reason
    return message


class _NoSpan(_Span):
    """Stands in when OpenTelemetry failed to start a span."""

    def __init__(self, tracer: Tracer) -> None:
        super().__init__(tracer, None, None)

    @property
    def context(self) -> Any:
        return None

    def set(self, key: str, value: Any) -> None:
        return None

    async def call(self, tool: Tool[Any], ctx: RunContext[Any], args: Any, threads: ToolThreads) -> Any:
        return await tool.call(ctx, args, threads=threads)

    def _end(self, error_type: str | None = None) -> None:
        return None

    def fail(self, exc: BaseException) -> None:
        return None


class Tracer:
    """Creates the spans and records the metrics of one agent; built only when instrumentation is on."""

    __slots__ = (
        "_cost",
        "_duration",
        "_tokens",
        "_tool_calls",
        "_tracer",
        "agent_name",
        "include_content",
        "otel",
        "parent",
    )

    def __init__(self, settings: InstrumentationSettings, agent_name: str) -> None:
        import opentelemetry.context as context
        import opentelemetry.trace as trace

        class _Otel:
            pass

        otel: Any = _Otel()
        otel.trace = trace
        otel.context = context
        self.otel = otel
        provider = settings.tracer_provider or trace.get_tracer_provider()
        self._tracer = provider.get_tracer("ferrule.agent")
        self.include_content = settings.include_content
        self.agent_name = agent_name
        self.parent: Any = None
        self._tokens: Any = None
        self._duration: Any = None
        self._tool_calls: Any = None
        self._cost: Any = None
        if settings.metrics:
            try:
                import opentelemetry.metrics as metrics

                meter = (settings.meter_provider or metrics.get_meter_provider()).get_meter("ferrule.agent")
                self._tokens = meter.create_histogram(
                    "gen_ai.client.token.usage", unit="{token}", description="Tokens used per model request"
                )
                self._duration = meter.create_histogram(
                    "gen_ai.client.operation.duration", unit="s", description="Duration of GenAI operations"
                )
                self._tool_calls = meter.create_counter(
                    "ferrule.agent.tool.calls", unit="{call}", description="Tool calls executed"
                )
                self._cost = meter.create_counter(
                    "ferrule.agent.cost",
                    unit="nUSD",
                    description="Cost of agent runs in nano-USD (known prices only)",
                )
            except Exception as exc:
                _fail_open("creating the meters", exc)

    def _start(self, name: str, attributes: dict[str, Any], parent: Any, kind: str, metric: bool) -> _Span:
        try:
            span = self._tracer.start_span(
                name, context=parent, attributes=attributes, kind=getattr(self.otel.trace.SpanKind, kind)
            )
        except Exception as exc:
            _fail_open(f"starting span {name!r}", exc)
            return _NoSpan(self)
        metric_attrs = (
            {k: v for k, v in attributes.items() if k in _METRIC_KEYS}
            if metric and self._duration is not None
            else None
        )
        return _Span(self, span, metric_attrs)

    def record_duration(self, seconds: float, attributes: dict[str, Any]) -> None:
        try:
            if attributes.get("gen_ai.operation.name") == "execute_tool":
                # The conventions define no duration metric for tool execution: ferrule counts calls.
                if self._tool_calls is not None:
                    self._tool_calls.add(1, attributes)
            elif self._duration is not None:
                self._duration.record(seconds, attributes)
        except Exception as exc:
            _fail_open("recording a duration", exc)

    def record_tokens(self, input_tokens: int, output_tokens: int, attributes: dict[str, Any]) -> None:
        if self._tokens is None:
            return
        try:
            self._tokens.record(input_tokens, {**attributes, "gen_ai.token.type": "input"})
            self._tokens.record(output_tokens, {**attributes, "gen_ai.token.type": "output"})
        except Exception as exc:
            _fail_open("recording token usage", exc)

    def record_cost(self, nano_usd: int, attributes: dict[str, Any]) -> None:
        if self._cost is None:
            return
        try:
            self._cost.add(nano_usd, attributes)
        except Exception as exc:
            _fail_open("recording cost", exc)

    def run_span(
        self,
        model: Model,
        run_id: str | None = None,
        correlation: RunCorrelation | None = None,
        parent: Any = None,
    ) -> _Span:
        """The span of one agent invocation: a child of `parent` (an OpenTelemetry `Context`), else
        of the current context (e.g. a tool span)."""
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": self.agent_name,
            "gen_ai.request.model": model.model_name,
            "gen_ai.provider.name": provider_name(model.provider_name),
        }
        if run_id is not None:
            attributes["ferrule.run.id"] = attributes["ferrule.agent.run.id"] = run_id
        if correlation is not None:
            attributes.update(correlation.span_attributes())
        return self._start(f"invoke_agent {self.agent_name}", attributes, parent, "INTERNAL", False)

    def model_span(self, model: Model, call: ModelCall, parent: Any) -> _Span:
        """The span of one model request."""
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": model.model_name,
            "gen_ai.provider.name": provider_name(model.provider_name),
        }
        server = _server(model)
        if server is not None:
            attributes["server.address"], attributes["server.port"] = server
        settings = call.settings
        for setting in _REQUEST_SETTINGS:
            value = getattr(settings, setting)
            if value is not None:
                attributes[f"gen_ai.request.{setting}"] = value
        if self.include_content:
            try:
                if call.instructions:
                    attributes["gen_ai.system_instructions"] = _json(
                        [{"type": "text", "content": call.instructions}]
                    )
                attributes["gen_ai.input.messages"] = _json(_input_messages(call.messages))
            except Exception as exc:
                _fail_open("encoding the request content", exc)
        return self._start(f"chat {model.model_name}", attributes, parent, "CLIENT", True)

    def tool_span(self, name: str, part: ToolCallPart, parent: Any, description: str | None = None) -> _Span:
        """The span of one tool call."""
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": part.tool_call_id,
            "gen_ai.tool.type": "function",
        }
        if description:
            attributes["gen_ai.tool.description"] = description
        if self.include_content:
            attributes["gen_ai.tool.call.arguments"] = _json(part.args)
        return self._start(f"execute_tool {name}", attributes, parent, "INTERNAL", True)


_REQUEST_SETTINGS = ("max_tokens", "temperature", "top_p")
"""The model settings a chat span records, each as `gen_ai.request.<setting>` when it is set."""

_METRIC_KEYS = frozenset(
    {
        "gen_ai.operation.name",
        "gen_ai.provider.name",
        "gen_ai.request.model",
        "gen_ai.tool.name",  # only on ferrule's own tool-call counter
        "server.address",
        "server.port",
    }
)

SEMCONV_VERSION = "1.44.0"
"""The OpenTelemetry semantic conventions version the spans and metrics follow (GenAI, development)."""

_PROVIDER_NAMES: dict[str, str] = {
    "google-gla": "gcp.gemini",
    "gemini": "gcp.gemini",
    "google-vertex": "gcp.vertex_ai",
    "azure": "azure.ai.openai",
    "bedrock": "aws.bedrock",
    "mistral": "mistral_ai",
    "xai": "x_ai",
}
"""ferrule's provider names whose `gen_ai.provider.name` the conventions spell differently. The other
registered names (`openai`, `anthropic`, `groq`, `deepseek`, `cohere`, `perplexity`) are ferrule's own;
a provider the registry does not list (a local server, the test models) keeps its name, as the
conventions ask."""


def provider_name(name: str) -> str:
    """The `gen_ai.provider.name` of a ferrule provider name."""
    return _PROVIDER_NAMES.get(name, name)


_servers: dict[str, tuple[str, int] | None] = {}


def _server(model: Model) -> tuple[str, int] | None:
    """`server.address` and `server.port` of a model behind an HTTP provider, else `None`."""
    from ferrule.core.codec import CodecModel

    if not isinstance(model, CodecModel):
        return None
    base_url: Any = getattr(cast("Any", model).provider, "base_url", None)
    if not isinstance(base_url, str):
        return None
    if base_url in _servers:
        return _servers[base_url]
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(base_url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        server = (parts.hostname, port) if parts.hostname else None
    except ValueError:
        server = None
    if len(_servers) > 256:  # base URLs are few; stay bounded anyway
        _servers.clear()
    _servers[base_url] = server
    return server
