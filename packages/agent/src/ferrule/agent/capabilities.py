"""Capabilities: ordered bundles of tools, toolsets, instructions, hooks, policies and more.

```python
from ferrule.agent import Agent
from ferrule.agent.capabilities import Capability

billing = Capability(
    "billing",
    description="Look up invoices and refunds.",
    instructions="Amounts are in cents.",
    tools=[find_invoice, refund],
    loading="on_demand",
)
agent = Agent(model, capabilities=[billing])
```

An **eager** capability is active from the start of a run. An **on-demand** one contributes only a
line in a catalog instruction and the framework's `load_capability` tool; when the model calls
it, the capability and its dependencies (dependency-first) are checked against everything active
and already planned in the same step, their instructions are returned as the tool result, and all
their contributions become active together before the next request. Loads are atomic: a conflict
or a failing instruction function leaves nothing active.

Capabilities compose in tiers: `inherited`, `agent` (`Agent(capabilities=...)`), `run`
(`run(capabilities=...)`), `nested` and `subagent` (`run(capability_layers=...)`), then in
declaration order within a tier; the order of the layers passed cannot change tier precedence.
Contributions follow that order: tools and toolsets after the agent's own, hooks and tool
policies after the agent's, history processors between the agent's and the run's, output
validators after the agent's. Settings merge model → capabilities (in order) → agent → run, so
direct agent and run settings win. Model selectors run in order, each receiving the model chosen
so far.

`unload="history"` (default): a later run given this history reconstructs the load from the
`CapabilityLoadDeltaPart` it recorded. `unload="run_end"`: forgotten when the run ends, but kept
across a pause and resume of the same run.
"""

from __future__ import annotations

from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Sequence
from typing import Any
from typing import Generic
from typing import Literal
from typing import TypeAlias

from ferrule.core.errors import UserError
from ferrule.core.model import Model
from ferrule.core.settings import ModelSettings

from ._context import DepsT
from ._context import RunContext
from ._errors import AgentRunError
from ._tools import Tool
from ._tools import as_tool
from .hooks import Hook
from .hooks import check_hooks
from .policies import ToolPolicy
from .toolsets import AbstractToolset

__all__ = [
    "MAX_CAPABILITIES",
    "Capability",
    "CapabilityConflictError",
    "CapabilityDependencyError",
    "CapabilityError",
    "CapabilityLayer",
    "CapabilityLoading",
    "CapabilityRegistry",
    "CapabilitySnapshot",
    "CapabilityTier",
    "CapabilityUnload",
    "ModelSelector",
    "UnknownCapabilityError",
]

CapabilityTier: TypeAlias = Literal["inherited", "agent", "run", "nested", "subagent"]
"""Composition tiers, lowest precedence first."""
CapabilityLoading: TypeAlias = Literal["eager", "on_demand"]
"""`eager`: active from the start; `on_demand`: loaded by the model through `load_capability`."""
CapabilityUnload: TypeAlias = Literal["history", "run_end"]
"""What a later run does with an on-demand load found in its history."""
ModelSelector: TypeAlias = Callable[[RunContext[Any], Model], Model]
"""`selector(ctx, model_so_far) -> model` run before each request."""

TIERS: tuple[CapabilityTier, ...] = ("inherited", "agent", "run", "nested", "subagent")
"""Tiers in composition order."""
_TIER_RANK = {tier: rank for rank, tier in enumerate(TIERS)}

MAX_CAPABILITIES = 256
"""Most capabilities one run may know (eager and on demand, all tiers)."""


class CapabilityError(UserError):
    """A capability configuration is invalid; raised before the first model request."""


class UnknownCapabilityError(CapabilityError):
    """A capability ID (asked for, or named as a dependency) is not registered."""


class CapabilityDependencyError(CapabilityError):
    """Capability dependencies form a cycle."""


class CapabilityConflictError(CapabilityError, AgentRunError):
    """Activating a capability would put two conflicting capabilities together."""


InstructionItem: TypeAlias = "str | Callable[..., str | Awaitable[str | None] | None]"


class Capability(Generic[DepsT]):
    """A bundle of contributions to an agent, activated as one unit."""

    def __init__(
        self,
        id: str | None = None,
        *,
        description: str | None = None,
        # `None`, not `()`: with an empty-tuple default pyright leaves DepsT unknown instead of its default.
        tools: Sequence[Tool[DepsT] | Callable[..., Any]] | None = None,
        toolsets: Sequence[AbstractToolset[DepsT]] | None = None,
        instructions: str | Callable[..., Any] | Sequence[str | Callable[..., Any]] | None = None,
        hooks: Sequence[Hook] = (),
        tool_policies: Sequence[ToolPolicy] = (),
        history_processors: Sequence[Callable[..., Any]] = (),
        output_validators: Sequence[Callable[..., Any]] = (),
        model_settings: ModelSettings | None = None,
        model_selector: ModelSelector | None = None,
        loading: CapabilityLoading = "eager",
        dependencies: Sequence[str] = (),
        conflicts: Sequence[str] = (),
        unload: CapabilityUnload = "history",
    ) -> None:
        if loading not in ("eager", "on_demand"):
            raise CapabilityError(f"loading must be 'eager' or 'on_demand', got {loading!r}")
        if unload not in ("history", "run_end"):
            raise CapabilityError(f"unload must be 'history' or 'run_end', got {unload!r}")
        if id is None and (loading == "on_demand" or dependencies or conflicts):
            raise CapabilityError(
                "a capability that loads on demand or declares dependencies or conflicts needs a stable id"
            )
        if id is not None and (not id or not id.replace("_", "").replace("-", "").replace(".", "").isalnum()):
            raise CapabilityError(f"invalid capability id {id!r}: use letters, digits, '_', '-' and '.'")
        self.id = id
        """Stable identifier (required for on-demand capabilities, dependencies and conflicts)."""
        self.description = description
        """One line for the on-demand catalog."""
        self.tools: list[Tool[DepsT]] = [as_tool(t) for t in tools or ()]
        """Tools contributed while active."""
        self.toolsets = list(toolsets or ())
        """Toolsets contributed while active (entered when the capability activates)."""
        items: Sequence[Any] = (
            ()
            if instructions is None
            else [instructions]
            if isinstance(instructions, str) or callable(instructions)
            else instructions
        )
        for item in items:
            if not isinstance(item, str) and not callable(item):
                raise CapabilityError(f"instructions must be strings or functions, got {item!r}")
        self.instructions: list[Any] = [i for i in items if not isinstance(i, str) or i]
        """Static strings and instruction functions (`fn(ctx)` or `fn()`, sync or async)."""
        self.hooks = check_hooks(hooks)
        """Lifecycle hooks, run after the agent's."""
        self.tool_policies = list(tool_policies)
        """Tool policies, run after the agent's."""
        self.history_processors = list(history_processors)
        """History processors, run after the agent's and before the run's."""
        self.output_validators = list(output_validators)
        """Output validators, run after the agent's."""
        self.model_settings = model_settings
        """Settings layered over the model's and under the agent's and run's."""
        self.model_selector = model_selector
        """Chooses the model for each request from the model chosen so far."""
        self.loading: CapabilityLoading = loading
        """Eager or on demand."""
        self.dependencies = list(dependencies)
        """IDs of capabilities activated before this one."""
        self.conflicts = list(conflicts)
        """IDs of capabilities that may not be active together with this one."""
        self.unload: CapabilityUnload = unload
        """What later runs do with an on-demand load found in history."""

    def conflicts_with(self, other: Capability[Any]) -> bool:
        """Whether either capability declares a conflict with the other."""
        return (other.id is not None and other.id in self.conflicts) or (
            self.id is not None and self.id in other.conflicts
        )

    def __repr__(self) -> str:
        return f"Capability({self.id!r}, loading={self.loading!r})"


class CapabilityLayer:
    """Capabilities at one composition tier (for `run(capability_layers=...)`)."""

    __slots__ = ("capabilities", "tier")

    def __init__(self, tier: CapabilityTier, capabilities: Sequence[Capability[Any]]) -> None:
        if tier not in _TIER_RANK:
            raise CapabilityError(f"unknown capability tier {tier!r}; use one of {', '.join(TIERS)}")
        self.tier: CapabilityTier = tier
        """The tier."""
        self.capabilities = list(capabilities)
        """The capabilities, in declaration order."""


class CapabilitySnapshot:
    """The capabilities active in a run (available as `ctx.capabilities`)."""

    __slots__ = ("active", "capabilities", "loaded_on_demand")

    def __init__(self, capabilities: Sequence[Capability[Any]], loaded_on_demand: Iterable[str]) -> None:
        self.capabilities: tuple[Capability[Any], ...] = tuple(capabilities)
        """The active capabilities, in composition order."""
        self.active: tuple[str, ...] = tuple(c.id for c in capabilities if c.id is not None)
        """IDs of the active capabilities, in composition order."""
        self.loaded_on_demand: tuple[str, ...] = tuple(loaded_on_demand)
        """The subset of `active` loaded through `load_capability`, in load order."""

    def is_active(self, capability_id: str) -> bool:
        """Whether the capability `capability_id` is active."""
        return capability_id in self.active

    def __repr__(self) -> str:
        return f"CapabilitySnapshot(active={list(self.active)})"


class CapabilityRegistry:
    """Validated capabilities of a run with dependency planning, usable without running an agent."""

    def __init__(self, layers: Sequence[CapabilityLayer] | Sequence[Capability[Any]]) -> None:
        entries: list[tuple[int, int, Capability[Any]]] = []
        for position, item in enumerate(layers):
            if isinstance(item, CapabilityLayer):
                rank = _TIER_RANK[item.tier]
                entries.extend(
                    (rank, position * MAX_CAPABILITIES + i, c) for i, c in enumerate(item.capabilities)
                )
            else:
                entries.append((_TIER_RANK["agent"], position, item))
        entries.sort(key=lambda e: (e[0], e[1]))  # tier first; declaration order within a tier
        seen: set[int] = set()
        ordered: list[Capability[Any]] = []
        for _, _, capability in entries:
            if not isinstance(capability, Capability):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise CapabilityError(f"expected a Capability, got {capability!r}")
            if id(capability) in seen:
                continue  # the same bundle at two tiers counts once, at the lower tier
            seen.add(id(capability))
            ordered.append(capability)
        if len(ordered) > MAX_CAPABILITIES:
            raise CapabilityError(
                f"a run may know at most {MAX_CAPABILITIES} capabilities, got {len(ordered)}"
            )
        self.capabilities: tuple[Capability[Any], ...] = tuple(ordered)
        """Every capability, in composition order."""
        self._rank = {id(c): i for i, c in enumerate(ordered)}
        self._by_id: dict[str, Capability[Any]] = {}
        for capability in ordered:
            if capability.id is None:
                continue
            if capability.id in self._by_id:
                raise CapabilityError(f"two different capabilities have the id {capability.id!r}")
            self._by_id[capability.id] = capability
        for capability in ordered:
            for dependency in capability.dependencies:
                if dependency not in self._by_id:
                    raise UnknownCapabilityError(
                        f"capability {capability.id!r} depends on {dependency!r}, which is not registered for this run"
                    )
        for capability in ordered:
            self._check_cycle(capability, [])

    def _check_cycle(self, capability: Capability[Any], path: list[str]) -> None:
        assert capability.id is not None or not capability.dependencies
        if capability.id in path:
            cycle = " -> ".join([*path[path.index(capability.id) :], capability.id])
            raise CapabilityDependencyError(f"capability dependencies form a cycle: {cycle}")
        for dependency in capability.dependencies:
            self._check_cycle(self._by_id[dependency], [*path, capability.id or "?"])

    @property
    def on_demand(self) -> list[Capability[Any]]:
        """The capabilities that load on demand, in composition order."""
        return [c for c in self.capabilities if c.loading == "on_demand"]

    def get(self, capability_id: str) -> Capability[Any] | None:
        """The capability with this ID, if registered."""
        return self._by_id.get(capability_id)

    def __contains__(self, capability_id: object) -> bool:
        return capability_id in self._by_id

    def order(self, capability: Capability[Any]) -> int:
        """The capability's position in composition order."""
        return self._rank[id(capability)]

    def plan(
        self,
        ids: Sequence[str],
        active: Sequence[Capability[Any]] = (),
        planned: Sequence[Capability[Any]] = (),
    ) -> list[Capability[Any]]:
        """The capabilities to activate for `ids`: dependencies first, without those already active.

        `planned` are loads already planned (in the same step) but not active yet. Raises
        `UnknownCapabilityError` for an unregistered ID and `CapabilityConflictError` when a
        planned capability conflicts with an active one or with one planned before it.
        """
        targets: list[Capability[Any]] = []
        for capability_id in ids:
            capability = self._by_id.get(capability_id)
            if capability is None:
                known = ", ".join(self._by_id) or "none"
                raise UnknownCapabilityError(f"unknown capability {capability_id!r}; registered: {known}")
            targets.append(capability)
        return self._plan(targets, active, planned)

    def eager_plan(self) -> list[Capability[Any]]:
        """Every eager capability with its dependencies, conflicts checked (run set-up)."""
        return self._plan([c for c in self.capabilities if c.loading == "eager"], (), ())

    def _plan(
        self,
        targets: Sequence[Capability[Any]],
        active: Sequence[Capability[Any]],
        earlier: Sequence[Capability[Any]],
    ) -> list[Capability[Any]]:
        active_ids = {id(c) for c in active}
        earlier_ids = {id(c) for c in earlier}
        planned: list[Capability[Any]] = []
        planned_ids: set[int] = set()

        def visit(capability: Capability[Any]) -> None:
            if id(capability) in active_ids or id(capability) in earlier_ids or id(capability) in planned_ids:
                return
            for dependency in capability.dependencies:
                visit(self._by_id[dependency])
            for other in [*active, *earlier, *planned]:
                if capability.conflicts_with(other):
                    where = (
                        "already active"
                        if id(other) in active_ids
                        else "planned in the same load"
                        if id(other) in planned_ids
                        else "planned earlier in this step"
                    )
                    raise CapabilityConflictError(
                        f"capability {capability.id!r} conflicts with {other.id!r}, which is {where}"
                    )
            planned.append(capability)
            planned_ids.add(id(capability))

        for target in targets:
            visit(target)
        return planned
