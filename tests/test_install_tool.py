"""`tools/install.py`: what it resolves and the one command it runs, driven as a user runs it.

Everything here is `--dry-run` (no network, no environment touched); `tools/check_install.py`, a step
of `.ci/run`, really installs each package and the documented combinations into fresh environments.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TOOL = REPO / "tools" / "install.py"
CHECK = REPO / "tools" / "check_install.py"


def run(*args: str, root: Path | None = None) -> subprocess.CompletedProcess[str]:
    extra = ["--root", str(root)] if root is not None else []
    return subprocess.run(
        [sys.executable, str(TOOL), "--dry-run", "--python", "PY", *extra, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=REPO,
    )


def installed(*args: str, root: Path | None = None) -> dict[str, str]:
    """What the printed command installs: requirement (name and extras) -> the folder it comes from."""
    done = run(*args, root=root)
    assert done.returncode == 0, done.stderr
    line = shlex.split(done.stdout)
    assert line[:4] == ["PY", "-m", "pip", "install"], line
    found: dict[str, str] = {}
    for argument in line[4:]:
        requirement, _, url = argument.partition(" @ ")
        assert url.startswith("file://"), argument
        found[requirement] = url.removeprefix("file://")
    return found


def _folder(name: str) -> str:
    return str(REPO / "packages" / name)


def test_meta_distribution_with_extras_brings_its_siblings_from_their_folders() -> None:
    assert installed("ferrule[openai,mcp]") == {
        "ferrule[mcp,openai]": _folder("ferrule"),
        "ferrule-agent": _folder("agent"),
        "ferrule-core": _folder("core"),
        "ferrule-mcp": _folder("mcp"),
        "ferrule-openai": _folder("openai"),
    }


def test_all_follows_the_extras_of_the_extras() -> None:
    # ferrule[all] asks for ferrule-cli[local,evals], whose [local] asks for ferrule-llamacpp[server]
    # and whose base asks for ferrule-agent[yaml] (which asks for ferrule-core[yaml]): each sibling
    # comes once, with every extra wanted of it.
    found = installed("ferrule[all]")
    assert set(found) == {
        "ferrule[all]",
        "ferrule-agent[yaml]",
        "ferrule-anthropic",
        "ferrule-cli[evals,local]",
        "ferrule-dbos",
        "ferrule-temporal",
        "ferrule-core[yaml]",
        "ferrule-evals",
        "ferrule-google",
        "ferrule-graph",
        "ferrule-llamacpp[server]",
        "ferrule-mcp",
        "ferrule-openai",
        "ferrule-planning",
        "ferrule-ui[server]",
    }


def test_a_package_alone_brings_only_what_it_declares() -> None:
    # No [server]: the llama.cpp binding is an extra, and third-party requirements are left to pip.
    assert installed("llamacpp") == {
        "ferrule-core": _folder("core"),
        "ferrule-llamacpp": _folder("llamacpp"),
        "ferrule-openai": _folder("openai"),
    }
    assert installed("core") == {"ferrule-core": _folder("core")}


def test_names_folders_and_spellings_resolve_alike() -> None:
    expected = installed("ferrule-core", "ferrule-agent", "ferrule-openai")
    assert installed("core", "agent", "openai") == expected
    assert installed("packages/core/", "Ferrule_Agent", "ferrule.openai") == expected


def test_editable_names_each_folder_with_its_extras() -> None:
    done = run("--editable", "ferrule-llamacpp[server]")
    assert done.returncode == 0, done.stderr
    assert shlex.split(done.stdout)[4:] == [
        "-e",
        _folder("core"),
        "-e",
        f"{_folder('llamacpp')}[server]",
        "-e",
        _folder("openai"),
    ]


def test_uv_reinstalls_each_ferrule_distribution_and_passes_extra_arguments() -> None:
    done = run("--uv", "agent", "--", "-q", "--no-progress")
    assert done.returncode == 0, done.stderr
    line = shlex.split(done.stdout)
    assert Path(line[0]).name.startswith("uv")
    assert line[1:] == [
        "pip",
        "install",
        "--python",
        "PY",
        "--reinstall-package",
        "ferrule-agent",
        "--reinstall-package",
        "ferrule-core",
        "-q",
        "--no-progress",
        f"ferrule-agent @ file://{_folder('agent')}",
        f"ferrule-core @ file://{_folder('core')}",
    ]


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        ("nosuch", "'nosuch' is not a ferrule distribution of this checkout; known: ferrule, ferrule-agent"),
        ("requests", "other packages come from your package index"),
        (
            "ferrule[nope]",
            "ferrule has no extra nope (wanted by the command line); its extras: all, anthropic",
        ),
        (
            "ferrule-core[x]",
            "ferrule-core has no extra x (wanted by the command line); its extras: conformance",
        ),
        (
            "ferrule @ https://example.invalid/x.whl",
            "is not a requirement of the form NAME or NAME[EXTRA,...]",
        ),
        ("docs/examples", "'docs/examples' is not the folder of a ferrule distribution of this checkout"),
    ],
)
def test_refused_requests_say_why_and_run_nothing(request_: str, message: str) -> None:
    done = run(request_)
    assert done.returncode == 2
    assert done.stdout == ""
    assert message in done.stderr


def _package(root: Path, folder: str, body: str) -> None:
    (root / "packages" / folder).mkdir(parents=True)
    (root / "packages" / folder / "pyproject.toml").write_text(f"[project]\n{body}\n", encoding="utf-8")


def test_cycles_self_extras_and_extras_of_a_revisited_sibling(tmp_path: Path) -> None:
    _package(tmp_path, "a", 'name = "ferrule-a"\ndependencies = ["ferrule-b>=0.1", "msgspec>=0.19"]')
    _package(
        tmp_path,
        "b",
        'name = "ferrule-b"\ndependencies = ["ferrule-a"]\n'
        '[project.optional-dependencies]\nx = ["ferrule-b[y]"]\ny = ["ferrule-c[z]"]',
    )
    _package(tmp_path, "c", 'name = "ferrule-c"\n[project.optional-dependencies]\nz = ["ferrule-a"]')
    # a -> b -> a is a cycle; b[x] asks for b[y] (its own extra), which asks for c[z], which is met
    # after b was first reached without extras.
    found = installed("a", "b[x]", root=tmp_path)
    assert set(found) == {"ferrule-a", "ferrule-b[x,y]", "ferrule-c[z]"}
    assert "msgspec" not in " ".join(found)


def test_a_sibling_requirement_with_a_marker_is_refused(tmp_path: Path) -> None:
    _package(tmp_path, "a", 'name = "ferrule-a"\ndependencies = ["ferrule-b; sys_platform == \'win32\'"]')
    _package(tmp_path, "b", 'name = "ferrule-b"')
    done = run("a", root=tmp_path)
    assert done.returncode == 2
    assert "ferrule-a requires ferrule-b only when \"sys_platform == 'win32'\"" in done.stderr


def _documented_commands(text: str) -> list[list[str]]:
    """The arguments of every `python tools/install.py ...` command in a Markdown text."""
    commands: list[list[str]] = []
    for match in re.finditer(r"python tools/install\.py ([^`\n#|]+)", text):
        words = shlex.split(match[1])
        commands.append([w for w in words if not w.startswith("-")])
    return commands


def test_every_documented_command_resolves() -> None:
    pages = [REPO / "README.md", *REPO.glob("packages/*/README.md"), *REPO.glob("docs/**/*.md")]
    commands = [c for page in pages for c in _documented_commands(page.read_text(encoding="utf-8"))]
    assert len(commands) >= 25
    for command in commands:
        assert run(*command).returncode == 0, command


def test_every_package_readme_says_how_to_install_it_before_publication() -> None:
    for readme in REPO.glob("packages/*/README.md"):
        text = readme.read_text(encoding="utf-8")
        assert "Not on PyPI yet" in text, readme
        assert "will be published" in text, readme
        assert "python tools/install.py" in text, readme


def test_no_page_tells_users_to_pip_install_an_unpublished_name() -> None:
    pattern = re.compile(r"pip install ['\"]?ferrule")
    pages = [REPO / "README.md", *REPO.glob("packages/*/README.md"), *REPO.glob("docs/**/*.md")]
    for page in pages:
        for line in page.read_text(encoding="utf-8").splitlines():
            # The README says what fails today and what will work once the names are published;
            # docs may quote an error message of the code.
            if any(
                words in line
                for words in ("finds nothing", "Once the names are published", "the message names")
            ):
                continue
            assert not pattern.search(line), f"{page.relative_to(REPO)}: {line}"


def test_install_check_covers_the_readme_combinations() -> None:
    listed = subprocess.run(
        [sys.executable, str(CHECK), "--list"], capture_output=True, text=True, timeout=60, check=True
    ).stdout.splitlines()
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    documented = [" ".join(c) for c in _documented_commands(readme)]
    assert len(documented) >= 5
    for command in documented:
        assert command in listed, f"tools/check_install.py has no case for {command!r}"
    folders = {p.parent.name for p in REPO.glob("packages/*/pyproject.toml")}
    assert folders <= set(listed), "every package is installed alone"
