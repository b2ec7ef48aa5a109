"""The bounds on everything a browser sends and on what the bridge delivers."""

from __future__ import annotations

from typing import Final
from typing import Literal
from typing import TypeAlias

import msgspec

from ferrule.core.bounded_json import JsonLimits

__all__ = ["DEFAULT_LIMITS", "OnDisconnect", "UILimits"]

_KIB: Final = 1024
_MIB: Final = 1024 * 1024


class UILimits(msgspec.Struct, frozen=True, kw_only=True):
    """Inclusive limits on client input and on delivered identities and custom values.

    Change one with `msgspec.structs.replace(DEFAULT_LIMITS, max_messages=...)`.
    """

    max_body_bytes: int = 1 * _MIB
    """Bytes of one request body."""
    max_json_depth: int = 32
    """Nesting depth of a request body."""
    max_messages: int = 200
    """Messages in one posted history."""
    max_parts: int = 64
    """Parts (AI SDK) or content parts (AG-UI) of one message."""
    max_text_bytes: int = 32 * _KIB
    """UTF-8 bytes of the text of one message."""
    max_total_text_bytes: int = 256 * _KIB
    """UTF-8 bytes of all message text in one history."""
    max_approvals: int = 64
    """Approval decisions in one request."""
    max_reason_bytes: int = 1 * _KIB
    """UTF-8 bytes of one decision's reason."""
    max_id_bytes: int = 128
    """Bytes of one identity (thread, run, part, tool call, approval)."""
    max_custom_name_bytes: int = 64
    """Bytes of a custom value's name."""
    max_custom_value_bytes: int = 64 * _KIB
    """Bytes of a custom value's encoded JSON."""

    def __post_init__(self) -> None:
        for field in self.__struct_fields__:
            value = getattr(self, field)
            if type(value) is not int or value < 1:
                raise ValueError(f"UILimits.{field} must be a positive int, got {value!r}")

    def body_json(self) -> JsonLimits:
        """The JSON limits of one request body."""
        return JsonLimits(
            name="ui_request",
            max_bytes=self.max_body_bytes,
            max_depth=self.max_json_depth,
            # Clients echo earlier tool inputs and outputs back inside the history, so single strings
            # and collections are bounded by the body size; message text has its own limits.
            max_string_bytes=self.max_body_bytes,
            max_items=max(self.max_messages, self.max_parts, self.max_approvals, 4096),
            max_number_chars=64,
        )


DEFAULT_LIMITS: Final = UILimits()
"""The default limits."""


OnDisconnect: TypeAlias = Literal["cancel", "continue"]
"""What a client's disconnect does to the apps' run: cancel (and drain) it, or let it finish into the
replay buffer, where a reconnecting client finds it."""
