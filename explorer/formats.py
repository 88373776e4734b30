"""The report formats: each renders the one `haltproof-report/1` dict to text.

`FORMATS` maps a `--format` name to its renderer; the names in `FILE_FORMATS` also get
an option `--NAME FILE` that writes that format to a file in the same run. Every
renderer reads only the report dict, so no format ever re-runs a check.
"""

from __future__ import annotations

import json
from typing import Any, Callable

Renderer = Callable[[dict[str, Any]], str]


def render_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2, ensure_ascii=False) + "\n"


FORMATS: dict[str, Renderer] = {
    "json": render_json,
}

FILE_FORMATS: list[str] = ["json"]
