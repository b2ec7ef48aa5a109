"""The HTTP client loads when the first request needs it, not when an application imports ferrule."""

from __future__ import annotations

from tests.support.imports import loaded_by

_HTTP = ("httpx2", "idna")


def test_agent_and_openai_model_do_not_import_the_http_client() -> None:
    statement = (
        "from ferrule.agent import Agent\n"
        "from ferrule.providers.openai import OpenAIChatModel, OpenAIProvider, OpenAIResponsesModel\n"
        "Agent, OpenAIChatModel, OpenAIProvider, OpenAIResponsesModel"
    )
    assert loaded_by(statement, _HTTP) == []


def test_the_core_provider_and_url_policy_do_not_import_the_http_client() -> None:
    statement = "import ferrule.core.provider, ferrule.core.url_policy, ferrule.core.model"
    assert loaded_by(statement, _HTTP) == []


def test_a_provider_loads_the_http_client_when_it_parses_its_url() -> None:
    # The check that the lazy import is real: the first URL parsed brings httpx2 in.
    statement = (
        "from ferrule.providers.openai import OpenAIProvider\n"
        "OpenAIProvider(base_url='https://api.openai.com/v1', api_key='sk-test')"
    )
    assert loaded_by(statement, _HTTP[:1]) == ["httpx2"]
