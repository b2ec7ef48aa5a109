"""The path of one prompt in ARCHITECTURE.md is the path the code takes: the same frames, in order."""

from __future__ import annotations

import re
import traceback
from pathlib import Path

import httpx2
import pytest

from ferrule.agent import Agent
from ferrule.core.errors import ProviderConnectionError
from ferrule.providers.openai import OpenAIChatModel
from ferrule.providers.openai import OpenAIProvider

REPO = Path(__file__).resolve().parents[1]

DOCUMENTED = [
    ("agent/_agent.py", "run_sync"),
    ("agent/_agent.py", "run"),
    ("agent/_run.py", "run_to_end"),
    ("agent/_run.py", "advance"),
    ("agent/_run.py", "_step"),
    ("agent/_request.py", "request"),
    ("core/retry.py", "request_with_retry"),
    ("core/model.py", "request"),
    ("providers/openai/_model.py", "_request"),
    ("core/codec.py", "_request"),
    ("core/codec.py", "_send"),
    ("core/provider.py", "request"),
    ("core/provider.py", "send"),
]


def test_run_sync_reaches_the_transport_through_the_documented_frames() -> None:
    stacks: list[list[tuple[str, str]]] = []

    class Probe(httpx2.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            frames: list[tuple[str, str]] = []
            for frame in traceback.extract_stack():
                found = re.search(r"/ferrule/(.+\.py)$", frame.filename)
                if found is not None and "/tests/" not in frame.filename:
                    frames.append((found.group(1), frame.name))
            stacks.append(frames)
            raise httpx2.ConnectError("probe: stop here", request=request)

    provider = OpenAIProvider(api_key="sk-probe-0000", http_client=httpx2.AsyncClient(transport=Probe()))
    agent = Agent(OpenAIChatModel("gpt-5-mini", provider=provider))
    with pytest.raises(ProviderConnectionError):
        agent.run_sync("hi")
    assert stacks, "the request never reached the transport"
    assert stacks[0] == DOCUMENTED
    architecture = (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")
    assert f"**{len(DOCUMENTED)} ferrule frames**" in architecture
    for number, (module, function) in enumerate(DOCUMENTED, start=1):
        assert re.search(rf"\| {number} \| `[\w.]*{function}` \| `[\w/]*{module}` \|", architecture), (
            number,
            function,
        )
