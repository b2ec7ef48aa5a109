"""Fixtures of the ferrule-cli tests: the command in a subprocess, and a scripted model server.

The model is a real OpenAI-compatible Chat Completions endpoint on 127.0.0.1 (raw sockets, from
`tests.support.http_server`) whose answers come from a script the test writes: the command talks to
it over HTTP through ferrule-openai's real codec, exactly as it talks to a hosted provider.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

import pytest

from tests.support.http_server import Conn
from tests.support.http_server import Request
from tests.support.http_server import Serve
from tests.support.http_server import serve_with

ROOT = Path(__file__).resolve().parents[3]
MODEL = "openai-chat:gpt-4.1-mini"
"""The model string the scripted server is reached with."""
KEY_ENV = "SCRIPTED_TOKEN"
"""The variable holding the (meaningless) key sent to the scripted server."""


def needs_program(name: str) -> pytest.MarkDecorator:
    """Skips a test where the program `name` is not installed, except under CI: CI installs it from
    .ci/apt.txt, so there the test runs (and fails without it)."""
    return pytest.mark.skipif(
        shutil.which(name) is None and not os.environ.get("CI"),
        reason=f"{name} is installed by .ci/apt.txt (CI fails without it)",
    )


DEPLOY_TOOL_PY = '''
from pathlib import Path


def deploy(service: str) -> str:
    """Deploy a service.

    Args:
        service: The service name.
    """
    Path("deployed.txt").write_text(service)
    return f"deployed {service}"
'''
"""A tools file (`tools.py`) with one side-effecting tool, `deploy`, that writes `deployed.txt`."""

# Variables a developer's shell may hold that would change what the command does (the model cache
# and thread settings, FERRULE_CACHE_DIR and FERRULE_LLAMACPP_THREADS, are kept).
_SCRUBBED_PARTS = ("API_KEY", "ACCESS_TOKEN")
_SCRUBBED_PREFIXES = ("OPENAI_", "ANTHROPIC_", "GEMINI_", "GOOGLE_", "VERTEX_", "AZURE_")
_SCRUBBED_NAMES = ("FERRULE_MODEL", "FERRULE_DEBUG")


@dataclass(frozen=True)
class Text:
    """A turn answering with text (streamed in a few deltas)."""

    text: str


@dataclass(frozen=True)
class Calls:
    """A turn calling tools: `(name, arguments)` pairs."""

    calls: tuple[tuple[str, dict[str, Any]], ...]


@dataclass(frozen=True)
class Fail:
    """A turn answering with an HTTP error."""

    status: int
    message: str = "rejected"


@dataclass(frozen=True)
class Hang:
    """A turn that never answers: it waits until the client goes away (counted in `disconnects`)."""


Turn = Text | Calls | Fail | Hang | Callable[[dict[str, Any]], "Text | Calls | Fail | Hang"]


def _chunk(delta: dict[str, Any], finish: str | None = None, usage: dict[str, int] | None = None) -> bytes:
    document: dict[str, Any] = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "scripted",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if usage is not None:
        document["usage"] = usage
    return b"data: " + json.dumps(document).encode() + b"\n\n"


def sse_for(turn: Text | Calls, number: int) -> bytes:
    """The Chat Completions stream of one turn."""
    usage = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    parts = [_chunk({"role": "assistant", "content": ""})]
    if isinstance(turn, Text):
        words = turn.text.split(" ")
        for i, word in enumerate(words):
            parts.append(_chunk({"content": word if i == 0 else " " + word}))
        parts.append(_chunk({}, "stop", usage))
    else:
        for index, (name, arguments) in enumerate(turn.calls):
            call_id = f"call_{number}_{index}"
            text = json.dumps(arguments)
            half = len(text) // 2
            parts.append(
                _chunk(
                    {
                        "tool_calls": [
                            {
                                "index": index,
                                "id": call_id,
                                "type": "function",
                                "function": {"name": name, "arguments": text[:half]},
                            }
                        ]
                    }
                )
            )
            parts.append(_chunk({"tool_calls": [{"index": index, "function": {"arguments": text[half:]}}]}))
        parts.append(_chunk({}, "tool_calls", usage))
    parts.append(b"data: [DONE]\n\n")
    return b"".join(parts)


def completion_for(turn: Text | Calls, number: int) -> dict[str, Any]:
    """The buffered Chat Completions response of one turn."""
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if isinstance(turn, Text):
        message["content"] = turn.text
        finish = "stop"
    else:
        message["tool_calls"] = [
            {
                "id": f"call_{number}_{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for i, (name, args) in enumerate(turn.calls)
        ]
        finish = "tool_calls"
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "scripted",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


@dataclass
class ScriptedModel:
    """A Chat Completions server answering each request with the next turn of its script."""

    turns: list[Turn]
    bodies: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    base_url: str = ""
    disconnects: int = 0
    """Hanging requests whose client closed the connection."""

    def handle(self, conn: Conn, request: Request) -> bool | None:
        if request.method == "GET" and request.path.endswith("/models"):
            conn.respond_json(
                200, {"object": "list", "data": [{"id": "scripted-large"}, {"id": "scripted-small"}]}
            )
            return
        body = request.json()
        self.bodies.append(body)
        turn = self.turns.pop(0) if self.turns else Text("(the script has ended)")
        if callable(turn):
            turn = turn(body)
        match turn:
            case Fail(status=status, message=message):
                conn.respond_json(status, {"error": {"message": message, "type": "invalid_request_error"}})
            case Hang():
                self._until_disconnect(conn)
                return False
            case Text() | Calls() if body.get("stream"):
                conn.stream(sse_for(turn, len(self.bodies)), sizes=(97, 13, 256))
            case Text() | Calls():
                conn.respond_json(200, completion_for(turn, len(self.bodies)))

    def _until_disconnect(self, conn: Conn) -> None:
        conn.sock.settimeout(0.05)
        while not conn.server.stopping.is_set():
            try:
                data = conn.sock.recv(4096)
            except TimeoutError:
                continue
            except OSError:
                break
            if not data:
                break
        else:
            return
        self.disconnects += 1

    @property
    def args(self) -> list[str]:
        """The flags pointing the command at this server: OpenAI's Chat Completions client and a
        known model name (so the profile declares tools), a local base URL, a key by variable name."""
        return [
            "--model",
            MODEL,
            "--base-url",
            self.base_url,
            "--allow-local-url",
            "--api-key-env",
            KEY_ENV,
        ]

    def messages(self, index: int = -1) -> list[dict[str, Any]]:
        """The messages of a received request."""
        return self.bodies[index]["messages"]


@pytest.fixture
def serve() -> Iterator[Serve]:
    with serve_with() as start:
        yield start


@pytest.fixture
def scripted(serve: Serve) -> Callable[..., ScriptedModel]:
    """`scripted(turn, ...)`: a model server answering with these turns."""

    def start(*turns: Turn) -> ScriptedModel:
        model = ScriptedModel(list(turns))
        server = serve(model.handle)
        model.base_url = server.base_url
        return model

    return start


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without credentials or ferrule settings, plus `extra`."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not any(part in k for part in _SCRUBBED_PARTS)
        and not k.startswith(_SCRUBBED_PREFIXES)
        and k not in _SCRUBBED_NAMES
    }
    env["PYTHONUNBUFFERED"] = "1"
    env[KEY_ENV] = "local-test-token"
    env.update(extra)
    return env


@dataclass
class Result:
    """A finished command."""

    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


class Cli:
    """Runs `python -m ferrule.cli` in a working directory."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd

    def __call__(self, *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None) -> Result:
        proc = subprocess.run(
            [sys.executable, "-m", "ferrule.cli", *args],
            input=stdin if stdin is not None else b"",
            capture_output=True,
            cwd=self.cwd,
            env=env if env is not None else clean_env(),
            timeout=120,
            check=False,
        )
        return Result(proc.returncode, proc.stdout.decode(), proc.stderr.decode())


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


class Terminal:
    """A tmux session of its own server (its own socket), 100x40."""

    def __init__(self, cwd: Path) -> None:
        self.socket = f"ferrule-test-{uuid.uuid4().hex[:8]}"
        self.cwd = cwd

    def tmux(self, *args: str) -> str:
        out = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=True)
        return out.stdout

    def start(self, command: list[str]) -> None:
        line = " ".join(shlex.quote(part) for part in command) + "; echo EXIT=$?; sleep 600"
        subprocess.run(
            [
                "tmux",
                "-L",
                self.socket,
                "new-session",
                "-d",
                "-s",
                "t",
                "-x",
                "100",
                "-y",
                "40",
                "-c",
                str(self.cwd),
                line,
            ],
            env=clean_env(TERM="xterm-256color", COLUMNS="100"),
            check=True,
        )

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-J", "-S", "-200", "-t", "t")

    def wait(self, condition: Callable[[str], bool], what: str, limit: float = 60.0) -> str:
        end = time.monotonic() + limit
        while True:
            screen = self.screen()
            if condition(screen):
                return screen
            if time.monotonic() > end:
                raise AssertionError(f"gave up waiting for {what}; the screen shows:\n{screen}")
            time.sleep(0.05)

    def wait_for(self, text: str, limit: float = 60.0) -> str:
        return self.wait(lambda screen: text in screen, repr(text), limit)

    def type(self, text: str) -> None:
        self.tmux("send-keys", "-t", "t", "-l", text)
        self.tmux("send-keys", "-t", "t", "Enter")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "t", *keys)

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, check=False)


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    """A real terminal (tmux) in the test's directory."""
    term = Terminal(tmp_path)
    try:
        yield term
    finally:
        term.close()
