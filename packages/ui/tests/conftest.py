"""Fixtures of the ferrule-ui tests: the example app, a uvicorn server on 127.0.0.1, headless Chromium."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from collections.abc import Generator
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.asgi_server import AsgiServer
from tests.support.browser import HEADLESS_FLAGS
from tests.support.browser import unavailable
from tests.support.examples import load_example

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "docs" / "examples"
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


@pytest.fixture(scope="session")
def ui_server() -> Any:
    """The example module `docs/examples/ui_server.py`."""
    return load_example("ui_server")


@pytest.fixture(scope="session")
def web_dist(ui_server: Any) -> Path:
    """The example page's bundle, built with esbuild from the real `ai` and `@ag-ui/client` (npm ci first)."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        unavailable("Node.js and npm are not installed")
    return ui_server.ensure_bundle()


@pytest.fixture
def serve() -> Iterator[Callable[[Callable[[], Any]], AsgiServer]]:
    """`serve(make_app)`: start the app on 127.0.0.1; stopped after the test."""
    servers: list[AsgiServer] = []

    def start(make_app: Callable[[], Any]) -> AsgiServer:
        server = AsgiServer(make_app).__enter__()
        servers.append(server)
        return server

    yield start
    for server in reversed(servers):
        server.__exit__()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Keep each phase's report on the test item, so the `browser` fixture knows whether the test failed."""
    report = yield
    item.stash.setdefault(REPORTS, {})[call.when] = report
    return report


REPORTS = pytest.StashKey[dict[str, pytest.TestReport]]()
CHROME_FLAGS = (*HEADLESS_FLAGS, "--disable-dev-shm-usage", "--window-size=1000,900")


def start_chrome(folder: Path) -> Any:
    """A Chromium session with its own profile and a verbose chromedriver log, both under `folder`."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    folder.mkdir()
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*CHROME_FLAGS, f"--user-data-dir={folder / 'profile'}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(
        executable_path=CHROMEDRIVER, service_args=["--verbose"], log_output=str(folder / "chromedriver.log")
    )
    driver = webdriver.Chrome(service=service, options=options)
    # Commands wait on a loaded machine rather than fail: a navigation or script may take its time.
    driver.set_page_load_timeout(120)
    driver.set_script_timeout(120)
    return driver


def print_log_tail(log: Path) -> None:
    """Print chromedriver's last log entries (one line each: the verbose log continues them with JSON)."""
    if log.is_file():
        entries = [line for line in log.read_text(errors="replace").splitlines() if line.startswith("[")]
        print(f"chromedriver log ({log}), its last entries:", *entries[-40:], sep="\n")


@pytest.fixture
def browser(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """Headless Debian Chromium driven by Selenium through the system chromedriver (nothing downloaded).

    Starting a session is tried twice: on a loaded machine chromedriver can lose the race for the port
    Selenium picked for it, or Chromium can miss chromedriver's start-up deadline. Nothing the test
    does is retried. When the test fails, the tail of chromedriver's log is printed with it.
    """
    if not (Path(CHROMIUM).is_file() and Path(CHROMEDRIVER).is_file()):
        unavailable("Debian's chromium and chromium-driver are not installed")
    from selenium.common.exceptions import WebDriverException

    folder = tmp_path / "chromium-1"
    try:
        driver = start_chrome(folder)
    except WebDriverException as first:
        print(f"starting Chromium failed once ({first.msg}); chromedriver log: {folder / 'chromedriver.log'}")
        folder = tmp_path / "chromium-2"
        driver = start_chrome(folder)
    try:
        yield driver
    finally:
        driver.quit()
        if any(report.failed for report in request.node.stash.get(REPORTS, {}).values()):
            print_log_tail(folder / "chromedriver.log")
        shutil.rmtree(folder / "profile", ignore_errors=True)


def screenshot(driver: Any, name: str) -> Path:
    """Save a screenshot under tests/artifacts/ (kept as a test artifact)."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    driver.save_screenshot(str(path))
    return path
