"""The `../shared/` folder beside the checkout: recorded provider traffic that tests read in place.

Outside CI a test that needs a missing folder skips. Under CI (the `CI` environment variable set, as
CI services and `.ci/run` set it) it fails instead: CI has the folder, and a test that skipped there
would pass without checking anything.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

__all__ = ["SHARED", "in_ci", "missing_reason", "require_shared", "shared_path"]

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
"""The shared folder: a sibling of the repository root, never copied into it."""


def in_ci() -> bool:
    """Whether the tests run under CI (`CI` set to anything but an empty, `0` or `false` value)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def missing_reason(path: Path) -> str:
    """Why a test that needs `path` cannot run."""
    return f"{path} not found (the shared/ folder beside the checkout holds the recorded provider traffic)"


def shared_path(relative: str) -> Path | None:
    """`../shared/<relative>` when it exists, else `None` so the caller skips; under CI, a failure.

    Safe at import time (module-level `skipif` marks, parameter lists): under CI the failure is a
    collection error, so the run fails instead of skipping every test of the module.
    """
    path = SHARED / relative
    if path.exists():
        return path
    if in_ci():
        pytest.fail(f"{missing_reason(path)}; CI is set, so the tests that read it must run", pytrace=False)
    return None


def require_shared(relative: str) -> Path:
    """`../shared/<relative>` for the calling test: skips it when absent, fails it under CI."""
    path = shared_path(relative)
    if path is None:
        pytest.skip(missing_reason(SHARED / relative))
    return path
