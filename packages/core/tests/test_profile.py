from __future__ import annotations

import pytest

from ferrule.core.errors import UnsupportedFeatureError
from ferrule.core.messages import BinaryContent
from ferrule.core.messages import ImageUrl
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import UserPromptPart
from ferrule.core.model import JsonObjectFormat
from ferrule.core.model import JsonSchemaFormat
from ferrule.core.model import ModelCall
from ferrule.core.model import NativeTool
from ferrule.core.model import ToolDefinition
from ferrule.core.profile import ModelProfile
from ferrule.core.settings import ModelSettings

PROMPT = [ModelRequest.user_text_prompt("hi")]


def call(**kwargs: object) -> ModelCall:
    return ModelCall(messages=kwargs.pop("messages", PROMPT), **kwargs)  # type: ignore[arg-type]


def test_default_profile_is_fail_closed() -> None:
    profile = ModelProfile()
    profile.check(call(), model="p:m")  # plain text is fine
    cases = [
        call(tools=[ToolDefinition(name="t")]),
        call(output=JsonSchemaFormat(name="o", schema={"type": "object"})),
        call(output=JsonObjectFormat()),
        call(native_tools=[NativeTool(kind="web_search")]),
        call(settings=ModelSettings(top_k=3)),
        call(settings=ModelSettings(parallel_tool_calls=True)),
        call(settings=ModelSettings(tool_choice="required")),
        call(settings=ModelSettings(reasoning_effort="high")),
        call(settings=ModelSettings(thinking=True)),
        call(settings=ModelSettings(service_tier="flex")),
        call(messages=[ModelRequest(parts=[UserPromptPart(["x", ImageUrl("https://e.com/a.png")])])]),
        call(
            messages=[ModelRequest(parts=[UserPromptPart([BinaryContent(data=b"", media_type="audio/wav")])])]
        ),
    ]
    for c in cases:
        with pytest.raises(UnsupportedFeatureError) as info:
            profile.check(c, model="p:m")
        assert "p:m does not support" in str(info.value)


def test_declared_features_pass() -> None:
    profile = ModelProfile(
        supports_tools=True,
        supports_parallel_tool_calls=True,
        supports_tool_choice=True,
        supports_json_schema_output=True,
        reasoning_efforts=frozenset({"low", "high"}),
        service_tiers=frozenset({"flex"}),
        supports_thinking=True,
        content_kinds=frozenset({"text", "image"}),
        native_tools=frozenset({"web_search"}),
    )
    profile.check(
        call(
            tools=[ToolDefinition(name="t")],
            output=JsonSchemaFormat(name="o", schema={"type": "object"}),
            native_tools=[NativeTool(kind="web_search")],
            settings=ModelSettings(
                parallel_tool_calls=True, tool_choice="required", reasoning_effort="high", service_tier="flex"
            ),
            messages=[ModelRequest(parts=[UserPromptPart([ImageUrl("https://e.com/a.png")])])],
        ),
        model="p:m",
    )
    with pytest.raises(UnsupportedFeatureError, match="supported efforts: high, low"):
        profile.check(call(settings=ModelSettings(reasoning_effort="max")), model="p:m")
    with pytest.raises(UnsupportedFeatureError, match="same native tool twice"):
        profile.check(call(native_tools=[NativeTool(kind="web_search")] * 2), model="p:m")


def test_always_on_thinking_cannot_be_disabled() -> None:
    profile = ModelProfile(supports_thinking=True, thinking_always_on=True)
    with pytest.raises(UnsupportedFeatureError, match="turning thinking off"):
        profile.check(call(settings=ModelSettings(thinking=False)), model="p:m")


def test_intersection_keeps_only_common_support() -> None:
    a = ModelProfile(
        supports_tools=True,
        reasoning_efforts=frozenset({"low", "high"}),
        content_kinds=frozenset({"text", "image"}),
        context_window=100,
    )
    b = ModelProfile(
        supports_tools=True,
        supports_json_schema_output=True,
        reasoning_efforts=frozenset({"high"}),
        content_kinds=frozenset({"text"}),
        context_window=50,
    )
    both = a.intersect(b)
    assert both.supports_tools
    assert not both.supports_json_schema_output
    assert both.reasoning_efforts == {"high"}
    assert both.content_kinds == {"text"}
    assert both.context_window == 50
