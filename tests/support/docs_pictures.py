"""The Mermaid pictures of docs/images: `tools/docs/render_mermaid.py` as a package's tests load it,
to check that the committed pictures were rendered from the graphs and plans as they are now."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

__all__ = ["render_mermaid_tool"]

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "docs" / "render_mermaid.py"


def render_mermaid_tool(prefix: str) -> ModuleType:
    """`tools/docs/render_mermaid.py` as a new module whose `PICTURES` keep only the pictures named
    `prefix...`: the others are drawn with a distribution the calling package does not depend on.
    Skips where the checkout has no tools/docs or docs/examples (the pictures are drawn from them)."""
    if not SCRIPT.is_file() or not (ROOT / "docs" / "examples").is_dir():
        pytest.skip("tools/docs and docs/examples are not part of this checkout")
    spec = importlib.util.spec_from_file_location("render_mermaid", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module: Any = importlib.util.module_from_spec(spec)  # its names are read and set below
    spec.loader.exec_module(module)
    pictures = {name: produce for name, produce in module.PICTURES.items() if name.startswith(prefix)}
    assert pictures, f"render_mermaid.py draws no picture named {prefix}..."
    module.PICTURES = pictures
    return module
