"""The built-in `tool_search` tool: BM25 over the names and descriptions of deferred tools."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from ferrule.core.model import ToolDefinition

__all__ = ["BM25", "MAX_RESULTS", "TOOL_SEARCH_NAME", "tokenize"]

TOOL_SEARCH_NAME = "tool_search"
"""The name of the framework's search tool."""
MAX_RESULTS = 20
"""Most tools one search may return."""

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_NAME_WEIGHT = 2  # a word of the tool's name counts twice: names are short and deliberate


def tokenize(text: str) -> list[str]:
    """Lower-case words of `text`, splitting snake_case, kebab-case, camelCase and digits."""
    return [w.lower() for w in _WORD.findall(text)]


class BM25:
    """Okapi BM25 ranking of tool definitions (k1=1.2, b=0.75)."""

    __slots__ = ("_avg", "_docs", "_idf", "_lengths", "definitions")

    K1 = 1.2
    B = 0.75

    def __init__(self, definitions: Sequence[ToolDefinition]) -> None:
        self.definitions = list(definitions)
        self._docs: list[Counter[str]] = []
        self._lengths: list[int] = []
        frequency: Counter[str] = Counter()
        for definition in self.definitions:
            words = tokenize(definition.name) * _NAME_WEIGHT + tokenize(definition.description or "")
            counts = Counter(words)
            self._docs.append(counts)
            self._lengths.append(len(words))
            frequency.update(counts.keys())
        n = len(self.definitions)
        self._avg = (sum(self._lengths) / n) if n else 0.0
        self._idf = {term: math.log((n - df + 0.5) / (df + 0.5) + 1.0) for term, df in frequency.items()}

    def scores(self, query: str) -> list[float]:
        """One score per definition (0 when no query word occurs in it)."""
        terms = tokenize(query)
        result: list[float] = []
        for counts, length in zip(self._docs, self._lengths, strict=True):
            score = 0.0
            norm = self.K1 * (1 - self.B + self.B * (length / self._avg if self._avg else 0.0))
            for term in terms:
                tf = counts.get(term, 0)
                if tf:
                    score += self._idf[term] * tf * (self.K1 + 1) / (tf + norm)
            result.append(score)
        return result

    def search(self, query: str, limit: int) -> list[ToolDefinition]:
        """The best `limit` matches with a positive score, best first (ties keep catalog order)."""
        scored = [(s, i) for i, s in enumerate(self.scores(query)) if s > 0]
        scored.sort(key=lambda item: (-item[0], item[1]))
        return [self.definitions[i] for _, i in scored[:limit]]
