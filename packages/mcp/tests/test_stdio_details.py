"""The stdio transport's details: explicit environment, stderr policies, id recovery, lazy SDK import."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from ferrule.mcp import MCPServerStdio
from ferrule.mcp._stdio import find_request_id
from ferrule.mcp._toolset import build_env

pytestmark = pytest.mark.anyio


async def test_child_gets_an_explicit_environment_without_the_parents_secrets(
    raw: Callable[..., MCPServerStdio], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FERRULE_TEST_SECRET", "do-not-leak")
    monkeypatch.setenv("FERRULE_TEST_WANTED", "pass-me")
    async with raw(env={"EXPLICIT": "1"}, inherit_env=["FERRULE_TEST_WANTED"]) as server:
        names = json.loads((await server.call_tool("env")).content[0].text)
    assert "FERRULE_TEST_SECRET" not in names
    assert {"EXPLICIT", "FERRULE_TEST_WANTED", "PATH"} <= set(names)
    async with raw(inherit_env=True) as everything:
        assert "FERRULE_TEST_SECRET" in json.loads((await everything.call_tool("env")).content[0].text)


def test_build_env_precedence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/parent/bin")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-parent")
    env = build_env({"PATH": "/child/bin"}, False)
    assert env["PATH"] == "/child/bin"
    assert "OPENAI_API_KEY" not in env
    assert build_env(None, ["OPENAI_API_KEY"])["OPENAI_API_KEY"] == "sk-parent"


async def test_captured_stderr_keeps_the_last_bytes(raw: Callable[..., MCPServerStdio]) -> None:
    async with raw(limits=_limits(max_stderr_bytes=16)) as server:
        await server.call_tool("stderr", {"text": "0123456789abcdefXYZ"})
        with anyio.fail_after(5):  # standard error is read concurrently with stdout
            while not server.stderr_tail.endswith("XYZ\n"):  # noqa: ASYNC110 - no event exists for stderr
                await anyio.sleep(0.01)
    assert server.stderr_tail == "456789abcdefXYZ\n"  # the last 16 of 20 bytes
    assert len(server.stderr_tail.encode()) == 16


def _limits(**kw: Any) -> Any:
    from ferrule.mcp import MCPLimits

    return MCPLimits(**kw)


@pytest.mark.parametrize("policy", ["discard", "inherit"])
async def test_other_stderr_policies_keep_nothing(raw: Callable[..., MCPServerStdio], policy: str) -> None:
    async with raw(stderr=policy) as server:
        assert (await server.call_tool("stderr", {"text": "ferrule-mcp stderr policy test"})).content[
            0
        ].text == "written"
    assert server.stderr_tail == ""


def test_request_ids_are_found_only_at_the_top_level() -> None:
    assert find_request_id(b'{"jsonrpc":"2.0","id":7,"result":{"content":[{"text":"xx') == 7
    assert find_request_id(b'{"id" : "a\\"b", "result": {') == 'a"b'
    nested = b'{"result":{"id":99,"content":[{"type":"text","text":"xxxx'
    assert find_request_id(nested) is None
    assert find_request_id(nested, b'xxx"}]},"jsonrpc":"2.0","id":12}') == 12
    assert find_request_id(nested, b'xxx"}]},"id":12,"jsonrpc":"2.0"}') == 12
    assert find_request_id(nested, b'xx"}, "other": {"id": 5}}') is None
    assert find_request_id(b'{"id":true,"result":{}}') is None
    assert find_request_id(b'[{"id":1}]') is None


def test_import_does_not_load_the_sdk() -> None:
    code = (
        "import sys, ferrule.mcp; "
        "print(sorted(m for m in ('mcp', 'mcp_types', 'pydantic', 'httpx2', 'starlette') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


async def test_list_changed_notification_on_a_handshake_connection_refreshes_tools() -> None:
    changed = anyio.Event()

    def on_event(event: Any) -> None:
        if event.kind == "tools_changed":
            changed.set()

    from .conftest import RAW

    async with MCPServerStdio(sys.executable, [RAW], id="raw", on_event=on_event) as server:
        before = [i.name for i in await server.list_tools()]
        assert "added" not in before
        await server.call_tool("change_tools")
        with anyio.fail_after(5):
            await changed.wait()
        assert [i.name for i in await server.list_tools()] == [*before, "added"]


async def test_credentials_in_the_childs_environment_stay_out_of_its_errors() -> None:
    from ferrule.mcp import MCPConnectionError

    secret = "tok-2f9c4e1a8b7d"
    script = "import os, sys; sys.stderr.write('starting with SERVICE_TOKEN=' + os.environ['SERVICE_TOKEN']); sys.exit(3)"
    server = MCPServerStdio(
        sys.executable,
        ["-c", script],
        env={"SERVICE_TOKEN": secret, "MODE": "debug-mode-1"},
        max_connect_attempts=1,
    )
    with pytest.raises(MCPConnectionError) as caught:
        async with server:
            await server.list_tools()
    text = f"{caught.value} {caught.value!r} {server.stderr_tail}"
    assert "starting with SERVICE_TOKEN=" in text  # the detail is kept ...
    assert secret not in text  # ... without the credential
    assert "debug-mode-1" not in repr(server)
