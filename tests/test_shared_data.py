"""Tests that need `../shared/` skip without it, except under CI, where they fail (`tests.support.shared`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import shared
from tests.support.shared import in_ci
from tests.support.shared import require_shared
from tests.support.shared import shared_path

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def shared_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "shared"
    (folder / "cassettes").mkdir(parents=True)
    monkeypatch.setattr(shared, "SHARED", folder)
    return folder


@pytest.mark.parametrize(
    ("value", "expected"), [("", False), ("0", False), ("false", False), ("true", True), ("1", True)]
)
def test_ci_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch, value: str, expected: bool) -> None:
    monkeypatch.setenv("CI", value)
    assert in_ci() is expected
    monkeypatch.delenv("CI")
    assert not in_ci()


def test_a_present_folder_is_returned_in_and_out_of_ci(
    shared_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    assert shared_path("cassettes") == shared_dir / "cassettes"
    monkeypatch.setenv("CI", "true")
    assert require_shared("cassettes") == shared_dir / "cassettes"


def test_a_missing_folder_skips_outside_ci(shared_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    assert shared_path("seeds") is None
    with pytest.raises(pytest.skip.Exception, match="seeds not found"):
        require_shared("seeds")


def test_a_missing_folder_fails_under_ci(shared_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"seeds not found.*CI is set"):
        shared_path("seeds")
    with pytest.raises(pytest.fail.Exception, match="CI is set"):
        require_shared("seeds")


MODULE = """
from pathlib import Path

import pytest

from tests.support import shared

shared.SHARED = Path({missing!r})

from tests.support.cassettes import SKIP_REASON, cassette_root, iter_interactions, require_cassettes

pytestmark = pytest.mark.skipif(cassette_root() is None, reason=SKIP_REASON)
RECORDED = list(iter_interactions("models"))


def test_recorded() -> None:
    assert RECORDED


def test_in_test() -> None:
    require_cassettes()
"""


def _run_without_shared(tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    module = tmp_path / "test_needs_recordings.py"
    module.write_text(MODULE.format(missing=str(tmp_path / "no-shared")))
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTHONPATH"] = str(REPO)
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(module)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_recorded_traffic_tests_skip_without_the_folder_outside_ci(tmp_path: Path) -> None:
    result = _run_without_shared(tmp_path, ci=None)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 skipped" in result.stdout
    assert "cassettes/pydantic-ai not found" in result.stdout


def test_recorded_traffic_tests_fail_without_the_folder_under_ci(tmp_path: Path) -> None:
    result = _run_without_shared(tmp_path, ci="true")
    assert result.returncode != 0, result.stdout + result.stderr
    assert "skipped" not in result.stdout
    assert "CI is set, so the tests that read it must run" in result.stdout
