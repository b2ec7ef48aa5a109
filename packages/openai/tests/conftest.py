"""Test support for ferrule-openai: a tiny HTTP/1.1 server on 127.0.0.1 and call builders.

The server runs in threads on raw sockets and writes exact bytes, so a test controls status codes,
headers, chunk boundaries (SSE split at awkward places), stalls and disconnects. It replays bodies
recorded from the real APIs (the shared cassettes) or small bodies written in the test. Waits use
events; nothing sleeps.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest

from ferrule.core.http import Timeouts
from ferrule.core.url_policy import UrlPolicy

FAST = Timeouts(connect=2.0, first_byte=2.0, read=0.5, total=10.0)
"""Timeouts for tests: generous for real work, short for deliberate stalls."""


@dataclass
class Request:
    """One request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Conn:
    """The server side of one connection."""

    sock: socket.socket
    server: LocalServer

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def respond(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        head = [f"HTTP/1.1 {status} Status", f"content-length: {len(body)}"]
        head += [f"{k}: {v}" for k, v in (headers or {}).items()]
        self.send(("\r\n".join(head) + "\r\n\r\n").encode() + body)

    def start_chunked(self, status: int = 200, headers: dict[str, str] | None = None) -> None:
        head = [f"HTTP/1.1 {status} Status", "transfer-encoding: chunked"]
        head += [f"{k}: {v}" for k, v in (headers or {}).items()]
        self.send(("\r\n".join(head) + "\r\n\r\n").encode())

    def chunk(self, data: bytes) -> None:
        if data:
            self.send(f"{len(data):x}\r\n".encode() + data + b"\r\n")

    def end_chunked(self) -> None:
        self.send(b"0\r\n\r\n")

    def stream(self, body: bytes, sizes: tuple[int, ...] = (7, 1, 13, 64, 3)) -> None:
        """Send `body` as an SSE response in chunks of cycling awkward sizes (splitting lines and UTF-8)."""
        self.start_chunked(headers={"content-type": "text/event-stream"})
        position = 0
        index = 0
        while position < len(body):
            size = sizes[index % len(sizes)]
            self.chunk(body[position : position + size])
            position += size
            index += 1
        self.end_chunked()

    def hang(self) -> None:
        """Keep the connection open without sending anything until the server stops."""
        self.server.stopping.wait(10)


Handler = Callable[[Conn, Request], "bool | None"]


@dataclass
class LocalServer:
    """Serves every request on every connection with `handler` (return False to close the connection)."""

    handler: Handler
    requests: list[Request] = field(default_factory=lambda: list[Request]())
    stopping: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen()
        self.listener.settimeout(0.05)
        self.origin = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.base_url = self.origin + "/v1"
        self.policy = UrlPolicy.local(self.origin)
        self.conns: list[socket.socket] = []
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                sock, _ = self.listener.accept()
            except (TimeoutError, OSError):
                continue
            self.conns.append(sock)
            thread = threading.Thread(target=self._serve, args=(sock,), daemon=True)
            self.threads.append(thread)
            thread.start()

    def _serve(self, sock: socket.socket) -> None:
        sock.settimeout(5)
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
                method, path, _ = lines[0].split(" ", 2)
                headers = {}
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
                request = Request(method, path, headers, body)
                self.requests.append(request)
                if self.handler(Conn(sock, self), request) is False:
                    return

    def close(self) -> None:
        self.stopping.set()
        for sock in self.conns:
            with contextlib.suppress(OSError):
                # shutdown wakes a thread blocked in recv(); close alone does not on Linux.
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()
        self.listener.close()
        for thread in self.threads:
            thread.join(2)


@pytest.fixture
def serve() -> Iterator[Callable[[Handler], LocalServer]]:
    """Start local servers with the given handlers; all are stopped at the end of the test."""
    servers: list[LocalServer] = []

    def start(handler: Handler) -> LocalServer:
        server = LocalServer(handler)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()
