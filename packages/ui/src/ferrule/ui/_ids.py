"""Validation of the identities that cross into a browser (thread, run, part, tool call, approval, custom name)."""

from __future__ import annotations

import re
from typing import Final

from ._errors import InvalidIdentifierError

__all__ = ["MAX_ID_BYTES", "check_id", "check_name"]

MAX_ID_BYTES: Final = 128
"""The default longest identity, in bytes."""

# Identities are echoed into JSON, SSE records, URLs and DOM attributes: only characters that need
# no escaping in any of them are allowed.
_ID_RE: Final = re.compile(r"[A-Za-z0-9_.:\-]+")
_NAME_RE: Final = re.compile(r"[A-Za-z0-9_\-]+")


def check_id(kind: str, value: object, max_bytes: int = MAX_ID_BYTES) -> str:
    """Return `value` if it is a safe identity: a non-empty `str` of at most `max_bytes` bytes of
    ASCII letters, digits, `_`, `.`, `:` and `-`; raise `InvalidIdentifierError` otherwise."""
    return _checked(kind, value, max_bytes, _ID_RE, "'_', '.', ':' and '-'")


def check_name(kind: str, value: object, max_bytes: int) -> str:
    """Return `value` if it is a safe name (tool or custom-value name): ASCII letters, digits, `_`
    and `-`, non-empty, at most `max_bytes` bytes; raise `InvalidIdentifierError` otherwise."""
    return _checked(kind, value, max_bytes, _NAME_RE, "'_' and '-'")


def _checked(kind: str, value: object, max_bytes: int, allowed: re.Pattern[str], punctuation: str) -> str:
    if not isinstance(value, str):
        raise InvalidIdentifierError(kind, repr(value), f"must be a string, got {type(value).__name__}")
    if not value:
        raise InvalidIdentifierError(kind, value, "must not be empty")
    if len(value) > max_bytes:
        raise InvalidIdentifierError(
            kind, value, f"is {len(value)} characters long; the limit is {max_bytes}"
        )
    if allowed.fullmatch(value) is None:
        raise InvalidIdentifierError(kind, value, f"may only contain ASCII letters, digits, {punctuation}")
    return value
