"""Transport building blocks shared by every provider: timeouts, limits, errors, redaction.

The HTTP client itself lives in [`Provider`][ferrule.core.provider.Provider]; this module holds the
provider-neutral pieces it is made of, so that a custom transport (or a test) can apply exactly the
same rules: [`Timeouts`][ferrule.core.http.Timeouts], [`HttpLimits`][ferrule.core.http.HttpLimits],
the opt-in [`ErrorBodyPolicy`][ferrule.core.http.ErrorBodyPolicy], `Retry-After` parsing, request-ID
capture, header and text redaction, and the mapping of an error response to the right
[`ProviderError`][ferrule.core.errors.ProviderError] subclass.
"""

from __future__ import annotations

import functools
import http
import math
import re
import time
from collections.abc import Iterable
from collections.abc import Mapping
from datetime import UTC
from typing import Any
from typing import Final
from typing import cast

import msgspec

from . import bounded_json
from .errors import ERROR_CLASSES
from .errors import ErrorCategory
from .errors import ProviderError
from .redaction import REDACTED
from .redaction import Redactor
from .redaction import is_sensitive_header
from .redaction import redact_headers
from .redaction import redactor_for

__all__ = [
    "MAX_REQUEST_ID_LENGTH",
    "REDACTED",
    "REQUEST_ID_HEADERS",
    "ErrorBodyPolicy",
    "HttpLimits",
    "HttpResponse",
    "Timeouts",
    "classify_status",
    "error_from_response",
    "is_sensitive_header",
    "parse_error_body",
    "parse_retry_after",
    "redact_headers",
    "redact_text",
    "request_id_from_headers",
]

REQUEST_ID_HEADERS: Final = (
    "x-request-id",
    "request-id",
    "x-amzn-requestid",
    "x-amz-request-id",
    "x-goog-request-id",
    "apim-request-id",
    "x-ms-request-id",
    "cf-ray",
)
"""Response headers that carry a provider's request ID, in order of preference (`cf-ray` is last:
it identifies the Cloudflare edge request, which is still what some providers' support asks for)."""

MAX_REQUEST_ID_LENGTH: Final = 256
"""Longest request ID kept; longer values are cut, as the seed's inline 256-byte storage does."""

_MIB = 1024 * 1024


class Timeouts(msgspec.Struct, frozen=True, kw_only=True):
    """How long each phase of one HTTP request may take, in seconds; `None` means no limit of its own.

    Every phase is also bounded by `total` and by the caller's absolute deadline, whichever is sooner.
    """

    connect: float | None = 10.0
    """Opening the TCP connection and the TLS handshake."""
    first_byte: float | None = None
    """From starting the request (connect and upload included) until the response headers arrive.
    `None` by default because a buffered (non-streaming) completion only answers when it is done."""
    read: float | None = 300.0
    """Longest silence while receiving the body or a stream, between two chunks of data."""
    total: float | None = 600.0
    """The whole request, including reading the body or consuming the stream."""

    def __post_init__(self) -> None:
        for name in ("connect", "first_byte", "read", "total"):
            value = getattr(self, name)
            if value is not None and not (value > 0 and math.isfinite(value)):
                raise ValueError(
                    f"Timeouts.{name} must be a positive number of seconds or None, not {value!r}"
                )


class HttpLimits(msgspec.Struct, frozen=True, kw_only=True):
    """Size limits on untrusted response data, applied to decompressed bytes (exact-limit sizes pass)."""

    max_response_bytes: int = 32 * _MIB
    """Largest buffered response body."""
    max_stream_line_bytes: int = 4 * _MIB
    """Longest line of a streamed (SSE or NDJSON) response, without its line break."""
    max_stream_event_bytes: int = 16 * _MIB
    """Largest `data` of one server-sent event (its data lines joined)."""
    max_error_body_bytes: int = 64 * 1024
    """Most bytes read from an error response to find the provider's code and message."""

    def __post_init__(self) -> None:
        for name in (
            "max_response_bytes",
            "max_stream_line_bytes",
            "max_stream_event_bytes",
            "max_error_body_bytes",
        ):
            value = getattr(self, name)
            if value < 1:
                raise ValueError(f"HttpLimits.{name} must be at least 1 byte, not {value!r}")


class ErrorBodyPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """Whether a provider error keeps a prefix of the raw response body, and the caps on what it keeps.

    Off by default: bodies can echo prompts or personal data. When on, `ProviderError.body` holds at
    most `max_bytes` of it with credentials replaced by `<redacted>`. The parsed code and message are
    always kept, with their own smaller caps.
    """

    capture: bool = False
    """Keep a bounded, redacted prefix of the body in `ProviderError.body`."""
    max_bytes: int = 4096
    """Longest body prefix kept; a longer body sets `ProviderError.body_truncated`."""
    max_message_chars: int = 1024
    """Longest provider error message kept in `ProviderError.message`."""
    max_code_chars: int = 128
    """Longest provider error code kept in `ProviderError.code`."""

    def __post_init__(self) -> None:
        for name in ("max_bytes", "max_message_chars", "max_code_chars"):
            value = getattr(self, name)
            if value < 1:
                raise ValueError(f"ErrorBodyPolicy.{name} must be at least 1, not {value!r}")


class HttpResponse(msgspec.Struct, frozen=True, kw_only=True):
    """A complete, successful (or explicitly returned redirect) buffered HTTP response."""

    status: int
    """The HTTP status code."""
    headers: dict[str, str]
    """Response headers with lower-case names; repeated headers are joined with `", "`."""
    content: bytes
    """The decompressed body, at most `HttpLimits.max_response_bytes` long."""
    request_id: str | None = None
    """The provider's request ID from the first of `REQUEST_ID_HEADERS` present."""
    elapsed: float = 0.0
    """Seconds from sending the request until the body was read."""


def parse_retry_after(
    value: str | None, date_header: str | None = None, now: float | None = None
) -> float | None:
    """Seconds to wait from a `Retry-After` value: delta-seconds or an HTTP-date; `None` if absent or garbage.

    An HTTP-date is measured against the response's `Date` header when it parses (so a skewed
    local clock does not matter), else against `now` (Unix time, default the current time). A
    date in the past, or a negative number, means 0.
    """
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    if _NUMBER.fullmatch(value):
        seconds = float(value)
        return max(seconds, 0.0) if math.isfinite(seconds) else None
    target = _parse_http_date(value)
    if target is None:
        return None
    reference = _parse_http_date(date_header) if date_header else None
    if reference is None:
        reference = time.time() if now is None else now
    return max(target - reference, 0.0)


_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")


def _parse_http_date(value: str) -> float | None:
    import email.utils  # only a `Retry-After` date needs it: ~5 ms of import saved for everyone else

    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with each configured secret (in every form a `Redactor` matches), bearer tokens and well-known API-key shapes replaced.

    Secrets shorter than `MIN_SECRET_CHARS` (4) are not searched for: they would match ordinary words.
    """
    return redactor_for(tuple(secrets)).text(text)


def request_id_from_headers(headers: Mapping[str, str]) -> str | None:
    """The provider's request ID: the first of `REQUEST_ID_HEADERS` present (names must be lower-case).

    Kept to printable ASCII and at most `MAX_REQUEST_ID_LENGTH` characters, since it ends up in
    messages and logs.
    """
    for name in REQUEST_ID_HEADERS:
        value = headers.get(name)
        if value:
            head = value[: MAX_REQUEST_ID_LENGTH * 2]
            # Nearly always printable ASCII without spaces already: kept as it is, checked in C.
            if head.isascii() and head.isprintable() and " " not in head:
                return head[:MAX_REQUEST_ID_LENGTH]
            cleaned = "".join(c for c in head if "!" <= c <= "~")
            if cleaned:
                return cleaned[:MAX_REQUEST_ID_LENGTH]
    return None


def classify_status(status: int) -> ErrorCategory:
    """The error category of a non-success HTTP status.

    429 is a rate limit, 408 a timeout, 401/403 authentication, 5xx (and unknown 6xx+) a server
    error, and every other status (4xx, an unfollowed 3xx) a bad request.
    """
    if 200 <= status < 300:
        raise ValueError(f"HTTP {status} is a success status, not an error")
    if status == 429:
        return ErrorCategory.RATE_LIMIT
    if status == 408:
        return ErrorCategory.TIMEOUT
    if status in (401, 403):
        return ErrorCategory.AUTH
    if status >= 500:
        return ErrorCategory.SERVER
    return ErrorCategory.BAD_REQUEST


def parse_error_body(body: bytes, *, max_bytes: int = 64 * 1024) -> tuple[str | None, str | None]:
    """The provider's error `(code, message)` from a JSON error body, or `(None, None)`.

    Understands `{"error": {"message", "type", "code", "status"}}` (OpenAI, Anthropic, Google, most
    OpenAI-compatible servers), `{"error": "..."}` (Ollama), top-level `message`/`code`/`type` and
    FastAPI's `detail`. Bodies larger than `max_bytes`, or not JSON, give `(None, None)`.
    """
    if not body or len(body) > max_bytes:
        return None, None
    try:
        document: object = bounded_json.decode(body, type=object, limits=_error_body_limits(max_bytes))
    except bounded_json.JsonError:
        return None, None
    if isinstance(document, list) and document:
        document = cast("list[object]", document)[0]  # Google's streaming endpoints wrap errors in a list
    if not isinstance(document, dict):
        return None, None
    top = cast("dict[str, object]", document)
    error = top.get("error")
    if isinstance(error, str):
        return _pick_code(top), error
    if isinstance(error, dict):
        inner = cast("dict[str, object]", error)
        message = inner.get("message")
        return _pick_code(inner) or _pick_code(top), _as_text(message) if message is not None else None
    message = top.get("message")
    if message is None:
        message = top.get("detail")
    return _pick_code(top), _as_text(message) if message is not None else None


@functools.lru_cache(maxsize=8)
def _error_body_limits(max_bytes: int) -> bounded_json.JsonLimits:
    # Error bodies are small documents; anything deep or huge is not worth parsing for a message.
    return bounded_json.JsonLimits(
        name="error_body",
        max_bytes=max_bytes,
        max_depth=32,
        max_string_bytes=max_bytes,
        max_items=10_000,
        max_number_chars=256,
    )


def _pick_code(obj: dict[str, object]) -> str | None:
    code = obj.get("code")
    if isinstance(code, str) and code:
        return code
    for name in ("status", "type"):
        value = obj.get(name)
        if isinstance(value, str) and value and value != "error":
            return value
    if isinstance(code, int) and not isinstance(code, bool):
        return str(code)
    return None


def _as_text(value: object) -> str:
    if isinstance(value, str):
        return value
    return msgspec.json.encode(value).decode()


def error_from_response(
    status: int,
    headers: Mapping[str, str],
    body: bytes = b"",
    *,
    provider_name: str | None = None,
    model_name: str | None = None,
    policy: ErrorBodyPolicy | None = None,
    parsed: tuple[str | None, str | None] | None = None,
    secrets: Iterable[str] = (),
    redactor: Redactor | None = None,
    body_complete: bool = True,
    category: ErrorCategory | None = None,
    now: float | None = None,
) -> ProviderError:
    """Build the `ProviderError` subclass for an error response.

    `headers` must have lower-case names. `parsed` is the provider's `(code, message)` (parsed with
    `parse_error_body` when omitted); `category` overrides `classify_status`. The message and code
    are always redacted and capped; the body is kept only when `policy.capture` is set, as a redacted
    prefix of at most `policy.max_bytes` bytes. `body_complete=False` says `body` is itself a prefix.
    Redaction uses `redactor`, or one built from `secrets`; it covers the message, code, request ID,
    the redirect location and the captured body.
    """
    policy = policy or ErrorBodyPolicy()
    if redactor is None:
        redactor = redactor_for(tuple(secrets))
    code, provider_message = parsed if parsed is not None else parse_error_body(body)
    category = category or classify_status(status)
    retry_after = _retry_after(headers, now)
    if code is not None:
        code = redactor.text(code)[: policy.max_code_chars]
    if provider_message:
        # Redacted before it is cut, so a cut can never leave part of a secret behind.
        message = redactor.text(provider_message)
        if len(message) > policy.max_message_chars:
            message = message[: policy.max_message_chars] + "…"
    else:
        message = _reason(status)
    details: dict[str, Any] | None = None
    hint = _hint(category, status, retry_after)
    if 300 <= status < 400:
        location = headers.get("location")
        shown = redactor.url(location) if location else None
        hint = "redirects are never followed; set base_url to the final URL" + (
            f" (the server redirected to {shown})" if shown else ""
        )
        if shown:
            details = {"location": shown}
    if hint:
        message = f"{message}; {hint}"
    captured: str | None = None
    truncated = False
    if policy.capture:
        truncated = len(body) > policy.max_bytes or not body_complete
        captured = redactor.prefix(body[: policy.max_bytes].decode("utf-8", "replace"), not truncated)
    error = ERROR_CLASSES[category](
        message,
        provider_name=provider_name,
        model_name=model_name,
        status_code=status,
        request_id=request_id_from_headers(headers),
        code=code,
        retry_after=retry_after,
        body=captured,
        body_truncated=truncated,
        details=details,
    )
    # The request ID (a header the server chose) and everything else the error holds.
    redactor.scrub(error)
    return error


def _retry_after(headers: Mapping[str, str], now: float | None) -> float | None:
    # OpenAI and Azure also send milliseconds, which is more precise for sub-second waits.
    millis = headers.get("retry-after-ms")
    if millis is not None:
        value = parse_retry_after(millis)
        if value is not None:
            return value / 1000
    return parse_retry_after(headers.get("retry-after"), headers.get("date"), now)


def _reason(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return "error response"


def _hint(category: ErrorCategory, status: int, retry_after: float | None) -> str | None:
    if category is ErrorCategory.AUTH:
        return "check the API key and that it may use this model"
    if category is ErrorCategory.RATE_LIMIT:
        return f"retry after {retry_after:g} s" if retry_after is not None else "slow down and retry later"
    if status == 404:
        return "check base_url and the model name"
    return None
