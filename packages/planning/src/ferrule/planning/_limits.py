"""Bounds shared by plans and plan documents."""

from __future__ import annotations

from typing import Any
from typing import Final

from ferrule.core import bounded_json

from ._errors import PlanError

MAX_PLAN_STEPS: Final = 256
"""Most steps of one `Plan` revision."""
MAX_STEP_ID_CHARS: Final = 64
"""Longest step ID."""
MAX_TITLE_CHARS: Final = 256
"""Longest step title."""
MAX_ADVISORS: Final = 16
"""Most advisors one `run` consults."""
MAX_ADVICE_CHARS: Final = 4096
"""Longest advice kept from one advisor; longer advice is cut there and marked `truncated`."""
MAX_POINTER_CHARS: Final = 512
"""Longest JSON Pointer in a condition or binding."""
MAX_BINDINGS: Final = 32
"""Most bindings of one plan-document step."""
MAX_ERROR_CHARS: Final = 1000
"""Longest error text kept on a step, receipt or event (the rest is cut and marked)."""
MAX_AGENT_PROMPT_CHARS: Final = 8000
"""Longest prompt of an agentic step."""

PLAN_DOCUMENT: Final = bounded_json.JsonLimits(
    name="plan_document",
    max_bytes=256 * 1024,
    max_depth=32,
    max_string_bytes=64 * 1024,
    max_items=1_000,
    max_number_chars=64,
)
"""The JSON limits a plan document or patch given as text must respect before it is decoded."""


def clip(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """`text` cut to `limit` characters, with a marker saying how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit} more characters]"


def check_step_id(step_id: Any, *, what: str = "step ID") -> str:
    """`step_id` if it is a usable step ID, else `PlanError`."""
    if not isinstance(step_id, str):
        raise PlanError(f"the {what} must be a string, got {type(step_id).__name__}")
    if not step_id or step_id != step_id.strip():
        raise PlanError(f"the {what} {step_id!r} is empty or has leading or trailing whitespace")
    if len(step_id) > MAX_STEP_ID_CHARS:
        raise PlanError(
            f"the {what} is {len(step_id)} characters long; the limit is {MAX_STEP_ID_CHARS}",
            step_id=step_id[:MAX_STEP_ID_CHARS] + "...",
        )
    if not step_id.isprintable():
        raise PlanError(f"the {what} {step_id!r} contains control characters")
    return step_id
