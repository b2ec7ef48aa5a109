"""The scripted chat server of the durable crash tests (`tests/support/chat_server.py`), driven by a
real ferrule agent through ferrule-openai: answers by turn, counts, and holds a request mid-way."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from ferrule.agent import Agent
from ferrule.agent import FunctionToolResultEvent
from ferrule.core.model import PartDeltaEvent
from ferrule.core.model import TextPartDelta
from ferrule.core.url_policy import UrlPolicy
from ferrule.providers.openai import OpenAIChatModel
from ferrule.providers.openai import OpenAIProvider
from tests.support.chat_server import ChatServer
from tests.support.chat_server import Hold
from tests.support.chat_server import StartChatServer
from tests.support.chat_server import Turn
from tests.support.chat_server import chat_server

__all__ = ["chat_server"]

pytestmark = pytest.mark.anyio

THREE_STEPS = [
    Turn(tool_calls=[("add", {"a": 1, "b": 2})]),
    Turn(tool_calls=[("add", {"a": 3, "b": 4})]),
    Turn(text="The sums are 3 and 7."),
]


def _agent(server: ChatServer, log: list[tuple[int, int]]) -> Agent[None, str]:
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        log.append((a, b))
        return a + b

    provider = OpenAIProvider(
        api_key="sk-test-key", base_url=server.base_url, url_policy=UrlPolicy.local(server.origin)
    )
    return Agent(OpenAIChatModel("gpt-4o", provider=provider), tools=[add])


async def test_answers_by_turn_and_counts_each_request(chat_server: StartChatServer) -> None:
    server = chat_server(THREE_STEPS)
    calls: list[tuple[int, int]] = []
    result = await _agent(server, calls).run("add twice")
    assert result.output == "The sums are 3 and 7."
    assert calls == [(1, 2), (3, 4)]
    assert dict(server.served) == {0: 1, 1: 1, 2: 1}
    assert server.authorizations == ["Bearer sk-test-key"] * 3


async def test_streams_the_same_answers(chat_server: StartChatServer) -> None:
    server = chat_server(THREE_STEPS)
    calls: list[tuple[int, int]] = []
    deltas: list[str] = []
    results = 0
    async with _agent(server, calls).run_stream("add twice") as stream:
        async for event in stream:
            if isinstance(event, FunctionToolResultEvent):
                results += 1
            elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
                deltas.append(event.delta.content_delta)
    assert stream.result.output == "The sums are 3 and 7."
    assert results == 2
    assert "".join(deltas).endswith("are 3 and 7.")
    assert dict(server.served) == {0: 1, 1: 1, 2: 1}


@pytest.mark.parametrize("streamed", [False, True], ids=["buffered", "streamed"])
async def test_holds_the_first_request_of_a_turn_only(chat_server: StartChatServer, streamed: bool) -> None:
    server = chat_server(THREE_STEPS, hold=Hold(turn=1, after_events=2))
    calls: list[tuple[int, int]] = []
    agent = _agent(server, calls)
    seen: list[Any] = []

    async def run() -> None:
        if streamed:
            async with agent.run_stream("add twice") as stream:
                async for event in stream:
                    seen.append(event)
        else:
            await agent.run("add twice")

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        # The held request never completes: wait until the server holds it, then give up the run.
        await anyio.to_thread.run_sync(server.holding.wait)
        group.cancel_scope.cancel()
    assert calls == [(1, 2)], "only the first tool ran before the held request"
    assert dict(server.served) == {0: 1, 1: 1}
    # The same conversation asked again is answered (the held request is not held twice).
    calls.clear()
    result = await agent.run("add twice")
    assert result.output == "The sums are 3 and 7."
    assert dict(server.served) == {0: 2, 1: 2, 2: 1}
