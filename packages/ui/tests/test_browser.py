"""End to end in a real browser: the real AI SDK and AG-UI clients in headless Chromium against the example app.

Each flow types a prompt into the page and asserts on the DOM the real client renders: streamed
text, a tool call and its result, a typed data part, approval and denial of a gated tool, and a
reload mid-stream that replays the run. Screenshots are kept in tests/artifacts/.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.asgi_server import AsgiServer

from .conftest import screenshot

WAIT = 60  # seconds a DOM condition may take on a loaded 2-core machine; a wait, never an assertion on speed

# The pages rebuild their message list on every streamed chunk, so an element found by one WebDriver
# command can be gone by the next (StaleElementReferenceException, seen on a loaded machine). Every
# read of the messages is therefore one script run in the page: one consistent DOM, no held elements.
READ_TEXTS = """
return arguments[0].map((css) => Array.from(document.querySelectorAll(css), (node) => node.innerText.trim()));
"""


def texts(driver: Any, *selectors: str) -> list[list[str]]:
    """The visible text of every element each CSS selector matches, all read from the same DOM."""
    return driver.execute_script(READ_TEXTS, list(selectors))


def wait_for(driver: Any, css: str, timeout: float = WAIT) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, timeout).until(ec.presence_of_element_located((By.CSS_SELECTOR, css)))


def wait_for_texts(driver: Any, *selectors: str) -> list[list[str]]:
    """Wait until the first selector matches, then the texts of every selector, read at that moment."""
    return wait_until(driver, lambda d: (found := texts(d, *selectors))[0] and found)


def wait_until(driver: Any, condition: Callable[[Any], Any], timeout: float = WAIT) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(condition)


def click(driver: Any, css: str) -> None:
    """Click the element `css` matches, found afresh until one is clicked (a re-render makes it stale)."""
    from selenium.common.exceptions import NoSuchElementException
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    def clicked(d: Any) -> bool:
        d.find_element(By.CSS_SELECTOR, css).click()
        return True

    # A stale element is refused before any click is dispatched, so trying again never clicks twice.
    ignored = (NoSuchElementException, StaleElementReferenceException)
    WebDriverWait(driver, WAIT, ignored_exceptions=ignored).until(clicked)


def assistant_text(driver: Any) -> str:
    return " ".join(texts(driver, ".role-assistant .text")[0])


def status(driver: Any) -> str:
    from selenium.webdriver.common.by import By

    return str(driver.find_element(By.ID, "status").get_attribute("data-status"))


def ask(driver: Any, prompt: str) -> None:
    from selenium.webdriver.common.by import By

    box = driver.find_element(By.ID, "prompt")
    box.send_keys(prompt)
    driver.find_element(By.ID, "send").click()


def page_errors(driver: Any) -> list[str]:
    """Console errors (a client that rejected a chunk logs one)."""
    return [
        entry["message"]
        for entry in driver.get_log("browser")
        if entry["level"] == "SEVERE" and "favicon" not in entry["message"]
    ]


def finished(driver: Any) -> bool:
    return status(driver) == "ready" and "streaming" not in status(driver)


@pytest.fixture
def ledger() -> list[str]:
    return []


@pytest.fixture
def app_server(
    ui_server: Any, web_dist: Path, serve: Callable[..., AsgiServer], ledger: list[str]
) -> AsgiServer:
    return serve(lambda: ui_server.build_app(ui_server.scripted_agent(ledger=ledger), dist=web_dist))


@pytest.mark.parametrize("path", ["/", "/agui"], ids=["ai-sdk", "ag-ui"])
def test_streamed_text_and_tool_call(browser: Any, app_server: AsgiServer, path: str) -> None:
    browser.get(app_server.origin + path)
    wait_for(browser, "#prompt")
    ask(browser, "What is the weather in Paris?")
    tool = '.tool[data-tool-name="get_weather"][data-state="output-available"]'
    _, (tool_input, *_), (tool_output, *_) = wait_for_texts(
        browser, tool, f"{tool} .tool-input", f"{tool} .tool-output"
    )
    assert '"city":"Paris"' in tool_input
    assert tool_output == "sunny, 21 °C in Paris"
    wait_until(browser, lambda d: "It is sunny, 21 °C in Paris." in assistant_text(d))
    wait_until(browser, finished)
    text = assistant_text(browser)
    assert text.startswith("Let me check the weather.")
    (user, *_), data = texts(browser, ".role-user .text", '.data[data-name="weather"]')
    assert user == "What is the weather in Paris?"
    if path == "/":
        assert data[:1] == ['{"city":"Paris","temperature_c":21,"sky":"sunny"}']
    screenshot(browser, f"{'ai-sdk' if path == '/' else 'ag-ui'}-tool-call")
    assert page_errors(browser) == []


def ask_to_pay(driver: Any, url: str, answer: str) -> str:
    """Ask the page at `url` for a gated payment; once the run paused, the selector of its `answer` button."""
    driver.get(url)
    wait_for(driver, "#prompt")
    ask(driver, "Please pay alice 250 EUR")
    button = f'.tool[data-tool-name="send_money"][data-state="approval-requested"] button.{answer}'
    wait_for(driver, button)
    wait_until(driver, finished)
    return button


@pytest.mark.parametrize("path", ["/", "/agui"], ids=["ai-sdk", "ag-ui"])
def test_approve_a_gated_tool(browser: Any, app_server: AsgiServer, path: str, ledger: list[str]) -> None:
    approve = ask_to_pay(browser, app_server.origin + path, "approve")
    assert ledger == []  # nothing runs before the user decides
    screenshot(browser, f"{'ai-sdk' if path == '/' else 'ag-ui'}-approval-requested")
    click(browser, approve)
    wait_for(browser, '.tool[data-tool-name="send_money"][data-state="output-available"]')
    wait_until(browser, lambda d: "Done: sent 250 EUR to alice." in assistant_text(d))
    wait_until(browser, finished)
    assert ledger == ["250 EUR to alice"]
    ((output, *_),) = texts(browser, '.tool[data-tool-name="send_money"] .tool-output')
    assert output == "sent 250 EUR to alice"
    screenshot(browser, f"{'ai-sdk' if path == '/' else 'ag-ui'}-approved")
    assert page_errors(browser) == []


@pytest.mark.parametrize("path", ["/", "/agui"], ids=["ai-sdk", "ag-ui"])
def test_deny_a_gated_tool(browser: Any, app_server: AsgiServer, path: str, ledger: list[str]) -> None:
    click(browser, ask_to_pay(browser, app_server.origin + path, "deny"))
    wait_for(browser, '.tool[data-tool-name="send_money"][data-state="output-denied"]')
    wait_until(browser, lambda d: "OK, I did not send the money." in assistant_text(d))
    wait_until(browser, finished)
    assert ledger == []
    screenshot(browser, f"{'ai-sdk' if path == '/' else 'ag-ui'}-denied")
    assert page_errors(browser) == []


def test_reload_mid_stream_replays(
    browser: Any, ui_server: Any, web_dist: Path, serve: Callable[..., AsgiServer]
) -> None:
    gate = threading.Event()
    try:
        server = serve(
            lambda: ui_server.build_app(
                ui_server.scripted_agent(gate=gate), on_disconnect="continue", dist=web_dist
            )
        )
        browser.get(server.origin + "/")
        wait_for(browser, "#prompt")
        ask(browser, "Tell me a story")
        wait_until(browser, lambda d: "Once upon a" in assistant_text(d))
        assert "The end." not in assistant_text(browser)
        browser.refresh()  # the page is gone; the run goes on, held by the gate
        wait_until(browser, lambda d: "Once upon a" in assistant_text(d))  # replayed from the buffer
        assert browser.find_elements("css selector", ".role-user") == []  # a fresh page: only the replay
        screenshot(browser, "ai-sdk-replayed-mid-stream")
        gate.set()
        wait_until(browser, lambda d: "The end." in assistant_text(d))
        wait_until(browser, finished)
        text = assistant_text(browser)
        assert text.startswith("Once upon a time a small agent")
        assert text.count("Once upon a time") == 1
        assert page_errors(browser) == []
    finally:
        gate.set()
