"""Pricing: the offline genai-prices snapshot, exact nano-USD cost, unknown prices, the cost limit."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import UTC
from datetime import datetime
from decimal import ROUND_FLOOR
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec
import pytest

from ferrule.agent import Agent
from ferrule.agent import Pricing
from ferrule.agent.pricing import PriceSnapshot
from ferrule.agent.pricing import PricingSnapshotError
from ferrule.agent.pricing import RunCost
from ferrule.agent.pricing import nano_usd
from ferrule.agent.pricing import usage_counts
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.messages import Message
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.usage import RequestUsage
from ferrule.core.usage import UsageLimitExceeded
from ferrule.core.usage import UsageLimits

pytestmark = pytest.mark.anyio

DATA = Path(__file__).resolve().parents[3] / "data"
WHEN = datetime(2026, 6, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def snapshot() -> PriceSnapshot:
    return PriceSnapshot.load()


def test_snapshot_records_its_source_and_verifies_its_checksum(snapshot: PriceSnapshot) -> None:
    assert snapshot.source_package == "genai-prices"
    assert snapshot.source_version
    assert len(snapshot.source_sha256) == 64
    document = msgspec.json.decode((DATA / "pricing.json").read_bytes())
    assert (
        hashlib.sha256(msgspec.json.encode(document["data"], order="sorted")).hexdigest() == snapshot.sha256
    )
    assert {"openai", "anthropic", "google"} <= set(snapshot.provider_ids())


def test_tampered_snapshot_is_refused(tmp_path: Path) -> None:
    document = msgspec.json.decode((DATA / "pricing.json").read_bytes())
    document["data"]["providers"][0]["models"][0]["prices"][0]["prices"]["input_mtok"] = "0"
    path = tmp_path / "pricing.json"
    path.write_bytes(msgspec.json.encode(document))
    with pytest.raises(PricingSnapshotError, match="checksum"):
        PriceSnapshot.load(path)
    document["format"] = "other"
    path.write_bytes(msgspec.json.encode(document))
    with pytest.raises(PricingSnapshotError, match="not a ferrule pricing snapshot"):
        PriceSnapshot.load(path)
    path.write_text("{")
    with pytest.raises(PricingSnapshotError, match="not valid JSON"):
        PriceSnapshot.load(path)
    with pytest.raises(PricingSnapshotError, match="cannot read"):
        PriceSnapshot.load(tmp_path / "missing.json")


def reference_nano(total_usd: str) -> int:
    return int((Decimal(total_usd) * 10**9 + Decimal("0.5")).to_integral_value(rounding=ROUND_FLOOR))


def test_costs_match_genai_prices_reference_calculations(snapshot: PriceSnapshot) -> None:
    cases = msgspec.json.decode((DATA / "pricing_examples.json").read_bytes())["cases"]
    assert len(cases) >= 50
    for case in cases:
        prices = snapshot.find(case["provider"], case["model"])
        assert prices is not None, case
        amount = prices.cost(
            usage_counts(RequestUsage(**case["usage"])), datetime.fromisoformat(case["timestamp"])
        )
        assert amount is not None, case
        assert nano_usd(amount) == reference_nano(case["total_usd"]), case


def test_cached_input_is_charged_at_the_cache_rate() -> None:
    pricing = Pricing(overrides={"m": {"input_mtok": "3", "cache_read_mtok": "0.3", "output_mtok": "15"}})
    prices = pricing.find(None, "m")
    assert prices is not None
    usage = RequestUsage(input_tokens=1_000, cache_read_tokens=400, output_tokens=100)
    # 600 * 3000 + 400 * 300 + 100 * 15000 nano-USD
    assert nano_usd(prices.cost(usage_counts(usage), WHEN) or 0) == 1_800_000 + 120_000 + 1_500_000
    bad = RequestUsage(input_tokens=10, cache_read_tokens=20)
    assert prices.cost(usage_counts(bad), WHEN) is None  # cannot be decomposed: unknown


def test_exact_arithmetic_rounds_only_at_the_end() -> None:
    pricing = Pricing(overrides={"tiny": {"input_mtok": "0.0004"}})
    prices = pricing.find(None, "tiny")
    assert prices is not None
    one = prices.cost(usage_counts(RequestUsage(input_tokens=1)), WHEN)
    assert one is not None
    assert nano_usd(one) == 0  # 0.4 nano-USD
    total = RunCost()
    for _ in range(3):
        total.add(one)
    assert total.add(one) == 2  # 4 * 0.4 = 1.6 -> 2, where rounding each request would give 0
    assert nano_usd(500_000_000_000_000) == 1  # exactly half a nano-USD rounds up
    assert nano_usd(499_999_999_999_999) == 0
    assert RunCost(None).add(one) is None  # a run that started with an unknown cost stays unknown


def test_tiers_switch_by_input_tokens(snapshot: PriceSnapshot) -> None:
    tiered = None
    for provider_id in ("google", "anthropic"):
        for provider in snapshot._providers:
            if provider.id != provider_id:
                continue
            for _, raw in provider.models:
                prices = raw["prices"][-1]["prices"]
                if isinstance(prices.get("input_mtok"), dict) and not raw.get("variants"):
                    tiered = (provider_id, raw["id"], prices["input_mtok"])
                    break
    assert tiered is not None
    provider_id, model_id, spec = tiered
    found = snapshot.find(provider_id, model_id)
    assert found is not None
    start = spec["tiers"][0]["start"]
    at = found.prices_at(WHEN)["input_tokens"]
    assert at.rate(start) == at.base
    assert at.rate(start + 1) != at.base


def test_unknown_models_and_providers(snapshot: PriceSnapshot) -> None:
    assert snapshot.find("openai", "definitely-not-a-model") is None
    assert snapshot.find("nobody", "gpt-4o") is None
    assert snapshot.find("google-gla", "gemini-2.5-flash") is not None  # matched through provider_match
    assert snapshot.find(None, "gpt-4o", "https://api.openai.com/v1") is not None  # through the API URL


def priced_model(
    model_name: str,
    *usages: RequestUsage,
    cost: list[Decimal | None] | None = None,
    provider: str | None = None,
) -> FunctionModel:
    steps = list(usages)
    costs = list(cost or [None] * len(usages))

    def answer(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        usage = steps.pop(0)
        reported = costs.pop(0)
        if reported is not None:
            usage = msgspec.structs.replace(usage, cost=reported)
        if steps:
            return ModelResponse(
                parts=[ToolCallPart(tool_name="noop", args={}, tool_call_id=f"n{len(steps)}")],
                usage=usage,
                model_name=model_name,
                provider_name=provider,
            )
        return ModelResponse(
            parts=[TextPart("done")], usage=usage, model_name=model_name, provider_name=provider
        )

    return FunctionModel(answer)


def noop() -> str:
    return "ok"


PRICES = Pricing(overrides={"priced": {"input_mtok": "1", "output_mtok": "2"}})


async def test_run_usage_gets_exact_cost() -> None:
    model = priced_model(
        "priced", RequestUsage(input_tokens=100, output_tokens=10), RequestUsage(input_tokens=200)
    )
    result = await Agent(model, tools=[noop], pricing=PRICES).run("go")
    assert result.usage.cost_nano_usd == 100_000 + 20_000 + 200_000


async def test_unknown_price_stays_unknown_for_the_whole_run() -> None:
    model = priced_model("priced", RequestUsage(input_tokens=100), RequestUsage(input_tokens=1))
    names = iter(["priced", "mystery"])
    original = model.function
    assert original is not None

    def answer(messages: Sequence[Message], info: AgentInfo) -> Any:
        response = original(list(messages), info)
        assert isinstance(response, ModelResponse)
        response.model_name = next(names)
        return response

    model.function = answer
    result = await Agent(model, tools=[noop], pricing=PRICES).run("go")
    assert result.usage.cost_nano_usd is None


async def test_no_pricing_means_no_cost() -> None:
    result = await Agent(priced_model("priced", RequestUsage(input_tokens=5))).run("go")
    assert result.usage.cost_nano_usd is None


async def test_provider_reported_cost_wins() -> None:
    model = priced_model("priced", RequestUsage(input_tokens=100), cost=[Decimal("0.000123456789")])
    result = await Agent(model, pricing=PRICES).run("go")
    assert result.usage.cost_nano_usd == 123_457


async def test_cost_limit_at_exactly_and_one_past() -> None:
    usages = (RequestUsage(input_tokens=100), RequestUsage(input_tokens=100))
    exact = await Agent(priced_model("priced", *usages), tools=[noop], pricing=PRICES).run(
        "go", usage_limits=UsageLimits(cost_limit_nano_usd=200_000)
    )
    assert exact.usage.cost_nano_usd == 200_000
    with pytest.raises(UsageLimitExceeded, match="cost_limit_nano_usd") as caught:
        await Agent(priced_model("priced", *usages), tools=[noop], pricing=PRICES).run(
            "go", usage_limits=UsageLimits(cost_limit_nano_usd=199_999)
        )
    assert (caught.value.maximum, caught.value.actual) == (199_999, 200_000)


async def test_a_cost_limit_enables_the_bundled_prices() -> None:
    snapshot = PriceSnapshot.load()
    expected = Pricing(snapshot).request_cost_nano_usd(
        ModelResponse(
            parts=[], usage=RequestUsage(input_tokens=1_000_000), model_name="gpt-4o", provider_name="openai"
        )
    )
    assert expected is not None
    assert expected > 0
    model = priced_model("gpt-4o", RequestUsage(input_tokens=1_000_000), provider="openai")
    result = await Agent(model).run("go", usage_limits=UsageLimits(cost_limit_nano_usd=10**12))
    assert result.usage.cost_nano_usd == expected
    model = priced_model("gpt-4o", RequestUsage(input_tokens=1_000_000), provider="openai")
    with pytest.raises(UsageLimitExceeded):
        await Agent(model).run("go", usage_limits=UsageLimits(cost_limit_nano_usd=expected - 1))


async def test_a_cost_limit_with_an_unknown_price_fails_closed() -> None:
    from ferrule.agent.exceptions import UnknownCostError

    model = priced_model("mystery-model", RequestUsage(input_tokens=5), provider="nobody")
    with pytest.raises(UnknownCostError, match="mystery-model"):
        await Agent(model).run("go", usage_limits=UsageLimits(cost_limit_nano_usd=10**9))
