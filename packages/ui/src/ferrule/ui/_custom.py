"""Typed application values sent to the browser under explicit name and size limits."""

from __future__ import annotations

from typing import Any

import msgspec

from ._errors import UIError
from ._events import CustomValue
from ._ids import check_id
from ._ids import check_name
from ._limits import DEFAULT_LIMITS
from ._limits import UILimits

__all__ = ["CustomValueTooLargeError", "custom_value"]


class CustomValueTooLargeError(UIError, ValueError):
    """A custom value's JSON is larger than `UILimits.max_custom_value_bytes`."""


def custom_value(
    name: str,
    value: Any,
    *,
    id: str | None = None,
    limits: UILimits = DEFAULT_LIMITS,
) -> CustomValue:
    """Serialize `value` (anything msgspec encodes: Structs, dataclasses, dicts, ...) as a `CustomValue`.

    `name` must be 1 to `limits.max_custom_name_bytes` ASCII letters, digits, `_` or `-` (it becomes
    the AI SDK's `data-<name>` chunk type); the encoded JSON may be at most
    `limits.max_custom_value_bytes` bytes. Raises `InvalidIdentifierError`, `CustomValueTooLargeError`,
    or `TypeError` for a value msgspec cannot encode.
    """
    check_name("custom value name", name, limits.max_custom_name_bytes)
    if id is not None:
        check_id("custom value id", id, limits.max_id_bytes)
    try:
        raw = msgspec.json.encode(value)
    except (TypeError, msgspec.EncodeError) as exc:
        raise TypeError(f"custom value {name!r} cannot be encoded as JSON: {exc}") from None
    if len(raw) > limits.max_custom_value_bytes:
        raise CustomValueTooLargeError(
            f"custom value {name!r} encodes to {len(raw)} bytes; the limit is "
            f"{limits.max_custom_value_bytes} (UILimits.max_custom_value_bytes)"
        )
    return CustomValue(name=name, value=msgspec.Raw(raw), id=id)
