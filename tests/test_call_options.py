"""The same setting means the same on every provider: one shared `Provider.call_options` path.

A per-call `ModelSettings.timeout` replaces the provider's `Timeouts.total` (longer or shorter), and
`capture_error_body` keeps the provider's own `ErrorBodyPolicy` limits. Checked identically on every
wire API; which limit fired is read from the timeout error's message, never from a clock.
"""

from __future__ import annotations

import json

import pytest

from ferrule.core.errors import ProviderError
from ferrule.core.errors import ProviderTimeoutError
from ferrule.core.http import ErrorBodyPolicy
from ferrule.core.http import Timeouts
from ferrule.core.messages import ModelRequest
from ferrule.core.model import ModelCall
from ferrule.core.settings import ModelSettings
from tests.support.http_server import Conn
from tests.support.http_server import Request
from tests.support.http_server import Serve
from tests.support.http_server import serve as serve  # the fixture
from tests.support.providers import APIS
from tests.support.providers import model_for

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("api", APIS)]

KEY = "test-key-0123456789"


PROMPT = [ModelRequest.user_text_prompt("hi")]


def _hang(conn: Conn, request: Request) -> None:
    conn.hang()


@pytest.mark.parametrize(
    ("provider_total", "call_timeout"), [(0.2, 0.5), (30.0, 0.2)], ids=["longer", "shorter"]
)
async def test_call_timeout_replaces_the_providers_total(
    api: str, provider_total: float, call_timeout: float, serve: Serve
) -> None:
    timeouts = Timeouts(connect=2.0, first_byte=None, read=None, total=provider_total)
    model = model_for(api, serve(_hang), KEY, timeouts=timeouts)
    with pytest.raises(ProviderTimeoutError) as info:
        await model.request(ModelCall(messages=PROMPT, settings=ModelSettings(timeout=call_timeout)))
    assert f"Timeouts.total={call_timeout:g} s" in str(info.value)


async def test_error_body_capture_keeps_the_providers_limits(api: str, serve: Serve) -> None:
    body = json.dumps(
        {"error": {"message": "no", "type": "invalid_request_error", "padding": "x" * 500}}
    ).encode()

    def reject(conn: Conn, request: Request) -> None:
        conn.respond(400, body, {"content-type": "application/json"})

    model = model_for(api, serve(reject), KEY, error_body=ErrorBodyPolicy(max_bytes=32))
    with pytest.raises(ProviderError) as info:
        await model.request(ModelCall(messages=PROMPT, capture_error_body=True))
    assert info.value.body is not None
    assert len(info.value.body) <= 32
    assert info.value.body_truncated
