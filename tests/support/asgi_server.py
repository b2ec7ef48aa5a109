"""An ASGI app served by uvicorn in a thread on 127.0.0.1, and a free port for a server of another process.

The MCP tests serve the SDK's and ferrule's own streamable-HTTP apps with it, the UI tests ferrule's
browser apps.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from typing import Any
from typing import Literal

__all__ = ["AsgiServer", "free_port"]


def free_port() -> int:
    """A port of 127.0.0.1 that was free a moment ago, for a server another process binds.

    In this process, use `AsgiServer`, which keeps the socket it bound: another process could take
    a port between this call and the bind.
    """
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class AsgiServer:
    """An ASGI app run by uvicorn in a thread (its own asyncio loop) on 127.0.0.1.

    `make_app` is called in that thread (an app may create anyio primitives bound to the running
    backend). The listening socket is bound here and handed to uvicorn, so no other process on a
    busy machine can take the port between choosing it and serving on it.
    """

    def __init__(
        self, make_app: Callable[[], Any], *, lifespan: Literal["auto", "on", "off"] = "auto"
    ) -> None:
        import uvicorn

        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.port = int(self.socket.getsockname()[1])
        config = uvicorn.Config(
            make_app, factory=True, host="127.0.0.1", port=self.port, log_level="warning", lifespan=lifespan
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.socket]}, daemon=True)

    @property
    def origin(self) -> str:
        """`http://127.0.0.1:<port>`."""
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> AsgiServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the test server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(15)
        self.socket.close()
