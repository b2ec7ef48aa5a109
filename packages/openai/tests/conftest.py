"""Test support for ferrule-openai: the shared local HTTP/1.1 server (`tests.support.http_server`)."""

from __future__ import annotations

from tests.support.http_server import serve as serve
