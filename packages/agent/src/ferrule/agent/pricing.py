"""Cost of model requests in exact integer nano-USD, from an offline pricing snapshot.

```python
agent = Agent(model, pricing=True)            # the bundled snapshot
result = await agent.run("...")
result.usage.cost_nano_usd                  # e.g. 1_234_567 (= $0.001234567), or None if unknown
```

The bundled snapshot (`data/pricing.json` in the repository, shipped inside the wheel) is generated
by `tools/pricing_snapshot.py` from the public `genai-prices` data; it records the package version,
the wheel's SHA-256 and a checksum of its contents, which `PriceSnapshot.load` verifies. Loading
it does not need genai-prices.

Prices are per unit (tokens, requests, seconds, ...) as in genai-prices: each priced unit is
charged for its own count minus the counts of more specific priced units (so cached input is
charged at the cache rate, the rest of the input at the input rate), tiered prices switch by the
request's input tokens, and time-dependent prices are chosen by the response's timestamp.
Arithmetic is exact (integers in yocto-USD, fractions where a unit's size is not a power of ten);
a run's total is rounded half-up to nano-USD only when it is reported. A provider-reported cost
(`RequestUsage.cost`) wins over the snapshot. A model the snapshot does not know, or usage it
cannot decompose, makes the cost unknown: the run's `cost_nano_usd` is then `None` for good.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from datetime import UTC
from datetime import date
from datetime import datetime
from datetime import time
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import TypeAlias
from typing import cast

import msgspec

from ferrule.core.errors import UserError
from ferrule.core.usage import RequestUsage

if TYPE_CHECKING:
    from fractions import Fraction

    from ferrule.core.messages import ModelResponse
    from ferrule.core.model import Model

__all__ = [
    "SNAPSHOT_FORMAT",
    "ModelPrices",
    "PriceSnapshot",
    "Pricing",
    "PricingSnapshotError",
    "nano_usd",
]

SNAPSHOT_FORMAT = "ferrule.pricing_snapshot"
"""The `format` marker of a pricing snapshot."""
_SNAPSHOT_VERSION = 1
_YOCTO = 10**24  # yocto-USD per USD: every price with up to 18 decimals per million units is an integer
_NANO_IN_YOCTO = 10**15

Amount: TypeAlias = "int | Fraction"
"""An exact amount of yocto-USD."""


class PricingSnapshotError(UserError):
    """A pricing snapshot could not be read (missing, malformed, or its checksum does not match)."""


def nano_usd(amount: Amount) -> int:
    """An exact yocto-USD amount in nano-USD, rounded half up."""
    if isinstance(amount, int):
        return (2 * amount + _NANO_IN_YOCTO) // (2 * _NANO_IN_YOCTO)
    numerator, denominator = amount.numerator, amount.denominator
    return (2 * numerator + _NANO_IN_YOCTO * denominator) // (2 * _NANO_IN_YOCTO * denominator)


# --- matching ------------------------------------------------------------------------------------


def _matches(clause: Any, text: str) -> bool:
    """genai-prices match logic; `text` is already lower-case."""
    if "starts_with" in clause:
        return text.startswith(clause["starts_with"].lower())
    if "ends_with" in clause:
        return text.endswith(clause["ends_with"].lower())
    if "contains" in clause:
        return clause["contains"].lower() in text
    if "equals" in clause:
        return text == clause["equals"].lower()
    if "regex" in clause:
        return re.search(clause["regex"], text) is not None
    if "or" in clause:
        return any(_matches(c, text) for c in clause["or"])
    if "and" in clause:
        return all(_matches(c, text) for c in clause["and"])
    raise PricingSnapshotError(f"unknown match clause {clause!r} in the pricing snapshot")


def _active(constraint: Any, when: datetime) -> bool:
    if constraint is None:
        return True
    moment = when.astimezone(UTC) if when.tzinfo is not None else when.replace(tzinfo=UTC)
    if "start_date" in constraint:
        return moment.date() >= date.fromisoformat(constraint["start_date"])
    start = time.fromisoformat(constraint["start_time"])
    end = time.fromisoformat(constraint["end_time"])
    now = moment.time()
    if end < start:
        return now >= start or now < end
    return start <= now < end


# --- prices --------------------------------------------------------------------------------------


class _Unit:
    __slots__ = ("dimensions", "key", "per")

    def __init__(self, key: str, per: int, dimensions: dict[str, str]) -> None:
        self.key = key
        self.per = per
        self.dimensions = dimensions

    def covers(self, other: _Unit) -> bool:
        """Whether `other` is a more specific kind of this unit (or the same)."""
        return self.dimensions.items() <= other.dimensions.items()


def _per_unit(price: str, per: int) -> Amount:
    """Yocto-USD per single unit for a price quoted per `per` units."""
    from fractions import Fraction  # exact arithmetic, imported only when prices are used

    value = Fraction(Decimal(price)) * _YOCTO / per
    return value.numerator if value.denominator == 1 else value


class _Price:
    """One unit's price: flat, or tiered by the request's input tokens."""

    __slots__ = ("base", "tiers", "unit")

    def __init__(self, unit: _Unit, raw: Any) -> None:
        self.unit = unit
        if isinstance(raw, str):
            self.base = _per_unit(raw, unit.per)
            self.tiers: list[tuple[int, Amount]] = []
        else:
            self.base = _per_unit(raw["base"], unit.per)
            self.tiers = sorted((t["start"], _per_unit(t["price"], unit.per)) for t in raw["tiers"])

    def rate(self, input_tokens: int) -> Amount:
        for start, price in reversed(self.tiers):
            if input_tokens > start:
                return price
        return self.base


class ModelPrices:
    """The prices of one model of one provider, as the snapshot lists them."""

    __slots__ = ("_conditional", "_units", "_variants", "model_id", "provider_id")

    def __init__(
        self, provider_id: str, raw: Any, units: Mapping[str, _Unit], by_price_key: Mapping[str, _Unit]
    ) -> None:
        self.provider_id: str = provider_id
        """The genai-prices provider ID."""
        self.model_id: str = raw["id"]
        """The genai-prices model ID."""
        self._units = units
        self._conditional = [(c["constraint"], self._parse(c["prices"], by_price_key)) for c in raw["prices"]]
        self._variants = [
            (v["when"], v.get("constraint"), self._parse(v["prices"], by_price_key))
            for v in raw.get("variants", ())
        ]

    @staticmethod
    def _parse(prices: Mapping[str, Any], by_price_key: Mapping[str, _Unit]) -> dict[str, _Price]:
        parsed: dict[str, _Price] = {}
        for price_key, value in prices.items():
            unit = by_price_key.get(price_key)
            if unit is None:
                raise PricingSnapshotError(f"the pricing snapshot uses the unknown price key {price_key!r}")
            parsed[unit.key] = _Price(unit, value)
        return parsed

    def prices_at(self, when: datetime, context: Mapping[str, str] | None = None) -> dict[str, _Price]:
        """The unit prices in force at `when` (the last active conditional price wins)."""
        chosen = self._conditional[0][1]
        for constraint, prices in reversed(self._conditional):
            if _active(constraint, when):
                chosen = prices
                break
        if not context or not self._variants:
            return chosen
        resolved = dict(chosen)
        overridden: set[str] = set()
        for when_ctx, constraint, prices in self._variants:
            if not _active(constraint, when) or any(context.get(k) != v for k, v in when_ctx.items()):
                continue
            for key, price in prices.items():
                if key not in overridden:
                    resolved[key] = price
                    overridden.add(key)
        return resolved

    def cost(
        self, counts: Mapping[str, int | float], when: datetime, context: Mapping[str, str] | None = None
    ) -> Amount | None:
        """Exact yocto-USD for one request's unit counts, or `None` when the usage is inconsistent."""
        prices = self.prices_at(when, context)
        leaves: dict[str, Amount] = {}
        priced = sorted(
            (p.unit for key, p in prices.items() if key != "requests"),
            key=lambda u: (-len(u.dimensions), u.key),
        )
        for unit in priced:
            value: Amount = _exact(counts.get(unit.key, 0))
            for other in priced:
                if other is not unit and other.key in leaves and unit.covers(other):
                    value -= leaves[other.key]
            if value < 0:
                return None  # more-specific counts exceed their total: the usage cannot be priced
            leaves[unit.key] = value
        input_tokens = int(counts.get("input_tokens", 0))
        total: Amount = 0
        for key, price in prices.items():
            count: Amount = 1 if key == "requests" else leaves.get(key, 0)
            if count:
                total += count * price.rate(input_tokens)
        if not isinstance(total, int) and total.denominator == 1:
            return total.numerator
        return total

    def __repr__(self) -> str:
        return f"ModelPrices({self.provider_id!r}, {self.model_id!r})"


def _exact(value: int | float) -> Amount:
    if isinstance(value, int):
        return value
    from fractions import Fraction

    exact = Fraction(str(value))
    return exact.numerator if exact.denominator == 1 else exact


class _Provider:
    __slots__ = ("api_pattern", "fallback", "id", "match", "models")

    def __init__(self, raw: Any) -> None:
        self.id: str = raw["id"]
        self.api_pattern: str = raw["api_pattern"]
        self.match: Any = raw.get("provider_match")
        self.fallback: list[str] = list(raw.get("fallback_model_providers") or ())
        self.models: list[tuple[Any, Any]] = [(m["match"], m) for m in raw["models"]]

    def find(self, model_ref: str) -> Any | None:
        for match, raw in self.models:
            if _matches(match, model_ref):
                return raw
        return None


class PriceSnapshot:
    """A verified, immutable pricing snapshot (loaded once and shared)."""

    def __init__(self, document: Mapping[str, Any], *, verify: bool = True) -> None:
        if document.get("format") != SNAPSHOT_FORMAT:
            raise PricingSnapshotError(f"not a ferrule pricing snapshot (format {document.get('format')!r})")
        if document.get("version") != _SNAPSHOT_VERSION:
            raise PricingSnapshotError(
                f"pricing snapshot version {document.get('version')!r} is not supported (this release reads {_SNAPSHOT_VERSION})"
            )
        data = document["data"]
        if verify:
            digest = hashlib.sha256(msgspec.json.encode(data, order="sorted")).hexdigest()
            if digest != document.get("sha256"):
                raise PricingSnapshotError(
                    "the pricing snapshot does not match its recorded checksum; regenerate it with tools/pricing_snapshot.py"
                )
        source: Mapping[str, Any] = document.get("source") or {}
        self.source_package: str = source.get("package", "")
        """The package the data came from (`genai-prices`)."""
        self.source_version: str = source.get("version", "")
        """The version of that package."""
        self.source_sha256: str = source.get("wheel_sha256", "")
        """SHA-256 of the wheel the data was read from."""
        self.sha256: str = document["sha256"]
        """SHA-256 of the snapshot's data (verified on load)."""
        self._units = {
            key: _Unit(key, int(u["per"]), dict(u["dimensions"])) for key, u in data["units"].items()
        }
        self._by_price_key = {u["price_key"]: self._units[key] for key, u in data["units"].items()}
        self._providers = [_Provider(p) for p in data["providers"]]
        self._by_id = {p.id: p for p in self._providers}
        self._models: dict[tuple[str, int], ModelPrices] = {}
        self._lookups: dict[tuple[str | None, str, str | None], ModelPrices | None] = {}

    @classmethod
    def load(cls, path: str | Path | None = None) -> PriceSnapshot:
        """Read and verify a snapshot file; without `path`, the one bundled with ferrule-agent."""
        target = Path(path) if path is not None else _bundled_path()
        try:
            raw = target.read_bytes()
        except OSError as exc:
            raise PricingSnapshotError(f"cannot read the pricing snapshot {target}: {exc}") from exc
        try:
            document = msgspec.json.decode(raw)
        except msgspec.DecodeError as exc:
            raise PricingSnapshotError(f"the pricing snapshot {target} is not valid JSON: {exc}") from exc
        if not isinstance(document, dict):
            raise PricingSnapshotError(f"the pricing snapshot {target} is not a JSON object")
        return cls(cast("dict[str, Any]", document))

    def provider_ids(self) -> list[str]:
        """The providers the snapshot prices."""
        return [p.id for p in self._providers]

    def _provider(self, provider: str | None, provider_url: str | None) -> _Provider | None:
        if provider:
            name = provider.lower().strip()
            found = self._by_id.get(name)
            if found is not None:
                return found
            for candidate in self._providers:
                if candidate.match is not None and _matches(candidate.match, name):
                    return candidate
        if provider_url:
            for candidate in self._providers:
                if re.match(candidate.api_pattern, provider_url):
                    return candidate
        return None

    def find(self, provider: str | None, model: str, provider_url: str | None = None) -> ModelPrices | None:
        """The prices of `model` at `provider` (a name like `"openai"`, or found by API URL), if known."""
        key = (provider, model, provider_url)
        if key in self._lookups:
            return self._lookups[key]
        found: ModelPrices | None = None
        owner = self._provider(provider, provider_url)
        if owner is not None:
            ref = model.lower()
            raw = owner.find(ref)
            source = owner
            if raw is None:
                for fallback_id in owner.fallback:
                    fallback = self._by_id.get(fallback_id)
                    if fallback is not None:
                        raw = fallback.find(ref)
                        if raw is not None:
                            source = fallback
                            break
            if raw is not None:
                cache_key = (source.id, id(raw))
                found = self._models.get(cache_key)
                if found is None:
                    found = self._models[cache_key] = ModelPrices(
                        source.id, raw, self._units, self._by_price_key
                    )
        if len(self._lookups) > 4096:
            self._lookups.clear()
        self._lookups[key] = found
        return found

    def __repr__(self) -> str:
        return f"PriceSnapshot({self.source_package} {self.source_version}, {len(self._providers)} providers)"


def _bundled_path() -> Path:
    packaged = Path(__file__).resolve().parent / "_data" / "pricing.json"
    if packaged.is_file():
        return packaged
    # Development checkout: packages/agent/src/ferrule/agent/pricing.py -> <repo>/data/pricing.json
    return Path(__file__).resolve().parents[5] / "data" / "pricing.json"


_loaded: list[PriceSnapshot] = []  # the bundled snapshot, once loaded


def default_snapshot() -> PriceSnapshot:
    """The bundled snapshot, loaded and verified on first use."""
    if not _loaded:
        _loaded.append(PriceSnapshot.load())
    return _loaded[0]


def usage_counts(usage: RequestUsage) -> dict[str, int | float]:
    """One request's usage as genai-prices unit counts (provider-named extras included)."""
    counts: dict[str, int | float] = dict(usage.details) if usage.details else {}
    counts["input_tokens"] = usage.input_tokens
    counts["output_tokens"] = usage.output_tokens
    counts["cache_read_tokens"] = usage.cache_read_tokens
    counts["cache_write_tokens"] = usage.cache_write_tokens
    counts["input_audio_tokens"] = usage.input_audio_tokens
    counts["cache_audio_read_tokens"] = usage.cache_audio_read_tokens
    counts["output_audio_tokens"] = usage.output_audio_tokens
    if usage.cache_write_1h_tokens:
        counts["cache_write_1h_tokens"] = usage.cache_write_1h_tokens
    reasoning = usage.output_reasoning_tokens or usage.details.get("reasoning_tokens", 0)
    if reasoning:
        counts["output_reasoning_tokens"] = reasoning
    if usage.audio_seconds:
        counts["audio_seconds"] = usage.audio_seconds
    return counts


class Pricing:
    """Prices an agent's requests: a snapshot, plus exact per-model overrides.

    `overrides` maps `"provider:model"` (or just `"model"`) to prices per million tokens as
    decimal strings by genai-prices price key, e.g. `{"my-gateway:llama-70b": {"input_mtok": "0.6",
    "output_mtok": "0.8"}}`; use it for private deployments the snapshot cannot know.
    `context` selects price variants (e.g. `{"service_tier": "flex"}`).
    """

    def __init__(
        self,
        snapshot: PriceSnapshot | None = None,
        *,
        overrides: Mapping[str, Mapping[str, str]] | None = None,
        context: Mapping[str, str] | None = None,
    ) -> None:
        self._snapshot = snapshot
        self.context = dict(context) if context else None
        """Request context selecting price variants."""
        self._overrides: dict[str, ModelPrices] = {}
        if overrides:
            units = _default_units()
            by_price_key = {_PRICE_KEYS[k]: u for k, u in units.items() if k in _PRICE_KEYS}
            for name, prices in overrides.items():
                raw = {"id": name, "prices": [{"constraint": None, "prices": dict(prices)}]}
                self._overrides[name] = ModelPrices("override", raw, units, by_price_key)

    @property
    def snapshot(self) -> PriceSnapshot:
        """The snapshot (the bundled one unless another was given)."""
        if self._snapshot is None:
            self._snapshot = default_snapshot()
        return self._snapshot

    def find(self, provider: str | None, model: str, provider_url: str | None = None) -> ModelPrices | None:
        """The prices used for `model` of `provider`: an override, else the snapshot's."""
        if self._overrides:
            override = self._overrides.get(f"{provider}:{model}") or self._overrides.get(model)
            if override is not None:
                return override
        return self.snapshot.find(provider, model, provider_url)

    def request_cost(self, response: ModelResponse, model: Model | None = None) -> Amount | None:
        """Exact yocto-USD for one response, or `None` when its price is unknown."""
        usage = response.usage
        if usage.cost is not None:
            return _exact_usd(usage.cost)
        provider = response.provider_name or (model.provider_name if model is not None else None)
        name = response.model_name or (model.model_name if model is not None else None)
        if name is None:
            return None
        prices = self.find(provider, name, response.provider_url)
        if prices is None and model is not None and name != model.model_name:
            prices = self.find(model.provider_name, model.model_name, response.provider_url)
        if prices is None:
            return None
        return prices.cost(usage_counts(usage), response.timestamp, self.context)

    def request_cost_nano_usd(self, response: ModelResponse, model: Model | None = None) -> int | None:
        """`request_cost` rounded to nano-USD."""
        amount = self.request_cost(response, model)
        return None if amount is None else nano_usd(amount)


def _exact_usd(value: Decimal) -> Amount:
    from fractions import Fraction

    exact = Fraction(value) * _YOCTO
    return exact.numerator if exact.denominator == 1 else exact


# Units usable in overrides, so they work without loading the snapshot.
_PRICE_KEYS = {
    "input_tokens": "input_mtok",
    "output_tokens": "output_mtok",
    "cache_read_tokens": "cache_read_mtok",
    "cache_write_tokens": "cache_write_mtok",
    "input_audio_tokens": "input_audio_mtok",
    "cache_audio_read_tokens": "cache_audio_read_mtok",
    "output_audio_tokens": "output_audio_mtok",
    "output_reasoning_tokens": "output_reasoning_mtok",
}


def _default_units() -> dict[str, _Unit]:
    dims: dict[str, dict[str, str]] = {
        "input_tokens": {"family": "tokens", "direction": "input"},
        "output_tokens": {"family": "tokens", "direction": "output"},
        "cache_read_tokens": {"family": "tokens", "direction": "input", "token_type": "cache_read"},
        "cache_write_tokens": {"family": "tokens", "direction": "input", "token_type": "cache_write"},
        "input_audio_tokens": {"family": "tokens", "direction": "input", "modality": "audio"},
        "cache_audio_read_tokens": {
            "family": "tokens",
            "direction": "input",
            "modality": "audio",
            "token_type": "cache_read",
        },
        "output_audio_tokens": {"family": "tokens", "direction": "output", "modality": "audio"},
        "output_reasoning_tokens": {"family": "tokens", "direction": "output", "token_type": "reasoning"},
    }
    return {key: _Unit(key, 1_000_000, d) for key, d in dims.items()}


class RunCost:
    """A run's exact cost so far; unknown for good once one request's price is unknown."""

    __slots__ = ("known", "total")

    def __init__(self, start_nano: int | None = 0) -> None:
        self.total: Amount = 0 if start_nano is None else start_nano * _NANO_IN_YOCTO
        self.known = start_nano is not None

    def add(self, amount: Amount | None) -> int | None:
        """Add one request; returns the run's total in nano-USD (or `None` when unknown)."""
        if amount is None:
            self.known = False
        if not self.known:
            return None
        assert amount is not None
        self.total += amount
        return nano_usd(self.total)
