"""What each Foo model supports: fail-closed profiles, checked before any request is sent."""

from __future__ import annotations

from ferrule.core.profile import ModelProfile

__all__ = ["foo_profile"]

_TEXT_ONLY = ModelProfile(
    supports_tools=False,
    content_kinds=frozenset({"text"}),
    supported_settings=frozenset({"max_tokens", "temperature", "timeout", "extra_headers", "extra_body"}),
    max_output_tokens=4096,
)


def foo_profile(model_name: str) -> ModelProfile:
    """The profile of `model_name`: every Foo model takes text and answers in text, without tools.

    A real provider maps model families to what they support, and gives names it does not know
    the smallest profile (fail closed), never the largest.
    """
    del model_name
    return _TEXT_ONLY
