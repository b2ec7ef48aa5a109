"""The agent checks every content URL against its URL policy before a model request carries it."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import pytest

from ferrule.agent import Agent
from ferrule.agent import ExternalResult
from ferrule.agent import Paused
from ferrule.agent import PendingMessageQueue
from ferrule.agent import RunContext
from ferrule.agent import Tool
from ferrule.agent import ToolReturn
from ferrule.agent.exceptions import run_state_of
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.errors import UrlPolicyError
from ferrule.core.messages import AudioUrl
from ferrule.core.messages import BinaryContent
from ferrule.core.messages import DocumentUrl
from ferrule.core.messages import ImageUrl
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.messages import UserContent
from ferrule.core.messages import UserPromptPart
from ferrule.core.messages import VideoUrl
from ferrule.core.url_policy import UrlPolicy

pytestmark = pytest.mark.anyio

METADATA = "http://169.254.169.254/latest/meta-data/"
PUBLIC = "https://example.com/cat.png"


class Recorder:
    """A model that records every request it receives and answers from a script."""

    def __init__(self, *responses: ModelResponse) -> None:
        self.requests: list[list[Message]] = []
        self.responses = list(responses)
        self.model = FunctionModel(self.respond)

    def respond(self, messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        self.requests.append(list(messages))
        if self.responses:
            return self.responses.pop(0)
        return ModelResponse(parts=[TextPart("done")])


def urls_in(messages: Sequence[Message]) -> list[str]:
    """Every URL item a request carries (user content, tool results), in order."""
    found: list[str] = []
    for message in messages:
        if not isinstance(message, ModelRequest):
            continue
        for part in message.parts:
            content: Any = part.content if isinstance(part, UserPromptPart | ToolReturnPart) else None
            items: list[Any] = content if isinstance(content, list) else [content]  # pyright: ignore[reportUnknownVariableType]
            found.extend(i.url for i in items if isinstance(i, ImageUrl | AudioUrl | VideoUrl | DocumentUrl))
    return found


def call(name: str, call_id: str = "c1", **args: Any) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(tool_name=name, args=args, tool_call_id=call_id)])


@pytest.mark.parametrize("kind", [ImageUrl, AudioUrl, VideoUrl, DocumentUrl])
async def test_prompt_url_is_refused_before_any_io(kind: type[ImageUrl]) -> None:
    model = Recorder()
    resolved: list[str] = []

    def instructions() -> str:
        resolved.append("called")  # an instruction function may do I/O: it must not run either
        return "Describe."

    agent = Agent(model.model, instructions=instructions)
    with pytest.raises(UrlPolicyError) as caught:
        await agent.run(["describe", kind(url=METADATA)])
    assert "169.254.169.254" in str(caught.value)
    assert "plain http://" in caught.value.reason
    with pytest.raises(UrlPolicyError) as caught:  # HTTPS does not make a private host public
        await agent.run(["describe", kind(url="https://169.254.169.254/latest/")])
    assert "link-local" in caught.value.reason
    assert model.requests == []
    assert resolved == []


async def test_history_urls_are_refused_in_user_content_and_tool_results() -> None:
    model = Recorder()
    agent = Agent(model.model)
    in_prompt: list[Message] = [
        ModelRequest(parts=[UserPromptPart(content=["look", ImageUrl(url="https://localhost/x.png")])]),
        ModelResponse(parts=[TextPart("ok")]),
    ]
    with pytest.raises(UrlPolicyError, match="localhost"):
        await agent.run("again", message_history=in_prompt)
    in_result: list[Message] = [
        ModelRequest(parts=[UserPromptPart(content="fetch")]),
        ModelResponse(parts=[ToolCallPart(tool_name="f", args={}, tool_call_id="1")]),
        ModelRequest(
            parts=[ToolReturnPart(tool_name="f", content=[DocumentUrl(url=METADATA)], tool_call_id="1")]
        ),
    ]
    with pytest.raises(UrlPolicyError, match=re.escape("169.254.169.254")):
        await agent.run(message_history=in_result)
    assert model.requests == []


async def test_a_history_message_changed_in_place_after_a_run_is_checked_again() -> None:
    # The same history objects, passed to a later run after one of them was edited in place
    # (user content and a tool result): nothing about the first run's verdict carries over.
    model = Recorder()
    agent = Agent(model.model)
    prompt = UserPromptPart(content="look")
    returned = ToolReturnPart(tool_name="f", content="text", tool_call_id="1")
    history: list[Message] = [
        ModelRequest(parts=[prompt]),
        ModelResponse(parts=[ToolCallPart(tool_name="f", args={}, tool_call_id="1")]),
        ModelRequest(parts=[returned]),
        ModelResponse(parts=[TextPart("ok")]),
    ]
    assert (await agent.run("again", message_history=history)).output == "done"
    prompt.content = ["look", ImageUrl(url="https://localhost/x.png")]
    with pytest.raises(UrlPolicyError, match="localhost"):
        await agent.run("again", message_history=history)
    prompt.content = "look"
    assert (await agent.run("again", message_history=history)).output == "done"
    returned.content = [DocumentUrl(url=METADATA)]
    with pytest.raises(UrlPolicyError, match=re.escape("169.254.169.254")):
        await agent.run("again", message_history=history)
    assert len(model.requests) == 2


async def test_public_https_passes_and_a_local_origin_can_be_allowed() -> None:
    local = "http://127.0.0.1:8000/cat.png"
    model = Recorder()
    strict = Agent(model.model)
    result = await strict.run(["describe", ImageUrl(url=PUBLIC), BinaryContent(b"x", media_type="image/png")])
    assert result.output == "done"
    assert urls_in(model.requests[0]) == [PUBLIC]
    with pytest.raises(UrlPolicyError, match=r"UrlPolicy.local\('http://127.0.0.1:8000'\)"):
        await strict.run(["describe", ImageUrl(url=local)])
    relaxed = Agent(model.model, url_policy=UrlPolicy.local("http://127.0.0.1:8000"))
    await relaxed.run(["describe", ImageUrl(url=local)])
    assert urls_in(model.requests[-1]) == [local]
    with pytest.raises(UrlPolicyError):  # only that exact origin
        await relaxed.run(["describe", ImageUrl(url="http://127.0.0.1:8001/cat.png")])


async def test_url_returned_by_a_tool_becomes_a_retry_prompt() -> None:
    model = Recorder(call("fetch"))

    def fetch() -> list[Any]:
        return ["found", ImageUrl(url=PUBLIC), ImageUrl(url=METADATA)]

    agent = Agent(model.model, tools=[Tool(fetch, side_effect="read_only")])
    result = await agent.run("go")
    assert result.output == "done"
    second = model.requests[1]
    assert urls_in(second) == []
    retry = second[-1].parts[0]
    assert isinstance(retry, RetryPromptPart)
    assert retry.tool_name == "fetch"
    assert isinstance(retry.content, str)
    assert "169.254.169.254" in retry.content
    assert "may not be fetched" in retry.content
    assert retry.content.endswith("return it without that URL.")


async def test_url_returned_by_a_non_idempotent_tool_is_a_failed_result_not_a_retry() -> None:
    model = Recorder(call("order"))

    def order() -> ImageUrl:
        return ImageUrl(url="https://metadata/computeMetadata/v1/")

    agent = Agent(model.model, tools=[order])
    await agent.run("go")
    result = model.requests[1][-1].parts[0]
    assert isinstance(result, ToolReturnPart)
    assert result.outcome == "failed"
    assert "Do not call it again" in str(result.content)
    assert urls_in(model.requests[1]) == []


async def test_url_in_tool_return_follow_up_content_is_refused() -> None:
    model = Recorder(call("snap"))

    def snap() -> ToolReturn:
        return ToolReturn("taken", content=["here it is", ImageUrl(url="http://10.0.0.7/snap.jpg")])

    agent = Agent(model.model, tools=[Tool(snap, side_effect="read_only")])
    await agent.run("go")
    second = model.requests[1]
    assert urls_in(second) == []
    parts = second[-1].parts
    assert len(parts) == 1  # the follow-up was dropped with the result
    assert isinstance(parts[0], RetryPromptPart)
    assert "10.0.0.7" in str(parts[0].content)


async def test_allowed_follow_up_urls_reach_the_model() -> None:
    model = Recorder(call("snap"))

    def snap() -> ToolReturn:
        return ToolReturn("taken", content=[ImageUrl(url=PUBLIC)])

    agent = Agent(model.model, tools=[Tool(snap, side_effect="read_only")])
    await agent.run("go")
    assert urls_in(model.requests[1]) == [PUBLIC]


async def test_pending_message_url_is_refused_before_the_next_request() -> None:
    model = Recorder(call("wait"))
    queue = PendingMessageQueue()

    def wait() -> str:
        queue.enqueue(["and this", ImageUrl(url=METADATA)])
        return "ok"

    agent = Agent(model.model, tools=[Tool(wait, side_effect="read_only")])
    with pytest.raises(UrlPolicyError, match=re.escape("169.254.169.254")) as caught:
        await agent.run("go", pending_messages=queue)
    assert len(model.requests) == 1
    state = run_state_of(caught.value)
    assert state is not None
    assert urls_in(state.messages) == [METADATA]  # in the run's history, never sent


async def test_content_added_by_a_history_processor_is_checked() -> None:
    model = Recorder()

    def inject(messages: list[Message]) -> list[Message]:
        extra: list[UserContent] = ["also", VideoUrl(url="http://192.168.1.10/cam.mp4")]
        return [*messages, ModelRequest(parts=[UserPromptPart(content=extra)])]

    agent = Agent(model.model, history_processors=[inject])
    with pytest.raises(UrlPolicyError, match=re.escape("192.168.1.10")):
        await agent.run("go")
    assert model.requests == []


async def test_history_processor_keeping_checked_messages_passes() -> None:
    model = Recorder(call("fetch"))

    def fetch() -> str:
        return "ok"

    def newest_two(messages: list[Message]) -> list[Message]:
        return [messages[0], *messages[-2:]] if len(messages) > 2 else messages

    agent = Agent(model.model, tools=[fetch], history_processors=[newest_two])
    result = await agent.run(["see", ImageUrl(url=PUBLIC)])
    assert result.output == "done"
    assert urls_in(model.requests[1]) == [PUBLIC]


class CountingPolicy(UrlPolicy, frozen=True, kw_only=True):
    """The default policy, counting the URLs it is asked about."""

    def check(self, url: Any) -> Any:
        CHECKED.append(str(url))
        return super().check(url)


CHECKED: list[str] = []


async def test_each_history_url_is_checked_once_per_run_not_per_step() -> None:
    CHECKED.clear()
    model = Recorder(call("step", "1"), call("step", "2"), call("step", "3"))

    def step() -> str:
        return "ok"

    history: list[Message] = [
        ModelRequest(parts=[UserPromptPart(content=["earlier", ImageUrl(url=PUBLIC)])]),
        ModelResponse(parts=[TextPart("seen")]),
    ]
    agent = Agent(model.model, tools=[Tool(step, side_effect="read_only")], url_policy=CountingPolicy())
    await agent.run(["now", DocumentUrl(url="https://example.com/a.pdf")], message_history=history)
    assert len(model.requests) == 4
    assert CHECKED == [PUBLIC, "https://example.com/a.pdf"]


async def test_resume_checks_external_results_and_the_stored_history() -> None:
    executed: list[str] = []
    model = Recorder(
        ModelResponse(
            parts=[
                ToolCallPart(tool_name="ship", args={"address": "x"}, tool_call_id="s1"),
                ToolCallPart(tool_name="note", args={}, tool_call_id="n1"),
            ]
        )
    )

    def ship(address: str) -> str:
        """Done by the warehouse."""
        raise AssertionError("external tools are never called")

    def note(ctx: RunContext[None]) -> str:
        executed.append("note")
        return "n"

    agent = Agent(model.model, tools=[Tool(ship, external=True), note])
    outcome = await agent.run_until_pause("ship it")
    assert isinstance(outcome, Paused)
    with pytest.raises(UrlPolicyError, match=re.escape("169.254.169.254")):
        await agent.resume(outcome, {"s1": ExternalResult(value=[ImageUrl(url=METADATA)])})
    assert len(model.requests) == 1
    tampered = outcome.state
    first = tampered.messages[0]
    assert isinstance(first, ModelRequest)
    first.parts.append(UserPromptPart(content=[AudioUrl(url="https://[::1]/a.wav")]))
    data = tampered.to_json()
    with pytest.raises(UrlPolicyError, match="loopback"):
        await agent.resume(data, {"s1": ExternalResult(value="shipped")})
    assert len(model.requests) == 1
    assert executed == []
