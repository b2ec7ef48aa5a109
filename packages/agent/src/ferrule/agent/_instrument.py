"""OpenTelemetry spans for agent runs, model requests and tool calls (GenAI semantic conventions).

Nothing here imports `opentelemetry` until an agent is built with `instrument=...`; without it the
loop pays one `None` check per request and per tool call.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from ferrule.core.messages import ModelResponse, ToolCallPart
    from ferrule.core.model import Model, ModelCall
    from ferrule.core.usage import RunUsage


class InstrumentationSettings(msgspec.Struct, frozen=True, kw_only=True):
    """How an agent reports to OpenTelemetry."""

    tracer_provider: Any = None
    """The tracer provider to use; `None` uses the global one."""
    include_content: bool = False
    """Record prompts, tool arguments and results on spans (off by default: they may be sensitive)."""


class _Span:
    __slots__ = ("_otel", "_span")

    def __init__(self, otel: Any, span: Any) -> None:
        self._otel = otel
        self._span = span

    @property
    def context(self) -> Any:
        return self._otel.trace.set_span_in_context(self._span)

    def set(self, key: str, value: Any) -> None:
        if value is not None:
            self._span.set_attribute(key, value)

    def fail(self, exc: BaseException) -> None:
        self._span.record_exception(exc)
        self._span.set_status(self._otel.trace.Status(self._otel.trace.StatusCode.ERROR, type(exc).__name__))
        self._span.set_attribute("error.type", type(exc).__qualname__)
        self._span.end()

    def finish_ok(self) -> None:
        self._span.end()

    def finish_error(self, kind: str) -> None:
        self._span.set_attribute("error.type", kind)
        self._span.end()

    def finish(self, response: ModelResponse) -> None:
        usage = response.usage
        self.set("gen_ai.response.model", response.model_name)
        self.set("gen_ai.response.id", response.provider_response_id)
        if response.finish_reason is not None:
            self._span.set_attribute("gen_ai.response.finish_reasons", [response.finish_reason])
        self._span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
        self._span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
        if usage.cache_read_tokens:
            self._span.set_attribute("gen_ai.usage.cache_read.input_tokens", usage.cache_read_tokens)
        self._span.end()

    def finish_run(self, usage: RunUsage) -> None:
        self._span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
        self._span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
        self._span.end()


class Tracer:
    """Creates the spans of one agent; built only when instrumentation is enabled."""

    __slots__ = ("_otel", "_tracer", "agent_name", "include_content", "parent")

    def __init__(self, settings: InstrumentationSettings, agent_name: str) -> None:
        import opentelemetry.trace as trace

        class _Otel:
            pass

        otel: Any = _Otel()
        otel.trace = trace
        self._otel = otel
        provider = settings.tracer_provider or trace.get_tracer_provider()
        self._tracer = provider.get_tracer("ferrule.agent")
        self.include_content = settings.include_content
        self.agent_name = agent_name
        self.parent: Any = None

    def _start(self, name: str, attributes: dict[str, Any], parent: Any) -> _Span:
        span = self._tracer.start_span(
            name, context=parent, attributes=attributes, kind=self._otel.trace.SpanKind.INTERNAL
        )
        return _Span(self._otel, span)

    def run_span(self, model: Model) -> _Span:
        """The span of one agent invocation."""
        return self._start(
            f"invoke_agent {self.agent_name}",
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": self.agent_name,
                "gen_ai.request.model": model.model_name,
                "gen_ai.provider.name": model.provider_name,
            },
            None,
        )

    def model_span(self, model: Model, call: ModelCall, parent: Any) -> _Span:
        """The span of one model request."""
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": model.model_name,
            "gen_ai.provider.name": model.provider_name,
        }
        settings = call.settings
        if settings.max_tokens is not None:
            attributes["gen_ai.request.max_tokens"] = settings.max_tokens
        if settings.temperature is not None:
            attributes["gen_ai.request.temperature"] = settings.temperature
        if self.include_content and call.instructions:
            attributes["gen_ai.system_instructions"] = call.instructions
        return self._start(f"chat {model.model_name}", attributes, parent)

    def tool_span(self, name: str, part: ToolCallPart, parent: Any) -> _Span:
        """The span of one tool call."""
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": part.tool_call_id,
            "gen_ai.tool.type": "function",
        }
        if self.include_content:
            attributes["gen_ai.tool.call.arguments"] = (
                part.args if isinstance(part.args, str) else json.dumps(part.args)
            )
        return self._start(f"execute_tool {name}", attributes, parent)
