"""End to end (REQUIREMENTS N-01 ... N-05): a confirmation-gated tool on the real local model.

The model (Qwen2.5-Coder-0.5B, tools emulated through constrained JSON) calls a high-risk tool;
the run pauses into a SQLite checkpoint, resumes by run ID, and a second resume executes nothing.
Assertions are on structure, never on wording.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ferrule.agent import Agent
from ferrule.agent import AgentRunResult
from ferrule.agent import Approved
from ferrule.agent import CheckpointConsumedError
from ferrule.agent import Paused
from ferrule.agent import SqliteCheckpointStore
from ferrule.agent import Tool
from ferrule.core.settings import ModelSettings
from ferrule.core.usage import UsageLimits
from ferrule.providers.llamacpp import LlamaCppServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_a_confirmed_tool_pauses_into_sqlite_and_resumes_once(
    local_server: LlamaCppServer, tmp_path: Path
) -> None:
    sent: list[str] = []

    def send_email(to: str, subject: str) -> str:
        """Send an email.

        Args:
            to: The recipient's address.
            subject: The subject line.
        """
        sent.append(to)
        return "sent"

    def build() -> Agent[None, str]:
        return Agent(
            local_server.model(settings=ModelSettings(temperature=0, max_tokens=256)),
            tools=[Tool(send_email, side_effect="non_idempotent", risk="high", confirmation="always")],
            usage_limits=UsageLimits(request_limit=6),
            checkpoint_store=SqliteCheckpointStore(tmp_path / "checkpoints.sqlite"),
        )

    outcome = await build().run_until_pause("Send an email to bob@example.com with the subject 'Hello'.")
    assert isinstance(outcome, Paused)
    assert sent == []  # nothing runs before the decision
    assert [(a.tool_name, a.status, a.risk) for a in outcome.actions] == [
        ("send_email", "confirmation_required", "high")
    ]
    decisions = {p.tool_call_id: Approved() for p in outcome.pending}
    result = await build().resume(run_id=outcome.state.run_id, decisions=decisions)
    assert isinstance(result, AgentRunResult | Paused)
    assert len(sent) == 1
    # The resumed run may finish, or pause again if the model asks for a second email.
    assert (result.actions[0].tool_name, result.actions[0].status) == ("send_email", "succeeded")
    with pytest.raises(CheckpointConsumedError):
        await build().resume(outcome.state, decisions)
    assert len(sent) == 1
