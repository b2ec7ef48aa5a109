"""The UI examples start and serve: the demo page (`hatch run ui-demo`) without loading its local model."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx2

from tests.support.asgi_server import free_port

from .conftest import EXAMPLES


def test_ui_demo_starts_and_serves_the_page(web_dist: Path) -> None:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(EXAMPLES / "ui_demo.py"), "--port", str(port)],
        cwd=EXAMPLES,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        origin = f"http://127.0.0.1:{port}"
        page = None
        deadline = time.monotonic() + 90
        while page is None:
            assert process.poll() is None, process.stdout.read() if process.stdout else ""
            try:
                page = httpx2.get(origin + "/", timeout=5)
            except httpx2.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        assert page.status_code == 200
        assert '<script type="module" src="/dist/chat.js">' in page.text
        bundle = httpx2.get(origin + "/dist/chat.js", timeout=10)
        assert bundle.status_code == 200
        assert "javascript" in bundle.headers["content-type"]
        assert "tool-approval-request" in bundle.text  # the real AI SDK client is in the bundle
        assert httpx2.get(origin + "/agui", timeout=10).status_code == 200
        # The chat endpoint answers (a refusal needs no model).
        refused = httpx2.post(origin + "/api/chat/", json={"id": "c", "messages": []}, timeout=10)
        assert refused.status_code == 400
        assert "last message must be the user's" in refused.json()["error"]
    finally:
        process.terminate()
        process.wait(30)
        if process.stdout is not None:
            process.stdout.close()
