"""Acceptance: MCP servers written with the TypeScript SDK, from npm, over stdio and streamable HTTP.

`@modelcontextprotocol/server-filesystem` and `@modelcontextprotocol/server-everything`, pinned by
`node/package-lock.json` and installed with `npm ci` (by `.ci/run`, or here when `node_modules` is
missing or differs from the lockfile). Their schemas are zod-to-json-schema's Draft 7; every tool
must be listed, and one of each is called through an agent step.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ferrule.agent import Agent
from ferrule.agent.testing import AgentInfo
from ferrule.core.messages import ToolReturnPart
from ferrule.core.url_policy import UrlPolicy
from ferrule.mcp import MCPServerHTTP
from ferrule.mcp import MCPServerStdio
from ferrule.mcp import MCPToolset
from tests.support.asgi_server import free_port

pytestmark = pytest.mark.anyio

NODE = Path(__file__).resolve().parent / "node"
PACKAGES = NODE / "node_modules" / "@modelcontextprotocol"
FILESYSTEM = PACKAGES / "server-filesystem" / "dist" / "index.js"
EVERYTHING = PACKAGES / "server-everything" / "dist" / "index.js"
LOOPBACK = NODE / "loopback.mjs"

# As the servers list them (2026.8.31).
FILESYSTEM_TOOLS = [
    "read_file",
    "read_text_file",
    "read_media_file",
    "read_multiple_files",
    "write_file",
    "edit_file",
    "create_directory",
    "list_directory",
    "list_directory_with_sizes",
    "directory_tree",
    "move_file",
    "search_files",
    "get_file_info",
    "list_allowed_directories",
]
EVERYTHING_TOOLS = [
    "echo",
    "get-annotated-message",
    "get-env",
    "get-resource-links",
    "get-resource-reference",
    "get-structured-content",
    "get-sum",
    "get-tiny-image",
    "gzip-file-as-resource",
    "toggle-simulated-logging",
    "toggle-subscriber-updates",
    "trigger-long-running-operation",
    "simulate-research-query",
]


def _installed() -> bool:
    """Whether `node_modules` holds exactly the versions the lockfile pins."""
    lock = json.loads((NODE / "package-lock.json").read_text())
    for path, entry in lock["packages"].items():
        if not path:
            continue  # the root project
        try:
            version = json.loads((NODE / path / "package.json").read_text())["version"]
        except FileNotFoundError:
            if entry.get("optional"):
                continue  # an optional dependency npm skipped on this platform
            return False
        except (OSError, ValueError, KeyError):
            return False
        if version != entry["version"]:
            return False
    return True


@pytest.fixture(scope="session")
def node() -> str:
    """The `node` executable, with the pinned servers installed (`npm ci`) if they are not yet."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        if os.environ.get("CI"):
            pytest.fail("node and npm are needed to run the MCP servers from npm (they are in CI)")
        pytest.skip("node and npm are not installed")
    if not _installed():
        command = [npm, "ci", "--prefix", str(NODE), "--no-audit", "--no-fund", "--ignore-scripts"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
        if done.returncode != 0:
            pytest.fail(
                f"`npm ci` of the test MCP servers failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
            )
        assert _installed()
    return node


def _env() -> dict[str, str]:
    return {name: os.environ[name] for name in ("PATH", "HOME", "LANG", "TMPDIR") if name in os.environ}


@pytest.fixture(scope="session")
def everything_http(node: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """server-everything over streamable HTTP on 127.0.0.1 (its port bound there by `loopback.mjs`)."""
    port = free_port()
    log = tmp_path_factory.mktemp("everything") / "stderr.txt"
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [node, "--import", LOOPBACK.as_uri(), str(EVERYTHING), "streamableHttp"],
            env={**_env(), "PORT": str(port)},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,  # it logs every request there
            stderr=stderr,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                pytest.fail(f"server-everything exited with {process.returncode}: {log.read_text()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"server-everything did not listen on port {port}: {log.read_text()[-2000:]}")
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def _no_exclusions(events: Any) -> None:
    assert events.of("tool_excluded") == [], [e.message for e in events.of("tool_excluded")]


async def _listed(server: MCPToolset) -> list[str]:
    async with server:
        return [info.name for info in await server.list_tools()]


def _filesystem(node: str, root: Path, events: Any) -> MCPServerStdio:
    return MCPServerStdio(
        node, [str(FILESYSTEM), str(root)], id="filesystem", env=_env(), on_event=events.append
    )


def _everything_stdio(node: str, events: Any) -> MCPServerStdio:
    return MCPServerStdio(
        node, [str(EVERYTHING), "stdio"], id="everything", env=_env(), on_event=events.append
    )


def _everything_over_http(url: str, events: Any) -> MCPServerHTTP:
    origin = url.removesuffix("/mcp")
    return MCPServerHTTP(url, id="everything", url_policy=UrlPolicy.local(origin), on_event=events.append)


async def test_filesystem_server_lists_every_tool(node: str, tmp_path: Path, events: Any) -> None:
    assert await _listed(_filesystem(node, tmp_path, events)) == FILESYSTEM_TOOLS
    _no_exclusions(events)


async def test_everything_server_lists_every_tool_over_stdio(node: str, events: Any) -> None:
    assert await _listed(_everything_stdio(node, events)) == EVERYTHING_TOOLS
    _no_exclusions(events)


async def test_everything_server_lists_every_tool_over_streamable_http(
    everything_http: str, events: Any
) -> None:
    assert await _listed(_everything_over_http(everything_http, events)) == EVERYTHING_TOOLS
    _no_exclusions(events)


async def test_draft_07_schemas_reach_the_model_as_draft_2020_12(
    node: str, tmp_path: Path, events: Any, scripted: Callable[..., Any]
) -> None:
    seen: list[AgentInfo] = []
    await Agent(scripted([], seen), toolsets=[_filesystem(node, tmp_path, events)]).run("go")
    offered = {tool.name: tool.parameters_json_schema for tool in seen[0].function_tools}
    assert sorted(offered) == sorted(FILESYSTEM_TOOLS)
    assert "$schema" not in json.dumps(offered)
    edits = offered["edit_file"]
    assert edits["required"] == ["path", "edits"]
    assert list(edits["properties"]) == ["path", "edits", "dryRun"]  # the server's order
    assert edits["properties"]["edits"]["items"]["required"] == ["oldText", "newText"]


async def test_agent_writes_and_reads_a_file_through_the_filesystem_server(
    node: str, tmp_path: Path, events: Any, scripted: Callable[..., Any], results: Callable[..., list[Any]]
) -> None:
    note = tmp_path / "note.txt"
    model = scripted(
        [
            ("write_file", {"path": str(note), "content": "written by a ferrule agent"}),
            ("read_text_file", {"path": str(note)}),
        ]
    )
    result = await Agent(model, toolsets=[_filesystem(node, tmp_path, events)]).run("go")
    assert result.output == "done"
    written, read = results(result.all_messages())
    assert isinstance(written, ToolReturnPart)
    assert note.read_text() == "written by a ferrule agent"
    assert isinstance(read, ToolReturnPart)
    assert read.content == {"content": "written by a ferrule agent"}  # its structuredContent


async def test_agent_calls_the_everything_server_over_stdio(
    node: str, events: Any, scripted: Callable[..., Any], results: Callable[..., list[Any]]
) -> None:
    model = scripted([("get-sum", {"a": 2, "b": 40})])
    result = await Agent(model, toolsets=[_everything_stdio(node, events)]).run("go")
    (part,) = results(result.all_messages())
    assert isinstance(part, ToolReturnPart)
    assert part.content == "The sum of 2 and 40 is 42."


async def test_agent_calls_the_everything_server_over_streamable_http(
    everything_http: str, events: Any, scripted: Callable[..., Any], results: Callable[..., list[Any]]
) -> None:
    model = scripted([("echo", {"message": "over streamable HTTP"}), ("get-sum", {"a": 1.5, "b": 2})])
    result = await Agent(model, toolsets=[_everything_over_http(everything_http, events)]).run("go")
    echoed, summed = results(result.all_messages())
    assert isinstance(echoed, ToolReturnPart)
    assert echoed.content == "Echo: over streamable HTTP"
    assert summed.content == "The sum of 1.5 and 2 is 3.5."
