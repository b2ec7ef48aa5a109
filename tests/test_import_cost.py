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


# Loaded on first use, not with `Agent` and the OpenAI model: asyncio (a running asyncio loop has
# imported it; a trio program never does), paused-state history documents, SQLite checkpoint
# stores, durable engines, pricing, the JSON Schema validator (pydantic types, tool schemas), the
# extension machinery (toolsets, capabilities, tool search) and OpenTelemetry settings.
_LAZY = (
    "asyncio",
    "sqlite3",
    "ferrule.core.history",
    "ferrule.core.json_schema",
    "ferrule.agent.durable",
    "ferrule.agent.pricing",
    "ferrule.agent.spec",
    "ferrule.agent._ext",
    "ferrule.agent._tool_search",
    "ferrule.agent.capabilities",
    "ferrule.agent.toolsets",
    "ferrule.agent._instrument",
)


_AGENT_AND_CHAT_MODEL = (
    "from ferrule.agent import Agent\n"
    "from ferrule.providers.openai import OpenAIChatModel, OpenAIProvider\n"
    "Agent, OpenAIChatModel, OpenAIProvider"
)


def test_agent_and_openai_model_do_not_import_what_a_run_may_never_need() -> None:
    assert loaded_by(_AGENT_AND_CHAT_MODEL, _LAZY) == []


def test_the_lazy_public_names_still_resolve() -> None:
    # The check that each lazy name is real: reaching it loads its module.
    statement = "import ferrule.agent\nferrule.agent.Pricing, ferrule.agent.AgentSpec"
    assert loaded_by(statement, _LAZY[5:7]) == ["ferrule.agent.pricing", "ferrule.agent.spec"]
    names = "AbstractToolset, Capability, CapabilityLayer, CapabilitySnapshot, FunctionToolset"
    statement = f"from ferrule.agent import {names}, InstrumentationSettings"
    assert loaded_by(statement, _LAZY[-2:]) == ["ferrule.agent.toolsets", "ferrule.agent._instrument"]
    assert loaded_by("import ferrule.agent\nferrule.agent.Capability", _LAZY[-3:-1]) == [
        "ferrule.agent.capabilities",
        "ferrule.agent.toolsets",
    ]


def test_an_agent_with_toolsets_or_telemetry_loads_them_and_a_plain_run_does_not() -> None:
    plain = (
        "from ferrule.agent import Agent\n"
        "from ferrule.agent.testing import TestModel\n"
        "assert Agent(TestModel()).run_sync('hi').output\n"
    )
    assert loaded_by(plain, _LAZY[7:]) == []
    extended = plain + (
        "from ferrule.agent import FunctionToolset\n"
        "Agent(TestModel(), toolsets=[FunctionToolset()], instrument=True).run_sync('hi')"
    )
    assert loaded_by(
        extended, ("ferrule.agent._ext", "ferrule.agent.toolsets", "ferrule.agent._instrument")
    ) == [
        "ferrule.agent._ext",
        "ferrule.agent.toolsets",
        "ferrule.agent._instrument",
    ]


def test_a_priced_agent_loads_pricing_and_a_plain_one_does_not() -> None:
    plain = "from ferrule.agent import Agent\nfrom ferrule.agent.testing import TestModel\nAgent(TestModel())"
    assert loaded_by(plain, ("ferrule.agent.pricing",)) == []
    priced = plain.replace("Agent(TestModel())", "Agent(TestModel(), pricing=True)")
    assert loaded_by(priced, ("ferrule.agent.pricing",)) == ["ferrule.agent.pricing"]


def test_a_run_on_asyncio_works_without_asyncio_imported_up_front() -> None:
    # The transport's loop token reads asyncio from sys.modules: inside a running asyncio loop it is there.
    statement = (
        "from ferrule.agent import Agent\n"
        "from ferrule.agent.testing import TestModel\n"
        "assert 'asyncio' not in sys.modules\n"
        "print(Agent(TestModel()).run_sync('hi').output, file=sys.stderr)"
    )
    assert loaded_by(statement, ("asyncio",)) == ["asyncio"]


_CHAT_CODEC = ("ferrule.providers.openai.chat_codec", "ferrule.providers.openai.strict_schema")


def test_the_chat_codec_loads_with_the_first_request_body_not_with_the_model() -> None:
    built = (
        "from ferrule.providers.openai import OpenAIChatModel, OpenAIProvider\n"
        "model = OpenAIChatModel('gpt-4.1-mini', provider=OpenAIProvider(api_key='sk-test'))\n"
    )
    assert loaded_by(built, _CHAT_CODEC) == []
    # The check that the lazy import is real: the first body encoded brings the codec in.
    encoded = built + (
        "from ferrule.core.messages import ModelRequest, UserPromptPart\n"
        "from ferrule.core.model import ModelCall\n"
        "call = ModelCall(messages=[ModelRequest(parts=[UserPromptPart(content='hi')])])\n"
        "assert b'\"hi\"' in model.encode(call)\n"
    )
    assert loaded_by(encoded, _CHAT_CODEC) == list(_CHAT_CODEC)


# Loaded on first use as well: the context budget (with its errors, re-exported by
# `ferrule.agent.exceptions`), the JSONL observer and the docstring parser (its patterns).
_ON_USE = ("ferrule.agent.context_budget", "ferrule.agent._observe", "ferrule.agent._docstring")


def test_the_budget_observer_and_docstring_parser_load_on_first_use() -> None:
    imported = "from ferrule.agent import Agent\nimport ferrule.agent.exceptions\nAgent"
    assert loaded_by(imported, _ON_USE) == []
    names = (
        imported + "\nimport ferrule.agent\n"
        "ferrule.agent.ContextBudget, ferrule.agent.JsonlObserver\n"
        "from ferrule.agent.exceptions import ContextBudgetExceeded\n"
        "assert issubclass(ContextBudgetExceeded, ferrule.agent.exceptions.AgentRunError)\n"
        "assert all(getattr(ferrule.agent.exceptions, n) for n in ferrule.agent.exceptions.__all__)\n"
    )
    assert loaded_by(names, _ON_USE) == list(_ON_USE[:2])
    tool = imported + (
        "\nfrom ferrule.agent import Tool\n"
        "def add(a: int, b: int) -> int:\n"
        "    '''Add.\n\n    Args:\n        a: the first.\n        b: the second.\n    '''\n"
        "    return a + b\n"
        "assert Tool(add).description == 'Add.'\n"
    )
    assert loaded_by(tool, _ON_USE) == [_ON_USE[2]]


# Standard-library modules loaded where they are used: hashlib and hmac (OpenSSL's digests, for
# signed paused states, tool fingerprints and generated IDs), mimetypes (a URL's guessed media
# type), json (the prompted-output instructions) and base64 (binary content, Basic credentials).
_STDLIB_ON_USE = ("hashlib", "hmac", "mimetypes", "json", "base64")


def test_agent_and_openai_model_do_not_import_digests_mimetypes_or_json() -> None:
    assert loaded_by(_AGENT_AND_CHAT_MODEL, _STDLIB_ON_USE) == []
    # The check that each lazy import is real: the first use brings its module in.
    used = _AGENT_AND_CHAT_MODEL + (
        "\nfrom ferrule.core.messages import ImageUrl\n"
        "assert ImageUrl(url='https://example.com/a.png').resolved_media_type == 'image/png'\n"
        "from ferrule.providers.openai._common import StableIds\n"
        "assert StableIds('seed').next() != StableIds('other').next()\n"
        "from ferrule.core.messages import BinaryContent\n"
        "assert BinaryContent(data=b'hi', media_type='text/plain').base64 == 'aGk='\n"
    )
    assert loaded_by(used, _STDLIB_ON_USE) == ["hashlib", "mimetypes", "base64"]
