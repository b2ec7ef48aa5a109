"""A tiny HTTP/1.1 server on 127.0.0.1 for the Anthropic HTTP tests (raw sockets in threads).

Handlers write exact bytes, so a test controls framing (chunk boundaries), status codes, headers,
stalls and disconnects. Waits use events; nothing sleeps.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest


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
        self.send(f"{len(data):x}\r\n".encode() + data + b"\r\n")

    def end_chunked(self) -> None:
        self.send(b"0\r\n\r\n")

    def hang(self) -> None:
        """Keep the connection open without sending anything until the server stops."""
        self.server.stopping.wait(10)


Handler = Callable[[Conn, Request], "bool | None"]


@dataclass
class LocalServer:
    """Serves every request on every connection with `handler` (return False to close)."""

    handler: Handler
    requests: list[Request] = field(default_factory=lambda: list[Request]())
    stopping: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen()
        self.listener.settimeout(0.05)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.conns: list[socket.socket] = []
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                sock, _ = self.listener.accept()
            except OSError:
                continue
            self.conns.append(sock)
            thread = threading.Thread(target=self._serve, args=(sock,), daemon=True)
            self.threads.append(thread)
            thread.start()

    def _serve(self, sock: socket.socket) -> None:
        sock.settimeout(5.0)
        buffer = b""
        try:
            while not self.stopping.is_set():
                while b"\r\n\r\n" not in buffer:
                    data = sock.recv(65536)
                    if not data:
                        return
                    buffer += data
                head, buffer = buffer.split(b"\r\n\r\n", 1)
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
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
        except OSError:
            pass
        finally:
            sock.close()

    def close(self) -> None:
        self.stopping.set()
        self.listener.close()
        for sock in self.conns:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        for thread in self.threads:
            thread.join(timeout=2)


@pytest.fixture
def serve() -> Iterator[Callable[[Handler], LocalServer]]:
    """Start local servers for a test; all are stopped when it ends."""
    servers: list[LocalServer] = []

    def start(handler: Handler) -> LocalServer:
        server = LocalServer(handler)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()
