"""Agno's side of the workloads it has an equivalent for: building an agent (workload 10), the
figure Agno leads with. `Agent(model=OpenAIChat(...), tools=[add])` with the model built once.

Agno has no no-network function model, and its OpenAI model takes an `httpx` client where every
other framework here gets the same `httpx2` one, so the run workloads are not comparable: n/a."""

# pyright: basic, reportMissingImports=false
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tools.bench._common import API_KEY
from tools.bench._common import MODEL
from tools.bench._common import Unsupported
from tools.bench._common import add

NAME = "agno"

_NOT_COMPARABLE = "no comparable workload (no function model; its OpenAI model takes an httpx client)"


class Bench:
    """Agno's side of workload 10."""

    name = NAME

    async def aclose(self) -> None:
        """Nothing to close: no client is opened."""

    def instantiate(self, base: str) -> Callable[[], Any]:
        """Workload 10: `Agent(model, tools=[add])`, the model built once."""
        from agno.agent import Agent
        from agno.models.openai import OpenAIChat

        model = OpenAIChat(id=MODEL, api_key=API_KEY, base_url=base)
        return lambda: Agent(model=model, tools=[add])

    def first_run(self) -> Any:
        """Workload 10c: not comparable (see the module docs)."""
        raise Unsupported(_NOT_COMPARABLE)

    def __getattr__(self, name: str) -> Any:
        # Every other workload: reported as n/a with the reason.
        def unsupported(*args: Any, **kwargs: Any) -> Any:
            raise Unsupported(_NOT_COMPARABLE)

        return unsupported
