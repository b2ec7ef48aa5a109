"""Test support for ferrule-google: the shared local HTTP/1.1 server (`tests.support.http_server`).

Google's tests check a request's path and its query string apart, so `request.path` leaves the
query out here (`request.target` is the whole request target).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.http_server import Request
from tests.support.http_server import Serve
from tests.support.http_server import serve_with


class GoogleRequest(Request):
    """A request whose `path` is the request target without its query string."""

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]


@pytest.fixture
def serve() -> Iterator[Serve]:
    """Start local servers with the given handlers; all are stopped at the end of the test."""
    with serve_with(GoogleRequest) as start:
        yield start
