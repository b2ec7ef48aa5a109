"""The command's stable exit codes and the mapping from exceptions to them."""

from __future__ import annotations

import enum
import sys
from typing import cast

__all__ = ["CliError", "ConfigError", "CredentialError", "ExitCode", "UsageError", "exit_code_for", "unwrap"]


class ExitCode(enum.IntEnum):
    """What `ferrule` exits with; scripts may rely on these numbers."""

    OK = 0
    """The run finished (or the command did what it was asked)."""
    FAILURE = 1
    """Any other runtime failure: a tool raised, a limit was hit, the model misbehaved, an MCP server failed."""
    USAGE = 2
    """The command line is wrong: unknown option, missing prompt, stdin over its bound, unknown provider."""
    CONFIG = 3
    """A configuration, specification, history, paused-state or tool-manifest file is unusable."""
    CREDENTIAL = 4
    """A credential the run needs is not in the environment."""
    PROVIDER = 5
    """The model provider (or the connection to it) failed."""
    APPROVAL_REQUIRED = 10
    """The run paused for approval; the paused state was written (resume with `--resume`)."""
    INTERRUPTED = 130
    """Ctrl-C (SIGINT): the run was cancelled and drained, MCP servers were shut down."""


class CliError(Exception):
    """An error the command reports in one line and exits with `code`."""

    code: ExitCode = ExitCode.FAILURE

    def __init__(self, message: str) -> None:
        self.message = message
        """What went wrong and what to do."""
        super().__init__(message)


class UsageError(CliError):
    """The command line cannot work."""

    code = ExitCode.USAGE


class ConfigError(CliError):
    """A file the command was given is unusable."""

    code = ExitCode.CONFIG


class CredentialError(CliError):
    """A needed environment variable is not set."""

    code = ExitCode.CREDENTIAL


def unwrap(error: BaseException) -> BaseException:
    """The single exception inside (nested) exception groups, or the group itself."""
    current: BaseException = error
    while isinstance(current, BaseExceptionGroup):
        inner = cast("tuple[BaseException, ...]", current.exceptions)
        if len(inner) != 1:
            break
        current = inner[0]
    return cast("BaseException", current)


def exit_code_for(error: BaseException) -> ExitCode:
    """The exit code an exception maps to (see `ExitCode`)."""
    from ferrule.agent.exceptions import PausedStateError
    from ferrule.agent.exceptions import PauseRequiredError
    from ferrule.agent.models import UnknownModelError
    from ferrule.agent.spec import SpecError
    from ferrule.agent.spec import SpecValidationError
    from ferrule.core.bounded_json import JsonError
    from ferrule.core.errors import MissingCredentialError
    from ferrule.core.errors import ProviderError
    from ferrule.core.history import HistoryError

    error = unwrap(error)
    if isinstance(error, CliError):
        return error.code
    if isinstance(error, MissingCredentialError):
        return ExitCode.CREDENTIAL
    if isinstance(error, ProviderError):
        return ExitCode.PROVIDER
    if isinstance(error, PauseRequiredError):
        return ExitCode.APPROVAL_REQUIRED
    if isinstance(error, UnknownModelError):
        return ExitCode.USAGE
    if isinstance(error, SpecValidationError):
        problems = error.report.problems
        if problems and all(p.kind == "env" for p in problems) and error.report.missing_env:
            return ExitCode.CREDENTIAL
        if problems and all(p.kind == "provider" for p in problems):
            return ExitCode.USAGE
        return ExitCode.CONFIG
    if isinstance(error, (SpecError, PausedStateError, HistoryError, JsonError)):
        return ExitCode.CONFIG
    # ferrule-mcp is imported only when MCP servers are configured; no import, no MCP error.
    mcp = sys.modules.get("ferrule.mcp")
    if mcp is not None and isinstance(error, mcp.MCPConfigError):
        return ExitCode.CONFIG
    evals = sys.modules.get("ferrule.evals")  # likewise ferrule-evals, imported by `ferrule eval` only
    if evals is not None and isinstance(error, evals.EvalError):
        return ExitCode.CONFIG
    if isinstance(error, KeyboardInterrupt):
        return ExitCode.INTERRUPTED
    return ExitCode.FAILURE
