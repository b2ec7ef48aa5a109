"""ferrule's side of every workload: `Agent` + `tool_plain`, `FunctionModel` for no-network runs,
`OpenAIChatModel` / `OpenAIResponsesModel` on an `OpenAIProvider` pointed at the mock server (a
local URL policy allows exactly its origin), `ferrule.core.history` for histories."""

from __future__ import annotations

import functools
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

NAME = "ferrule"


class Bench:
    """ferrule's side of every workload."""

    name = NAME

    def __init__(self) -> None:
        from ferrule.core.usage import UsageLimits

        self.client = http_client()
        self.marks: list[int] = []
        # Like PydanticAI, ferrule stops a run at 50 requests by default; the long loop needs more.
        self.limits = UsageLimits(request_limit=None)

    async def aclose(self) -> None:
        """Close the shared client."""
        await self.client.aclose()

    def _agent(self, model: Any, tools: bool = True) -> Any:
        from ferrule.agent import Agent

        agent: Any = Agent(model, usage_limits=self.limits)
        if tools:
            marks = self.marks

            @agent.tool_plain
            async def add(a: int, b: int) -> int:
                """Add two integers."""
                marks.append(time.perf_counter_ns())
                return a + b

        return agent

    def _model(self, base: str, api: str) -> Any:
        from ferrule.core.url_policy import UrlPolicy
        from ferrule.providers.openai import OpenAIChatModel
        from ferrule.providers.openai import OpenAIProvider
        from ferrule.providers.openai import OpenAIResponsesModel

        origin = base.split("/", 3)
        provider = OpenAIProvider(
            base_url=base,
            api_key=API_KEY,
            http_client=self.client,
            url_policy=UrlPolicy.local(f"{origin[0]}//{origin[2]}"),
        )
        if api == "chat":
            return OpenAIChatModel(MODEL, provider=provider)
        return OpenAIResponsesModel(MODEL, provider=provider)

    def _runner(self, agent: Any, stream: bool) -> Callable[[], Awaitable[str]]:
        if not stream:

            async def run_once() -> str:
                result = await agent.run(PROMPT)
                return result.output

            return run_once

        async def run_stream_once() -> str:
            pieces: list[str] = []
            async with agent.run_stream(PROMPT) as result:
                async for delta in result.stream_text(delta=True):
                    pieces.append(delta)
            # stream_text also shows text streamed before tool calls; the run's output is the last answer.
            return result.result.output

        return run_stream_once

    # -- workloads ---------------------------------------------------------------------------------

    def fn_run(self, stream: bool) -> Callable[[], Awaitable[str]]:
        """Workload 2: a two-step run (tool call, then text) on `FunctionModel`."""
        return self._runner(self._agent(self._function_model()), stream)

    def _function_model(self, pieces: tuple[str, ...] = TEXT_PIECES) -> Any:
        """The two-step function model of workloads 2, 10c and 12 (tool call, then text)."""
        from ferrule.agent.testing import DeltaToolCall
        from ferrule.agent.testing import FunctionModel
        from ferrule.core.messages import ModelResponse
        from ferrule.core.messages import TextPart
        from ferrule.core.messages import ToolCallPart
        from ferrule.core.messages import ToolReturnPart
        from ferrule.core.usage import RequestUsage

        # Reported usage, as a provider reports it: without it both function models estimate
        # tokens by walking the whole history on every request, which is not the loop's cost.
        usage = functools.partial(RequestUsage, input_tokens=20, output_tokens=10)

        def answered(messages: Any) -> bool:
            return any(isinstance(p, ToolReturnPart) for p in messages[-1].parts)

        async def function(messages: Any, info: Any) -> Any:
            if answered(messages):
                return ModelResponse(parts=[TextPart(TEXT)], usage=usage())
            return ModelResponse(
                parts=[ToolCallPart("add", {"a": 1, "b": 2}, tool_call_id="call_1")], usage=usage()
            )

        async def stream_function(messages: Any, info: Any) -> AsyncIterator[Any]:
            if answered(messages):
                for piece in pieces:
                    yield piece
            else:
                yield {0: DeltaToolCall(name="add", json_args='{"a":1,"b":2}', tool_call_id="call_1")}

        return FunctionModel(function, stream_function=stream_function)

    def ui_stream(self) -> Callable[[], Awaitable[int]]:
        """Workload 12: an AI SDK chat request body to the run's UI message stream records.

        What `ferrule.ui.vercel.app` does for a post, without HTTP: parse and bound the body, make
        the browser's history safe, stream the run through a `UIBridge`, encode every event.
        """
        from ferrule.ui import UIBridge
        from ferrule.ui import sanitize_messages
        from ferrule.ui import vercel

        agent = self._agent(self._function_model(UI_PIECES))

        async def run_once() -> int:
            chat = vercel.parse_request(UI_REQUEST)
            history = sanitize_messages(vercel.browser_messages(chat))
            bridge = UIBridge(chat.id, "run-1")
            deltas = 0
            async with agent.run_stream(message_history=history) as stream:
                async for event in bridge.stream(stream):
                    record = vercel.encode(event)
                    deltas += b'"text-delta"' in record
            return deltas

        return run_once

    def instantiate(self, base: str) -> Callable[[], Any]:
        """Workload 10: `Agent(model, tools=[add])`, the model built once."""
        from ferrule.agent import Agent

        model = self._model(base, "chat")
        return lambda: Agent(model, tools=[add])

    def first_run(self) -> Callable[[], Awaitable[str]]:
        """Workload 10c: a new `Agent(model, tools=[add])`, then its first (two-step) run, no network."""
        from ferrule.agent import Agent

        model = self._function_model()

        async def run_once() -> str:
            agent: Any = Agent(model, tools=[add])
            result = await agent.run(PROMPT)
            return result.output

        return run_once

    def e2e(self, base: str, api: str, stream: bool) -> Callable[[], Awaitable[str]]:
        """Workloads 3, 5 and 8: one tool-calling run against the mock server."""
        return self._runner(self._agent(self._model(base, api)), stream)

    def stream_text(self, base: str, api: str) -> Callable[[], Awaitable[int]]:
        """Workload 4: one streamed text answer, every delta seen."""
        agent = self._agent(self._model(base, api), tools=False)

        async def run_once() -> int:
            count = 0
            async with agent.run_stream(PROMPT) as result:
                async for _delta in result.stream_text(delta=True):
                    count += 1
            return count

        return run_once

    def fn_loop(self, steps: int) -> Callable[[], Awaitable[list[int]]]:
        """Workload 7a: a tool loop of `steps` steps on `FunctionModel`."""
        from ferrule.agent.testing import FunctionModel
        from ferrule.core.messages import ModelResponse
        from ferrule.core.messages import TextPart
        from ferrule.core.messages import ToolCallPart
        from ferrule.core.usage import RequestUsage

        state = {"count": 0}
        usage = functools.partial(RequestUsage, input_tokens=20, output_tokens=10)

        async def function(messages: Any, info: Any) -> Any:
            state["count"] += 1
            if state["count"] > steps:
                return ModelResponse(parts=[TextPart(TEXT)], usage=usage())
            call = ToolCallPart("add", {"a": 1, "b": 2}, tool_call_id=f"call_{state['count']}")
            return ModelResponse(parts=[call], usage=usage())

        agent = self._agent(FunctionModel(function))

        async def run_once() -> list[int]:
            state["count"] = 0
            self.marks.clear()
            await agent.run(PROMPT)
            return list(self.marks)

        return run_once

    def net_loop(self, base: str, api: str) -> Callable[[], Awaitable[list[int]]]:
        """Workload 7b: a long tool loop against the mock server."""
        agent = self._agent(self._model(base, api))

        async def run_once() -> list[int]:
            self.marks.clear()
            await agent.run(PROMPT)
            return list(self.marks)

        return run_once

    def long_step(self, base: str, n: int) -> Callable[[], Awaitable[str]]:
        """Workload 11: one more step (a new run) on the same `n`-message history, Chat Completions."""
        from ferrule.core.messages import Message
        from ferrule.core.messages import ModelRequest
        from ferrule.core.messages import ModelResponse
        from ferrule.core.messages import TextPart
        from ferrule.core.messages import UserPromptPart

        agent = self._agent(self._model(base, "chat"), tools=False)
        history: list[Message] = [
            ModelRequest(parts=[UserPromptPart(content=text)])
            if role == "user"
            else ModelResponse(parts=[TextPart(content=text)])
            for role, text in long_history(n)
        ]

        async def run_once() -> str:
            result = await agent.run(PROMPT, message_history=history)
            return result.output

        return run_once

    # -- history -----------------------------------------------------------------------------------

    def history(self, conversation: bytes) -> tuple[Any, Callable[[Any], Any]]:
        """Workload 6: ferrule's own history format, dump + load (`ferrule.core.history`)."""
        from ferrule.core.history import dumps
        from ferrule.core.history import load_pydantic_ai
        from ferrule.core.history import loads

        messages = load_pydantic_ai(conversation)

        def round_trip(obj: Any) -> Any:
            return loads(dumps(obj))

        return messages, round_trip

    def decode_pydantic_ai(self, data: bytes) -> Callable[[], Any]:
        """Workload 6: decode a PydanticAI-written history."""
        from ferrule.core.history import load_pydantic_ai

        return lambda: load_pydantic_ai(data)

    # -- graphs ------------------------------------------------------------------------------------

    def graph(self, shape: str, size: int) -> Callable[[], Awaitable[int]]:
        """Workload 9: a linear graph of `size` async steps, or one broadcast fan-out to `size`
        async branches (run concurrently, like pydantic-graph's), each adding 1."""
        from ferrule.graph import GraphBuilder
        from ferrule.graph import GraphContext
        from ferrule.graph import Join
        from ferrule.graph import ParallelBranch
        from ferrule.graph import RunOptions

        async def add_one(ctx: GraphContext[None, None], n: int) -> int:
            return n + 1

        def add(acc: int, result: int) -> int:
            return acc + result

        g = GraphBuilder[None, None, int, int, int]()
        g.start(lambda ctx, n: n)
        g.end(lambda ctx, n: n)
        options = None
        if shape == "linear":
            for i in range(size):
                g.step(f"s{i}", add_one)
                if i:
                    g.connect(f"s{i - 1}", f"s{i}")
            g.finish(f"s{size - 1}")
            g.entry("s0")
        else:
            branches = [ParallelBranch[None, None, int, int](f"b{i}", add_one) for i in range(size)]
            g.fan_out("fan", branches=branches, join=Join(lambda: 0, add))
            g.finish("fan")
            g.entry("fan")
            options = RunOptions(max_concurrency=size)
        graph = g.build()

        async def run_once() -> int:
            return await graph.run(0, options=options)

        return run_once
