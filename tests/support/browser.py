"""Headless Chromium for the tests that render pages: the flags that keep it offline and quiet, and
the rule for a missing browser (skip outside CI, fail under CI, which installs it from .ci/apt.txt)."""

from __future__ import annotations

from typing import NoReturn

import pytest

from tests.support.shared import in_ci

__all__ = ["HEADLESS_FLAGS", "unavailable"]

HEADLESS_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
"""Chromium without a window or GPU that reaches nothing on its own (no updates, sync or background
requests); a test adds its own profile folder and whatever its page needs."""


def unavailable(reason: str) -> NoReturn:
    """Skip outside CI; in CI a missing browser or toolchain is a failure, never a silent skip."""
    if in_ci():
        pytest.fail(f"{reason} (CI must install it: see .ci/run and .ci/apt.txt)")
    pytest.skip(reason)
