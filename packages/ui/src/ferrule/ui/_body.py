"""Reading what a browser posts: the body decoded under the limits, its identities and history size checked."""

from __future__ import annotations

from typing import TypeVar

from ferrule.core import bounded_json

from ._errors import ClientInputError
from ._ids import check_id
from ._limits import UILimits

__all__ = ["check_history_length", "client_id", "decode_body"]

_T = TypeVar("_T")


def decode_body(body: bytes | str, type: type[_T], what: str, limits: UILimits) -> _T:
    """`body` decoded as `type` under `limits.body_json()`; raises `ClientInputError` (413) when it is
    over a limit, and (400) when it is not a valid `what`."""
    try:
        return bounded_json.decode(body, type=type, limits=limits.body_json())
    except bounded_json.JsonLimitError as exc:
        raise ClientInputError(f"the request body was refused: {exc}", status=413) from None
    except bounded_json.JsonError as exc:
        raise ClientInputError(f"the request body is not a valid {what}: {exc}") from None


def client_id(kind: str, value: object, max_bytes: int) -> str:
    """`check_id` for an identity a client sent: an unsafe one is refused with `ClientInputError` (400)."""
    try:
        return check_id(kind, value, max_bytes)
    except ValueError as exc:
        raise ClientInputError(str(exc)) from None


def check_history_length(count: int, limits: UILimits) -> None:
    """Refuses (`ClientInputError`, 413) a history of more than `limits.max_messages` messages."""
    if count > limits.max_messages:
        raise ClientInputError(
            f"the history has {count} messages; the limit is {limits.max_messages}", status=413
        )
