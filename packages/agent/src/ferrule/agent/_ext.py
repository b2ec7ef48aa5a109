"""The extension points of one run: toolsets, capabilities, policies, hooks, budgets, queues.

A run gets a `RunExt` only when its agent or the run itself uses one of these features; otherwise
the loop never touches this module.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from collections.abc import Sequence
from contextlib import AsyncExitStack
from contextlib import asynccontextmanager
from typing import Annotated
from typing import Any
from typing import cast

import msgspec

from ferrule.core.messages import CapabilityLoadDeltaPart
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelRequestPart
from ferrule.core.messages import ToolAvailabilityDeltaPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.model import Model
from ferrule.core.model import ToolDefinition

from ._context import RunContext
from ._errors import ModelRetry
from ._run_options import EXTENSION_KEYS
from ._run_options import NO_OPTIONS
from ._run_options import RunOptions
from ._run_options import run_options
from ._state import LoopState
from ._step_tools import StepTools
from ._step_tools import prepare_tools
from ._tool_search import BM25
from ._tool_search import MAX_RESULTS
from ._tool_search import TOOL_SEARCH_NAME
from ._tools import Tool
from ._util import InstructionItem
from ._util import instruction_texts
from ._util import merged_settings
from ._util import normalize_callback
from .capabilities import Capability
from .capabilities import CapabilityError
from .capabilities import CapabilityLayer
from .capabilities import CapabilityRegistry
from .capabilities import CapabilitySnapshot
from .context_budget import BudgetEnforcer
from .hooks import HookDispatcher
from .policies import PolicyStages
from .toolsets import AbstractToolset
from .toolsets import CombinedToolset
from .toolsets import WrapperToolset
from .toolsets import tools_of

__all__ = ["EXTENSION_KEYS", "LOAD_CAPABILITY_NAME", "NO_OPTIONS", "RunExt", "RunOptions", "run_options"]

LOAD_CAPABILITY_NAME = "load_capability"
"""The name of the framework's capability-loading tool."""


async def load_capability(ctx: RunContext[Any], capability: str) -> str:
    """Load a capability from the catalog in your instructions: its tools and instructions become available.

    Args:
        capability: The ID of the capability to load, exactly as listed in the catalog.
    """
    raise AssertionError("only the copies bound to a run are called")  # pragma: no cover


async def tool_search(
    ctx: RunContext[Any],
    query: str,
    max_results: Annotated[int, msgspec.Meta(ge=1, le=MAX_RESULTS)] = 5,
) -> list[dict[str, Any]]:
    """Search for tools that are not loaded yet, by what they do; the tools found become callable on your next step.

    Args:
        query: Words describing the tool you need.
        max_results: How many tools to return at most.
    """
    raise AssertionError("only the copies bound to a run are called")  # pragma: no cover


# The framework tools' definitions, built on first use (building a Tool costs milliseconds at
# import). Each run calls copies bound to its own `RunExt` (`RunExt._framework_tool`): two runs
# with the same run ID (two resumes of one pause) never reach each other's state.
_prototypes: dict[str, Tool[Any]] = {}


def _prototype(name: str) -> Tool[Any]:
    tool = _prototypes.get(name)
    if tool is None:
        if name == LOAD_CAPABILITY_NAME:
            tool = Tool(
                load_capability, sequential=True, side_effect="idempotent", max_retries=3, origin="workflow"
            )
        else:
            tool = Tool(tool_search, side_effect="read_only", max_retries=3, origin="workflow")
        _prototypes[name] = tool
    return tool


class RunExt:
    """Extension state of one run."""

    def __init__(
        self, run: LoopState, options: RunOptions, *, resumed_capabilities: Sequence[str] = ()
    ) -> None:
        core = run.core
        self.run = run
        self.base_model: Model = run.model
        self.base_toolsets: list[AbstractToolset[Any]] = [*core.toolsets, *options.toolsets]
        self.run_processors = [normalize_callback(p, 2) for p in options.history_processors]
        budget = options.context_budget or core.context_budget
        self.budget: BudgetEnforcer | None = BudgetEnforcer(budget) if budget is not None else None
        self.stack: AsyncExitStack | None = None
        self._entered: set[int] = set()
        self.active: list[Capability[Any]] = []
        self.loaded_on_demand: list[str] = []
        self.pending_loads: list[tuple[str, list[Capability[Any]]]] = []
        self.refused_loads: set[str] = set()
        self.revealed: set[str] = set()
        self.pending_reveals: list[tuple[str, list[str]]] = []
        self._scanned = 0
        self._index: BM25 | None = None
        self._index_key: tuple[ToolDefinition, ...] = ()
        self.deferred: tuple[ToolDefinition, ...] = ()
        self.selectors: list[Any] = []
        layers = [CapabilityLayer("agent", core.capabilities)]
        if options.capabilities:
            layers.append(CapabilityLayer("run", options.capabilities))
        layers.extend(options.capability_layers)
        self.registry: CapabilityRegistry | None = (
            CapabilityRegistry(layers) if any(layer.capabilities for layer in layers) else None
        )
        if self.registry is not None:
            self._activate(self.registry.eager_plan(), on_demand=False)
            self._reconstruct(resumed_capabilities)
        self._framework: dict[str, Tool[Any]] = {}
        self.rebuild()

    # --- capabilities ------------------------------------------------------------------------------

    def _reconstruct(self, resumed: Sequence[str]) -> None:
        registry = self.registry
        assert registry is not None
        if not registry.on_demand:
            return
        wanted: list[str] = []
        for message in self.run.messages:
            if isinstance(message, ModelRequest):
                for part in message.parts:
                    if isinstance(part, CapabilityLoadDeltaPart):
                        for capability_id in part.loaded:
                            capability = registry.get(capability_id)
                            if capability is not None and capability.unload == "history":
                                wanted.append(capability_id)
        wanted.extend(i for i in resumed if i in registry)
        for capability_id in dict.fromkeys(wanted):
            if any(c.id == capability_id for c in self.active):
                continue
            self._activate(registry.plan([capability_id], self.active), on_demand=True)

    def _activate(self, plan: Sequence[Capability[Any]], *, on_demand: bool) -> None:
        registry = self.registry
        assert registry is not None
        self.active = sorted([*self.active, *plan], key=registry.order)
        if on_demand:
            self.loaded_on_demand.extend(c.id for c in plan if c.id is not None)

    def instruction_items(self) -> list[InstructionItem]:
        """Instructions of the capabilities active at run start, then the on-demand catalog."""
        items = _instruction_items(self.active)
        catalog = self._catalog()
        if catalog:
            items.append(catalog)
        return items

    def _catalog(self) -> str | None:
        if self.registry is None:
            return None
        entries = [c for c in self.registry.on_demand]
        if not entries:
            return None
        lines = [f"- {c.id}: {c.description}" if c.description else f"- {c.id}" for c in entries]
        return (
            f"Capabilities you can load with the `{LOAD_CAPABILITY_NAME}` tool when a task needs them "
            "(loading adds their tools and instructions):\n" + "\n".join(lines)
        )

    def rebuild(self) -> None:
        """Reassemble everything that depends on the active capabilities, as one unit."""
        run = self.run
        core = run.core
        active = self.active
        run.output_validators = [
            *core.output_validators,
            *(normalize_callback(v, 2) for c in active for v in c.output_validators),
        ]
        run.history_processors = [
            *core.history_processors,
            *(normalize_callback(p, 2) for c in active for p in c.history_processors),
            *self.run_processors,
        ]
        policies = [*core.tool_policies, *(p for c in active for p in c.tool_policies)]
        run.policies = PolicyStages(policies, self.is_framework) if policies else None
        hooks = [*core.hooks, *(h for c in active for h in c.hooks)]
        if hooks:
            if run.hooks is None:
                run.hooks = HookDispatcher(hooks, run.run_id, core.name)
            else:
                run.hooks.hooks = hooks
        self.selectors = [c.model_selector for c in active if c.model_selector is not None]
        self._apply_settings()
        if self.registry is not None:
            run.ctx.capabilities = CapabilitySnapshot(active, self.loaded_on_demand)

    def _apply_settings(self) -> None:
        run = self.run
        layers = [c.model_settings for c in self.active if c.model_settings is not None]
        if layers or run.model is not self.base_model:
            agent_settings, run_settings = run.settings_layers
            run.settings = merged_settings(run.model.settings, *layers, agent_settings, run_settings)

    async def load(self, ctx: RunContext[Any], capability_id: str) -> str:
        """The `load_capability` tool: plan, resolve instructions, then record a pending load."""
        registry = self.registry
        wanted = registry.get(capability_id) if registry is not None else None
        if registry is None or wanted is None or wanted.loading != "on_demand":
            names = ", ".join(c.id or "" for c in registry.on_demand) if registry is not None else ""
            raise ModelRetry(
                f"Unknown capability {capability_id!r}. Capabilities you can load: {names or 'none'}"
            )
        planned = [c for _, plan in self.pending_loads for c in plan]
        if any(c.id == capability_id for c in [*self.active, *planned]):
            return f"Capability {capability_id!r} is already loaded."
        try:
            plan = registry.plan([capability_id], self.active, planned)
        except CapabilityError as exc:
            assert ctx.tool_call_id is not None
            self.refused_loads.add(ctx.tool_call_id)
            return f"Capability {capability_id!r} was not loaded: {exc}. Nothing was changed."
        # Resolve every instruction before recording anything: a failure leaves no partial load.
        texts = await instruction_texts(ctx, _instruction_items(plan))
        assert ctx.tool_call_id is not None
        self.pending_loads.append((ctx.tool_call_id, plan))
        loaded = ", ".join(repr(c.id) for c in plan)
        head = (
            f"Loaded capability {loaded}."
            if len(plan) == 1
            else f"Loaded capabilities {loaded} (dependencies first)."
        )
        return "\n\n".join([head, *texts])

    async def commit(self, parts: list[ModelRequestPart]) -> None:
        """After a complete batch: activate pending loads and record deltas in the results request."""
        if self.pending_reveals:
            for call_id, names in self.pending_reveals:
                fresh = [n for n in names if n not in self.revealed]
                self.revealed.update(fresh)
                if fresh:
                    parts.append(ToolAvailabilityDeltaPart(tools_added=fresh, tool_call_id=call_id))
            self.pending_reveals = []
        if not self.pending_loads:
            return
        loads = self.pending_loads
        self.pending_loads = []
        plan = [c for _, p in loads for c in p]
        for capability in plan:
            for toolset in capability.toolsets:
                await self._enter(toolset)
        self._activate(plan, on_demand=True)
        for call_id, p in loads:
            parts.append(
                CapabilityLoadDeltaPart(loaded=[c.id for c in p if c.id is not None], tool_call_id=call_id)
            )
        self.rebuild()

    # --- lifecycle --------------------------------------------------------------------------------

    @asynccontextmanager
    async def session(self) -> AsyncGenerator[None]:
        """Enter the run's toolsets for one invocation (in the task that drives the run).

        When the run resumes at a paused response, the tools that response called are prepared
        here (into `run.step_tools`), before the response is handled.
        """
        run = self.run
        async with AsyncExitStack() as stack:
            self.stack = stack
            try:
                if run.hooks is not None:
                    run.hooks.fire(
                        "run_start", run.usage.requests, model=run.model.system, correlation=run.correlation
                    )
                for toolset in self.toolsets():
                    await self._enter(toolset)
                if run.resuming:  # at a paused response: the tools it called must be known
                    run.step_tools = await self.prepare_step()
            except BaseException as exc:
                run.fail(exc)
                raise
            try:
                yield
            finally:
                self.stack = None
                self._entered.clear()

    def toolsets(self) -> list[AbstractToolset[Any]]:
        """The toolsets of this step: the agent's, the run's, then active capabilities'."""
        if not self.active:
            return self.base_toolsets
        return [*self.base_toolsets, *(t for c in self.active for t in c.toolsets)]

    async def _enter(self, toolset: AbstractToolset[Any]) -> None:
        # Each toolset object is entered once per run, however often it is wrapped or combined.
        if id(toolset) in self._entered:
            return
        if self.stack is None:
            raise RuntimeError("toolsets can only be entered while the run is being driven")
        self._entered.add(id(toolset))
        kind = type(toolset)
        if isinstance(toolset, WrapperToolset) and _plain_lifecycle(kind, WrapperToolset):
            await self._enter(toolset.wrapped)
        elif isinstance(toolset, CombinedToolset) and _plain_lifecycle(kind, CombinedToolset):
            for inner in toolset.toolsets:
                await self._enter(inner)
        else:
            await self.stack.enter_async_context(toolset)

    # --- steps ------------------------------------------------------------------------------------

    async def before_request(self) -> tuple[list[ModelRequest], StepTools]:
        """Take queued messages, choose the model and prepare this step's tools."""
        run = self.run
        taken: list[ModelRequest] = []
        if run.queue is not None:
            taken = run.queue.take()
            for request in taken:
                request.run_id = run.run_id
                run.messages.append(request)
        if self.selectors:
            model = self.base_model
            for selector in self.selectors:
                model = selector(run.ctx, model)
            if model is not run.model:
                run.model = model
                run.ctx.model = model
                run.plan = run.core.plan_for(model)
                self._apply_settings()
        return taken, await self.prepare_step()

    async def prepare_step(self) -> StepTools:
        """The tools of this step: agent, toolsets, capabilities, framework; then prepare policies."""
        run = self.run
        ctx = run.ctx
        ctx.run_step = run.usage.requests
        tools: list[Tool[Any]] = list(run.core.tools.values())
        for toolset in self.base_toolsets:
            tools.extend(await tools_of(toolset, ctx))
        for capability in self.active:
            tools.extend(capability.tools)
            for toolset in capability.toolsets:
                tools.extend(await tools_of(toolset, ctx))
        if self.registry is not None and self.registry.on_demand:
            tools.append(self._framework_tool(LOAD_CAPABILITY_NAME))
        if any(t.defer_loading for t in tools):
            self._scan_reveals()
            tools.append(self._framework_tool(TOOL_SEARCH_NAME))
        policies = run.policies
        step = await prepare_tools(
            ctx,
            tools,
            output_tools=run.plan.tool_defs,
            policies=policies.prepare if policies is not None else (),
            exempt=self.is_framework,
            native_deferred=run.model.profile.native_deferred_tools,
            revealed=self.revealed,
        )
        self.deferred = step.deferred
        return step

    def is_framework(self, tool: Tool[Any]) -> bool:
        """Whether `tool` is the framework's own (`load_capability`, `tool_search`)."""
        return self._framework.get(tool.name) is tool

    def _framework_tool(self, name: str) -> Tool[Any]:
        """This run's copy of a framework tool, calling into this `RunExt` (built once per run)."""
        tool = self._framework.get(name)
        if tool is None:
            tool = _prototype(name).replace()
            if name == LOAD_CAPABILITY_NAME:

                async def load(ctx: RunContext[Any], capability: str) -> str:
                    return await self.load(ctx, capability)

                tool.function = load
            else:

                async def search(
                    ctx: RunContext[Any], query: str, max_results: int = 5
                ) -> list[dict[str, Any]]:
                    return self.search(query, max_results)

                tool.function = search
            self._framework[name] = tool
        return tool

    # --- tool search ------------------------------------------------------------------------------

    def _scan_reveals(self) -> None:
        messages = self.run.messages
        for message in messages[self._scanned :]:
            if isinstance(message, ModelRequest):
                for part in message.parts:
                    if isinstance(part, ToolAvailabilityDeltaPart):
                        self.revealed.update(part.tools_added)
        self._scanned = len(messages)

    def search(self, query: str, limit: int) -> list[dict[str, Any]]:
        """The `tool_search` tool: BM25 over the deferred tools of this step."""
        if self._index is None or self._index_key != self.deferred:
            self._index = BM25(self.deferred)
            self._index_key = self.deferred
        found = self._index.search(query, limit)
        return [{"name": d.name, "description": d.description or ""} for d in found]

    def after_results(self, results: Sequence[tuple[ToolCallPart, Any]]) -> None:
        """Mark framework results (search kind, refused loads) and note what searches revealed."""
        for part, result in results:
            if not isinstance(result, ToolReturnPart):
                continue
            if part.tool_name == TOOL_SEARCH_NAME and self.deferred:
                result.tool_kind = "tool-search"
                content: Any = result.content
                if result.outcome == "success" and isinstance(content, list):
                    names = [
                        cast("dict[str, Any]", item)["name"]
                        for item in cast("list[Any]", content)
                        if isinstance(item, dict)
                    ]
                    self.pending_reveals.append((part.tool_call_id, names))
            elif part.tool_call_id in self.refused_loads:
                result.outcome = "failed"
                self.refused_loads.discard(part.tool_call_id)


def _plain_lifecycle(kind: type[Any], base: type[Any]) -> bool:
    """Whether `kind` keeps `base`'s enter/exit, which only pass through to the inner toolsets."""
    return kind.__aenter__ is base.__aenter__ and kind.__aexit__ is base.__aexit__


def _instruction_items(capabilities: Sequence[Capability[Any]]) -> list[InstructionItem]:
    items: list[InstructionItem] = []
    for capability in capabilities:
        for item in capability.instructions:
            items.append(item if isinstance(item, str) else normalize_callback(item, 1))
    return items
