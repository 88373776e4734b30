"""The expensive haltproof commands over specs/budget_runner.yaml, run once per test process.

`haltproof("check", "specs/budget_runner.yaml")` is the whole K 1..8 x R 0..2 sweep on the
bound code (a few seconds); tests/harness/test_budget_spec.py and tests/docs/test_budget_docs.py both
need it, so both ask here and the second gets the first one's result. For `check`, the
JSON report of the same run is written with --json and returned too.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from haltproof.cli.main import main

ROOT = Path(__file__).resolve().parent.parent


@functools.cache
def haltproof(*args: str) -> tuple[int, str, str, dict[str, Any] | None]:
    """Run `haltproof ARGS` in-process from the repository root: (exit code, stdout, stderr, report)."""
    # contextlib.chdir, not monkeypatch: the result is cached across tests; the directory is restored
    with contextlib.chdir(ROOT), tempfile.TemporaryDirectory() as tmp:
        report_file = os.path.join(tmp, "report.json")
        extra = ["--json", report_file] if args and args[0] == "check" else []
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([*args, *extra])
        report = json.loads(Path(report_file).read_text()) if extra and os.path.exists(report_file) else None
    return code, out.getvalue(), err.getvalue(), report
