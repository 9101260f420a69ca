"""What the benchmark scripts share: chunkscope imported from this checkout's ``src``, and the report (lines
printed as they come and kept for the ``--out`` file, Markdown tables, the load average).

The scripts run as ``python bench/bench_x.py``, so this folder is first on ``sys.path`` and they ``import _setup``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO / "src") not in sys.path:
    sys.path.insert(0, str(REPO / "src"))

_lines: list[str] = []


def emit(text: str = "") -> None:
    """Print ``text`` now and keep it for `write_report`."""
    print(text, flush=True)
    _lines.append(text)


def write_report(path: Path) -> None:
    """Everything `emit` printed so far, to ``path``."""
    path.write_text("\n".join(_lines) + "\n", encoding="utf-8")


def table(headers: list[str], rows: list[list[object]]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def load() -> str:
    """The load averages (1, 5, 15 min), or ``?`` where the platform has none."""
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"
