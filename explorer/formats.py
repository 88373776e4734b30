"""The report formats: each renders the one `haltproof-report/1` dict to text.

`FORMATS` maps a `--format` name to its renderer; the names in `FILE_FORMATS` also get
an option `--NAME FILE` that writes that format to a file in the same run. Every
renderer reads only the report dict, so no format ever re-runs a check.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from .html import render as render_html
from .github import render_github, render_markdown
from .junit import render_junit
from .sarif import render_sarif

Renderer = Callable[[dict[str, Any]], str]


def render_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2, ensure_ascii=False) + "\n"


FORMATS: dict[str, Renderer] = {
    "json": render_json,
    "html": render_html,     # self-contained page; `check` adds the small runs' state graphs
    "junit": render_junit,   # JUnit XML: a testsuite per spec, a testcase per params x property
    "sarif": render_sarif,   # SARIF 2.1.0 for code scanning
    "github": render_github,     # workflow-command annotations (::error / ::warning)
    "markdown": render_markdown,  # the job summary: run table, traces, Mermaid
}

FILE_FORMATS: list[str] = ["json", "html", "junit", "sarif"]
