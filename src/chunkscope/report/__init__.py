"""A shareable view of a tree's chunks: one self-contained HTML page (`render_report`), for a CI artifact or a PR.

A view like the CLI and the app: it reads what the core computed (`chunk_documents`, `lint_tree`) and never
recomputes it; the core never imports it.
"""

from __future__ import annotations

from chunkscope.report.model import FileView, ReportData, build_report
from chunkscope.report.page import render_report

__all__ = ["FileView", "ReportData", "build_report", "render_report"]
