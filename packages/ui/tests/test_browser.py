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

from .conftest import Server, screenshot

WAIT = 60  # seconds a DOM condition may take on a loaded 2-core machine; a wait, never an assertion on speed


def wait_for(driver: Any, css: str, timeout: float = WAIT) -> Any:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(ec.presence_of_element_located((By.CSS_SELECTOR, css)))


def wait_until(driver: Any, condition: Callable[[Any], Any], timeout: float = WAIT) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(condition)


def assistant_text(driver: Any) -> str:
    from selenium.webdriver.common.by import By

    return " ".join(e.text for e in driver.find_elements(By.CSS_SELECTOR, ".role-assistant .text"))


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
def app_server(ui_server: Any, web_dist: Path, serve: Callable[..., Server], ledger: list[str]) -> Server:
    return serve(lambda: ui_server.build_app(ui_server.scripted_agent(ledger=ledger), dist=web_dist))


@pytest.mark.parametrize("path", ["/", "/agui"], ids=["ai-sdk", "ag-ui"])
def test_streamed_text_and_tool_call(browser: Any, app_server: Server, path: str) -> None:
    browser.get(app_server.origin + path)
    wait_for(browser, "#prompt")
    ask(browser, "What is the weather in Paris?")
    tool = wait_for(browser, '.tool[data-tool-name="get_weather"][data-state="output-available"]')
    assert '"city":"Paris"' in tool.find_element("css selector", ".tool-input").text
    assert tool.find_element("css selector", ".tool-output").text == "sunny, 21 °C in Paris"
    wait_until(browser, lambda d: "It is sunny, 21 °C in Paris." in assistant_text(d))
    wait_until(browser, finished)
    text = assistant_text(browser)
    assert text.startswith("Let me check the weather.")
    user = browser.find_element("css selector", ".role-user .text")
    assert user.text == "What is the weather in Paris?"
    if path == "/":
        data = browser.find_element("css selector", '.data[data-name="weather"]')
        assert data.text == '{"city":"Paris","temperature_c":21,"sky":"sunny"}'
    screenshot(browser, f"{'ai-sdk' if path == '/' else 'ag-ui'}-tool-call")
    assert page_errors(browser) == []


def ask_to_pay(driver: Any, url: str, answer: str) -> Any:
    """Ask the page at `url` for a gated payment; the `answer` button of its approval, once the run paused."""
    driver.get(url)
    wait_for(driver, "#prompt")
    ask(driver, "Please pay alice 250 EUR")
    button = wait_for(
        driver, f'.tool[data-tool-name="send_money"][data-state="approval-requested"] button.{answer}'
    )
    wait_until(driver, finished)
    return button


@pytest.mark.parametrize("path", ["/", "/agui"], ids=["ai-sdk", "ag-ui"])
def test_approve_a_gated_tool(browser: Any, app_server: Server, path: str, ledger: list[str]) -> None:
    approve = ask_to_pay(browser, app_server.origin + path, "approve")
    assert ledger == []  # nothing runs before the user decides
    screenshot(browser, f"{'ai-sdk' if path == '/' else 'ag-ui'}-approval-requested")
    approve.click()
    wait_for(browser, '.tool[data-tool-name="send_money"][data-state="output-available"]')
    wait_until(browser, lambda d: "Done: sent 250 EUR to alice." in assistant_text(d))
    wait_until(browser, finished)
    assert ledger == ["250 EUR to alice"]
    output = browser.find_element("css selector", '.tool[data-tool-name="send_money"] .tool-output')
    assert output.text == "sent 250 EUR to alice"
    screenshot(browser, f"{'ai-sdk' if path == '/' else 'ag-ui'}-approved")
    assert page_errors(browser) == []


@pytest.mark.parametrize("path", ["/", "/agui"], ids=["ai-sdk", "ag-ui"])
def test_deny_a_gated_tool(browser: Any, app_server: Server, path: str, ledger: list[str]) -> None:
    ask_to_pay(browser, app_server.origin + path, "deny").click()
    wait_for(browser, '.tool[data-tool-name="send_money"][data-state="output-denied"]')
    wait_until(browser, lambda d: "OK, I did not send the money." in assistant_text(d))
    wait_until(browser, finished)
    assert ledger == []
    screenshot(browser, f"{'ai-sdk' if path == '/' else 'ag-ui'}-denied")
    assert page_errors(browser) == []


def test_reload_mid_stream_replays(
    browser: Any, ui_server: Any, web_dist: Path, serve: Callable[..., Server]
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
