from __future__ import annotations

import pytest

from ferrule.core.errors import UserError
from ferrule.core.settings import ModelSettings
from ferrule.core.settings import ProviderExtraBody
from ferrule.core.settings import merge_settings
from ferrule.core.settings import validate_request_headers


def test_merge_order_model_agent_run() -> None:
    model = ModelSettings(temperature=0.1, max_tokens=100, extra_headers={"x-a": "1"})
    agent = ModelSettings(temperature=0.5, extra_headers={"x-b": "2"})
    run = ModelSettings(max_tokens=7)
    merged = merge_settings(model, agent, None, run)
    assert merged.temperature == 0.5
    assert merged.max_tokens == 7
    assert merged.extra_headers == {"x-a": "1", "x-b": "2"}
    assert model.temperature == 0.1  # layers are not mutated


def test_merge_with_nothing_set_returns_same_object() -> None:
    settings = ModelSettings(seed=1)
    assert settings.merge(ModelSettings()) is settings
    assert settings.merge(None) is settings


def test_extra_body_is_tagged_and_cannot_override_owned_keys() -> None:
    settings = ModelSettings(
        extra_body=[
            ProviderExtraBody(provider="openai", body={"user": "u1"}),
            ProviderExtraBody(provider="anthropic", body={"metadata": {"user_id": "x"}}),
        ]
    )
    assert settings.extra_body_for("openai", {"model", "messages"}) == {"user": "u1"}
    assert settings.extra_body_for("google", {"model"}) == {}
    clash = ModelSettings(extra_body=[ProviderExtraBody(provider="openai", body={"model": "other"})])
    with pytest.raises(UserError, match="model"):
        clash.extra_body_for("openai", {"model", "messages"})


def test_extra_bodies_accumulate_across_layers() -> None:
    a = ModelSettings(extra_body=[ProviderExtraBody(provider="openai", body={"a": 1})])
    b = ModelSettings(extra_body=[ProviderExtraBody(provider="openai", body={"b": 2})])
    assert merge_settings(a, b).extra_body_for("openai", ()) == {"a": 1, "b": 2}


@pytest.mark.parametrize(
    "name",
    ["Authorization", "x-api-key", "Cookie", "Content-Length", "Host", "x-client-request-id", "bad name"],
)
def test_request_headers_reject_credentials_framing_and_correlation(name: str) -> None:
    with pytest.raises(UserError, match="cannot be set"):
        validate_request_headers({name: "v"})


def test_request_headers_reject_line_breaks_and_lowercase_names() -> None:
    assert validate_request_headers({"X-Trace": "a"}) == {"x-trace": "a"}
    with pytest.raises(UserError, match="line break"):
        validate_request_headers({"x-trace": "a\r\nb"})


def test_set_fields() -> None:
    assert ModelSettings(top_k=2, seed=None).set_fields() == ["top_k"]
