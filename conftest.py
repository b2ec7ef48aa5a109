"""Shared pytest configuration: every async test runs on both anyio backends."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["asyncio", "trio"], scope="session")
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return request.param
