"""Finding a secret anywhere it must not be: exceptions and what they reach, log records, spans, events.

`exception_texts` walks an exception the way code that catches it could: `str`, `repr`, `args`,
notes, every attribute (recursively, through containers, msgspec structs and plain objects),
`__cause__`, `__context__` and exception-group members. It also reports every `httpx2.Request` or
`httpx2.Response` it reaches, since those hold the credential headers.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any
from typing import cast

import httpx2
import msgspec

__all__ = ["DEBUG_LOGGERS", "exception_texts", "find_leaks", "log_texts", "span_texts"]

DEBUG_LOGGERS = ("ferrule", "httpx2", "httpcore2", "mcp", "opentelemetry")
"""Loggers whose own level a leak test sets to DEBUG (besides the root logger)."""

_MAX_DEPTH = 16


class _Walk:
    def __init__(self) -> None:
        self.texts: list[str] = []
        self.http_objects: list[object] = []
        self._seen: set[int] = set()

    def visit(self, obj: object, depth: int = 0) -> None:
        if obj is None or isinstance(obj, bool | int | float) or depth > _MAX_DEPTH:
            return
        if isinstance(obj, str):
            self.texts.append(obj)
            return
        if isinstance(obj, bytes | bytearray):
            self.texts.append(bytes(obj).decode("latin-1"))
            return
        if id(obj) in self._seen:
            return
        self._seen.add(id(obj))
        deeper = depth + 1
        if isinstance(obj, httpx2.Request | httpx2.Response):
            self.http_objects.append(obj)
            self.texts.append(repr(obj.headers.raw))
            return
        if isinstance(obj, BaseException):
            self.texts += [str(obj), repr(obj)]
            for part in (obj.args, getattr(obj, "__notes__", None), obj.__cause__, obj.__context__):
                self.visit(part, deeper)
            self.visit(vars(obj), deeper)
            if isinstance(obj, BaseExceptionGroup):
                self.visit(cast("BaseExceptionGroup[BaseException]", obj).exceptions, deeper)
            return
        if isinstance(obj, dict):
            for key, value in cast("dict[Any, Any]", obj).items():
                self.visit(key, deeper)
                self.visit(value, deeper)
            return
        if isinstance(obj, list | tuple | set | frozenset):
            for item in cast("Iterable[Any]", obj):
                self.visit(item, deeper)
            return
        if isinstance(obj, msgspec.Struct):
            for name in obj.__struct_fields__:
                self.visit(getattr(obj, name), deeper)
            return
        attributes: object = getattr(obj, "__dict__", None)
        if isinstance(attributes, dict):
            self.visit(cast("dict[str, Any]", attributes), deeper)
        for name in getattr(type(obj), "__slots__", ()):
            self.visit(getattr(obj, name, None), deeper)


def exception_texts(exc: BaseException) -> tuple[list[str], list[object]]:
    """Every text reachable from `exc`, and every httpx2 request or response object reachable from it."""
    walk = _Walk()
    walk.visit(exc)
    return walk.texts, walk.http_objects


def log_texts(records: Iterable[logging.LogRecord]) -> list[str]:
    """Each record's message and, when it carries one, its formatted exception."""
    formatter = logging.Formatter()
    texts: list[str] = []
    for record in records:
        texts.append(record.getMessage())
        if record.exc_info:
            texts.append(formatter.formatException(record.exc_info))
    return texts


def span_texts(spans: Iterable[Any]) -> list[str]:
    """Each finished OpenTelemetry span as JSON (name, attributes, events, status)."""
    return [span.to_json() for span in spans]


def find_leaks(secret: str, texts: Iterable[str]) -> list[str]:
    """The texts that contain `secret` (each cut to 300 characters around it, for the failure message)."""
    found: list[str] = []
    for text in texts:
        at = text.find(secret)
        if at >= 0:
            found.append(text[max(at - 150, 0) : at + len(secret) + 150])
    return found
