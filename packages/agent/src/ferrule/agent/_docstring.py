"""A small docstring reader: a summary plus parameter descriptions in Google, Sphinx or NumPy style."""

from __future__ import annotations

import inspect
import re
from typing import Literal

DocstringFormat = Literal["auto", "google", "sphinx", "numpy"]

_GOOGLE_SECTION = re.compile(r"^(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments)\s*:\s*$")
_GOOGLE_OTHER = re.compile(
    r"^(Returns?|Yields?|Raises?|Examples?|Notes?|Attributes|See Also|Warnings?|Todo|References)\s*:\s*$"
)
_GOOGLE_ITEM = re.compile(r"^(\*{0,2}\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")
_SPHINX_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")
_SPHINX_FIELD = re.compile(r"^:\w+")
_NUMPY_HEADER = re.compile(r"^([A-Z][A-Za-z ]+)\s*$")
_NUMPY_RULE = re.compile(r"^-{3,}\s*$")
_NUMPY_ITEM = re.compile(r"^(\*{0,2}\w+)\s*(?::\s*(.*))?$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _detect(lines: list[str]) -> DocstringFormat:
    for i, line in enumerate(lines):
        stripped = line.strip()
        if _SPHINX_PARAM.match(stripped):
            return "sphinx"
        if _GOOGLE_SECTION.match(stripped):
            return "google"
        if i + 1 < len(lines) and _NUMPY_HEADER.match(stripped) and _NUMPY_RULE.match(lines[i + 1].strip()):
            return "numpy"
    return "google"


def parse_docstring(doc: str | None, style: DocstringFormat = "auto") -> tuple[str | None, dict[str, str]]:
    """The summary (text before the first section) and a description per parameter name."""
    if not doc:
        return None, {}
    lines = inspect.cleandoc(doc).splitlines()
    if style == "auto":
        style = _detect(lines)
    if style == "sphinx":
        return _sphinx(lines)
    if style == "numpy":
        return _numpy(lines)
    return _google(lines)


def _summary(lines: list[str]) -> str | None:
    text = "\n".join(lines).strip()
    return text or None


def _google(lines: list[str]) -> tuple[str | None, dict[str, str]]:
    params: dict[str, str] = {}
    summary_end = len(lines)
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        if _GOOGLE_SECTION.match(stripped) or _GOOGLE_OTHER.match(stripped):
            summary_end = min(summary_end, i)
        if not _GOOGLE_SECTION.match(stripped):
            i += 1
            continue
        base = _indent(lines[i])
        i += 1
        item_indent: int | None = None
        current: str | None = None
        while i < len(lines):
            line = lines[i]
            if not line.strip():
                i += 1
                continue
            indent = _indent(line)
            if indent <= base:
                break
            if item_indent is None:
                item_indent = indent
            match = _GOOGLE_ITEM.match(line.strip()) if indent == item_indent else None
            if match:
                name = match.group(1).lstrip("*")
                params[name] = match.group(3).strip()
                current = name
            elif current is not None:
                params[current] = (params[current] + " " + line.strip()).strip()
            i += 1
    return _summary(lines[:summary_end]), params


def _sphinx(lines: list[str]) -> tuple[str | None, dict[str, str]]:
    params: dict[str, str] = {}
    summary_end = len(lines)
    current: str | None = None
    for i, line in enumerate(lines):
        stripped = line.strip()
        if _SPHINX_FIELD.match(stripped):
            summary_end = min(summary_end, i)
            match = _SPHINX_PARAM.match(stripped)
            if match:
                name = match.group(1)
                params[name] = match.group(2).strip()
                current = name
            else:
                current = None
        elif current is not None and stripped:
            params[current] = (params[current] + " " + stripped).strip()
    return _summary(lines[:summary_end]), params


def _numpy(lines: list[str]) -> tuple[str | None, dict[str, str]]:
    params: dict[str, str] = {}
    summary_end = len(lines)
    i = 0
    in_params = False
    current: str | None = None
    while i < len(lines):
        stripped = lines[i].strip()
        if i + 1 < len(lines) and _NUMPY_HEADER.match(stripped) and _NUMPY_RULE.match(lines[i + 1].strip()):
            summary_end = min(summary_end, i)
            in_params = stripped in ("Parameters", "Other Parameters", "Keyword Arguments")
            current = None
            i += 2
            continue
        if in_params and stripped:
            if _indent(lines[i]) == 0:
                match = _NUMPY_ITEM.match(stripped)
                if match:
                    name = match.group(1).lstrip("*")
                    params[name] = ""
                    current = name
            elif current is not None:
                params[current] = (params[current] + " " + stripped).strip()
        i += 1
    return _summary(lines[:summary_end]), params
