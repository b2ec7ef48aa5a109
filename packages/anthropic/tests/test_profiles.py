"""Model family profiles, the entry point and import cost."""

from __future__ import annotations

import importlib.metadata

import pytest

from ferrule.core.errors import UnsupportedFeatureError
from ferrule.core.errors import UserError
from ferrule.core.messages import DocumentUrl
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import UserPromptPart
from ferrule.core.model import JsonSchemaFormat
from ferrule.core.model import ModelCall
from ferrule.core.model import NativeTool
from ferrule.core.model import ToolDefinition
from ferrule.core.profile import ModelProfile
from ferrule.core.settings import ModelSettings
from ferrule.providers.anthropic import AnthropicModel
from ferrule.providers.anthropic import AnthropicProvider
from ferrule.providers.anthropic import infer_model
from ferrule.providers.anthropic.profiles import UNKNOWN
from ferrule.providers.anthropic.profiles import anthropic_profile
from ferrule.providers.anthropic.profiles import model_profile
from ferrule.providers.anthropic.profiles import normalize_model_name
from tests.support.imports import loaded_by


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("claude-3-haiku-20240307", "claude-3-haiku"),
        ("claude-3-5-haiku-latest", "claude-3-5-haiku"),
        ("claude-3-5-sonnet-20241022", "claude-3-5-sonnet"),
        ("claude-3-opus-latest", "claude-3"),
        ("claude-3-7-sonnet-20250219", "claude-3-7-sonnet"),
        ("claude-sonnet-4-0", "claude-sonnet-4"),
        ("claude-sonnet-4-20250514", "claude-sonnet-4"),
        ("claude-sonnet-4@20250514", "claude-sonnet-4"),
        ("claude-opus-4-0", "claude-opus-4"),
        ("claude-opus-4-1-20250805", "claude-opus-4-1"),
        ("claude-sonnet-4-5", "claude-sonnet-4-5"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("us.anthropic.claude-haiku-4-5-20251001-v1:0", "claude-haiku-4-5"),
        ("claude-opus-4-5", "claude-opus-4-5"),
        ("claude-opus-4-6", "claude-opus-4-6"),
        ("claude-sonnet-4-6", "claude-sonnet-4-6"),
        ("claude-opus-4-7", "claude-opus-4-7"),
        ("claude-opus-4-8", "claude-opus-4-8"),
        ("claude-opus-5", "claude-opus-5"),
        ("claude-sonnet-5", "claude-sonnet-5"),
        ("claude-fable-5", "claude-fable-5"),
        ("claude-sonnet-40", "unknown"),
        ("claude-next-gen", "unknown"),
        ("gpt-5", "unknown"),
    ],
)
def test_names_resolve_to_families(name: str, family: str) -> None:
    assert anthropic_profile(name).family == family


def test_normalize_strips_cloud_spellings() -> None:
    assert normalize_model_name("eu.anthropic.claude-haiku-4-5-20251001-v1:0") == "claude-haiku-4-5-20251001"
    assert normalize_model_name("anthropic.claude-3-haiku-20240307-v1") == "claude-3-haiku-20240307"
    assert normalize_model_name(" Claude-Sonnet-4-5 ") == "claude-sonnet-4-5"


def test_unknown_models_are_fail_closed() -> None:
    profile = UNKNOWN.model
    assert profile.supports_tools
    assert not profile.supports_thinking
    assert not profile.supports_json_schema_output
    assert profile.native_tools == frozenset()
    assert profile.content_kinds == frozenset({"text", "image", "uploaded-file"})
    assert profile.default_max_tokens == 4096
    assert model_profile("claude-future-9") is profile


@pytest.mark.parametrize(
    ("name", "thinking", "structured", "efforts", "deferred"),
    [
        ("claude-3-5-haiku-latest", False, False, set[str](), False),
        ("claude-3-7-sonnet-latest", True, False, {"minimal", "low", "medium", "high"}, False),
        ("claude-sonnet-4-0", True, False, {"minimal", "low", "medium", "high"}, False),
        ("claude-opus-4-1", True, True, {"minimal", "low", "medium", "high"}, False),
        ("claude-haiku-4-5", True, True, {"minimal", "low", "medium", "high"}, True),
        ("claude-opus-4-5", True, True, {"low", "medium", "high"}, True),
        ("claude-opus-4-6", True, True, {"low", "medium", "high", "max"}, True),
        ("claude-opus-4-8", True, True, {"low", "medium", "high", "xhigh", "max"}, True),
    ],
)
def test_family_capabilities(
    name: str, thinking: bool, structured: bool, efforts: set[str], deferred: bool
) -> None:
    profile = model_profile(name)
    assert profile.supports_thinking is thinking
    assert profile.supports_json_schema_output is structured
    assert profile.reasoning_efforts == efforts
    assert profile.native_deferred_tools is deferred
    assert not profile.supports_json_object_output
    assert profile.default_max_tokens is not None


def test_profile_check_refuses_what_a_family_lacks() -> None:
    model = AnthropicModel("claude-3-haiku-20240307", provider=AnthropicProvider(api_key="sk-test-key-0000"))
    base = [ModelRequest.user_text_prompt("hi")]
    refused = [
        ModelCall(messages=base, settings=ModelSettings(thinking=True)),
        ModelCall(messages=base, settings=ModelSettings(reasoning_effort="high")),
        ModelCall(messages=base, settings=ModelSettings(seed=3)),
        ModelCall(messages=base, settings=ModelSettings(presence_penalty=0.1)),
        ModelCall(messages=base, native_tools=[NativeTool(kind="web_search")]),
        ModelCall(messages=base, output=JsonSchemaFormat(name="x", schema={"type": "object"})),
        ModelCall(messages=base, settings=ModelSettings(service_tier="priority")),
        ModelCall(
            messages=[
                ModelRequest(parts=[UserPromptPart(content=["x", DocumentUrl(url="https://e.com/a.pdf")])])
            ]
        ),
    ]
    for call in refused:
        with pytest.raises(UnsupportedFeatureError):
            model.encode(call, stream=False)
    allowed = ModelCall(
        messages=base,
        tools=[ToolDefinition(name="f")],
        settings=ModelSettings(
            temperature=0.1, top_k=3, tool_choice="required", parallel_tool_calls=False, service_tier="auto"
        ),
    )
    model.encode(allowed, stream=False)


def test_xhigh_effort_is_refused_where_the_api_refuses_it() -> None:
    # The recorded API answer for claude-opus-4-6 + xhigh is a 400; the profile refuses it first.
    model = AnthropicModel("claude-opus-4-6", provider=AnthropicProvider(api_key="sk-test-key-0000"))
    with pytest.raises(UnsupportedFeatureError, match="xhigh"):
        model.encode(
            ModelCall(
                messages=[ModelRequest.user_text_prompt("hi")],
                settings=ModelSettings(reasoning_effort="xhigh"),
            ),
            stream=False,
        )


def test_profile_override() -> None:
    provider = AnthropicProvider(api_key="sk-test-key-0000")
    custom = ModelProfile(supports_tools=False)
    model = AnthropicModel("claude-sonnet-4-5", provider=provider, profile=custom)
    assert model.profile is custom
    assert model.anthropic_profile.family == "claude-sonnet-4-5"
    with pytest.raises(UserError, match="model name"):
        AnthropicModel("", provider=provider)


def test_entry_point_builds_a_model_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    (entry,) = importlib.metadata.entry_points(group="ferrule.providers", name="anthropic")
    assert entry.value == "ferrule.providers.anthropic._entry:anthropic"
    assert entry.load() is infer_model
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0000000000")
    model = infer_model("claude-haiku-4-5")
    assert model.system == "anthropic:claude-haiku-4-5"
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(UserError, match="ANTHROPIC_API_KEY"):
        infer_model("claude-haiku-4-5")


def test_importing_the_package_is_cheap() -> None:
    heavy = ("httpx2", "anyio", "msgspec", "ferrule.core.provider", "ferrule.providers.anthropic._model")
    assert loaded_by("import ferrule.providers.anthropic", heavy) == []
