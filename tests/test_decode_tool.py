"""`tools/decode.py`, driven the way a developer runs it: as a subprocess."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC
from datetime import datetime
from pathlib import Path

import msgspec
import pytest

from ferrule.core import history
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ThinkingPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.usage import RequestUsage

REPO = Path(__file__).resolve().parents[1]
TOOL = REPO / "tools" / "decode.py"

STREAM = (
    b'data: "Hel"\n\n'
    b": keep-alive comment\n\n"
    b'data: "lo \\u00e9"\r\n\r\n'
    b"event: done\n"
    b'data: {"finish_reason": "stop", "usage": {"input_tokens": 3, "output_tokens": 2}, "model_name": "m1",'
    b' "provider_response_id": "r1"}\n\n'
)


def run(
    *args: str, stdin: bytes | None = None, code: str | None = None
) -> subprocess.CompletedProcess[bytes]:
    command = [sys.executable, "-c", code] if code else [sys.executable, str(TOOL)]
    return subprocess.run(
        [*command, *args], input=stdin, capture_output=True, timeout=120, check=False, cwd=REPO
    )


def assert_one_line_failure(result: subprocess.CompletedProcess[bytes]) -> str:
    assert result.returncode == 1, result.stderr
    assert result.stdout == b""
    err = result.stderr.decode()
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("decode: ")
    return err


def test_buffered_body_prints_the_response_as_history_json(tmp_path: Path) -> None:
    response = ModelResponse(
        parts=[ThinkingPart("hmm", signature="s"), TextPart("hi"), ToolCallPart("f", {"a": 1}, "c1")],
        usage=RequestUsage(input_tokens=1, output_tokens=2),
        model_name="m",
        timestamp=datetime(2026, 1, 1, tzinfo=UTC),
        finish_reason="tool_call",
    )
    body = tmp_path / "body.json"
    body.write_bytes(msgspec.json.encode(response))
    result = run("--api", "ferrule-test", str(body))
    assert result.returncode == 0, result.stderr
    (decoded,) = history.loads(result.stdout)
    assert decoded == msgspec.structs.replace(response, provider_name="ferrule-test")


def test_stream_is_assembled_into_one_response(tmp_path: Path) -> None:
    body = tmp_path / "stream.sse"
    body.write_bytes(STREAM)
    result = run("--api", "ferrule-test", "--stream", str(body))
    assert result.returncode == 0, result.stderr
    (decoded,) = history.loads(result.stdout)
    assert isinstance(decoded, ModelResponse)
    assert decoded.text == "Hello é"
    assert (decoded.finish_reason, decoded.model_name, decoded.provider_response_id) == ("stop", "m1", "r1")
    assert decoded.usage.output_tokens == 2


def test_stdin_and_model_name() -> None:
    stream = b'data: "x"\n\nevent: done\ndata: {}\n\n'
    result = run("--api", "ferrule-test", "--stream", "--model-name", "given", "-", stdin=stream)
    assert result.returncode == 0, result.stderr
    (decoded,) = history.loads(result.stdout)
    assert isinstance(decoded, ModelResponse)
    assert decoded.model_name == "given"


@pytest.mark.parametrize(
    ("stream", "body", "reason"),
    [
        (False, b'{"parts": [', "malformed JSON"),
        (False, b'{"parts": 5}', "invalid response body"),
        (True, b'data: "partial"\n\n', "before its final `done` event"),
        (True, b'data: {"not": "a string"}\n\nevent: done\ndata: {}\n\n', "invalid 'message' event data"),
        (True, b'event: done\ndata: {}\n\ndata: "late"\n\n', "after the final `done` event"),
        (True, b"event: surprise\ndata: 1\n\n", "unknown event type 'surprise'"),
        (True, b'event: done\ndata: {"finish_reason": "bogus"}\n\n', "invalid 'done' event data"),
    ],
)
def test_undecodable_bodies_fail_with_one_line(
    tmp_path: Path, stream: bool, body: bytes, reason: str
) -> None:
    path = tmp_path / "body"
    path.write_bytes(body)
    err = assert_one_line_failure(run("--api", "ferrule-test", *(["--stream"] if stream else []), str(path)))
    assert reason in err


def test_missing_file_fails_with_one_line(tmp_path: Path) -> None:
    err = assert_one_line_failure(run("--api", "ferrule-test", str(tmp_path / "absent.json")))
    assert "cannot read" in err


def test_missing_codec_package_fails_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "body.json"
    path.write_bytes(b"{}")
    code = (
        "import sys; sys.path.insert(0, 'tools'); import decode; "
        "decode.APIS['ghost'] = 'ferrule.providers.ghost.codec:GhostCodec'; sys.exit(decode.main(sys.argv[1:]))"
    )
    err = assert_one_line_failure(run("--api", "ghost", str(path), code=code))
    assert "'ghost' codec is not installed (ferrule.providers.ghost.codec)" in err


def test_codec_bugs_are_reported_in_one_line_and_traceback_is_opt_in(tmp_path: Path) -> None:
    path = tmp_path / "body.json"
    path.write_bytes(b"{}")
    code = (
        "import sys, types; sys.path.insert(0, 'tools'); import decode; "
        "m = types.ModuleType('buggy'); "
        "m.BuggyCodec = type('BuggyCodec', (), {'__init__': lambda self, model_name=None: None, "
        "'decode': lambda self, body: {}['x']}); "
        "sys.modules['buggy'] = m; decode.APIS['buggy'] = 'buggy:BuggyCodec'; sys.exit(decode.main(sys.argv[1:]))"
    )
    err = assert_one_line_failure(run("--api", "buggy", str(path), code=code))
    assert "codec bug: KeyError" in err
    verbose = run("--api", "buggy", "--traceback", str(path), code=code)
    assert verbose.returncode == 1
    assert b"Traceback" in verbose.stderr


def test_unknown_api_is_a_usage_error(tmp_path: Path) -> None:
    result = run("--api", "nope", str(tmp_path / "x"))
    assert result.returncode == 2
    assert b"invalid choice" in result.stderr


@pytest.mark.parametrize("api", ["openai-chat", "openai-responses", "anthropic", "gemini"])
@pytest.mark.parametrize("stream", [False, True])
def test_provider_apis_fail_cleanly_on_garbage(tmp_path: Path, api: str, stream: bool) -> None:
    """Installed or not, every provider API answers garbage with one line and status 1."""
    path = tmp_path / "garbage"
    path.write_bytes(b'{"definitely": "not a response"' if not stream else b"data: {not json\n\n")
    assert_one_line_failure(run("--api", api, *(["--stream"] if stream else []), str(path)))
