"""`TemporalAgent` on the real Temporal dev server: a worker running a ferrule agent against the
scripted chat server is SIGKILLed and another worker completes the run; nothing completed repeats."""

from __future__ import annotations

import base64
import contextlib
import datetime
import importlib.util
import json
import uuid
from pathlib import Path
from typing import Any
from typing import cast

import pytest

from ferrule.agent import Agent
from ferrule.agent import Approved
from ferrule.agent import DeferredCall
from ferrule.agent import Tool
from ferrule.agent.durable import DurableError
from ferrule.agent.durable import MissingWorkerRegistrationError
from ferrule.agent.testing import TestModel
from ferrule.agent.toolsets import FunctionToolset
from ferrule.durable.temporal import PendingApproval
from ferrule.durable.temporal import TemporalAgent
from ferrule.durable.temporal import registered
from tests.support.chat_server import ChatServer
from tests.support.chat_server import Hold
from tests.support.chat_server import StartChatServer
from tests.support.chat_server import Turn
from tests.support.crash import Worker
from tests.support.crash import effects
from tests.support.crash_runs import THREE_STEPS
from tests.support.crash_runs import killed_mid_stream

from .conftest import WORKERS

API_KEY = "sk-ferrule-temporal-" + uuid.uuid4().hex


def worker(address: str, server: ChatServer, tmp_path: Path, mode: str) -> Worker:
    args = [
        address,
        f"wf-{tmp_path.name}",
        str(tmp_path / "effects.log"),
        server.base_url,
        mode,
        tmp_path.name,
    ]
    return Worker(WORKERS / "agent.py", args, env={"FERRULE_TEST_API_KEY": API_KEY}, logs=tmp_path)


def history_text(line: str) -> str:
    """Every string of a printed workflow history, payloads (base64 JSON) decoded too."""
    texts: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, dict):
            for item in cast("dict[str, object]", value).values():
                walk(item)
        elif isinstance(value, list):
            for item in cast("list[object]", value):
                walk(item)
        elif isinstance(value, str):
            texts.append(value)
            with contextlib.suppress(ValueError):
                texts.append(base64.b64decode(value, validate=True).decode("utf-8", "replace"))

    walk(json.loads(line.removeprefix("history ")))
    return "\n".join(texts)


def test_a_worker_killed_mid_run_is_replaced_without_repeats(
    temporal_server: str, chat_server: StartChatServer, tmp_path: Path
) -> None:
    # The second request is held: the first tool call has completed, the worker dies mid-request.
    server = chat_server(THREE_STEPS, hold=Hold(turn=1))
    first = worker(temporal_server, server, tmp_path, "run")
    assert server.holding.wait(timeout=120), "the second request should have been held"
    first.kill()
    lines = worker(temporal_server, server, tmp_path, "run").finish()
    assert "result The sums are 3 and 7." in lines
    assert dict(server.served) == {0: 1, 1: 2, 2: 1}, "only the interrupted request is repeated"
    assert effects(tmp_path / "effects.log") == ["add 1 2", "add 3 4"], "each tool call exactly once"
    assert server.authorizations == [f"Bearer {API_KEY}"] * 4
    # No secret in the workflow history: the key reached the server, the history does not hold it.
    history = history_text(next(line for line in lines if line.startswith("history ")))
    assert "step.0.tool_call.call_0_0" in history
    assert "add twice" in history
    assert API_KEY not in history


def test_a_worker_killed_right_after_the_first_tool_call_repeats_nothing(
    temporal_server: str, chat_server: StartChatServer, tmp_path: Path
) -> None:
    # The worker dies as the second model request activity starts, before it sends anything: the
    # first tool call's activity has completed and is recorded in the history.
    server = chat_server(THREE_STEPS)
    worker(temporal_server, server, tmp_path, "crash-before-request-1").killed_itself()
    assert effects(tmp_path / "effects.log") == ["add 1 2"]
    assert dict(server.served) == {0: 1}
    lines = worker(temporal_server, server, tmp_path, "run").finish()
    assert "result The sums are 3 and 7." in lines
    assert dict(server.served) == {0: 1, 1: 1, 2: 1}, "each model request exactly once"
    assert effects(tmp_path / "effects.log") == ["add 1 2", "add 3 4"], "each tool call exactly once"


def test_killed_during_a_stream_delivers_no_committed_event_twice(
    temporal_server: str, chat_server: StartChatServer, tmp_path: Path
) -> None:
    # The next worker runs the model request activity again, skipping the events already committed.
    killed_mid_stream(
        chat_server, lambda server: worker(temporal_server, server, tmp_path, "stream"), tmp_path
    )


@pytest.mark.skipif(
    importlib.util.find_spec("mcp_server_time") is None, reason="mcp-server-time is not installed"
)
def test_mcp_tools_run_as_activities_on_the_worker(
    temporal_server: str, chat_server: StartChatServer, tmp_path: Path
) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [("zone", {}), ("get_current_time", {"timezone": "UTC"})]
    server = chat_server([Turn(tool_calls=calls), Turn(text="It is now.")])
    lines = worker(temporal_server, server, tmp_path, "mcp").finish()
    assert "result It is now." in lines
    assert dict(server.served) == {0: 1, 1: 1}
    # The model saw the MCP server's tools, and got the real server's answer to the call.
    offered = {tool["function"]["name"] for tool in server.bodies[0]["tools"]}
    assert {"get_current_time", "convert_time"} <= offered
    results = {m["tool_call_id"]: m["content"] for m in server.bodies[1]["messages"] if m["role"] == "tool"}
    assert results["call_0_0"] == "UTC"
    answer = json.loads(results["call_0_1"])
    assert answer["timezone"] == "UTC"
    stamp = datetime.datetime.fromisoformat(answer["datetime"])
    assert stamp.utcoffset() == datetime.timedelta(0)
    history = history_text(next(line for line in lines if line.startswith("history ")))
    assert "ferrule.mcp_request" in history, "the MCP call is an activity"
    assert "step.0.mcp_request.call_0_1" in history
    # The workflow-origin tool ran inline in workflow code: no activity, no step of its own.
    assert "step.0.tool_call.call_0_0" not in history
    assert "ferrule.tool_call" not in history


def test_a_non_idempotent_call_whose_worker_died_is_unknown_and_not_retried(
    temporal_server: str, chat_server: StartChatServer, tmp_path: Path
) -> None:
    server = chat_server(
        [Turn(tool_calls=[("charge", {"cents": 500})]), Turn(text="I could not confirm it.")]
    )
    worker(temporal_server, server, tmp_path, "crash-in-charge").killed_itself()
    lines = worker(temporal_server, server, tmp_path, "run").finish()
    assert "result I could not confirm it." in lines
    assert effects(tmp_path / "effects.log") == ["charge 500"], "never charged twice"
    assert dict(server.served) == {0: 1, 1: 1}


@pytest.mark.parametrize("decision", ["approve", "deny"])
def test_an_approval_waits_across_a_worker_restart_and_is_applied_once(
    temporal_server: str, chat_server: StartChatServer, tmp_path: Path, decision: str
) -> None:
    server = chat_server([Turn(tool_calls=[("ship", {"order": "A-7"})]), Turn(text="Done.")])
    first = worker(temporal_server, server, tmp_path, "pause")
    assert first.wait_for("paused ") == "paused 0 call_0_0"
    assert first.wait_for("suspended: ").endswith(
        "waits for the decisions of pause 0 (ship); send them with decide()"
    )
    first.kill()
    lines = worker(temporal_server, server, tmp_path, decision).finish()
    assert "repeat rejected" in lines, "a second decision for the same pause is refused"
    assert "result Done." in lines
    assert "finished Done." in lines, "result() gives the output of a finished run"
    assert effects(tmp_path / "effects.log") == (["ship A-7"] if decision == "approve" else [])
    assert dict(server.served) == {0: 1, 1: 1}


def test_result_of_a_terminated_run_is_a_persisted_failure(
    temporal_server: str, chat_server: StartChatServer, tmp_path: Path
) -> None:
    server = chat_server(THREE_STEPS, hold=Hold(turn=0))
    lines = worker(temporal_server, server, tmp_path, "terminate").finish()
    (failed,) = [line for line in lines if line.startswith("failed: ")]
    assert failed.endswith("ended without an output (TERMINATED); it will not resume")


def test_registration_is_checked() -> None:
    with pytest.raises(MissingWorkerRegistrationError, match="no TemporalAgent named 'nobody'"):
        registered("nobody")
    TemporalAgent(Agent(TestModel()), name="checked-once")
    with pytest.raises(DurableError, match="already registered"):
        TemporalAgent(Agent(TestModel()), name="checked-once")
    with pytest.raises(DurableError, match="has no model"):
        TemporalAgent(Agent(), name="modelless")


@pytest.mark.anyio
async def test_toolsets_are_entered_and_listed_on_the_worker() -> None:
    async def lookup(key: str) -> str:
        """Look a key up."""
        return key

    toolset = FunctionToolset([Tool(lookup, side_effect="read_only")])
    durable = TemporalAgent(Agent(TestModel()), name=f"with-toolset-{uuid.uuid4().hex}", toolsets=[toolset])
    with pytest.raises(MissingWorkerRegistrationError, match="not entered on this worker"):
        durable.offered()
    async with durable:
        assert durable.tool("lookup").name == "lookup"
        (offered,) = durable.offered()
        assert isinstance(offered, FunctionToolset)
        assert [t.name for t in offered.tools] == ["lookup"]
        with pytest.raises(MissingWorkerRegistrationError, match="has no tool 'other'"):
            durable.tool("other")
    with pytest.raises(MissingWorkerRegistrationError, match="not entered"):
        durable.tool("lookup")
    clash = TemporalAgent(
        Agent(TestModel(), tools=[lookup]), name=f"clash-{uuid.uuid4().hex}", toolsets=[toolset]
    )
    with pytest.raises(DurableError, match="two tools named 'lookup'"):
        await clash.__aenter__()


@pytest.mark.anyio
async def test_decisions_must_match_the_pending_calls() -> None:
    pending = PendingApproval(0, [DeferredCall(tool_call_id="c1", tool_name="ship")])
    with pytest.raises(DurableError, match=r"exactly the calls \['c1'\]; got \['c2'\]"):
        await TemporalAgent.decide(None, pending, {"c2": Approved()})  # type: ignore[arg-type] - refused before use


def test_a_tool_that_raises_fails_the_run_without_temporal_retrying_it(
    temporal_server: str, chat_server: StartChatServer, tmp_path: Path
) -> None:
    # Outside Temporal the tool's error ends the run; Temporal's default policy would retry the
    # activity without end (1 s, 2 s, 4 s, ...), so the run would never finish.
    server = chat_server([Turn(tool_calls=[("broken", {"order": "A-7"})]), Turn(text="unreachable")])
    lines = worker(temporal_server, server, tmp_path, "broken").finish()
    (failed,) = [line for line in lines if line.startswith("workflow failed: ")]
    assert failed.endswith("ValueError: no such order: A-7")
    assert f"failed: run 'wf-{tmp_path.name}' ended without an output (FAILED); it will not resume" in lines
    assert effects(tmp_path / "effects.log") == ["broken A-7"], "called once, not retried"
    assert dict(server.served) == {0: 1}
