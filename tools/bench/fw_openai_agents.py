"""openai-agents' side of the network workloads (a second peer, where it installs): `Agent` +
`function_tool` on `OpenAIChatCompletionsModel` / `OpenAIResponsesModel` over an `AsyncOpenAI`
client pointed at the mock server, tracing off (it would export to OpenAI otherwise).

It has no no-network function model and its own history format, so workloads 2, 6 and 7a are
PydanticAI and ferrule only."""

# pyright: basic, reportMissingImports=false
from __future__ import annotations

import time
from collections.abc import Awaitable
from collections.abc import Callable
from typing import Any

from tools.bench._common import API_KEY
from tools.bench._common import MODEL
from tools.bench._common import PROMPT
from tools.bench._common import Unsupported
from tools.bench._common import add
from tools.bench._common import http_client

NAME = "openai_agents"


class Bench:
    """openai-agents' side of the network workloads."""

    name = NAME

    def __init__(self) -> None:
        from agents import set_tracing_disabled

        set_tracing_disabled(True)
        self.client = http_client()
        self.marks: list[int] = []

    async def aclose(self) -> None:
        """Close the shared client."""
        await self.client.aclose()

    def _agent(self, base: str, api: str, tools: bool = True) -> Any:
        from agents import Agent
        from agents import OpenAIChatCompletionsModel
        from agents import OpenAIResponsesModel
        from agents import function_tool
        from openai import AsyncOpenAI

        client = AsyncOpenAI(base_url=base, api_key=API_KEY, http_client=self.client, max_retries=0)
        if api == "chat":
            model: Any = OpenAIChatCompletionsModel(MODEL, openai_client=client)
        else:
            model = OpenAIResponsesModel(MODEL, openai_client=client)
        marks = self.marks

        @function_tool
        async def add(a: int, b: int) -> int:
            """Add two integers."""
            marks.append(time.perf_counter_ns())
            return a + b

        return Agent(name="bench", model=model, tools=[add] if tools else [])

    def _runner(self, agent: Any, stream: bool, max_turns: int = 10) -> Callable[[], Awaitable[str]]:
        from agents import Runner

        if not stream:

            async def run_once() -> str:
                result = await Runner.run(agent, PROMPT, max_turns=max_turns)
                return str(result.final_output)

            return run_once

        from openai.types.responses import ResponseTextDeltaEvent

        async def run_stream_once() -> str:
            pieces: list[str] = []
            result = Runner.run_streamed(agent, PROMPT, max_turns=max_turns)
            async for event in result.stream_events():
                if event.type == "raw_response_event" and isinstance(event.data, ResponseTextDeltaEvent):
                    pieces.append(event.data.delta)
            return "".join(pieces)

        return run_stream_once

    def instantiate(self, base: str) -> Callable[[], Any]:
        """Workload 10: `Agent(name=..., model=model, tools=[function_tool(add)])`, the model built once.

        Its `Agent` takes tool objects, so the tool is made from the function each time, as the
        other frameworks derive it from the function they are given."""
        from agents import Agent
        from agents import OpenAIChatCompletionsModel
        from agents import function_tool
        from openai import AsyncOpenAI

        client = AsyncOpenAI(base_url=base, api_key=API_KEY, http_client=self.client, max_retries=0)
        model = OpenAIChatCompletionsModel(MODEL, openai_client=client)
        return lambda: Agent(name="bench", model=model, tools=[function_tool(add)])

    def first_run(self) -> Callable[[], Awaitable[str]]:
        """No function model in openai-agents."""
        raise Unsupported("openai-agents has no no-network function model")

    def fn_run(self, stream: bool) -> Callable[[], Awaitable[str]]:
        """No function model in openai-agents."""
        raise Unsupported("openai-agents has no no-network function model")

    def e2e(self, base: str, api: str, stream: bool) -> Callable[[], Awaitable[str]]:
        """Workloads 3, 5 and 8: one tool-calling run against the mock server."""
        return self._runner(self._agent(base, api), stream)

    def stream_text(self, base: str, api: str) -> Callable[[], Awaitable[int]]:
        """Workload 4: one streamed text answer, every delta seen."""
        from agents import Runner
        from openai.types.responses import ResponseTextDeltaEvent

        agent = self._agent(base, api, tools=False)

        async def run_once() -> int:
            count = 0
            result = Runner.run_streamed(agent, PROMPT)
            async for event in result.stream_events():
                if event.type == "raw_response_event" and isinstance(event.data, ResponseTextDeltaEvent):
                    count += 1
            return count

        return run_once

    def fn_loop(self, steps: int) -> Callable[[], Awaitable[list[int]]]:
        """No function model in openai-agents."""
        raise Unsupported("openai-agents has no no-network function model")

    def net_loop(self, base: str, api: str) -> Callable[[], Awaitable[list[int]]]:
        """Workload 7b: a long tool loop against the mock server."""
        run = self._runner(self._agent(base, api), False, max_turns=1000)

        async def run_once() -> list[int]:
            self.marks.clear()
            await run()
            return list(self.marks)

        return run_once

    def ui_stream(self) -> Callable[[], Awaitable[int]]:
        """Workload 12: not comparable."""
        raise Unsupported("openai-agents has no browser UI protocol adapter")

    def graph(self, shape: str, size: int) -> Callable[[], Awaitable[int]]:
        """Workload 9: openai-agents has no graph library."""
        raise Unsupported("openai-agents has no graph library")

    def history(self, conversation: bytes) -> tuple[Any, Callable[[Any], Any]]:
        """openai-agents keeps OpenAI input items, not a typed history to compare."""
        raise Unsupported("openai-agents has no typed message history")

    def decode_pydantic_ai(self, data: bytes) -> Callable[[], Any]:
        """openai-agents cannot read PydanticAI histories."""
        raise Unsupported("openai-agents cannot read PydanticAI histories")
