"""A model whose embedded server starts on its first request: what `llamacpp:` model strings resolve to.

Lifecycle of `LocalLlamaCppModel("qwen2.5-coder-1.5b")` (what `Agent("llamacpp:qwen2.5-coder-1.5b")`
uses, through [`infer_model`][ferrule.providers.llamacpp.infer_model]):

* building the model does nothing: no download, no process, no port;
* the first request fetches and verifies the model if it is not cached (progress bar on stderr)
  and starts llama.cpp's server in a child process, so that loading the weights never blocks the
  event loop (the in-process binding holds the GIL while it loads);
* every model inferred for the same name in this process shares that one server;
* the server stops when the interpreter exits (an `atexit` hook), or earlier with
  [`shutdown_shared_servers`][ferrule.providers.llamacpp.shutdown_shared_servers]; if this process
  dies without running its exit hooks, the child notices its closed standard input and exits too.

For explicit control (start at application start-up, stop at shutdown) use
[`LlamaCppServer`][ferrule.providers.llamacpp.LlamaCppServer] instead.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import AsyncIterator
from pathlib import Path

from ferrule.core.messages import ModelResponse
from ferrule.core.model import Model
from ferrule.core.model import ModelCall
from ferrule.core.model import ModelStreamEvent
from ferrule.core.profile import ModelProfile
from ferrule.core.settings import ModelSettings

from ._catalog import DEFAULT_MODEL
from ._catalog import LocalModel
from ._server import DEFAULT_CONTEXT_SIZE
from ._server import LlamaCppServer

__all__ = ["PROVIDER_NAME", "LocalLlamaCppModel", "shutdown_shared_servers"]

PROVIDER_NAME = "llamacpp"
"""The provider name of models on an embedded server (and the model-string prefix)."""

_shared: dict[tuple[str, int | None, int], LlamaCppServer] = {}
_shared_lock = threading.Lock()
_atexit_registered = False


def _shared_server(model: str | LocalModel | Path, threads: int | None, context_size: int) -> LlamaCppServer:
    global _atexit_registered
    name = str(model) if isinstance(model, Path) else model if isinstance(model, str) else model.name
    key = (name, threads, context_size)
    with _shared_lock:
        server = _shared.get(key)
        if server is None:
            server = LlamaCppServer(model, threads=threads, context_size=context_size, in_process=False)
            _shared[key] = server
            if not _atexit_registered:
                atexit.register(shutdown_shared_servers)
                _atexit_registered = True
        return server


def shutdown_shared_servers() -> None:
    """Stop every server started by `LocalLlamaCppModel`s (they restart on their next request)."""
    with _shared_lock:
        servers = list(_shared.values())
    for server in servers:
        server.close()


class LocalLlamaCppModel(Model):
    """A model on a shared embedded llama.cpp server that starts on the first request.

    See the module docs for the lifecycle. Requests are served by the Chat Completions client of
    `ferrule-openai` with tools emulated through constrained output.
    """

    def __init__(
        self,
        model: str | LocalModel | Path = DEFAULT_MODEL,
        *,
        threads: int | None = None,
        context_size: int = DEFAULT_CONTEXT_SIZE,
        settings: ModelSettings | None = None,
    ) -> None:
        self._server = _shared_server(model, threads, context_size)
        self.settings = settings
        self._inner: Model | None = None

    @property
    def model_name(self) -> str:
        return self._server.model_name

    @property
    def provider_name(self) -> str:
        return PROVIDER_NAME

    @property
    def profile(self) -> ModelProfile:
        return self._server.profile

    @property
    def server(self) -> LlamaCppServer:
        """The shared server behind this model (possibly not started yet)."""
        return self._server

    async def _bound(self) -> Model:
        inner = self._inner
        if inner is None or not self._server.running:
            await self._server.aopen()
            inner = self._inner = self._server.model()
        return inner

    async def _stream(self, call: ModelCall) -> AsyncIterator[ModelStreamEvent]:
        inner = await self._bound()
        stream = inner.stream(call)
        try:
            async for event in stream:
                yield event
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()

    async def _request(self, call: ModelCall) -> ModelResponse:
        inner = await self._bound()
        return await inner.request(call)
