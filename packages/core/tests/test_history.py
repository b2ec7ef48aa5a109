from __future__ import annotations

import base64
import json
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from datetime import timezone
from decimal import Decimal
from typing import Any
from typing import cast

import msgspec
import pytest

from ferrule.core import bounded_json
from ferrule.core import history
from ferrule.core.history import HistoryError
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
from ferrule.core.messages import ModelResponse
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
from ferrule.core.messages import UserPromptPart
from ferrule.core.messages import VideoUrl
from ferrule.core.messages import WorkspaceRef
from ferrule.core.usage import RequestUsage

TS = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
TS_OFFSET = datetime(2025, 6, 1, 12, 0, 0, 1000, tzinfo=timezone(timedelta(hours=-3, minutes=-30)))
TS_NAIVE = datetime(2024, 2, 29, 23, 59, 59)
HIGH_BYTES = bytes(range(256))  # base64 of this holds `+` and `/`


def rich_history() -> list[Message]:
    """One of every part kind and most fields; kept in sync with the message unions by a test below."""
    return [
        ModelRequest(
            parts=[
                SystemPromptPart(
                    "be brief", timestamp=TS, dynamic_ref="fn", scope="request", metadata={"a": 1}
                ),
                UserPromptPart(
                    [
                        "look",
                        TextContent("meta", metadata={"k": [1, 2]}),
                        StructuredContent.from_value({"x": 1}, tag="state"),
                        ImageUrl("https://example.com/a.png", vendor_metadata={"detail": "low"}),
                        AudioUrl("https://example.com/a.mp3", media_type="audio/mpeg"),
                        VideoUrl("https://example.com/v.mp4", force_download=True),
                        DocumentUrl(
                            "https://example.com/d.pdf", force_download="allow-local", identifier="d"
                        ),
                        BinaryContent(data=HIGH_BYTES, media_type="image/png"),
                        UploadedFile(file_id="file-1", provider_name="openai"),
                        CachePoint(ttl="1h"),
                    ],
                    timestamp=TS_OFFSET,
                ),
                SpeechPart(
                    speaker="user", transcript="hi", audio=BinaryContent(data=b"RIFF", media_type="audio/wav")
                ),
                CompactionPart("summary", metadata={"by": "app"}),
                InstructionBaselinePart(
                    instructions=[
                        InstructionPart("static"),
                        InstructionPart("dyn", dynamic=True, on_change="append", id="capability:b:x"),
                        InstructionDigest(content_hash="ab" * 32, dynamic=True, id="agent"),
                    ]
                ),
                InstructionDeltaPart(id="toolset:w", content=None),
                ToolAvailabilityDeltaPart(tools_added=["t1"], tool_call_id="c0"),
                CapabilityLoadDeltaPart(loaded=["web"]),
                ModelSettingsDeltaPart(settings={"thinking": "high"}, top_level=True),
            ],
            timestamp=TS_NAIVE,
            instructions="be nice",
            run_id="r1",
            metadata={"tenant": "t"},
        ),
        ModelResponse(
            parts=[
                ThinkingPart(
                    "hmm", id="t1", signature="sig", provider_name="anthropic", provider_details={"x": 1}
                ),
                TextPart(
                    "hi",
                    id="m1",
                    provider_name="anthropic",
                    citations=[{"sources": [{"kind": "web", "url": "u"}]}],
                ),
                ToolCallPart("get", {"a": 1}, "call-1", id="fc", provider_name="anthropic"),
                ToolCallPart("raw", '{"b": 2}', "call-2"),
                NativeToolCallPart("web_search", {"q": "x"}, "ws-1", provider_name="anthropic"),
                NativeToolReturnPart(
                    "web_search", [{"url": "u"}], "ws-1", timestamp=TS, provider_name="anthropic"
                ),
                FilePart(BinaryContent(data=b"\x89PNG", media_type="image/png"), provider_name="openai"),
                CompactionPart(None, id="cmp", provider_name="anthropic", provider_details={"enc": "x"}),
                SpeechPart(
                    speaker="assistant",
                    transcript="yo",
                    interrupted_at_ms=5,
                    timestamps=[SpeechTimestamp(text="yo", start_ms=0, duration_ms=5, granularity="segment")],
                ),
            ],
            usage=RequestUsage(
                input_tokens=5,
                output_tokens=7,
                cache_read_tokens=1,
                details={"reasoning_tokens": 3},
                cost=Decimal("0.00120"),
                unmeasured_requests=1,
                cache_reported=False,
            ),
            model_name="m",
            timestamp=TS,
            provider_name="anthropic",
            provider_details={"finish_reason": "end_turn"},
            finish_reason="tool_call",
            model_id="anthropic:m",
            canonical_system="anthropic",
            workspace_ref=WorkspaceRef(provider="local", id="w"),
            history_digest="d",
            failed_attempts=[
                ModelRequestAttempt(
                    model_name="x",
                    outcome="error",
                    error="E: boom",
                    timestamp=TS,
                    duration=timedelta(seconds=1.5),
                )
            ],
            state="suspended",
        ),
        ModelRequest(
            parts=[
                ToolReturnPart("get", {"ok": True}, "call-1", timestamp=TS, metadata={"m": 1}),
                ToolReturnPart(
                    "raw",
                    [{"loc": ["b"], "msg": "bad"}],
                    "call-2",
                    timestamp=TS,
                    outcome="retried",
                    retry=RetryInfo("validation_error", attempt=1, max_retries=3),
                ),
                RetryFeedbackPart("Please return text.", RetryInfo("no_output"), timestamp=TS),
                RetryPromptPart("legacy", tool_name=None, tool_call_id="c9", timestamp=TS),
            ]
        ),
    ]


# --- ferrule's envelope --------------------------------------------------------------------------


def test_dumps_loads_round_trips_every_part_kind() -> None:
    messages = rich_history()
    data = history.dumps(messages)
    assert history.loads(data) == messages
    assert history.loads(data.decode()) == messages
    assert history.loads(memoryview(data)) == messages


def test_every_part_kind_is_in_the_rich_history() -> None:
    from typing import get_args

    from ferrule.core.messages import ModelRequestPart
    from ferrule.core.messages import ModelResponsePart
    from ferrule.core.messages import UserContent

    seen: set[type] = set()
    for message in rich_history():
        for part in message.parts:
            seen.add(type(part))
            if isinstance(part, UserPromptPart) and isinstance(part.content, list):
                seen.update(type(item) for item in part.content)
    expected = {*get_args(ModelRequestPart), *get_args(ModelResponsePart), *get_args(UserContent)} - {str}
    assert expected - seen == set()


def test_envelope_shape_is_versioned() -> None:
    data = history.dumps([ModelRequest.user_text_prompt("hi")])
    assert data.startswith(b'{"version":1,"messages":[')
    decoded = json.loads(data)
    assert decoded["version"] == history.HISTORY_VERSION == 1
    assert decoded["messages"][0]["kind"] == "request"
    assert frozenset({1}) == history.SUPPORTED_VERSIONS


def test_future_version_is_rejected_with_the_supported_versions() -> None:
    with pytest.raises(
        HistoryError, match=r"version 2 was written by a newer ferrule.*version\(s\) 1"
    ) as info:
        history.loads(b'{"version": 2, "messages": {"a different": "shape"}}')
    assert info.value.path == "$.version"


def test_unknown_old_version_is_rejected() -> None:
    with pytest.raises(HistoryError, match=r"version 0 is not a ferrule history version \(supported: 1\)"):
        history.loads(b'{"version": 0, "messages": []}')


def test_envelope_without_messages_is_rejected() -> None:
    with pytest.raises(HistoryError, match="no `messages`") as info:
        history.loads(b'{"version": 1}')
    assert info.value.path == "$.messages"


def test_bare_list_passed_to_loads_points_to_load_pydantic_ai() -> None:
    with pytest.raises(HistoryError, match="load_pydantic_ai"):
        history.loads(b'[{"kind": "request", "parts": []}]')


def test_envelope_passed_to_load_pydantic_ai_points_to_loads() -> None:
    with pytest.raises(HistoryError, match=r"loads\(\)"):
        history.load_pydantic_ai(history.dumps([]))


def test_type_errors_carry_the_path_inside_the_envelope() -> None:
    bad = (
        b'{"version": 1, "messages": [{"kind": "request", "parts": [{"part_kind": "text", "content": "x"}]}]}'
    )
    with pytest.raises(HistoryError) as info:
        history.loads(bad)
    assert info.value.path == "$.messages[0].parts[0].part_kind"
    assert "at $.messages[0].parts[0].part_kind" in str(info.value)


def test_type_errors_carry_the_path_in_a_pydantic_ai_list() -> None:
    bad = b'[{"kind": "response", "parts": [{"part_kind": "text", "content": 5}]}]'
    with pytest.raises(HistoryError) as info:
        history.load_pydantic_ai(bad)
    assert info.value.path == "$[0].parts[0].content"


@pytest.mark.parametrize("data", [b"", b"{", b'{"version": 1, "messages": [}', b"\xff\xfe"])
def test_malformed_json_raises_history_error(data: bytes) -> None:
    with pytest.raises(HistoryError, match="history rejected: malformed JSON") as info:
        history.loads(data)
    assert isinstance(info.value.__cause__, bounded_json.MalformedJsonError)


def test_version_must_be_an_integer() -> None:
    with pytest.raises(HistoryError) as info:
        history.loads(b'{"version": "1", "messages": []}')
    assert info.value.path == "$.version"


# --- limits: the HISTORY profile, at and one past each limit -------------------------------------


def _envelope_with_tool_content(content_json: bytes) -> bytes:
    return (
        b'{"version":1,"messages":[{"kind":"request","parts":[{"part_kind":"tool-return","tool_name":"t",'
        b'"tool_call_id":"c","timestamp":"2026-01-02T03:04:05Z","content":' + content_json + b"}]}]}"
    )


# The envelope, messages list, message, parts list and part put the content value at depth 5.
_CONTENT_DEPTH_OFFSET = 5


def test_history_depth_limit_accepts_exactly_the_limit() -> None:
    depth = bounded_json.HISTORY.max_depth - _CONTENT_DEPTH_OFFSET
    content = b"[" * depth + b"]" * depth
    messages = history.loads(_envelope_with_tool_content(content))
    assert isinstance(messages[0].parts[0], ToolReturnPart)


def test_history_depth_limit_rejects_one_past() -> None:
    depth = bounded_json.HISTORY.max_depth - _CONTENT_DEPTH_OFFSET + 1
    content = b"[" * depth + b"]" * depth
    with pytest.raises(HistoryError) as info:
        history.loads(_envelope_with_tool_content(content))
    cause = info.value.__cause__
    assert isinstance(cause, bounded_json.JsonLimitError)
    assert (cause.limit, cause.profile) == ("max_depth", "history")


def test_history_item_limit_at_and_past() -> None:
    limit = bounded_json.HISTORY.max_items
    at = b"[" + b",".join([b"0"] * limit) + b"]"
    part = history.loads(_envelope_with_tool_content(at))[0].parts[0]
    assert isinstance(part, ToolReturnPart)
    assert len(part.content) == limit
    past = b"[" + b",".join([b"0"] * (limit + 1)) + b"]"
    with pytest.raises(HistoryError) as info:
        history.loads(_envelope_with_tool_content(past))
    assert isinstance(info.value.__cause__, bounded_json.JsonLimitError)
    assert info.value.__cause__.limit == "max_items"


def test_history_string_limit_at_and_past() -> None:
    limit = bounded_json.HISTORY.max_string_bytes
    at = b'"' + b"a" * limit + b'"'
    part = history.load_pydantic_ai(
        b'[{"kind":"response","parts":[{"part_kind":"text","content":' + at + b"}]}]"
    )[0].parts[0]
    assert isinstance(part, TextPart)
    assert len(part.content) == limit
    del part, at
    past = b'"' + b"a" * (limit + 1) + b'"'
    with pytest.raises(HistoryError) as info:
        history.load_pydantic_ai(
            b'[{"kind":"response","parts":[{"part_kind":"text","content":' + past + b"}]}]"
        )
    assert isinstance(info.value.__cause__, bounded_json.JsonLimitError)
    assert info.value.__cause__.limit == "max_string_bytes"


# --- exactness -----------------------------------------------------------------------------------


def test_timestamps_round_trip_exactly() -> None:
    stamps = [TS, TS_OFFSET, TS_NAIVE, datetime(2020, 1, 1, tzinfo=UTC)]
    messages: list[Message] = [
        ModelResponse(parts=[TextPart(str(i))], timestamp=ts) for i, ts in enumerate(stamps)
    ]
    for load, dump in ((history.loads, history.dumps), (history.load_pydantic_ai, history.dump_pydantic_ai)):
        loaded = load(dump(messages))
        for original, back in zip(messages, loaded, strict=True):
            assert isinstance(back, ModelResponse)
            assert back.timestamp == original.timestamp
            assert back.timestamp is not None
            assert original.timestamp is not None
            assert back.timestamp.utcoffset() == original.timestamp.utcoffset()
            assert back.timestamp.microsecond == original.timestamp.microsecond
    raw = json.loads(history.dump_pydantic_ai(messages))
    assert [m["timestamp"] for m in raw] == [
        "2026-01-02T03:04:05.678901Z",
        "2025-06-01T12:00:00.001000-03:30",
        "2024-02-29T23:59:59",
        "2020-01-01T00:00:00Z",
    ]


def test_bytes_round_trip_exactly_and_urlsafe_base64_is_accepted() -> None:
    urlsafe = base64.urlsafe_b64encode(HIGH_BYTES).decode()
    assert "-" in urlsafe
    assert "_" in urlsafe
    pai = (
        '[{"kind":"request","parts":[{"part_kind":"user-prompt","timestamp":"2026-01-02T03:04:05Z",'
        f'"content":[{{"kind":"binary","media_type":"image/png","data":"{urlsafe}"}},'
        '{"kind":"binary","media_type":"x/y","data":"_w"}]}]}]'
    )
    (message,) = history.load_pydantic_ai(pai)
    part = message.parts[0]
    assert isinstance(part, UserPromptPart)
    content = part.content
    assert isinstance(content, list)
    assert content[0] == BinaryContent(data=HIGH_BYTES, media_type="image/png")
    assert content[1] == BinaryContent(data=b"\xff", media_type="x/y")
    # ferrule writes standard base64, which PydanticAI also reads.
    assert base64.b64encode(HIGH_BYTES) in history.dump_pydantic_ai([message])


def test_pydantic_ai_binary_layout_is_read_without_touching_lookalike_data() -> None:
    urlsafe = base64.urlsafe_b64encode(HIGH_BYTES).decode()
    binary = f'{{"data":"{urlsafe}","media_type":"image/png","vendor_metadata":null,"kind":"binary","identifier":"i"}}'
    # Same keys and layout, but not a binary item: must come back byte for byte.
    lookalike = '{"data":"snake_case-id","media_type":"m","vendor_metadata":null,"kind":"binary-ish"}'
    pai = (
        '[{"kind":"response","timestamp":"2026-01-02T03:04:05Z","parts":['
        f'{{"part_kind":"file","content":{binary}}},'
        f'{{"part_kind":"tool-call","tool_name":"t","tool_call_id":"c","args":{{"x":{lookalike}}}}}]}}]'
    )
    (message,) = history.load_pydantic_ai(pai)
    file_part, call = message.parts
    assert isinstance(file_part, FilePart)
    assert file_part.content == BinaryContent(data=HIGH_BYTES, media_type="image/png", identifier="i")
    assert isinstance(call, ToolCallPart)
    assert call.args == {"x": json.loads(lookalike)}


def test_invalid_base64_reports_its_path() -> None:
    bad = b'[{"kind":"response","parts":[{"part_kind":"file","content":{"kind":"binary","media_type":"a/b","data":"!!"}}]}]'
    with pytest.raises(HistoryError) as info:
        history.load_pydantic_ai(bad)
    assert info.value.path == "$[0].parts[0].content.data"


def test_big_ints_and_unicode_survive() -> None:
    args = {"big": 2**70, "neg": -(2**65), "text": 'q " \\ \u2028 \x00 \U0001f600'}
    messages: list[Message] = [ModelResponse(parts=[ToolCallPart("t", args, "c")], timestamp=TS)]
    assert history.load_pydantic_ai(history.dump_pydantic_ai(messages)) == messages


def test_dumps_does_not_mutate_the_messages() -> None:
    messages = rich_history()
    messages.append(
        ModelRequest(parts=[ToolReturnPart("t", [ImageUrl("https://e.com/x.png")], "c", timestamp=TS)])
    )
    before = msgspec.json.encode(messages)
    history.dumps(messages)
    history.dump_pydantic_ai(messages)
    history.to_jsonable(messages)
    assert msgspec.json.encode(messages) == before


def test_finish_reason_other_is_ferrule_only() -> None:
    messages: list[Message] = [ModelResponse(parts=[], finish_reason="other", timestamp=TS)]
    assert history.loads(history.dumps(messages)) == messages
    pai = json.loads(history.dump_pydantic_ai(messages))
    assert pai[0].get("finish_reason") is None
    assert messages[0].finish_reason == "other"  # type: ignore[union-attr]


def test_structured_content_renders_once_and_round_trips() -> None:
    item = StructuredContent.from_value({"a": "<b>&"}, tag="ui", description="State")
    assert item.content == 'State\n<ui>{"a":"\\u003cb\\u003e\\u0026"}</ui>'
    assert isinstance(item, TextContent)
    messages: list[Message] = [ModelRequest(parts=[UserPromptPart([item], timestamp=TS)])]
    loaded = history.loads(history.dumps(messages))
    assert loaded == messages
    given = StructuredContent("kept as written", value=[1])
    assert given.content == "kept as written"


# --- files in tool results -----------------------------------------------------------------------


def _tool_return(content: Any, digests: list[str] | None) -> bytes:
    part: dict[str, Any] = {
        "part_kind": "tool-return",
        "tool_name": "t",
        "tool_call_id": "c",
        "timestamp": "2026-01-02T03:04:05Z",
        "content": content,
    }
    if digests is not None:
        part["content_file_digests"] = digests
    return json.dumps([{"kind": "request", "parts": [part]}]).encode()


def _digest(item: dict[str, Any]) -> str:
    import hashlib

    return hashlib.sha256(json.dumps(item, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


IMAGE = {
    "url": "https://example.com/a.png",
    "force_download": False,
    "vendor_metadata": None,
    "kind": "image-url",
    "media_type": "image/png",
    "identifier": "abc123",
}
UPLOADED = {
    "file_id": "file-1",
    "provider_name": "openai",
    "vendor_metadata": None,
    "kind": "uploaded-file",
    "media_type": "application/pdf",
    "identifier": "f1",
}


def _content(data: bytes) -> Any:
    (message,) = history.load_pydantic_ai(data)
    part = message.parts[0]
    assert isinstance(part, ToolReturnPart)
    return part.content


def test_recorded_file_items_are_rebuilt() -> None:
    data = _tool_return(["x", IMAGE, {"deep": [UPLOADED]}], [_digest(IMAGE), _digest(UPLOADED)])
    content = _content(data)
    # The record is a serialization detail: it is recomputed on write, not kept in memory.
    part = history.load_pydantic_ai(data)[0].parts[0]
    assert isinstance(part, ToolReturnPart)
    assert part.content_file_digests is None
    assert content[1] == ImageUrl("https://example.com/a.png", media_type="image/png", identifier="abc123")
    assert content[2]["deep"][0] == UploadedFile(
        file_id="file-1", provider_name="openai", media_type="application/pdf", identifier="f1"
    )


def test_unrecorded_lookalikes_stay_mappings() -> None:
    content = _content(_tool_return([IMAGE, UPLOADED], []))
    assert content == [IMAGE, UPLOADED]


def test_recorded_item_with_changed_fields_stays_a_mapping() -> None:
    tampered = {**IMAGE, "url": "https://attacker.example/x.png"}
    assert _content(_tool_return([tampered], [_digest(IMAGE)])) == [tampered]


def test_url_items_need_a_media_type_key() -> None:
    item = {k: v for k, v in IMAGE.items() if k != "media_type"}
    assert _content(_tool_return([item], [_digest(item)])) == [item]


def test_legacy_unrecorded_history_rebuilds_only_plain_http_urls() -> None:
    forced = {**IMAGE, "force_download": True}
    local = {**IMAGE, "url": "file:///etc/passwd"}
    content = _content(_tool_return([forced, local, UPLOADED], None))
    assert content[0] == ImageUrl("https://example.com/a.png", media_type="image/png", identifier="abc123")
    assert content[1] == local
    assert content[2] == UPLOADED


def test_binary_items_are_rebuilt_when_they_have_exactly_the_binary_fields() -> None:
    binary = {"kind": "binary", "data": base64.b64encode(b"\x00\x01").decode(), "media_type": "image/png"}
    extra = {**binary, "label": "mine"}
    not_b64 = {**binary, "data": "%%%"}
    content = _content(_tool_return([binary, extra, not_b64, {"kind": "binary", "label": "x"}], []))
    assert content[0] == BinaryContent(data=b"\x00\x01", media_type="image/png")
    assert content[1:] == [extra, not_b64, {"kind": "binary", "label": "x"}]


def test_ferrule_file_items_are_recorded_when_written() -> None:
    part = ToolReturnPart(
        "render",
        [
            "chart:",
            ImageUrl("https://example.com/c.png"),
            UploadedFile(file_id="file-9", provider_name="openai"),
        ],
        "c",
        timestamp=TS,
    )
    for dump, load in ((history.dumps, history.loads), (history.dump_pydantic_ai, history.load_pydantic_ai)):
        data = dump([ModelRequest(parts=[part])])
        raw: Any = json.loads(data)
        listed: list[Any] = cast("dict[str, Any]", raw)["messages"] if isinstance(raw, dict) else raw
        stored: dict[str, Any] = listed[0]["parts"][0]
        image = stored["content"][1]
        assert image["media_type"] == "image/png"
        assert "identifier" in image
        assert image["vendor_metadata"] is None
        assert sorted(stored["content_file_digests"]) == sorted(
            [_digest(image), _digest(stored["content"][2])]
        )
        (message,) = load(data)
        loaded = message.parts[0]
        assert isinstance(loaded, ToolReturnPart)
        assert loaded.content[1] == ImageUrl(
            "https://example.com/c.png", media_type="image/png", identifier=image["identifier"]
        )
        assert isinstance(loaded.content[2], UploadedFile)


def test_native_tool_returns_rebuild_files_too() -> None:
    data = json.dumps(
        [
            {
                "kind": "response",
                "parts": [
                    {
                        "part_kind": "builtin-tool-return",
                        "tool_name": "image_generation",
                        "tool_call_id": "ig",
                        "timestamp": "2026-01-02T03:04:05Z",
                        "content": [IMAGE],
                        "content_file_digests": [_digest(IMAGE)],
                    }
                ],
            }
        ]
    ).encode()
    (message,) = history.load_pydantic_ai(data)
    part = message.parts[0]
    assert isinstance(part, NativeToolReturnPart)
    assert isinstance(part.content[0], ImageUrl)


# --- plain JSON values ---------------------------------------------------------------------------


def test_to_and_from_jsonable_round_trip() -> None:
    messages = rich_history()
    values = history.to_jsonable(messages)
    assert isinstance(values, list)
    assert isinstance(values[0], dict)
    json.dumps(values)  # plain JSON values only
    assert history.from_jsonable(values) == messages


def test_from_jsonable_accepts_urlsafe_base64_without_mutating_its_input() -> None:
    values = [
        {
            "kind": "response",
            "parts": [
                {"part_kind": "file", "content": {"kind": "binary", "media_type": "a/b", "data": "_w"}}
            ],
            "timestamp": "2026-01-02T03:04:05Z",
        }
    ]
    snapshot = json.dumps(values)
    (message,) = history.from_jsonable(values)
    assert isinstance(message, ModelResponse)
    part = message.parts[0]
    assert isinstance(part, FilePart)
    assert part.content.data == b"\xff"
    assert json.dumps(values) == snapshot


def test_from_jsonable_reports_the_path() -> None:
    with pytest.raises(HistoryError) as info:
        history.from_jsonable([{"kind": "request", "parts": [{"part_kind": "nope"}]}])
    assert info.value.path == "$[0].parts[0].part_kind"
