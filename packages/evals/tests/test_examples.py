"""The evaluation examples in docs/examples, run as a user would: separate processes.

`evals_local.py` runs on the embedded local model (ferrule-llamacpp, Qwen2.5-Coder-0.5B); its test
asserts the report's structure and invariants (ordering, counts, statistics, the JSON and YAML
round trip, the comparison with the stored baseline), never the model's scores.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from typing import cast

import pytest

from ferrule.evals import compare_reports
from ferrule.evals import dump_report_json
from ferrule.evals import dump_report_yaml
from ferrule.evals import load_dataset_file
from ferrule.evals import load_report_file
from ferrule.evals import load_report_json
from ferrule.evals import load_report_yaml
from tests.support.examples import EXAMPLES
from tests.support.examples import needs_examples
from tests.support.examples import run_example

LOCAL_MODEL = "qwen2.5-coder-0.5b"

pytestmark = needs_examples


def test_the_quickstart_writes_files_compares_and_exits_with_the_verdict(tmp_path: Path) -> None:
    done = run_example(str(EXAMPLES / "evals_quickstart.py"), str(tmp_path), cwd=Path.cwd())
    assert done.returncode == 1, done.stderr  # the scripted candidate regressed
    assert done.stdout.strip().splitlines()[-1] == '"conclusion": "fail",'
    assert "vs baseline: REGRESSED" in done.stdout
    ci = json.loads((tmp_path / "comparison.json").read_text())
    assert ci["conclusion"] == "fail"
    assert ci["counts"]["runs"]["regressed"] == 2  # capital-jp, both repetitions
    baseline = load_report_file(tmp_path / "baseline.json")
    candidate = load_report_file(tmp_path / "candidate.yaml")
    assert baseline.passed()
    assert not candidate.passed()
    assert compare_reports(baseline, candidate).to_ci_json() == (tmp_path / "comparison.json").read_bytes()
    assert '<table id="results">' in (tmp_path / "report.html").read_text()
    sys.path.insert(0, str(EXAMPLES))
    try:
        from evals_quickstart import REGISTRY  # pyright: ignore[reportMissingImports,reportUnknownVariableType]
    finally:
        sys.path.remove(str(EXAMPLES))
    dataset = load_dataset_file(tmp_path / "capitals.yaml", REGISTRY)  # pyright: ignore[reportUnknownArgumentType]
    assert [c.name for c in dataset.cases] == ["capital-fr", "capital-no", "capital-jp"]


@pytest.fixture(scope="session")
def local_model() -> Path:
    """The verified GGUF file; skips (with the reason) only when the model cannot be downloaded."""
    try:
        found = importlib.util.find_spec("ferrule.providers.llamacpp") is not None
    except ModuleNotFoundError:  # not even the ferrule.providers namespace
        found = False
    if not found:
        # ferrule-evals does not depend on it: the workspace environment (`hatch run test`) runs this
        # test, the package's isolated environment does not install the local server.
        pytest.skip("ferrule-llamacpp is not installed (it is in the workspace environment)")
    from ferrule.providers.llamacpp import ModelDownloadError
    from ferrule.providers.llamacpp import ensure_model

    try:
        return ensure_model(LOCAL_MODEL)
    except ModelDownloadError as exc:
        pytest.skip(f"the local model {LOCAL_MODEL} cannot be downloaded: {exc}")


@pytest.mark.slow
def test_the_local_model_example_produces_a_sound_report(local_model: Path, tmp_path: Path) -> None:
    del local_model  # downloaded and verified, or skipped
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["FERRULE_LOCAL_MODEL"] = LOCAL_MODEL
    env.setdefault("FERRULE_LLAMACPP_THREADS", "1")
    report_path, html_path = tmp_path / "report.yaml", tmp_path / "report.html"
    baseline_path = EXAMPLES / "evals_local_baseline.json"
    done = subprocess.run(
        [
            sys.executable,
            str(EXAMPLES / "evals_local.py"),
            "--report",
            str(report_path),
            "--html",
            str(html_path),
            "--baseline",
            str(baseline_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"model: local {LOCAL_MODEL} at http://127.0.0.1:" in done.stderr

    report = load_report_yaml(report_path.read_text(encoding="utf-8"))
    # 12 cases x 2 repetitions, in source order, each judged by both evaluators in order.
    assert len(report.cases) == 12
    assert [(r.case_index, r.repetition, r.repetitions) for r in report.results] == [
        (c, rep, 2) for c in range(12) for rep in (1, 2)
    ]
    assert [r.case_name for r in report.results[::2]] == [c.name for c in report.cases]
    for result in report.results:
        assert [e.name for e in result.evaluations] == ["exact_match", "model_grader"]
        exact, graded = result.evaluations
        assert exact.passed is not None
        assert exact.score is None
        assert graded.passed is not None
        assert graded.score is not None
        assert 0.0 <= graded.score <= 1.0
        assert graded.usage is not None
        assert graded.usage.requests >= 1
        assert result.task_attempts == 1
        assert result.latency_seconds > 0
        assert result.usage.requests >= (2 if result.case_name.startswith("tool") else 1)
        assert result.usage.input_tokens > 0
        assert result.usage.output_tokens > 0
        assert result.usage.cost_nano_usd is None  # a local model has no price
    tool_runs = [r for r in report.results if r.case_name.startswith("tool")]
    assert all(r.usage.tool_calls >= 1 for r in tool_runs), "the tool cases called the add tool"
    extraction = [r for r in report.results if isinstance(report.cases[r.case_index].expected, dict)]
    assert len(extraction) == 8
    outputs: list[Any] = [r.output for r in extraction]
    assert all(isinstance(o, dict) and set(cast("dict[str, Any]", o)) == {"name", "age"} for o in outputs)

    # Statistics agree with the runs they summarize.
    summary = report.summary()
    assert summary.total_runs == 24
    assert summary.passed_runs == sum(r.passed for r in report.results)
    stats = report.score_statistics("model_grader")
    scores = [r.evaluations[1].score for r in report.results]
    assert stats.count == 24
    assert stats.mean == pytest.approx(math.fsum(s for s in scores if s is not None) / 24)
    assert stats.min is not None
    assert stats.mean is not None
    assert stats.max is not None
    assert stats.min <= stats.mean <= stats.max
    for case_index in range(12):
        grouped = report.case_summary(case_index)
        assert grouped.summary.total_runs == 2
        assert grouped.summary.passed_runs == sum(r.passed for r in grouped.results)
    assert [a.name for a in report.analyses] == ["min_pass_rate", "mean_model_grader"]
    assert report.analyses[1].value == pytest.approx(stats.mean)
    assert report.grading_usage().requests >= 24

    # The YAML file, its JSON form and the printed table agree; both forms round-trip exactly.
    data = dump_report_json(report)
    assert dump_report_json(load_report_json(data)) == data
    assert dump_report_json(load_report_yaml(dump_report_yaml(load_report_json(data)))) == data
    assert dump_report_yaml(report) == report_path.read_text(encoding="utf-8")
    assert f"{summary.total_runs} runs, {summary.passed_runs} passed" in done.stdout
    assert 'id="results"' in html_path.read_text(encoding="utf-8")

    # The comparison with the stored baseline matches every run and says the same as the exit line.
    comparison = compare_reports(load_report_file(baseline_path), report)
    counts = comparison.run_counts()
    assert (counts.added, counts.removed) == (0, 0)
    assert counts.unchanged + counts.improved + counts.regressed == 24
    ci = json.loads(comparison.to_ci_json())
    assert ci["conclusion"] == ("pass" if comparison.regression_free() else "fail")
    assert f"conclusion: {ci['conclusion']} ({comparison.regressions()} regressions" in done.stdout
