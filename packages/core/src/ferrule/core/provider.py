"""The base class of every provider: credentials, API root, URL policy and one pooled HTTP client.

A provider package subclasses [`Provider`][ferrule.core.provider.Provider] and its model clients
call [`request`][ferrule.core.provider.Provider.request] (buffered) or
[`stream_sse`][ferrule.core.provider.Provider.stream_sse] / `stream_lines` / `stream_bytes`
(streamed) with a path and request bytes. Everything transport-level is handled here, identically
for every provider: the URL policy on every request, never following redirects, connect /
first-byte / read / total timeouts and the caller's absolute deadline, response-size and stream-line
limits on decompressed bytes, request-ID capture, mapping failures to
[`ProviderError`][ferrule.core.errors.ProviderError] subclasses, and keeping the credential out of
every message, log line and repr.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
from collections import deque
from collections.abc import AsyncIterator
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Coroutine
from collections.abc import Mapping
from types import TracebackType
from typing import TYPE_CHECKING
from typing import Any
from typing import Concatenate
from typing import Literal
from typing import NamedTuple
from typing import ParamSpec
from typing import Self
from typing import TypeAlias
from typing import TypedDict
from typing import TypeVar
from typing import Unpack

import anyio
import msgspec

from ._clock import asyncio_loop
from ._clock import current_time
from .errors import BadRequestError
from .errors import ErrorCategory
from .errors import ProviderConnectionError
from .errors import ProviderError
from .errors import ProviderTimeoutError
from .errors import ResponseDecodeError
from .errors import ResponseTooLargeError
from .errors import UrlPolicyError
from .errors import UserError
from .http import ErrorBodyPolicy
from .http import HttpLimits
from .http import HttpResponse
from .http import Timeouts
from .http import error_from_response
from .http import parse_error_body
from .http import request_id_from_headers
from .redaction import HTTP_LOGGERS
from .redaction import Redactor
from .redaction import check_credential
from .redaction import check_header_value
from .redaction import is_sensitive_header
from .redaction import is_sensitive_param
from .redaction import redact_logs_of
from .sse import SseEvent
from .sse import SseParser
from .url_policy import UrlPolicy
from .url_policy import redact_url
from .url_policy import url_origin

if TYPE_CHECKING:
    # httpx2 is imported where a client or request is built (and in the handlers that follow),
    # so importing a provider package does not load it.
    import httpx2

    from .model import ModelCall

__all__ = ["Provider", "ProviderOptions", "QueryParams", "RequestOptions", "redacts_errors"]

_log = logging.getLogger("ferrule.core.http")

# Closing a half-read response only has to drop the socket; bound it so cleanup after a
# cancellation can never hang the caller.
_CLOSE_TIMEOUT = 5.0

QueryParams: TypeAlias = Mapping[str, str | int | float | bool | None]
"""Query parameters of a request."""

_P = ParamSpec("_P")
_T = TypeVar("_T")
_ProviderT = TypeVar("_ProviderT", bound="Provider")


def redacts_errors(
    method: Callable[Concatenate[_ProviderT, _P], Coroutine[Any, Any, _T]],
) -> Callable[Concatenate[_ProviderT, _P], Coroutine[Any, Any, _T]]:
    """Make any error leaving a provider's async method go through the provider's `redactor`.

    For the methods that parse what a request returned (model listings, file records): their errors
    may quote the response, and a response may echo the credential.
    """

    @functools.wraps(method)
    async def scrubbed(self: _ProviderT, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        with self.redactor:
            return await method(self, *args, **kwargs)

    return scrubbed


class ProviderOptions(TypedDict, total=False):
    """The connection options every [`Provider`][ferrule.core.provider.Provider] takes besides its root and key.

    A provider subclass declares `**options: Unpack[ProviderOptions]` and passes them on to
    `Provider.__init__` unchanged, so each option is documented and defaulted in one place.
    """

    headers: Mapping[str, str] | None
    """Fixed headers sent with every request."""
    http_client: httpx2.AsyncClient | None
    """An application-owned client, used as-is (redirects are never followed either way)."""
    url_policy: UrlPolicy | None
    """The policy every request URL must pass; `None` is the default policy (public HTTPS only)."""
    timeouts: Timeouts | None
    """Default timeouts of every request."""
    limits: HttpLimits | None
    """Size limits on responses and stream lines."""
    error_body: ErrorBodyPolicy | None
    """Whether errors keep a redacted body prefix."""


class RequestOptions(TypedDict, total=False):
    """Per-request options of `Provider.request` and the `stream_*` methods, for a model client to build once.

    `provider.request("POST", path, content=body, **options)` passes them on unchanged.
    """

    headers: Mapping[str, str] | None
    """Headers of this request, merged over the provider's."""
    params: QueryParams | None
    """Query parameters."""
    deadline: float | None
    """An absolute `anyio.current_time()` value that tightens `timeouts.total`."""
    model_name: str | None
    """The model the request is for, recorded on errors."""
    timeouts: Timeouts | None
    """Timeouts of this request instead of the provider's."""
    error_body: ErrorBodyPolicy | None
    """The error-body policy of this request instead of the provider's."""


class Provider:
    """A model provider's connection settings and pooled HTTP client, shared by all its models.

    Holds the credential (never shown in `repr`, messages or logs), the API root checked against
    the [`UrlPolicy`][ferrule.core.url_policy.UrlPolicy], fixed headers, timeouts, limits and the
    error-body policy. The `httpx2.AsyncClient` is created on first use (redirects off) unless the
    application passes one, which is used as-is; redirects are never followed either way.
    Subclasses customise authentication with `_auth_headers` and error parsing with
    `_parse_error_body` / `_classify_error`.
    """

    name: str = "provider"
    """The provider's name, e.g. `"openai"`; subclasses override it."""

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        http_client: httpx2.AsyncClient | None = None,
        url_policy: UrlPolicy | None = None,
        timeouts: Timeouts | None = None,
        limits: HttpLimits | None = None,
        error_body: ErrorBodyPolicy | None = None,
    ) -> None:
        self.url_policy: UrlPolicy = url_policy if url_policy is not None else UrlPolicy()
        """The policy every request URL must pass before a connection is opened."""
        parsed = self.url_policy.check(base_url)
        if parsed.query or parsed.fragment:
            raise ValueError(
                f"base_url {redact_url(parsed)!r} must not have a query or fragment; "
                "pass query parameters per request instead"
            )
        self.base_url: str = str(parsed).rstrip("/")
        """The API root; request paths are appended to it."""
        self._origin = url_origin(parsed)
        if api_key:
            # Before any I/O: a key with a newline or a non-ASCII character would otherwise fail
            # inside the HTTP client, in an error that shows it.
            check_credential(api_key)
        self._api_key = api_key
        fixed: dict[str, str] = {}
        for name, value in (headers or {}).items():
            if "\r" in name or "\n" in name:
                raise ValueError(f"header {name!r} contains a line break")
            check_header_value(name, value)
            fixed[name.lower()] = value
        self._headers = fixed
        self._redactor: tuple[tuple[str, ...], Redactor] | None = None
        self._error_hooks: _ErrorHooks | None = None
        self.timeouts: Timeouts = timeouts if timeouts is not None else Timeouts()
        """Default timeouts of every request; a call may pass its own."""
        self.limits: HttpLimits = limits if limits is not None else HttpLimits()
        """Size limits on responses and stream lines."""
        self.error_body: ErrorBodyPolicy = error_body if error_body is not None else ErrorBodyPolicy()
        """Whether errors keep a redacted body prefix; a call may pass its own policy."""
        self._client = http_client
        self._owns_client = http_client is None
        self._client_loop: object | None = None

    # -- hooks for subclasses --------------------------------------------------------------------

    def _auth_headers(self) -> dict[str, str]:
        """Headers that authenticate a request; default `Authorization: Bearer <api_key>` when a key is set."""
        if self._api_key:
            return {"authorization": f"Bearer {self._api_key}"}
        return {}

    def _parse_error_body(self, status: int, body: bytes) -> tuple[str | None, str | None]:
        """The provider's `(code, message)` from an error body (at most `max_error_body_bytes` long)."""
        del status
        return parse_error_body(body, max_bytes=self.limits.max_error_body_bytes)

    def _retry_after_from_body(self, status: int, body: bytes) -> float | None:
        """Seconds to wait that the error body names, for APIs that send no `Retry-After` header."""
        del status, body
        return None

    def _classify_error(self, status: int, code: str | None, message: str | None) -> ErrorCategory | None:
        """The category of an error response when the status alone is not enough; `None` uses the status."""
        del status, code, message
        return None

    def _hooks(self) -> _ErrorHooks:
        # The error hooks a subclass overrides, bound once: a request in flight calls them without
        # reaching into the provider's protected methods.
        hooks = self._error_hooks
        if hooks is None:
            hooks = self._error_hooks = _ErrorHooks(
                self._parse_error_body, self._classify_error, self._retry_after_from_body
            )
        return hooks

    def _credentials(self) -> tuple[str, ...]:
        """Every configured secret string, to be redacted from messages and captured bodies."""
        values = [self._api_key] if self._api_key else []
        values.extend(v for k, v in self._headers.items() if is_sensitive_header(k))
        values.extend(v for k, v in self._auth_headers().items() if is_sensitive_header(k))
        return tuple(values)

    @property
    def redactor(self) -> Redactor:
        """The [`Redactor`][ferrule.core.redaction.Redactor] of this provider's credentials.

        Every error this provider raises has been through it; model clients scrub the errors their
        codecs raise with it too. Rebuilt only when `_credentials()` changes.
        """
        secrets = self._credentials()
        cached = self._redactor
        if cached is None or cached[0] != secrets:
            cached = self._redactor = (secrets, Redactor(secrets))
        return cached[1]

    # -- public API ------------------------------------------------------------------------------

    async def request(
        self,
        method: str,
        path: str,
        *,
        content: bytes | None = None,
        on_redirect: Literal["reject", "return"] = "reject",
        **options: Unpack[RequestOptions],
    ) -> HttpResponse:
        """Send a request to `base_url + path` and return the complete, decompressed response.

        `options` are the per-request [`RequestOptions`][ferrule.core.provider.RequestOptions]
        (headers, query parameters, the caller's deadline, timeouts, error-body policy).
        Raises `ResponseTooLargeError` past `limits.max_response_bytes`, the mapped
        `ProviderError` subclass for a non-2xx status, `ProviderTimeoutError` and
        `ProviderConnectionError` for transport failures. A 3xx redirect is never followed: it
        raises `BadRequestError`, or with `on_redirect="return"` is returned for the caller to
        inspect (with at most `max_error_body_bytes` of body).
        """
        call = self._prepare(method, path, content, options)
        response = await call.send()
        reader = _BodyReader(call, response)
        try:
            status = response.status_code
            if not 200 <= status < 300:
                if on_redirect == "return" and 300 <= status < 400:
                    body, _ = await reader.read_prefix(self.limits.max_error_body_bytes)
                    return call.result(response, body)
                raise await call.error(response, reader)
            body = await reader.read_all(self.limits.max_response_bytes)
        finally:
            await reader.aclose()
        return call.result(response, body)

    def stream_sse(
        self,
        method: str,
        path: str,
        *,
        content: bytes | None = None,
        **options: Unpack[RequestOptions],
    ) -> contextlib.AbstractAsyncContextManager[AsyncIterator[SseEvent]]:
        """Open a streamed request and iterate its server-sent events as they arrive.

        Use as `async with provider.stream_sse("POST", "/x", content=body) as events:`; a non-2xx
        status raises its mapped error on entry. Leaving the block early (or being cancelled)
        closes the connection. A connection that breaks mid-stream raises
        `ProviderConnectionError`, silence longer than `timeouts.read` raises
        `ProviderTimeoutError`, and a line or event over the limits raises `ResponseTooLargeError`.
        """
        headers = options.get("headers")
        if headers is None or not any(k.lower() == "accept" for k in headers):
            options["headers"] = {**(headers or {}), "accept": "text/event-stream"}
        return self._streamed(method, path, content, options, self._sse_events)

    def _sse_events(self, reader: _BodyReader) -> _SseIterator:
        parser = SseParser(self.limits.max_stream_line_bytes, self.limits.max_stream_event_bytes)
        return _SseIterator(reader, parser)

    def stream_lines(
        self,
        method: str,
        path: str,
        *,
        content: bytes | None = None,
        **options: Unpack[RequestOptions],
    ) -> contextlib.AbstractAsyncContextManager[AsyncIterator[bytes]]:
        """Like `stream_sse`, but iterate the body's non-empty lines (for NDJSON streams).

        Lines are split on LF, a trailing CR is removed, and each line is at most
        `limits.max_stream_line_bytes` long.
        """
        max_line = self.limits.max_stream_line_bytes
        return self._streamed(method, path, content, options, lambda reader: _LineIterator(reader, max_line))

    def stream_bytes(
        self,
        method: str,
        path: str,
        *,
        content: bytes | None = None,
        **options: Unpack[RequestOptions],
    ) -> contextlib.AbstractAsyncContextManager[AsyncIterator[bytes]]:
        """Like `stream_sse`, but iterate the decompressed body in chunks as they arrive (each ≤ 1 MiB)."""
        return self._streamed(method, path, content, options, _ChunkIterator)

    def _streamed(
        self,
        method: str,
        path: str,
        content: bytes | None,
        options: RequestOptions,
        iterate: Callable[[_BodyReader], _StreamT],
    ) -> _Streamed[_StreamT]:
        """The `async with` of one streamed request whose body `iterate` reads (`stream_*`)."""
        return _Streamed(functools.partial(self._prepare, method, path, content, options), iterate)

    def call_options(self, call: ModelCall, model_name: str) -> RequestOptions:
        """The transport options of one model call: its deadline, and its own timeout and error-body capture.

        `ModelSettings.timeout` replaces `timeouts.total`; `capture_error_body` turns capture on in
        the provider's error-body policy. A model client adds its headers and sends
        `request(..., **options)`.
        """
        options: RequestOptions = {"deadline": call.deadline, "model_name": model_name}
        if call.settings.timeout is not None:
            options["timeouts"] = msgspec.structs.replace(self.timeouts, total=call.settings.timeout)
        if call.capture_error_body:
            options["error_body"] = msgspec.structs.replace(self.error_body, capture=True)
        return options

    async def aclose(self) -> None:
        """Close the pooled client if this provider created it; an application's client is left open.

        The provider stays usable: the next request creates a fresh pool.
        """
        if not self._owns_client or self._client is None:
            return
        client, self._client = self._client, None
        same_loop = self._client_loop == _loop_token()
        self._client_loop = None
        if same_loop:
            await client.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, base_url={redact_url(self.base_url)!r})"

    # -- internals -------------------------------------------------------------------------------

    def _http_client(self) -> httpx2.AsyncClient:
        import httpx2

        _redact_http_logs()
        if not self._owns_client:
            assert self._client is not None
            return self._client
        loop = _loop_token()
        if self._client is None or self._client_loop != loop:
            # A pool is bound to the event loop that opened its sockets; `run_sync` and tests start a
            # new loop per call, so a pool from another loop is dropped rather than reused.
            self._client = httpx2.AsyncClient(
                follow_redirects=False,
                headers={"user-agent": _user_agent()},
                timeout=None,
            )
            self._client_loop = loop
        return self._client

    def _prepare(self, method: str, path: str, content: bytes | None, options: RequestOptions) -> _Call:
        import httpx2

        headers = options.get("headers")
        params = options.get("params")
        deadline = options.get("deadline")
        url = self.url_policy.check(self.base_url + "/" + path.lstrip("/"))
        if url_origin(url) != self._origin:
            raise UrlPolicyError(
                redact_url(url), f"requests must stay on the provider's origin {self._origin}"
            )
        merged = {k.lower(): v for k, v in self._auth_headers().items()}
        merged.update(self._headers)
        extra_secrets: list[str] = []
        if headers:
            for name, value in headers.items():
                lower = name.lower()
                merged[lower] = value
                if is_sensitive_header(lower):
                    extra_secrets.append(value)
        if params:
            extra_secrets.extend(
                str(value) for name, value in params.items() if value is not None and is_sensitive_param(name)
            )
        if content is not None and "content-type" not in merged:
            merged["content-type"] = "application/json"
        timeouts = options.get("timeouts") or self.timeouts
        client = self._http_client()
        try:
            request = client.build_request(
                method,
                url,
                content=content,
                headers=merged,
                params=params,
                timeout=httpx2.Timeout(None, connect=timeouts.connect),
            )
        except UnicodeEncodeError:
            request = None  # raised below, outside the handler: the encode error holds the value
        if request is None:
            raise UserError(
                "a header of this request has a non-ASCII value and cannot be sent; "
                "encode it (e.g. percent-encoding) before passing it"
            )
        now = current_time()
        total = now + timeouts.total if timeouts.total is not None else math.inf
        end = total if deadline is None else min(total, deadline)
        return _Call(
            provider=self,
            error_hooks=self._hooks(),
            client=client,
            request=request,
            url=url,
            model_name=options.get("model_name"),
            timeouts=timeouts,
            error_body=options.get("error_body") or self.error_body,
            extra_secrets=tuple(extra_secrets),
            start=now,
            deadline=end,
            deadline_is_callers=deadline is not None and deadline < total,
        )


class _ErrorHooks(NamedTuple):
    """A provider's error hooks (`Provider._parse_error_body`, ...), bound to it."""

    parse_body: Callable[[int, bytes], tuple[str | None, str | None]]
    classify: Callable[[int, str | None, str | None], ErrorCategory | None]
    retry_after_from_body: Callable[[int, bytes], float | None]


class _Call:
    """One request in flight: what is needed to send it, time it, and describe its failures."""

    def __init__(
        self,
        *,
        provider: Provider,
        error_hooks: _ErrorHooks,
        client: httpx2.AsyncClient,
        request: httpx2.Request,
        url: httpx2.URL,
        model_name: str | None,
        timeouts: Timeouts,
        error_body: ErrorBodyPolicy,
        extra_secrets: tuple[str, ...],
        start: float,
        deadline: float,
        deadline_is_callers: bool,
    ) -> None:
        self.provider = provider
        self.error_hooks = error_hooks
        self.client = client
        self.request = request
        self._url = url
        self.model_name = model_name
        self.timeouts = timeouts
        self.error_body = error_body
        self._extra_secrets = extra_secrets
        self.start = start
        self.deadline = deadline
        self.deadline_is_callers = deadline_is_callers
        self.status: int | None = None
        self.request_id: str | None = None
        self.headers: dict[str, str] = {}

    # Both are only needed to describe a failure or for debug logs, so they are not built per request.
    @functools.cached_property
    def url(self) -> str:
        """The request URL for messages, credentials removed."""
        return self.redactor.url(str(self._url))

    @functools.cached_property
    def redactor(self) -> Redactor:
        """The provider's redactor, with this call's own credential headers and query parameters."""
        redactor = self.provider.redactor
        return redactor.extend(self._extra_secrets) if self._extra_secrets else redactor

    def get_redactor(self) -> Redactor:
        """`redactor`, as a callable: built only when a failure or a log record needs it."""
        return self.redactor

    def fail(self, cls: type[ProviderError], message: str, **kwargs: Any) -> ProviderError:
        """An error of class `cls` for this call, scrubbed of every credential."""
        error = cls(
            message,
            provider_name=self.provider.name,
            model_name=self.model_name,
            status_code=self.status,
            request_id=self.request_id,
            **kwargs,
        )
        self.redactor.scrub(error)
        return error

    def timeout_error(self, phase: str, limit: float | None) -> ProviderError:
        if phase in ("first_byte", "read") and limit is not None:
            what = "no response headers" if phase == "first_byte" else "no data"
            text = f"{what} from {self.url} within Timeouts.{phase}={limit:g} s"
        elif self.deadline_is_callers:
            text = f"the caller's deadline passed before the request to {self.url} finished"
        else:
            text = f"the request to {self.url} did not finish within Timeouts.total={self.timeouts.total:g} s"
        return self.fail(ProviderTimeoutError, text)

    def transport_error(self, exc: httpx2.HTTPError) -> ProviderError:
        import httpx2

        detail = str(exc) or type(exc).__name__
        details = {"exception": type(exc).__name__}
        if isinstance(exc, httpx2.ConnectTimeout):
            return self.fail(
                ProviderTimeoutError,
                f"connecting to {self.url} timed out after Timeouts.connect={self.timeouts.connect} s",
                details=details,
            )
        if isinstance(exc, httpx2.TimeoutException):
            return self.fail(
                ProviderTimeoutError, f"request to {self.url} timed out: {detail}", details=details
            )
        if isinstance(exc, httpx2.DecodingError):
            return self.fail(
                ResponseDecodeError,
                f"could not decompress the response from {self.url}: {detail}",
                details=details,
            )
        if isinstance(exc, httpx2.LocalProtocolError):
            return self.fail(
                BadRequestError, f"the request to {self.url} could not be sent: {detail}", details=details
            )
        if isinstance(exc, httpx2.ConnectError):
            return self.fail(
                ProviderConnectionError,
                f"could not connect to {self.url}: {detail}; check base_url and that the server is reachable",
                details=details,
            )
        if self.status is not None:
            return self.fail(
                ProviderConnectionError,
                f"the connection to {self.url} broke before the response was complete: {detail}",
                details=details,
            )
        return self.fail(
            ProviderConnectionError, f"the request to {self.url} failed: {detail}", details=details
        )

    def wait_deadline(self, phase: str) -> tuple[float, float | None]:
        """The deadline of the next wait, and the phase limit in force (for the error message)."""
        limit: float | None = getattr(self.timeouts, phase)
        if limit is None:
            return self.deadline, None
        phase_end = current_time() + limit
        return (phase_end, limit) if phase_end < self.deadline else (self.deadline, None)

    async def send(self) -> httpx2.Response:
        """Send the request and wait for the response headers within first_byte and the deadline."""
        import httpx2

        if current_time() >= self.deadline:
            raise self.timeout_error("total", None)
        end, limit = self.wait_deadline("first_byte")
        response: httpx2.Response | None = None
        failure: ProviderError | None = None
        # httpcore2 logs the response headers at DEBUG, where a server may echo the credential.
        with anyio.CancelScope(deadline=end), Redactor.lazily_in_logs(self.get_redactor):
            try:
                response = await self.client.send(self.request, stream=True, follow_redirects=False)
            except httpx2.HTTPError as exc:
                failure = self.transport_error(exc)
        # Raised outside the handler, so that no `__context__` leads to the httpx2 error, whose
        # request object holds the credential headers.
        if failure is not None:
            raise failure
        if response is None:
            raise self.timeout_error("first_byte", limit)
        self.status = response.status_code
        self.headers = _headers_dict(response.headers)
        # A server may echo anything in a request-ID header: errors built from it are scrubbed
        # (`fail`, `error_from_response`) and so is the debug line.
        self.request_id = request_id_from_headers(self.headers)
        if _log.isEnabledFor(logging.DEBUG):
            _log.debug(
                "%s %s -> HTTP %d (request id %s) headers=%s",
                self.request.method,
                self.url,
                self.status,
                self.redactor.text(self.request_id or "none"),
                self.redactor.headers(self.headers),
            )
        return response

    async def error(self, response: httpx2.Response, reader: _BodyReader) -> ProviderError:
        """The mapped error for a non-2xx response, after reading a bounded prefix of its body."""
        limits = self.provider.limits
        # A broken or slow error body must not hide the status, which says more.
        body, complete = await reader.read_prefix(limits.max_error_body_bytes, tolerate_errors=True)
        status = response.status_code
        hooks = self.error_hooks
        parsed = hooks.parse_body(status, body)
        category = hooks.classify(status, *parsed)
        error = error_from_response(
            status,
            self.headers,
            body,
            provider_name=self.provider.name,
            model_name=self.model_name,
            policy=self.error_body,
            parsed=parsed,
            redactor=self.redactor,
            body_complete=complete,
            category=category,
        )
        if error.retry_after is None:
            # Some APIs (Gemini's `retryDelay`) put the wait in the body instead of a header.
            error.retry_after = hooks.retry_after_from_body(status, body)
        _log.debug("%s %s failed: %s", self.request.method, self.url, error)
        return error

    def result(self, response: httpx2.Response, body: bytes) -> HttpResponse:
        return HttpResponse(
            status=response.status_code,
            headers=self.headers,
            content=body,
            request_id=self.request_id,
            elapsed=current_time() - self.start,
        )

    async def open(self) -> _BodyReader:
        """Send a streamed request and give its body reader; for a non-2xx status, the mapped error
        (the reader closed). The caller closes the reader it is given."""
        response = await self.send()
        reader = _BodyReader(self, response)
        if not 200 <= response.status_code < 300:
            try:
                raise await self.error(response, reader)
            finally:
                await reader.aclose()
        return reader


_StreamT = TypeVar("_StreamT")


class _Streamed(contextlib.AbstractAsyncContextManager[_StreamT]):
    """`async with` one streamed request: prepared and sent on entry, which gives what iterates
    its body; the body reader closed on exit, however the block ends.

    A class rather than a generator-based context manager: each streamed request would make
    two async generators and their context managers for the same steps.
    """

    __slots__ = ("_iterate", "_prepare", "_reader")

    def __init__(self, prepare: Callable[[], _Call], iterate: Callable[[_BodyReader], _StreamT]) -> None:
        self._prepare = prepare
        self._iterate = iterate
        self._reader: _BodyReader | None = None

    async def __aenter__(self) -> _StreamT:
        if self._reader is not None:
            raise RuntimeError("a streamed request is entered once; call stream_* again for another")
        # Prepared on entry, as the generator-based version did: checks of the URL and the
        # options raise from the `async with`.
        self._reader = reader = await self._prepare().open()
        return self._iterate(reader)

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        reader = self._reader
        if reader is not None:
            await reader.aclose()


class _BodyReader:
    """Reads a response's decompressed body chunk by chunk within the read timeout and the deadline."""

    def __init__(self, call: _Call, response: httpx2.Response) -> None:
        self.call = call
        self.response = response
        self._chunks = response.aiter_bytes()
        self._done = False

    async def next(self) -> bytes | None:
        """The next decompressed chunk, or `None` at the (verified) end of the body."""
        import httpx2

        if self._done:
            return None
        end, limit = self.call.wait_deadline("read")
        failure: ProviderError | None = None
        with anyio.CancelScope(deadline=end):
            try:
                return await anext(self._chunks)
            except StopAsyncIteration:
                self._done = True
                return None
            except httpx2.HTTPError as exc:
                failure = self.call.transport_error(exc)
        self._done = True
        # Outside the handler: no `__context__` may lead to the httpx2 error (see `_Call.send`).
        raise failure if failure is not None else self.call.timeout_error("read", limit)

    async def read_all(self, limit: int) -> bytes:
        """The whole body; `ResponseTooLargeError` before buffering more than `limit` bytes."""
        import httpx2

        call = self.call
        if "content-encoding" not in call.headers:
            declared = call.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > limit:
                raise self._too_large(limit, f"declares {declared} bytes")
        if self._done:
            return b""
        parts: list[bytes] = []
        size = 0
        # One cancel scope for the whole body, its deadline moved forward after every chunk, gives
        # the same per-chunk read timeout as `next()` without entering a scope per chunk.
        end, phase_limit = call.wait_deadline("read")
        failure: ProviderError | None = None
        with anyio.CancelScope(deadline=end) as scope:
            try:
                async for chunk in self._chunks:
                    size += len(chunk)
                    if size > limit:
                        raise self._too_large(limit, f"exceeds {limit} bytes after decompression")
                    parts.append(chunk)
                    end, phase_limit = call.wait_deadline("read")
                    scope.deadline = end
            except httpx2.HTTPError as exc:
                failure = call.transport_error(exc)
            else:
                self._done = True
                return parts[0] if len(parts) == 1 else b"".join(parts)
        self._done = True
        # Outside the handler: no `__context__` may lead to the httpx2 error (see `_Call.send`).
        raise failure if failure is not None else call.timeout_error("read", phase_limit)

    async def read_prefix(self, limit: int, *, tolerate_errors: bool = False) -> tuple[bytes, bool]:
        """At most `limit` bytes of the body, and whether that is all of it.

        With `tolerate_errors`, a timeout or broken connection ends the prefix instead of raising.
        """
        parts: list[bytes] = []
        size = 0
        while size <= limit:
            try:
                chunk = await self.next()
            except ProviderError:
                if not tolerate_errors:
                    raise
                return b"".join(parts)[:limit], False
            if chunk is None:
                return b"".join(parts), True
            parts.append(chunk)
            size += len(chunk)
        return b"".join(parts)[:limit], False

    def _too_large(self, limit: int, what: str) -> ProviderError:
        return self.call.fail(
            ResponseTooLargeError,
            f"the response body from {self.call.url} {what}; the limit is HttpLimits.max_response_bytes={limit}",
            details={"limit": limit, "kind": "response_body"},
        )

    async def aclose(self) -> None:
        """Release the connection; a half-read response closes it rather than returning it to the pool."""
        if self._done and self.response.is_closed:
            return  # read to its end: httpx2 has already released the connection
        with anyio.CancelScope(shield=True) as scope:
            scope.deadline = current_time() + _CLOSE_TIMEOUT
            try:
                await self._chunks.aclose()
                await self.response.aclose()
            except Exception as exc:  # cleanup must not mask the call's own outcome
                _log.debug("closing the response from %s failed: %r", self.call.url, type(exc))


class _SseIterator:
    """Server-sent events parsed from a body reader as its chunks arrive."""

    def __init__(self, reader: _BodyReader, parser: SseParser) -> None:
        self._reader = reader
        self._parser = parser
        self._pending: deque[SseEvent] = deque()
        self._ended = False

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SseEvent:
        while not self._pending:
            if self._ended:
                raise StopAsyncIteration
            self._pending.extend(await self._read())
        return self._pending.popleft()

    async def batch(self) -> list[SseEvent]:
        """The events not yet taken, or those the next reads complete: never empty but at the end."""
        if self._pending:
            events = list(self._pending)
            self._pending.clear()
            return events
        while not self._ended:
            events = await self._read()
            if events:
                return events
        return []

    async def _read(self) -> list[SseEvent]:
        """The events one more read of the body completes (often none)."""
        chunk = await self._reader.next()
        try:
            if chunk is None:
                self._ended = True
                return self._parser.close()
            return self._parser.feed(chunk)
        except ResponseTooLargeError as exc:
            raise _with_context(exc, self._reader.call) from None


def sse_batches(events: AsyncIterator[SseEvent]) -> Callable[[], Awaitable[list[SseEvent]]]:
    """What gives `events` (from `stream_sse`) a list at a time: the events each network read
    completes, never empty but at the end, which is `[]`. Any other iterator gives one at a time."""
    if isinstance(events, _SseIterator):
        return events.batch

    async def one() -> list[SseEvent]:
        async for event in events:
            return [event]
        return []

    return one


class _LineIterator:
    """Non-empty LF-separated lines of a body reader, each within the line limit."""

    def __init__(self, reader: _BodyReader, max_line: int) -> None:
        self._reader = reader
        self._max_line = max_line
        self._partial = bytearray()
        self._pending: deque[bytes] = deque()
        self._ended = False

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> bytes:
        while not self._pending:
            if self._ended:
                raise StopAsyncIteration
            chunk = await self._reader.next()
            if chunk is None:
                self._ended = True
                self._emit(bytes(self._partial))
                self._partial.clear()
                continue
            if b"\n" not in chunk:
                self._check(len(self._partial) + len(chunk.rstrip(b"\r")))
                self._partial += chunk
                continue
            head, *lines, tail = chunk.split(b"\n")
            self._partial += head
            self._emit(bytes(self._partial))
            self._partial.clear()
            for line in lines:
                self._emit(line)
            self._check(len(tail.rstrip(b"\r")))
            self._partial += tail
        return self._pending.popleft()

    def _emit(self, line: bytes) -> None:
        if line.endswith(b"\r"):
            line = line[:-1]
        self._check(len(line))
        if line.strip():
            self._pending.append(line)

    def _check(self, size: int) -> None:
        if size > self._max_line:
            raise _with_context(
                ResponseTooLargeError(
                    f"a stream line of at least {size} bytes exceeds the limit of {self._max_line} bytes; "
                    "raise HttpLimits.max_stream_line_bytes if this provider legitimately sends longer lines",
                    details={"limit": self._max_line, "kind": "stream_line"},
                ),
                self._reader.call,
            )


class _ChunkIterator:
    """Decompressed body chunks of a body reader."""

    def __init__(self, reader: _BodyReader) -> None:
        self._reader = reader

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> bytes:
        chunk = await self._reader.next()
        if chunk is None:
            raise StopAsyncIteration
        return chunk


def _with_context(exc: ProviderError, call: _Call) -> ProviderError:
    """`exc` re-created with the call's provider, model, status and request ID."""
    return call.fail(type(exc), exc.message, details=exc.details)


def _headers_dict(headers: httpx2.Headers) -> dict[str, str]:
    result: dict[str, str] = {}
    for name, value in headers.multi_items():
        lower = name.lower()
        result[lower] = f"{result[lower]}, {value}" if lower in result else value
    return result


def _loop_token() -> object:
    """An object identifying the running event loop (asyncio loop or trio run)."""
    loop = asyncio_loop()
    if loop is not None:
        return loop
    import trio  # only reached inside a trio run, so trio is installed

    return trio.lowlevel.current_trio_token()


@functools.cache
def _redact_http_logs() -> None:
    redact_logs_of(HTTP_LOGGERS)


@functools.cache
def _user_agent() -> str:
    from importlib import metadata

    try:
        version = metadata.version("ferrule-core")
    except metadata.PackageNotFoundError:
        version = "0"
    return f"ferrule/{version}"
