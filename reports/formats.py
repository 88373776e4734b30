"""The report formats: each renders the one `haltproof-report/1` dict to text.

`FORMATS` maps a `--format` name to its renderer; the names in `FILE_FORMATS` also get
an option `--NAME FILE` that writes that format to a file in the same run. Every
renderer reads only the report dict, so no format ever re-runs a check.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from typing import Any

Renderer = Callable[[dict[str, Any]], str]


def _on_use(module: str, name: str) -> Renderer:
    """A renderer imported when first called: most runs print one format, and importing
    them all cost about a tenth of a short check's startup."""
    def render(report: dict[str, Any]) -> str:
        renderer: Renderer = getattr(importlib.import_module(module, __package__), name)
        return renderer(report)
    render.__name__ = name
    return render


def render_json(report: dict[str, Any]) -> str:
    """Strict JSON (RFC 8259): a NaN or infinity in the report is a bug of ours, never written."""
    return json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


FORMATS: dict[str, Renderer] = {
    "json": render_json,
    "html": _on_use(".html", "render"),     # self-contained page; `check` adds the small runs' state graphs
    "junit": _on_use(".junit", "render_junit"),   # JUnit XML: a testsuite per spec, a testcase per params x property
    "sarif": _on_use(".sarif", "render_sarif"),   # SARIF 2.1.0 for code scanning
    "github": _on_use(".github", "render_github"),     # workflow-command annotations (::error / ::warning)
    "markdown": _on_use(".github", "render_markdown"),  # the job summary: run table, traces, Mermaid
}

FILE_FORMATS: list[str] = ["json", "html", "junit", "sarif"]
