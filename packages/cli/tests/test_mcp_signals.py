"""MCP servers from the configuration: a real stdio server (mcp-server-time) becomes the run's toolset
and is shut down when the command exits, also on Ctrl-C (SIGINT)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .conftest import Calls
from .conftest import Cli
from .conftest import Hang
from .conftest import ScriptedModel
from .conftest import Text
from .conftest import clean_env

Scripted = Callable[..., ScriptedModel]


def processes_with(marker: str) -> list[int]:
    """PIDs of live processes whose environment holds `marker`."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if marker.encode() in environ and ") Z " not in stat:
            found.append(int(entry.name))
    return found


def wait_for(condition: Callable[[], bool], what: str, limit: float = 60.0) -> None:
    end = time.monotonic() + limit
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)


def mcp_config(tmp_path: Path, marker: str, **extra: Any) -> Path:
    path = tmp_path / "ferrule.json"
    server = {
        "command": sys.executable,
        "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"],
        "env": {"FERRULE_TEST_MARKER": marker},
    }
    path.write_text(json.dumps({"mcp_servers": {"time": server}, **extra}))
    return path


def echo_tool_result(body: dict[str, Any]) -> Text:
    results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
    return Text("The server said: " + " ".join(results))


def test_mcp_server_tools_are_used_and_the_server_stops_with_the_command(
    scripted: Scripted, cli: Cli, tmp_path: Path
) -> None:
    marker = uuid.uuid4().hex
    model = scripted(Calls((("get_current_time", {"timezone": "UTC"}),)), echo_tool_result)
    result = cli(*model.args, "--config", str(mcp_config(tmp_path, marker)), "What time is it in UTC?")
    assert result.code == 0, result.err
    offered = [t["function"]["name"] for t in model.bodies[0]["tools"]]
    assert "get_current_time" in offered
    assert result.out.startswith("The server said: ")
    assert '"timezone":"UTC"' in result.out.replace(" ", "")  # the real server's answer
    assert processes_with(marker) == []


def test_mcp_tools_need_approval_with_require_tool_approval(
    scripted: Scripted, cli: Cli, tmp_path: Path
) -> None:
    marker = uuid.uuid4().hex
    config = mcp_config(tmp_path, marker, require_tool_approval=True)
    model = scripted(Calls((("get_current_time", {"timezone": "UTC"}),)), echo_tool_result)
    assert cli(*model.args, "--config", str(config), "time?").code == 10
    resumed = cli(*model.args, "--config", str(config), "--resume", "--approval", "approve")
    assert resumed.code == 0, resumed.err
    assert "timezone" in resumed.out
    assert processes_with(marker) == []


def test_ctrl_c_cancels_the_run_and_shuts_the_mcp_server_down(scripted: Scripted, tmp_path: Path) -> None:
    marker = uuid.uuid4().hex
    model = scripted(Hang())
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ferrule.cli",
            *model.args,
            "--config",
            str(mcp_config(tmp_path, marker)),
            "time?",
        ],
        cwd=tmp_path,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        # The tools are listed before the request, so the server runs while the model is asked.
        wait_for(lambda: len(model.bodies) == 1, "the model request")
        assert processes_with(marker) != []
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err.decode()
    assert b"interrupted" in err
    wait_for(lambda: processes_with(marker) == [], "the MCP server to exit", limit=10)
