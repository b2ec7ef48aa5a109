"""Every runnable example in docs/examples runs offline and prints what its docs promise."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.examples import needs_examples
from tests.support.examples import run_example

pytestmark = needs_examples


@pytest.mark.parametrize(
    ("example", "lines"),
    [
        ("weather.py", ["The weather in Paris: sunny, 21 °C.", "requests=2 tool_calls=1"]),
        ("typed_output.py", ["Lyon, France: 522000", "requests=2"]),
        (
            "namespaced_toolset.py",
            [
                "tools offered: fs__read, fs__delete",
                "deleted scratch/tmp.txt",
                "tools offered: fs__read, fs__delete",
                "Cleaned up scratch; 1 deletion was refused.",
                "remaining: notes.txt",
            ],
        ),
        (
            "on_demand_capability.py",
            [
                "step 1: tools = load_capability",
                "step 2: tools = refund, load_capability",
                "loaded: Loaded capabilities 'accounts', 'billing' (dependencies first).",
                "step 3: tools = refund, load_capability",
                "Done: refunded 1250 cents on A17.",
            ],
        ),
    ],
)
def test_example_prints_exactly(example: str, lines: list[str]) -> None:
    out = run_example(example)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == lines


def test_streaming() -> None:
    out = run_example("streaming.py")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "delta: 'Let me look that up. '"
    assert lines[1] == 'tool call: population({"city": "Paris"})'
    assert lines[2] == "tool result: 2100000"
    assert lines[-2] == "final: Paris has about 2.1 million people."
    assert lines[-1] == "output='Paris has about 2.1 million people.'"


def test_approval_across_two_processes(tmp_path: Path) -> None:
    state = tmp_path / "paused.json"
    first = run_example("approval.py", "start", str(state))
    assert first.returncode == 0, first.stderr
    assert "waiting for approval: transfer" in first.stdout
    assert "transferring" not in first.stdout
    assert state.is_file()
    second = run_example("approval.py", "resume", str(state))
    assert second.returncode == 0, second.stderr
    assert "transferring 250 to alice" in second.stdout
    assert "Sent 250 to alice; balance was 1000." in second.stdout
    pid_first = first.stdout.split("]")[0]
    pid_second = second.stdout.split("]")[0]
    assert pid_first != pid_second


def test_approval_denied_and_tampered(tmp_path: Path) -> None:
    state = tmp_path / "paused.json"
    assert run_example("approval.py", "start", str(state)).returncode == 0
    denied = run_example("approval.py", "deny", str(state))
    assert denied.returncode == 0, denied.stderr
    assert "Transfer not made: The account owner declined." in denied.stdout
    assert "transferring" not in denied.stdout
    state.write_bytes(state.read_bytes().replace(b'"amount":250', b'"amount":25000'))
    tampered = run_example("approval.py", "resume", str(state))
    assert tampered.returncode != 0
    assert "PausedStateIntegrityError" in tampered.stderr
    assert "transferring" not in tampered.stdout


def test_approval_default_runs_both_processes() -> None:
    out = run_example("approval.py")
    assert out.returncode == 0, out.stderr
    assert "Sent 250 to alice" in out.stdout


def test_tracing_to_the_console_exporter() -> None:
    pytest.importorskip("opentelemetry.sdk", reason="opentelemetry-sdk is a test dependency of the workspace")
    import json

    out = run_example("tracing.py")
    assert out.returncode == 0, out.stderr
    assert out.stdout.rstrip().endswith("}\nParis has about 2.1 million people.")
    decoder = json.JSONDecoder()
    spans: list[dict[str, object]] = []
    text = out.stdout
    index = 0
    while True:
        start = text.find("{", index)
        if start < 0:
            break
        span, index = decoder.raw_decode(text, start)
        spans.append(span)
    names = sorted(str(s["name"]) for s in spans)
    assert names == [
        "chat function:scripted_model",
        "chat function:scripted_model",
        "execute_tool population",
        "invoke_agent city-facts",
    ]
    assert len({s["context"]["trace_id"] for s in spans}) == 1  # type: ignore[index]
    root = next(s for s in spans if s["name"] == "invoke_agent city-facts")
    assert root["attributes"]["gen_ai.usage.input_tokens"] == 103  # type: ignore[index]
    assert "Paris" not in json.dumps([s["attributes"] for s in spans])  # content is off by default


def test_checkpoints_single_use_across_processes(tmp_path: Path) -> None:
    db = str(tmp_path / "checkpoints.sqlite")
    started = run_example("checkpoints.py", "start", db)
    assert started.returncode == 0, started.stderr
    lines = started.stdout.splitlines()
    assert lines[:2] == ["receipt: big denied", "receipt: small confirmation_required"]
    assert "refunding" not in started.stdout
    run_id = lines[2].removeprefix("run: ")
    first = run_example("checkpoints.py", "resume", db, run_id)
    assert first.returncode == 0, first.stderr
    out = first.stdout.splitlines()
    assert out[0].endswith("refunding 300 cents on A-18")
    assert out[1:] == [
        "output: big: refunds over 500 cents need a manager; small: refunded 300",
        "receipt: big denied (refunds over 500 cents need a manager)",
        "receipt: small succeeded (ok)",
    ]
    second = run_example("checkpoints.py", "resume", db, run_id)
    assert second.returncode == 0, second.stderr
    assert second.stdout.splitlines() == ["already resumed: nothing executed"]
