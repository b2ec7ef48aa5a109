"""The entry point of this package: `llamacpp:<model>`.

The entry point of group `ferrule.providers` names the function of this module spelled like its
prefix (`ferrule.providers.llamacpp._entry:llamacpp`).
"""

from __future__ import annotations

from pathlib import Path

from ferrule.core.model import Model

from ._catalog import DEFAULT_MODEL
from ._model import LocalLlamaCppModel

__all__ = ["infer_model", "llamacpp"]


def llamacpp(model_name: str) -> Model:
    """`llamacpp:<name>`: a catalog name (`qwen2.5-coder-1.5b`, `qwen2.5-coder-0.5b`) or the path of a
    `.gguf` file. No credentials are needed; the server starts on first use."""
    name = model_name.strip()
    if name.lower().endswith(".gguf"):
        return LocalLlamaCppModel(Path(name).expanduser())
    return LocalLlamaCppModel(name or DEFAULT_MODEL)


infer_model = llamacpp
"""`llamacpp` under its public name, `ferrule.providers.llamacpp.infer_model`."""
