"""`ferrule chat`: an interactive session in the terminal.

The event loop (with the agent, its model and its MCP servers) runs in a worker thread for the whole
session through an anyio blocking portal; the main thread reads lines with `input()` (readline line
editing) and receives Ctrl-C. So Ctrl-C at the prompt clears the line, Ctrl-C during a turn cancels
that turn (its work is drained, the session goes on), and Ctrl-D leaves. Output is rendered with
rich as it streams: Markdown, tool calls as they run, their results, and y/n approvals inline.
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import Future
from typing import TYPE_CHECKING
from typing import Any

import msgspec

from ._exit import ExitCode
from ._exit import UsageError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.live import Live

    from ferrule.agent import Agent
    from ferrule.agent import Decision
    from ferrule.agent import Paused
    from ferrule.core.messages import Message

    from ._setup import Setup

__all__ = ["chat_command"]

PROMPT = "\u203a "  # a single right-pointing angle quotation mark
"""What the input line starts with."""
_MAX_SHOWN = 300


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else msgspec.json.encode(msgspec.to_builtins(value)).decode()
    text = " ".join(text.split())
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 1] + "…"


class _Renderer:
    """Draws one turn's events as they arrive."""

    def __init__(self, console: Console, markdown: bool) -> None:
        self.console = console
        self.markdown = markdown
        self.text = ""
        self.live: Live | None = None

    def _show(self) -> None:
        if not self.markdown:
            return
        from rich.markdown import Markdown

        if self.live is None:
            from rich.live import Live

            self.live = Live(
                console=self.console, refresh_per_second=15, vertical_overflow="visible", transient=False
            )
            self.live.start()
        self.live.update(Markdown(self.text), refresh=True)

    def _text(self, delta: str) -> None:
        if not delta:
            return
        self.text += delta
        if self.markdown:
            self._show()
        else:
            self.console.file.write(delta)
            self.console.file.flush()

    def end_text(self) -> None:
        """Finish the current block of text (before a tool call, or at the end of the turn)."""
        if self.live is not None:
            self.live.stop()
            self.live = None
        elif self.text and not self.markdown:
            self.console.file.write("\n")
        self.text = ""

    def feed(self, event: Any) -> None:
        from ferrule.agent import FunctionToolCallEvent
        from ferrule.agent import FunctionToolResultEvent
        from ferrule.core.messages import RetryPromptPart
        from ferrule.core.messages import TextPart
        from ferrule.core.model import PartDeltaEvent
        from ferrule.core.model import PartStartEvent
        from ferrule.core.model import TextPartDelta

        if isinstance(event, PartStartEvent):
            if isinstance(event.part, TextPart):
                if self.text:
                    self.end_text()
                self._text(event.part.content)
        elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
            self._text(event.delta.content_delta)
        elif isinstance(event, FunctionToolCallEvent):
            self.end_text()
            self.console.print(
                f"[bold cyan]⚙ {event.part.tool_name}[/]([dim]{_escape(_short(event.part.args or {}))}[/])"
            )
        elif isinstance(event, FunctionToolResultEvent):
            result = event.result
            if isinstance(result, RetryPromptPart):
                style, shown = "yellow", _short(result.model_response())
            else:
                style = "green" if result.outcome == "success" else "yellow"
                shown = _short(result.content)
            self.console.print(f"  [{style}]↳[/] [dim]{_escape(shown)}[/]")


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


class _Session:
    """The agent side of the chat, living in the portal's event loop."""

    def __init__(
        self, agent: Agent[Any, Any], console: Console, markdown: bool, history: list[Message]
    ) -> None:
        self.agent = agent
        self.console = console
        self.markdown = markdown
        self.history = history
        self._stream: Any = None
        self._cancelled = False

    def cancel(self) -> None:
        """Cancel the running turn (called from the portal, so in the loop's thread)."""
        self._cancelled = True
        if self._stream is not None:
            self._stream.cancel()

    async def turn(
        self, prompt: str | None, paused: Paused | None, decisions: dict[str, Decision] | None
    ) -> Any:
        """One turn (or the resumption of a paused one): `Paused`, `"done"`, `"cancelled"` or an exception."""
        from ferrule.agent.exceptions import RunCancelledError

        self._cancelled = False
        renderer = _Renderer(self.console, self.markdown)
        if paused is not None and decisions is not None:
            opener = self.agent.resume_stream(paused, decisions)
        else:
            opener = self.agent.run_stream(prompt, message_history=self.history)
        try:
            async with opener as stream:
                self._stream = stream
                if self._cancelled:
                    stream.cancel()
                try:
                    async for event in stream:
                        renderer.feed(event)
                finally:
                    renderer.end_text()
                    self._stream = None
                if stream.paused is not None:
                    return stream.paused
                self.history = stream.result.all_messages()
                return "done"
        except RunCancelledError:
            return "cancelled"
        except Exception as exc:  # a failed turn is reported; the session goes on
            return exc


def _wait(future: Future[Any], portal: Any, session: _Session, console: Console) -> Any:
    """The turn's outcome; Ctrl-C while waiting cancels the turn and waits for it to drain."""
    while True:
        try:
            return future.result()
        except KeyboardInterrupt:
            console.print("\n[yellow]cancelling…[/]")
            try:
                portal.call(session.cancel)
            except KeyboardInterrupt:
                continue


def _ask(paused: Paused, console: Console) -> dict[str, Decision]:
    from ferrule.agent import Approved
    from ferrule.agent import Denied

    decisions: dict[str, Decision] = {}
    for call in paused.pending:
        if call.kind == "external":
            console.print(
                f"[yellow]{_escape(call.tool_name)} is an external tool; it cannot run here (denied)[/]"
            )
            decisions[call.tool_call_id] = Denied(message="External tools cannot run in this chat.")
            continue
        question = f"Allow {call.tool_name}({_short(call.args or {})})? [y/N] "
        try:
            answer = input(question)
        except (EOFError, KeyboardInterrupt):
            answer = ""
            console.print()
        if answer.strip().lower() in ("y", "yes"):
            decisions[call.tool_call_id] = Approved()
        else:
            decisions[call.tool_call_id] = Denied(message="The user denied this call.")
            console.print("[yellow]denied[/]")
    return decisions


def _deny_all(paused: Paused) -> dict[str, Decision]:
    from ferrule.agent import Denied

    return {p.tool_call_id: Denied(message="Tool calls are denied in this chat.") for p in paused.pending}


def _loop(setup: Setup, portal: Any, session: _Session, console: Console) -> None:
    from ferrule.agent import Paused

    from ._run import describe

    while True:
        try:
            line = input(PROMPT)
        except EOFError:
            console.print()
            return
        except KeyboardInterrupt:
            console.print("\n[dim](Ctrl-D or /exit leaves)[/]")
            continue
        text = line.strip()
        if not text:
            continue
        if text in ("/exit", "/quit"):
            return
        if text == "/clear":
            session.history = []
            console.print("[dim]history cleared[/]")
            continue
        outcome = _wait(portal.start_task_soon(session.turn, line, None, None), portal, session, console)
        while isinstance(outcome, Paused):
            decisions = _ask(outcome, console) if setup.approval == "prompt" else _deny_all(outcome)
            outcome = _wait(
                portal.start_task_soon(session.turn, None, outcome, decisions), portal, session, console
            )
        if outcome == "cancelled":
            console.print("[yellow]turn cancelled[/] [dim](not kept in the history)[/]")
        elif isinstance(outcome, BaseException):
            console.print(f"[red]error:[/] {_escape(describe(outcome))}")


def chat_command(args: argparse.Namespace) -> int:
    """`ferrule chat`; returns the exit code."""
    from ._run import report

    try:
        return _chat(args)
    except KeyboardInterrupt:
        return int(ExitCode.INTERRUPTED)
    except Exception as exc:
        return report(exc, None, sys.stderr)


def _chat(args: argparse.Namespace) -> int:
    import contextlib

    with contextlib.suppress(ImportError):  # line editing and input history where available
        import readline  # noqa: F401  # pyright: ignore[reportUnusedImport]

    from anyio.from_thread import start_blocking_portal
    from rich.console import Console

    from ._files import load_history
    from ._files import save_history
    from ._run import open_agent
    from ._setup import build_setup

    setup = build_setup(args, default_approval="prompt")
    if setup.approval not in ("prompt", "deny"):
        raise UsageError(
            "chat asks for approvals (prompt) or denies them (deny); deferred is for `ferrule run`"
        )
    if not sys.stdin.isatty():
        raise UsageError("ferrule chat needs a terminal; use `ferrule run` for scripts")
    history = load_history(setup.history) if setup.history is not None else []
    console = Console(highlight=False)
    assert setup.spec.model is not None
    with (
        start_blocking_portal(backend="asyncio") as portal,
        portal.wrap_async_context_manager(open_agent(setup)) as resolved,
    ):
        session = _Session(resolved.agent, console, not args.plain, history)
        turns = len(history)
        console.print(
            f"[bold]ferrule chat[/] · {_escape(setup.spec.model.model_string)}"
            + (f" · {turns} earlier messages" if turns else "")
            + "\n[dim]Enter sends · Ctrl-C cancels a turn · Ctrl-D or /exit leaves · /clear forgets[/]"
        )
        try:
            _loop(setup, portal, session, console)
        finally:
            if setup.history is not None:
                save_history(setup.history, session.history)
                console.print(f"[dim]history saved to {_escape(str(setup.history))}[/]")
    return int(ExitCode.OK)
