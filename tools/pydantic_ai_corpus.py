"""The PydanticAI golden corpus: message histories written by the real `pydantic-ai-slim` package.

Runs only in the test-only `pydantic-ai-compat` hatch environment (pydantic-ai-slim==2.68.0); no
ferrule package depends on PydanticAI. The compatibility test
(`packages/core/tests/test_pydantic_ai_compat.py`) drives it through three commands:

    python tools/pydantic_ai_corpus.py generate OUT_DIR
        Build every corpus case with PydanticAI's own classes and write each as the JSON
        `ModelMessagesTypeAdapter.dump_json` produces (`OUT_DIR/<case>.json`).

    python tools/pydantic_ai_corpus.py check EXPECTED ACTUAL [EXPECTED ACTUAL ...]
        Load each pair with PydanticAI and require the messages to be equal and to dump to the same
        JSON (which also covers fields PydanticAI leaves out of `==`, such as file identifiers).
        Prints one JSON line per pair ({"expected", "actual", "ok", "diff"}); exits 1 if any differ.

    python tools/pydantic_ai_corpus.py echo IN OUT [IN OUT ...]
        Validate each JSON message list with PydanticAI and write PydanticAI's own dump of it.

    python tools/pydantic_ai_corpus.py agent-history OUT
        Run a real PydanticAI `Agent` (system prompt, instructions, a tool, a text answer) on its
        `FunctionModel` and write `result.all_messages_json()`: the PydanticAI history that
        docs/coming-from-pydantic-ai.md loads (docs/examples/pydantic_ai_history.json).
"""

from __future__ import annotations

import difflib
import json
import sys
from collections.abc import Callable
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from datetime import timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai import RunContext
from pydantic_ai.messages import AgentInstructionSource
from pydantic_ai.messages import AudioUrl
from pydantic_ai.messages import BinaryContent
from pydantic_ai.messages import CachePoint
from pydantic_ai.messages import CapabilityInstructionSource
from pydantic_ai.messages import CapabilityLoadDeltaPart
from pydantic_ai.messages import Citation
from pydantic_ai.messages import CompactionPart
from pydantic_ai.messages import ContentCitationAnchor
from pydantic_ai.messages import DocumentCitationSource
from pydantic_ai.messages import DocumentUrl
from pydantic_ai.messages import FilePart
from pydantic_ai.messages import ImageUrl
from pydantic_ai.messages import InstructionBaselinePart
from pydantic_ai.messages import InstructionDeltaPart
from pydantic_ai.messages import InstructionDigest
from pydantic_ai.messages import InstructionId
from pydantic_ai.messages import InstructionPart
from pydantic_ai.messages import MarkerCitationAnchor
from pydantic_ai.messages import ModelMessage
from pydantic_ai.messages import ModelMessagesTypeAdapter
from pydantic_ai.messages import ModelRequest
from pydantic_ai.messages import ModelRequestAttempt
from pydantic_ai.messages import ModelResponse
from pydantic_ai.messages import ModelSettingsDeltaPart
from pydantic_ai.messages import NativeToolCallPart
from pydantic_ai.messages import NativeToolReturnPart
from pydantic_ai.messages import RetryFeedbackPart
from pydantic_ai.messages import RetryInfo
from pydantic_ai.messages import RunInstructionSource
from pydantic_ai.messages import SpeechPart
from pydantic_ai.messages import SpeechTimestamp
from pydantic_ai.messages import StructuredContent
from pydantic_ai.messages import SystemPromptPart
from pydantic_ai.messages import TextContent
from pydantic_ai.messages import TextPart
from pydantic_ai.messages import ThinkingPart
from pydantic_ai.messages import ToolAvailabilityDeltaPart
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.messages import ToolsetInstructionSource
from pydantic_ai.messages import UploadedFile
from pydantic_ai.messages import UserPromptPart
from pydantic_ai.messages import VideoUrl
from pydantic_ai.messages import WebCitationSource
from pydantic_ai.messages import WorkspaceRef
from pydantic_ai.models.function import AgentInfo
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.usage import RequestUsage

TS = datetime(2025, 3, 4, 5, 6, 7, 891011, tzinfo=UTC)
TS_WHOLE = datetime(2025, 3, 4, 5, 6, 7, tzinfo=UTC)
TS_OFFSET = datetime(2024, 12, 31, 23, 59, 59, 1000, tzinfo=timezone(timedelta(hours=5, minutes=30)))
TS_NEGATIVE = datetime(2024, 2, 29, 12, 0, tzinfo=timezone(-timedelta(hours=8)))
TS_NAIVE = datetime(2023, 7, 1, 8, 30, 0, 123456)

# Bytes whose base64 holds `+` and `/` (so PydanticAI's URL-safe `-` and `_`), a NUL and high bytes.
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(240, 256)) * 3 + b"\xfb\xef\xbe"
PDF = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n"
WAV = b"RIFF$\x00\x00\x00WAVEfmt " + b"\xff\xfe" * 7
ODD = b"\xff"  # one byte: padded base64 ("_w==" URL-safe)

ERROR_DETAILS: list[Any] = [
    {"type": "missing", "loc": ("city",), "msg": "Field required", "input": {"country": "FR"}},
    {"type": "int_parsing", "loc": ("days", 0), "msg": "Input should be a valid integer", "input": "x"},
]

TRICKY_TEXT = 'quotes " \\ backslash, \u2028 separator, \x00 nul, emoji \U0001f600, <tag> & amp'


def _usage_full() -> RequestUsage:
    return RequestUsage(
        input_tokens=1200,
        cache_write_tokens=100,
        cache_write_1h_tokens=40,
        cache_read_tokens=300,
        output_tokens=450,
        output_reasoning_tokens=200,
        input_audio_tokens=12,
        cache_audio_read_tokens=4,
        output_audio_tokens=8,
        audio_seconds=1.25,
        details={"reasoning_tokens": 200, "accepted_prediction_tokens": 3, "rejected_prediction_tokens": 0},
        cost=Decimal("0.0001230"),
    )


def case_conversation() -> list[ModelMessage]:
    """A plain exchange: system prompt, user text, text answer."""
    return [
        ModelRequest(
            parts=[
                SystemPromptPart("You are terse.", timestamp=TS),
                UserPromptPart("What is the capital of France?", timestamp=TS_OFFSET),
            ],
            timestamp=TS,
            instructions="Answer in one word.",
            run_id="run-1",
            conversation_id="conv-1",
        ),
        ModelResponse(
            parts=[TextPart("Paris.")],
            usage=RequestUsage(input_tokens=20, output_tokens=2),
            model_name="gpt-5-mini-2025-08-07",
            timestamp=TS,
            provider_name="openai",
            provider_url="https://api.openai.com/v1/",
            provider_response_id="chatcmpl-123",
            finish_reason="stop",
            run_id="run-1",
            conversation_id="conv-1",
        ),
    ]


def case_system_prompts() -> list[ModelMessage]:
    """Every `SystemPromptPart` field, and a request in the interrupted state."""
    return [
        ModelRequest(
            parts=[
                SystemPromptPart(
                    "Budget left: 3 calls.",
                    timestamp=TS_NEGATIVE,
                    dynamic_ref="remaining_budget",
                    context_id="system_prompt:budget",
                    scope="request",
                    metadata={"capability": "budget", "n": [1, 2.5, None, True]},
                ),
                UserPromptPart(TRICKY_TEXT, timestamp=TS_NAIVE),
            ],
            metadata={"tenant": "acme", "nested": {"deep": [{"x": 1}]}},
            state="interrupted",
        )
    ]


def case_rich_user_content() -> list[ModelMessage]:
    """Every `UserContent` kind, including URLs whose media type cannot be inferred."""
    return [
        ModelRequest(
            parts=[
                UserPromptPart(
                    [
                        "Describe these:",
                        TextContent("tagged text", metadata={"source": "clipboard"}),
                        StructuredContent(
                            {"cart": [{"sku": "a<b>", "qty": 2}]}, tag="ui_state", description="App state"
                        ),
                        StructuredContent([1, 2, 3], format="xml", tag="numbers"),
                        ImageUrl("https://example.com/a.png"),
                        ImageUrl(
                            "https://example.com/noext",
                            media_type="image/webp",
                            identifier="img-1",
                            vendor_metadata={"detail": "high"},
                            force_download=True,
                        ),
                        AudioUrl("https://example.com/clip.mp3"),
                        VideoUrl("https://youtu.be/dQw4w9WgXcQ", vendor_metadata={"fps": 1}),
                        VideoUrl("https://example.com/v.mp4?sig=abc"),
                        DocumentUrl("https://example.com/report.pdf", force_download="allow-local"),
                        DocumentUrl("https://example.com/no-extension"),
                        BinaryContent(PNG, media_type="image/png"),
                        BinaryContent(
                            PDF, media_type="application/pdf", identifier="doc-1", vendor_metadata={"k": "v"}
                        ),
                        BinaryContent(WAV, media_type="audio/wav"),
                        BinaryContent(ODD, media_type="application/octet-stream"),
                        BinaryContent(b"", media_type="text/plain"),
                        UploadedFile("file-abc123", "openai"),
                        UploadedFile(
                            "gs://bucket/path/report.pdf",
                            "google-cloud",
                            media_type="application/pdf",
                            vendor_metadata={"media_resolution": "low"},
                            identifier="report",
                        ),
                        CachePoint(),
                        CachePoint(ttl="1h"),
                    ],
                    timestamp=TS,
                )
            ]
        )
    ]


def case_tool_calls() -> list[ModelMessage]:
    """Tool calls with dict, str and no arguments, and their returns with every outcome."""
    return [
        ModelRequest(parts=[UserPromptPart("Weather in Paris and the time?", timestamp=TS)]),
        ModelResponse(
            parts=[
                TextPart("Checking."),
                ToolCallPart(
                    "get_weather",
                    {"city": "Paris", "days": [1, 2], "opts": {"units": "metric", "big": 2**70, "f": 0.1}},
                    "call_1",
                    id="fc_1",
                    provider_name="openai",
                    provider_details={"status": "completed"},
                ),
                ToolCallPart("get_time", '{"tz": "Europe/Paris"}', "call_2"),
                ToolCallPart("noop", None, "call_3", tool_kind="inventory.lookup"),
                ToolCallPart("broken", '{"unterminated": ', "call_4"),
            ],
            usage=_usage_full(),
            model_name="gpt-5",
            timestamp=TS,
            provider_name="openai",
            finish_reason="tool_call",
        ),
        ModelRequest(
            parts=[
                ToolReturnPart(
                    "get_weather",
                    {"temp": 21.5, "unit": "C", "nested": [1, None, True, "x"]},
                    "call_1",
                    timestamp=TS,
                    metadata={"cached": True},
                ),
                ToolReturnPart("get_time", "12:00", "call_2", timestamp=TS_OFFSET),
                ToolReturnPart("noop", None, "call_3", timestamp=TS, tool_kind="inventory.lookup"),
                ToolReturnPart("broken", "boom: ValueError", "call_4", timestamp=TS, outcome="failed"),
                ToolReturnPart(
                    "delete_all", "The user denied this call.", "call_5", timestamp=TS, outcome="denied"
                ),
                ToolReturnPart(
                    "get_weather",
                    "The tool call was interrupted before a result was produced.",
                    "call_6",
                    timestamp=TS,
                    outcome="interrupted",
                ),
                ToolReturnPart(
                    "get_weather",
                    ERROR_DETAILS,
                    "call_7",
                    timestamp=TS,
                    outcome="retried",
                    retry=RetryInfo("validation_error", attempt=1, max_retries=3),
                ),
                ToolReturnPart(
                    "missing_tool",
                    "Unknown tool name: 'missing_tool'.",
                    "call_8",
                    timestamp=TS,
                    outcome="retried",
                    retry=RetryInfo("unknown_tool"),
                ),
                ToolReturnPart("numbers", [1, 2.5, -3, 0, 1e300], "call_9", timestamp=TS),
                ToolReturnPart("flag", False, "call_10", timestamp=TS),
            ]
        ),
    ]


def case_tool_rich_returns() -> list[ModelMessage]:
    """Tool results holding files (rebuilt) next to mappings that only look like files (kept as mappings)."""
    return [
        ModelRequest(
            parts=[
                ToolReturnPart(
                    "render_chart",
                    [
                        "Here is the chart:",
                        ImageUrl("https://example.com/chart.png"),
                        BinaryContent(PNG, media_type="image/png"),
                        DocumentUrl("https://example.com/data", media_type="text/csv", identifier="data"),
                        UploadedFile("file-xyz", "anthropic"),
                        {
                            "kind": "image-url",
                            "url": "https://attacker.example/x.png",
                            "media_type": "image/png",
                        },
                        {"kind": "uploaded-file", "file_id": "file-evil", "provider_name": "openai"},
                        {"kind": "binary", "label": "not a file"},
                        {"nested": {"deeper": [AudioUrl("https://example.com/a.wav")]}},
                    ],
                    "call_1",
                    timestamp=TS,
                ),
                ToolReturnPart(
                    "screenshot", BinaryContent(PNG, media_type="image/png"), "call_2", timestamp=TS
                ),
                ToolReturnPart("fetch", VideoUrl("https://example.com/v.webm"), "call_3", timestamp=TS),
                ToolReturnPart(
                    "plain_map", {"kind": "image-url", "url": "https://x.example/y"}, "call_4", timestamp=TS
                ),
                ToolReturnPart("empty_list", [], "call_5", timestamp=TS),
            ]
        )
    ]


def case_retry_feedback() -> list[ModelMessage]:
    """Output retries that answer no tool call: str and error-detail content, every cause."""
    return [
        ModelRequest(
            parts=[
                RetryFeedbackPart("Please return text.", retry=RetryInfo("no_output"), timestamp=TS),
                RetryFeedbackPart(
                    ERROR_DETAILS, retry=RetryInfo("validation_error", attempt=2, max_retries=3), timestamp=TS
                ),
                RetryFeedbackPart(
                    "The answer must mention a city.", retry=RetryInfo("model_retry", attempt=1), timestamp=TS
                ),
            ]
        )
    ]


def case_legacy_retry_prompt() -> bytes:
    """A history written before PydanticAI split `retry-prompt`: it loads as the parts it meant."""
    legacy: list[dict[str, Any]] = [
        {
            "kind": "request",
            "parts": [
                {
                    "part_kind": "retry-prompt",
                    "content": "Try again with a real city.",
                    "tool_name": "get_weather",
                    "tool_call_id": "call_1",
                    "timestamp": "2025-03-04T05:06:07.891011Z",
                },
                {
                    "part_kind": "retry-prompt",
                    "content": [{"type": "missing", "loc": ["x"], "msg": "Field required", "input": {}}],
                    "tool_name": None,
                    "tool_call_id": "call_2",
                    "timestamp": "2025-03-04T05:06:07Z",
                },
            ],
            "timestamp": None,
        }
    ]
    return json.dumps(legacy).encode()


def case_thinking_and_native_tools() -> list[ModelMessage]:
    """Signed and encrypted thinking, provider-native tool calls and returns, generated files, compaction."""
    return [
        ModelResponse(
            parts=[
                ThinkingPart(
                    "Let me think about this carefully.",
                    id="thinking_1",
                    signature="EqoBCkgIARABGAIiQL+/sig==",
                    provider_name="anthropic",
                    provider_details={"type": "thinking"},
                ),
                ThinkingPart("", signature="gAAAAABencrypted", provider_name="openai", id="rs_1"),
                ThinkingPart("Plain thoughts without a signature."),
                NativeToolCallPart(
                    "web_search", {"query": "pydantic ai"}, "srvtoolu_1", provider_name="anthropic"
                ),
                NativeToolReturnPart(
                    "web_search",
                    [{"title": "Result", "url": "https://ai.pydantic.dev", "page_age": None}],
                    "srvtoolu_1",
                    timestamp=TS,
                    provider_name="anthropic",
                    provider_details={"type": "web_search_tool_result"},
                ),
                NativeToolCallPart(
                    "code_execution", '{"code": "print(1)"}', "ci_1", provider_name="openai", id="ci_1"
                ),
                NativeToolReturnPart(
                    "code_execution",
                    {"stdout": "1\n", "return_code": 0},
                    "ci_1",
                    timestamp=TS_OFFSET,
                    outcome="failed",
                    provider_name="openai",
                ),
                FilePart(BinaryContent(PNG, media_type="image/png"), id="ig_1", provider_name="openai"),
                FilePart(BinaryContent(PDF, media_type="application/pdf")),
                CompactionPart(
                    None,
                    id="cmp_1",
                    provider_name="openai",
                    provider_details={"encrypted_content": "gAAAAcompacted", "type": "compaction"},
                ),
                CompactionPart("Earlier we discussed Paris.", provider_name="anthropic"),
                TextPart(
                    "Paris [1] is the capital.",
                    id="msg_1",
                    provider_name="anthropic",
                    provider_details={"citations": [{"page": 3}]},
                    citations=[
                        Citation(
                            [
                                WebCitationSource(
                                    "https://en.wikipedia.org/wiki/Paris", title="Paris", excerpts=["capital"]
                                )
                            ],
                            anchor=ContentCitationAnchor(start=0, end=5),
                        ),
                        Citation(
                            [
                                DocumentCitationSource(
                                    document_id="file-1", title="atlas.pdf", excerpts=["a", "b"]
                                )
                            ],
                            anchor=MarkerCitationAnchor(start=6, end=9),
                        ),
                        Citation([DocumentCitationSource(title="notes")]),
                    ],
                ),
            ],
            usage=RequestUsage(input_tokens=10, output_tokens=20, details={"reasoning_tokens": 5}),
            model_name="claude-sonnet-4-5",
            timestamp=TS_WHOLE,
            provider_name="anthropic",
            provider_details={"finish_reason": "end_turn", "container": {"id": "cont_1"}},
            finish_reason="stop",
        )
    ]


def case_typed_tool_parts() -> list[ModelMessage]:
    """Tool search and capability loading: base parts PydanticAI promotes to typed subclasses."""
    return [
        ModelResponse(
            parts=[
                ToolCallPart("search_tools", {"queries": ["weather"]}, "call_s", tool_kind="tool-search"),
                NativeToolCallPart(
                    "tool_search",
                    {"queries": ["db"]},
                    "srv_s",
                    tool_kind="tool-search",
                    provider_name="anthropic",
                ),
                NativeToolReturnPart(
                    "tool_search",
                    {"discovered_tools": [{"name": "query_db"}]},
                    "srv_s",
                    tool_kind="tool-search",
                    timestamp=TS,
                    provider_name="anthropic",
                ),
                ToolCallPart("load_capability", {"id": "web"}, "call_c", tool_kind="capability-load"),
            ],
            timestamp=TS,
        ),
        ModelRequest(
            parts=[
                ToolReturnPart(
                    "search_tools",
                    {"discovered_tools": [{"name": "get_weather"}], "message": "found 1"},
                    "call_s",
                    tool_kind="tool-search",
                    timestamp=TS,
                ),
                ToolReturnPart(
                    "load_capability",
                    {"message": "Loaded web."},
                    "call_c",
                    tool_kind="capability-load",
                    timestamp=TS,
                ),
                ToolAvailabilityDeltaPart(tools_added=["get_weather", "query_db"], tool_call_id="call_s"),
                CapabilityLoadDeltaPart(loaded=["web"], tool_call_id="call_c"),
                CapabilityLoadDeltaPart(),
            ]
        ),
    ]


def case_instructions_and_deltas() -> list[ModelMessage]:
    """Instruction baselines, digests and deltas, model-settings deltas, request-side compaction."""
    return [
        ModelRequest(
            parts=[
                InstructionBaselinePart(
                    instructions=[
                        InstructionPart("Be helpful."),
                        InstructionPart(
                            "Budget: 3",
                            dynamic=True,
                            on_change="append",
                            name="remaining",
                            id=InstructionId(CapabilityInstructionSource("budget"), name="remaining"),
                        ),
                        InstructionPart(
                            "Run note",
                            dynamic=True,
                            name="note",
                            id=InstructionId(RunInstructionSource(), name="note"),
                        ),
                        InstructionDigest(
                            id=InstructionId(AgentInstructionSource()), dynamic=True, content_hash="ab" * 32
                        ),
                        InstructionDigest(content_hash="cd" * 32),
                    ]
                ),
                InstructionDeltaPart(
                    id=InstructionId(ToolsetInstructionSource("weather"), name="limits"),
                    content="Max 2 calls.",
                    base_hash="ef" * 32,
                ),
                InstructionDeltaPart(id=InstructionId(ToolsetInstructionSource("weather")), content=None),
                InstructionDeltaPart(id=None, content="from a newer version"),
                ModelSettingsDeltaPart(settings={"thinking": "high"}, top_level=True),
                ModelSettingsDeltaPart(settings={"thinking": None}),
                CompactionPart(
                    "Summary of the earlier conversation.", metadata={"by": "SummarizingCompaction"}
                ),
                UserPromptPart("Continue.", timestamp=TS),
            ],
            timestamp=TS_OFFSET,
            instructions="Be helpful.\n\nBudget: 3",
        )
    ]


def case_speech() -> list[ModelMessage]:
    """Realtime speech on both sides, with retained audio, timestamps and an interruption."""
    return [
        ModelRequest(
            parts=[
                SpeechPart(
                    speaker="user",
                    transcript="What's the weather?",
                    audio=BinaryContent(WAV, media_type="audio/wav"),
                    provider_name="openai",
                    id="item_u1",
                ),
                SpeechPart(speaker="user"),
            ]
        ),
        ModelResponse(
            parts=[
                SpeechPart(
                    speaker="assistant",
                    transcript="It is sunny.",
                    audio=BinaryContent(WAV, media_type="audio/wav", identifier="reply-audio"),
                    interrupted_at_ms=1200,
                    timestamps=[
                        SpeechTimestamp(text="It", start_ms=0, duration_ms=120),
                        SpeechTimestamp(
                            text="is sunny.", start_ms=120, duration_ms=600, granularity="segment"
                        ),
                    ],
                    id="item_a1",
                    provider_name="openai",
                    provider_details={"response_id": "resp_9"},
                )
            ],
            timestamp=TS,
            state="interrupted",
        ),
    ]


def case_response_metadata() -> list[ModelMessage]:
    """Every `ModelResponse` field: usage with details, finish reasons, fallback attempts, workspace."""
    responses: list[ModelMessage] = [
        ModelResponse(
            parts=[TextPart("done")],
            usage=_usage_full(),
            model_name="gpt-5-2025-08-07",
            model_id="openai:gpt-5",
            timestamp=TS,
            provider_name="openai",
            provider_url="https://api.openai.com/v1/",
            canonical_system="openai",
            provider_details={
                "finish_reason": "completed",
                "timestamp": "2025-03-04T05:06:07Z",
                "service_tier": "flex",
            },
            provider_response_id="resp_abc",
            finish_reason="stop",
            run_id="run-7",
            conversation_id="conv-7",
            metadata={"ui": {"message_id": "m1"}},
            workspace_ref=WorkspaceRef(provider="local", id="ws-1"),
            history_digest="e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            failed_attempts=[
                ModelRequestAttempt(
                    model_name="claude-opus",
                    provider_name="anthropic",
                    outcome="error",
                    error="ModelHTTPError: status_code: 529, overloaded",
                    timestamp=TS,
                    duration=timedelta(seconds=1.5),
                ),
                ModelRequestAttempt(
                    model_name="gemini-pro",
                    outcome="rejected",
                    timestamp=TS_NAIVE,
                    duration=timedelta(days=1, hours=6, microseconds=7),
                    usage=RequestUsage(input_tokens=5, unmeasured_requests=1),
                ),
                ModelRequestAttempt(
                    model_name="zero",
                    outcome="error",
                    error="E: x",
                    timestamp=TS_OFFSET,
                    duration=timedelta(0),
                ),
            ],
            state="suspended",
        ),
        ModelResponse(parts=[], timestamp=TS_NAIVE, usage=RequestUsage(unmeasured_requests=1)),
    ]
    for reason in ("length", "content_filter", "tool_call", "error"):
        responses.append(ModelResponse(parts=[TextPart(reason)], timestamp=TS_OFFSET, finish_reason=reason))
    responses.append(ModelResponse(parts=[TextPart("streaming")], timestamp=TS_WHOLE, state="incomplete"))
    return responses


CASES: dict[str, Callable[[], list[ModelMessage] | bytes]] = {
    "conversation": case_conversation,
    "system_prompts": case_system_prompts,
    "rich_user_content": case_rich_user_content,
    "tool_calls": case_tool_calls,
    "tool_rich_returns": case_tool_rich_returns,
    "retry_feedback": case_retry_feedback,
    "legacy_retry_prompt": case_legacy_retry_prompt,
    "thinking_and_native_tools": case_thinking_and_native_tools,
    "typed_tool_parts": case_typed_tool_parts,
    "instructions_and_deltas": case_instructions_and_deltas,
    "speech": case_speech,
    "response_metadata": case_response_metadata,
}
"""Every corpus case by name; `legacy_retry_prompt` is raw JSON PydanticAI upgrades on load."""


def generate(out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, build in CASES.items():
        built = build()
        data = built if isinstance(built, bytes) else ModelMessagesTypeAdapter.dump_json(built)
        # PydanticAI must read each case back to the same JSON, or the corpus is not a fixpoint and
        # "equal to the original" would be meaningless. (Loading narrows some classes, e.g. image
        # `BinaryContent` to `BinaryImage`, so the originals are the messages PydanticAI loads.)
        if not isinstance(built, bytes):
            again = ModelMessagesTypeAdapter.dump_json(ModelMessagesTypeAdapter.validate_json(data))
            if json.loads(again) != json.loads(data):
                raise SystemExit(f"corpus case {name!r} does not round-trip through PydanticAI itself")
        (out_dir / f"{name}.json").write_bytes(data)


def _pretty(messages: list[ModelMessage]) -> list[str]:
    dumped = json.loads(ModelMessagesTypeAdapter.dump_json(messages))
    return json.dumps(dumped, indent=1, sort_keys=True, ensure_ascii=False).splitlines()


def check(pairs: list[tuple[Path, Path]]) -> bool:
    all_ok = True
    for expected_path, actual_path in pairs:
        result: dict[str, Any] = {"expected": str(expected_path), "actual": str(actual_path), "ok": True}
        try:
            expected = ModelMessagesTypeAdapter.validate_json(expected_path.read_bytes())
            actual = ModelMessagesTypeAdapter.validate_json(actual_path.read_bytes())
        except Exception as exc:  # report any validation failure as a failed pair
            result.update(ok=False, diff=f"{type(exc).__name__}: {exc}")
        else:
            want, got = _pretty(expected), _pretty(actual)
            if expected != actual or want != got:
                diff = list(
                    difflib.unified_diff(want, got, "pydantic-ai original", "after ferrule", lineterm="", n=2)
                )
                if expected != actual and not diff:
                    diff = ["messages differ but dump to the same JSON:", repr(expected), repr(actual)]
                result.update(ok=False, diff="\n".join(diff))
        all_ok = all_ok and result["ok"]
        print(json.dumps(result))
    return all_ok


def echo(pairs: list[tuple[Path, Path]]) -> None:
    for source, target in pairs:
        messages = ModelMessagesTypeAdapter.validate_json(source.read_bytes())
        target.write_bytes(ModelMessagesTypeAdapter.dump_json(messages))


def agent_history(out: Path) -> None:
    """A history written by PydanticAI's own agent loop, as an application of it would store one."""

    def weather_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        del info
        last = messages[-1].parts[-1]
        if isinstance(last, ToolReturnPart):
            return ModelResponse(parts=[TextPart(f"It is {last.content} °C in Paris.")])
        return ModelResponse(parts=[ToolCallPart("temperature", {"city": "Paris"}, tool_call_id="call-1")])

    agent = Agent(
        FunctionModel(weather_model, model_name="weather-model"),
        system_prompt="You are a weather assistant.",
        instructions="Answer in one sentence.",
        deps_type=dict[str, float],
    )

    @agent.tool
    def temperature(ctx: RunContext[dict[str, float]], city: str) -> float:
        """The current temperature in a city, in degrees Celsius."""
        return ctx.deps[city]

    result = agent.run_sync("How warm is it in Paris?", deps={"Paris": 18.5})
    out.write_bytes(result.all_messages_json())


def _pairs(args: list[str]) -> list[tuple[Path, Path]]:
    if not args or len(args) % 2:
        raise SystemExit("expected an even, non-zero number of paths")
    return [(Path(args[i]), Path(args[i + 1])) for i in range(0, len(args), 2)]


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "generate":
        generate(Path(argv[1]))
        return 0
    if argv and argv[0] == "check":
        return 0 if check(_pairs(argv[1:])) else 1
    if len(argv) == 2 and argv[0] == "agent-history":
        agent_history(Path(argv[1]))
        return 0
    if argv and argv[0] == "echo":
        echo(_pairs(argv[1:]))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
