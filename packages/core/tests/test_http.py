"""Transport building blocks: Retry-After, redaction, request IDs, status classes, error mapping."""

from __future__ import annotations

import json

import pytest

from ferrule.core.errors import AuthenticationError
from ferrule.core.errors import BadRequestError
from ferrule.core.errors import ErrorCategory
from ferrule.core.errors import ProviderTimeoutError
from ferrule.core.errors import RateLimitError
from ferrule.core.errors import ServerError
from ferrule.core.http import MAX_REQUEST_ID_LENGTH
from ferrule.core.http import REQUEST_ID_HEADERS
from ferrule.core.http import ErrorBodyPolicy
from ferrule.core.http import HttpLimits
from ferrule.core.http import HttpResponse
from ferrule.core.http import Timeouts
from ferrule.core.http import classify_status
from ferrule.core.http import error_from_response
from ferrule.core.http import parse_error_body
from ferrule.core.http import parse_retry_after
from ferrule.core.http import redact_headers
from ferrule.core.http import redact_text
from ferrule.core.http import request_id_from_headers

SECRET = "sk-test-SENTINEL-0123456789abcdef"

# -- configuration -------------------------------------------------------------------------------


def test_defaults() -> None:
    assert Timeouts() == Timeouts(connect=10.0, first_byte=None, read=300.0, total=600.0)
    limits = HttpLimits()
    assert limits.max_response_bytes == 32 * 1024 * 1024
    assert limits.max_stream_line_bytes == 4 * 1024 * 1024
    assert limits.max_error_body_bytes == 64 * 1024
    assert ErrorBodyPolicy() == ErrorBodyPolicy(capture=False, max_bytes=4096)


@pytest.mark.parametrize("bad", [0, -1.0, float("inf"), float("nan")])
def test_invalid_timeouts(bad: float) -> None:
    with pytest.raises(ValueError, match=r"Timeouts\.read"):
        Timeouts(read=bad)


def test_invalid_limits() -> None:
    with pytest.raises(ValueError, match="max_response_bytes"):
        HttpLimits(max_response_bytes=0)
    with pytest.raises(ValueError, match="max_bytes"):
        ErrorBodyPolicy(max_bytes=0)


def test_http_response_is_a_frozen_struct() -> None:
    response = HttpResponse(status=200, headers={"a": "b"}, content=b"x", request_id="r", elapsed=0.5)
    with pytest.raises(AttributeError):
        response.status = 500  # type: ignore[misc]


# -- Retry-After ---------------------------------------------------------------------------------

DATE = "Wed, 21 Oct 2015 07:28:00 GMT"
NOW = 1445412480.0  # DATE as Unix time


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("120", 120.0),
        (" 7 ", 7.0),
        ("0", 0.0),
        ("1.5", 1.5),
        ("-5", 0.0),
        ("Wed, 21 Oct 2015 07:28:30 GMT", 30.0),
        ("Wednesday, 21-Oct-15 07:29:00 GMT", 60.0),  # RFC 850
        ("Wed Oct 21 07:28:10 2015", 10.0),  # asctime
        ("Wed, 21 Oct 2015 07:00:00 GMT", 0.0),  # in the past
        ("soon", None),
        ("", None),
        ("inf", None),
        ("1e3", None),
        (None, None),
    ],
)
def test_parse_retry_after(value: str | None, expected: float | None) -> None:
    assert parse_retry_after(value, now=NOW) == expected


def test_retry_after_date_uses_the_response_date_against_clock_skew() -> None:
    # The local clock is an hour fast; the server's Date header still gives the right delay.
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", DATE, now=NOW + 3600) == 30.0
    # A garbage Date header falls back to the local clock.
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", "garbage", now=NOW) == 30.0


# -- redaction -----------------------------------------------------------------------------------


def test_redact_headers() -> None:
    headers = {
        "Authorization": "Bearer x",
        "X-Api-Key": "k",
        "api-key": "k",
        "x-goog-api-key": "k",
        "Cookie": "c",
        "Proxy-Authorization": "p",
        "X-Amz-Security-Token": "t",
        "x-client-secret": "s",
        "anthropic-version": "2023-06-01",
        "Content-Type": "application/json",
        "x-request-id": "req_1",
    }
    redacted = redact_headers(headers)
    assert redacted == {
        "authorization": "<redacted>",
        "x-api-key": "<redacted>",
        "api-key": "<redacted>",
        "x-goog-api-key": "<redacted>",
        "cookie": "<redacted>",
        "proxy-authorization": "<redacted>",
        "x-amz-security-token": "<redacted>",
        "x-client-secret": "<redacted>",
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
        "x-request-id": "req_1",
    }


def test_redact_headers_accepts_pairs_and_joins_repeats() -> None:
    assert redact_headers([("A", "1"), ("a", "2"), ("Set-Cookie", "s")]) == {
        "a": "1, 2",
        "set-cookie": "<redacted>",
    }


def test_redact_text() -> None:
    text = f"key {SECRET} and header Authorization: Bearer abc.def-123456 and sk-proj-AAAAAAAAAAAAAAAAAAAA"
    redacted = redact_text(text, [SECRET])
    assert SECRET not in redacted
    assert "abc.def-123456" not in redacted
    assert "AAAAAAAAAAAAAAAAAAAA" not in redacted
    assert "Bearer <redacted>" in redacted
    # Short "secrets" are not searched for, and ordinary text is left alone.
    assert redact_text("a basic bearer of news", ["x"]) == "a basic bearer of news"


# -- request IDs and statuses --------------------------------------------------------------------


def test_request_id_headers_in_preference_order() -> None:
    assert REQUEST_ID_HEADERS[0] == "x-request-id"
    assert request_id_from_headers({"request-id": "b", "x-request-id": "a"}) == "a"
    assert request_id_from_headers({"x-amzn-requestid": "aws"}) == "aws"
    assert request_id_from_headers({"cf-ray": "ray"}) == "ray"
    assert request_id_from_headers({"content-type": "x"}) is None


def test_request_id_is_bounded_and_printable() -> None:
    assert request_id_from_headers({"x-request-id": "a b\x1bc"}) == "abc"
    exact = "r" * MAX_REQUEST_ID_LENGTH
    assert request_id_from_headers({"x-request-id": exact}) == exact
    assert request_id_from_headers({"x-request-id": exact + "s"}) == exact
    # Whatever is not printable ASCII, or is a space, goes: DEL, a tab, non-ASCII letters.
    assert request_id_from_headers({"x-request-id": "a\x7fb\tc\u00e9d~!"}) == "abcd~!"
    assert request_id_from_headers({"x-request-id": " \u00e9 "}) is None
    # Cleaned from at most twice the bound, then cut to it.
    assert (
        request_id_from_headers({"x-request-id": " " * MAX_REQUEST_ID_LENGTH + "x" * 1000})
        == "x" * MAX_REQUEST_ID_LENGTH
    )


@pytest.mark.parametrize(
    ("status", "category"),
    [
        (400, ErrorCategory.BAD_REQUEST),
        (404, ErrorCategory.BAD_REQUEST),
        (413, ErrorCategory.BAD_REQUEST),
        (422, ErrorCategory.BAD_REQUEST),
        (302, ErrorCategory.BAD_REQUEST),
        (401, ErrorCategory.AUTH),
        (403, ErrorCategory.AUTH),
        (408, ErrorCategory.TIMEOUT),
        (429, ErrorCategory.RATE_LIMIT),
        (500, ErrorCategory.SERVER),
        (503, ErrorCategory.SERVER),
        (529, ErrorCategory.SERVER),
    ],
)
def test_classify_status(status: int, category: ErrorCategory) -> None:
    assert classify_status(status) is category


def test_classify_success_is_an_error() -> None:
    with pytest.raises(ValueError, match="success"):
        classify_status(200)


# -- error bodies --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            b'{"error": {"message": "bad model", "type": "invalid_request_error", "code": "model_not_found"}}',
            ("model_not_found", "bad model"),
        ),
        (
            b'{"error": {"message": "m", "type": "invalid_request_error", "code": null}}',
            ("invalid_request_error", "m"),
        ),
        (
            b'{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}',
            ("overloaded_error", "Overloaded"),
        ),
        (
            b'[{"error": {"code": 400, "message": "bad", "status": "INVALID_ARGUMENT"}}]',
            ("INVALID_ARGUMENT", "bad"),
        ),
        (b'{"error": {"code": 400, "message": "bad"}}', ("400", "bad")),
        (b'{"error": "model \\"x\\" not found"}', (None, 'model "x" not found')),
        (b'{"object": "error", "message": "m", "type": "t", "code": 3}', ("t", "m")),
        (b'{"detail": "Not Found"}', (None, "Not Found")),
        (
            b'{"detail": [{"loc": ["body"], "msg": "field required"}]}',
            (None, '[{"loc":["body"],"msg":"field required"}]'),
        ),
        (b"<html>502 Bad Gateway</html>", (None, None)),
        (b"", (None, None)),
        (b"[[[[" * 20000, (None, None)),
        (b'"just a string"', (None, None)),
    ],
)
def test_parse_error_body(body: bytes, expected: tuple[str | None, str | None]) -> None:
    assert parse_error_body(body) == expected


def test_parse_error_body_size_cap() -> None:
    body = json.dumps({"error": {"message": "x" * 100}}).encode()
    assert parse_error_body(body, max_bytes=len(body)) == (None, "x" * 100)
    assert parse_error_body(body, max_bytes=len(body) - 1) == (None, None)


def _error(status: int, body: bytes = b"", headers: dict[str, str] | None = None, **kwargs: object):
    return error_from_response(status, headers or {}, body, provider_name="acme", model_name="m1", **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (400, BadRequestError),
        (401, AuthenticationError),
        (408, ProviderTimeoutError),
        (429, RateLimitError),
        (500, ServerError),
        (503, ServerError),
    ],
)
def test_error_class_follows_the_status(status: int, cls: type) -> None:
    error = _error(status, b'{"error": {"message": "boom", "code": "c1"}}', {"x-request-id": "req_9"})
    assert type(error) is cls
    assert error.status_code == status
    assert error.request_id == "req_9"
    assert error.code == "c1"
    assert error.provider_name == "acme"
    assert error.model_name == "m1"
    assert "boom" in str(error)
    assert "req_9" in str(error)
    assert error.body is None


def test_error_without_a_json_body_uses_the_reason_phrase() -> None:
    error = _error(502, b"<html>upstream</html>")
    assert error.message == "Bad Gateway"
    assert error.code is None


def test_category_override() -> None:
    error = _error(400, category=ErrorCategory.CONTENT_FILTER)
    assert error.category is ErrorCategory.CONTENT_FILTER


def test_retry_after_headers() -> None:
    assert _error(429, headers={"retry-after": "7"}).retry_after == 7.0
    assert _error(429, headers={"retry-after-ms": "1500", "retry-after": "2"}).retry_after == 1.5
    dated = _error(503, headers={"retry-after": "Wed, 21 Oct 2015 07:28:30 GMT", "date": DATE})
    assert dated.retry_after == 30.0
    assert "retry after 7 s" in str(_error(429, headers={"retry-after": "7"}))


def test_redirect_error_names_the_location_without_credentials() -> None:
    error = _error(302, headers={"location": "https://u:pw@other.example/v1?token=abc"})
    assert isinstance(error, BadRequestError)
    assert "never followed" in error.message
    assert "other.example" in error.message
    assert "pw" not in str(error)
    assert "abc" not in str(error)


def test_body_is_not_captured_by_default_but_message_is_redacted() -> None:
    body = json.dumps({"error": {"message": f"bad key {SECRET}", "code": f"c-{SECRET}"}}).encode()
    error = _error(401, body, secrets=[SECRET])
    assert error.body is None
    assert SECRET not in str(error)
    assert SECRET not in (error.code or "")
    assert "<redacted>" in error.message


def test_body_capture_is_bounded_and_redacted() -> None:
    body = f"prefix {SECRET} suffix".encode()
    policy = ErrorBodyPolicy(capture=True, max_bytes=len(body))
    exact = _error(400, body, policy=policy, secrets=[SECRET])
    assert exact.body == "prefix <redacted> suffix"
    assert exact.body_truncated is False
    past = _error(400, body + b"!", policy=policy, secrets=[SECRET])
    assert past.body == "prefix <redacted> suffix"
    assert past.body_truncated is True
    incomplete = _error(400, body, policy=policy, secrets=[SECRET], body_complete=False)
    assert incomplete.body_truncated is True


def test_captured_prefix_never_ends_in_part_of_a_secret() -> None:
    body = f"xx {SECRET}".encode()
    cut = len("xx ") + 12  # the prefix ends 12 characters into the secret
    error = _error(400, body, policy=ErrorBodyPolicy(capture=True, max_bytes=cut), secrets=[SECRET])
    assert error.body == "xx <redacted>"
    assert SECRET[:12] not in (error.body or "")


def test_message_and_code_caps() -> None:
    policy = ErrorBodyPolicy(max_message_chars=10, max_code_chars=3)
    exact = _error(400, b'{"error": {"message": "0123456789", "code": "abc"}}', policy=policy)
    assert exact.message == "0123456789"
    assert exact.code == "abc"
    past = _error(400, b'{"error": {"message": "0123456789X", "code": "abcd"}}', policy=policy)
    assert past.message == "0123456789…"
    assert past.code == "abc"


def test_parsed_code_and_message_from_the_caller() -> None:
    error = _error(400, b"ignored", parsed=("my_code", "my message"))
    assert error.code == "my_code"
    assert error.message.startswith("my message")
