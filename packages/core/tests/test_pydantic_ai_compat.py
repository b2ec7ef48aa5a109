"""PydanticAI compatibility, proven against the real `pydantic-ai-slim` package.

PydanticAI is not a dependency of any ferrule package: it lives in the test-only hatch environment
`pydantic-ai-compat` (root pyproject.toml). These tests run `tools/pydantic_ai_corpus.py` with that
environment's python to generate a golden corpus of PydanticAI-written histories and to judge
ferrule's output, in both directions:

* PydanticAI JSON → ferrule (bare and through ferrule's envelope) → PydanticAI: equal to the originals
  and dumping to the same JSON, so nothing PydanticAI records is lost;
* ferrule messages → PydanticAI JSON → PydanticAI → ferrule: equal to ferrule's originals.

The python is found through `FERRULE_PYDANTIC_AI_PYTHON`, else `hatch env find pydantic-ai-compat`;
without either the tests skip and say how to enable them.
"""

from __future__ import annotations

import json
import subprocess
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from datetime import timezone
from decimal import Decimal
from pathlib import Path
from typing import Any
from typing import get_args

import pytest

from ferrule.core import history
from ferrule.core.messages import AudioUrl
from ferrule.core.messages import BinaryContent
from ferrule.core.messages import CachePoint
from ferrule.core.messages import CapabilityLoadDeltaPart
from ferrule.core.messages import CompactionPart
from ferrule.core.messages import DocumentUrl
from ferrule.core.messages import FilePart
from ferrule.core.messages import ImageUrl
from ferrule.core.messages import InstructionBaselinePart
from ferrule.core.messages import InstructionDeltaPart
from ferrule.core.messages import InstructionDigest
from ferrule.core.messages import InstructionPart
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelRequestAttempt
from ferrule.core.messages import ModelRequestPart
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import ModelResponsePart
from ferrule.core.messages import ModelSettingsDeltaPart
from ferrule.core.messages import NativeToolCallPart
from ferrule.core.messages import NativeToolReturnPart
from ferrule.core.messages import RetryFeedbackPart
from ferrule.core.messages import RetryInfo
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import SpeechPart
from ferrule.core.messages import SpeechTimestamp
from ferrule.core.messages import StructuredContent
from ferrule.core.messages import SystemPromptPart
from ferrule.core.messages import TextContent
from ferrule.core.messages import TextPart
from ferrule.core.messages import ThinkingPart
from ferrule.core.messages import ToolAvailabilityDeltaPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.messages import UploadedFile
from ferrule.core.messages import UserContent
from ferrule.core.messages import UserPromptPart
from ferrule.core.messages import VideoUrl
from ferrule.core.messages import WorkspaceRef
from ferrule.core.usage import RequestUsage
from tests.support.pydantic_ai_env import ENV_VAR
from tests.support.pydantic_ai_env import SKIP_REASON
from tests.support.pydantic_ai_env import pydantic_ai_python
from tests.support.pydantic_ai_env import run_corpus_tool


@pytest.fixture(scope="module")
def pai_python() -> str:
    return pydantic_ai_python()


def _run_tool(python: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run_corpus_tool(python, *args)


@pytest.fixture(scope="module")
def corpus(pai_python: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    out = tmp_path_factory.mktemp("pydantic_ai_corpus")
    result = _run_tool(pai_python, "generate", str(out))
    assert result.returncode == 0, result.stderr
    cases = {path.stem: path.read_bytes() for path in sorted(out.glob("*.json"))}
    assert len(cases) >= 12
    return cases


def _check(python: str, pairs: list[tuple[Path, Path]]) -> list[dict[str, Any]]:
    result = _run_tool(python, "check", *(str(p) for pair in pairs for p in pair))
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    assert len(lines) == len(pairs), result.stdout + result.stderr
    failures = [line for line in lines if not line["ok"]]
    for failure in failures:
        print(f"--- {failure['actual']} differs from PydanticAI's original:\n{failure['diff']}\n")
    assert (result.returncode == 0) == (not failures)
    return failures


def test_corpus_covers_every_part_kind(corpus: dict[str, bytes]) -> None:
    seen: set[type] = set()
    for data in corpus.values():
        for message in history.load_pydantic_ai(data):
            for part in message.parts:
                seen.add(type(part))
                if isinstance(part, UserPromptPart) and isinstance(part.content, list):
                    seen.update(type(item) for item in part.content)
    wanted = {*get_args(ModelRequestPart), *get_args(ModelResponsePart), *get_args(UserContent)} - {str}
    # PydanticAI 2.x never writes `retry-prompt` (it loads it as the part it meant), so only the
    # legacy case holds one.
    assert wanted - seen == set()


@pytest.mark.parametrize("route", ["bare", "envelope"])
def test_pydantic_ai_history_round_trips_through_ferrule(
    route: str, corpus: dict[str, bytes], pai_python: str, tmp_path: Path
) -> None:
    pairs: list[tuple[Path, Path]] = []
    for name, data in corpus.items():
        messages = history.load_pydantic_ai(data)
        if route == "envelope":
            messages = history.loads(history.dumps(messages))
        original, written = tmp_path / f"{name}.original.json", tmp_path / f"{name}.ferrule.json"
        original.write_bytes(data)
        written.write_bytes(history.dump_pydantic_ai(messages))
        pairs.append((original, written))
    assert _check(pai_python, pairs) == []


def test_checker_detects_a_lost_field(corpus: dict[str, bytes], pai_python: str, tmp_path: Path) -> None:
    """The judge is not vacuous: dropping one field PydanticAI records is reported with a diff."""
    data = json.loads(corpus["response_metadata"])
    data[0]["history_digest"] = None
    original, written = tmp_path / "original.json", tmp_path / "lossy.json"
    original.write_bytes(corpus["response_metadata"])
    written.write_text(json.dumps(data))
    result = _run_tool(pai_python, "check", str(original), str(written))
    assert result.returncode == 1
    assert '"history_digest"' in json.loads(result.stdout)["diff"]


def test_ferrule_view_of_the_corpus(corpus: dict[str, bytes]) -> None:
    """Spot checks that PydanticAI's data lands in ferrule's fields, not just that it survives."""
    (response,) = history.load_pydantic_ai(corpus["thinking_and_native_tools"])
    assert isinstance(response, ModelResponse)
    thinking = response.parts[0]
    assert isinstance(thinking, ThinkingPart)
    assert (thinking.signature, thinking.provider_name) == ("EqoBCkgIARABGAIiQL+/sig==", "anthropic")
    file_part = next(p for p in response.parts if isinstance(p, FilePart))
    assert file_part.content.data.startswith(b"\x89PNG\r\n\x1a\n\x00")

    (rich,) = history.load_pydantic_ai(corpus["tool_rich_returns"])
    chart = rich.parts[0]
    assert isinstance(chart, ToolReturnPart)
    kinds = [type(item).__name__ for item in chart.content]
    assert kinds == [
        "str",
        "ImageUrl",
        "BinaryContent",
        "DocumentUrl",
        "UploadedFile",
        "dict",
        "dict",
        "dict",
        "dict",
    ]
    assert isinstance(chart.content[8]["nested"]["deeper"][0], AudioUrl)

    messages = history.load_pydantic_ai(corpus["response_metadata"])
    first = messages[0]
    assert isinstance(first, ModelResponse)
    assert first.usage.cost == Decimal("0.0001230")
    assert first.failed_attempts is not None
    assert first.failed_attempts[1].duration == timedelta(days=1, hours=6, microseconds=7)
    assert first.timestamp == datetime(2025, 3, 4, 5, 6, 7, 891011, tzinfo=UTC)

    legacy = history.load_pydantic_ai(corpus["legacy_retry_prompt"])[0]
    assert [type(p) for p in legacy.parts] == [RetryPromptPart, RetryPromptPart]


TS = datetime(2026, 5, 6, 7, 8, 9, 101112, tzinfo=UTC)
TS_OFFSET = datetime(2026, 5, 6, 7, 8, 9, tzinfo=timezone(timedelta(hours=9)))


def ferrule_corpus() -> list[Message]:
    """ferrule-built messages in the form PydanticAI keeps them (explicit identifiers and media types)."""
    return [
        ModelRequest(
            parts=[
                SystemPromptPart(
                    "sys", timestamp=TS, dynamic_ref="f", context_id="c", scope="request", metadata={"a": 1}
                ),
                UserPromptPart(
                    [
                        "text",
                        TextContent("t", metadata={"m": [1]}),
                        StructuredContent.from_value({"k": "v"}, tag="state", description="d"),
                        ImageUrl(
                            "https://e.com/i.png",
                            media_type="image/png",
                            identifier="i1",
                            vendor_metadata={"detail": "low"},
                        ),
                        AudioUrl("https://e.com/a.mp3", media_type="audio/mpeg", identifier="a1"),
                        VideoUrl(
                            "https://e.com/v.mp4",
                            media_type="video/mp4",
                            identifier="v1",
                            force_download=True,
                        ),
                        DocumentUrl(
                            "https://e.com/d.pdf",
                            media_type="application/pdf",
                            identifier="d1",
                            force_download="allow-local",
                        ),
                        BinaryContent(
                            data=bytes(range(256)), media_type="application/octet-stream", identifier="b1"
                        ),
                        UploadedFile(
                            file_id="file-1",
                            provider_name="openai",
                            media_type="application/pdf",
                            identifier="u1",
                        ),
                        CachePoint(),
                        CachePoint(ttl="1h"),
                    ],
                    timestamp=TS_OFFSET,
                ),
                SpeechPart(
                    speaker="user",
                    transcript="hi",
                    audio=BinaryContent(data=b"RIFF", media_type="audio/wav", identifier="s1"),
                ),
                CompactionPart("summary", metadata={"by": "app"}),
                InstructionBaselinePart(
                    instructions=[
                        InstructionPart("static"),
                        InstructionPart(
                            "dyn", dynamic=True, on_change="append", name="x", id="capability:b:x"
                        ),
                        InstructionDigest(content_hash="ab" * 32, dynamic=True, id="agent"),
                    ]
                ),
                InstructionDeltaPart(id="toolset:w:limits", content="new", base_hash="cd" * 32),
                ToolAvailabilityDeltaPart(tools_added=["t1"], tool_call_id="c0"),
                CapabilityLoadDeltaPart(loaded=["web"]),
                ModelSettingsDeltaPart(settings={"thinking": "low"}, top_level=True),
            ],
            timestamp=TS,
            instructions="be nice",
            run_id="r",
            conversation_id="c",
            metadata={"x": 1},
            state="interrupted",
        ),
        ModelResponse(
            parts=[
                ThinkingPart(
                    "hmm", id="t", signature="sig", provider_name="anthropic", provider_details={"x": 1}
                ),
                TextPart("hi", id="m", provider_name="anthropic", provider_details={"y": [1]}),
                ToolCallPart("get", {"a": 1}, "call-1", tool_kind="ns.get", id="fc", provider_name="openai"),
                ToolCallPart("raw", '{"b": 2}', "call-2"),
                NativeToolCallPart("web_search", {"q": "x"}, "ws", provider_name="anthropic"),
                NativeToolReturnPart(
                    "web_search", [{"u": 1}], "ws", timestamp=TS, provider_name="anthropic", outcome="failed"
                ),
                FilePart(
                    BinaryContent(data=b"\x89PNG", media_type="image/png", identifier="f1"),
                    id="ig",
                    provider_name="openai",
                ),
                CompactionPart(
                    None, id="cmp", provider_name="openai", provider_details={"encrypted_content": "e"}
                ),
                SpeechPart(
                    speaker="assistant",
                    transcript="yo",
                    interrupted_at_ms=5,
                    timestamps=[SpeechTimestamp(text="yo", start_ms=0, duration_ms=5)],
                    id="it",
                    provider_name="openai",
                ),
            ],
            usage=RequestUsage(
                input_tokens=9,
                output_tokens=3,
                cache_write_tokens=1,
                cache_write_1h_tokens=1,
                cache_read_tokens=2,
                output_reasoning_tokens=1,
                input_audio_tokens=1,
                cache_audio_read_tokens=1,
                output_audio_tokens=1,
                audio_seconds=0.5,
                details={"reasoning_tokens": 1},
                cost=Decimal("0.5"),
                unmeasured_requests=1,
                cache_reported=False,
            ),
            model_name="m",
            timestamp=TS,
            provider_name="openai",
            provider_url="https://api.openai.com/v1",
            provider_details={"finish_reason": "completed"},
            provider_response_id="resp",
            finish_reason="tool_call",
            run_id="r",
            conversation_id="c",
            metadata={"z": 1},
            state="incomplete",
            model_id="openai:m",
            canonical_system="openai",
            workspace_ref=WorkspaceRef(provider="local", id="w"),
            history_digest="h",
            failed_attempts=[
                ModelRequestAttempt(
                    model_name="x",
                    provider_name="p",
                    outcome="error",
                    error="E: e",
                    timestamp=TS,
                    duration=timedelta(hours=30, microseconds=1),
                    usage=RequestUsage(input_tokens=1),
                )
            ],
        ),
        ModelRequest(
            parts=[
                ToolReturnPart(
                    "get",
                    [
                        "see",
                        ImageUrl("https://e.com/c.png", media_type="image/png", identifier="c1"),
                        {"kind": "image-url", "url": "https://x/y.png", "media_type": "image/png"},
                    ],
                    "call-1",
                    timestamp=TS,
                    tool_kind="ns.get",
                    metadata={"m": 2},
                ),
                ToolReturnPart(
                    "raw",
                    [{"type": "missing", "loc": ["b"], "msg": "Field required", "input": {}}],
                    "call-2",
                    timestamp=TS,
                    outcome="retried",
                    retry=RetryInfo("validation_error", attempt=1, max_retries=2),
                ),
                RetryFeedbackPart("Please return text.", RetryInfo("no_output"), timestamp=TS),
            ]
        ),
    ]


def test_ferrule_history_round_trips_through_pydantic_ai(pai_python: str, tmp_path: Path) -> None:
    messages = ferrule_corpus()
    source, echoed = tmp_path / "ferrule.json", tmp_path / "echoed.json"
    source.write_bytes(history.dump_pydantic_ai(messages))
    result = _run_tool(pai_python, "echo", str(source), str(echoed))
    assert result.returncode == 0, result.stderr
    back = history.load_pydantic_ai(echoed.read_bytes())
    for original, loaded in zip(messages, back, strict=True):
        assert loaded == original, f"{loaded!r}\n!=\n{original!r}"
    assert back == messages


def test_ferrule_only_values_map_onto_pydantic_ai(pai_python: str, tmp_path: Path) -> None:
    """What PydanticAI cannot represent: ferrule's legacy `RetryPromptPart` and `finish_reason="other"`."""
    messages: list[Message] = [
        ModelRequest(
            parts=[
                RetryPromptPart("Use a real city.", tool_name="get_weather", tool_call_id="c1", timestamp=TS),
                RetryPromptPart(
                    [{"loc": ["x"], "msg": "bad", "type": "value_error", "input": 1}],
                    tool_call_id="c2",
                    timestamp=TS,
                ),
            ]
        ),
        ModelResponse(parts=[TextPart("x")], finish_reason="other", timestamp=TS),
    ]
    source, echoed = tmp_path / "ferrule.json", tmp_path / "echoed.json"
    source.write_bytes(history.dump_pydantic_ai(messages))
    result = _run_tool(pai_python, "echo", str(source), str(echoed))
    assert result.returncode == 0, result.stderr
    request, response = history.load_pydantic_ai(echoed.read_bytes())
    tool_retry, feedback = request.parts
    assert isinstance(tool_retry, ToolReturnPart)
    assert (tool_retry.outcome, tool_retry.content, tool_retry.tool_call_id) == (
        "retried",
        "Use a real city.",
        "c1",
    )
    assert isinstance(feedback, RetryFeedbackPart)
    assert feedback.retry == RetryInfo("validation_error")
    assert isinstance(response, ModelResponse)
    assert response.finish_reason is None


def test_skip_reason_names_the_environment() -> None:
    assert "pydantic-ai-compat" in SKIP_REASON
    assert ENV_VAR in SKIP_REASON
