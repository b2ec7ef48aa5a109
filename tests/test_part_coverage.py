"""Every message part and user-content kind, through every provider codec: sent, refused or documented.

The kinds are read from the unions themselves (`ModelRequestPart`, `ModelResponsePart`,
`UserContent`), so a new kind fails here until every codec handles it and `docs/core.md` says what
happens to it. For each kind (and the variants whose handling differs), each codec must do exactly
what the table in `docs/core.md` ("What each provider is sent") says:

* `sent`: the part's distinctive content appears in the request body;
* `refused`: encoding raises `UnsupportedContentError` naming the kind and the provider (no request
  can be made, and a real model client sends nothing: see the last test);
* `not sent`: the body holds no trace of it (application records, and provider data outside its
  replay rule), as the docs say.

Each kind is tested alone, and then all of a codec's sent and not-sent kinds together in one history.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import re
import typing
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest

from ferrule.core.errors import ProviderError
from ferrule.core.errors import UnsupportedContentError
from ferrule.core.http import Timeouts
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
from ferrule.core.messages import InstructionPart
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
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
from ferrule.core.model import Model
from ferrule.core.model import ModelCall
from ferrule.core.model import ToolDefinition
from ferrule.providers.anthropic import AnthropicModel
from ferrule.providers.anthropic import AnthropicProvider
from ferrule.providers.anthropic import codec as anthropic_codec
from ferrule.providers.google import GoogleModel
from ferrule.providers.google import GoogleProvider
from ferrule.providers.google import codec as google_codec
from ferrule.providers.openai import LlamaCppServerProvider
from ferrule.providers.openai import OpenAIChatModel
from ferrule.providers.openai import OpenAIProvider
from ferrule.providers.openai import OpenAIResponsesModel
from ferrule.providers.openai import _tool_emulation
from ferrule.providers.openai import chat_codec
from ferrule.providers.openai import responses_codec
from ferrule.providers.openai.profiles import local_server_profile
from tests.support.http_server import LocalServer
from tests.support.http_server import serve_with

DOCS = Path(__file__).resolve().parents[1] / "docs" / "core.md"
SENT, REFUSED, NOT_SENT = "sent", "refused", "not sent"
OTHER = "other-provider"
TS = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
TOOL = ToolDefinition(
    name="lookup", description="Look something up.", parameters_json_schema={"type": "object"}
)

# Tiny but real payloads: the codecs only look at media types, so these bytes stand for any file.
PNG = b"\x89PNG\r\n\x1a\n" + b"coverage-png"
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt coverage-wav"
MP4 = b"\x00\x00\x00\x18ftypmp42coverage-mp4"
PDF = b"%PDF-1.4 coverage-pdf"


# --- the codecs ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Codec:
    column: str
    """The column of the docs table."""
    provider: str
    model: str
    encode: Callable[[ModelCall], bytes]


_LLAMACPP = local_server_profile("qwen2.5-0.5b-instruct", "llamacpp").dialect


def _emulated(call: ModelCall) -> bytes:
    encoded = _tool_emulation.encode_emulated_tools(call)
    return chat_codec.encode_request(
        encoded, model_name="qwen2.5-0.5b-instruct", dialect=_LLAMACPP, provider_name="llamacpp"
    )


CODECS = (
    Codec(
        "Chat Completions",
        "openai",
        "gpt-4.1",
        lambda c: chat_codec.encode_request(c, model_name="gpt-4.1", provider_name="openai"),
    ),
    Codec(
        "Responses",
        "openai",
        "gpt-5",
        lambda c: responses_codec.encode_request(c, model_name="gpt-5", provider_name="openai"),
    ),
    Codec(
        "Anthropic",
        "anthropic",
        "claude-sonnet-4-5",
        lambda c: anthropic_codec.encode_request(c, model_name="claude-sonnet-4-5").body,
    ),
    Codec(
        "Gemini",
        "google-gla",
        "gemini-2.5-flash",
        lambda c: google_codec.encode_request(c, google_codec.EncodeOptions(model_name="gemini-2.5-flash")),
    ),
    Codec("Chat, tools emulated", "llamacpp", "qwen2.5-0.5b-instruct", _emulated),
)


# --- the samples ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    """One row of a docs table: a kind (or a variant of it) placed in a history for one codec."""

    label: str
    kind: type
    tag: str
    """The JSON tag a refusal must name."""
    build: Callable[[Codec, str], list[Message]]
    """The history holding the part for this codec, marked with a unique string."""
    needles: Callable[[str], list[str]] = lambda mark: [mark]
    """What in the body shows the part was sent."""


def _ask(text: str) -> ModelRequest:
    return ModelRequest(parts=[UserPromptPart(content=text, timestamp=TS)])


def _request(*parts: ModelRequestPart) -> list[Message]:
    return [ModelRequest(parts=[UserPromptPart(content="Please begin.", timestamp=TS), *parts])]


def _after_call(part_for: Callable[[str], ModelRequestPart], mark: str) -> list[Message]:
    """A tool call and then the part that answers it (the call's ID does not contain the mark)."""
    call_id = "call_" + hashlib.sha256(mark.encode()).hexdigest()[:12]
    return [
        _ask("Please begin."),
        ModelResponse(parts=[ToolCallPart(tool_name="lookup", args={}, tool_call_id=call_id)], timestamp=TS),
        ModelRequest(parts=[part_for(call_id)]),
    ]


def _response(codec: Codec, *parts: ModelResponsePart, own: bool) -> list[Message]:
    """A model turn between two user turns, produced by `codec`'s own provider and model or another's."""
    return [
        _ask("Please begin."),
        ModelResponse(
            parts=list(parts),
            provider_name=codec.provider if own else OTHER,
            model_name=codec.model if own else "other-model",
            timestamp=TS,
        ),
        _ask("And then?"),
    ]


def _content(
    item: Callable[[Codec, str], UserContent], *, after_text: bool = False
) -> Callable[[Codec, str], list[Message]]:
    def build(codec: Codec, mark: str) -> list[Message]:
        items: list[UserContent] = ["Look at this."] if after_text else []
        return [ModelRequest(parts=[UserPromptPart(content=[*items, item(codec, mark)], timestamp=TS)])]

    return build


def _b64(data_for: Callable[[str], bytes]) -> Callable[[str], list[str]]:
    return lambda mark: [base64.b64encode(data_for(mark)).decode()]


def _own_native_call(codec: Codec, mark: str) -> NativeToolCallPart:
    """A provider-run tool call as `codec`'s own decoder records it."""
    details: dict[str, Any] = {}
    if codec.provider == "google-gla":
        details = {"google_part": "executableCode"}
        return NativeToolCallPart(
            "code_execution",
            args={"code": f"print({mark!r})", "language": "PYTHON"},
            tool_call_id="srv_1",
            provider_name=codec.provider,
            provider_details=details,
        )
    if codec.column == "Responses":
        details = {
            "item": {
                "type": "web_search_call",
                "id": "ws_1",
                "status": "completed",
                "action": {"query": mark},
            }
        }
    return NativeToolCallPart(
        "web_search",
        args={"query": mark},
        tool_call_id="srv_1",
        provider_name=codec.provider,
        provider_details=details,
    )


def _own_native_return(codec: Codec, mark: str) -> NativeToolReturnPart:
    if codec.provider == "google-gla":
        return NativeToolReturnPart(
            "code_execution",
            {"outcome": "OUTCOME_OK", "output": mark},
            tool_call_id="srv_1",
            provider_name=codec.provider,
            provider_details={"google_part": "codeExecutionResult"},
        )
    return NativeToolReturnPart(
        "web_search",
        [{"type": "web_search_result", "url": f"https://example.com/{mark}", "title": mark}],
        tool_call_id="srv_1",
        provider_name=codec.provider,
    )


def _own_compaction(codec: Codec, mark: str, *, readable: bool) -> CompactionPart:
    return CompactionPart(
        content=f"Summary {mark}" if readable else None,
        id="cmp_1",
        provider_name=codec.provider,
        provider_details=None if readable else {"encrypted_content": f"enc-{mark}"},
    )


def _own_thinking(codec: Codec, mark: str) -> ThinkingPart:
    """Reasoning as `codec`'s own decoder records it (signed where the provider signs it)."""
    if codec.provider == "llamacpp":
        return ThinkingPart(f"Thinking {mark}", id="reasoning_content", provider_name=codec.provider)
    return ThinkingPart(f"Thinking {mark}", id="rs_1", signature=f"sig-{mark}", provider_name=codec.provider)


def _uploaded(codec: Codec, mark: str) -> UploadedFile:
    if codec.provider == "google-gla":
        file_id = f"https://generativelanguage.googleapis.com/v1beta/files/{mark}"
    else:
        file_id = f"file-{mark}"
    return UploadedFile(file_id=file_id, provider_name=codec.provider, media_type="application/pdf")


REQUEST_SAMPLES = (
    Sample(
        "SystemPromptPart",
        SystemPromptPart,
        "system-prompt",
        lambda c, m: _request(SystemPromptPart(f"Be brief {m}.", timestamp=TS)),
    ),
    Sample("UserPromptPart", UserPromptPart, "user-prompt", lambda c, m: [_ask(f"Hello {m}")]),
    Sample(
        "ToolReturnPart",
        ToolReturnPart,
        "tool-return",
        lambda c, m: _after_call(
            lambda i: ToolReturnPart("lookup", {"found": m}, tool_call_id=i, timestamp=TS), m
        ),
    ),
    Sample(
        "RetryPromptPart (tool call)",
        RetryPromptPart,
        "retry-prompt",
        lambda c, m: _after_call(
            lambda i: RetryPromptPart(f"bad {m}", tool_name="lookup", tool_call_id=i, timestamp=TS), m
        ),
    ),
    Sample(
        "RetryPromptPart (output)",
        RetryPromptPart,
        "retry-prompt",
        lambda c, m: _request(RetryPromptPart(f"bad {m}", timestamp=TS)),
    ),
    Sample(
        "RetryFeedbackPart",
        RetryFeedbackPart,
        "retry-feedback",
        lambda c, m: _request(
            RetryFeedbackPart(f"not JSON {m}", retry=RetryInfo("validation_error"), timestamp=TS)
        ),
    ),
    Sample(
        "SpeechPart (user, transcript)",
        SpeechPart,
        "speech",
        lambda c, m: _request(SpeechPart(speaker="user", transcript=f"Spoken {m}")),
    ),
    Sample(
        "SpeechPart (user, audio only)",
        SpeechPart,
        "speech",
        lambda c, m: _request(SpeechPart(speaker="user", audio=BinaryContent(WAV + m.encode(), "audio/wav"))),
        _b64(lambda m: WAV + m.encode()),
    ),
    Sample(
        "CompactionPart (application summary)",
        CompactionPart,
        "compaction",
        lambda c, m: _request(CompactionPart(content=f"Summary {m}")),
    ),
    Sample(
        "ToolAvailabilityDeltaPart",
        ToolAvailabilityDeltaPart,
        "tool-availability-delta",
        lambda c, m: _request(ToolAvailabilityDeltaPart(tools_added=[m], tool_call_id=f"call_{m}")),
    ),
    Sample(
        "CapabilityLoadDeltaPart",
        CapabilityLoadDeltaPart,
        "capability-load-delta",
        lambda c, m: _request(CapabilityLoadDeltaPart(loaded=[m], tool_call_id=f"call_{m}")),
    ),
    Sample(
        "ModelSettingsDeltaPart",
        ModelSettingsDeltaPart,
        "model-settings-delta",
        lambda c, m: _request(ModelSettingsDeltaPart(settings={"note": m}, top_level=True)),
    ),
    Sample(
        "InstructionDeltaPart",
        InstructionDeltaPart,
        "instruction-delta",
        lambda c, m: _request(InstructionDeltaPart(id=f"block:{m}", content=f"New rule {m}", base_hash=m)),
    ),
    Sample(
        "InstructionBaselinePart",
        InstructionBaselinePart,
        "instruction-baseline",
        lambda c, m: _request(InstructionBaselinePart(instructions=[InstructionPart(f"Rule {m}", id=m)])),
    ),
)

CONTENT_SAMPLES = (
    Sample("str", str, "text", _content(lambda c, m: f"Text {m}")),
    Sample(
        "TextContent",
        TextContent,
        "text-content",
        _content(lambda c, m: TextContent(f"Text {m}", metadata="app")),
    ),
    Sample(
        "StructuredContent",
        StructuredContent,
        "structured-content",
        _content(lambda c, m: StructuredContent.from_value({"mark": m}, tag="state")),
    ),
    Sample(
        "CachePoint",
        CachePoint,
        "cache-point",
        _content(lambda c, m: CachePoint(ttl="1h"), after_text=True),
        lambda m: ['"1h"'],
    ),
    Sample(
        "ImageUrl", ImageUrl, "image-url", _content(lambda c, m: ImageUrl(f"https://example.com/{m}.png"))
    ),
    Sample(
        "AudioUrl", AudioUrl, "audio-url", _content(lambda c, m: AudioUrl(f"https://example.com/{m}.mp3"))
    ),
    Sample(
        "VideoUrl", VideoUrl, "video-url", _content(lambda c, m: VideoUrl(f"https://example.com/{m}.mp4"))
    ),
    Sample(
        "VideoUrl (YouTube)",
        VideoUrl,
        "video-url",
        _content(lambda c, m: VideoUrl(f"https://www.youtube.com/watch?v={m}")),
    ),
    Sample(
        "DocumentUrl (PDF)",
        DocumentUrl,
        "document-url",
        _content(lambda c, m: DocumentUrl(f"https://example.com/{m}.pdf")),
    ),
    Sample(
        "BinaryContent (image)",
        BinaryContent,
        "binary",
        _content(lambda c, m: BinaryContent(PNG + m.encode(), "image/png")),
        _b64(lambda m: PNG + m.encode()),
    ),
    Sample(
        "BinaryContent (audio)",
        BinaryContent,
        "binary",
        _content(lambda c, m: BinaryContent(WAV + m.encode(), "audio/wav")),
        _b64(lambda m: WAV + m.encode()),
    ),
    Sample(
        "BinaryContent (video)",
        BinaryContent,
        "binary",
        _content(lambda c, m: BinaryContent(MP4 + m.encode(), "video/mp4")),
        _b64(lambda m: MP4 + m.encode()),
    ),
    Sample(
        "BinaryContent (PDF)",
        BinaryContent,
        "binary",
        _content(lambda c, m: BinaryContent(PDF + m.encode(), "application/pdf")),
        _b64(lambda m: PDF + m.encode()),
    ),
    Sample(
        "BinaryContent (text)",
        BinaryContent,
        "binary",
        _content(lambda c, m: BinaryContent(f"Notes {m}".encode(), "text/plain")),
        # Inlined as text by most APIs; Gemini takes the bytes.
        lambda m: [f"Notes {m}", base64.b64encode(f"Notes {m}".encode()).decode()],
    ),
    Sample("UploadedFile", UploadedFile, "uploaded-file", _content(_uploaded)),
)

RESPONSE_SAMPLES = (
    Sample("TextPart", TextPart, "text", lambda c, m: _response(c, TextPart(f"Answer {m}"), own=False)),
    Sample(
        "ToolCallPart",
        ToolCallPart,
        "tool-call",
        lambda c, m: [
            *_response(c, ToolCallPart("lookup", {"q": m}, tool_call_id="call_1"), own=False),
            ModelRequest(parts=[ToolReturnPart("lookup", "ok", tool_call_id="call_1", timestamp=TS)]),
        ],
    ),
    Sample(
        "ThinkingPart (own)",
        ThinkingPart,
        "thinking",
        lambda c, m: _response(c, _own_thinking(c, m), TextPart("Answer."), own=True),
    ),
    Sample(
        "ThinkingPart (other provider)",
        ThinkingPart,
        "thinking",
        lambda c, m: _response(
            c,
            ThinkingPart(f"Thinking {m}", signature=f"sig-{m}", provider_name=OTHER),
            TextPart("Answer."),
            own=False,
        ),
    ),
    Sample(
        "NativeToolCallPart (own)",
        NativeToolCallPart,
        "builtin-tool-call",
        lambda c, m: _response(c, _own_native_call(c, m), _own_native_return(c, "unrelated"), own=True),
    ),
    Sample(
        "NativeToolReturnPart (own)",
        NativeToolReturnPart,
        "builtin-tool-return",
        lambda c, m: _response(c, _own_native_call(c, "unrelated"), _own_native_return(c, m), own=True),
    ),
    Sample(
        "NativeToolCallPart (other provider)",
        NativeToolCallPart,
        "builtin-tool-call",
        lambda c, m: _response(
            c,
            NativeToolCallPart("web_search", {"query": m}, tool_call_id="srv_1", provider_name=OTHER),
            NativeToolReturnPart("web_search", "results", tool_call_id="srv_1", provider_name=OTHER),
            own=False,
        ),
    ),
    Sample(
        "NativeToolReturnPart (other provider)",
        NativeToolReturnPart,
        "builtin-tool-return",
        lambda c, m: _response(
            c,
            NativeToolCallPart("web_search", {"query": "q"}, tool_call_id="srv_1", provider_name=OTHER),
            NativeToolReturnPart("web_search", {"found": m}, tool_call_id="srv_1", provider_name=OTHER),
            own=False,
        ),
    ),
    Sample(
        "FilePart",
        FilePart,
        "file",
        lambda c, m: _response(
            c, FilePart(BinaryContent(PNG + m.encode(), "image/png"), provider_name=c.provider), own=True
        ),
        _b64(lambda m: PNG + m.encode()),
    ),
    Sample(
        "CompactionPart (readable, own)",
        CompactionPart,
        "compaction",
        lambda c, m: _response(c, _own_compaction(c, m, readable=True), own=True),
    ),
    Sample(
        "CompactionPart (encrypted, own)",
        CompactionPart,
        "compaction",
        lambda c, m: _response(c, _own_compaction(c, m, readable=False), own=True),
    ),
    Sample(
        "CompactionPart (encrypted, other provider)",
        CompactionPart,
        "compaction",
        lambda c, m: _response(
            c,
            CompactionPart(
                id="cmp_1", provider_name=OTHER, provider_details={"encrypted_content": f"enc-{m}"}
            ),
            own=False,
        ),
    ),
    Sample(
        "SpeechPart (model, transcript)",
        SpeechPart,
        "speech",
        lambda c, m: _response(c, SpeechPart(speaker="assistant", transcript=f"Said {m}"), own=False),
    ),
    Sample(
        "SpeechPart (model, audio only)",
        SpeechPart,
        "speech",
        lambda c, m: _response(
            c, SpeechPart(speaker="assistant", audio=BinaryContent(WAV + m.encode(), "audio/wav")), own=False
        ),
        _b64(lambda m: WAV + m.encode()),
    ),
)

TABLES = {
    "Request parts": (REQUEST_SAMPLES, ModelRequestPart),
    "User content": (CONTENT_SAMPLES, UserContent),
    "Response parts": (RESPONSE_SAMPLES, ModelResponsePart),
}
ALL_SAMPLES = (*REQUEST_SAMPLES, *CONTENT_SAMPLES, *RESPONSE_SAMPLES)


def _mark(sample: Sample) -> str:
    """A unique, tokenizer-proof string for one sample (no spaces, no base64-looking runs)."""
    return "MARK_" + re.sub(r"[^A-Za-z0-9]+", "_", sample.label).strip("_").upper() + "_END"


# --- the docs table ------------------------------------------------------------------------------


def _table(section: str, title: str) -> list[list[str]]:
    rows: list[list[str]] = []
    for line in section[section.index(f"### {title}\n") :].splitlines()[1:]:
        if line.startswith("|"):
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            if not all(set(cell) <= set("-: ") for cell in cells):
                rows.append(cells)
        elif rows:
            break
    return rows


@functools.cache
def documented() -> dict[tuple[str, str], str]:
    """(row label, codec column) → outcome, from the tables under "What each provider is sent"."""
    text = DOCS.read_text(encoding="utf-8")
    start = text.index("## What each provider is sent")
    end = text.find("\n## ", start + 1)
    section = text[start : end if end != -1 else len(text)]
    outcomes: dict[tuple[str, str], str] = {}
    for title in TABLES:
        header, *body = _table(section, title)
        columns = [c.column for c in CODECS]
        assert header[1:] == columns, f"{title}: the columns must be {columns}"
        for cells in body:
            label = cells[0].replace("`", "")
            for column, cell in zip(columns, cells[1:], strict=True):
                assert cell in (SENT, REFUSED, NOT_SENT), f"{title} / {label} / {column}: {cell!r}"
                assert (label, column) not in outcomes, f"{label} is documented twice"
                outcomes[label, column] = cell
    return outcomes


# --- the checks ----------------------------------------------------------------------------------


def encode(codec: Codec, messages: Sequence[Message]) -> str:
    call = ModelCall(messages=list(messages), tools=[TOOL])
    return codec.encode(call).decode()


def observe(codec: Codec, sample: Sample) -> str:
    mark = _mark(sample)
    try:
        body = encode(codec, sample.build(codec, mark))
    except UnsupportedContentError as exc:
        refusal = exc
    else:
        return SENT if any(needle in body for needle in sample.needles(mark)) else NOT_SENT
    # A refusal names the kind and the provider, in its fields and in its message.
    assert refusal.kind == sample.tag, f"{sample.label}: the refusal names {refusal.kind!r}"
    assert refusal.provider == codec.provider
    assert repr(sample.tag) in str(refusal)
    assert f"{codec.provider}:{codec.model}" in str(refusal)
    return REFUSED


@pytest.mark.parametrize("title", list(TABLES))
def test_every_kind_of_the_union_has_a_sample_and_a_documented_row(title: str) -> None:
    samples, union = TABLES[title]
    kinds = set(typing.get_args(union))
    assert kinds, union
    covered = {s.kind for s in samples}
    assert covered == kinds, f"{title}: no sample for {kinds - covered}; not in the union: {covered - kinds}"
    labels = {label for label, _ in documented()}
    missing = [s.label for s in samples if s.label not in labels]
    assert not missing, f"docs/core.md does not say what happens to {missing}"


def test_every_documented_row_is_tested() -> None:
    labels = {s.label for s in ALL_SAMPLES}
    assert len(labels) == len(ALL_SAMPLES), "sample labels must be unique"
    assert {label for label, _ in documented()} == labels


@pytest.mark.parametrize("codec", CODECS, ids=[c.column for c in CODECS])
@pytest.mark.parametrize("sample", ALL_SAMPLES, ids=[s.label for s in ALL_SAMPLES])
def test_each_kind_is_sent_refused_or_documented_as_not_sent(sample: Sample, codec: Codec) -> None:
    assert observe(codec, sample) == documented()[sample.label, codec.column]


@pytest.mark.parametrize("codec", CODECS, ids=[c.column for c in CODECS])
def test_one_history_holding_every_kind(codec: Codec) -> None:
    """All the kinds a codec takes, in one conversation: each is sent or absent exactly as documented."""
    kept = [s for s in ALL_SAMPLES if documented()[s.label, codec.column] != REFUSED]
    history: list[Message] = []
    for sample in kept:
        history.extend(sample.build(codec, _mark(sample)))
    body = encode(codec, history)
    for sample in kept:
        found = any(needle in body for needle in sample.needles(_mark(sample)))
        assert found == (documented()[sample.label, codec.column] == SENT), sample.label


# --- refused before any I/O ----------------------------------------------------------------------

KEY = "sk-coverage-SENTINEL-0123456789"


def _models(server: LocalServer) -> list[Model]:
    policy, timeouts = server.policy, Timeouts(connect=2.0, first_byte=2.0, read=2.0, total=10.0)
    openai = OpenAIProvider(api_key=KEY, base_url=server.base_url, url_policy=policy, timeouts=timeouts)
    llamacpp = LlamaCppServerProvider(base_url=server.base_url, url_policy=policy, timeouts=timeouts)
    emulating = msgspec.structs.replace(
        local_server_profile("qwen2.5-0.5b-instruct", "llamacpp").profile, tools_emulated_via_output=True
    )
    return [
        OpenAIChatModel("gpt-4.1", provider=openai),
        OpenAIResponsesModel("gpt-5", provider=openai),
        AnthropicModel(
            "claude-sonnet-4-5",
            provider=AnthropicProvider(
                api_key=KEY, base_url=server.url, url_policy=policy, timeouts=timeouts
            ),
        ),
        GoogleModel(
            "gemini-2.5-flash",
            provider=GoogleProvider(
                api_key=KEY,
                base_url=f"{server.origin}/v1beta",
                upload_url=f"{server.origin}/upload/v1beta",
                url_policy=policy,
                timeouts=timeouts,
            ),
        ),
        OpenAIChatModel("qwen2.5-0.5b-instruct", provider=llamacpp, profile=emulating),
    ]


async def _send(model: Model, call: ModelCall, *, streamed: bool) -> None:
    if streamed:
        async for _ in model.stream(call):
            pass
    else:
        await model.request(call)


@pytest.mark.anyio
@pytest.mark.parametrize("streamed", [False, True], ids=["request", "stream"])
async def test_a_refused_part_sends_nothing(streamed: bool) -> None:
    """Through the real model clients, against a real local server: the refusal comes before any byte."""
    sample = next(s for s in RESPONSE_SAMPLES if s.label == "SpeechPart (model, audio only)")
    with serve_with() as serve:
        server = serve(lambda conn, request: conn.respond(500, b"{}"))
        models = _models(server)
        assert len(models) == len(CODECS)
        for model, codec in zip(models, CODECS, strict=True):
            call = ModelCall(messages=sample.build(codec, _mark(sample)), tools=[TOOL])
            with pytest.raises(UnsupportedContentError) as caught:
                await _send(model, call, streamed=streamed)
            assert caught.value.kind == "speech"
            assert caught.value.provider == codec.provider
        assert server.requests == []
        # The same clients do reach the server with a history they can send (it answers 500).
        for model in models:
            with pytest.raises(ProviderError):
                await _send(model, ModelCall(messages=[_ask("Hello")]), streamed=streamed)
        assert len(server.requests) == len(models)
