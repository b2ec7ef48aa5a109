"""The entry points' shared keyword options (`RunOptions`, `ResumeOptions`): typed once, checked at call time."""

from __future__ import annotations

from typing import Any

import pytest

from ferrule.agent import Agent
from ferrule.agent import Approved
from ferrule.agent import Paused
from ferrule.agent import ResumeOptions
from ferrule.agent import RunContext
from ferrule.agent import RunOptions
from ferrule.agent.testing import FunctionModel
from ferrule.core.errors import UserError
from ferrule.core.settings import ModelSettings
from tests.support.scripts import Script
from tests.support.scripts import call

pytestmark = pytest.mark.anyio


def _approval_agent(script: Script) -> Agent[None, str]:
    agent = Agent(FunctionModel(script))

    @agent.tool(requires_approval=True)
    def delete_file(ctx: RunContext[None], path: str) -> str:
        """Delete a file."""
        return f"deleted {path}"

    return agent


def test_the_option_keys() -> None:
    shared = {
        "deps",
        "model",
        "model_settings",
        "usage_limits",
        "timeout",
        "toolsets",
        "capabilities",
        "capability_layers",
        "history_processors",
        "context_budget",
        "pending_messages",
        "correlation",
        "trace_parent",
    }
    assert RunOptions.__optional_keys__ == shared | {"message_history", "instructions"}
    assert ResumeOptions.__optional_keys__ == shared | {"run_id", "state_id", "integrity_key"}
    assert not RunOptions.__required_keys__
    assert not ResumeOptions.__required_keys__


def test_the_options_reach_the_run() -> None:
    script = Script()
    agent = Agent(FunctionModel(script))
    options: RunOptions[None] = {"instructions": "Be brief.", "model_settings": ModelSettings(max_tokens=7)}
    assert agent.run_sync("hi", **options).output == "done"
    assert script.infos[0].instructions == "Be brief."
    assert script.infos[0].model_settings is not None
    assert script.infos[0].model_settings.max_tokens == 7


@pytest.mark.parametrize("method", ["run_sync", "run_until_pause_sync"])
def test_an_unknown_keyword_is_refused_by_the_sync_forms(method: str) -> None:
    script = Script()
    agent = Agent(FunctionModel(script))
    with pytest.raises(TypeError, match=rf"^{method}\(\) got an unexpected keyword argument 'max_tokens'$"):
        getattr(agent, method)("hi", max_tokens=5)
    assert script.seen == []  # refused before any request


async def test_an_unknown_keyword_is_refused_by_every_async_entry_point() -> None:
    script = Script()
    agent = Agent(FunctionModel(script))
    bad: dict[str, Any] = {"max_tokens": 5}
    with pytest.raises(TypeError, match=r"^run\(\) got an unexpected keyword argument 'max_tokens'$"):
        await agent.run("hi", **bad)
    with pytest.raises(TypeError, match=r"^run_until_pause\(\) got an unexpected keyword argument"):
        await agent.run_until_pause("hi", **bad)
    with pytest.raises(TypeError, match=r"^iter\(\) got an unexpected keyword argument"):
        async with agent.iter("hi", **bad):
            pass
    with pytest.raises(TypeError, match=r"^run_stream\(\) got an unexpected keyword argument"):
        async with agent.run_stream("hi", **bad):
            pass
    assert script.seen == []


async def test_resume_refuses_the_start_only_options() -> None:
    script = Script(call("delete_file", {"path": "a.txt"}, "c1"))
    agent = _approval_agent(script)
    paused = await agent.run_until_pause("Delete a.txt")
    assert isinstance(paused, Paused)
    start_only: dict[str, Any] = {"instructions": "again"}
    with pytest.raises(TypeError, match=r"^resume\(\) got an unexpected keyword argument 'instructions'$"):
        await agent.resume(paused, {"c1": Approved()}, **start_only)
    with pytest.raises(
        TypeError, match=r"^resume_stream\(\) got an unexpected keyword argument 'instructions'$"
    ):
        async with agent.resume_stream(paused, {"c1": Approved()}, **start_only):
            pass
    # Nothing was claimed or executed: the same state still resumes.
    result = await agent.resume(paused, {"c1": Approved()})
    assert not isinstance(result, Paused)
    assert result.output == "done"


async def test_the_sync_forms_stay_refused_inside_an_event_loop() -> None:
    agent = Agent(FunctionModel(Script()))
    with pytest.raises(
        UserError,
        match=r"^resume_sync\(\) cannot be called from async code; use `await agent.resume\(...\)`$",
    ):
        agent.resume_sync(b"", {})
