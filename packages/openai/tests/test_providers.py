"""Providers, fail-closed profiles and model-string entry points (no network)."""

from __future__ import annotations

import importlib.metadata
from typing import Any

import msgspec
import pytest

from ferrule.core.errors import UnsupportedFeatureError
from ferrule.core.errors import UserError
from ferrule.core.messages import BinaryContent
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import UserPromptPart
from ferrule.core.model import JsonSchemaFormat
from ferrule.core.model import ModelCall
from ferrule.core.model import NativeTool
from ferrule.core.model import ToolDefinition
from ferrule.core.profile import ModelProfile
from ferrule.core.settings import ModelSettings
from ferrule.providers.openai import AzureOpenAIProvider
from ferrule.providers.openai import CerebrasProvider
from ferrule.providers.openai import DeepSeekProvider
from ferrule.providers.openai import FireworksProvider
from ferrule.providers.openai import GroqProvider
from ferrule.providers.openai import HuggingFaceProvider
from ferrule.providers.openai import LlamaCppServerProvider
from ferrule.providers.openai import LMStudioProvider
from ferrule.providers.openai import MaxPrice
from ferrule.providers.openai import MistralOpenAIProvider
from ferrule.providers.openai import OllamaProvider
from ferrule.providers.openai import OpenAIChatModel
from ferrule.providers.openai import OpenAICompatibleProvider
from ferrule.providers.openai import OpenAIProvider
from ferrule.providers.openai import OpenAIResponsesModel
from ferrule.providers.openai import OpenRouterProvider
from ferrule.providers.openai import OpenRouterRouting
from ferrule.providers.openai import TogetherProvider
from ferrule.providers.openai import VLLMProvider
from ferrule.providers.openai._entry import PREFIXES
from ferrule.providers.openai.profiles import UNKNOWN
from ferrule.providers.openai.profiles import openai_chat_profile
from ferrule.providers.openai.profiles import openai_responses_profile
from ferrule.providers.openai.strict_schema import StrictSchemaError
from tests.support.imports import loaded_by

KEY = "sk-test-0123456789abcdef"


def call(**kwargs: object) -> ModelCall:
    return ModelCall(messages=[ModelRequest(parts=[UserPromptPart(content="hi")])], **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("model", "tools", "thinking", "always", "json_schema"),
    [
        ("gpt-5-mini", True, True, True, True),
        ("gpt-5.1", True, True, False, True),
        ("gpt-5-chat-latest", True, False, False, True),
        ("gpt-4.1-nano", True, False, False, True),
        ("gpt-4o-2024-08-06", True, False, False, True),
        ("o3", True, True, True, True),
        ("o4-mini", True, True, True, True),
        ("o1-mini", False, True, True, False),
        ("ft:gpt-4o-mini:acme::abc", True, False, False, True),
    ],
)
def test_openai_families(model: str, tools: bool, thinking: bool, always: bool, json_schema: bool) -> None:
    profile = openai_chat_profile(model).profile
    assert (
        profile.supports_tools,
        profile.supports_thinking,
        profile.thinking_always_on,
        profile.supports_json_schema_output,
    ) == (
        tools,
        thinking,
        always,
        json_schema,
    )
    if thinking:
        assert "temperature" not in profile.supported_settings  # reasoning models reject sampling controls
    else:
        assert "temperature" in profile.supported_settings


@pytest.mark.parametrize("model", ["gpt-6-preview", "text-davinci-003", "llama3", "", "o"])
def test_unknown_openai_models_fail_closed(model: str) -> None:
    assert openai_chat_profile(model).profile == UNKNOWN
    assert openai_responses_profile(model).profile == UNKNOWN
    assert not UNKNOWN.supports_tools
    assert not UNKNOWN.supports_json_schema_output
    assert UNKNOWN.content_kinds == frozenset({"text"})


def test_reasoning_efforts_and_tiers_are_checked_before_io() -> None:
    model = OpenAIResponsesModel("gpt-5-mini", provider=OpenAIProvider(api_key=KEY))
    model.check(call(settings=ModelSettings(reasoning_effort="minimal", service_tier="flex")))
    with pytest.raises(UnsupportedFeatureError, match="reasoning_effort='xhigh'"):
        model.check(call(settings=ModelSettings(reasoning_effort="xhigh")))
    with pytest.raises(UnsupportedFeatureError, match="turning thinking off"):
        model.check(call(settings=ModelSettings(thinking=False)))
    with pytest.raises(UnsupportedFeatureError, match="native tool"):
        model.check(call(native_tools=[NativeTool(kind="url_context")]))
    chat = OpenAIChatModel("gpt-4o", provider=OpenAIProvider(api_key=KEY))
    with pytest.raises(UnsupportedFeatureError, match="audio"):
        chat.check(
            ModelCall(
                messages=[
                    ModelRequest(
                        parts=[UserPromptPart(content=[BinaryContent(data=b"x", media_type="audio/wav")])]
                    )
                ]
            )
        )
    with pytest.raises(UnsupportedFeatureError, match="web_search"):
        chat.check(call(native_tools=[NativeTool(kind="web_search")]))


def test_named_providers_roots_and_env(monkeypatch: pytest.MonkeyPatch) -> None:
    expected = {
        OpenRouterProvider: ("openrouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
        GroqProvider: ("groq", "https://api.groq.com/openai/v1", "GROQ_API_KEY"),
        DeepSeekProvider: ("deepseek", "https://api.deepseek.com", "DEEPSEEK_API_KEY"),
        TogetherProvider: ("together", "https://api.together.xyz/v1", "TOGETHER_API_KEY"),
        FireworksProvider: ("fireworks", "https://api.fireworks.ai/inference/v1", "FIREWORKS_API_KEY"),
        CerebrasProvider: ("cerebras", "https://api.cerebras.ai/v1", "CEREBRAS_API_KEY"),
        MistralOpenAIProvider: ("mistral", "https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
        HuggingFaceProvider: ("huggingface", "https://router.huggingface.co/v1", "HF_TOKEN"),
        OpenAIProvider: ("openai", "https://api.openai.com/v1", "OPENAI_API_KEY"),
    }
    for cls, (name, root, env) in expected.items():
        monkeypatch.delenv(env, raising=False)
        monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
        with pytest.raises(UserError, match=env):
            cls()
        monkeypatch.setenv(env, KEY)
        provider = cls()
        assert (provider.name, provider.base_url) == (name, root)
        assert provider._auth_headers() == {"authorization": f"Bearer {KEY}"}
        assert KEY not in repr(provider)


def test_local_providers_need_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for env in (
        "OLLAMA_API_KEY",
        "VLLM_API_KEY",
        "LLAMACPP_API_KEY",
        "OLLAMA_BASE_URL",
        "VLLM_BASE_URL",
        "LLAMACPP_BASE_URL",
        "LMSTUDIO_BASE_URL",
    ):
        monkeypatch.delenv(env, raising=False)
    roots = {
        OllamaProvider: "http://localhost:11434/v1",
        VLLMProvider: "http://127.0.0.1:8000/v1",
        LlamaCppServerProvider: "http://127.0.0.1:8080/v1",
        LMStudioProvider: "http://localhost:1234/v1",
    }
    for cls, root in roots.items():
        provider = cls()
        assert provider.base_url == root
        assert provider._auth_headers() == {}
        profile = provider.chat_profile("any-model").profile
        assert profile.supports_tools
        assert profile.supports_json_schema_output


def test_huggingface_provider_routing() -> None:
    assert (
        HuggingFaceProvider(api_key=KEY, provider="together").base_url
        == "https://router.huggingface.co/together/v1"
    )
    with pytest.raises(UserError):
        HuggingFaceProvider(api_key=KEY, provider="../evil")
    assert (
        HuggingFaceProvider(api_key=KEY)
        .chat_profile("Qwen/Qwen2.5-VL-72B-Instruct:nebius")
        .profile.supports_tools
    )


def test_azure_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AZURE_OPENAI_ENDPOINT", raising=False)
    monkeypatch.delenv("OPENAI_API_VERSION", raising=False)
    with pytest.raises(UserError, match="AZURE_OPENAI_ENDPOINT"):
        AzureOpenAIProvider(api_key=KEY)
    provider = AzureOpenAIProvider(endpoint="https://res.openai.azure.com/", api_key=KEY)
    assert provider.base_url == "https://res.openai.azure.com/openai/v1"
    assert provider._auth_headers() == {"api-key": KEY}
    assert provider.endpoint("responses", "dep") == ("/responses", None)
    legacy = AzureOpenAIProvider(
        endpoint="https://res.openai.azure.com/openai", api_key=KEY, api_version="2024-10-21"
    )
    assert legacy.endpoint("chat", "my-dep") == (
        "/deployments/my-dep/chat/completions",
        {"api-version": "2024-10-21"},
    )
    assert legacy.chat_profile("gpt-4o").profile.supports_tools
    assert legacy.chat_profile("my-custom-deployment").profile == UNKNOWN
    mapped = AzureOpenAIProvider(
        endpoint="https://res.openai.azure.com",
        api_key=KEY,
        profile_lookup=lambda name: openai_chat_profile("gpt-4o").profile if name == "prod-chat" else None,
    )
    assert mapped.chat_profile("prod-chat").profile.supports_tools


def test_profile_lookup_and_override_layers() -> None:
    provider = GroqProvider(
        api_key=KEY,
        profile_lookup=lambda name: ModelProfile(supports_tools=True) if name == "my-finetune" else None,
        profile_override=lambda name, profile: msgspec.structs.replace(
            profile, supports_parallel_tool_calls=False
        ),
    )
    assert provider.chat_profile("my-finetune").profile.supports_tools
    assert provider.chat_profile("llama-3.3-70b-versatile").profile.supports_tools
    assert not provider.chat_profile("llama-3.3-70b-versatile").profile.supports_parallel_tool_calls
    assert provider.chat_profile("unknown-model").profile.supports_tools is False
    with pytest.raises(UserError, match="no Responses API"):
        provider.responses_profile("llama-3.3-70b-versatile")
    generic = OpenAICompatibleProvider(base_url="https://llm.example.com/v1")
    assert generic.chat_profile("anything").profile == UNKNOWN


def test_openrouter_routing_validation() -> None:
    routing = OpenRouterRouting(
        order=["anthropic"],
        only=["anthropic", "openai"],
        max_price=MaxPrice(prompt=1.0),
        quantizations=["fp8"],
        sort="price",
    )
    assert routing.to_json() == {
        "order": ["anthropic"],
        "only": ["anthropic", "openai"],
        "quantizations": ["fp8"],
        "sort": "price",
        "max_price": {"prompt": 1.0},
    }
    refused: list[dict[str, Any]] = [
        {"only": ["a"], "ignore": ["a"]},
        {"order": []},
        {"order": ["bad name"]},
        {"preferred_max_latency": -1.0},
        {"preferred_min_throughput": float("inf")},
        {"quantizations": []},
    ]
    for bad in refused:
        with pytest.raises(UserError):
            OpenRouterRouting(**bad)
    with pytest.raises(UserError):
        MaxPrice()
    with pytest.raises(UserError):
        MaxPrice(prompt=float("nan"))
    with pytest.raises(UserError, match="OpenRouter"):
        OpenAIChatModel("gpt-4o", provider=OpenAIProvider(api_key=KEY), routing=routing)


def test_strict_schema_error_is_a_user_error() -> None:
    model = OpenAIChatModel("gpt-4o", provider=OpenAIProvider(api_key=KEY))
    bad = ToolDefinition(
        name="t",
        parameters_json_schema={"type": "object", "properties": {"xs": {"type": "array"}}},
        strict=True,
    )
    with pytest.raises(StrictSchemaError):
        model.encode(call(tools=[bad]))
    output = JsonSchemaFormat(
        name="o", schema={"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    )
    assert b'"strict":true' in model.encode(call(output=output))


def test_entry_points_are_registered() -> None:
    names = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="ferrule.providers")}
    for prefix in PREFIXES:
        assert names[prefix] == f"ferrule.providers.openai._entry:{prefix.replace('-', '_')}"
    loaded = importlib.metadata.entry_points(group="ferrule.providers", name="openai-chat")
    assert [ep.load().__name__ for ep in loaded] == ["openai_chat"]


def test_infer_model(monkeypatch: pytest.MonkeyPatch) -> None:
    eps = {ep.name: ep for ep in importlib.metadata.entry_points(group="ferrule.providers")}
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    model = eps["openai"].load()("gpt-5-mini")
    assert isinstance(model, OpenAIResponsesModel)
    assert model.system == "openai:gpt-5-mini"
    assert isinstance(eps["openai-chat"].load()("gpt-4o"), OpenAIChatModel)
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    with pytest.raises(UserError, match="OPENROUTER_API_KEY"):
        eps["openrouter"].load()("anthropic/claude-sonnet-4.5")
    monkeypatch.setenv("OLLAMA_BASE_URL", "http://192.168.1.20:11434/v1")
    ollama = eps["ollama"].load()("llama3.2")
    assert ollama.provider.base_url == "http://192.168.1.20:11434/v1"  # allowed for exactly that origin
    monkeypatch.setenv("GROQ_API_KEY", KEY)
    assert eps["groq"].load()("llama-3.3-70b-versatile").system == "groq:llama-3.3-70b-versatile"
    with pytest.raises(UserError, match="names no model"):
        eps["groq"].load()("")
    monkeypatch.delenv("OPENAI_COMPATIBLE_BASE_URL", raising=False)
    with pytest.raises(UserError, match="OPENAI_COMPATIBLE_BASE_URL"):
        eps["openai-compatible"].load()("m")


def test_import_is_cheap() -> None:
    heavy = ("httpx2", "anyio", "ferrule.core.provider", "ferrule.providers.openai.chat_codec")
    assert loaded_by("import ferrule.providers.openai", heavy) == []
