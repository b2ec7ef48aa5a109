"""`DBOSAgent` on the real DBOS engine (SQLite and PostgreSQL): a worker running a ferrule agent
against the scripted chat server is SIGKILLed and restarted; nothing that completed runs again."""

from __future__ import annotations

import base64
import contextlib
import uuid
from pathlib import Path

import pytest
import sqlalchemy

from ferrule.agent import Agent
from ferrule.agent import Approved
from ferrule.agent import DeferredCall
from ferrule.agent.durable import DurableError
from ferrule.agent.testing import TestModel
from ferrule.durable.dbos import DatabaseUrl
from ferrule.durable.dbos import DBOSAgent
from ferrule.durable.dbos import PendingApproval
from ferrule.durable.dbos import database_url
from tests.support.chat_server import ChatServer
from tests.support.chat_server import Hold
from tests.support.chat_server import StartChatServer
from tests.support.chat_server import Turn
from tests.support.crash import Worker
from tests.support.crash import effects
from tests.support.crash_runs import THREE_STEPS
from tests.support.crash_runs import killed_mid_stream

from .conftest import WORKERS

API_KEY = "sk-ferrule-durable-" + uuid.uuid4().hex


def worker(database: DatabaseUrl, server: ChatServer, tmp_path: Path, mode: str) -> Worker:
    args = [database.url, "run-1", str(tmp_path / "effects.log"), server.base_url, mode]
    return Worker(WORKERS / "agent.py", args, env={"FERRULE_TEST_API_KEY": API_KEY}, logs=tmp_path)


def finished(database: DatabaseUrl, server: ChatServer, tmp_path: Path, mode: str = "run") -> list[str]:
    return worker(database, server, tmp_path, mode).finish()


def crashed(database: DatabaseUrl, server: ChatServer, tmp_path: Path, mode: str) -> None:
    worker(database, server, tmp_path, mode).killed_itself()


def killed_after_the_first_tool_call(
    database: DatabaseUrl, chat_server: StartChatServer, tmp_path: Path
) -> ChatServer:
    """A worker running `THREE_STEPS` killed as the second model request starts: `add 1 2` has run."""
    server = chat_server(THREE_STEPS)
    crashed(database, server, tmp_path, "crash-before-request-1")
    assert effects(tmp_path / "effects.log") == ["add 1 2"]
    return server


def stored_text(database: DatabaseUrl) -> str:
    """Every value of every table of the system database as text, base64 values (DBOS's pickles) decoded."""
    engine = sqlalchemy.create_engine(database.url)
    try:
        metadata = sqlalchemy.MetaData()
        metadata.reflect(engine, schema=None if database.kind == "sqlite" else "dbos")
        assert metadata.tables, "the system database has tables"
        with engine.connect() as conn:
            values = [
                value
                for table in metadata.tables.values()
                for row in conn.execute(table.select())
                for value in row
            ]
    finally:
        engine.dispose()
    texts: list[str] = []
    for value in values:
        texts.append(repr(value))
        if isinstance(value, str):
            with contextlib.suppress(ValueError):
                texts.append(base64.b64decode(value, validate=True).decode("utf-8", "replace"))
    return "\n".join(texts)


def test_killed_after_the_first_tool_call_resumes_without_repeats(
    database: DatabaseUrl, chat_server: StartChatServer, tmp_path: Path
) -> None:
    server = killed_after_the_first_tool_call(database, chat_server, tmp_path)
    assert "result The sums are 3 and 7." in finished(database, server, tmp_path)
    assert dict(server.served) == {0: 1, 1: 1, 2: 1}, "each model request exactly once"
    assert effects(tmp_path / "effects.log") == ["add 1 2", "add 3 4"], "each tool call exactly once"
    assert server.authorizations == [f"Bearer {API_KEY}"] * 3
    # No secret in persisted state: the key reached the server, but no row holds it.
    text = stored_text(database)
    assert "add twice" in text
    assert "The sums are" in text
    assert API_KEY not in text
    if database.kind == "sqlite":
        assert API_KEY.encode() not in Path(database.url.removeprefix("sqlite:///")).read_bytes()


def test_a_run_recovered_by_changed_code_stops_with_a_runtime_mismatch(
    database: DatabaseUrl, chat_server: StartChatServer, tmp_path: Path
) -> None:
    # Fails loudly if DBOS stops raising the class ferrule catches (`dbos.error.DBOSUnexpectedStepError`):
    # the engine's own error would come out instead of RuntimeMismatchError.
    server = killed_after_the_first_tool_call(database, chat_server, tmp_path)
    lines = finished(database, server, tmp_path, "changed")
    stopped = [line for line in lines if line.startswith("stopped ")]
    assert stopped, lines
    assert stopped[0].startswith("stopped RuntimeMismatchError: the workflow replayed step "), stopped
    assert "the agent, its tools or its prompt changed since the run started" in stopped[0]
    assert effects(tmp_path / "effects.log") == ["add 1 2"], "nothing ran again"
    assert dict(server.served) == {0: 1}, "no model request after the mismatch"


def test_killed_during_a_model_request_repeats_only_that_request(
    database: DatabaseUrl, chat_server: StartChatServer, tmp_path: Path
) -> None:
    server = chat_server(THREE_STEPS, hold=Hold(turn=1))
    first = worker(database, server, tmp_path, "run")
    server.holding.wait(timeout=120)
    assert server.holding.is_set(), "the second request should have been held"
    first.kill()
    assert "result The sums are 3 and 7." in finished(database, server, tmp_path)
    assert dict(server.served) == {0: 1, 1: 2, 2: 1}, "the interrupted request is repeated, nothing else"
    assert effects(tmp_path / "effects.log") == ["add 1 2", "add 3 4"]


def test_killed_during_a_stream_delivers_no_committed_event_twice(
    database: DatabaseUrl, chat_server: StartChatServer, tmp_path: Path
) -> None:
    killed_mid_stream(chat_server, lambda server: worker(database, server, tmp_path, "stream"), tmp_path)


def test_a_non_idempotent_call_interrupted_by_a_crash_is_unknown_and_not_retried(
    database: DatabaseUrl, chat_server: StartChatServer, tmp_path: Path
) -> None:
    server = chat_server(
        [Turn(tool_calls=[("charge", {"cents": 500})]), Turn(text="I could not confirm it.")]
    )
    crashed(database, server, tmp_path, "crash-in-charge")
    assert "result I could not confirm it." in finished(database, server, tmp_path)
    assert effects(tmp_path / "effects.log") == ["charge 500"], "never charged twice"
    assert dict(server.served) == {0: 1, 1: 1}
    text = stored_text(database)
    assert '{"unknown":true}' in text, "the step is recorded as an unknown outcome"


@pytest.mark.parametrize("decision", ["approve", "deny"])
def test_an_approval_waits_across_a_restart_and_is_applied_once(
    database: DatabaseUrl, chat_server: StartChatServer, tmp_path: Path, decision: str
) -> None:
    server = chat_server([Turn(tool_calls=[("ship", {"order": "A-7"})]), Turn(text="Done.")])
    first = worker(database, server, tmp_path, "pause")
    assert first.wait_for("paused ") == "paused 0 call_0_0"
    assert (
        "suspended: run 'run-1' waits for the decisions of pause 0 (ship); send them with decide()"
        in first.lines
    )
    first.kill()
    assert effects(tmp_path / "effects.log") == []
    assert "result Done." in finished(database, server, tmp_path, decision)
    expected = ["ship A-7"] if decision == "approve" else []
    assert effects(tmp_path / "effects.log") == expected, "the decision is applied exactly once"
    assert dict(server.served) == {0: 1, 1: 1}
    text = stored_text(database)
    assert ("not today" in text) == (decision == "deny")


def test_a_failed_run_reports_its_persisted_failure(chat_server: StartChatServer, tmp_path: Path) -> None:
    server = chat_server([Turn(tool_calls=[("explode", {})])])
    lines = finished(database_url(tmp_path / "dbos.sqlite"), server, tmp_path, "fail")
    assert "failed: run 'run-1' ended with an error (RuntimeError); it will not resume" in lines
    assert not any("sk-not-repeated" in line for line in lines)


@pytest.mark.anyio
async def test_decisions_must_match_the_pending_calls() -> None:
    durable = DBOSAgent(Agent(TestModel()), name="checks")
    pending = PendingApproval(0, [DeferredCall(tool_call_id="c1", tool_name="ship")])
    with pytest.raises(DurableError, match=r"exactly the calls \['c1'\]; got \['c2'\]"):
        await durable.decide("wf", pending, {"c2": Approved()})


def test_a_name_is_required() -> None:
    with pytest.raises(DurableError, match="needs a name"):
        DBOSAgent(Agent(TestModel()), name="")
