"""Shared pytest configuration: every async test runs on both anyio backends."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# Make the shared test support (`tests.support`) importable from every package's tests.
sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture(params=["asyncio", "trio"], scope="session")
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return request.param
