"""`ferrule run`: one prompt (or one resume), output as text, one JSON result, or AG-UI events."""

from __future__ import annotations

import argparse
import contextlib
import functools
import sys
import uuid
from collections.abc import AsyncGenerator
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import TextIO

import anyio
import msgspec

from ._exit import ConfigError
from ._exit import ExitCode
from ._exit import UsageError
from ._exit import exit_code_for
from ._files import load_history
from ._files import read_bounded
from ._files import read_prompt
from ._files import save_history
from ._setup import Setup
from ._setup import build_setup

if TYPE_CHECKING:
    from ferrule.agent import Agent
    from ferrule.agent import AgentRunResult
    from ferrule.agent import Decision
    from ferrule.agent import Paused
    from ferrule.agent import PausedState
    from ferrule.agent.spec import ResolvedAgent

__all__ = ["open_agent", "run_command"]


@contextlib.asynccontextmanager
async def open_agent(setup: Setup) -> AsyncGenerator[ResolvedAgent]:
    """The resolved agent with its MCP servers entered; they are shut down when the block exits,
    also when it exits by an error or by cancellation (Ctrl-C)."""
    from ._resolvers import mcp_toolsets
    from ._resolvers import model_resolver

    resolved = await setup.spec.resolve(model_resolver, tools=setup.tools, toolset_resolver=mcp_toolsets)
    async with contextlib.AsyncExitStack() as stack:
        stack.push_async_callback(resolved.close)
        for toolset in resolved.toolsets:
            await stack.enter_async_context(toolset)
        yield resolved


def _jsonable(value: Any) -> Any:
    return msgspec.to_builtins(value)


def _args_text(args: Any, limit: int = 200) -> str:
    text = args if isinstance(args, str) else msgspec.json.encode(args).decode()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def output_text(output: Any) -> str:
    """How a run's output is printed: text as it is, anything else as JSON."""
    if isinstance(output, str):
        return output
    return msgspec.json.encode(_jsonable(output)).decode()


class _Sink:
    """Writes one output mode; `events` uses ferrule-ui's AG-UI encoder."""

    def __init__(self, mode: str, out: TextIO, err: TextIO) -> None:
        self.mode = mode
        self.out = out
        self.err = err
        self.stream_text = mode == "text" and out.isatty()
        self.streamed = False
        self.bridge: Any = None
        self.run_id = uuid.uuid4().hex

    # -- events ----------------------------------------------------------------------------------

    def begin(self, announced: tuple[str, ...] = (), resolved: list[Any] | None = None) -> None:
        if self.mode != "events":
            return
        from ferrule.ui import UIBridge

        self.bridge = UIBridge("ferrule-cli", self.run_id, announced_tool_calls=announced)
        self._emit(self.bridge.start())
        if resolved:
            self._emit(resolved)

    def _emit(self, events: list[Any]) -> None:
        from ferrule.ui.ag_ui import encode_jsonl

        for event in events:
            self.out.write(encode_jsonl(event).decode("utf-8"))
        self.out.flush()

    def event(self, event: Any) -> None:
        if self.bridge is not None:
            self._emit(self.bridge.feed(event))
        elif self.stream_text:
            from ferrule.core.messages import TextPart
            from ferrule.core.model import PartDeltaEvent
            from ferrule.core.model import PartStartEvent
            from ferrule.core.model import TextPartDelta

            text = None
            if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
                text = event.part.content
            elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
                text = event.delta.content_delta
            if text:
                self.out.write(text)
                self.out.flush()
                self.streamed = True

    def end_segment(self, paused: Paused | None) -> None:
        if self.bridge is not None:
            self._emit(self.bridge.finish(paused))
            self.bridge = None

    # -- outcomes --------------------------------------------------------------------------------

    def finished(self, result: AgentRunResult[Any], model: str) -> None:
        match self.mode:
            case "json":
                document = {
                    "status": "ok",
                    "output": _jsonable(result.output),
                    "run_id": result.run_id,
                    "model": model,
                    "usage": _jsonable(result.usage),
                }
                self.out.write(msgspec.json.encode(document).decode() + "\n")
            case "text":
                if self.streamed and isinstance(result.output, str):
                    self.out.write("\n")
                else:
                    self.out.write(output_text(result.output) + "\n")
            case _:
                pass
        self.out.flush()

    def paused(self, paused: Paused, path: Path) -> None:
        pending = [
            {"tool_call_id": p.tool_call_id, "tool_name": p.tool_name, "args": p.args, "kind": p.kind}
            for p in paused.pending
        ]
        if self.mode == "json":
            document = {
                "status": "paused",
                "run_id": paused.state.run_id,
                "paused_state": str(path),
                "pending": pending,
            }
            self.out.write(msgspec.json.encode(document).decode() + "\n")
            self.out.flush()
        if self.streamed:
            self.out.write("\n")
        lines = [f"ferrule: approval required for {len(pending)} call(s):"]
        lines += [
            f"  {p.tool_name}({_args_text(p.args)})  [{p.kind}, id {p.tool_call_id}]" for p in paused.pending
        ]
        lines.append(f"the paused run is in {str(path)!r}; continue it with:")
        lines.append(f"  ferrule run --resume --paused-state {path} --approval approve|deny")
        self.err.write("\n".join(lines) + "\n")

    def failed(self, error: BaseException, code: ExitCode) -> None:
        message = describe(error)
        if self.mode == "json":
            document = {
                "status": "error",
                "exit_code": int(code),
                "error": {"type": type(error).__name__, "message": message},
            }
            self.out.write(msgspec.json.encode(document).decode() + "\n")
            self.out.flush()
        elif self.bridge is not None:
            self._emit(self.bridge.fail(error))
            self.bridge = None
        if self.streamed:
            self.out.write("\n")
            self.out.flush()


def describe(error: BaseException) -> str:
    """One line for the user: ferrule's own messages as they are, other exceptions with their type."""
    from ferrule.core.errors import FerruleError

    from ._exit import CliError

    if isinstance(error, CliError):
        return error.message
    if isinstance(error, FerruleError):
        return str(error)
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _decisions(state: PausedState, approval: str, external: dict[str, Any]) -> dict[str, Decision]:
    """One decision for every pending call; external calls run only with an explicit result."""
    from ferrule.agent import Approved
    from ferrule.agent import Denied
    from ferrule.agent import ExternalResult

    pending = {p.tool_call_id: p for p in state.pending}
    unknown = sorted(set(external) - set(pending))
    if unknown:
        raise UsageError(f"--external-result names calls that are not pending: {', '.join(unknown)}")
    decisions: dict[str, Decision] = {}
    for call in state.pending:
        if call.kind == "external":
            if call.tool_call_id in external:
                decisions[call.tool_call_id] = ExternalResult(value=external[call.tool_call_id])
            else:
                decisions[call.tool_call_id] = Denied(
                    message="The external call was not executed: no result was supplied for it."
                )
        elif call.tool_call_id in external:
            raise UsageError(
                f"--external-result {call.tool_call_id}: {call.tool_name} is not an external tool"
            )
        elif approval == "approve":
            decisions[call.tool_call_id] = Approved()
        else:
            decisions[call.tool_call_id] = Denied(message="The operator denied this call.")
    return decisions


async def _ask(paused: Paused, err: TextIO) -> dict[str, Decision]:
    from ferrule.agent import Approved
    from ferrule.agent import Denied

    decisions: dict[str, Decision] = {}
    for call in paused.pending:
        if call.kind == "external":
            decisions[call.tool_call_id] = Denied(message="External tools cannot run from this terminal.")
            err.write(f"ferrule: {call.tool_name} is external; denied\n")
            continue
        question = f"Allow {call.tool_name}({_args_text(call.args)})? [y/N] "
        answer = await anyio.to_thread.run_sync(lambda q=question: _input(q, err))
        approved = answer.strip().lower() in ("y", "yes")
        decisions[call.tool_call_id] = (
            Approved() if approved else Denied(message="The user denied this call.")
        )
    return decisions


def _input(question: str, err: TextIO) -> str:
    err.write(question)
    err.flush()
    try:
        return input()
    except EOFError:
        return ""


async def _drive(
    agent: Agent[Any, Any],
    setup: Setup,
    sink: _Sink,
    start: Callable[[], Any],
    history_path: Path | None,
    model: str,
    on_started: Callable[[], None] | None = None,
    announced: tuple[str, ...] = (),
    resolved_events: list[Any] | None = None,
) -> ExitCode:
    """Stream segments until the run finishes or pauses under `deferred` approval."""
    opener: Callable[[], Any] = start
    while True:
        sink.begin(announced, resolved_events)
        async with opener() as stream:
            if on_started is not None:
                on_started()
                on_started = None
            async for event in stream:
                sink.event(event)
            paused = stream.paused
            sink.end_segment(paused)
            if paused is None:
                result = stream.result
                if history_path is not None:
                    save_history(history_path, result.all_messages())
                sink.finished(result, model)
                return ExitCode.OK
        match setup.approval:
            case "deferred":
                from ._files import atomic_write

                atomic_write(setup.paused_state, paused.to_json(integrity_key=setup.signing_key()))
                sink.paused(paused, setup.paused_state)
                return ExitCode.APPROVAL_REQUIRED
            case "deny":
                decisions = _decisions(paused.state, "deny", {})
            case "prompt":
                decisions = await _ask(paused, sink.err)
        announced = tuple(p.tool_call_id for p in paused.pending)
        resolved_events = None
        opener = functools.partial(agent.resume_stream, paused, decisions)


async def _run(setup: Setup, args: argparse.Namespace, prompt: str | None, sink: _Sink) -> ExitCode:
    from ferrule.agent import PausedState
    from ferrule.agent.spec import ModelRef

    if setup.approval == "deferred":
        setup.signing_key()  # a signing variable that is not set fails before the model is asked
    state_data: bytes | None = None
    state: PausedState | None = None
    if args.resume:
        from ferrule.core import bounded_json

        state_data = read_bounded(setup.paused_state, bounded_json.PAUSED_STATE.max_bytes, "paused state")
        state = PausedState.from_json(state_data, integrity_key=setup.signing_key())
        if setup.spec.model is None:
            if not state.model or ":" not in state.model:
                raise ConfigError("the paused state does not name its model; pass --model")
            provider, _, name = state.model.partition(":")
            setup.spec = msgspec.structs.replace(setup.spec, model=ModelRef(provider=provider, name=name))
    history = load_history(setup.history) if setup.history is not None and not args.resume else []
    assert setup.spec.model is not None
    model = setup.spec.model.model_string
    async with open_agent(setup) as resolved:
        agent = resolved.agent
        if state is not None and state_data is not None:
            decisions = _decisions(state, args.approval, setup.external_results)
            paused_path = setup.paused_state
            data = state_data
            key = setup.signing_key()

            def consume() -> None:
                # The state is validated; from here its approved calls run, so it cannot be resumed again.
                with contextlib.suppress(FileNotFoundError):
                    paused_path.unlink()

            resolved_events: list[Any] | None = None
            if setup.output == "events":
                from ferrule.ui import UIBridge

                resolved_events = UIBridge.resolved(state.pending, decisions, [])
            return await _drive(
                agent,
                setup,
                sink,
                lambda: agent.resume_stream(data, decisions, integrity_key=key),
                setup.history,
                model,
                on_started=consume,
                announced=tuple(p.tool_call_id for p in state.pending),
                resolved_events=resolved_events,
            )
        return await _drive(
            agent,
            setup,
            sink,
            lambda: agent.run_stream(prompt, message_history=history),
            setup.history,
            model,
        )


def _external_results(values: list[str]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for item in values:
        call_id, sep, text = item.partition("=")
        if not sep or not call_id:
            raise UsageError(f"--external-result {item!r} must be CALL_ID=JSON")
        try:
            results[call_id] = msgspec.json.decode(text)
        except msgspec.DecodeError:
            raise UsageError(
                f"--external-result {call_id}: the value is not JSON (quote strings: '\"text\"')"
            ) from None
    return results


def run_command(args: argparse.Namespace) -> int:
    """`ferrule run`; returns the exit code."""
    out, err = sys.stdout, sys.stderr
    sink = _Sink(args.output or "text", out, err)
    try:
        if args.resume:
            if args.approval is None:
                raise UsageError("--resume needs --approval approve|deny")
            if args.prompt is not None:
                raise UsageError("--resume continues a paused run; it takes no prompt")
        elif args.approval is not None or args.external_result:
            raise UsageError("--approval and --external-result only apply with --resume")
        elif args.prompt is None:
            raise UsageError("no prompt: pass it as an argument, or '-' to read it from standard input")
        setup = build_setup(args, default_approval="deferred", model_optional=bool(args.resume))
        sink.mode = setup.output
        sink.stream_text = setup.output == "text" and out.isatty()
        setup.external_results = _external_results(args.external_result or [])
        if setup.approval == "prompt" and not sys.stdin.isatty():
            raise UsageError("--approval-mode prompt asks on the terminal, and standard input is not one")
        prompt = read_prompt() if args.prompt == "-" else args.prompt
        return int(anyio.run(_run, setup, args, prompt, sink))
    except KeyboardInterrupt:
        err.write("\nferrule: interrupted\n")
        return int(ExitCode.INTERRUPTED)
    except Exception as exc:  # every failure becomes one line and a stable exit code
        return report(exc, sink, err)


def report(exc: BaseException, sink: Any, err: TextIO) -> int:
    """Print an error (and the traceback when FERRULE_DEBUG is set); return its exit code."""
    import os

    from ._exit import unwrap

    error = unwrap(exc)
    code = exit_code_for(error)
    if sink is not None:
        sink.failed(error, code)
    err.write(f"ferrule: error: {describe(error)}\n")
    if os.environ.get("FERRULE_DEBUG"):
        import traceback

        traceback.print_exception(exc, file=err)
    return int(code)
