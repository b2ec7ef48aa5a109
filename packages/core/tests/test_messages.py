from __future__ import annotations

from datetime import UTC
from datetime import datetime
from typing import get_args

import msgspec
import pytest

from ferrule.core.messages import BinaryContent
from ferrule.core.messages import CachePoint
from ferrule.core.messages import DocumentUrl
from ferrule.core.messages import ImageUrl
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelRequestPart
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import ModelResponsePart
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import SystemPromptPart
from ferrule.core.messages import TextPart
from ferrule.core.messages import ThinkingPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.messages import UploadedFile
from ferrule.core.messages import UserContent
from ferrule.core.messages import UserPromptPart
from ferrule.core.messages import replayable_to
from ferrule.core.usage import RequestUsage

TS = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)


def test_parts_use_pydantic_ai_tags_and_field_names() -> None:
    request = ModelRequest(
        parts=[
            SystemPromptPart("be brief", timestamp=TS),
            UserPromptPart(["look", ImageUrl("https://example.com/a.png"), CachePoint()], timestamp=TS),
        ]
    )
    data = msgspec.to_builtins(request)
    assert data["kind"] == "request"
    assert [p["part_kind"] for p in data["parts"]] == ["system-prompt", "user-prompt"]
    assert data["parts"][1]["content"][1] == {"kind": "image-url", "url": "https://example.com/a.png"}
    assert data["parts"][1]["content"][2] == {"kind": "cache-point"}
    assert SystemPromptPart.part_kind == "system-prompt"


def test_message_union_round_trips_every_part_kind() -> None:
    history: list[Message] = [
        ModelRequest(
            parts=[
                UserPromptPart(
                    [
                        "text",
                        BinaryContent(data=b"\x00\xff", media_type="image/png"),
                        DocumentUrl("https://example.com/x.pdf"),
                        UploadedFile(file_id="file-1", provider_name="openai"),
                    ],
                    timestamp=TS,
                )
            ],
            instructions="be nice",
        ),
        ModelResponse(
            parts=[
                ThinkingPart("hmm", signature="sig", provider_name="anthropic"),
                TextPart("hi", provider_details={"x": [1, 2]}),
                ToolCallPart("get", {"a": 1}, "call-1"),
            ],
            usage=RequestUsage(input_tokens=5, output_tokens=7, details={"reasoning_tokens": 3}),
            model_name="m",
            provider_name="anthropic",
            finish_reason="tool_call",
            timestamp=TS,
        ),
        ModelRequest(
            parts=[
                ToolReturnPart("get", {"ok": True}, "call-1", timestamp=TS),
                RetryPromptPart(
                    [{"loc": ["a"], "msg": "bad"}], tool_name="get", tool_call_id="c2", timestamp=TS
                ),
            ]
        ),
    ]
    encoded = msgspec.json.encode(history)
    decoded = msgspec.json.decode(encoded, type=list[Message])
    assert decoded == history
    part = decoded[0].parts[0]
    assert isinstance(part, UserPromptPart)
    content = part.content
    assert isinstance(content, list)
    assert isinstance(content[1], BinaryContent)
    assert content[1].data == b"\x00\xff"


def test_invalid_role_part_pairs_are_rejected_on_decode() -> None:
    bad = b'[{"kind":"request","parts":[{"part_kind":"text","content":"x"}]}]'
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(bad, type=list[Message])


def test_response_helpers() -> None:
    response = ModelResponse(
        parts=[TextPart("a"), ToolCallPart("t", '{"x": 1}', "c"), TextPart("b"), ThinkingPart("think")],
        provider_details={"finish_reason": "tool_calls"},
    )
    assert response.text == "ab"
    assert [c.tool_call_id for c in response.tool_calls] == ["c"]
    assert response.tool_calls[0].args_as_dict() == {"x": 1}
    assert response.thinking == "think"
    assert response.raw_finish_reason == "tool_calls"
    assert ModelResponse(parts=[]).text is None


def test_tool_call_args_helpers() -> None:
    assert ToolCallPart("t", None).args_as_dict() == {}
    assert ToolCallPart("t", "").args_as_json_str() == "{}"
    assert ToolCallPart("t", {"a": [1]}).args_as_json_str() == '{"a":[1]}'
    with pytest.raises(ValueError, match="not a JSON object"):
        ToolCallPart("t", "[1]").args_as_dict()


def test_retry_prompt_renders_validation_details() -> None:
    part = RetryPromptPart([{"loc": ["city"], "msg": "field required"}], tool_name="weather")
    text = part.model_response()
    assert "city: field required" in text
    assert text.endswith("Fix the errors and try again.")


def test_binary_content_helpers() -> None:
    content = BinaryContent(data=b"abc", media_type="image/jpeg")
    assert content.is_image
    assert not content.is_audio
    assert content.data_uri == "data:image/jpeg;base64,YWJj"


def test_url_media_type_inference() -> None:
    assert ImageUrl("https://x/y.jpg?sig=1").resolved_media_type == "image/jpeg"
    assert DocumentUrl("https://x/doc").resolved_media_type == "application/pdf"
    assert ImageUrl("https://x/y", media_type="image/webp").resolved_media_type == "image/webp"


def test_provider_details_are_replayable_only_to_their_origin() -> None:
    response = ModelResponse(parts=[], provider_name="anthropic", model_name="claude-x")
    assert replayable_to(response, "anthropic", "claude-x")
    assert replayable_to(response, "anthropic")
    assert not replayable_to(response, "anthropic", "claude-y")
    assert not replayable_to(response, "openai", "claude-x")


def test_tool_call_ids_are_unique_when_generated() -> None:
    ids = {ToolCallPart("t").tool_call_id for _ in range(100)}
    assert len(ids) == 100


def test_every_stored_message_type_omits_defaults_and_is_tagged_by_its_family() -> None:
    # The families' shared options live in one base each; a class that left its base would change
    # the JSON (defaults written, a different tag field) and break PydanticAI compatibility.
    families: dict[str, tuple[object, ...]] = {
        "part_kind": (*get_args(ModelRequestPart), *get_args(ModelResponsePart)),
        "kind": (*get_args(Message), *(c for c in get_args(UserContent) if c is not str)),
    }
    assert len(families["part_kind"]) == 20
    assert len(families["kind"]) == 11
    for tag_field, classes in families.items():
        for cls in classes:
            assert isinstance(cls, type)
            assert issubclass(cls, msgspec.Struct)
            config = cls.__struct_config__
            assert (config.tag_field, config.omit_defaults, config.repr_omit_defaults) == (
                tag_field,
                True,
                True,
            ), cls
            assert config.tag != cls.__name__, f"{cls.__name__} has no explicit wire tag"
