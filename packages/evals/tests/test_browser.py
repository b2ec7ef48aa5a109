"""The HTML report in a real browser: Debian's Chromium, headless, offline.

The page is rendered twice by Chromium: `--dump-dom` gives the DOM it built, whose numbers must be
the report's; `--screenshot` gives the pixels, which must show the pass/fail cells and the chart
bars in their colours. The screenshot is kept under `$FERRULE_TEST_ARTIFACTS` (default: the test's
temporary folder). Outside CI the test skips when Chromium is absent; in CI (`CI` set) it fails.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import zlib
from collections.abc import Sequence
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from ferrule.agent import Agent
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import UserPromptPart
from ferrule.core.usage import RequestUsage
from ferrule.core.usage import RunUsage
from ferrule.evals import Case
from ferrule.evals import Dataset
from ferrule.evals import ExactMatch
from ferrule.evals import ExecutionOptions
from ferrule.evals import Report
from ferrule.evals import compare_reports
from ferrule.evals import evaluator
from tests.support.browser import HEADLESS_FLAGS
from tests.support.browser import unavailable

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
OFFLINE_FLAGS = [*HEADLESS_FLAGS, "--disable-extensions", "--hide-scrollbars"]


@pytest.fixture
def chromium() -> str:
    if CHROMIUM is None:
        unavailable("chromium is not installed (apt-get install chromium)")
    return CHROMIUM


@pytest.fixture
def artifacts(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("FERRULE_TEST_ARTIFACTS") or tmp_path) / "evals"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def answer(shift: int) -> Any:
    def model(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        request = messages[-1]
        assert isinstance(request, ModelRequest)
        prompt = next(p.content for p in request.parts if isinstance(p, UserPromptPart))
        assert isinstance(prompt, str)
        a, b = (int(x) for x in prompt.split("+"))
        total = a + b + (shift if a % 3 == 0 else 0)
        return ModelResponse(
            parts=[TextPart(str(total))], usage=RequestUsage(input_tokens=40 + a, output_tokens=3)
        )

    return model


@evaluator("closeness")
def closeness(case: Case, output: Any, usage: RunUsage) -> float:
    return 1 / (1 + abs(int(output) - int(case.expected)))


async def reports() -> tuple[Report, Report]:
    dataset = Dataset(
        [Case(f"sum {i} <{i}>", f"{i}+{i}", expected=str(2 * i)) for i in range(7)],
        evaluators=[ExactMatch(), closeness],
        name="browser check",
    )
    options = ExecutionOptions(repetitions=2, max_concurrency=3)
    baseline = await dataset.run(Agent(FunctionModel(answer(0))), options=options)
    candidate = await dataset.run(Agent(FunctionModel(answer(1))), options=options)
    return baseline, candidate


class Dom(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.texts: dict[int, str] = {}
        self._open: list[int] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, {k: v or "" for k, v in attrs}))
        if tag not in ("meta", "line", "rect"):
            self._open.append(len(self.elements) - 1)

    def handle_endtag(self, tag: str) -> None:
        if self._open:
            self._open.pop()

    def handle_data(self, data: str) -> None:
        for index in self._open[-1:]:
            self.texts[index] = self.texts.get(index, "") + data

    def find(self, tag: str, **attrs: str) -> list[tuple[int, dict[str, str]]]:
        return [
            (i, a)
            for i, (t, a) in enumerate(self.elements)
            if t == tag and all(a.get(k.replace("_", "-")) == v for k, v in attrs.items())
        ]


def chrome(binary: str, profile: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    done = subprocess.run(
        [binary, *OFFLINE_FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        timeout=120,
        check=False,
        env={**os.environ, "HOME": str(profile)},
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    return done


def png_pixels(data: bytes) -> tuple[int, int, list[tuple[int, int, int]]]:
    """Decode an 8-bit RGB or RGBA PNG (what Chromium writes) into (width, height, pixels)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height, channels = 8, b"", 0, 0, 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8, depth
            assert colour in (2, 6), colour
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
    raw = zlib.decompress(idat)
    stride = width * channels
    previous = bytearray(stride)
    pixels: list[tuple[int, int, int]] = []
    for row in range(height):
        start = row * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                predictor = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + predictor) & 0xFF
        pixels.extend((line[i], line[i + 1], line[i + 2]) for i in range(0, stride, channels))
        previous = line
    return width, height, pixels


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_html_report_renders_in_chromium_with_the_reports_numbers(
    chromium: str, artifacts: Path, tmp_path: Path, anyio_backend: str
) -> None:
    baseline, candidate = await reports()
    comparison = compare_reports(baseline, candidate)
    page = candidate.to_html(tmp_path / "report.html", comparison=comparison)
    profile = tmp_path / "profile"
    dom_text = chrome(chromium, profile, "--dump-dom", page.as_uri()).stdout.decode()
    dom = Dom()
    dom.feed(dom_text)

    # The summary line holds the report's totals.
    summary = candidate.summary()
    ((index, attrs),) = dom.find("p", id="summary")
    assert int(attrs["data-total-runs"]) == summary.total_runs == 14
    assert int(attrs["data-passed-runs"]) == summary.passed_runs
    assert float(attrs["data-pass-rate"]) == summary.pass_rate
    assert int(attrs["data-total-tokens"]) == candidate.total_usage().total_tokens
    assert f"{summary.total_runs} runs, {summary.passed_runs} passed" in dom.texts[index]

    # One row per run in source order, and every cell's numbers are the report's.
    rows = dom.find("tr", **{"class": "run"})
    assert [(int(a["data-case-index"]), int(a["data-repetition"])) for _, a in rows] == [
        (r.case_index, r.repetition) for r in candidate.results
    ]
    cells = [(i, a) for i, (t, a) in enumerate(dom.elements) if t == "td" and "data-evaluator" in a]
    assert len(cells) == 14 * 2
    for (i, cell), (result, name) in zip(
        cells, [(r, n) for r in candidate.results for n in ("exact_match", "closeness")], strict=True
    ):
        evaluation = result.evaluation(name)
        assert evaluation is not None
        assert cell["data-evaluator"] == name
        if evaluation.score is not None:
            assert float(cell["data-score"]) == evaluation.score
            assert f"{evaluation.score:.3f}" in dom.texts[i]
        if evaluation.passed is not None:
            assert cell["data-passed"] == ("true" if evaluation.passed else "false")
            assert ("✔" if evaluation.passed else "✘") in dom.texts[i]
    tokens = [(i, a) for i, (t, a) in enumerate(dom.elements) if t == "td" and "data-total-tokens" in a]
    for (i, cell), result in zip(tokens, candidate.results, strict=True):
        assert int(cell["data-total-tokens"]) == result.usage.total_tokens
        assert dom.texts[i] == f"{result.usage.total_tokens:,}"

    # The score distribution chart counts every score; the deltas chart shows the comparison.
    ((_, chart),) = dom.find("figure", data_evaluator="closeness")
    stats = candidate.score_statistics("closeness")
    assert float(chart["data-mean"]) == stats.mean
    assert float(chart["data-std-dev"]) == stats.std_dev
    bins = [a for t, a in dom.elements if t == "rect" and a.get("class") == "bar"]
    assert sum(int(b["data-count"]) for b in bins) == 14 + 14  # exact's pass/fail bars + closeness's bins
    ((_, verdict),) = dom.find("p", id="comparison")
    assert int(verdict["data-regressions"]) == comparison.regressions() > 0
    assert verdict["data-regression-free"] == "false"
    deltas = {
        a["data-label"]: float(a["data-delta"])
        for t, a in dom.elements
        if t == "rect" and a.get("class") == "delta"
    }
    assert deltas["pass rate"] == comparison.pass_rate_delta
    closeness_deltas = [
        e.score_delta for e in comparison.evaluations() if e.name == "closeness" and e.score_delta is not None
    ]
    assert deltas["closeness (mean score)"] == pytest.approx(sum(closeness_deltas) / len(closeness_deltas))
    assert "sum 3 &lt;3&gt;" in dom_text  # names are text, not markup

    # The pixels: pass and fail cells, chart bars and negative deltas are drawn in their colours.
    shot = artifacts / "evals_report.png"
    chrome(chromium, profile, f"--screenshot={shot}", "--window-size=1400,2600", page.as_uri())
    width, height, pixels = png_pixels(shot.read_bytes())
    assert (width, height) == (1400, 2600)
    colours = set(pixels)
    for name, rgb in {
        "pass cell": (0xE3, 0xF6, 0xE8),
        "fail cell": (0xFD, 0xE4, 0xE4),
        "chart bar": (0x4A, 0x74, 0xD9),
        "negative delta": (0xC0, 0x39, 0x2B),
    }.items():
        assert rgb in colours, f"no {name} pixel in {shot}"
    print(f"screenshot of the HTML report: {shot}")
