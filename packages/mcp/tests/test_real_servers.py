"""Acceptance: real MCP servers from PyPI (`mcp-server-time`, `mcp-server-git`) over stdio, driven by an agent."""

from __future__ import annotations

import datetime
import importlib.util
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from ferrule.agent import Agent
from ferrule.agent import Approved
from ferrule.agent import Paused
from ferrule.agent.testing import AgentInfo
from ferrule.core.messages import ToolReturnPart
from ferrule.mcp import MCPServerStdio

pytestmark = pytest.mark.anyio

needs_time = pytest.mark.skipif(
    importlib.util.find_spec("mcp_server_time") is None,
    reason="mcp-server-time is not installed (test dependency)",
)
needs_git = pytest.mark.skipif(
    importlib.util.find_spec("mcp_server_git") is None,
    reason="mcp-server-git is not installed (test dependency)",
)


def time_server(**options: Any) -> MCPServerStdio:
    return MCPServerStdio(
        sys.executable, ["-m", "mcp_server_time", "--local-timezone", "UTC"], id="time", **options
    )


@needs_time
async def test_agent_lists_and_calls_mcp_server_time(
    scripted: Callable[..., Any], results: Callable[..., list[Any]], alive: Callable[[int], bool]
) -> None:
    server = time_server(namespace=True)
    seen: list[AgentInfo] = []
    model = scripted(
        [
            ("time__get_current_time", {"timezone": "UTC"}),
            (
                "time__convert_time",
                {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
            ),
        ],
        seen,
    )
    agent = Agent(model, toolsets=[server])
    result = await agent.run("What time is it, and what is noon UTC in Tokyo?")
    assert result.output == "done"
    offered = {t.name for t in seen[0].function_tools}
    assert {"time__get_current_time", "time__convert_time"} <= offered
    current, converted = results(result.all_messages())
    assert isinstance(current, ToolReturnPart)
    assert current.content["timezone"] == "UTC"
    assert current.content["is_dst"] is False
    stamp = datetime.datetime.fromisoformat(current.content["datetime"])
    assert stamp.utcoffset() == datetime.timedelta(0)
    assert abs((datetime.datetime.now(datetime.UTC) - stamp).total_seconds()) < 3600
    assert converted.content["target"]["timezone"] == "Asia/Tokyo"
    assert converted.content["target"]["datetime"].startswith(converted.content["source"]["datetime"][:10])
    assert "21:00" in converted.content["target"]["datetime"]
    # The run entered the toolset and closed it: the server process is gone and reaped.
    assert server.pid is not None
    assert not server.is_connected
    assert not alive(server.pid)


@needs_time
async def test_time_server_error_result_becomes_a_retry_prompt(
    scripted: Callable[..., Any], results: Callable[..., list[Any]]
) -> None:
    model = scripted(
        [("get_current_time", {"timezone": "Not/AZone"}), ("get_current_time", {"timezone": "UTC"})]
    )
    agent = Agent(model, toolsets=[time_server(trust_annotations=True)])
    result = await agent.run("time?")
    retry, ok = results(result.all_messages())
    assert retry.part_kind == "retry-prompt"
    assert "Invalid timezone" in retry.content
    assert ok.content["timezone"] == "UTC"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    git = ["git", "-c", "user.name=Test", "-c", "user.email=test@example.com"]
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    (path / "README.md").write_text("hello\n")
    subprocess.run([*git, "-C", str(path), "add", "README.md"], check=True)
    subprocess.run([*git, "-C", str(path), "commit", "-q", "-m", "first commit"], check=True)
    (path / "new.txt").write_text("new file\n")
    return path


def git_server(repo: Path, **options: Any) -> MCPServerStdio:
    return MCPServerStdio(
        sys.executable,
        ["-m", "mcp_server_git", "--repository", str(repo)],
        id="git",
        env={"GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "t@example.com"},
        **options,
    )


@needs_git
async def test_agent_reads_a_repository_through_mcp_server_git(
    repo: Path, scripted: Callable[..., Any], results: Callable[..., list[Any]]
) -> None:
    server = git_server(repo, allow_tools=["git_status", "git_log"])
    seen: list[AgentInfo] = []
    model = scripted(
        [[("git_status", {"repo_path": str(repo)}), ("git_log", {"repo_path": str(repo)})]], seen
    )
    result = await Agent(model, toolsets=[server]).run("What is the state of the repository?")
    assert sorted(t.name for t in seen[0].function_tools) == ["git_log", "git_status"]
    status, log = results(result.all_messages())
    assert "new.txt" in status.content
    assert "first commit" in log.content


@needs_git
async def test_git_commit_needs_approval_and_pauses_before_running(
    repo: Path, scripted: Callable[..., Any]
) -> None:
    server = git_server(repo, requires_approval=["git_commit", "git_add"])
    model = scripted([("git_add", {"repo_path": str(repo), "files": ["new.txt"]})])
    outcome = await Agent(model, toolsets=[server]).run_until_pause("Commit the new file")
    assert isinstance(outcome, Paused)
    assert [c.tool_name for c in outcome.pending] == ["git_add"]
    # Nothing ran: the file is still untracked.
    status = await anyio.run_process(["git", "-C", str(repo), "status", "--porcelain"])
    assert "?? new.txt" in status.stdout.decode()

    # Approved in a later invocation (the state survives JSON), the call runs on a fresh connection.
    state = outcome.state.to_json()
    decisions = {call.tool_call_id: Approved() for call in outcome.pending}
    resumed = await Agent(scripted([]), toolsets=[server]).resume(state, decisions)
    assert not isinstance(resumed, Paused)
    status = await anyio.run_process(["git", "-C", str(repo), "status", "--porcelain"])
    assert "A  new.txt" in status.stdout.decode()
