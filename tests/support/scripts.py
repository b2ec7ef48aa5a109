"""A scripted model function for tests that drive an agent, and the responses it is scripted with.

`FunctionModel(Script(text("hi")))` answers each request with the next scripted response (then
with `text(then)` once they are used up) and records what every request carried: the messages,
the `AgentInfo` and the function tools offered. Imports only ferrule-core and ferrule-agent, so
every package's isolated environment that tests through the agent can use it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from typing import cast

import msgspec

from ferrule.agent.testing import AgentInfo
from ferrule.core.messages import Message
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.model import ToolDefinition

__all__ = ["Script", "call", "recorded", "text", "tool_call"]


def text(content: str, **fields: Any) -> ModelResponse:
    """A response with one text part (`fields` are further `ModelResponse` fields)."""
    return ModelResponse(parts=[TextPart(content)], **fields)


def tool_call(name: str, args: Any = None, call_id: str | None = None) -> ToolCallPart:
    """One tool call part; its ID defaults to `id_<name>`."""
    return ToolCallPart(tool_name=name, args=args, tool_call_id=call_id or f"id_{name}")


def call(name: str, args: Any, call_id: str = "c1") -> ModelResponse:
    """A response with one tool call."""
    return ModelResponse(parts=[ToolCallPart(tool_name=name, args=args, tool_call_id=call_id)])


class Script:
    """A `FunctionModel` function answering from a list, recording what each request saw."""

    def __init__(self, *responses: ModelResponse, then: str = "done") -> None:
        self.responses = list(responses)
        """The responses still to give, in order."""
        self.then = then
        """The text of every response after the scripted ones."""
        self.seen: list[list[Message]] = []
        """The messages of each request."""
        self.infos: list[AgentInfo] = []
        """The `AgentInfo` of each request."""
        self.tools: list[list[ToolDefinition]] = []
        """The function tools offered by each request."""

    def __call__(self, messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        self.seen.append(list(messages))
        self.infos.append(info)
        self.tools.append(list(info.function_tools))
        return self.responses.pop(0) if self.responses else text(self.then)

    def names(self, step: int = 0) -> list[str]:
        """The names of the function tools offered by request `step`."""
        return [d.name for d in self.tools[step]]


def recorded(messages: Sequence[Message]) -> list[Any]:
    """A history as plain data for an inline snapshot: every field the loop recorded, except what
    differs between runs. Timestamps are left out; run IDs read `run-1`, `run-2`, ... and call IDs
    the framework generated (those no response carried) `call-1`, ... in order of appearance."""
    scripted = {
        part.tool_call_id
        for message in messages
        if isinstance(message, ModelResponse)
        for part in message.parts
        if isinstance(part, ToolCallPart)
    }
    names: dict[tuple[str, str], str] = {}

    def named(kind: str, value: str) -> str:
        key = (kind, value)
        if key not in names:
            names[key] = f"{kind}-{sum(1 for k, _ in names if k == kind) + 1}"
        return names[key]

    def clean(value: Any) -> Any:
        if isinstance(value, dict):
            items = cast("dict[str, Any]", value).items()
            out: dict[str, Any] = {}
            for key, item in items:
                if key == "timestamp":
                    continue
                if key == "run_id" and isinstance(item, str):
                    out[key] = named("run", item)
                elif key == "tool_call_id" and isinstance(item, str) and item not in scripted:
                    out[key] = named("call", item)
                else:
                    out[key] = clean(item)
            return out
        if isinstance(value, list):
            return [clean(item) for item in cast("list[Any]", value)]
        return value

    return [clean(msgspec.to_builtins(message)) for message in messages]
