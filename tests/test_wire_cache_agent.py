"""A real agent over HTTP with the model's `WireCache`: every request body it sends is the body the
uncached codec encodes for the same call, over the steps of a run, across two runs sharing a
history, and with history processors that replace a message and that edit one in place."""

from __future__ import annotations

import pytest

from ferrule.agent import Agent
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.messages import UserPromptPart
from ferrule.core.url_policy import UrlPolicy
from ferrule.providers.openai import OpenAIProvider
from tests.support.chat_server import ChatServer
from tests.support.chat_server import StartChatServer
from tests.support.chat_server import Turn
from tests.support.chat_server import chat_server
from tests.support.checked_openai import CheckedChatModel
from tests.support.wire_cache import elide_tool_returns

__all__ = ["chat_server"]

pytestmark = pytest.mark.anyio

TURNS = [
    Turn(tool_calls=[("add", {"a": 1, "b": 2})]),
    Turn(tool_calls=[("add", {"a": 3, "b": 4})]),
    Turn(text="The sums are 3 and 7."),
    Turn(tool_calls=[("add", {"a": 5, "b": 6})]),
    Turn(text="And 11."),
]


def model(server: ChatServer) -> CheckedChatModel:
    provider = OpenAIProvider(
        api_key="sk-test-key", base_url=server.base_url, url_policy=UrlPolicy.local(server.origin)
    )
    checked = CheckedChatModel("gpt-4o", provider=provider)
    return checked


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def test_steps_and_runs_sharing_a_history(chat_server: StartChatServer) -> None:
    checked = model(chat_server(TURNS))
    agent = Agent(checked, tools=[add])
    first = await agent.run("add twice")
    assert first.output == "The sums are 3 and 7."
    history = first.all_messages()
    second = await agent.run("once more", message_history=history)
    assert second.output == "And 11."
    assert len(checked.sent) == 5
    assert len(checked.wire_cache) > 0


async def test_history_processors_that_replace_and_edit_messages(chat_server: StartChatServer) -> None:
    checked = model(chat_server(TURNS[:3]))
    seen: list[int] = []

    def edit_in_place(messages: list[Message]) -> list[Message]:
        # Edits held messages in place: the prompt, and from step 2 the first answer (which the
        # cache holds from the step before, so only the fingerprint can tell it changed).
        seen.append(len(messages))
        first = messages[0]
        assert isinstance(first, ModelRequest)
        for part in first.parts:
            if isinstance(part, UserPromptPart):
                part.content = f"add twice (step {len(seen)})"
        if len(messages) > 1:
            answer = messages[1]
            assert isinstance(answer, ModelResponse)
            notes = [p for p in answer.parts if isinstance(p, TextPart)]
            if notes:
                notes[0].content = f"note {len(seen)}"
            else:
                answer.parts.insert(0, TextPart(content=f"note {len(seen)}"))
        return messages

    agent = Agent(checked, tools=[add], history_processors=[elide_tool_returns, edit_in_place])
    result = await agent.run("add twice")
    assert result.output == "The sums are 3 and 7."
    assert len(checked.sent) == 3
    for step, body in enumerate(checked.sent, start=1):
        assert f"add twice (step {step})".encode() in body
        if step > 1:
            assert f'"content":"note {step}"'.encode() in body
    assert b"(elided)" in checked.sent[2]
    assert b'"content":"3"' not in checked.sent[2]
    # The canonical history still holds the real tool results.
    returns = [
        p.content
        for m in result.all_messages()
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart)
    ]
    assert returns == [3, 7]
    assert not any(isinstance(m, ModelResponse) and not m.parts for m in result.all_messages())


async def test_a_history_message_edited_in_place_between_runs_is_checked_again(
    chat_server: StartChatServer,
) -> None:
    # The cache still holds the history from the first run; an edit in place that the model's
    # profile refuses (video input) must be refused before anything is sent, and undoing it must
    # send the body the uncached codec encodes.
    from ferrule.core.errors import UnsupportedFeatureError
    from ferrule.core.messages import VideoUrl

    # The server answers by the number of assistant messages: one in both runs.
    checked = model(chat_server([Turn(text="unused"), Turn(text="answer")]))
    agent = Agent(checked)
    prompt = UserPromptPart(content="look at this")
    history: list[Message] = [ModelRequest(parts=[prompt]), ModelResponse(parts=[TextPart("seen")])]
    assert (await agent.run("again", message_history=history)).output == "answer"
    prompt.content = ["look at this", VideoUrl(url="https://example.com/clip.mp4")]
    with pytest.raises(UnsupportedFeatureError, match="video input"):
        await agent.run("again", message_history=history)
    assert len(checked.sent) == 1
    prompt.content = "look at this"
    assert (await agent.run("again", message_history=history)).output == "answer"
    assert len(checked.sent) == 2
    assert checked.sent[0] == checked.sent[1]
