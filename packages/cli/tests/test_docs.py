"""docs/cli.md's examples: every `console` block runs, in order, in one fresh folder, with the files
the page shows (`<!-- file: NAME -->` before a code block); the output must match exactly (`...` is
any text)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from .conftest import ROOT
from .conftest import clean_env

PAGE = ROOT / "docs" / "cli.md"
_BLOCK = re.compile(r"(?:<!-- file: (?P<file>[^ ]+) -->\n)?```(?P<lang>\w*)\n(?P<body>.*?)```\n", re.S)


def _matches(expected: list[str], actual: list[str]) -> bool:
    if len(expected) != len(actual):
        return False
    for want, got in zip(expected, actual, strict=True):
        pattern = ".*".join(re.escape(part) for part in want.split("..."))
        if re.fullmatch(pattern, got) is None:
            return False
    return True


def test_every_console_example_runs(tmp_path: Path) -> None:
    env = clean_env()
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    commands = 0
    for block in _BLOCK.finditer(PAGE.read_text(encoding="utf-8")):
        if block["file"]:
            (tmp_path / block["file"]).write_text(block["body"], encoding="utf-8")
            continue
        if block["lang"] != "console":
            continue
        steps: list[tuple[str, list[str]]] = []
        for line in block["body"].splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            else:
                steps[-1][1].append(line)
        for command, expected in steps:
            done = subprocess.run(
                ["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True, check=False
            )
            actual = done.stdout.splitlines()
            assert _matches(expected, actual), (
                f"$ {command}\nexpected:\n{expected}\ngot:\n{actual}\n{done.stderr}"
            )
            commands += 1
    assert commands >= 12
