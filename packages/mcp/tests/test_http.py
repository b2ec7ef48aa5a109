"""An SDK `MCPServer` over streamable HTTP on 127.0.0.1 (uvicorn in a thread): policy, secrets, limits."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import httpx2
import pytest

from ferrule.agent import Agent
from ferrule.core.errors import UrlPolicyError
from ferrule.core.messages import RetryPromptPart
from ferrule.core.url_policy import UrlPolicy
from ferrule.mcp import MCPLimits
from ferrule.mcp import MCPResultTooLargeError
from ferrule.mcp import MCPServerHTTP
from ferrule.mcp import MCPServerUnavailableError

pytestmark = pytest.mark.anyio

SECRET = "s3cret-token-value"


def http(server: Any, events: Any, **options: Any) -> MCPServerHTTP:
    return MCPServerHTTP(
        server.origin + "/mcp",
        id="remote",
        url_policy=UrlPolicy.local(server.origin),
        on_event=events.append,
        **options,
    )


def test_default_url_policy_refuses_a_plain_http_local_server() -> None:
    with pytest.raises(UrlPolicyError, match="plain http:// is not allowed"):
        MCPServerHTTP("http://127.0.0.1:9/mcp")
    with pytest.raises(UrlPolicyError, match="private"):
        MCPServerHTTP("https://10.1.2.3/mcp")
    with pytest.raises(UrlPolicyError, match="credentials"):
        MCPServerHTTP("https://user:pw@example.com/mcp")


async def test_agent_lists_and_calls_tools_over_streamable_http(
    http_server: Any, events: Any, scripted: Callable[..., Any], results: Callable[..., list[Any]]
) -> None:
    server = http(http_server, events, bearer_token=SECRET, allow_tools=["add", "auth_header"])
    model = scripted([[("add", {"a": 20, "b": 22}), ("auth_header", {})]])
    result = await Agent(model, toolsets=[server]).run("go")
    added, header = results(result.all_messages())
    assert added.content == {"result": 42}
    assert header.content == {"result": f"Bearer {SECRET}"}


async def test_secrets_stay_out_of_reprs_events_logs_and_errors(
    events: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server = MCPServerHTTP(
        "http://127.0.0.1:9/mcp?api_key=querysecret",
        id="down",
        headers={"X-Api-Key": SECRET},
        bearer_token=SECRET,
        url_policy=UrlPolicy.local("http://127.0.0.1:9"),
        max_connect_attempts=1,
        required=True,
        on_event=events.append,
    )
    assert SECRET not in repr(server)
    assert "querysecret" not in repr(server)
    assert server.header_names == ["Authorization", "X-Api-Key"]
    async with server:
        with pytest.raises(MCPServerUnavailableError) as caught:
            await server.list_tools()
    texts = [str(caught.value), *(e.message for e in events), caplog.text]
    assert all(SECRET not in text for text in texts)


async def test_optional_http_server_that_is_down_vanishes(events: Any, scripted: Callable[..., Any]) -> None:
    seen: list[Any] = []
    server = MCPServerHTTP(
        "http://127.0.0.1:9/mcp",
        url_policy=UrlPolicy.local("http://127.0.0.1:9"),
        max_connect_attempts=2,
        reconnect_backoff=0.01,
        on_event=events.append,
    )
    result = await Agent(scripted([], seen), toolsets=[server]).run("go")
    assert result.output == "done"
    assert list(seen[0].function_tools) == []
    assert events.kinds() == ["connect_failed", "connect_failed", "unavailable"]


class _Recorder(httpx2.AsyncBaseTransport):
    """Records the Content-Length of every response with a JSON body."""

    def __init__(self) -> None:
        self.inner = httpx2.AsyncHTTPTransport()
        self.sizes: list[int] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        is_call = b'"tools/call"' in request.content
        if is_call and response.headers.get("content-type", "").startswith("application/json"):
            self.sizes.append(int(response.headers["content-length"]))
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_json_body_limit_is_inclusive(http_json_server: Any, events: Any) -> None:
    recorder = _Recorder()
    probe = http(http_json_server, events, http_transport=recorder)
    async with probe:
        await probe.call_tool("big", {"size": 5000})
    (size,) = recorder.sizes
    async with http(http_json_server, events, limits=MCPLimits(max_message_bytes=size)) as exact:
        result = await exact.call_tool("big", {"size": 5000})
        assert result.structured_content == {"result": "z" * 5000}
    async with http(http_json_server, events, limits=MCPLimits(max_message_bytes=size - 1)) as tight:
        with pytest.raises(MCPResultTooLargeError, match=f"limit of {size - 1} bytes"):
            await tight.call_tool("big", {"size": 5000})
        # Only that request failed: the connection serves the next one.
        assert (await tight.call_tool("add", {"a": 1, "b": 1})).structured_content == {"result": 2}


async def test_sse_event_limit_turns_a_huge_result_into_a_retry(
    http_server: Any, events: Any, scripted: Callable[..., Any], results: Callable[..., list[Any]]
) -> None:
    server = http(
        http_server,
        events,
        limits=MCPLimits(max_message_bytes=64 * 1024),
        side_effects={"big": "read_only"},
        allow_tools=["big"],
    )
    model = scripted([("big", {"size": 1_000_000}), ("big", {"size": 3})])
    result = await Agent(model, toolsets=[server]).run("go")
    too_large, ok = results(result.all_messages())
    assert isinstance(too_large, RetryPromptPart)
    assert "exceeded the limit of 65536 bytes" in too_large.content
    assert ok.content == {"result": "zzz"}
