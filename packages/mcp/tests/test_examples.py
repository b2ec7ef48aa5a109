"""The MCP examples in docs/examples run and print what docs/mcp.md promises."""

from __future__ import annotations

import datetime
import importlib.util
import re

import pytest

from tests.support.examples import needs_examples
from tests.support.examples import run_example

pytestmark = needs_examples


@pytest.mark.skipif(
    importlib.util.find_spec("mcp_server_time") is None, reason="mcp-server-time is not installed"
)
def test_mcp_time() -> None:
    out = run_example("mcp_time.py")
    assert out.returncode == 0, out.stderr
    offered, result, answer, closed = out.stdout.splitlines()
    assert offered == "tools offered: time__get_current_time, time__convert_time"
    assert result.startswith("tool result: {'timezone': 'UTC', 'datetime': '")
    stamp = re.search(r"'datetime': '([^']+)'", result)
    assert stamp is not None
    assert datetime.datetime.fromisoformat(stamp.group(1)).utcoffset() == datetime.timedelta(0)
    assert answer.startswith("It is ")
    assert answer.endswith(" in UTC.")
    assert re.fullmatch(r"server process \d+ exited with status 0", closed)


def test_mcp_serve() -> None:
    out = run_example("mcp_serve.py")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "tool: ask_geo - Answers geography questions.",
        "answer: About 522,000 people live there.",
    ]
