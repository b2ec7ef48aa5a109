"""A tiny HTTP/1.1 server on 127.0.0.1 for transport tests (raw sockets in threads).

Handlers write exact bytes, so a test controls status codes, headers, framing (chunk boundaries
that split SSE lines and UTF-8 anywhere), compression, stalls and disconnects. It replays bodies
recorded from the real APIs (the shared cassettes) or small bodies written in the test. Waits use
events; nothing sleeps.

A package's `conftest.py` makes the `serve` fixture available to its tests with
`from tests.support.http_server import serve`.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable
from collections.abc import Generator
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field
from typing import Any

import pytest

from ferrule.core.url_policy import UrlPolicy

__all__ = [
    "Conn",
    "Handler",
    "LocalServer",
    "Request",
    "Serve",
    "json_reply",
    "serve",
    "serve_with",
    "sse_reply",
]

AWKWARD_SIZES = (7, 1, 13, 64, 3)
"""Default chunk sizes of `Conn.stream`: they cut lines, CRLFs and multi-byte characters."""


@dataclass
class Request:
    """One request as the server received it."""

    method: str
    target: str
    """The request target as sent: the path and any query string."""
    headers: dict[str, str]
    """Header names lower-cased."""
    body: bytes

    @property
    def path(self) -> str:
        """The request target as sent (path and query string)."""
        return self.target

    @property
    def query(self) -> str:
        """The query string, without the `?` ("" when there is none)."""
        return self.target.split("?", 1)[1] if "?" in self.target else ""

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)


@dataclass
class Conn:
    """The server side of one connection."""

    sock: socket.socket
    server: LocalServer

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def respond(
        self,
        status: int,
        body: bytes = b"",
        headers: dict[str, str] | None = None,
        *,
        length: int | None = None,
    ) -> None:
        """A whole response; `length` declares a different content-length than the body has."""
        head = [f"HTTP/1.1 {status} Status", f"content-length: {len(body) if length is None else length}"]
        head += [f"{k}: {v}" for k, v in (headers or {}).items()]
        self.send(("\r\n".join(head) + "\r\n\r\n").encode() + body)

    def respond_json(self, status: int, document: Any, headers: dict[str, str] | None = None) -> None:
        self.respond(
            status, json.dumps(document).encode(), {"content-type": "application/json", **(headers or {})}
        )

    def start_chunked(self, status: int = 200, headers: dict[str, str] | None = None) -> None:
        head = [f"HTTP/1.1 {status} Status", "transfer-encoding: chunked"]
        head += [f"{k}: {v}" for k, v in (headers or {}).items()]
        self.send(("\r\n".join(head) + "\r\n\r\n").encode())

    def chunk(self, data: bytes) -> None:
        """One chunk; empty data sends nothing (an empty chunk would end the body)."""
        if data:
            self.send(f"{len(data):x}\r\n".encode() + data + b"\r\n")

    def end_chunked(self) -> None:
        self.send(b"0\r\n\r\n")

    def stream(self, body: bytes, sizes: tuple[int, ...] = AWKWARD_SIZES) -> None:
        """Send `body` as an SSE response in chunks whose sizes cycle through `sizes`."""
        self.start_chunked(headers={"content-type": "text/event-stream"})
        position = 0
        index = 0
        while position < len(body):
            size = sizes[index % len(sizes)]
            self.chunk(body[position : position + size])
            position += size
            index += 1
        self.end_chunked()

    def wait(self, event: threading.Event) -> None:
        """Block this connection until `event` is set or the server stops."""
        while not event.wait(0.02):
            if self.server.stopping.is_set():
                return

    def hang(self) -> None:
        """Keep the connection open without sending anything until the server stops."""
        self.wait(self.server.stopping)

    def wait_for_disconnect(self) -> None:
        """Record when the client closes the connection (recv returns EOF or fails)."""
        self.sock.settimeout(3.0)
        try:
            while self.sock.recv(4096):
                pass
        except OSError:
            pass
        self.server.disconnected.set()


Handler = Callable[[Conn, Request], bool | None]
"""Answers one request; returning False closes the connection."""


@dataclass
class LocalServer:
    """Serves every request on every connection with `handler` (return False to close the connection)."""

    handler: Handler
    requests: list[Request] = field(default_factory=list[Request])
    stopping: threading.Event = field(default_factory=threading.Event)
    disconnected: threading.Event = field(default_factory=threading.Event)
    """Set by `Conn.wait_for_disconnect` when the client has closed its connection."""
    go: threading.Event = field(default_factory=threading.Event)
    """A handshake a test and its handler may share."""
    request_type: type[Request] = Request
    """The class each received request is recorded as."""

    def __post_init__(self) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen()
        self.listener.settimeout(0.05)
        self.port: int = self.listener.getsockname()[1]
        self.conns: list[socket.socket] = []
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    @property
    def origin(self) -> str:
        """`http://127.0.0.1:<port>`."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """The server's root URL (its origin)."""
        return self.origin

    @property
    def base_url(self) -> str:
        """An OpenAI-style API root on this server (`<origin>/v1`)."""
        return self.origin + "/v1"

    @property
    def policy(self) -> UrlPolicy:
        """A URL policy that allows exactly this server."""
        return UrlPolicy.local(self.origin)

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                sock, _ = self.listener.accept()
            except OSError:  # the accept timeout, or the listener closed by `close`
                continue
            self.conns.append(sock)
            thread = threading.Thread(target=self._serve, args=(sock,), daemon=True)
            self.threads.append(thread)
            thread.start()

    def _serve(self, sock: socket.socket) -> None:
        sock.settimeout(5.0)
        buffer = b""
        with contextlib.suppress(OSError), sock:
            while not self.stopping.is_set():
                while b"\r\n\r\n" not in buffer:
                    data = sock.recv(65536)
                    if not data:
                        return
                    buffer += data
                head, buffer = buffer.split(b"\r\n\r\n", 1)
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers: dict[str, str] = {}
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length", "0"))
                while len(buffer) < length:
                    data = sock.recv(65536)
                    if not data:
                        return
                    buffer += data
                body, buffer = buffer[:length], buffer[length:]
                request = self.request_type(method, target, headers, body)
                self.requests.append(request)
                if self.handler(Conn(sock, self), request) is False:
                    return

    def close(self) -> None:
        self.stopping.set()
        self.listener.close()
        for sock in self.conns:
            with contextlib.suppress(OSError):
                # shutdown wakes a thread blocked in recv(); close alone does not on Linux.
                sock.shutdown(socket.SHUT_RDWR)
        for thread in self.threads:
            thread.join(timeout=2)


Serve = Callable[[Handler], LocalServer]
"""The `serve` fixture: starts a server with a handler."""


@contextlib.contextmanager
def serve_with(request_type: type[Request] = Request) -> Generator[Serve, None, None]:
    """Start servers that record requests as `request_type`; all are stopped on exit."""
    servers: list[LocalServer] = []

    def start(handler: Handler) -> LocalServer:
        server = LocalServer(handler, request_type=request_type)
        servers.append(server)
        return server

    try:
        yield start
    finally:
        for server in servers:
            server.close()


@pytest.fixture
def serve() -> Iterator[Serve]:
    """Start local servers with the given handlers; all are stopped at the end of the test."""
    with serve_with() as start:
        yield start


def json_reply(document: Any, status: int = 200, headers: dict[str, str] | None = None) -> Handler:
    """A handler answering every request with `document` as JSON (bytes are sent as they are)."""
    data = document if isinstance(document, bytes) else json.dumps(document).encode()

    def handler(conn: Conn, request: Request) -> None:
        del request
        conn.respond(status, data, {"content-type": "application/json", **(headers or {})})

    return handler


def sse_reply(body: bytes, sizes: tuple[int, ...] = AWKWARD_SIZES) -> Handler:
    """A handler streaming `body` as SSE in chunks whose sizes cycle through `sizes`."""

    def handler(conn: Conn, request: Request) -> None:
        del request
        conn.stream(body, sizes)

    return handler
