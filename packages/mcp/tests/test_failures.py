"""Failing servers: crashes, silence, malformed JSON-RPC, oversized results, unkillable processes.

Each yields its documented error or retry, never hangs a run, and never leaks a child process.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from ferrule.agent import Agent
from ferrule.core.errors import UserError
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import ToolReturnPart
from ferrule.mcp import MCPConnectionLostError
from ferrule.mcp import MCPLimits
from ferrule.mcp import MCPProtocolError
from ferrule.mcp import MCPResultTooLargeError
from ferrule.mcp import MCPServerStdio
from ferrule.mcp import MCPServerUnavailableError
from ferrule.mcp import MCPTimeoutError
from ferrule.mcp import MCPToolCallError

pytestmark = pytest.mark.anyio

LIMIT = 20_000


async def test_crash_mid_call_of_a_read_only_tool_is_retried_on_a_new_process(
    raw: Callable[..., MCPServerStdio],
    scripted: Callable[..., Any],
    results: Callable[..., list[Any]],
    alive: Callable[[int], bool],
    tmp_path: Path,
) -> None:
    server = raw(side_effects={"crash_once": "read_only"})
    marker = str(tmp_path / "crashed")
    model = scripted([("crash_once", {"marker": marker}), ("crash_once", {"marker": marker})])
    async with server:
        result = await Agent(model, toolsets=[server]).run("go")
        second_pid = server.pid
    retry, ok = results(result.all_messages())
    assert isinstance(retry, RetryPromptPart)
    assert "the server process exited with status 3" in retry.content
    assert "you may call it again" in retry.content
    assert ok.content == "survived"
    assert second_pid is not None
    assert not alive(second_pid)


async def test_crash_mid_call_of_a_non_idempotent_tool_reports_an_unknown_outcome(
    raw: Callable[..., MCPServerStdio],
    scripted: Callable[..., Any],
    results: Callable[..., list[Any]],
    events: Any,
) -> None:
    server = raw()
    result = await Agent(scripted([("crash", {})]), toolsets=[server]).run("go")
    (part,) = results(result.all_messages())
    assert isinstance(part, ToolReturnPart)
    assert "outcome is unknown" in part.content
    assert part.metadata == {"ferrule_outcome": "unknown", "mcp_error": "MCPConnectionLostError"}
    assert "connection_lost" in events.kinds()


async def test_a_server_that_never_answers_times_out_and_the_run_ends(
    raw: Callable[..., MCPServerStdio],
    scripted: Callable[..., Any],
    results: Callable[..., list[Any]],
    alive: Callable[[int], bool],
) -> None:
    server = raw(timeout=0.3)
    result = await Agent(scripted([("hang", {}), ("echo", {"after": "hang"})]), toolsets=[server]).run("go")
    hung, echoed = results(result.all_messages())
    assert hung.outcome == "interrupted"  # the agent's own timeout handling for non-idempotent tools
    assert "timed out after 0.3 seconds" in hung.content
    assert json.loads(echoed.content) == {"after": "hang"}  # the connection survived the abandoned call
    assert server.pid is not None
    assert not alive(server.pid)


async def test_direct_call_times_out(raw: Callable[..., MCPServerStdio]) -> None:
    async with raw(timeout=0.2) as server:
        with pytest.raises(MCPTimeoutError, match=r"did not finish within 0\.2 seconds"):
            await server.call_tool("hang")


async def test_malformed_line_breaks_the_connection_and_the_next_call_reconnects(
    raw: Callable[..., MCPServerStdio], alive: Callable[[int], bool]
) -> None:
    async with raw() as server:
        first = await _pid_after_echo(server)
        with pytest.raises(MCPConnectionLostError, match="malformed JSON to stdout"):
            await server.call_tool("garbage")
        second = await _pid_after_echo(server)
        assert second != first
        await anyio.lowlevel.checkpoint()
        assert not alive(first)
    assert not alive(second)


async def _pid_after_echo(server: MCPServerStdio) -> int:
    result = await server.call_tool("echo", {"x": 1})
    assert result.content[0].text == '{"x": 1}'
    assert server.pid is not None
    return server.pid


async def test_response_of_the_wrong_shape_is_a_protocol_error_for_that_call_only(
    raw: Callable[..., MCPServerStdio],
) -> None:
    async with raw() as server:
        pid = await _pid_after_echo(server)
        with pytest.raises(MCPProtocolError, match="not valid JSON-RPC"):
            await server.call_tool("bad_shape")
        assert await _pid_after_echo(server) == pid


async def test_json_rpc_error_answer_is_a_tool_call_error(raw: Callable[..., MCPServerStdio]) -> None:
    async with raw() as server:
        with pytest.raises(MCPToolCallError, match="Unknown tool: nope") as caught:
            await server.call_tool("nope")
        assert caught.value.code == -32602


@pytest.mark.parametrize("id_last", [False, True])
async def test_message_size_limit_is_inclusive(raw: Callable[..., MCPServerStdio], id_last: bool) -> None:
    async with raw(limits=MCPLimits(max_message_bytes=LIMIT)) as server:
        at_limit = await server.call_tool("sized", {"size": LIMIT, "id_last": id_last})
        assert len(at_limit.content[0].text) > LIMIT - 200
        pid = server.pid
        with pytest.raises(MCPResultTooLargeError, match=f"over the limit of {LIMIT} bytes") as caught:
            await server.call_tool("sized", {"size": LIMIT + 1, "id_last": id_last})
        assert caught.value.limit == LIMIT
        # The oversized line was attributed to its request: the connection is still the same.
        assert await _pid_after_echo(server) == pid


async def test_a_50_mb_result_is_discarded_while_streaming_and_reported_to_the_model(
    raw: Callable[..., MCPServerStdio], scripted: Callable[..., Any], results: Callable[..., list[Any]]
) -> None:
    server = raw(limits=MCPLimits(max_message_bytes=1024 * 1024), side_effects={"sized": "read_only"})
    model = scripted([("sized", {"size": 50 * 1024 * 1024}), ("echo", {"still": "alive"})])
    result = await Agent(model, toolsets=[server]).run("go")
    too_large, echoed = results(result.all_messages())
    assert isinstance(too_large, RetryPromptPart)
    assert "exceeded the limit of 1048576 bytes" in too_large.content
    assert json.loads(echoed.content) == {"still": "alive"}


async def test_an_oversized_result_of_a_non_idempotent_tool_is_not_offered_for_retry(
    raw: Callable[..., MCPServerStdio], scripted: Callable[..., Any], results: Callable[..., list[Any]]
) -> None:
    server = raw(limits=MCPLimits(max_message_bytes=LIMIT))
    result = await Agent(scripted([("sized", {"size": LIMIT * 3})]), toolsets=[server]).run("go")
    (part,) = results(result.all_messages())
    assert isinstance(part, ToolReturnPart)
    assert "Do not call it again" in part.content


async def test_oversized_message_that_cannot_be_attributed_breaks_the_connection(
    raw: Callable[..., MCPServerStdio],
) -> None:
    async with raw(limits=MCPLimits(max_message_bytes=LIMIT)) as server:
        pid = await _pid_after_echo(server)
        with pytest.raises(MCPConnectionLostError, match=f"more than the limit of {LIMIT} bytes"):
            # Long enough that the id is neither in the kept prefix (64 KiB) nor at the very end.
            await server.call_tool("sized", {"size": 200_000, "hidden_id": True})
        assert await _pid_after_echo(server) != pid


async def test_oversized_notification_is_dropped(raw: Callable[..., MCPServerStdio]) -> None:
    async with raw(limits=MCPLimits(max_message_bytes=LIMIT)) as server:
        pid = await _pid_after_echo(server)
        # `huge_no_id` writes an oversized *notification*: dropped, and the call itself never
        # gets an answer, so it runs into its timeout while the connection stays up.
        server.timeout = 0.3
        with pytest.raises(MCPTimeoutError):
            await server.call_tool("huge_no_id", {"size": LIMIT * 2})
        assert await _pid_after_echo(server) == pid


async def test_server_that_ignores_sigterm_and_stdin_is_killed_and_reaped(
    raw: Callable[..., MCPServerStdio], alive: Callable[[int], bool]
) -> None:
    server = raw("--ignore-term", shutdown_timeout=0.2, kill_timeout=0.2)
    async with server:
        pid = await _pid_after_echo(server)
    assert not alive(pid)
    assert server.returncode is not None
    assert server.returncode < 0


async def test_cancelled_run_still_reaps_the_child(
    raw: Callable[..., MCPServerStdio], scripted: Callable[..., Any], alive: Callable[[int], bool]
) -> None:
    server = raw(timeout=None)
    agent = Agent(scripted([("hang", {})]), toolsets=[server])
    with anyio.move_on_after(1):
        await agent.run("go")
    assert server.pid is not None
    assert not alive(server.pid)


async def test_required_server_that_cannot_start_fails_the_run_after_bounded_attempts(
    raw: Callable[..., MCPServerStdio], scripted: Callable[..., Any], events: Any
) -> None:
    server = raw("--fail-start", required=True, max_connect_attempts=2, reconnect_backoff=0.01)
    with pytest.raises(MCPServerUnavailableError, match="refusing to start") as caught:
        await Agent(scripted([]), toolsets=[server]).run("go")
    assert caught.value.server_id == "raw"
    assert events.kinds() == ["connect_failed", "connect_failed", "unavailable"]


async def test_optional_server_that_cannot_start_vanishes_with_a_warning(
    raw: Callable[..., MCPServerStdio], scripted: Callable[..., Any], events: Any
) -> None:
    seen: list[Any] = []
    server = raw("--fail-start", max_connect_attempts=1)
    result = await Agent(scripted([], seen), toolsets=[server]).run("go")
    assert result.output == "done"
    assert list(seen[0].function_tools) == []
    (unavailable,) = events.of("unavailable")
    assert "refusing to start" in unavailable.message


async def test_unavailable_server_is_not_retried_during_its_cooldown(
    raw: Callable[..., MCPServerStdio], events: Any
) -> None:
    server = raw("--fail-start", max_connect_attempts=1, unavailable_cooldown=60)
    async with server:
        for _ in range(3):
            with pytest.raises(MCPServerUnavailableError):
                await server.list_tools()
    assert events.kinds().count("connect_failed") == 1


async def test_missing_command_is_not_retried(events: Any) -> None:
    server = MCPServerStdio(
        "/nonexistent/ferrule-mcp-server", id="missing", max_connect_attempts=5, on_event=events.append
    )
    async with server:
        with pytest.raises(MCPServerUnavailableError, match="FileNotFoundError"):
            await server.list_tools()
    assert events.kinds() == ["connect_failed", "unavailable"]


def test_stdio_server_refuses_bad_options() -> None:
    with pytest.raises(UserError, match="stderr must be"):
        MCPServerStdio(sys.executable, stderr="pipe")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="timeout must be a positive"):
        MCPServerStdio(sys.executable, timeout=0)
    with pytest.raises(UserError, match="max_connect_attempts"):
        MCPServerStdio(sys.executable, max_connect_attempts=0)
    with pytest.raises(ValueError, match="max_message_bytes must be a positive int"):
        MCPLimits(max_message_bytes=0)
