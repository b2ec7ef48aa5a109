"""Evaluating an agent: a dataset, repetitions, a report, a stored baseline and the CI verdict.

    python docs/examples/evals_quickstart.py OUTPUT_DIR

Runs offline on a scripted FunctionModel (set FERRULE_EXAMPLE_MODEL, e.g. "openai:gpt-5-mini", to
evaluate a real model through an installed provider package). Writes the dataset as YAML, runs it
twice (the second time with a "regressed" model), saves both reports, prints the table and the CI
JSON of the comparison, writes the HTML page, and exits with the comparison's status (1: regressed).
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

from ferrule.agent import Agent
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import UserPromptPart
from ferrule.core.usage import RequestUsage
from ferrule.core.usage import RunUsage
from ferrule.evals import Case
from ferrule.evals import Contains
from ferrule.evals import Dataset
from ferrule.evals import EvaluatorRegistry
from ferrule.evals import ExactMatch
from ferrule.evals import ExecutionOptions
from ferrule.evals import MinPassRate
from ferrule.evals import Report
from ferrule.evals import compare_reports
from ferrule.evals import dump_dataset_yaml
from ferrule.evals import evaluator
from ferrule.evals import load_report_file
from ferrule.evals import run_dataset_file
from ferrule.evals import save_report


@evaluator("short")
def short(case: Case, output: Any, usage: RunUsage) -> bool:
    """Passes when the answer is at most three words."""
    return len(str(output).split()) <= 3


DATASET = Dataset(
    [
        Case("capital-fr", "What is the capital of France? One word.", expected="Paris"),
        Case("capital-no", "What is the capital of Norway? One word.", expected="Oslo"),
        Case("capital-jp", "What is the capital of Japan? One word.", expected="Tokyo"),
    ],
    evaluators=[ExactMatch(strip=True), Contains(), short],
    report_evaluators=[MinPassRate(0.6)],
    name="capitals",
)

REGISTRY = EvaluatorRegistry([short, MinPassRate(0.6)])
"""What a dataset file may name: the built-ins plus this example's evaluators."""


def scripted(regressed: bool) -> FunctionModel:
    """Stands in for a real model; the regressed one rambles about Japan."""
    answers = {"France": "Paris", "Norway": "Oslo", "Japan": "Tokyo"}

    def answer(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        request = messages[-1]
        assert isinstance(request, ModelRequest)
        prompt = next(str(p.content) for p in request.parts if isinstance(p, UserPromptPart))
        country = next(c for c in answers if c in prompt)
        text = answers[country]
        if regressed and country == "Japan":
            text = "The capital of Japan is Tokyo."
        return ModelResponse(parts=[TextPart(text)], usage=RequestUsage(input_tokens=12, output_tokens=2))

    return FunctionModel(answer)


def main(folder: Path) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    dataset_file = folder / "capitals.yaml"
    dataset_file.write_text(dump_dataset_yaml(DATASET), encoding="utf-8")
    options = ExecutionOptions(repetitions=2, max_concurrency=4)
    real = os.environ.get("FERRULE_EXAMPLE_MODEL")

    def evaluate(model: Any) -> Report:
        run = functools.partial(run_dataset_file, dataset_file, Agent(model), REGISTRY, options=options)
        return anyio.run(run)

    save_report(evaluate(real or scripted(False)), folder / "baseline.json")
    candidate = evaluate(real or scripted(True))
    save_report(candidate, folder / "candidate.yaml")

    comparison = compare_reports(load_report_file(folder / "baseline.json"), candidate)
    candidate.print(comparison=comparison)
    candidate.to_html(folder / "report.html", comparison=comparison)
    (folder / "comparison.json").write_bytes(comparison.to_ci_json())
    print(comparison.to_ci_json().decode().splitlines()[3].strip())  # "conclusion": ...
    return comparison.exit_code()


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "eval-output")))
