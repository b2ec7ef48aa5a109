"""Families, fail-closed profiles, provider configuration, entry points and import cost."""

from __future__ import annotations

from importlib.metadata import entry_points

import pytest

from ferrule.core.errors import UnsupportedFeatureError
from ferrule.core.errors import UserError
from ferrule.core.messages import BinaryContent
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import UploadedFile
from ferrule.core.messages import UserPromptPart
from ferrule.core.model import JsonSchemaFormat
from ferrule.core.model import ModelCall
from ferrule.core.model import NativeTool
from ferrule.core.model import ToolDefinition
from ferrule.core.settings import ModelSettings
from ferrule.providers.google import GoogleModel
from ferrule.providers.google import GoogleProvider
from ferrule.providers.google import VertexAIProvider
from ferrule.providers.google import family_of
from ferrule.providers.google import infer_model
from ferrule.providers.google import profile_for
from ferrule.providers.google import regional_api_base
from ferrule.providers.google import vertex as vertex_module
from tests.support.imports import loaded_by

KEY = "AIzaSy-SENTINEL-test-key-0123456789abcdefghij"


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("gemini-1.5-flash", "gemini-1.5"),
        ("gemini-1.5-flash-8b", "gemini-1.5"),
        ("models/gemini-1.5-pro-002", "gemini-1.5"),
        ("gemini-2.0-flash", "gemini-2.0-flash"),
        ("gemini-2.0-flash-exp", "gemini-2.0-flash"),
        ("gemini-2.0-flash-lite-001", "gemini-2.0-flash-lite"),
        ("gemini-2.5-pro", "gemini-2.5-pro"),
        ("gemini-2.5-pro-preview-03-25", "gemini-2.5-pro"),
        ("gemini-2.5-flash", "gemini-2.5-flash"),
        ("gemini-2.5-flash-preview-09-2025", "gemini-2.5-flash"),
        ("gemini-2.5-flash-lite", "gemini-2.5-flash-lite"),
        ("gemini-3-pro-preview", "gemini-3-pro"),
        ("gemini-3-flash-preview", "gemini-3-flash"),
        ("gemini-3.1-pro-preview", "gemini-3-pro"),
        ("gemini-3.5-flash", "gemini-3-flash"),
        ("gemini-3-flash-lite-preview", "unknown"),
        ("gemini-2.5-flash-image", "unknown"),
        ("gemini-3-pro-image-preview", "unknown"),
        ("gemini-2.5-flash-preview-tts", "unknown"),
        ("gemini-2.0-flash-live-001", "unknown"),
        ("gemini-embedding-001", "unknown"),
        ("gemini-2.0-pro-exp", "unknown"),
        ("gemini-flash-latest", "unknown"),
        ("gemma-3-27b-it", "unknown"),
        ("gemini-4-ultra", "unknown"),
    ],
)
def test_families(name: str, family: str) -> None:
    assert family_of(name) == family


def test_unknown_models_are_fail_closed() -> None:
    profile = profile_for("gemini-99-turbo")
    assert not profile.supports_tools
    assert not profile.supports_json_schema_output
    assert not profile.supports_thinking
    assert profile.content_kinds == frozenset({"text"})
    model = GoogleModel("gemini-99-turbo", provider=GoogleProvider(api_key=KEY))
    with pytest.raises(UnsupportedFeatureError, match="tools"):
        model.check(
            ModelCall(messages=[ModelRequest.user_text_prompt("x")], tools=[ToolDefinition(name="t")])
        )
    with pytest.raises(UnsupportedFeatureError, match="image input"):
        model.check(
            ModelCall(
                messages=[
                    ModelRequest(
                        parts=[UserPromptPart(content=[BinaryContent(data=b"x", media_type="image/png")])]
                    )
                ]
            )
        )


@pytest.mark.parametrize(
    ("name", "call", "feature"),
    [
        ("gemini-2.0-flash", ModelCall(messages=[], settings=ModelSettings(thinking=True)), "thinking"),
        (
            "gemini-2.5-pro",
            ModelCall(messages=[], settings=ModelSettings(thinking=False)),
            "turning thinking off",
        ),
        (
            "gemini-3-pro-preview",
            ModelCall(messages=[], settings=ModelSettings(reasoning_effort="medium")),
            "reasoning_effort='medium'",
        ),
        (
            "gemini-2.0-flash-lite",
            ModelCall(messages=[], native_tools=[NativeTool(kind="web_search")]),
            "native tool",
        ),
        (
            "gemini-1.5-flash",
            ModelCall(messages=[], native_tools=[NativeTool(kind="url_context")]),
            "native tool",
        ),
        ("gemini-2.5-flash", ModelCall(messages=[], settings=ModelSettings(logprobs=True)), "logprobs"),
        (
            "gemini-2.5-flash",
            ModelCall(messages=[], settings=ModelSettings(service_tier="flex")),
            "service_tier",
        ),
        (
            "gemini-2.0-flash",
            ModelCall(messages=[], settings=ModelSettings(thinking_budget_tokens=5)),
            "thinking_budget_tokens",
        ),
    ],
)
def test_profiles_refuse_before_io(name: str, call: ModelCall, feature: str) -> None:
    model = GoogleModel(name, provider=GoogleProvider(api_key=KEY))
    with pytest.raises(UnsupportedFeatureError, match=feature.replace("(", r"\(").replace(")", r"\)")):
        model.check(call)


def test_profiles_accept_what_the_family_supports() -> None:
    model = GoogleModel("gemini-2.5-flash", provider=GoogleProvider(api_key=KEY))
    model.check(
        ModelCall(
            messages=[],
            tools=[ToolDefinition(name="t")],
            output=JsonSchemaFormat(name="o", schema={"type": "object"}),
            native_tools=[NativeTool(kind="web_search"), NativeTool(kind="code_execution")],
            settings=ModelSettings(thinking=True, reasoning_effort="high", top_k=3, tool_choice="required"),
        )
    )
    assert model.profile.max_output_tokens == 65_536


def test_vertex_profile_adjustments() -> None:
    provider = VertexAIProvider(
        access_token="ya29.test-token", project="my-project-1", location="us-central1"
    )
    model = GoogleModel("gemini-2.5-flash", provider=provider)
    assert "uploaded-file" not in model.profile.content_kinds
    model.check(ModelCall(messages=[], settings=ModelSettings(logprobs=True, top_logprobs=3)))
    with pytest.raises(UnsupportedFeatureError, match="uploaded-file"):
        model.check(
            ModelCall(
                messages=[
                    ModelRequest(
                        parts=[
                            UserPromptPart(content=[UploadedFile(file_id="f", provider_name="google-gla")])
                        ]
                    )
                ]
            )
        )


def test_gemini_provider_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(UserError, match="GEMINI_API_KEY"):
        GoogleProvider()
    monkeypatch.setenv("GOOGLE_API_KEY", "from-google-var")
    assert GoogleProvider()._api_key == "from-google-var"
    monkeypatch.setenv("GEMINI_API_KEY", "from-gemini-var")
    provider = GoogleProvider()
    assert provider._api_key == "from-gemini-var"
    assert (provider.base_url, provider.upload_url) == (
        "https://generativelanguage.googleapis.com/v1beta",
        "https://generativelanguage.googleapis.com/upload/v1beta",
    )
    assert "from-gemini-var" not in repr(provider)
    assert (
        provider.model_path("gemini-2.5-flash", "generateContent")
        == "models/gemini-2.5-flash:generateContent"
    )
    assert (
        provider.model_path("models/gemini-2.5-flash", "streamGenerateContent")
        == "models/gemini-2.5-flash:streamGenerateContent"
    )
    assert (
        provider.model_path("tunedModels/my-tune-1", "generateContent")
        == "tunedModels/my-tune-1:generateContent"
    )
    for bad in ("../files/x", "gemini 2", "gemini/../../x", "", "a" * 129, "gemini?x=1", "gemini#x"):
        with pytest.raises(UserError):
            provider.model_path(bad, "generateContent")
    with pytest.raises(UserError, match="GenerateContent method"):
        provider.model_path("gemini-2.5-flash", "delete")
    provider.model_path("a" * 128, "generateContent")
    with pytest.raises(ValueError, match="query"):
        GoogleProvider(api_key=KEY, upload_url="https://generativelanguage.googleapis.com/upload?x=1")
    with pytest.raises(UserError):
        GoogleModel("bad/name", provider=provider)


def test_vertex_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("GOOGLE_CLOUD_ACCESS_TOKEN", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(UserError, match="GOOGLE_CLOUD_ACCESS_TOKEN"):
        VertexAIProvider(project="p-123456")
    with pytest.raises(UserError, match="GOOGLE_CLOUD_PROJECT"):
        VertexAIProvider(access_token="ya29.test-token")
    monkeypatch.setenv("GOOGLE_CLOUD_ACCESS_TOKEN", "ya29.token")
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "my-project-1")
    provider = VertexAIProvider()
    assert (provider.location, provider.base_url) == ("global", "https://aiplatform.googleapis.com/v1")
    assert provider.model_path("gemini-2.5-flash", "generateContent") == (
        "projects/my-project-1/locations/global/publishers/google/models/gemini-2.5-flash:generateContent"
    )
    assert provider.model_path("publishers/google/models/gemini-2.5-flash", "countTokens").endswith(
        "models/gemini-2.5-flash:countTokens"
    )
    regional = VertexAIProvider(location="europe-west4", api_version="v1beta1")
    assert regional.base_url == "https://europe-west4-aiplatform.googleapis.com/v1beta1"
    assert regional._auth_headers() == {"authorization": "Bearer ya29.token"}
    assert VertexAIProvider(project="example.com:my-project").project == "example.com:my-project"
    for kwargs in (
        {"project": "bad/project"},
        {"project": "x"},
        {"project": "p-1234../x"},
        {"location": "us central1"},
        {"location": "../x"},
        {"location": "evil.com/x"},
        {"publisher": "google/../x"},
        {"api_version": "v1/../x"},
    ):
        with pytest.raises(UserError):
            VertexAIProvider(**kwargs)  # type: ignore[arg-type]
    for bad in ("../x", "m:generateContent", "m/x"):
        with pytest.raises(UserError):
            provider.model_path(bad, "generateContent")


def test_regional_roots() -> None:
    assert regional_api_base("global") == "https://aiplatform.googleapis.com"
    assert regional_api_base("us-central1") == "https://us-central1-aiplatform.googleapis.com"
    with pytest.raises(UserError):
        regional_api_base("attacker.example#")


def test_entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    found = {
        e.name: e
        for e in entry_points(group="ferrule.providers")
        if e.value.startswith("ferrule.providers.google")
    }
    assert {name: e.value for name, e in found.items()} == {
        "google-gla": "ferrule.providers.google._entry:google_gla",
        "gemini": "ferrule.providers.google._entry:gemini",
        "google-vertex": "ferrule.providers.google._entry:google_vertex",
    }
    assert found["google-gla"].load() is found["gemini"].load() is infer_model
    assert found["google-vertex"].load() is vertex_module.infer_model
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    with pytest.raises(UserError, match="GEMINI_API_KEY"):
        infer_model("gemini-2.5-flash")
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    model = infer_model("gemini-2.5-flash")
    assert (model.system, model.profile.supports_thinking) == ("google-gla:gemini-2.5-flash", True)
    monkeypatch.delenv("GOOGLE_CLOUD_ACCESS_TOKEN", raising=False)
    with pytest.raises(UserError, match="GOOGLE_CLOUD_ACCESS_TOKEN"):
        vertex_module.infer_model("gemini-2.5-flash")
    monkeypatch.setenv("GOOGLE_CLOUD_ACCESS_TOKEN", "ya29.t")
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "my-project-1")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "us-east5")
    vertex_model = vertex_module.infer_model("gemini-3-pro-preview")
    assert vertex_model.system == "google-vertex:gemini-3-pro-preview"
    assert isinstance(vertex_model.provider, VertexAIProvider)
    assert vertex_model.provider.location == "us-east5"


def test_import_is_cheap() -> None:
    assert loaded_by("import ferrule.providers.google", ("httpx2", "msgspec")) == []
    assert loaded_by("import ferrule.providers.google.codec", ("httpx2", "anyio")) == []
