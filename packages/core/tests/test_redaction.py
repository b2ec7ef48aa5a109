"""The one redaction component: every form of a secret, exceptions scrubbed in place, credentials checked.

The transport tests run against the local HTTP server and assert on everything an application could
reach: the error's text, attributes and chain (`tests.support.leaks`), and every log record at DEBUG.
"""

from __future__ import annotations

import base64
import json
import logging
import urllib.parse
from collections.abc import AsyncIterator
from collections.abc import Callable
from typing import Any

import httpx2
import pytest

from ferrule.core.errors import BadRequestError
from ferrule.core.errors import InvalidCredentialError
from ferrule.core.errors import ProviderError
from ferrule.core.errors import ResponseDecodeError
from ferrule.core.errors import ServerError
from ferrule.core.errors import UserError
from ferrule.core.http import Timeouts
from ferrule.core.http import redact_text
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.model import ModelCall
from ferrule.core.model import ModelStreamEvent
from ferrule.core.provider import Provider
from ferrule.core.provider import redacts_errors
from ferrule.core.redaction import HTTP_LOGGERS
from ferrule.core.redaction import MIN_SECRET_CHARS
from ferrule.core.redaction import REDACTED
from ferrule.core.redaction import Redactor
from ferrule.core.redaction import check_credential
from ferrule.core.redaction import check_header_value
from ferrule.core.url_policy import UrlPolicy
from tests.support.http_server import Conn
from tests.support.http_server import Handler
from tests.support.http_server import LocalServer as Server
from tests.support.http_server import Request
from tests.support.leaks import exception_texts
from tests.support.leaks import find_leaks
from tests.support.leaks import log_texts

from ._support import FixedModel

# Shapes no pattern recognises, so only the configured-secret match can catch them.
SHORT = "k9x2"
PLAIN = "plain-local-key-77"
FAST = Timeouts(connect=2.0, first_byte=2.0, read=2.0, total=5.0)


def provider_for(server: Server, api_key: str | None = PLAIN, **kwargs: Any) -> Provider:
    return Provider(
        base_url=server.url + "/v1",
        api_key=api_key,
        url_policy=UrlPolicy.local(server.url),
        timeouts=FAST,
        **kwargs,
    )


def assert_clean(secret: str, error: BaseException, caplog: pytest.LogCaptureFixture | None = None) -> None:
    texts, http_objects = exception_texts(error)
    assert not http_objects
    assert not find_leaks(secret, texts), find_leaks(secret, texts)
    if caplog is not None:
        logged = log_texts(caplog.records)
        assert not find_leaks(secret, logged), find_leaks(secret, logged)


# -- forms of a secret ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shown",
    [
        PLAIN,
        repr(PLAIN + "\n")[1:-1],
        repr((PLAIN + "\r\n").encode())[2:-1],
        repr(PLAIN + "\x00")[1:-1],
        json.dumps("é" + PLAIN + "\n")[1:-1],
        urllib.parse.quote(PLAIN + "/+= x", safe=""),
        urllib.parse.quote_plus(PLAIN + "/+= x", safe=""),
    ],
    ids=["raw", "repr-lf", "bytes-repr-crlf", "repr-nul", "json", "percent", "query"],
)
def test_every_form_of_a_secret_is_replaced(shown: str) -> None:
    secrets = [PLAIN, PLAIN + "\n", PLAIN + "\r\n", PLAIN + "\x00", "é" + PLAIN + "\n", PLAIN + "/+= x"]
    text = Redactor(secrets).text(f"the server said <{shown}> twice: {shown}")
    assert shown not in text
    assert text.count(REDACTED) == 2


def test_a_secret_with_a_scheme_keeps_the_scheme() -> None:
    redactor = Redactor([f"Bearer {SHORT}"])
    assert redactor.text(f"got Bearer {SHORT} and {SHORT}") == f"got Bearer {REDACTED} and {REDACTED}"


def test_basic_credentials_are_matched_decoded_too() -> None:
    token = base64.b64encode(b"alice:open-sesame").decode()
    redactor = Redactor([f"Basic {token}"])
    text = redactor.text(f"header Basic {token}; user alice:open-sesame; password open-sesame")
    assert token not in text
    assert "open-sesame" not in text


def test_short_forms_are_not_searched_and_longest_wins() -> None:
    assert MIN_SECRET_CHARS == 4
    assert Redactor(["abc"]).text("abcdef") == "abcdef"
    redactor = Redactor(["abcd", "abcdefgh"])
    assert redactor.text("xx abcdefgh yy abcd") == f"xx {REDACTED} yy {REDACTED}"


def test_shapes_are_caught_without_configuration() -> None:
    text = Redactor().text("a sk-proj-0123456789abcdefghij and ya29.a0AfB_0123456789abcdefghijkl")
    assert "sk-proj" not in text
    assert "ya29" not in text
    # The function form is the same redactor.
    assert redact_text(f"x {SHORT} y", [SHORT]) == f"x {REDACTED} y"


def test_prefix_hides_a_secret_cut_at_the_end() -> None:
    assert Redactor([PLAIN]).prefix("body ends with " + PLAIN[:7], complete=False).endswith(REDACTED)
    assert Redactor([PLAIN]).prefix("body ends with " + PLAIN[:7], complete=True).endswith(PLAIN[:7])


# -- exceptions -----------------------------------------------------------------------------------


def test_scrub_cleans_args_notes_attributes_and_ferrule_links() -> None:
    inner = ResponseDecodeError(f"inner {SHORT}", details={"seen": [SHORT, {"k": (SHORT,)}]})
    outer = ServerError(f"outer {SHORT}", code=SHORT, request_id=SHORT)
    outer.add_note(f"note {SHORT}")
    outer.__cause__ = inner
    Redactor([SHORT]).scrub(outer)
    assert outer.__cause__ is inner
    assert_clean(SHORT, outer)
    assert outer.code == REDACTED
    assert outer.__notes__ == [f"note {REDACTED}"]


def test_scrub_cuts_foreign_links_and_survives_cycles() -> None:
    request = httpx2.Request("GET", "http://127.0.0.1/", headers={"authorization": f"Bearer {SHORT}"})
    foreign = httpx2.ConnectError("boom", request=request)
    error = ServerError("failed")
    error.__context__ = foreign
    error.__cause__ = foreign
    other = BadRequestError("other")
    other.__context__ = error
    error.__context__ = other  # a cycle between ferrule errors
    Redactor([SHORT]).scrub(error)
    assert error.__cause__ is None
    assert error.__context__ is other
    assert_clean(SHORT, error)


def test_scrub_cleans_a_foreign_top_level_exception_in_place() -> None:
    error = KeyError(f"missing {SHORT}")
    Redactor([SHORT]).scrub(error)
    assert SHORT not in str(error)


def test_redactor_as_a_context_manager_scrubs_what_leaves_the_block() -> None:
    with pytest.raises(ServerError) as info, Redactor([SHORT]):
        raise ServerError(f"echo {SHORT}")
    assert SHORT not in str(info.value)


# -- credentials checked before any I/O ------------------------------------------------------------


@pytest.mark.parametrize(
    ("suffix", "reason"),
    [("\n", "line feed"), ("\r\n", "carriage return"), ("\x00", "NUL"), ("é", "non-ASCII"), (" ", "space")],
)
def test_unsendable_keys_are_refused_without_showing_them(
    suffix: str, reason: str, serve: Callable[[Handler], Server]
) -> None:
    server = serve(lambda conn, request: conn.respond(200, b"{}"))
    with pytest.raises(InvalidCredentialError, match=reason) as info:
        provider_for(server, api_key=PLAIN + suffix)
    assert isinstance(info.value, UserError)
    assert PLAIN not in str(info.value)
    assert info.value.__context__ is None
    assert server.requests == []


def test_short_keys_are_refused() -> None:
    with pytest.raises(InvalidCredentialError, match="at least 4"):
        check_credential("k1")
    check_credential(SHORT)


def test_header_values_are_checked_at_construction() -> None:
    with pytest.raises(InvalidCredentialError, match="'x-api-key' header"):
        Provider(base_url="https://api.example.com", headers={"x-api-key": PLAIN + "\n"})
    with pytest.raises(UserError, match="'x-note' header") as info:
        Provider(base_url="https://api.example.com", headers={"x-note": "café"})
    assert "café" not in str(info.value)
    check_header_value("authorization", f"Bearer {PLAIN}")


# -- the transport ---------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_non_ascii_request_header_is_a_user_error_before_io(serve: Callable[[Handler], Server]) -> None:
    server = serve(lambda conn, request: conn.respond(200, b"{}"))
    async with provider_for(server) as provider:
        with pytest.raises(UserError, match="non-ASCII") as info:
            await provider.request("GET", "x", headers={"x-api-key": "é" + PLAIN})
    assert info.value.__context__ is None
    assert PLAIN not in str(info.value)
    assert server.requests == []


@pytest.mark.anyio
@pytest.mark.parametrize("ending", ["\n", "\r\n", "\x00"], ids=["lf", "crlf", "nul"])
async def test_transport_error_shows_no_escaped_key(
    ending: str, serve: Callable[[Handler], Server], caplog: pytest.LogCaptureFixture
) -> None:
    # A per-request credential header the HTTP client refuses: its error shows the repr-escaped value.
    caplog.set_level(logging.DEBUG)
    server = serve(lambda conn, request: conn.respond(200, b"{}"))
    async with provider_for(server, api_key=None) as provider:
        with pytest.raises(BadRequestError) as info:
            await provider.request("GET", "x", headers={"x-api-key": SHORT + ending})
    assert "could not be sent" in str(info.value)
    assert_clean(SHORT, info.value, caplog)


@pytest.mark.anyio
async def test_query_secret_and_basic_credentials_echoed_by_the_server(
    serve: Callable[[Handler], Server], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    basic = base64.b64encode(f"svc:{PLAIN}".encode()).decode()

    def echo(conn: Conn, request: Request) -> None:
        decoded = base64.b64decode(request.headers["authorization"].split()[1]).decode()
        body = {"error": {"message": f"target {request.target} from {decoded}"}}
        conn.respond(500, json.dumps(body).encode(), {"x-request-id": f"{SHORT}-{PLAIN}"})

    server = serve(echo)
    async with provider_for(server, api_key=None, headers={"authorization": f"Basic {basic}"}) as provider:
        with pytest.raises(ServerError) as info:
            await provider.request("GET", "x", params={"api_key": SHORT + "/+="})
    assert "target" in info.value.message
    assert_clean(PLAIN, info.value, caplog)
    assert_clean(urllib.parse.quote_plus(SHORT + "/+=", safe=""), info.value, caplog)


@pytest.mark.anyio
async def test_httpcore_debug_logs_of_echoed_response_headers_are_redacted(
    serve: Callable[[Handler], Server], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    for name in HTTP_LOGGERS:
        caplog.set_level(logging.DEBUG, logger=name)
    server = serve(lambda conn, request: conn.respond(200, b"{}", {"x-echo": PLAIN}))
    async with provider_for(server) as provider:
        response = await provider.request("GET", "x")
    assert response.headers["x-echo"] == PLAIN  # the response itself is the application's data
    assert any(r.name.startswith("httpcore2") and REDACTED in r.getMessage() for r in caplog.records)
    assert not find_leaks(PLAIN, log_texts(caplog.records))
    # Outside a provider's request, the same loggers are left alone.
    logging.getLogger("httpcore2.http11").debug("unrelated %s", PLAIN)
    assert caplog.records[-1].getMessage() == f"unrelated {PLAIN}"


class _Listing(Provider):
    @redacts_errors
    async def describe(self) -> str:
        response = await self.request("GET", "x")
        raise ResponseDecodeError(f"unexpected listing {response.content.decode()}")


@pytest.mark.anyio
async def test_provider_methods_that_parse_responses_scrub_their_errors(
    serve: Callable[[Handler], Server],
) -> None:
    server = serve(lambda conn, request: conn.respond(200, f'{{"id": "{PLAIN}"}}'.encode()))
    async with _Listing(
        base_url=server.url, api_key=PLAIN, url_policy=UrlPolicy.local(server.url)
    ) as provider:
        with pytest.raises(ResponseDecodeError) as info:
            await provider.describe()
    assert_clean(PLAIN, info.value)


class _EchoModel(FixedModel):
    """A model whose 'codec' quotes the key in an in-band error."""

    def __init__(self, redactor: Redactor | None) -> None:
        super().__init__("echo")
        self._redactor = redactor

    @property
    def redactor(self) -> Redactor | None:
        return self._redactor

    async def _request(self, call: ModelCall) -> ModelResponse:
        try:
            raise ValueError(f"decoder saw {PLAIN}")
        except ValueError:
            raise ServerError(f"in-band error: {PLAIN}") from None

    async def _stream(self, call: ModelCall) -> AsyncIterator[ModelStreamEvent]:
        raise ServerError(f"stream error event: {PLAIN}")
        yield  # pragma: no cover - makes this an async generator


@pytest.mark.anyio
async def test_model_clients_scrub_codec_errors_with_their_redactor() -> None:
    call = ModelCall(messages=[ModelRequest.user_text_prompt("hi")])
    model = _EchoModel(Redactor([PLAIN]))
    with pytest.raises(ProviderError) as info:
        await model.request(call)
    assert_clean(PLAIN, info.value)
    assert info.value.__context__ is None  # the decoder's own exception is cut
    with pytest.raises(ProviderError) as streamed:
        async for _ in model.stream(call):
            pass
    assert_clean(PLAIN, streamed.value)
    # A model without a redactor leaves its errors as they are.
    with pytest.raises(ProviderError, match=PLAIN):
        await _EchoModel(None).request(call)
