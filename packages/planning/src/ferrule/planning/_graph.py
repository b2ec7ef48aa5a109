"""Dependency order shared by `Plan` and plan documents: topological, ties by declaration."""

from __future__ import annotations

import heapq
from collections.abc import Sequence


class CycleError(Exception):
    """The dependencies form a cycle; `path` lists it, starting and ending with the same step."""

    def __init__(self, path: list[str]) -> None:
        self.path = path
        super().__init__(" -> ".join(repr(p) for p in path))


def topological_order(ids: Sequence[str], depends_on: Sequence[Sequence[str]]) -> list[str]:
    """The steps in dependency order, ties broken by declaration order.

    Every dependency must be one of `ids` (the callers check that first). Raises `CycleError`
    naming one cycle, found from the first step (in declaration order) that could not be ordered.
    """
    index = {step: i for i, step in enumerate(ids)}
    waiting = [len(deps) for deps in depends_on]
    dependents: list[list[int]] = [[] for _ in ids]
    for i, deps in enumerate(depends_on):
        for dep in deps:
            dependents[index[dep]].append(i)
    ready = [i for i, count in enumerate(waiting) if count == 0]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(ids[i])
        for j in dependents[i]:
            waiting[j] -= 1
            if waiting[j] == 0:
                heapq.heappush(ready, j)
    if len(order) == len(ids):
        return order
    stuck = next(i for i, count in enumerate(waiting) if count > 0)
    raise CycleError(_cycle_from(stuck, ids, depends_on, index, waiting))


def _cycle_from(
    start: int,
    ids: Sequence[str],
    depends_on: Sequence[Sequence[str]],
    index: dict[str, int],
    waiting: list[int],
) -> list[str]:
    # Every unordered step has an unordered dependency, so walking them must revisit a step.
    seen: dict[int, int] = {}
    path: list[int] = []
    current = start
    while current not in seen:
        seen[current] = len(path)
        path.append(current)
        current = next(index[d] for d in depends_on[current] if waiting[index[d]] > 0)
    cycle = path[seen[current] :]
    return [ids[i] for i in cycle] + [ids[current]]
