"""Read the recorded provider traffic in `../shared/cassettes` (vcrpy YAML) in place.

The recordings are data for conformance tests; they are never copied into this repository.
Tests call [`cassette_root`][] and skip when the folder is absent, or fail under CI
(`tests.support.shared`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import yaml

from tests.support.shared import SHARED, missing_reason, require_shared, shared_path

REPO_ROOT = Path(__file__).resolve().parents[2]

CASSETTES = "cassettes/pydantic-ai"
"""The PydanticAI recordings, relative to the shared folder."""

SKIP_REASON = missing_reason(SHARED / CASSETTES)


def cassette_root() -> Path | None:
    """The root of the shared PydanticAI recordings, or `None` when absent (under CI: a failure)."""
    return shared_path(CASSETTES)


def require_cassettes() -> Path:
    """The root of the shared PydanticAI recordings for the calling test: skips it when they are
    absent, fails it under CI."""
    return require_shared(CASSETTES)


@dataclass(frozen=True)
class Interaction:
    """One recorded request/response pair."""

    cassette: Path
    """The YAML file it came from."""
    index: int
    """Its position in the cassette."""
    method: str
    """HTTP method of the request."""
    uri: str
    """Request URI."""
    request_json: Any
    """The parsed JSON request body, or `None`."""
    request_text: str | None
    """The raw request body when it was not JSON."""
    status: int
    """Response status code."""
    response_headers: dict[str, str]
    """Response headers (lower-case names, first value)."""
    response_json: Any
    """The parsed JSON response body, or `None` for streamed/raw bodies."""
    response_text: str | None
    """The raw response body (SSE text for streamed responses)."""

    @property
    def is_stream(self) -> bool:
        """Whether the response is a server-sent event stream."""
        ctype = self.response_headers.get("content-type", "")
        return "event-stream" in ctype or (
            self.response_text is not None and self.response_text.lstrip().startswith(("data:", "event:"))
        )

    @property
    def response_bytes(self) -> bytes:
        """The response body as bytes (JSON re-encoded when it was stored parsed)."""
        if self.response_text is not None:
            return self.response_text.encode()
        return json.dumps(self.response_json).encode()

    @property
    def id(self) -> str:
        """A readable test ID: `<dir>/<cassette>#<index>`."""
        return f"{self.cassette.parent.name}/{self.cassette.stem}#{self.index}"


def _mapping(value: Any) -> dict[str, Any]:
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}


def _first(value: Any) -> str:
    if isinstance(value, list):
        items = cast("list[Any]", value)
        return str(items[0]) if items else ""
    return str(value)


def _body_text(body: Any) -> str | None:
    if isinstance(body, dict):
        body = _mapping(body).get("string")
    if body is None:
        return None
    if isinstance(body, bytes):
        return body.decode("utf-8", "replace")
    return str(body)


@functools.cache
def load(path: Path) -> tuple[Interaction, ...]:
    """Load one cassette file."""
    with path.open("rb") as f:
        data = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    out: list[Interaction] = []
    items: Any = _mapping(data).get("interactions")
    for i, item in enumerate(cast("list[Any]", items) if isinstance(items, list) else []):
        req = _mapping(_mapping(item).get("request"))
        resp = _mapping(_mapping(item).get("response"))
        status = resp.get("status", {})
        code = int(_mapping(status).get("code", 200)) if isinstance(status, dict) else int(status or 200)
        headers = {str(k).lower(): _first(v) for k, v in _mapping(resp.get("headers")).items()}
        response_json = resp.get("parsed_body")
        response_text = None if response_json is not None else _body_text(resp.get("body"))
        if response_text is not None and response_json is None and "json" in headers.get("content-type", ""):
            try:
                response_json = json.loads(response_text)
                response_text = None
            except ValueError:
                pass
        request_json = req.get("parsed_body")
        request_text = None if request_json is not None else _body_text(req.get("body"))
        out.append(
            Interaction(
                cassette=path,
                index=i,
                method=str(req.get("method", "")),
                uri=str(req.get("uri", "")),
                request_json=request_json,
                request_text=request_text,
                status=code,
                response_headers=headers,
                response_json=response_json,
                response_text=response_text,
            )
        )
    return tuple(out)


def iter_interactions(*subdirs: str) -> Iterator[Interaction]:
    """Every interaction in the given folders under the shared root (recursively), in path order."""
    root = cassette_root()
    if root is None:
        return
    for sub in subdirs:
        folder = root / sub
        if not folder.exists():
            continue
        for path in sorted(folder.rglob("*.yaml")):
            yield from load(path)
