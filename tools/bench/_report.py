"""The benchmark report: one Markdown table and one JSON file, ratios taken within the run."""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

import msgspec

from tools.bench._common import Stats
from tools.bench._common import stats

__all__ = ["TARGETS", "Row", "write_report"]

TIMES = "\u00d7"
DASH = "\u2013"

COLUMNS = ("raw", "ferrule", "pydantic_ai", "openai_agents", "agno")
HEADERS = {
    "raw": "raw floor",
    "ferrule": "ferrule",
    "pydantic_ai": "PydanticAI",
    "openai_agents": "openai-agents",
    "agno": "Agno",
}

# (compared with, the most ferrule's median may be as a multiple of the other's, how it reads)
TARGETS: dict[str, tuple[str, float, str]] = {
    "1c": ("pydantic_ai", 1 / 8, "≤ 1/8 of PydanticAI"),
    "2a": ("pydantic_ai", 1 / 20, "≤ 1/20 of PydanticAI"),
    "2b": ("pydantic_ai", 1 / 20, "≤ 1/20 of PydanticAI"),
    **{
        rid: ("raw", 1.3, f"≤ 1.3{TIMES} raw")
        for rid in ("3a", "3b", "3c", "3d", "4a", "4b", "4c", "4d", "5a")
    },
    # The history target is the round trip; decoding PydanticAI's own JSON (6c) has none.
    **{rid: ("pydantic_ai", 1 / 10, f"≥ 10{TIMES} faster than PydanticAI") for rid in ("6a", "6b")},
    # Growth rows: ferrule's step-N ÷ step-1 may be at most 1.3 times the raw floor's (at least 1.3),
    # since the floor's growth is the cost of encoding the longer history itself.
    "7a3": ("raw", 1.3, f"≤ 1.3 {TIMES} max(1, raw's)"),
    "7b3": ("raw", 1.3, f"≤ 1.3 {TIMES} max(1, raw's)"),
    # Graphs: ferrule's per-step cost against pydantic-graph's (the PydanticAI column).
    "9a": ("pydantic_ai", 1 / 10, "≤ 1/10 of pydantic-graph"),
    "9b": ("pydantic_ai", 1 / 10, "≤ 1/10 of pydantic-graph"),
    # Building an agent: at or below Agno, in time and in the memory each agent keeps.
    "10a": ("agno", 1.0, "≤ Agno"),
    "10b": ("agno", 1.0, "≤ Agno"),
}


@dataclass
class Row:
    """One measured line of the table: samples per framework, in nanoseconds (or bytes)."""

    id: str
    title: str
    unit: str
    scale: float
    """Multiplies raw samples into `unit`."""
    samples: dict[str, list[float]] = field(default_factory=dict[str, list[float]])
    na: dict[str, str] = field(default_factory=dict[str, str])
    """Frameworks without a number, and why."""
    derived: tuple[str, str] | None = None
    """For a growth row: the ids of the step-1 and step-N rows it divides."""


def _fmt(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def _ratio(value: float | None) -> str:
    if value is None:
        return "—"
    if value < 0.5:
        return f"{value:.3g} (1/{1 / value:.0f})" if value > 0 else "0"
    return f"{value:.2f}{TIMES}"


def _summaries(rows: list[Row]) -> dict[str, dict[str, Stats]]:
    by_id = {row.id: row for row in rows}
    out: dict[str, dict[str, Stats]] = {}
    for row in rows:
        summary: dict[str, Stats] = {}
        if row.derived is not None:
            first, last = (out.get(rid, {}) for rid in row.derived)
            for fw in COLUMNS:
                if fw in first and fw in last and first[fw].median > 0:
                    value = last[fw].median / first[fw].median
                    summary[fw] = Stats(median=value, min=value, max=value, n=1)
            for rid in row.derived:
                row.na.update({k: v for k, v in by_id[rid].na.items() if k not in summary})
        else:
            for fw, values in row.samples.items():
                if values:
                    summary[fw] = stats([v * row.scale for v in values])
        out[row.id] = summary
    return out


def _judge(row_id: str, summary: dict[str, Stats]) -> tuple[str, bool | None]:
    target = TARGETS.get(row_id)
    if target is None:
        return "", None
    other, limit, text = target
    if "ferrule" not in summary or other not in summary or summary[other].median <= 0:
        return text, None
    if row_id.startswith("7"):
        return text, summary["ferrule"].median <= limit * max(1.0, summary[other].median)
    return text, summary["ferrule"].median / summary[other].median <= limit


def write_report(rows: list[Row], meta: dict[str, Any], out: Path, name: str = "latest") -> str:
    """Write `<name>.md` and `<name>.json` under `out`; return the Markdown."""
    summaries = _summaries(rows)
    present = [fw for fw in COLUMNS if any(fw in summaries[r.id] or fw in r.na for r in rows)]
    head = ["#", "workload", "unit", *(HEADERS[fw] for fw in present)]
    head += ["ferrule ÷ PydanticAI", "ferrule ÷ raw", "PydanticAI ÷ raw", "target", "met"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    records: list[dict[str, Any]] = []
    for row in rows:
        summary = summaries[row.id]
        cells = [row.id, row.title, row.unit]
        for fw in present:
            if fw in summary:
                s = summary[fw]
                cells.append(
                    _fmt(s.median) if s.n == 1 else f"{_fmt(s.median)} ({_fmt(s.min)}{DASH}{_fmt(s.max)})"
                )
            else:
                cells.append("n/a" if fw in row.na else "")

        def ratio(a: str, b: str, summary: dict[str, Stats] = summary) -> float | None:
            if a in summary and b in summary and summary[b].median > 0:
                return summary[a].median / summary[b].median
            return None

        ratios = {
            "ferrule/pydantic_ai": ratio("ferrule", "pydantic_ai"),
            "ferrule/raw": ratio("ferrule", "raw"),
            "pydantic_ai/raw": ratio("pydantic_ai", "raw"),
        }
        target, met = _judge(row.id, summary)
        cells += [_ratio(v) for v in ratios.values()]
        cells += [target, "" if met is None else ("yes" if met else "**no**")]
        lines.append("| " + " | ".join(cells) + " |")
        records.append(
            {
                "id": row.id,
                "title": row.title,
                "unit": row.unit,
                "results": {fw: msgspec.to_builtins(s) for fw, s in summary.items()},
                "samples": {fw: [v * row.scale for v in vs] for fw, vs in row.samples.items()},
                "not_available": row.na,
                "ratios": ratios,
                "target": target or None,
                "met": met,
            }
        )
    machine = meta["machine"]
    versions = meta["versions"]
    load = meta["load_average"]
    notes = [
        f"Run {meta['date']} ({meta['mode']}, {meta['duration_s']} s) on {machine['cpu']}, "
        f"{machine['cores']} cores, {machine['memory']}, {machine['os']}, "
        f"{machine['implementation']} {machine['python']}, commit {machine['commit']}; "
        f"load average {load['before'][0]:.2f} before, {load['after'][0]:.2f} after.",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()) + ".",
        f"Cells: median (min{DASH}max) over repetitions; ratios divide medians measured in this run.",
    ]
    notes += [f"Skipped: {fw}: {why}." for fw, why in meta["skipped"].items()]
    notes += [f"Error: {e.splitlines()[0]}" for e in meta["errors"]]
    markdown = "\n".join(lines) + "\n\n" + "\n".join(f"- {n}" for n in notes) + "\n"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.md").write_text(markdown)
    (out / f"{name}.json").write_bytes(
        msgspec.json.format(msgspec.json.encode({"meta": meta, "rows": records}))
    )
    return markdown
