"""Resolving `"provider:model"` strings to models through installed provider packages.

Provider packages register an entry point in the group `ferrule.providers` whose name is the
prefix (`openai`, `anthropic`, `google-gla`, ...) and whose value is `infer_model(model_name) ->
Model`. `test` is built in and gives a [`TestModel`][ferrule.agent.testing.TestModel].
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points
from typing import cast

from ferrule.core.errors import UserError
from ferrule.core.model import Model

__all__ = ["ENTRY_POINT_GROUP", "KNOWN_PACKAGES", "UnknownModelError", "infer_model", "installed_providers"]

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
    "bedrock": "ferrule-bedrock",
    "mistral": "ferrule-mistral",
    "cohere": "ferrule-cohere",
    "xai": "ferrule-xai",
}
"""The distribution that provides each well-known prefix (for the error message)."""


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
        package = KNOWN_PACKAGES.get(prefix, f"ferrule-{prefix}")
        installed = ", ".join(installed_providers())
        raise UnknownModelError(
            f"no installed provider handles {prefix!r} (in {model!r}); install it with `pip install {package}`. "
            f"Installed prefixes: {installed}"
        )
    factory = cast("Callable[[str], Model]", found.load())
    resolved = factory(name)
    if not isinstance(resolved, Model):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(
            f"the {prefix!r} provider's infer_model returned {type(resolved).__name__}, not a Model"
        )
    return resolved
