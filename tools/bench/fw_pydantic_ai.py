"""PydanticAI's side of every workload (the reference peer), written the way its documentation
shows: `Agent` + `tool_plain`, `FunctionModel` for no-network runs, `OpenAIChatModel` /
`OpenAIResponsesModel` on an `OpenAIProvider` pointed at the mock server."""

# pyright: basic, reportMissingImports=false
from __future__ import annotations

import functools
import itertools
import time
from collections.abc import AsyncIterator
from collections.abc import Awaitable
from collections.abc import Callable
from typing import Any

from tools.bench._common import API_KEY
from tools.bench._common import MODEL
from tools.bench._common import PROMPT
from tools.bench._common import TEXT
from tools.bench._common import TEXT_PIECES
from tools.bench._common import UI_PIECES
from tools.bench._common import UI_REQUEST
from tools.bench._common import add
from tools.bench._common import http_client
from tools.bench._common import long_history

NAME = "pydantic_ai"


class Bench:
    """PydanticAI's side of every workload."""

    name = NAME

    def __init__(self) -> None:
        from pydantic_ai.usage import UsageLimits

        self.client = http_client()
        self.marks: list[int] = []
        # PydanticAI stops a run at 50 requests by default; the long-loop workload needs more.
        self.limits = UsageLimits(request_limit=None, tool_calls_limit=None)

    async def aclose(self) -> None:
        """Close the shared client."""
        await self.client.aclose()

    def _agent(self, model: Any, tools: bool = True) -> Any:
        from pydantic_ai import Agent

        agent: Any = Agent(model)
        if tools:
            marks = self.marks

            @agent.tool_plain
            async def add(a: int, b: int) -> int:
                """Add two integers."""
                marks.append(time.perf_counter_ns())
                return a + b

        return agent

    def _model(self, base: str, api: str) -> Any:
        from pydantic_ai.providers.openai import OpenAIProvider

        provider = OpenAIProvider(base_url=base, api_key=API_KEY, http_client=self.client)
        if api == "chat":
            from pydantic_ai.models.openai import OpenAIChatModel

            return OpenAIChatModel(MODEL, provider=provider)
        from pydantic_ai.models.openai import OpenAIResponsesModel

        return OpenAIResponsesModel(MODEL, provider=provider)

    # -- workloads ---------------------------------------------------------------------------------

    def graph(self, shape: str, size: int) -> Callable[[], Awaitable[int]]:
        """Workload 9: pydantic-graph (PydanticAI's graph library)."""
        return _pydantic_graph(shape, size)

    def fn_run(self, stream: bool) -> Callable[[], Awaitable[str]]:
        """Workload 2: a two-step run (tool call, then text) on `FunctionModel`."""
        return self._runner(self._agent(self._function_model()), stream)

    def _function_model(self, pieces: tuple[str, ...] = TEXT_PIECES) -> Any:
        """The two-step function model of workloads 2, 10c and 12 (tool call, then text)."""
        from pydantic_ai.messages import ModelResponse
        from pydantic_ai.messages import TextPart
        from pydantic_ai.messages import ToolCallPart
        from pydantic_ai.messages import ToolReturnPart
        from pydantic_ai.models.function import DeltaToolCall
        from pydantic_ai.models.function import FunctionModel
        from pydantic_ai.usage import RequestUsage

        # Reported usage, as a provider reports it: without it both function models estimate
        # tokens by walking the whole history on every request, which is not the loop's cost.
        usage = functools.partial(RequestUsage, input_tokens=20, output_tokens=10)

        def answered(messages: list[Any]) -> bool:
            return any(isinstance(p, ToolReturnPart) for p in messages[-1].parts)

        async def function(messages: list[Any], info: Any) -> Any:
            if answered(messages):
                return ModelResponse(parts=[TextPart(TEXT)], usage=usage())
            return ModelResponse(
                parts=[ToolCallPart("add", {"a": 1, "b": 2}, tool_call_id="call_1")], usage=usage()
            )

        async def stream_function(messages: list[Any], info: Any) -> AsyncIterator[Any]:
            if answered(messages):
                for piece in pieces:
                    yield piece
            else:
                yield {0: DeltaToolCall(name="add", json_args='{"a":1,"b":2}', tool_call_id="call_1")}

        return FunctionModel(function, stream_function=stream_function)

    def ui_stream(self) -> Callable[[], Awaitable[int]]:
        """Workload 12: an AI SDK chat request body to the run's UI message stream records, through
        `VercelAIAdapter` (what its `dispatch_request` does for a post, without HTTP)."""
        from pydantic_ai.ui.vercel_ai import VercelAIAdapter

        agent = self._agent(self._function_model(UI_PIECES))
        limits = self.limits

        async def run_once() -> int:
            adapter: Any = VercelAIAdapter(agent, VercelAIAdapter.build_run_input(UI_REQUEST))
            deltas = 0
            async for record in adapter.encode_stream(adapter.run_stream(usage_limits=limits)):
                deltas += '"text-delta"' in record
            return deltas

        return run_once

    def instantiate(self, base: str) -> Callable[[], Any]:
        """Workload 10: `Agent(model, tools=[add])`, the model built once."""
        from pydantic_ai import Agent

        model = self._model(base, "chat")
        return lambda: Agent(model, tools=[add])

    def first_run(self) -> Callable[[], Awaitable[str]]:
        """Workload 10c: a new `Agent(model, tools=[add])`, then its first (two-step) run, no network."""
        from pydantic_ai import Agent

        model = self._function_model()

        async def run_once() -> str:
            agent: Any = Agent(model, tools=[add])
            result = await agent.run(PROMPT, usage_limits=self.limits)
            return result.output

        return run_once

    def _runner(self, agent: Any, stream: bool) -> Callable[[], Awaitable[str]]:
        limits = self.limits
        if not stream:

            async def run_once() -> str:
                result = await agent.run(PROMPT, usage_limits=limits)
                return result.output

            return run_once

        async def run_stream_once() -> str:
            pieces: list[str] = []
            async with agent.run_stream(PROMPT, usage_limits=limits) as result:
                async for delta in result.stream_text(delta=True, debounce_by=None):
                    pieces.append(delta)
            return "".join(pieces)

        return run_stream_once

    def e2e(self, base: str, api: str, stream: bool) -> Callable[[], Awaitable[str]]:
        """Workloads 3, 5 and 8: one tool-calling run against the mock server."""
        return self._runner(self._agent(self._model(base, api)), stream)

    def long_step(self, base: str, n: int) -> Callable[[], Awaitable[str]]:
        """Workload 11: one more step (a new run) on the same `n`-message history, Chat Completions."""
        from pydantic_ai.messages import ModelMessage
        from pydantic_ai.messages import ModelRequest
        from pydantic_ai.messages import ModelResponse
        from pydantic_ai.messages import TextPart
        from pydantic_ai.messages import UserPromptPart

        agent = self._agent(self._model(base, "chat"), tools=False)
        history: list[ModelMessage] = [
            ModelRequest(parts=[UserPromptPart(content=text)])
            if role == "user"
            else ModelResponse(parts=[TextPart(content=text)])
            for role, text in long_history(n)
        ]

        async def run_once() -> str:
            result = await agent.run(PROMPT, message_history=history)
            return result.output

        return run_once

    def stream_text(self, base: str, api: str) -> Callable[[], Awaitable[int]]:
        """Workload 4: one streamed text answer, every delta seen (no debouncing)."""
        agent = self._agent(self._model(base, api), tools=False)
        limits = self.limits

        async def run_once() -> int:
            count = 0
            async with agent.run_stream(PROMPT, usage_limits=limits) as result:
                async for _delta in result.stream_text(delta=True, debounce_by=None):
                    count += 1
            return count

        return run_once

    def fn_loop(self, steps: int) -> Callable[[], Awaitable[list[int]]]:
        """Workload 7a: a tool loop of `steps` steps on `FunctionModel`."""
        from pydantic_ai.messages import ModelResponse
        from pydantic_ai.messages import TextPart
        from pydantic_ai.messages import ToolCallPart
        from pydantic_ai.models.function import FunctionModel
        from pydantic_ai.usage import RequestUsage

        state = {"count": 0}
        usage = functools.partial(RequestUsage, input_tokens=20, output_tokens=10)

        async def function(messages: list[Any], info: Any) -> Any:
            state["count"] += 1
            if state["count"] > steps:
                return ModelResponse(parts=[TextPart(TEXT)], usage=usage())
            call = ToolCallPart("add", {"a": 1, "b": 2}, tool_call_id=f"call_{state['count']}")
            return ModelResponse(parts=[call], usage=usage())

        agent = self._agent(FunctionModel(function))
        limits = self.limits

        async def run_once() -> list[int]:
            state["count"] = 0
            self.marks.clear()
            await agent.run(PROMPT, usage_limits=limits)
            return list(self.marks)

        return run_once

    def net_loop(self, base: str, api: str) -> Callable[[], Awaitable[list[int]]]:
        """Workload 7b: a long tool loop against the mock server."""
        agent = self._agent(self._model(base, api))
        limits = self.limits

        async def run_once() -> list[int]:
            self.marks.clear()
            await agent.run(PROMPT, usage_limits=limits)
            return list(self.marks)

        return run_once

    # -- history -----------------------------------------------------------------------------------

    def history(self, conversation: bytes) -> tuple[Any, Callable[[Any], Any]]:
        """Workload 6: `ModelMessagesTypeAdapter` dump + validate of a typed history."""
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        messages = ModelMessagesTypeAdapter.validate_json(conversation)

        def round_trip(obj: Any) -> Any:
            return ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(obj))

        return messages, round_trip

    def decode_pydantic_ai(self, data: bytes) -> Callable[[], Any]:
        """Workload 6: decode a PydanticAI-written history."""
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        return lambda: ModelMessagesTypeAdapter.validate_json(data)


def write_history(n: int) -> bytes:
    """A PydanticAI-written history of `n` messages: user prompt, then tool-call / tool-return /
    text rounds, the shape of a long agent conversation."""
    from datetime import UTC
    from datetime import datetime

    from pydantic_ai.messages import ModelMessagesTypeAdapter
    from pydantic_ai.messages import ModelRequest
    from pydantic_ai.messages import ModelResponse
    from pydantic_ai.messages import SystemPromptPart
    from pydantic_ai.messages import TextPart
    from pydantic_ai.messages import ToolCallPart
    from pydantic_ai.messages import ToolReturnPart
    from pydantic_ai.messages import UserPromptPart
    from pydantic_ai.usage import RequestUsage

    when = datetime(2025, 1, 1, tzinfo=UTC)
    messages: list[Any] = [
        ModelRequest(
            parts=[
                SystemPromptPart("You are a calculator.", timestamp=when),
                UserPromptPart(PROMPT, timestamp=when),
            ]
        )
    ]
    i = 0
    while len(messages) < n:
        i += 1
        if i % 2:
            messages.append(
                ModelResponse(
                    parts=[ToolCallPart("add", {"a": i, "b": 2}, tool_call_id=f"call_{i}")],
                    usage=RequestUsage(input_tokens=20 + i, output_tokens=10),
                    model_name=MODEL,
                    timestamp=when,
                    provider_name="openai",
                )
            )
            messages.append(
                ModelRequest(parts=[ToolReturnPart("add", i + 2, tool_call_id=f"call_{i}", timestamp=when)])
            )
        else:
            messages.append(
                ModelResponse(
                    parts=[TextPart(f"The answer is {i + 2}. " * 4)],
                    usage=RequestUsage(input_tokens=20 + i, output_tokens=10),
                    model_name=MODEL,
                    timestamp=when,
                    provider_name="openai",
                )
            )
            messages.append(ModelRequest(parts=[UserPromptPart(f"And {i} + 2?", timestamp=when)]))
    return ModelMessagesTypeAdapter.dump_json(messages[:n])


def _pydantic_graph(shape: str, size: int) -> Callable[[], Awaitable[int]]:
    """Workload 9 with pydantic-graph's builder API (the same steps and fan-out, instrumentation
    off as in ferrule): steps chained with edges, or a broadcast to `size` steps joined with
    `reduce_sum`."""
    from pydantic_graph import GraphBuilder
    from pydantic_graph import reduce_sum

    # Unannotated: pydantic-graph evaluates step annotations in the module's globals, where the
    # lazily imported StepContext is not (the edges below are explicit, so nothing is inferred).
    async def add_one(ctx):
        return ctx.inputs + 1

    g: Any = GraphBuilder(input_type=int, output_type=int, auto_instrument=False)
    if shape == "linear":
        steps = [g.step(add_one, node_id=f"s{i}") for i in range(size)]
        g.add_edge(g.start_node, steps[0])
        for a, b in itertools.pairwise(steps):
            g.add_edge(a, b)
        g.add_edge(steps[-1], g.end_node)
    else:

        async def source(ctx):
            return ctx.inputs

        src = g.step(source, node_id="source")
        branches = [g.step(add_one, node_id=f"b{i}") for i in range(size)]
        join = g.join(reduce_sum, initial=0, node_id="join")
        g.add(
            g.edge_from(g.start_node).to(src),
            g.edge_from(src).to(*branches),
            g.edge_from(*branches).to(join),
            g.edge_from(join).to(g.end_node),
        )
    graph = g.build()

    async def run_once() -> int:
        return await graph.run(inputs=0)

    return run_once
