"""A chat page in the browser, served by ferrule-ui: the AI SDK at `/`, AG-UI at `/agui`.

    python docs/examples/ui_server.py [--port 8000]

`build_app(agent)` mounts `ferrule.ui.vercel.app` at `/api/chat` and `ferrule.ui.ag_ui.app` at
`/api/agui` next to the pages in `ui_web/` (bundled with esbuild from the real `ai` and
`@ag-ui/client` packages; `ensure_bundle()` runs `npm ci` and the build when needed). Run as a
script it serves a scripted, offline agent: ask about the weather (a tool call and its result,
plus a typed `data-weather` value), ask it to pay someone (a tool that needs your approval), or
ask for a story (a long streamed answer). `ui_demo.py` serves the same page on a local model.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import threading
from collections.abc import AsyncIterator
from collections.abc import Callable
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import msgspec
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.responses import Response
from starlette.routing import Mount
from starlette.routing import Route
from starlette.staticfiles import StaticFiles

from ferrule.agent import Agent
from ferrule.agent import AgentStreamEvent
from ferrule.agent import FunctionToolResultEvent
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import DeltaToolCall
from ferrule.agent.testing import DeltaToolCalls
from ferrule.agent.testing import FunctionModel
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ToolReturnPart
from ferrule.core.messages import UserPromptPart
from ferrule.ui import CustomValue
from ferrule.ui import OnDisconnect
from ferrule.ui import ag_ui
from ferrule.ui import custom_value
from ferrule.ui import vercel

WEB = Path(__file__).resolve().parent / "ui_web"
STORY = [
    "Once",
    "upon",
    "a",
    "time",
    "a",
    "small",
    "agent",
    "lived",
    "on",
    "a",
    "loopback",
    "interface.",
    "Every",
    "morning",
    "it",
    "streamed",
    "the",
    "news",
    "to",
    "a",
    "browser,",
    "one",
    "word",
    "at",
    "a",
    "time,",
    "and",
    "every",
    "evening",
    "it",
    "asked",
    "before",
    "it",
    "spent",
    "anyone's",
    "money.",
    "The",
    "end.",
]


class Weather(msgspec.Struct):
    """The typed value the page shows as `data-weather`."""

    city: str
    temperature_c: int
    sky: str


def get_weather(city: str) -> str:
    """Get the current weather in a city.

    Args:
        city: The city's name.
    """
    return f"sunny, 21 °C in {city}"


def weather_values(event: AgentStreamEvent) -> Sequence[CustomValue]:
    """Typed custom values for the browser: a weather card after each weather result."""
    if isinstance(event, FunctionToolResultEvent) and event.result.tool_name == "get_weather":
        city = str(event.result.content).rsplit(" in ", 1)[-1]
        return [custom_value("weather", Weather(city=city, temperature_c=21, sky="sunny"))]
    return []


def _last_request(messages: Sequence[Message]) -> ModelRequest:
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    return last


def scripted_agent(gate: threading.Event | None = None, ledger: list[str] | None = None) -> Agent[None, str]:
    """An offline agent for the page and its tests.

    With `gate`, a story pauses after three words until it is set; `ledger` records each payment
    that really ran.
    """
    payments = ledger if ledger is not None else []

    def send_money(to: str, amount: int) -> str:
        """Send money to someone (needs the user's approval).

        Args:
            to: Who receives it.
            amount: How many euros.
        """
        payments.append(f"{amount} EUR to {to}")
        return f"sent {amount} EUR to {to}"

    async def stream(messages: Sequence[Message], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        request = _last_request(messages)
        results = [p for p in request.parts if isinstance(p, ToolReturnPart)]
        if results:
            result = results[0]
            if result.outcome == "denied":
                yield "OK, I did not send the money."
            elif result.tool_name == "send_money":
                yield f"Done: {result.content}."
            else:
                for word in f"It is {result.content}.".split(" "):
                    yield word + " "
            return
        prompts = [p for p in request.parts if isinstance(p, UserPromptPart)]
        text = str(prompts[-1].content) if prompts else ""
        lowered = text.lower()
        if "weather" in lowered:
            match = re.search(r"in ([A-Z][a-z]+)", text)
            yield "Let me check the weather. "
            yield {0: DeltaToolCall(name="get_weather", json_args='{"city": ', tool_call_id="call-weather")}
            yield {
                0: DeltaToolCall(
                    json_args=msgspec.json.encode(match.group(1) if match else "Paris").decode() + "}"
                )
            }
        elif "pay" in lowered or "send" in lowered:
            yield "I need your approval to send the money. "
            yield {
                0: DeltaToolCall(
                    name="send_money", json_args='{"to": "alice", "amount": 250}', tool_call_id="call-pay"
                )
            }
        elif "story" in lowered:
            for i, word in enumerate(STORY):
                if gate is not None and i == 3:
                    await anyio.to_thread.run_sync(gate.wait, 60)
                elif gate is None:
                    await anyio.sleep(0.08)
                yield word + " "
        else:
            yield f"You said: {text}"

    agent = Agent(FunctionModel(stream_function=stream), instructions="You are a helpful assistant.")
    agent.tool_plain(side_effect="read_only")(get_weather)
    agent.tool_plain(requires_approval=True)(send_money)
    return agent


def page(protocol: str, script: str) -> str:
    """The chat page for one protocol."""
    html = (WEB / "page.html").read_text(encoding="utf-8")
    return html.replace("__PROTOCOL__", protocol).replace("__SCRIPT__", script)


def ensure_bundle(web: Path = WEB) -> Path:
    """Build `ui_web/dist/` with esbuild (after `npm ci` if `node_modules` is missing); returns it."""
    dist = web / "dist"
    sources = [*(web / "src").glob("*.js"), web / "package-lock.json"]
    newest = max(p.stat().st_mtime for p in sources)
    built = [dist / "chat.js", dist / "agui.js"]
    if all(p.is_file() and p.stat().st_mtime >= newest for p in built):
        return dist
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("the example page needs Node.js and npm (apt-get install nodejs npm)")
    if not (web / "node_modules").is_dir():
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=web, check=True)
    subprocess.run([npm, "run", "--silent", "build"], cwd=web, check=True)
    return dist


def build_app(
    agent: Agent[Any, Any],
    *,
    on_disconnect: OnDisconnect = "cancel",
    custom_values: Callable[[AgentStreamEvent], Sequence[CustomValue]] | None = weather_values,
    dist: Path | None = None,
) -> Starlette:
    """The pages and both protocol apps for `agent`."""
    chat_page = page("· AI SDK", "/dist/chat.js")
    agui_page = page("· AG-UI", "/dist/agui.js")

    async def index(request: Request) -> Response:
        return HTMLResponse(chat_page)

    async def agui(request: Request) -> Response:
        return HTMLResponse(agui_page)

    return Starlette(
        routes=[
            Route("/", index),
            Route("/agui", agui),
            Mount(
                "/api/chat",
                app=vercel.app(agent, on_disconnect=on_disconnect, custom_values=custom_values),
            ),
            Mount("/api/agui", app=ag_ui.app(agent, custom_values=custom_values)),
            Mount("/dist", app=StaticFiles(directory=dist or ensure_bundle())),
        ]
    )


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    app = build_app(scripted_agent())
    print(f"open http://127.0.0.1:{args.port}/ (AI SDK) or http://127.0.0.1:{args.port}/agui (AG-UI)")
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
