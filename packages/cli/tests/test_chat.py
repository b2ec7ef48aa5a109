"""`ferrule chat` in a real terminal: tmux runs it, `send-keys` types, `capture-pane` reads the screen."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

from ferrule.cli._chat import PROMPT
from ferrule.core import history

from .conftest import DEPLOY_TOOL_PY
from .conftest import Calls
from .conftest import Hang
from .conftest import ScriptedModel
from .conftest import Terminal
from .conftest import Text
from .conftest import needs_program

Scripted = Callable[..., ScriptedModel]

pytestmark = needs_program("tmux")


def prompts(screen: str) -> int:
    return sum(1 for line in screen.splitlines() if line.startswith(PROMPT.strip()))


def test_chat_session_in_a_real_terminal(scripted: Scripted, terminal: Terminal, tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(DEPLOY_TOOL_PY)
    (tmp_path / "ferrule.json").write_text(
        json.dumps({"tools": [{"function": "tools.py:deploy", "requires_approval": True}]})
    )
    model = scripted(
        Text("# Plan\n\nUse **bold words** and `inline code`.\n\n- first item\n- second item"),
        Calls((("deploy", {"service": "web"}),)),
        Text("Deployed the web service."),
        Hang(),
        Text("Still here after the cancel."),
    )
    command = [
        sys.executable,
        "-m",
        "ferrule.cli",
        "chat",
        *model.args,
        "--config",
        "ferrule.json",
        "--history",
        "chat.json",
    ]
    terminal.start(command)
    terminal.wait_for("Ctrl-D or /exit leaves")
    terminal.wait(lambda s: prompts(s) == 1, "the first prompt")

    # Streamed Markdown, rendered: no markup characters left, a bullet list.
    terminal.type("Make a plan")
    screen = terminal.wait_for("second item")
    assert "bold words" in screen
    assert "**bold words**" not in screen
    assert "# Plan" not in screen
    assert "• first item" in screen

    # A tool that needs approval: asked inline, approved with y, shown as it runs.
    terminal.wait(lambda s: prompts(s) == 2, "the second prompt")
    terminal.type("Deploy web")
    terminal.wait_for('Allow deploy({"service":"web"})? [y/N]')
    assert not (tmp_path / "deployed.txt").exists()
    terminal.type("y")
    screen = terminal.wait_for("Deployed the web service.")
    assert "⚙ deploy" in screen
    assert "↳ deployed web" in screen
    assert (tmp_path / "deployed.txt").read_text() == "web"

    # Ctrl-C cancels the turn (the request is abandoned), not the session.
    terminal.wait(lambda s: prompts(s) == 3, "the third prompt")
    terminal.type("Take your time")
    end = time.monotonic() + 60
    while len(model.bodies) < 4 and time.monotonic() < end:
        time.sleep(0.05)
    assert len(model.bodies) == 4
    terminal.keys("C-c")
    terminal.wait_for("turn cancelled")
    end = time.monotonic() + 30
    while model.disconnects < 1 and time.monotonic() < end:
        time.sleep(0.05)
    assert model.disconnects == 1  # the cancelled request was drained: its connection closed

    terminal.wait(lambda s: prompts(s) == 4, "the prompt after the cancel")
    terminal.type("Are you there?")
    terminal.wait_for("Still here after the cancel.")
    sent = [m.get("content") for m in model.messages() if m["role"] == "user"]
    assert sent == ["Make a plan", "Deploy web", "Are you there?"]  # the cancelled turn is not in history

    # Ctrl-D leaves and saves the history.
    terminal.wait(lambda s: prompts(s) == 5, "the last prompt")
    terminal.keys("C-d")
    screen = terminal.wait_for("EXIT=0")
    assert "history saved to chat.json" in screen
    saved = history.loads((tmp_path / "chat.json").read_bytes())
    assert "Still here after the cancel." in str(saved[-1])


def test_chat_resumes_a_saved_history_and_ctrl_c_at_the_prompt_keeps_the_session(
    scripted: Scripted, terminal: Terminal, tmp_path: Path
) -> None:
    model = scripted(Text("Hello Ada."), Text("You are Ada."))
    command = [sys.executable, "-m", "ferrule.cli", "chat", *model.args, "--plain", "--history", "h.json"]
    terminal.start(command)
    terminal.wait(lambda s: prompts(s) == 1, "the prompt")
    terminal.type("I am Ada")
    terminal.wait_for("Hello Ada.")
    terminal.wait(lambda s: prompts(s) == 2, "the second prompt")
    terminal.keys("C-c")
    terminal.wait_for("(Ctrl-D or /exit leaves)")
    terminal.type("/exit")
    terminal.wait_for("EXIT=0")

    terminal.close()
    again = Terminal(tmp_path)
    try:
        again.start(command)
        again.wait_for("2 earlier messages")
        again.wait(lambda s: prompts(s) == 1, "the prompt")
        again.type("Who am I?")
        again.wait_for("You are Ada.")
        contents = [m.get("content") for m in model.messages()]
        assert contents == ["I am Ada", "Hello Ada.", "Who am I?"]
    finally:
        again.close()


def test_run_on_a_terminal_streams_text_and_asks_for_approval(
    scripted: Scripted, terminal: Terminal, tmp_path: Path
) -> None:
    (tmp_path / "tools.py").write_text(DEPLOY_TOOL_PY)
    (tmp_path / "ferrule.json").write_text(
        json.dumps({"tools": [{"function": "tools.py:deploy", "requires_approval": True}]})
    )
    model = scripted(Calls((("deploy", {"service": "db"}),)), Text("The database is deployed."))
    command = [
        sys.executable,
        "-m",
        "ferrule.cli",
        "run",
        *model.args,
        "--config",
        "ferrule.json",
        "--approval-mode",
        "prompt",
        "Deploy db",
    ]
    terminal.start(command)
    terminal.wait_for('Allow deploy({"service":"db"})? [y/N]')
    terminal.type("yes")
    screen = terminal.wait_for("EXIT=0")
    assert "The database is deployed." in screen
    assert (tmp_path / "deployed.txt").read_text() == "db"
