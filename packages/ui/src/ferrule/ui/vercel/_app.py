"""`ferrule.ui.vercel.app`: an ASGI app serving an agent to the AI SDK's `useChat` / `Chat`."""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ferrule.agent import Agent

from .._body import client_id
from .._bridge import decisions_from
from .._errors import ClientInputError
from .._ids import check_id
from .._limits import DEFAULT_LIMITS
from .._limits import OnDisconnect
from .._limits import UILimits
from .._pauses import pauses_for
from .._sanitize import sanitize_messages
from .._server import CustomValues
from .._server import DepsFactory
from .._server import FollowResponse
from .._server import Host
from .._server import Runs
from .._server import Segment
from .._server import client_error
from .._server import new_run_id
from .._server import read_body
from .._store import PausedRunStore
from ._encode import HEADERS
from ._encode import approvals_from
from ._encode import browser_messages
from ._encode import encode
from ._encode import parse_request

__all__ = ["app"]


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
    max_streams: int = 1024,
    replay_max_events: int = 10_000,
    replay_max_bytes: int = 8 * 1024 * 1024,
) -> Starlette:
    """An ASGI app for the AI SDK's default chat transport; mount it at the chat's `api` path.

    - `POST /` takes `DefaultChatTransport`'s body and streams the run as a UI message stream.
      When the last message is the assistant's with answered approvals, the chat's paused run (the
      checkpoint of run `vercel:chat:<chat id>` in `agent.checkpoint_store`) is resumed with them,
      exactly once: a second post of the same decisions gets 409, in any process sharing the store.
      A new user message abandons a paused run that was not answered. `store` (a `PausedRunStore`)
      is deprecated: paused runs are kept there instead, with a `DeprecationWarning`.
    - `GET /{chat_id}/stream` replays the chat's run in flight from its first record and follows
      it (the transport's `reconnectToStream`); 204 when none is in flight.

    Client history is sanitized (`sanitize_messages`, assistant text kept when
    `allow_assistant_history`); every input is bounded by `limits`; refused input gets a 4xx
    `{"error": ...}`. `custom_values(event)` may return `CustomValue`s to send after each agent
    event's own records (AI SDK `data-<name>` parts). `deps(request)` builds the run's dependencies. With `on_disconnect="cancel"`
    a dropped request cancels its run; `"continue"` lets it finish so a reload can replay it.
    """
    host = Host(
        agent=agent,
        pauses=pauses_for(agent, store, "vercel:chat"),
        runs=Runs(max_active_runs, max_streams, replay_max_events, replay_max_bytes),
        deps=deps,
        limits=limits,
        encode=encode,
        headers=HEADERS,
        on_disconnect=on_disconnect,
        custom_values=custom_values,
    )
    runs = host.runs

    async def build(request: Request) -> tuple[str, Segment]:
        body = await read_body(request, limits.max_body_bytes)
        chat = parse_request(body, limits=limits)
        message_id, responses = approvals_from(chat)
        key = chat.id
        if responses:
            assert message_id is not None
            check_id("message id", message_id, limits.max_id_bytes)
            state = await host.pauses.waiting(key)
            if state is None:
                raise ClientInputError(
                    f"chat {key!r} has no run waiting for approval: it was already resumed, or never paused",
                    status=409,
                )
            approval = decisions_from(state.pending, responses, limits=limits), responses
            return key, await host.resume(request, key, state, "chat", approval, new_run_id(), message_id)
        history = sanitize_messages(
            browser_messages(chat), allow_assistant=allow_assistant_history, limits=limits
        )
        # A new message abandons an unanswered pause.
        return key, await host.start(request, key, history, new_run_id(), abandon_pause=True)

    async def reconnect(request: Request) -> Response:
        chat_id = request.path_params["chat_id"]
        try:
            client_id("chat id", chat_id, limits.max_id_bytes)
        except ClientInputError as exc:
            return client_error(exc)
        live = runs.streams.get(chat_id)
        if live is None or live.done:
            return Response(status_code=204)
        if live.buffer.first_seq > 1:
            return client_error(
                ClientInputError(
                    f"the start of chat {chat_id!r}'s stream was evicted from the replay buffer "
                    "(replay_max_events / replay_max_bytes); it cannot be replayed",
                    status=410,
                )
            )
        return FollowResponse(headers=HEADERS, live=live)

    return Starlette(
        routes=[
            Route("/", host.endpoint(build), methods=["POST"]),
            Route("/{chat_id}/stream", reconnect, methods=["GET"]),
        ]
    )
