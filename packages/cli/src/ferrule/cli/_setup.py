"""From the command line, the configuration and the spec to one `AgentSpec` plus the run's settings.

Precedence: command-line flags, then the configuration (or the spec, which defines the agent when
given), then `FERRULE_MODEL` for the model. Everything here is local: no environment value is read
except `FERRULE_MODEL`, nothing is built but the tool manifest.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

import msgspec

from ._config import ApprovalMode
from ._config import CliConfig
from ._config import OutputMode
from ._config import load_config
from ._exit import ConfigError
from ._exit import CredentialError
from ._exit import UsageError
from ._resolvers import load_tools

if TYPE_CHECKING:
    from ferrule.agent import Tool
    from ferrule.agent.spec import AgentSpec
    from ferrule.agent.spec import ModelRef

__all__ = ["DEFAULT_PAUSED_STATE", "MODEL_ENV", "Setup", "build_setup"]

MODEL_ENV = "FERRULE_MODEL"
"""The environment variable naming the model when neither a flag nor a file does."""
DEFAULT_PAUSED_STATE = "ferrule-paused.json"
"""Where a paused run is written when neither `--paused-state` nor the configuration says."""

# Fields of the configuration that define the agent, and so cannot be combined with a spec.
_AGENT_FIELDS = (
    "provider",
    "model",
    "api_key_env",
    "base_url",
    "system_prompt",
    "model_settings",
    "usage_limits",
    "timeout",
    "mcp_servers",
)


@dataclass
class Setup:
    """Everything one invocation needs, decided before anything is built or sent."""

    spec: AgentSpec
    tools: dict[str, Tool[Any]]
    output: OutputMode
    approval: ApprovalMode
    history: Path | None
    paused_state: Path
    signing_key_env: str | None
    external_results: dict[str, Any] = field(default_factory=dict[str, Any])

    def signing_key(self) -> bytes | None:
        """The paused-state signing key from its variable (exit 4 when the variable is not set)."""
        if self.signing_key_env is None:
            return None
        value = os.environ.get(self.signing_key_env)
        if not value:
            raise CredentialError(
                f"paused states are signed with the key in {self.signing_key_env}, which is not set"
            )
        return value.encode("utf-8")


def _model_ref(text: str, provider: str | None) -> ModelRef:
    from ferrule.agent.spec import ModelRef

    if provider is not None:
        name = text.removeprefix(f"{provider}:")
    else:
        provider, sep, name = text.partition(":")
        if not sep or not provider or not name:
            raise UsageError(
                f"model {text!r} needs a provider prefix: --model openai:gpt-5-mini, or --provider openai --model gpt-5-mini"
            )
    return ModelRef(provider=provider, name=name)


def _relative(base: Path, value: str | None) -> Path | None:
    if value is None:
        return None
    path = Path(value).expanduser()
    return path if path.is_absolute() else base / path


def _no_model() -> UsageError:
    from ferrule.agent.models import installed_providers

    return UsageError(
        "no model: pass --model provider:name (e.g. --model llamacpp:qwen2.5-coder-0.5b, which needs no API key), "
        f"set it in --config, or set {MODEL_ENV}. Installed providers: {', '.join(installed_providers())}"
    )


def build_setup(
    args: argparse.Namespace, *, default_approval: ApprovalMode, model_optional: bool = False
) -> Setup:
    """The invocation's `Setup` (exit 2 for flag problems, 3 for file problems)."""
    from ferrule.agent.spec import AgentSpec
    from ferrule.agent.spec import SpecParseError
    from ferrule.agent.spec import ToolRef

    config = load_config(Path(args.config)) if args.config else CliConfig()
    base = Path(args.config).resolve().parent if args.config else Path.cwd()
    require_approval = bool(args.require_tool_approval or config.require_tool_approval)
    tools = load_tools(config.tools, base, require_approval=require_approval)

    spec_path = Path(args.spec) if args.spec else _relative(base, config.spec)
    if spec_path is not None:
        conflicts = [f for f in _AGENT_FIELDS if getattr(config, f) not in (None, {}, [])]
        if conflicts:
            raise UsageError(
                f"the agent is defined by the spec {str(spec_path)!r}; the configuration also sets "
                f"{', '.join(conflicts)}: keep them in one place"
            )
        try:
            spec = AgentSpec.load(spec_path)
        except SpecParseError as exc:
            raise ConfigError(str(exc)) from None
    else:
        model_text = config.model or os.environ.get(MODEL_ENV) or None
        model = None
        if model_text is not None:
            model = _model_ref(model_text, config.provider)
            model = msgspec.structs.replace(
                model,
                api_key_env=config.api_key_env,
                base_url=config.base_url,
                allow_local_url=config.allow_local_url,
            )
        spec = AgentSpec(
            model=model,
            instructions=config.system_prompt,
            model_settings=config.model_settings,
            usage_limits=config.usage_limits,
            run_timeout=config.timeout,
            tools=[ToolRef(name=name) for name in tools],
            mcp_servers=dict(config.mcp_servers),
        )
    spec = _apply_flags(spec, args, require_approval)
    if spec.model is None and not model_optional:
        raise _no_model()

    output: OutputMode = getattr(args, "output", None) or config.output or "text"
    approval: ApprovalMode = getattr(args, "approval_mode", None) or config.approval or default_approval
    history = Path(args.history) if args.history else _relative(base, config.history)
    paused = getattr(args, "paused_state", None)
    paused_state = (
        Path(paused) if paused else _relative(base, config.paused_state) or Path(DEFAULT_PAUSED_STATE)
    )
    return Setup(
        spec=spec,
        tools=tools,
        output=output,
        approval=approval,
        history=history,
        paused_state=paused_state,
        signing_key_env=getattr(args, "signing_key_env", None) or config.signing_key_env,
    )


def _apply_flags(spec: AgentSpec, args: argparse.Namespace, require_approval: bool) -> AgentSpec:
    from ferrule.core.settings import ModelSettings

    changes: dict[str, Any] = {}
    model = spec.model
    if args.model:
        flagged = _model_ref(args.model, args.provider)
        if model is not None and model.provider == flagged.provider:
            flagged = msgspec.structs.replace(model, name=flagged.name)
        model = flagged
    elif args.provider:
        raise UsageError("--provider needs --model NAME")
    if model is not None:
        updates: dict[str, Any] = {}
        if args.api_key_env:
            updates["api_key_env"] = args.api_key_env
        if args.base_url:
            updates["base_url"] = args.base_url
        if args.allow_local_url:
            updates["allow_local_url"] = True
        if updates:
            model = msgspec.structs.replace(model, **updates)
    if model is not spec.model:
        changes["model"] = model
    if args.system is not None:
        changes["instructions"] = args.system
    flagged_settings = ModelSettings(max_tokens=args.max_tokens, temperature=args.temperature)
    if flagged_settings.set_fields():
        changes["model_settings"] = (spec.model_settings or ModelSettings()).merge(flagged_settings)
    if args.timeout is not None:
        if not args.timeout > 0:
            raise UsageError("--timeout must be a positive number of seconds")
        changes["run_timeout"] = args.timeout
    if require_approval and not spec.require_tool_approval:
        changes["require_tool_approval"] = True
    return msgspec.structs.replace(spec, **changes) if changes else spec
