"""Read the recorded provider traffic in `../shared/cassettes` (vcrpy YAML) in place.

The recordings are data for conformance tests; they are never copied into this repository.
Tests call [`cassette_root`][] and skip when the folder is absent, or fail under CI
(`tests.support.shared`). Reading and replaying them is `ferrule.core.conformance`'s.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ferrule.core.conformance import Interaction
from ferrule.core.conformance import iter_cassettes
from ferrule.core.conformance import load_cassette
from tests.support.shared import SHARED
from tests.support.shared import missing_reason
from tests.support.shared import require_shared
from tests.support.shared import shared_path

__all__ = [
    "ANTHROPIC_FOLDERS",
    "CASSETTES",
    "GOOGLE_FOLDERS",
    "OPENAI_FOLDERS",
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

OPENAI_FOLDERS = (
    "models/cassettes/test_openai",
    "models/cassettes/test_openai_responses",
    "models/cassettes/test_openai_prompt_cache",
    "models/cassettes/test_groq",
    "models/cassettes/test_openrouter",
    "models/cassettes/test_deepseek",
    "models/cassettes/test_deepseek_responses",
    "models/cassettes/test_huggingface",
    "models/cassettes/test_zai",
    "models/cassettes/test_tool_choice_matrix",
    "models/openrouter",
)
"""The recordings of OpenAI's APIs and the OpenAI-compatible servers."""
ANTHROPIC_FOLDERS = (
    "models/cassettes/test_anthropic",
    "models/cassettes/test_anthropic_mid_conversation_system",
    "models/anthropic",
)
"""The recordings of the Anthropic Messages API."""
GOOGLE_FOLDERS = ("models/cassettes/test_google", "models/google")
"""The recordings of the Gemini API and Vertex AI."""

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
