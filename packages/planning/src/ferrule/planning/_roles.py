"""The model calls of a planning run that produce structured output: planner, replanner, router.

Each binds its result type as the ONLY output tool of the request, with `tool_choice` naming it,
so the model's answer is exactly that tool's arguments. Models whose profile has no native tools
answer in JSON instead: constrained by the provider's JSON-schema mode where the profile has one
(llama.cpp enforces it with a grammar), else prompted. Domain tools are never offered to these
calls: the planner sees them only as catalog text. The arguments are decoded within the agent's
bounded-JSON limits and then validated again here (schema, plan rules, patch rules) before
anything executes; a rejected answer goes back to the model as a retry prompt.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from typing import Any
from typing import cast

from ferrule.agent import Agent
from ferrule.agent import ModelRetry
from ferrule.agent import NativeOutput
from ferrule.agent import PromptedOutput
from ferrule.agent import RunContext
from ferrule.agent import StructuredDict
from ferrule.agent import ToolOutput
from ferrule.agent.exceptions import OutputRetriesExceeded
from ferrule.agent.exceptions import run_state_of
from ferrule.agent.hooks import Hook
from ferrule.core import bounded_json
from ferrule.core.messages import Message
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.model import Model
from ferrule.core.settings import ModelSettings
from ferrule.core.usage import RunUsage
from ferrule.core.usage import UsageLimits

from ._errors import PlanError
from ._limits import PLAN_DOCUMENT


class Job:
    """The dependencies of one structured call: how to check the answer, and what came of it."""

    __slots__ = ("check", "error", "tool", "usage", "value")

    def __init__(self, check: Callable[[dict[str, Any]], Any], tool: str) -> None:
        self.check = check
        self.tool = tool
        self.value: Any = None
        self.error: PlanError | None = None
        self.usage = RunUsage()


def _validate(ctx: RunContext[Job], output: dict[str, Any]) -> dict[str, Any]:
    job = ctx.deps
    try:
        job.value = job.check(output)
    except PlanError as exc:
        job.error = exc
        raise ModelRetry(f"{exc}. Correct this and submit the whole answer with {job.tool} again.") from None
    job.error = None
    return output


def _answer_args(messages: Sequence[Message], name: str) -> Any:
    """The arguments (or JSON text) of the last answer in `messages`, if there is one."""
    for message in reversed(messages):
        if not isinstance(message, ModelResponse):
            continue
        for part in message.parts:
            if isinstance(part, ToolCallPart) and part.tool_name == name:
                return part.args
        text = "".join(p.content for p in message.parts if isinstance(p, TextPart)).strip()
        if text.startswith("```"):
            text = text.split("\n", 1)[1] if "\n" in text else ""
        start, end = text.find("{"), text.rfind("}")
        return text[start : end + 1] if 0 <= start < end else None
    return None


class StructuredRole:
    """One kind of structured call (the planner, the replanner, the router), its agents built per model profile."""

    __slots__ = (
        "_agents",
        "constrained_schema",
        "description",
        "hooks",
        "instructions",
        "name",
        "retries",
        "schema",
        "settings",
    )

    def __init__(
        self,
        *,
        name: str,
        description: str,
        schema: dict[str, Any],
        instructions: str,
        retries: int,
        settings: ModelSettings | None,
        constrained_schema: dict[str, Any] | None = None,
        hooks: Sequence[Hook] = (),
    ) -> None:
        self.name = name
        self.hooks = tuple(hooks)
        """Lifecycle hooks of the role's agents (a `JsonlObserver`, say)."""
        self.description = description
        self.schema = schema
        self.constrained_schema = constrained_schema
        """The schema for models whose output a grammar enforces (`tools_emulated_via_output`)."""
        self.instructions = instructions
        self.retries = retries
        self.settings = settings
        self._agents: dict[int, tuple[Any, Agent[Job, Any]]] = {}

    def with_schema(
        self, schema: dict[str, Any], constrained_schema: dict[str, Any] | None = None
    ) -> StructuredRole:
        """The same role answering with other schemas (its agents are built anew)."""
        return StructuredRole(
            name=self.name,
            description=self.description,
            schema=schema,
            instructions=self.instructions,
            retries=self.retries,
            settings=self.settings,
            constrained_schema=constrained_schema,
            hooks=self.hooks,
        )

    def agent_for(self, model: Model) -> Agent[Job, Any]:
        """The agent for this model's profile: output tool with forced choice, else constrained
        (native JSON-schema) or prompted JSON; the numbered schema for grammar-constrained models."""
        profile = model.profile
        cached = self._agents.get(id(profile))
        if cached is not None and cached[0] is profile:
            return cached[1]
        schema = self.schema
        if profile.tools_emulated_via_output and self.constrained_schema is not None:
            schema = self.constrained_schema
        shape = StructuredDict(schema, name=self.name, description=self.description)
        settings = self.settings
        output: Any
        if profile.supports_tools:
            output = ToolOutput(shape, name=self.name, description=self.description)
            if profile.supports_tool_choice:
                forced = ModelSettings(tool_choice=[self.name])
                settings = forced if settings is None else settings.merge(forced)
        elif profile.supports_json_schema_output:
            # Emulated tools would put the whole schema into the prompt; the JSON-schema mode only
            # constrains the output (llama.cpp compiles it into a grammar).
            output = NativeOutput(shape, name=self.name, description=self.description)
        else:
            output = PromptedOutput(shape, name=self.name, description=self.description)
        agent: Agent[Job, Any] = Agent(
            model,
            output_type=output,
            instructions=self.instructions,
            deps_type=Job,
            name=f"planning-{self.name.lower()}",
            model_settings=settings,
            output_retries=self.retries,
            output_validators=[_validate],
            hooks=self.hooks,
        )
        if len(self._agents) > 16:  # profiles are few and long-lived; stay bounded anyway
            self._agents.clear()
        self._agents[id(profile)] = (profile, agent)
        return agent

    def _diagnose(self, messages: Sequence[Message], job: Job) -> None:
        args = _answer_args(messages, self.name)
        if args is None:
            return
        try:
            value = bounded_json.decode_value(args, PLAN_DOCUMENT) if isinstance(args, str) else args
            if isinstance(value, dict):
                job.check(cast("dict[str, Any]", value))
        except PlanError as exc:
            job.error = exc
        except bounded_json.JsonError as exc:
            job.error = PlanError(f"the {self.name} answer is not valid JSON: {exc}")

    async def call(
        self, model: Model, prompt: str, job: Job, *, limits: UsageLimits, remaining: float | None
    ) -> Any:
        """Ask the model; returns the checked value. `job.usage` holds the usage even when this raises."""
        agent = self.agent_for(model)
        try:
            result = await agent.run(prompt, deps=job, usage_limits=limits, timeout=remaining)
        except OutputRetriesExceeded as exc:
            state = run_state_of(exc)
            if state is not None:
                job.usage = state.usage
                # The schema check may have refused the last answer before our rules saw it (an
                # `anyOf` mismatch says little): judge it by the rules for an error naming the step.
                self._diagnose(state.messages, job)
            if job.error is not None:
                raise job.error from exc
            raise
        except Exception as exc:
            state = run_state_of(exc)
            if state is not None:
                job.usage = state.usage
            raise
        job.usage = result.usage
        return job.value
