"""Every Python block of docs/planning.md runs, in order, in one namespace (as the page says)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from .conftest import ROOT

PAGE = ROOT / "docs" / "planning.md"


def test_the_page_examples_run() -> None:
    if not PAGE.is_file():
        pytest.skip("docs/ is not part of this checkout")
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.S)
    assert len(blocks) >= 5
    script = "\n\n".join(blocks)
    # A fresh interpreter: the blocks call anyio.run and run_sync, which need no running event loop.
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "Sunny and 27 °C: take a walk along the bay."
    assert lines[1] == "plan step 'a': the dependencies form a cycle: 'a' -> 'b' -> 'a'"
    assert lines[2].startswith("['plan_created', 'batch_start', 'step_start', 'step_end', 'batch_end'")
    assert "approval write" in lines
    assert "{'fetch': {'rows': 3}, 'write': 'wrote 3 rows'} RunUsage()" in lines
