"""Fixtures of the ferrule-mcp tests: test servers, a scripted model, and an HTTP server on 127.0.0.1."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.mcp import MCPEvent
from ferrule.mcp import MCPServerStdio
from tests.support.asgi_server import AsgiServer

SERVERS = Path(__file__).resolve().parent / "servers"
RAW = str(SERVERS / "raw_server.py")


def load_sdk_server() -> Any:
    spec = importlib.util.spec_from_file_location("ferrule_mcp_test_sdk_server", SERVERS / "sdk_server.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def sdk_server() -> Any:
    """A fresh SDK `MCPServer` with the test tools (each test may change its tool list)."""
    return load_sdk_server().build()


class Events(list[MCPEvent]):
    """Collected events, with a helper to pick them by kind."""

    def kinds(self) -> list[str]:
        return [e.kind for e in self]

    def of(self, kind: str) -> list[MCPEvent]:
        return [e for e in self if e.kind == kind]


@pytest.fixture
def events() -> Events:
    return Events()


@pytest.fixture
def raw(events: Events) -> Callable[..., MCPServerStdio]:
    """`raw(*flags, **options)`: the hand-written misbehaving stdio server."""

    def make(*flags: str, **options: Any) -> MCPServerStdio:
        options.setdefault("id", "raw")
        options.setdefault("on_event", events.append)
        return MCPServerStdio(sys.executable, [RAW, *flags], **options)

    return make


Step = tuple[str, dict[str, Any]] | list[tuple[str, dict[str, Any]]]


def _is_prompt(message: Message) -> bool:
    """A request holding a user prompt and no tool results (tool follow-ups come with their results)."""
    if not isinstance(message, ModelRequest):
        return False
    kinds = {p.part_kind for p in message.parts}
    return "user-prompt" in kinds and not kinds & {"tool-return", "retry-prompt"}


def scripted_model(steps: Sequence[Step], seen: list[AgentInfo] | None = None) -> FunctionModel:
    """A model that makes the given tool calls, one step each (a list = parallel calls), then says 'done'."""

    def answer(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        if seen is not None:
            seen.append(info)
        # Steps count from the latest user prompt, so a continued conversation starts over.
        start = max((i for i, m in enumerate(messages) if _is_prompt(m)), default=0)
        step = sum(1 for m in messages[start:] if isinstance(m, ModelResponse))
        if step < len(steps):
            calls = steps[step]
            group = calls if isinstance(calls, list) else [calls]
            return ModelResponse(parts=[ToolCallPart(tool_name=name, args=args) for name, args in group])
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(answer)


@pytest.fixture
def scripted() -> Callable[..., FunctionModel]:
    return scripted_model


def tool_results(messages: Sequence[Message]) -> list[Any]:
    """Every tool return and retry prompt part of a history, in order."""
    return [
        p for m in messages if isinstance(m, ModelRequest) for p in m.parts if p.part_kind != "user-prompt"
    ]


@pytest.fixture
def results() -> Callable[[Sequence[Message]], list[Any]]:
    return tool_results


def pid_alive(pid: int) -> bool:
    """Whether `pid` still exists, zombies included (a reaped child is gone from /proc)."""
    if sys.platform.startswith("linux"):
        return os.path.exists(f"/proc/{pid}")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def alive() -> Callable[[int], bool]:
    return pid_alive


@pytest.fixture(scope="session")
def http_server() -> Iterator[AsgiServer]:
    """The SDK test server over streamable HTTP (SSE responses) at `origin + "/mcp"`."""
    with AsgiServer(lambda: load_sdk_server().build().streamable_http_app(), lifespan="on") as running:
        yield running


@pytest.fixture(scope="session")
def http_json_server() -> Iterator[AsgiServer]:
    """The SDK test server over streamable HTTP answering with plain JSON bodies."""
    with AsgiServer(
        lambda: load_sdk_server().build().streamable_http_app(json_response=True), lifespan="on"
    ) as running:
        yield running
