"""`AgentCore`: what an agent compiles once (tools, limits, output plans) and every run reads."""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any
from typing import Literal
from typing import TypeAlias

from ferrule.core.model import Model
from ferrule.core.model import ToolDefinition
from ferrule.core.profile import ModelProfile
from ferrule.core.retry import RetryPolicy

from ._controls import SideEffectControls
from ._errors import ToolDefinitionError
from ._output_build import OutputSpecInfo
from ._output_build import build_plan
from ._output_build import resolve_mode
from ._output_plan import OutputPlan
from ._step_tools import StepTools
from ._sync_tools import ToolThreads
from ._tools import Tool
from ._tools import ToolLimits
from ._util import Callback
from .hooks import Hook
from .policies import ToolPolicy

if TYPE_CHECKING:
    from ferrule.core.url_policy import UrlPolicy

    from ._instrument import Tracer
    from .capabilities import Capability
    from .context_budget import ContextBudget
    from .pricing import Pricing
    from .toolsets import AbstractToolset

__all__ = ["AgentCore", "EndStrategy"]

EndStrategy: TypeAlias = Literal["graceful", "early", "exhaustive"]
"""What happens to other calls of a response that also produced the final output.

`graceful` (default): calls before the first successful output call run, later ones are skipped.
`early`: output calls are tried first; if one succeeds, every other call is skipped.
`exhaustive`: every call runs; the first successful output call (by call order) wins.
"""


class AgentCore:
    """The per-agent state the loop reads: built once and updated when tools are added."""

    # Slots: past 30 attributes CPython gives each instance a dict of its own keys (no key sharing),
    # about 1.3 KiB more per agent than these slots.
    __slots__ = (
        "_by_profile",
        "_limits",
        "_plans",
        "capabilities",
        "context_budget",
        "dynamic_instructions",
        "dynamic_prompts",
        "end_strategy",
        "extended",
        "has_deferred",
        "has_prepare",
        "history_processors",
        "hooks",
        "name",
        "output_info",
        "output_retries",
        "output_validators",
        "pricing",
        "retries",
        "retry_policy",
        "side_effects",
        "static_instructions",
        "step_tools",
        "system_prompts",
        "threads",
        "tool_defs",
        "tool_limits",
        "tool_policies",
        "tools",
        "toolsets",
        "tracer",
        "url_policy",
    )

    def __init__(
        self,
        *,
        name: str,
        output_info: OutputSpecInfo,
        retries: int,
        output_retries: int,
        tool_limits: ToolLimits,
        end_strategy: EndStrategy,
        retry_policy: RetryPolicy,
        tracer: Tracer | None,
        url_policy: UrlPolicy | None,
    ) -> None:
        self.name = name
        self.url_policy = url_policy  # None: the default UrlPolicy(), built on first use
        self.output_info = output_info
        self.retries = retries
        self.output_retries = output_retries
        self.tool_limits = tool_limits
        # One bounded set of worker threads per agent: hung sync calls of another agent never
        # take this agent's threads (see _sync_tools).
        self.threads = ToolThreads(tool_limits.max_sync_threads, owner=f"agent {name!r}")
        self.end_strategy: EndStrategy = end_strategy
        self.retry_policy = retry_policy
        self.tracer = tracer
        self.tools: dict[str, Tool[Any]] = {}
        self.tool_defs: tuple[ToolDefinition, ...] = ()
        self.step_tools = StepTools((), self.tools)
        """What a step offers when no tool has a `prepare` and no extension is used (the fast path)."""
        self.has_prepare = False
        self._limits: dict[str, ToolLimits] = {}
        self.static_instructions: list[str] = []
        self.dynamic_instructions: list[Callback] = []
        """Instruction functions, resolved once per run after the static instructions."""
        self.system_prompts: list[str | Callback] = []
        """PydanticAI-style system prompts: written as `SystemPromptPart`s into the first request of a run
        without history (never sent again on their own), unlike instructions."""
        self.dynamic_prompts: dict[str, Callback] = {}
        """System prompt functions registered with `dynamic=True`, by `dynamic_ref`: re-evaluated when a
        run continues a history holding their part."""
        self.output_validators: list[Callback] = []
        self.history_processors: list[Callback] = []
        self._plans: dict[str, OutputPlan] = {}
        self._by_profile: dict[int, tuple[ModelProfile, OutputPlan]] = {}
        self.toolsets: list[AbstractToolset[Any]] = []
        self.capabilities: list[Capability[Any]] = []
        self.tool_policies: list[ToolPolicy] = []
        self.hooks: list[Hook] = []
        self.context_budget: ContextBudget | None = None
        self.pricing: Pricing | None = None
        self.side_effects: SideEffectControls | None = None
        """`guard=`, `confirm=`, the checkpoint store and binding (`None`: all defaults)."""
        self.has_deferred = False
        self.extended = False
        """Whether runs need the extension machinery (anything beyond tools, output and limits)."""

    def update_extended(self) -> None:
        self.extended = bool(
            self.toolsets
            or self.capabilities
            or self.tool_policies
            or self.hooks
            or self.context_budget is not None
            or self.has_deferred
        )

    def add_tool(self, tool: Tool[Any]) -> None:
        if tool.name in self.tools:
            raise ToolDefinitionError(f"a tool named {tool.name!r} is already registered on this agent")
        self.tools[tool.name] = tool
        self._limits[tool.name] = self.tool_limits.tightened(tool.limits, tool.timeout)
        self.tool_defs = (*self.tool_defs, tool.definition)
        self.step_tools = StepTools(self.tool_defs, self.tools)
        self.has_prepare = self.has_prepare or tool.prepare is not None
        if tool.defer_loading:
            self.has_deferred = self.extended = True
        self._plans.clear()
        self._by_profile.clear()

    def limits_for(self, tool: Tool[Any]) -> ToolLimits:
        limits = self._limits.get(tool.name)
        if limits is not None and self.tools.get(tool.name) is tool:
            return limits
        return self.tool_limits.tightened(tool.limits, tool.timeout)

    def max_retries_for(self, tool: Tool[Any]) -> int:
        return self.retries if tool.max_retries is None else tool.max_retries

    def plan_for(self, model: Model) -> OutputPlan:
        profile = model.profile
        cached = self._by_profile.get(id(profile))
        if cached is not None and cached[0] is profile:
            return cached[1]
        plan = self._plan_for(model, profile)
        if len(self._by_profile) > 64:  # profiles are normally few and long-lived; stay bounded anyway
            self._by_profile.clear()
        self._by_profile[id(profile)] = (profile, plan)
        return plan

    def _plan_for(self, model: Model, profile: ModelProfile) -> OutputPlan:
        mode = resolve_mode(self.output_info, profile, model.system)
        key = f"{mode}:{profile.supports_json_object_output}"
        plan = self._plans.get(key)
        if plan is None:
            plan = build_plan(self.output_info, mode, profile)
            clash = [d.name for d in plan.tool_defs if d.name in self.tools]
            if clash:
                raise ToolDefinitionError(
                    f"the output tool name {clash[0]!r} clashes with a function tool; rename one of them"
                )
            self._plans[key] = plan
        return plan
