"""Entry point `vllm`: `"vllm:<model>"`."""

from __future__ import annotations

from ferrule.core.model import Model

from .._entry import infer


def infer_model(model_name: str) -> Model:
    """The model for `"vllm:<model_name>"`, with credentials from the environment."""
    return infer("vllm", model_name)
