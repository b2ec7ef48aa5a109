"""Generate ferrule's offline pricing snapshot from the `genai-prices` package on PyPI.

    python tools/pricing_snapshot.py                      # download the newest genai-prices, write data/
    python tools/pricing_snapshot.py --version 0.2.3      # a specific release
    python tools/pricing_snapshot.py --wheel path.whl     # a wheel already downloaded
    python tools/pricing_snapshot.py --check              # verify data/ against its recorded checksum

The genai-prices wheel ships its price data as Python (`genai_prices/data.py`). This tool downloads
the wheel with `pip download` (the ordinary client), imports the package straight from the wheel
(it is pure Python; importing it needs `pydantic`, a dependency of genai-prices, installed in the
interpreter running this tool) and writes two files:

* `data/pricing.json`: the snapshot `ferrule.agent.pricing` loads without genai-prices. It records
  the package name, version and the wheel's SHA-256, and a SHA-256 of its own `data` section
  (canonical JSON, sorted keys) that the loader verifies.
* `data/pricing_examples.json`: costs genai-prices itself computes for a spread of models, usages
  and dates, so ferrule's test suite can check its calculator against the reference
  implementation without installing it.

The data is MIT-licensed by Pydantic Services Inc. (https://github.com/pydantic/genai-prices).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import subprocess
import sys
import tempfile
import zipfile
from datetime import UTC
from datetime import date
from datetime import datetime
from datetime import time
from decimal import Decimal
from pathlib import Path
from typing import Any
from typing import cast

import msgspec

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOT = ROOT / "data" / "pricing.json"
EXAMPLES = ROOT / "data" / "pricing_examples.json"
FORMAT = "ferrule.pricing_snapshot"
VERSION = 1


def download(version: str | None, into: Path) -> Path:
    """`pip download` one genai-prices wheel (no dependencies) into `into`."""
    spec = f"genai-prices=={version}" if version else "genai-prices"
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", str(into), spec],
        check=True,
    )
    wheels = sorted(into.glob("genai_prices-*.whl"))
    if not wheels:
        raise SystemExit(f"pip download produced no genai-prices wheel in {into}")
    return wheels[-1]


def wheel_version(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if name.endswith(".dist-info/METADATA"):
                for line in archive.read(name).decode().splitlines():
                    if line.startswith("Version:"):
                        return line.split(":", 1)[1].strip()
    raise SystemExit(f"{wheel} has no version in its METADATA")


def _decimal(value: Decimal) -> str:
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text or "0"


def _price(value: Any, types: Any) -> Any:
    if isinstance(value, Decimal):
        return _decimal(value)
    if isinstance(value, types.TieredPrices):
        return {
            "base": _decimal(value.base),
            "tiers": [{"start": t.start, "price": _decimal(t.price)} for t in value.tiers],
        }
    raise TypeError(f"unexpected price value {value!r}")


def _prices(model_price: Any, types: Any) -> dict[str, Any]:
    return {
        k: _price(v, types)
        for k, v in model_price.__dict__.items()
        if not k.startswith("_") and v is not None
    }


def _clause(clause: Any, types: Any) -> Any:
    if clause is None:
        return None
    if isinstance(clause, types.ClauseStartsWith):
        return {"starts_with": clause.starts_with}
    if isinstance(clause, types.ClauseEndsWith):
        return {"ends_with": clause.ends_with}
    if isinstance(clause, types.ClauseContains):
        return {"contains": clause.contains}
    if isinstance(clause, types.ClauseRegex):
        return {"regex": clause.regex}
    if isinstance(clause, types.ClauseEquals):
        return {"equals": clause.equals}
    if isinstance(clause, types.ClauseOr):
        return {"or": [_clause(c, types) for c in clause.or_]}
    if isinstance(clause, types.ClauseAnd):
        return {"and": [_clause(c, types) for c in clause.and_]}
    raise TypeError(f"unexpected match clause {clause!r}")


def _time(value: time) -> str:
    if value.tzinfo is not None:
        value = datetime.combine(date(1970, 1, 1), value).astimezone(UTC).time()
    return value.isoformat()


def _constraint(constraint: Any, types: Any) -> Any:
    if constraint is None:
        return None
    if isinstance(constraint, types.StartDateConstraint):
        return {"start_date": constraint.start_date.isoformat()}
    if isinstance(constraint, types.TimeOfDateConstraint):
        return {"start_time": _time(constraint.start_time), "end_time": _time(constraint.end_time)}
    raise TypeError(f"unexpected price constraint {constraint!r}")


def convert(genai: Any) -> dict[str, Any]:
    """The snapshot's `data` section from the imported genai_prices package."""
    types = genai.types
    data: Any = importlib.import_module("genai_prices.data")
    data_units: Any = importlib.import_module("genai_prices.data_units")

    providers: list[dict[str, Any]] = []
    for provider in data.providers:
        models: list[dict[str, Any]] = []
        for model in provider.models:
            raw_prices: Any = model.prices
            if isinstance(raw_prices, list):
                conditional = cast("list[Any]", raw_prices)
                prices = [
                    {"constraint": _constraint(c.constraint, types), "prices": _prices(c.prices, types)}
                    for c in conditional
                ]
            else:
                prices = [{"constraint": None, "prices": _prices(raw_prices, types)}]
            entry: dict[str, Any] = {"id": model.id, "match": _clause(model.match, types), "prices": prices}
            if model.price_variants:
                entry["variants"] = [
                    {
                        "when": dict(v.when),
                        "constraint": _constraint(v.constraint, types),
                        "prices": _prices(v.prices, types),
                    }
                    for v in model.price_variants
                ]
            models.append(entry)
        providers.append(
            {
                "id": provider.id,
                "name": provider.name,
                "api_pattern": provider.api_pattern,
                "provider_match": _clause(provider.provider_match, types),
                "fallback_model_providers": list(provider.fallback_model_providers or []),
                "models": models,
            }
        )
    units = {
        key: {"per": unit["per"], "price_key": unit["price_key"], "dimensions": dict(unit["dimensions"])}
        for key, unit in data_units.unit_data.items()
    }
    return {"units": units, "providers": providers}


def checksum(data: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON (sorted keys) of the snapshot's `data` section."""
    return hashlib.sha256(msgspec.json.encode(data, order="sorted")).hexdigest()


# Usages that exercise the unit decomposition: caches, audio, reasoning, tiers past 200k tokens.
USAGES: list[dict[str, int]] = [
    {"input_tokens": 1000, "output_tokens": 500},
    {"input_tokens": 123_457, "output_tokens": 7_891, "cache_read_tokens": 100_000},
    {
        "input_tokens": 250_000,
        "output_tokens": 12_345,
        "cache_read_tokens": 50_000,
        "cache_write_tokens": 20_000,
    },
    {"input_tokens": 3, "output_tokens": 1},
    {"input_tokens": 40_000, "output_tokens": 900, "input_audio_tokens": 30_000, "output_audio_tokens": 200},
    {
        "input_tokens": 999_999,
        "output_tokens": 65_432,
        "cache_write_tokens": 1_000,
        "cache_write_1h_tokens": 400,
    },
]
WHEN = [datetime(2025, 1, 15, 12, 0, tzinfo=UTC), datetime(2026, 6, 1, 3, 30, tzinfo=UTC)]
EXAMPLE_PROVIDERS = ("openai", "anthropic", "google", "groq", "mistral", "deepseek", "x-ai", "openrouter")


def examples(genai: Any) -> list[dict[str, Any]]:
    """Reference costs from genai-prices for a deterministic spread of models and usages."""
    data: Any = importlib.import_module("genai_prices.data")
    cases: list[dict[str, Any]] = []
    for provider in data.providers:
        if provider.id not in EXAMPLE_PROVIDERS:
            continue
        picked = provider.models[:: max(1, len(provider.models) // 12)]
        for index, model in enumerate(picked):
            usage = USAGES[index % len(USAGES)]
            when = WHEN[index % len(WHEN)]
            try:
                result = genai.calc_price(
                    genai.Usage(**usage), model.id, provider_id=provider.id, genai_request_timestamp=when
                )
            except (LookupError, ValueError):
                continue
            cases.append(
                {
                    "provider": provider.id,
                    "model": model.id,
                    "usage": usage,
                    "timestamp": when.isoformat(),
                    "total_usd": _decimal(result.total_price),
                }
            )
    return cases


def generate(wheel: Path) -> None:
    sys.path.insert(0, str(wheel))  # a pure-Python wheel is an importable zip
    genai_prices: Any = importlib.import_module("genai_prices")

    version = wheel_version(wheel)
    data = convert(genai_prices)
    snapshot = {
        "format": FORMAT,
        "version": VERSION,
        "source": {
            "package": "genai-prices",
            "version": version,
            "wheel": wheel.name,
            "wheel_sha256": hashlib.sha256(wheel.read_bytes()).hexdigest(),
            "license": "MIT (Pydantic Services Inc.)",
            "url": "https://github.com/pydantic/genai-prices",
        },
        "sha256": checksum(data),
        "data": data,
    }
    SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
    SNAPSHOT.write_bytes(msgspec.json.format(msgspec.json.encode(snapshot), indent=1) + b"\n")
    cases = {"source_version": version, "cases": examples(genai_prices)}
    EXAMPLES.write_bytes(msgspec.json.format(msgspec.json.encode(cases), indent=1) + b"\n")
    count = sum(len(p["models"]) for p in data["providers"])
    print(
        f"wrote {SNAPSHOT.relative_to(ROOT)}: genai-prices {version}, {len(data['providers'])} providers, {count} models"
    )
    print(f"wrote {EXAMPLES.relative_to(ROOT)}: {len(cases['cases'])} reference costs")


def check() -> None:
    snapshot = msgspec.json.decode(SNAPSHOT.read_bytes())
    if checksum(snapshot["data"]) != snapshot["sha256"]:
        raise SystemExit(f"{SNAPSHOT} does not match its recorded checksum; regenerate it")
    print(f"{SNAPSHOT.relative_to(ROOT)}: genai-prices {snapshot['source']['version']}, checksum ok")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", help="genai-prices release to download (default: newest)")
    parser.add_argument("--wheel", type=Path, help="use this genai-prices wheel instead of downloading")
    parser.add_argument("--check", action="store_true", help="only verify the snapshot's checksum")
    args = parser.parse_args(argv)
    if args.check:
        check()
        return
    if args.wheel is not None:
        generate(args.wheel.resolve())
        return
    with tempfile.TemporaryDirectory() as tmp:
        generate(download(args.version, Path(tmp)))


if __name__ == "__main__":
    main()
