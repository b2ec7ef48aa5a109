"""`ferrule run` in a subprocess: every output mode, flag and exit code, against a scripted model server."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ferrule.core import history

from .conftest import DEPLOY_TOOL_PY
from .conftest import KEY_ENV
from .conftest import MODEL
from .conftest import Calls
from .conftest import Cli
from .conftest import Fail
from .conftest import ScriptedModel
from .conftest import Text
from .conftest import clean_env

Scripted = Callable[..., ScriptedModel]

TOOLS_PY = (
    DEPLOY_TOOL_PY
    + '''

def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first.
        b: The second.
    """
    return a + b


def explode() -> str:
    """Always fails."""
    raise RuntimeError("the tool exploded")
'''
)


def write_config(tmp_path: Path, **fields: Any) -> Path:
    (tmp_path / "tools.py").write_text(TOOLS_PY)
    path = tmp_path / "ferrule.json"
    path.write_text(json.dumps(fields))
    return path


def tool_results(model: ScriptedModel, index: int = -1) -> list[dict[str, Any]]:
    return [m for m in model.messages(index) if m["role"] == "tool"]


# --- output modes ----------------------------------------------------------------------------------


def test_text_output_and_flags_reach_the_request(scripted: Scripted, cli: Cli) -> None:
    model = scripted(Text("Paris is the capital."))
    result = cli(
        "run", *model.args, "--system", "Answer briefly.", "--max-tokens", "40", "Capital of France?"
    )
    assert (result.code, result.out, result.err) == (0, "Paris is the capital.\n", "")
    body = model.bodies[0]
    assert body["messages"][0] == {"role": "system", "content": "Answer briefly."}
    assert body["messages"][-1]["content"] == "Capital of France?"
    assert 40 in (body.get("max_tokens"), body.get("max_completion_tokens"))


def test_run_is_the_default_command(scripted: Scripted, cli: Cli) -> None:
    model = scripted(Text("yes"))
    assert cli(*model.args, "ok?").out == "yes\n"


def test_json_output(scripted: Scripted, cli: Cli) -> None:
    model = scripted(Text("forty two"))
    result = cli(*model.args, "--json", "answer?")
    assert result.code == 0
    document = result.json()
    assert document["status"] == "ok"
    assert document["output"] == "forty two"
    assert document["model"] == MODEL
    assert document["usage"] == {"input_tokens": 11, "output_tokens": 7, "requests": 1}
    assert len(document["run_id"]) >= 16


def test_events_output_is_newline_ag_ui(scripted: Scripted, cli: Cli, tmp_path: Path) -> None:
    model = scripted(Calls((("add", {"a": 2, "b": 3}),)), Text("It is 5."))
    config = write_config(tmp_path, tools=[{"function": "tools.py:add"}])
    result = cli(*model.args, "--config", str(config), "--events", "2+3?")
    assert result.code == 0
    events = [json.loads(line) for line in result.out.splitlines()]
    types = [e["type"] for e in events]
    assert types[0] == "RUN_STARTED"
    assert types[-1] == "RUN_FINISHED"
    assert events[-1]["result"] == "It is 5."
    assert {"TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"} <= set(types)
    result_event = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    assert result_event["content"] == "5"
    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == "It is 5."


def test_stdin_prompt_at_the_limit_and_one_past(scripted: Scripted, cli: Cli) -> None:
    from ferrule.cli._files import MAX_PROMPT_BYTES

    model = scripted(Text("read it"))
    exact = b"x" * MAX_PROMPT_BYTES
    assert cli(*model.args, "-", stdin=exact).code == 0
    assert model.messages(0)[-1]["content"] == exact.decode()
    over = cli(*model.args, "-", stdin=exact + b"x")
    assert over.code == 2
    assert f"limit of {MAX_PROMPT_BYTES} bytes" in over.err
    assert len(model.bodies) == 1  # refused before any request


# --- exit codes ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--no-such-flag", "x"], "unrecognized arguments"),
        (["run", "--model", "test:x"], "no prompt"),
        (["run", "--model", "nosuchprovider:x", "hi"], "no provider handles the prefix 'nosuchprovider'"),
        (["run", "--model", "opnai:gpt-5-mini", "hi"], "did you mean 'openai'?"),
        (["run", "--model", "test:x", "--approval", "approve"], "only apply with --resume"),
        (["run", "--model", "noprefix", "hi"], "needs a provider prefix"),
        (["run", "--resume"], "needs --approval"),
        (["run", "hi"], "no model"),
        (["run", "--model", "test:x", "--json", "--events", "hi"], "not allowed with"),
        (["completion", "tcsh"], "invalid choice"),
    ],
)
def test_exit_2_usage(cli: Cli, args: list[str], message: str) -> None:
    result = cli(*args)
    assert result.code == 2, result.err
    assert message in result.err


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"modle": "test:x"}, "unknown keys: $.modle"),
        ({"model": "test:x", "model_settings": {"max_tokenz": 1}}, "$.model_settings.max_tokenz"),
        ({"model": "test:x", "api_key": "sk-live-0123456789abcdefghij"}, "looks like a credential"),
        (
            {"model": "test:x", "system_prompt": "key: sk-0123456789abcdefghijklmn"},
            "shaped like a credential",
        ),
        ({"model": "test:x", "tools": [{"function": "tools.py:missing"}]}, "has no function 'missing'"),
        ({"model": "test:x", "tools": [{"function": "no_such_module:f"}]}, "cannot import the tool"),
        ({"model": "test:x", "tools": [{"external": True, "name": "x"}]}, "needs 'name' and 'parameters'"),
        ({"model": "test:x", "version": 2}, "version 2"),
    ],
)
def test_exit_3_config(cli: Cli, tmp_path: Path, fields: dict[str, Any], message: str) -> None:
    config = write_config(tmp_path, **fields)
    result = cli("--config", str(config), "hi")
    assert result.code == 3, result.err
    assert message in result.err
    assert "0123456789" not in result.err  # a rejected credential is never echoed


def test_exit_3_files(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("{not json")
    assert cli("--config", "bad.json", "hi").code == 3
    assert "does not exist" in cli("--config", "missing.json", "hi").err
    (tmp_path / "history.json").write_text('{"format": "something else"}')
    corrupt = cli("--model", "test:x", "--history", "history.json", "hi")
    assert corrupt.code == 3
    assert "history.json" in corrupt.err
    spec = tmp_path / "agent.yaml"
    spec.write_text("model: test:x\nsurprise: 1\n")
    assert cli("--spec", "agent.yaml", "hi").code == 3
    missing_state = cli("--model", "test:x", "--resume", "--approval", "approve")
    assert missing_state.code == 3
    assert "ferrule-paused.json" in missing_state.err


def test_exit_4_missing_credential(cli: Cli, tmp_path: Path) -> None:
    result = cli("--model", "openai:gpt-5-mini", "hi")
    assert result.code == 4
    assert "OPENAI_API_KEY" in result.err
    config = write_config(tmp_path, model="openai:gpt-5-mini", api_key_env="MY_OPENAI_KEY")
    named = cli("--config", str(config), "hi")
    assert named.code == 4
    assert "MY_OPENAI_KEY" in named.err
    assert cli("--model", "anthropic:claude-sonnet-4-5", "hi").code == 4


def test_a_credential_from_the_named_variable_is_sent_and_never_printed(scripted: Scripted, cli: Cli) -> None:
    model = scripted(Fail(401, "bad key"))
    secret = "sk-test-" + "Q" * 40
    env = clean_env(MY_KEY=secret)
    result = cli(*model.args, "--api-key-env", "MY_KEY", "--json", "hi", env=env)
    assert result.code == 5
    assert secret not in result.out + result.err
    assert model.bodies  # the request was made with the key


def test_exit_5_provider_failure(scripted: Scripted, cli: Cli) -> None:
    model = scripted(Fail(400, "this model does not exist"))
    result = cli(*model.args, "--json", "hi")
    assert result.code == 5
    document = result.json()
    assert document["status"] == "error"
    assert document["exit_code"] == 5
    assert document["error"]["type"] == "BadRequestError"
    assert "this model does not exist" in result.err


def test_exit_1_runtime_failures(scripted: Scripted, cli: Cli, tmp_path: Path) -> None:
    config = write_config(tmp_path, tools=[{"function": "tools.py:explode"}])
    model = scripted(Calls((("explode", {}),)))
    result = cli(*model.args, "--config", str(config), "boom")
    assert result.code == 1
    assert "RuntimeError: the tool exploded" in result.err
    limited = write_config(tmp_path, tools=[{"function": "tools.py:add"}], usage_limits={"request_limit": 1})
    model = scripted(Calls((("add", {"a": 1, "b": 1}),)), Text("2"))
    result = cli(*model.args, "--config", str(limited), "1+1")
    assert result.code == 1
    assert "request_limit" in result.err


# --- approvals across invocations ------------------------------------------------------------------


def test_exit_10_then_resume_approve_runs_the_call_without_replaying_the_request(
    scripted: Scripted, cli: Cli, tmp_path: Path
) -> None:
    config = write_config(tmp_path, tools=[{"function": "tools.py:deploy", "requires_approval": True}])
    model = scripted(Calls((("deploy", {"service": "web"}),)), Text("Deployed web."))
    paused = cli(*model.args, "--config", str(config), "--json", "Deploy web")
    assert paused.code == 10
    document = paused.json()
    assert document["status"] == "paused"
    assert document["pending"] == [
        {"tool_call_id": "call_1_0", "tool_name": "deploy", "args": {"service": "web"}, "kind": "approval"}
    ]
    state_file = tmp_path / "ferrule-paused.json"
    envelope = json.loads(state_file.read_text())
    assert (envelope["format"], envelope["version"], envelope["mac"]) == ("ferrule.paused_run", 1, None)
    assert "ferrule run --resume" in paused.err
    assert not (tmp_path / "deployed.txt").exists()
    assert len(model.bodies) == 1

    resumed = cli(*model.args, "--config", str(config), "--resume", "--approval", "approve")
    assert (resumed.code, resumed.out) == (0, "Deployed web.\n")
    assert (tmp_path / "deployed.txt").read_text() == "web"
    assert len(model.bodies) == 2  # the model was asked once more, with the result; nothing replayed
    assert [m["content"] for m in tool_results(model)] == ["deployed web"]
    assert not state_file.exists()  # consumed: the approved call cannot run twice
    again = cli(*model.args, "--config", str(config), "--resume", "--approval", "approve")
    assert again.code == 3


def test_resume_deny_never_runs_the_call(scripted: Scripted, cli: Cli, tmp_path: Path) -> None:
    config = write_config(tmp_path, tools=[{"function": "tools.py:deploy"}], require_tool_approval=True)
    model = scripted(Calls((("deploy", {"service": "db"}),)), Text("Not deployed."))
    assert cli(*model.args, "--config", str(config), "--paused-state", "p.json", "Deploy db").code == 10
    resumed = cli(
        *model.args, "--config", str(config), "--paused-state", "p.json", "--resume", "--approval", "deny"
    )
    assert resumed.code == 0
    assert not (tmp_path / "deployed.txt").exists()
    assert "denied" in tool_results(model)[0]["content"]


def test_require_tool_approval_flag_converts_manifest_tools(
    scripted: Scripted, cli: Cli, tmp_path: Path
) -> None:
    config = write_config(tmp_path, tools=[{"function": "tools.py:add"}])
    model = scripted(Calls((("add", {"a": 1, "b": 2}),)), Text("3"))
    assert cli(*model.args, "--config", str(config), "--require-tool-approval", "1+2").code == 10
    model = scripted(Calls((("add", {"a": 1, "b": 2}),)), Text("3"))
    assert cli(*model.args, "--config", str(config), "--approval-mode", "deny", "1+2").code == 0


def test_external_calls_run_only_with_an_explicit_result(
    scripted: Scripted, cli: Cli, tmp_path: Path
) -> None:
    external = {
        "name": "charge_card",
        "external": True,
        "description": "Charge a card (done by the billing system).",
        "parameters": {"type": "object", "properties": {"cents": {"type": "integer"}}, "required": ["cents"]},
    }
    config = write_config(tmp_path, tools=[external])
    model = scripted(
        Calls((("charge_card", {"cents": 500}),)),
        Text("ok"),
        Calls((("charge_card", {"cents": 7}),)),
        Text("ok"),
    )

    def run(*args: str) -> int:
        return cli(*model.args, "--config", str(config), *args).code

    assert run("Charge 5 dollars") == 10
    assert run("--resume", "--approval", "approve") == 0
    assert "not executed" in tool_results(model)[0]["content"]  # approve never executes an external call

    assert run("Charge 7 cents") == 10
    assert run("--resume", "--approval", "approve", "--external-result", 'call_3_0={"charged": 7}') == 0
    assert json.loads(tool_results(model)[0]["content"]) == {"charged": 7}
    assert run("--resume", "--approval", "approve", "--external-result", "x=1") == 3


def test_signed_paused_state(scripted: Scripted, cli: Cli, tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        tools=[{"function": "tools.py:deploy", "requires_approval": True}],
        signing_key_env="PAUSE_KEY",
    )
    env = clean_env(PAUSE_KEY="a-long-signing-key")
    model = scripted(Calls((("deploy", {"service": "api"}),)), Text("done"))
    assert cli(*model.args, "--config", str(config), "Deploy api", env=env).code == 10
    state_file = tmp_path / "ferrule-paused.json"
    assert len(json.loads(state_file.read_text())["mac"]) == 64
    assert (
        cli(*model.args, "--config", str(config), "--resume", "--approval", "approve").code == 4
    )  # key unset

    original = state_file.read_text()
    state_file.write_text(original.replace('"web"', '"x"').replace("api", "apj"))
    tampered = cli(*model.args, "--config", str(config), "--resume", "--approval", "approve", env=env)
    assert tampered.code == 3
    assert "integrity" in tampered.err
    assert not (tmp_path / "deployed.txt").exists()

    state_file.write_text(original)
    wrong = cli(
        *model.args,
        "--config",
        str(config),
        "--resume",
        "--approval",
        "approve",
        env=clean_env(PAUSE_KEY="other"),
    )
    assert wrong.code == 3
    assert cli(*model.args, "--config", str(config), "--resume", "--approval", "approve", env=env).code == 0
    assert (tmp_path / "deployed.txt").read_text() == "api"


# --- history ---------------------------------------------------------------------------------------


def test_history_is_loaded_and_saved_atomically(scripted: Scripted, cli: Cli, tmp_path: Path) -> None:
    model = scripted(Text("Hello Ada."), Text("Your name is Ada."))
    assert cli(*model.args, "--history", "chat.json", "My name is Ada.").code == 0
    saved = history.loads((tmp_path / "chat.json").read_bytes())
    assert len(saved) == 2
    assert cli(*model.args, "--history", "chat.json", "What is my name?").code == 0
    contents = [m["content"] for m in model.messages(1)]
    assert contents == ["My name is Ada.", "Hello Ada.", "What is my name?"]
    assert len(history.loads((tmp_path / "chat.json").read_bytes())) == 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chat.json"]  # no temporary file left


def test_a_failed_run_leaves_the_history_unchanged(scripted: Scripted, cli: Cli, tmp_path: Path) -> None:
    model = scripted(Text("one"), Fail(400))
    assert cli(*model.args, "--history", "h.json", "first").code == 0
    before = (tmp_path / "h.json").read_bytes()
    assert cli(*model.args, "--history", "h.json", "second").code == 5
    assert (tmp_path / "h.json").read_bytes() == before


# --- specs -----------------------------------------------------------------------------------------


def test_the_same_spec_runs_from_python_and_from_the_command(
    scripted: Scripted, cli: Cli, tmp_path: Path
) -> None:
    model = scripted(Calls((("add", {"a": 20, "b": 22}),)), Text("The sum is 42."))
    spec = tmp_path / "agent.yaml"
    spec.write_text(
        "name: adder\n"
        f"model: {{provider: openai-chat, name: gpt-4.1-mini, base_url: '{model.base_url}', allow_local_url: true, "
        f"api_key_env: {KEY_ENV}}}\n"
        "instructions: Add with the tool.\n"
        "tools: [add]\n"
        "model_settings: {max_tokens: 30}\n"
    )
    config = write_config(tmp_path, tools=[{"function": "tools.py:add"}])
    result = cli("--spec", str(spec), "--config", str(config), "20+22?")
    assert (result.code, result.out) == (0, "The sum is 42.\n")
    assert model.bodies[0]["messages"][0] == {"role": "system", "content": "Add with the tool."}
    assert tool_results(model)[0]["content"] == "42"

    import anyio

    from ferrule.agent.spec import AgentSpec
    from ferrule.cli import model_resolver

    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    async def from_python() -> str:
        resolved = await AgentSpec.load(spec).resolve(model_resolver, tools={"add": add}, environ=clean_env())
        async with resolved:
            return (await resolved.agent.run("20+22?")).output

    model.turns[:] = [Calls((("add", {"a": 20, "b": 22}),)), Text("The sum is 42.")]
    assert anyio.run(from_python) == "The sum is 42."
    from_cli, from_py = model.bodies[0], model.bodies[2]
    assert from_py["messages"] == from_cli["messages"]
    assert [t["function"]["name"] for t in from_py["tools"]] == [
        t["function"]["name"] for t in from_cli["tools"]
    ]


def test_a_spec_and_agent_fields_in_the_config_conflict(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "agent.json").write_text('{"model": "test:x"}')
    config = write_config(tmp_path, model="test:y")
    result = cli("--spec", "agent.json", "--config", str(config), "hi")
    assert result.code == 2
    assert "keep them in one place" in result.err


def test_documented_spec_examples_validate_from_the_command(cli: Cli) -> None:
    from ferrule.agent.spec import AgentSpec

    for path in sorted((Path(__file__).resolve().parents[3] / "docs" / "examples" / "specs").glob("*")):
        assert AgentSpec.load(path).name


def test_events_of_a_pause_and_of_its_resume(scripted: Scripted, cli: Cli, tmp_path: Path) -> None:
    config = write_config(tmp_path, tools=[{"function": "tools.py:deploy", "requires_approval": True}])
    model = scripted(Calls((("deploy", {"service": "web"}),)), Text("Deployed."))
    paused = cli(*model.args, "--config", str(config), "--events", "Deploy web")
    assert paused.code == 10
    events = [json.loads(line) for line in paused.out.splitlines()]
    finished = events[-1]
    assert finished["type"] == "RUN_FINISHED"
    assert finished["outcome"]["type"] == "interrupt"
    assert [i["toolCallId"] for i in finished["outcome"]["interrupts"]] == ["call_1_0"]
    resumed = cli(*model.args, "--config", str(config), "--events", "--resume", "--approval", "approve")
    assert resumed.code == 0
    types = [json.loads(line)["type"] for line in resumed.out.splitlines()]
    assert types[0] == "RUN_STARTED"
    assert "TOOL_CALL_RESULT" in types
    assert types[-1] == "RUN_FINISHED"
    assert "TOOL_CALL_START" not in types  # the client already has the call from the paused segment
