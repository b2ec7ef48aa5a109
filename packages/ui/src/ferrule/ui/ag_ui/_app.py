"""`ferrule.ui.ag_ui.app`: an ASGI app serving an agent to AG-UI clients (`HttpAgent`, CopilotKit)."""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Route

from ferrule.agent import Agent

from .._errors import ClientInputError
from .._limits import DEFAULT_LIMITS
from .._limits import OnDisconnect
from .._limits import UILimits
from .._pauses import pauses_for
from .._sanitize import sanitize_messages
from .._server import CustomValues
from .._server import DepsFactory
from .._server import Host
from .._server import Runs
from .._server import Segment
from .._server import read_body
from .._store import PausedRunStore
from ._encode import CONTENT_TYPE
from ._encode import browser_messages
from ._encode import encode_sse
from ._encode import parse_approval
from ._encode import parse_run_input

__all__ = ["app"]

_HEADERS = {"content-type": CONTENT_TYPE, "cache-control": "no-cache", "x-accel-buffering": "no"}


def app(
    agent: Agent[Any, Any],
    *,
    store: PausedRunStore | None = None,
    deps: DepsFactory | None = None,
    limits: UILimits = DEFAULT_LIMITS,
    allow_assistant_history: bool = True,
    on_disconnect: OnDisconnect = "cancel",
    custom_values: CustomValues | None = None,
    max_active_runs: int = 64,
    replay_max_events: int = 10_000,
    replay_max_bytes: int = 8 * 1024 * 1024,
) -> Starlette:
    """An ASGI app for AG-UI's HTTP transport: `POST /` takes a `RunAgentInput` and streams AG-UI events (SSE).

    A run that needs approval ends with `RUN_FINISHED` and an interrupt outcome; the thread's
    paused run waits in `agent.checkpoint_store` as the checkpoint of run `ag-ui:thread:<thread id>`
    (in `store`, a deprecated `PausedRunStore`, when one is given). The next input for that thread must answer every interrupt in
    `resume` (anything else gets 409); it resumes the run exactly once. Client history is
    sanitized: `system`/`developer` messages are refused, the client's tool, reasoning and activity
    messages are display state and ignored, and frontend `tools`, `context` and `state` are
    refused (400) because they would act as instructions. Every input is bounded by `limits`.
    `custom_values(event)` may return `CustomValue`s (AG-UI `CUSTOM` events) to send after each
    agent event; `deps(request)` builds the run's dependencies; `on_disconnect` is as for
    `ferrule.ui.vercel.app`.
    """
    host = Host(
        agent=agent,
        pauses=pauses_for(agent, store, "ag-ui:thread"),
        runs=Runs(max_active_runs, max_active_runs, replay_max_events, replay_max_bytes),
        deps=deps,
        limits=limits,
        encode=encode_sse,
        headers=_HEADERS,
        on_disconnect=on_disconnect,
        custom_values=custom_values,
    )

    async def build(request: Request) -> tuple[str, Segment]:
        body = await read_body(request, limits.max_body_bytes)
        run_input = parse_run_input(body, limits=limits)
        if run_input.tools:
            raise ClientInputError(
                "frontend tools are not supported: the agent's tools are defined on the server"
            )
        if run_input.context:
            raise ClientInputError("client context is not accepted: instructions come from the server")
        if run_input.state not in (None, {}):
            raise ClientInputError("shared state is not supported by this agent")
        key = run_input.thread_id
        state = await host.pauses.waiting(key)
        if run_input.resume:
            if state is None:
                raise ClientInputError(
                    f"thread {key!r} has no run waiting for approval: it was already resumed, or never paused",
                    status=409,
                )
            approval = parse_approval(run_input, state.pending, limits=limits)
            return key, await host.resume(request, key, state, "thread", approval, run_input.run_id)
        if state is not None:
            raise ClientInputError(
                f"thread {key!r} waits for approval: answer every interrupt in 'resume'", status=409
            )
        history = sanitize_messages(
            browser_messages(run_input, limits=limits), allow_assistant=allow_assistant_history, limits=limits
        )
        return key, await host.start(request, key, history, run_input.run_id)

    return Starlette(routes=[Route("/", host.endpoint(build), methods=["POST"])])
