"""Pieces shared by the graph tests."""

from __future__ import annotations

import itertools
from typing import Any

from ferrule.graph import GraphBuilder

__all__ = ["chain"]


def chain(g: GraphBuilder[Any, Any, Any, Any, Any], *names: str) -> None:
    """Route the steps `names` of `g` one after another: the run enters at the first, each connects
    to the next, the last finishes."""
    g.entry(names[0])
    for node, target in itertools.pairwise(names):
        g.connect(node, target)
    g.finish(names[-1])
