"""End to end against a real llama.cpp server: the Chat Completions client, no agent.

Every test talks to llama.cpp's own HTTP server on 127.0.0.1 serving Qwen2.5-Coder-0.5B with
`temperature: 0`, and asserts on structure (part kinds, finish reasons, usage, what the server
did), never on wording.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import msgspec
import pytest

from ferrule.core.errors import ProviderConnectionError
from ferrule.core.errors import ProviderError
from ferrule.core.errors import UrlPolicyError
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.model import JsonSchemaFormat
from ferrule.core.model import ModelCall
from ferrule.core.model import ModelStreamEvent
from ferrule.core.model import PartDeltaEvent
from ferrule.core.model import ResponseCompleted
from ferrule.core.model import TextPartDelta
from ferrule.core.model import ToolDefinition
from ferrule.core.settings import ModelSettings
from ferrule.providers.llamacpp import LlamaCppServer
from ferrule.providers.llamacpp import infer_model
from ferrule.providers.llamacpp import shutdown_shared_servers
from ferrule.providers.llamacpp._model import LocalLlamaCppModel

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

GREEDY = ModelSettings(temperature=0, max_tokens=96)

WEATHER = ToolDefinition(
    name="get_weather",
    description="Get the current weather in a city.",
    parameters_json_schema={
        "type": "object",
        "properties": {"city": {"type": "string", "description": "The city name"}},
        "required": ["city"],
    },
)


class City(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    country: str
    population_millions: float


def _call(prompt: str, **kwargs: object) -> ModelCall:
    kwargs.setdefault("settings", GREEDY)
    return ModelCall(messages=[ModelRequest.user_text_prompt(prompt)], **kwargs)  # type: ignore[arg-type]


async def test_buffered_request(local_server: LlamaCppServer) -> None:
    model = local_server.model()
    response = await model.request(_call("Say hello to the user in one short sentence."))
    assert [type(p) for p in response.parts] == [TextPart]
    assert response.text
    assert response.finish_reason == "stop"
    assert response.usage.input_tokens > 0
    assert response.usage.output_tokens > 0
    assert response.model_name == local_server.model_name
    assert response.provider_name == "llamacpp"
    assert response.provider_url == local_server.base_url


async def test_max_tokens_truncation_is_reported(local_server: LlamaCppServer) -> None:
    model = local_server.model()
    response = await model.request(
        _call(
            "Count from 1 to 100, one number per line.", settings=ModelSettings(temperature=0, max_tokens=5)
        )
    )
    assert response.finish_reason == "length"
    assert response.usage.output_tokens == 5


async def test_streamed_request_arrives_incrementally(local_server: LlamaCppServer, probe: Any) -> None:
    model = local_server.model()
    call = _call(
        "Write three sentences about lighthouses.",
        settings=ModelSettings(temperature=0, max_tokens=400),
    )
    deltas: list[str] = []
    busy_after_first_delta: bool | None = None
    completed: list[ModelResponse] = []
    async for event in model.stream(call):
        if isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
            deltas.append(event.delta.content_delta)
            if busy_after_first_delta is None:
                # The server is still generating when the first delta reaches us: nothing was
                # buffered until the end.
                busy_after_first_delta = await probe.busy()
        elif isinstance(event, ResponseCompleted):
            completed.append(event.response)
    assert busy_after_first_delta is True
    assert len(deltas) >= 10
    [response] = completed
    assert response.text == "".join(deltas)
    assert response.finish_reason == "stop"
    # usage came in the final chunk (stream_options.include_usage)
    assert response.usage.output_tokens >= len(deltas) - 1
    assert response.usage.input_tokens > 0


async def test_usage_chunk_is_the_last_chunk_on_the_wire(local_server: LlamaCppServer) -> None:
    model = local_server.model()
    body = model.encode(_call("Say hi."), stream=True)
    headers = {"authorization": f"Bearer {local_server.api_key}", "content-type": "application/json"}
    async with httpx2.AsyncClient() as client:
        response = await client.post(
            f"{local_server.base_url}/chat/completions", content=body, headers=headers
        )
    payloads = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
    assert payloads[-1] == "[DONE]"
    last = msgspec.json.decode(payloads[-2])
    assert last["choices"] == []
    assert last["usage"]["completion_tokens"] > 0
    assert all(
        "usage" not in msgspec.json.decode(p) or not msgspec.json.decode(p)["choices"] for p in payloads[:-1]
    )


async def test_strict_json_schema_output_decodes_into_a_type(local_server: LlamaCppServer) -> None:
    model = local_server.model()
    output = JsonSchemaFormat(name="city", schema=msgspec.json.schema(City), strict=True)
    response = await model.request(
        _call("Describe Paris: its name, its country and its population in millions.", output=output)
    )
    city = msgspec.json.decode(response.text or "", type=City)
    assert city.name
    assert city.country
    assert city.population_millions > 0


async def test_emulated_tool_call_round_trip(local_server: LlamaCppServer) -> None:
    model = local_server.model()
    question = ModelRequest.user_text_prompt("What is the weather in Paris right now? Use the tool.")
    first = await model.request(ModelCall(messages=[question], tools=[WEATHER], settings=GREEDY))
    [call_part] = first.parts
    assert isinstance(call_part, ToolCallPart)
    assert call_part.tool_name == "get_weather"
    assert isinstance(call_part.args_as_dict().get("city"), str)
    assert first.finish_reason == "tool_call"
    result = ModelRequest(
        parts=[
            ToolReturnPart(
                tool_name="get_weather", content="Sunny, 21 °C", tool_call_id=call_part.tool_call_id
            )
        ]
    )
    second = await model.request(
        ModelCall(
            messages=[question, first, result],
            tools=[WEATHER],
            settings=GREEDY.merge(ModelSettings(tool_choice="none")),
        )
    )
    assert [type(p) for p in second.parts] == [TextPart]
    assert second.text
    assert second.finish_reason == "stop"


async def test_emulated_tool_call_streamed(local_server: LlamaCppServer) -> None:
    model = local_server.model()
    events = [
        event
        async for event in model.stream(
            _call("What is the weather in Paris right now? Use the tool.", tools=[WEATHER])
        )
    ]
    assert not any(isinstance(e, PartDeltaEvent) and isinstance(e.delta, TextPartDelta) for e in events)
    completed = events[-1]
    assert isinstance(completed, ResponseCompleted)
    [part] = completed.response.parts
    assert isinstance(part, ToolCallPart)
    assert part.tool_name == "get_weather"


async def test_cancelling_mid_stream_closes_the_connection(local_server: LlamaCppServer, probe: Any) -> None:
    model = local_server.model()
    before = await probe.metric("tokens_predicted_total")
    call = _call(
        "Write a very long story about a lighthouse keeper.",
        settings=ModelSettings(temperature=0, max_tokens=2000),
    )
    seen = 0
    with anyio.move_on_after(120) as scope:
        stream = model.stream(call)
        async for event in stream:
            if isinstance(event, PartDeltaEvent):
                seen += 1
                if seen == 5:
                    break
        await stream.aclose()  # type: ignore[attr-defined]
    assert not scope.cancelled_caught
    assert seen == 5
    # The server notices the closed connection at its next write and stops generating.
    with anyio.fail_after(60):
        await probe.wait_idle()
    generated = await probe.metric("tokens_predicted_total") - before
    assert 5 <= generated < 500


async def test_cancel_scope_mid_stream_closes_the_connection(
    local_server: LlamaCppServer, probe: Any
) -> None:
    model = local_server.model()
    before = await probe.metric("tokens_predicted_total")
    call = _call(
        "Write a very long poem about the sea.", settings=ModelSettings(temperature=0, max_tokens=2000)
    )
    seen = 0
    with anyio.CancelScope() as scope:
        async for event in model.stream(call):
            if isinstance(event, PartDeltaEvent):
                seen += 1
                if seen == 3:
                    scope.cancel()
    assert scope.cancelled_caught
    with anyio.fail_after(60):
        await probe.wait_idle()
    assert await probe.metric("tokens_predicted_total") - before < 500


async def test_server_killed_mid_stream_is_a_connection_error(child_server: LlamaCppServer) -> None:
    model = child_server.model()
    pid = child_server.pid
    assert pid is not None
    call = _call(
        "Write a very long story about a river.", settings=ModelSettings(temperature=0, max_tokens=2000)
    )
    seen = 0
    completed: list[ResponseCompleted] = []

    async def consume(stream: AsyncIterator[ModelStreamEvent]) -> None:
        nonlocal seen
        async for event in stream:
            if isinstance(event, PartDeltaEvent):
                seen += 1
                if seen == 3:
                    os.kill(pid, signal.SIGKILL)
            elif isinstance(event, ResponseCompleted):
                completed.append(event)

    with anyio.fail_after(120), pytest.raises(ProviderError) as caught:
        await consume(model.stream(call))
    assert isinstance(caught.value, ProviderConnectionError)
    assert seen >= 3
    assert completed == []


async def test_requests_without_the_servers_key_are_refused(local_server: LlamaCppServer) -> None:
    async with httpx2.AsyncClient() as client:
        response = await client.post(
            f"{local_server.base_url}/chat/completions",
            json={"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1},
        )
    assert response.status_code == 401


def test_url_policy_allows_exactly_the_servers_origin(local_server: LlamaCppServer) -> None:
    policy = local_server.url_policy
    policy.check(local_server.base_url + "/chat/completions")
    port = int(local_server.origin.rsplit(":", 1)[1])
    with pytest.raises(UrlPolicyError):
        policy.check(f"http://127.0.0.1:{port + 1}/v1")
    with pytest.raises(UrlPolicyError):
        policy.check("http://localhost:80/v1")


async def test_model_string_starts_a_shared_server_lazily(local_server: LlamaCppServer) -> None:
    name = local_server.model_name
    model = infer_model(name)
    assert isinstance(model, LocalLlamaCppModel)
    try:
        server = model.server
        assert model.system == f"llamacpp:{name}"
        assert not server.running
        response = await model.request(_call("Say OK."))
        assert response.text
        assert server.running
        assert server.pid is not None
        # a second model for the same name shares the running server
        again = infer_model(name)
        assert isinstance(again, LocalLlamaCppModel)
        assert again.server is server
    finally:
        shutdown_shared_servers()
    assert not model.server.running
    assert model.server.pid is None


async def test_async_context_manager_starts_and_stops_a_second_server(local_server: LlamaCppServer) -> None:
    async with LlamaCppServer.start(local_server.model_name, threads=1, context_size=1024) as server:
        assert server.running
        assert server.origin != local_server.origin
        response = await server.model().request(_call("Say OK."))
        assert response.text
        origin = server.origin
    assert not server.running
    async with httpx2.AsyncClient() as client:
        with pytest.raises(httpx2.ConnectError):
            await client.get(f"{origin}/health")


def test_starting_and_stopping_at_once_never_hangs(local_model_path: Path) -> None:
    """Regression: a binding server destroyed before its loops started could wait forever."""
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from ferrule.providers.llamacpp import LlamaCppServer\n"
        "for _ in range(4):\n"
        "    with LlamaCppServer(Path(sys.argv[1]), threads=1, context_size=512):\n"
        "        pass\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(local_model_path)], capture_output=True, text=True, timeout=300
    )
    assert done.stdout.strip() == "ok", done.stderr[-2000:]
