"""A model name ferrule has no profile for (docs/providers/openai.md, "Unknown models fail closed"):
structured output falls back to prompted JSON and is sent; tools fail before sending, and the error
says how to declare the model's profile with `profile=`."""

from __future__ import annotations

import msgspec
import pytest

from ferrule.agent import Agent
from ferrule.agent import NativeOutput
from ferrule.agent.exceptions import OutputSpecError
from ferrule.core.errors import UnsupportedFeatureError
from ferrule.core.messages import ModelRequest
from ferrule.core.profile import ModelProfile
from ferrule.core.url_policy import UrlPolicy
from ferrule.providers.openai import OpenAIChatModel
from ferrule.providers.openai import OpenAIProvider
from tests.support.chat_server import ChatServer
from tests.support.chat_server import StartChatServer
from tests.support.chat_server import Turn
from tests.support.chat_server import chat_server

__all__ = ["chat_server"]

pytestmark = pytest.mark.anyio


class City(msgspec.Struct):
    """A city."""

    name: str
    country: str


def _model(server: ChatServer, profile: ModelProfile | None = None) -> OpenAIChatModel:
    provider = OpenAIProvider(
        api_key="sk-test-key", base_url=server.base_url, url_policy=UrlPolicy.local(server.origin)
    )
    return OpenAIChatModel("my-own-model", provider=provider, profile=profile)


async def test_structured_output_falls_back_to_prompted_json_and_is_sent(
    chat_server: StartChatServer,
) -> None:
    server = chat_server([Turn(text='{"name": "Paris", "country": "France"}')])
    result = await Agent(_model(server), output_type=City).run("Which city?")
    assert result.output == City(name="Paris", country="France")
    assert dict(server.served) == {0: 1}  # sent, once
    first = result.all_messages()[0]
    assert isinstance(first, ModelRequest)
    assert first.instructions is not None
    assert "Always respond with a JSON object" in first.instructions
    assert '"country"' in first.instructions  # the schema travels in the instructions


async def test_tools_fail_before_sending_and_say_how_to_declare_the_profile(
    chat_server: StartChatServer,
) -> None:
    server = chat_server([Turn(text="never")])

    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    with pytest.raises(UnsupportedFeatureError) as info:
        await Agent(_model(server), tools=[add]).run("add")
    message = str(info.value)
    assert "does not support tools" in message
    assert "ferrule has no profile for the model 'my-own-model'" in message
    assert "OpenAIChatModel('my-own-model', provider=..., profile=ModelProfile(" in message
    assert dict(server.served) == {}  # nothing was sent


async def test_a_declared_profile_is_used(chat_server: StartChatServer) -> None:
    server = chat_server([Turn(tool_calls=[("add", {"a": 1, "b": 2})]), Turn(text="3")])

    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    model = _model(server, profile=ModelProfile(supports_tools=True))
    result = await Agent(model, tools=[add]).run("add")
    assert result.output == "3"


def test_native_output_asked_of_an_unknown_model_is_refused(chat_server: StartChatServer) -> None:
    server = chat_server([Turn(text="never")])
    agent = Agent(_model(server), output_type=NativeOutput(City))
    with pytest.raises(OutputSpecError, match="does not support native JSON-schema output"):
        agent.run_sync("Which city?")
    assert dict(server.served) == {}
