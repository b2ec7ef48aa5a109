"""The provider template (tools/provider_template) works as copied, and every provider package has its shape.

The template's own tests run in a subprocess, as a third party would run them in their checkout (its
pyproject, its conftest, the package imported from its `src`); its entry point names a function that
exists; and the first-party provider packages keep the module layout the template teaches.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from ferrule.core.model import Model

REPO = Path(__file__).resolve().parents[1]
TEMPLATE = REPO / "tools" / "provider_template"
LAYOUT = ("__init__.py", "_provider.py", "_model.py", "profiles.py", "_entry.py", "py.typed")
"""The modules every HTTP provider package has (and one or more codec modules)."""


def test_the_template_passes_its_own_tests() -> None:
    env = {**os.environ, "PYTHONPATH": str(TEMPLATE / "src"), "PYTHONDONTWRITEBYTECODE": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "tests", "-c", "pyproject.toml", "--rootdir", ".", "-rA"],
        cwd=TEMPLATE,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    summary = result.stdout.strip().splitlines()[-1]
    assert " passed" in summary, summary
    assert "skipped" not in summary, summary


def test_the_template_entry_point_names_its_function(monkeypatch: pytest.MonkeyPatch) -> None:
    project = tomllib.loads((TEMPLATE / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    entries: dict[str, str] = project["entry-points"]["ferrule.providers"]
    assert entries == {"foo": "ferrule.providers.foo._entry:foo"}
    monkeypatch.setattr(sys, "path", [str(TEMPLATE / "src"), *sys.path])
    monkeypatch.setenv("FOO_API_KEY", "foo-key-0123456789")
    module, _, name = entries["foo"].partition(":")
    model = getattr(importlib.import_module(module), name)("foo-1")
    assert isinstance(model, Model)
    assert model.system == "foo:foo-1"


@pytest.mark.parametrize(
    "package",
    [
        TEMPLATE / "src" / "ferrule" / "providers" / "foo",
        *(
            REPO / "packages" / name / "src" / "ferrule" / "providers" / name
            for name in ("openai", "anthropic", "google")
        ),
    ],
    ids=lambda path: path.name,
)
def test_every_provider_package_has_the_template_layout(package: Path) -> None:
    present = {path.name for path in package.iterdir()}
    assert set(LAYOUT) <= present, f"{package.name} lacks {sorted(set(LAYOUT) - present)}"
    assert {"codec.py"} & present or {name for name in present if name.endswith("_codec.py")}
