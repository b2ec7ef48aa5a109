"""Entry point `ollama`: `"ollama:<model>"`."""

from __future__ import annotations

from ferrule.core.model import Model

from .._entry import infer


def infer_model(model_name: str) -> Model:
    """The model for `"ollama:<model_name>"`, with credentials from the environment."""
    return infer("ollama", model_name)
