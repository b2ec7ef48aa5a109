"""Test support for ferrule-google: a raw-socket HTTP/1.1 server on 127.0.0.1 and cassette helpers.

The server writes exact bytes, so tests control framing and timing (SSE split at any byte, a
stream that stalls, a resumable-upload start that names a foreign session URL).
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from ferrule.core.http import Timeouts
from ferrule.core.url_policy import UrlPolicy

KEY = "AIzaSy-SENTINEL-test-key-0123456789abcdefghij"
FAST = Timeouts(connect=2.0, first_byte=2.0, read=0.5, total=10.0)


@dataclass
class Request:
    """One request the server received."""

    method: str
    target: str
    headers: dict[str, str]
    body: bytes

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]

    @property
    def query(self) -> str:
        return self.target.split("?", 1)[1] if "?" in self.target else ""

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Conn:
    """The server side of one connection."""

    sock: socket.socket
    server: Server

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def respond(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        head = [f"HTTP/1.1 {status} Status", f"content-length: {len(body)}"]
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
        if data:
            self.send(f"{len(data):x}\r\n".encode() + data + b"\r\n")

    def end_chunked(self) -> None:
        self.send(b"0\r\n\r\n")

    def hang(self) -> None:
        """Keep the connection open and silent until the test ends."""
        while not self.server.stopping.wait(0.02):
            pass


Handler = Callable[[Conn, Request], bool | None]


@dataclass
class Server:
    """A tiny HTTP/1.1 server; `handler(conn, request)` answers, returning False to close."""

    handler: Handler
    requests: list[Request] = field(default_factory=list[Request])
    stopping: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen()
        self.listener.settimeout(0.05)
        self.port: int = self.listener.getsockname()[1]
        self.threads: list[threading.Thread] = []
        self.sockets: list[socket.socket] = []
        self.accept_thread = threading.Thread(target=self._accept, daemon=True)
        self.accept_thread.start()

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def policy(self) -> UrlPolicy:
        return UrlPolicy.local(self.origin)

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                sock, _ = self.listener.accept()
            except OSError:
                continue
            self.sockets.append(sock)
            thread = threading.Thread(target=self._serve, args=(sock,), daemon=True)
            self.threads.append(thread)
            thread.start()

    def _serve(self, sock: socket.socket) -> None:
        sock.settimeout(5.0)
        buffer = b""
        conn = Conn(sock, self)
        try:
            while not self.stopping.is_set():
                while b"\r\n\r\n" not in buffer:
                    data = sock.recv(65536)
                    if not data:
                        return
                    buffer += data
                head, buffer = buffer.split(b"\r\n\r\n", 1)
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
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
                request = Request(method, target, headers, body)
                self.requests.append(request)
                if self.handler(conn, request) is False:
                    return
        except OSError:
            return
        finally:
            sock.close()

    def close(self) -> None:
        self.stopping.set()
        self.accept_thread.join(timeout=2)
        self.listener.close()
        for sock in self.sockets:
            # Wakes a handler blocked reading an idle keep-alive connection.
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        for thread in self.threads:
            thread.join(timeout=2)


@pytest.fixture
def serve() -> Iterator[Callable[[Handler], Server]]:
    """Start servers for one test; they are stopped when it ends."""
    servers: list[Server] = []

    def start(handler: Handler) -> Server:
        server = Server(handler)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()
