"""`ferrule models`, `ferrule completion`, `--help`/`--version`, and both ways of starting the command."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from .conftest import KEY_ENV
from .conftest import Cli
from .conftest import ScriptedModel
from .conftest import clean_env
from .conftest import needs_program

Scripted = Callable[..., ScriptedModel]


def test_models_lists_installed_providers(cli: Cli) -> None:
    result = cli("models")
    assert result.code == 0
    rows = dict(line.split() for line in result.out.splitlines())
    assert rows["openai"] == "ferrule-openai"
    assert rows["anthropic"] == "ferrule-anthropic"
    assert rows["llamacpp"] == "ferrule-llamacpp"
    assert rows["test"] == "ferrule-agent"
    listed = cli("models", "--json").json()
    assert {"prefix": "google-gla", "distribution": "ferrule-google"} in listed


def test_models_of_a_provider_through_its_discovery(scripted: Scripted, cli: Cli) -> None:
    model = scripted()
    result = cli(
        "models", "openai", "--base-url", model.base_url, "--allow-local-url", "--api-key-env", KEY_ENV
    )
    assert (result.code, result.out) == (0, "scripted-large\nscripted-small\n")
    as_json = cli(
        "models",
        "openai",
        "--json",
        "--base-url",
        model.base_url,
        "--allow-local-url",
        "--api-key-env",
        KEY_ENV,
    )
    assert as_json.json() == ["scripted-large", "scripted-small"]


def test_models_needs_credentials_and_a_known_provider(cli: Cli) -> None:
    missing = cli("models", "openai")
    assert missing.code == 4
    assert "OPENAI_API_KEY" in missing.err
    assert cli("models", "nosuch").code == 2
    local = cli("models", "llamacpp")
    assert local.code == 0
    assert "qwen2.5-coder-0.5b" in local.out


def test_help_version_and_no_arguments(cli: Cli) -> None:
    top = cli("--help")
    assert top.code == 0
    for command in ("run", "chat", "eval", "models", "completion"):
        assert command in top.out
    assert "10 approval required" in top.out
    assert "--approval-mode" in cli("run", "--help").out
    assert cli("--version").out.startswith("ferrule ")
    assert cli().code == 2


def test_python_dash_m_and_the_console_script(tmp_path: Path) -> None:
    script = shutil.which("ferrule", path=str(Path(sys.executable).parent))
    assert script is not None, "the ferrule console script is not installed next to the interpreter"
    for command in ([script], [sys.executable, "-m", "ferrule.cli"]):
        out = subprocess.run(
            [*command, "--model", "test:x", "--json", "hi"],
            capture_output=True,
            cwd=tmp_path,
            env=clean_env(),
            check=False,
        )
        assert out.returncode == 0
        assert json.loads(out.stdout)["output"] == "success (no tool calls)"


def test_bash_completion(cli: Cli, tmp_path: Path) -> None:
    script = tmp_path / "ferrule.bash"
    script.write_text(cli("completion", "bash").out)

    def complete(*words: str) -> list[str]:
        line = " ".join(f"'{w}'" for w in words)
        program = f'source {script}; COMP_WORDS=(ferrule {line}); COMP_CWORD={len(words)}; _ferrule; printf "%s\\n" "${{COMPREPLY[@]}}"'
        return subprocess.run(
            ["bash", "-c", program], capture_output=True, text=True, check=True
        ).stdout.split()

    assert complete("ch") == ["chat"]
    assert complete("run", "--output", "") == ["text", "json", "events"]
    assert "--approval-mode" in complete("run", "--appr")
    assert [w for w in complete("completion", "") if not w.startswith("-")] == ["bash", "zsh", "fish"]
    assert complete("--js") == ["--json"]  # `ferrule --json PROMPT` is `ferrule run --json PROMPT`
    (tmp_path / "agent.yaml").write_text("model: test:x\n")
    assert complete("run", "--spec", str(tmp_path / "agent.y")) == [str(tmp_path / "agent.yaml")]


@needs_program("fish")
def test_fish_completion(cli: Cli, tmp_path: Path) -> None:
    script = tmp_path / "ferrule.fish"
    script.write_text(cli("completion", "fish").out)

    def complete(line: str) -> list[str]:
        out = subprocess.run(
            ["fish", "-c", f"source {script}; complete -C '{line}'"],
            capture_output=True,
            text=True,
            check=True,
        )
        return [row.split("\t")[0] for row in out.stdout.splitlines()]

    assert sorted(complete("ferrule run --output ")) == ["events", "json", "text"]
    assert "chat" in complete("ferrule ")
    assert complete("ferrule completion ") == ["bash", "fish", "zsh"]
    assert "--approval-mode" in complete("ferrule run --approval-")


@needs_program("zsh")
def test_zsh_completion_loads(cli: Cli, tmp_path: Path) -> None:
    script = tmp_path / "_ferrule"
    script.write_text(cli("completion", "zsh").out)
    subprocess.run(["zsh", "-n", str(script)], check=True)
    program = f"autoload -Uz compinit && compinit -u -d {tmp_path / 'zcompdump'}; source {script}; print -r -- $_comps[ferrule]"
    out = subprocess.run(["zsh", "-f", "-c", program], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "_ferrule"
    assert "'--output[text (default), json or events]:--output:(text json events)'" in script.read_text()
