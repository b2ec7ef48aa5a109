"""The errors of ferrule-ui."""

from __future__ import annotations

from ferrule.core.errors import FerruleError

__all__ = [
    "ApprovalConflictError",
    "ClientInputError",
    "InvalidIdentifierError",
    "ReplayGapError",
    "StoreFullError",
    "UIError",
]


class UIError(FerruleError):
    """Base class of ferrule-ui's errors."""


class InvalidIdentifierError(UIError, ValueError):
    """A thread, run, part, tool, approval or custom-value identity is empty, too long or unsafe."""

    def __init__(self, kind: str, value: str, reason: str) -> None:
        self.kind = kind
        """Which identity was rejected (`"thread_id"`, `"tool_call_id"`, ...)."""
        shown = value if len(value) <= 40 else value[:40] + "..."
        super().__init__(f"invalid {kind} {shown!r}: {reason}")


class ClientInputError(UIError, ValueError):
    """Input from a browser was malformed, over a limit or not allowed; the apps answer it with a 4xx."""

    def __init__(self, message: str, *, status: int = 400) -> None:
        self.status = status
        """The HTTP status the apps answer with (400, 413, 422, ...)."""
        super().__init__(message)


class ApprovalConflictError(UIError):
    """An approval arrived for a run that is not paused (any more): it was already resumed, or never paused."""


class ReplayGapError(UIError):
    """The records a reconnecting client asked for were already evicted from the replay buffer."""


class StoreFullError(UIError):
    """The paused-run store holds its maximum number of runs; resume or discard some first."""
