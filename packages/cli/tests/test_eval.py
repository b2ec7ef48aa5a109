"""`ferrule eval`: a dataset file run against the scripted model, the report table, JSON and HTML
files, and the exit status of the comparison with a baseline."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ferrule.evals import load_report_file

from .conftest import Cli
from .conftest import ScriptedModel
from .conftest import Text
from .conftest import clean_env

Scripted = Callable[..., ScriptedModel]

DATASET = """\
format: "ferrule.eval_dataset"
version: 1
name: capitals
evaluators: [exact_match]
cases:
- name: capital-fr
  inputs: "Capital of France? One word."
  expected: Paris
- name: capital-de
  inputs: "Capital of Germany? One word."
  expected: Berlin
"""


def answers(mapping: dict[str, str]) -> Callable[[dict[str, Any]], Text]:
    """Answer each case by its prompt, whatever order the cases run in."""

    def turn(body: dict[str, Any]) -> Text:
        prompt = body["messages"][-1]["content"]
        return Text(next(answer for key, answer in mapping.items() if key in prompt))

    return turn


def test_eval_report_files_and_baseline_comparison(scripted: Scripted, cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "capitals.yaml").write_text(DATASET)
    good = answers({"France": "Paris", "Germany": "Berlin"})
    model = scripted(good, good, good, good)
    first = cli("eval", "capitals.yaml", *model.args, "--report", "baseline.json", "--html", "report.html")
    assert first.code == 0, first.err
    assert "capital-fr" in first.out
    assert "capital-de" in first.out
    baseline = load_report_file(tmp_path / "baseline.json")
    assert [case.name for case in baseline.cases] == ["capital-fr", "capital-de"]
    html = (tmp_path / "report.html").read_text()
    assert "capital-fr" in html
    assert "<html" in html.lower()

    same = cli("eval", "capitals.yaml", *model.args, "--baseline", "baseline.json", "--ci-json", "ci.json")
    assert same.code == 0, same.err
    assert json.loads((tmp_path / "ci.json").read_text())["conclusion"] == "pass"

    wrong = answers({"France": "Paris", "Germany": "Munich"})
    model.turns[:] = [wrong, wrong]
    regressed = cli(
        "eval", "capitals.yaml", *model.args, "--baseline", "baseline.json", "--ci-json", "ci.json"
    )
    assert regressed.code == 1
    assert json.loads((tmp_path / "ci.json").read_text())["conclusion"] != "pass"


def test_eval_file_problems_are_exit_3_and_flag_problems_exit_2(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("format: nope\n")
    bad = cli("eval", "bad.yaml", "--model", "test:x")
    assert bad.code == 3
    (tmp_path / "capitals.yaml").write_text(DATASET)
    missing_baseline = cli("eval", "capitals.yaml", "--model", "test:x", "--baseline", "nope.json")
    assert missing_baseline.code == 3
    assert cli("eval", "capitals.yaml", "--model", "test:x", "--ci-json", "ci.json").code == 2


def test_eval_says_when_ferrule_evals_is_not_installed(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "sys.modules['ferrule.evals'] = None  # as if ferrule-evals were not installed\n"
        "from ferrule.cli import main\n"
        "sys.exit(main(['eval', 'capitals.yaml', '--model', 'test:x']))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=clean_env(),
        check=False,
    )
    assert proc.returncode == 2
    assert "needs ferrule-evals, which is not installed" in proc.stderr
    assert "python tools/install.py 'ferrule-cli[evals]'" in proc.stderr
