"""A streamable-HTTP server that echoes the bearer token: it never reaches errors, events or logs.

The server is the SDK test server with two hostile tools added, run by uvicorn on 127.0.0.1; a
second, raw HTTP server refuses the connection with a body and headers quoting the token. Every
logger runs at DEBUG (the SDK logs each message there, httpcore2 each response header).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from collections.abc import Iterator
from typing import Any

import pytest
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError

from ferrule.agent import Agent
from ferrule.core.errors import InvalidCredentialError
from ferrule.core.errors import UserError
from ferrule.core.messages import RetryPromptPart
from ferrule.core.url_policy import UrlPolicy
from ferrule.mcp import MCPServerHTTP
from ferrule.mcp import MCPServerUnavailableError
from ferrule.mcp import MCPToolCallError
from tests.support.asgi_server import AsgiServer
from tests.support.http_server import Conn
from tests.support.http_server import LocalServer
from tests.support.http_server import Request
from tests.support.http_server import Serve
from tests.support.http_server import serve as serve  # the fixture
from tests.support.leaks import DEBUG_LOGGERS
from tests.support.leaks import exception_texts
from tests.support.leaks import find_leaks
from tests.support.leaks import log_texts

from .conftest import load_sdk_server

pytestmark = pytest.mark.anyio

# Short and shapeless: no credential pattern recognises it, only the configured-secret match does.
TOKEN = "tok-77q"
QUERY_SECRET = "qs-8812"


def _hostile_app() -> Any:
    server = load_sdk_server().build()

    def authorization(ctx: Context) -> str:
        return (ctx.headers or {}).get("authorization", "none")

    @server.tool()
    def rejecting(ctx: Context) -> str:
        """Answers with a JSON-RPC error quoting the Authorization header."""
        raise MCPError(-32010, f"credential {authorization(ctx)} is not allowed here")

    @server.tool()
    def failing(ctx: Context) -> str:
        """Fails (an `isError` result) quoting the Authorization header."""
        raise ToolError(f"credential {authorization(ctx)} expired")

    return server.streamable_http_app()


@pytest.fixture(scope="module")
def hostile_server() -> Iterator[Any]:
    with AsgiServer(_hostile_app, lifespan="on") as running:
        yield running


@pytest.fixture
def debug_logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG)
    for name in DEBUG_LOGGERS:
        caplog.set_level(logging.DEBUG, logger=name)
    return caplog


def _server(origin: str, events: Any, **options: Any) -> MCPServerHTTP:
    return MCPServerHTTP(
        f"{origin}/mcp?api_key={QUERY_SECRET}",
        id="hostile",
        bearer_token=TOKEN,
        headers={"X-Tenant-Key": "tenant-5521"},
        url_policy=UrlPolicy.local(origin),
        on_event=events.append,
        **options,
    )


def _assert_clean(texts: list[str]) -> None:
    for secret in (TOKEN, QUERY_SECRET, "tenant-5521"):
        assert not find_leaks(secret, texts), find_leaks(secret, texts)


def _client_logs(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Log texts of the client side: the test server runs in this process and logs what it was sent."""
    server_side = ("mcp.server", "uvicorn")
    return log_texts(r for r in caplog.records if not r.name.startswith(server_side))


def _error_texts(error: BaseException) -> list[str]:
    texts, http_objects = exception_texts(error)
    assert not http_objects, "the error reaches httpx2 objects holding the credential headers"
    return texts


async def test_json_rpc_error_echoing_the_token(
    hostile_server: Any, events: Any, debug_logs: pytest.LogCaptureFixture
) -> None:
    async with _server(hostile_server.origin, events) as server:
        with pytest.raises(MCPToolCallError) as info:
            await server.call_tool("rejecting")
        # The token did reach the server (its result is the application's data, returned as sent).
        echoed = await server.call_tool("auth_header")
        assert echoed.structured_content == {"result": f"Bearer {TOKEN}"}
    assert "<redacted>" in str(info.value)
    _assert_clean(_error_texts(info.value))
    _assert_clean([e.message for e in events])
    assert any(r.name.startswith("mcp") for r in debug_logs.records)
    _assert_clean(_client_logs(debug_logs))


async def test_agent_retry_prompts_carry_no_token(
    hostile_server: Any,
    events: Any,
    scripted: Callable[..., Any],
    results: Callable[..., list[Any]],
    debug_logs: pytest.LogCaptureFixture,
) -> None:
    server = _server(hostile_server.origin, events, allow_tools=["rejecting", "failing"])
    model = scripted([[("rejecting", {}), ("failing", {})]])
    result = await Agent(model, toolsets=[server]).run("go")
    rejected, failed = results(result.all_messages())
    assert isinstance(rejected, RetryPromptPart)
    assert isinstance(failed, RetryPromptPart)
    assert "<redacted>" in str(rejected.content)
    assert "<redacted>" in str(failed.content)
    _assert_clean([json.dumps(str(rejected.content)), json.dumps(str(failed.content))])
    _assert_clean([e.message for e in events])
    _assert_clean(_client_logs(debug_logs))


async def test_refused_connection_echoing_the_token(
    serve: Serve, events: Any, debug_logs: pytest.LogCaptureFixture
) -> None:
    def refuse(conn: Conn, request: Request) -> bool:
        body = json.dumps({"error": f"bad token {request.headers.get('authorization')} for {request.target}"})
        conn.respond(401, body.encode(), {"content-type": "application/json", "www-authenticate": TOKEN})
        return False

    http: LocalServer = serve(refuse)
    server = _server(http.origin, events, max_connect_attempts=1, required=True)
    async with server:
        with pytest.raises(MCPServerUnavailableError) as info:
            await server.list_tools()
    assert http.requests
    assert info.value.__cause__ is None
    _assert_clean(_error_texts(info.value))
    _assert_clean([e.message for e in events])
    _assert_clean(_client_logs(debug_logs))


def test_unsendable_credentials_are_refused_before_connecting() -> None:
    policy = UrlPolicy.local("http://127.0.0.1:9")
    with pytest.raises(InvalidCredentialError, match="line feed") as info:
        MCPServerHTTP("http://127.0.0.1:9/mcp", bearer_token=TOKEN + "\n", url_policy=policy)
    assert TOKEN not in str(info.value)
    with pytest.raises(UserError, match="non-ASCII"):
        MCPServerHTTP("http://127.0.0.1:9/mcp", headers={"X-Tenant": "münchen"}, url_policy=policy)
