"""Read the recorded provider traffic in `../shared/cassettes` (vcrpy YAML) in place.

The recordings are data for conformance tests; they are never copied into this repository.
Tests call [`cassette_root`][] and skip when the folder is absent, or fail under CI
(`tests.support.shared`). Reading and replaying them is `ferrule.core.conformance`'s.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ferrule.core.conformance import Interaction, iter_cassettes, load_cassette
from tests.support.shared import SHARED, missing_reason, require_shared, shared_path

__all__ = [
    "CASSETTES",
    "REPO_ROOT",
    "SKIP_REASON",
    "Interaction",
    "cassette_root",
    "iter_interactions",
    "load",
    "require_cassettes",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
"""The root of this repository."""

CASSETTES = "cassettes/pydantic-ai"
"""The PydanticAI recordings, relative to the shared folder."""

SKIP_REASON = missing_reason(SHARED / CASSETTES)

load = load_cassette
"""Load one cassette file."""


def cassette_root() -> Path | None:
    """The root of the shared PydanticAI recordings, or `None` when absent (under CI: a failure)."""
    return shared_path(CASSETTES)


def require_cassettes() -> Path:
    """The root of the shared PydanticAI recordings for the calling test: skips it when they are
    absent, fails it under CI."""
    return require_shared(CASSETTES)


def iter_interactions(*subdirs: str) -> Iterator[Interaction]:
    """Every interaction in the given folders under the shared root (recursively), in path order."""
    root = cassette_root()
    if root is None:
        return
    yield from iter_cassettes(root, *subdirs)
