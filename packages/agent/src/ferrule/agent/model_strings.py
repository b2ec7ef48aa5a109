"""Resolving `"provider:model"` strings to models through installed provider packages.

Provider packages register an entry point in the group `ferrule.providers` whose name is the
prefix (`openai`, `anthropic`, `google-gla`, ...) and whose value is `infer_model(model_name) ->
Model`. `test` (alone, or `test:<name>`) is built in and gives a [`TestModel`][ferrule.agent.testing.TestModel].
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import EntryPoint
from importlib.metadata import entry_points
from typing import cast

from ferrule.core.errors import UserError
from ferrule.core.model import Model

__all__ = [
    "ENTRY_POINT_GROUP",
    "KNOWN_PACKAGES",
    "UnknownModelError",
    "infer_model",
    "installed_providers",
    "unknown_provider_message",
]

ENTRY_POINT_GROUP = "ferrule.providers"
"""The entry point group provider packages register their `infer_model` under."""

KNOWN_PACKAGES: dict[str, str] = {
    "openai": "ferrule-openai",
    "openai-chat": "ferrule-openai",
    "openai-responses": "ferrule-openai",
    "azure": "ferrule-openai",
    "openrouter": "ferrule-openai",
    "ollama": "ferrule-openai",
    "vllm": "ferrule-openai",
    "lmstudio": "ferrule-openai",
    "groq": "ferrule-openai",
    "deepseek": "ferrule-openai",
    "together": "ferrule-openai",
    "fireworks": "ferrule-openai",
    "cerebras": "ferrule-openai",
    "huggingface": "ferrule-openai",
    "anthropic": "ferrule-anthropic",
    "google": "ferrule-google",
    "google-gla": "ferrule-google",
    "google-vertex": "ferrule-google",
    "gemini": "ferrule-google",
    "llamacpp": "ferrule-llamacpp",
}
"""The ferrule distribution that provides each well-known prefix (for the error message)."""

_NOT_YET: frozenset[str] = frozenset({"bedrock", "mistral", "cohere", "xai", "grok"})
"""Prefixes PydanticAI knows that no ferrule distribution provides yet (never a guessed package name)."""


class UnknownModelError(UserError):
    """A model string names a provider prefix that no installed package provides."""


def _entry_points() -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def installed_providers() -> list[str]:
    """The model-string prefixes the installed provider packages support, sorted (plus `test`)."""
    return sorted({*_entry_points(), "test"})


def infer_model(model: Model | str) -> Model:
    """A model instance for `model`: returned as is, or resolved from `"provider:model"`."""
    if isinstance(model, Model):
        return model
    if model == "test":  # PydanticAI's spelling of the test model
        from .testing import TestModel

        return TestModel()
    if not isinstance(model, str) or ":" not in model:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(
            f"model {model!r} is not a Model or a 'provider:model' string (e.g. 'openai:gpt-5-mini')"
        )
    prefix, _, name = model.partition(":")
    if not prefix or not name:
        raise UserError(f"model string {model!r} needs both a provider prefix and a model name")
    if prefix == "test":
        from .testing import TestModel

        return TestModel(model_name=name)
    found = _entry_points().get(prefix)
    if found is None:
        raise UnknownModelError(f"{unknown_provider_message(prefix)} (in {model!r})")
    factory = cast("Callable[[str], Model]", found.load())
    resolved = factory(name)
    if not isinstance(resolved, Model):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(
            f"the {prefix!r} provider's infer_model returned {type(resolved).__name__}, not a Model"
        )
    return resolved


def unknown_provider_message(prefix: str, installed: list[str] | None = None) -> str:
    """Why no installed provider handles `prefix`, and what to do.

    A prefix of a ferrule distribution names that distribution and how to install it from the
    checkout; any other prefix gets the closest known prefixes by edit distance. It never names a
    package derived from the prefix (`ferrule-<typo>` would send users to a typosquatted name).
    """
    installed = installed if installed is not None else installed_providers()
    listed = f"Installed prefixes: {', '.join(installed)}"
    package = KNOWN_PACKAGES.get(prefix)
    if package is not None:
        return (
            f"the {prefix!r} provider is in {package}, which is not installed; install it from the ferrule "
            f"checkout with `python tools/install.py {package}` (the name will be published on PyPI). {listed}"
        )
    if prefix in _NOT_YET:
        return f"ferrule has no {prefix!r} provider yet. {listed}"
    close = _closest(prefix, sorted({*KNOWN_PACKAGES, *installed}))
    hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
    return f"no provider handles the prefix {prefix!r}; {hint}{listed}"


def _closest(word: str, candidates: list[str]) -> list[str]:
    """The candidates nearest to `word` by edit distance, within a third of its length (at least 1)."""
    limit = max(1, len(word) // 3)
    scored = [(d, c) for c in candidates if (d := _distance(word.lower(), c)) <= limit]
    if not scored:
        return []
    best = min(d for d, _ in scored)
    return [c for d, c in scored if d == best][:3]


def _distance(a: str, b: str) -> int:
    """Levenshtein distance (insertions, deletions, substitutions; a swap of neighbours counts one)."""
    if len(a) > 64 or len(b) > 64:  # untrusted input: model strings are short, so are the candidates
        return max(len(a), len(b))
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            cost = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cost = min(cost, previous2[j - 2] + 1)
            current.append(cost)
        previous2, previous = previous, current
    return previous[-1]
