"""`tools/decode.py --api openai-chat|openai-responses` on recorded bodies."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any
from typing import cast

import pytest

from tests.support.cassettes import REPO_ROOT
from tests.support.cassettes import SKIP_REASON
from tests.support.cassettes import cassette_root
from tests.support.cassettes import iter_interactions

pytestmark = pytest.mark.skipif(cassette_root() is None, reason=SKIP_REASON)

TOOL = REPO_ROOT / "tools" / "decode.py"


def run(api: str, body: bytes, tmp_path: Path, *, stream: bool = False) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "body"
    path.write_bytes(body)
    args = [sys.executable, str(TOOL), "--api", api, str(path)]
    if stream:
        args.insert(-1, "--stream")
    return subprocess.run(args, capture_output=True, text=True, check=False)


def body_of(interaction_id: str) -> bytes:
    directory = "models/cassettes/" + interaction_id.split("/", 1)[0]
    return next(it.response_bytes for it in iter_interactions(directory) if it.id == interaction_id)


@pytest.mark.parametrize(
    ("api", "interaction", "stream", "text"),
    [
        ("openai-chat", "test_openai/test_openai_instructions#0", False, "The capital of France is Paris."),
        (
            "openai-chat",
            "test_deepseek/test_deepseek_model_thinking_stream#0",
            True,
            "Hello there! 😊 How can I help you today?",
        ),
        (
            "openai-responses",
            "test_openai_responses/test_image_as_binary_content_input#0",
            False,
            "The fruit in the image is a kiwi.",
        ),
        ("openai-responses", "test_openai_responses/test_openai_responses_thinking_part_iter#0", True, None),
    ],
)
def test_decode_tool(api: str, interaction: str, stream: bool, text: str | None, tmp_path: Path) -> None:
    result = run(api, body_of(interaction), tmp_path, stream=stream)
    assert result.returncode == 0, result.stderr
    document: Any = json.loads(result.stdout)
    messages: list[dict[str, Any]] = (
        cast("dict[str, Any]", document)["messages"] if isinstance(document, dict) else document
    )
    [response] = messages
    parts: list[dict[str, Any]] = response["parts"]
    texts = [p["content"] for p in parts if p["part_kind"] == "text"]
    if text is not None:
        assert texts == [text]
    assert response["finish_reason"] in ("stop", "tool_call")


def test_decode_tool_rejects_truncated_stream(tmp_path: Path) -> None:
    body = body_of("test_openai/test_run_stream_sync_streams_real_model#1")
    result = run("openai-chat", body[: len(body) // 2], tmp_path, stream=True)
    assert result.returncode == 1
    assert "[decode] openai" in result.stderr
