"""A scripted OpenAI-compatible Chat Completions server on 127.0.0.1 that counts what it served.

The crash tests of the durable engines run the model client in a worker process they kill; this
server runs in the test process, so its counts survive every worker. It answers by *turn*: the
number of assistant messages already in the request's conversation. The same conversation therefore
always gets the same answer, which is what a durable engine relies on when it repeats an interrupted
request.

`hold=Hold(turn, after_events)` makes the first request of one turn stop before it is complete:
buffered requests get no response, streamed ones get `after_events` SSE events first. The server
sets `holding` when it got there (the test then kills the worker) and keeps the connection open
until it stops; later requests of that turn are answered normally.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterator
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from typing import Any

import pytest

from tests.support.http_server import Conn
from tests.support.http_server import LocalServer
from tests.support.http_server import Request

__all__ = ["ChatServer", "Hold", "StartChatServer", "Turn", "chat_server"]


@dataclass(frozen=True)
class Turn:
    """One scripted answer: tool calls (`(name, arguments)` pairs), or else `text`."""

    tool_calls: Sequence[tuple[str, dict[str, Any]]] = ()
    text: str = ""


@dataclass(frozen=True)
class Hold:
    """Stop the first request of `turn` before it completes (streamed: after `after_events` events)."""

    turn: int
    after_events: int = 0


@dataclass
class ChatServer:
    """The running server: `served[turn]` counts the requests answered (or held) per turn."""

    turns: Sequence[Turn]
    hold: Hold | None = None
    served: Counter[int] = field(default_factory=Counter[int])
    authorizations: list[str] = field(default_factory=list[str])
    """Every `Authorization` header received, in order."""
    bodies: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    """Every request body received (its JSON), in order."""
    holding: threading.Event = field(default_factory=threading.Event)
    """Set when the held request has been received (and, streamed, its first events sent)."""

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._held = False
        self.server = LocalServer(self._handle)

    @property
    def base_url(self) -> str:
        """The OpenAI-style API root (`http://127.0.0.1:<port>/v1`)."""
        return self.server.base_url

    @property
    def origin(self) -> str:
        """`http://127.0.0.1:<port>`."""
        return self.server.origin

    def close(self) -> None:
        """Stop serving; a held connection is closed."""
        self.server.close()

    def _handle(self, conn: Conn, request: Request) -> bool | None:
        if request.method != "POST" or not request.path.endswith("/chat/completions"):
            conn.respond_json(404, {"error": {"message": f"no route {request.method} {request.path}"}})
            return None
        body = request.json()
        turn = sum(1 for message in body.get("messages", []) if message.get("role") == "assistant")
        with self._lock:
            self.served[turn] += 1
            self.authorizations.append(request.headers.get("authorization", ""))
            self.bodies.append(body)
            hold = self.hold is not None and self.hold.turn == turn and not self._held
            if hold:
                self._held = True
        if turn >= len(self.turns):
            conn.respond_json(400, {"error": {"message": f"the script has no turn {turn}"}})
            return None
        answer = self.turns[turn]
        model = str(body.get("model", "test-model"))
        if body.get("stream"):
            return self._stream(conn, answer, model, turn, hold)
        if hold:
            self.holding.set()
            conn.hang()
            return False
        conn.respond_json(200, _completion(answer, model, turn))
        return None

    def _stream(self, conn: Conn, answer: Turn, model: str, turn: int, hold: bool) -> bool | None:
        conn.start_chunked(headers={"content-type": "text/event-stream"})
        for index, chunk in enumerate(_chunks(answer, model, turn)):
            if hold and self.hold is not None and index == self.hold.after_events:
                self.holding.set()
                conn.hang()
                return False
            conn.chunk(b"data: " + json.dumps(chunk).encode() + b"\n\n")
        conn.chunk(b"data: [DONE]\n\n")
        conn.end_chunked()
        return None


def _usage() -> dict[str, int]:
    return {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}


def _tool_calls(answer: Turn, turn: int) -> list[dict[str, Any]]:
    return [
        {
            "id": f"call_{turn}_{index}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        for index, (name, arguments) in enumerate(answer.tool_calls)
    ]


def _completion(answer: Turn, model: str, turn: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": answer.text or None}
    if answer.tool_calls:
        message["tool_calls"] = _tool_calls(answer, turn)
    return {
        "id": f"chatcmpl-{turn}",
        "object": "chat.completion",
        "created": 1_700_000_000 + turn,
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if answer.tool_calls else "stop"}
        ],
        "usage": _usage(),
    }


def _chunks(answer: Turn, model: str, turn: int) -> Iterator[dict[str, Any]]:
    """The SSE chunks of one answer: a role chunk, then text in words or one chunk per tool call."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-{turn}",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000 + turn,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    yield chunk({"role": "assistant", "content": ""})
    if answer.tool_calls:
        for index, call in enumerate(_tool_calls(answer, turn)):
            yield chunk({"tool_calls": [{"index": index, **call}]})
    else:
        words = answer.text.split(" ")
        for index, word in enumerate(words):
            yield chunk({"content": word if index == 0 else " " + word})
    final = chunk({}, "tool_calls" if answer.tool_calls else "stop")
    final["usage"] = _usage()
    yield final


@dataclass
class StartChatServer:
    """The `chat_server` fixture: `chat_server(turns, hold=...)` starts a server."""

    started: list[ChatServer] = field(default_factory=list[ChatServer])

    def __call__(self, turns: Sequence[Turn], *, hold: Hold | None = None) -> ChatServer:
        server = ChatServer(turns, hold=hold)
        self.started.append(server)
        return server


@pytest.fixture
def chat_server() -> Iterator[StartChatServer]:
    """Start scripted chat servers; all are stopped at the end of the test."""
    start = StartChatServer()
    try:
        yield start
    finally:
        for server in start.started:
            server.close()
