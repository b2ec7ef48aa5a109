"""Fixtures of the end-to-end suite: a real llama.cpp server on 127.0.0.1 serving a real model.

The model is `qwen2.5-coder-0.5b` (0.49 GB, downloaded once into the user's model cache).

The servers use ONE inference thread unless `FERRULE_LLAMACPP_THREADS` says otherwise. llama.cpp's
threads meet at a barrier after every operation, so as soon as anything else wants a core (the
test process itself, another job on a 2-core CI machine) a 2-thread server collapses: measured
on this project's 2-core machine, 0.5B generation ran at ~44 tok/s with 1 thread and ~55 with 2
when idle, but ~27 with 1 thread and ~1.5 (!) with 2 under load. One thread costs a fifth of
the speed at best and saves the suite at worst.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from ferrule.providers.llamacpp import LlamaCppServer
from ferrule.providers.llamacpp import ModelDownloadError
from ferrule.providers.llamacpp import ensure_model

E2E_MODEL = "qwen2.5-coder-0.5b"
"""The model the suite runs on: the smallest in the catalog."""

E2E_THREADS = int(os.environ.get("FERRULE_LLAMACPP_THREADS", "1"))
"""Inference threads of the suite's servers."""


@pytest.fixture(scope="session")
def local_model_path() -> Path:
    """The verified GGUF file; the suite skips (with the reason) only when it cannot be downloaded."""
    try:
        return ensure_model(E2E_MODEL)
    except ModelDownloadError as exc:
        pytest.skip(f"the end-to-end model {E2E_MODEL} cannot be downloaded: {exc}")


@pytest.fixture(scope="session")
def local_server(local_model_path: Path) -> Iterator[LlamaCppServer]:
    """One in-process server for the whole session (metrics on, so tests can see what it did)."""
    del local_model_path
    with LlamaCppServer(E2E_MODEL, threads=E2E_THREADS, params={"endpoint_metrics": True}) as server:
        yield server


class ServerProbe:
    """Reads what a server is doing from llama.cpp's own management endpoints."""

    def __init__(self, server: LlamaCppServer) -> None:
        self.server = server

    async def _get(self, path: str) -> httpx2.Response:
        headers = {"authorization": f"Bearer {self.server.api_key}"}
        async with httpx2.AsyncClient(headers=headers) as client:
            response = await client.get(self.server.origin + path)
        response.raise_for_status()
        return response

    async def busy(self) -> bool:
        """Whether a slot is generating right now."""
        slots: list[dict[str, Any]] = (await self._get("/slots")).json()
        return any(slot.get("is_processing") for slot in slots)

    async def wait_idle(self) -> None:
        """Return once no slot is generating (callers bound the wait with a timeout)."""
        # Polling is the only way to watch another process's state.
        while await self.busy():  # noqa: ASYNC110
            await anyio.sleep(0.1)

    async def metric(self, name: str) -> float:
        """One value of the Prometheus metrics, e.g. `tokens_predicted_total`."""
        for line in (await self._get("/metrics")).text.splitlines():
            if line.startswith(f"llamacpp:{name} "):
                return float(line.split()[1])
        raise AssertionError(f"metric {name} missing")


@pytest.fixture
def child_server(local_model_path: Path) -> Iterator[LlamaCppServer]:
    """A server in its own process, so a test can kill it."""
    del local_model_path
    with LlamaCppServer(E2E_MODEL, threads=E2E_THREADS, in_process=False) as server:
        yield server


@pytest.fixture
def probe(local_server: LlamaCppServer) -> ServerProbe:
    """A probe of the session's server."""
    return ServerProbe(local_server)
