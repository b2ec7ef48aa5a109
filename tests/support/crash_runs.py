"""The crash runs both durable engine adapters' tests make: their chat script, and the run killed
mid-stream that must deliver no committed event twice."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.support.chat_server import ChatServer
from tests.support.chat_server import Hold
from tests.support.chat_server import StartChatServer
from tests.support.chat_server import Turn
from tests.support.crash import Worker
from tests.support.crash import effects
from tests.support.streams import assert_delivered_once
from tests.support.streams import wait_until_settled

__all__ = ["THREE_STEPS", "killed_mid_stream"]

THREE_STEPS = [
    Turn(tool_calls=[("add", {"a": 1, "b": 2})]),
    Turn(tool_calls=[("add", {"a": 3, "b": 4})]),
    Turn(text="The sums are 3 and 7."),
]
"""The chat script of the crash tests: the tool calls `add 1 2` and `add 3 4`, then the answer."""


def killed_mid_stream(
    chat_server: StartChatServer, start: Callable[[ChatServer], Worker], tmp_path: Path
) -> None:
    """A run of `THREE_STEPS` streamed by the worker `start(server)` starts, killed once the final
    answer's first words are delivered and committed, then finished by a second worker: only the
    interrupted request is repeated, each tool ran once, and no committed event came twice.

    The workers log tool calls to `effects.log`, delivered events to `events.log` and stream
    commits to `commits.log`, all in `tmp_path`.
    """
    # The final answer's stream stops after its first words; the worker dies there.
    server = chat_server(THREE_STEPS, hold=Hold(turn=2, after_events=3))
    first = start(server)
    assert server.holding.wait(timeout=120), "the third request should have been held mid-stream"
    events_log, commits_log = tmp_path / "events.log", tmp_path / "commits.log"
    wait_until_settled(events_log, commits_log)
    first.kill()
    delivered_before = effects(events_log)
    assert any("content_delta='The'" in line for line in delivered_before), "some text was delivered"
    assert "result The sums are 3 and 7." in start(server).finish()
    assert dict(server.served) == {0: 1, 1: 1, 2: 2}, "only the interrupted request is repeated"
    assert effects(tmp_path / "effects.log") == ["add 1 2", "add 3 4"]
    assert_delivered_once(events_log, commits_log, delivered_before, "completed ['The sums are 3 and 7.']")
