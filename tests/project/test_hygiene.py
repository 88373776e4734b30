"""The code stays lint-clean: `ruff check` (configured in pyproject.toml) passes on every
Python file of the repository, and the test command runs it before the tests, so a lint
regression fails both scripts/test and this suite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import ROOT

# Every folder that holds Python: the installed layers, the tests, the benchmark, the docs' examples,
# the top-level examples (user-style code, never installed).
CODE_FOLDERS = ("src", "machine", "properties", "explorer", "reports", "cli", "frameworks", "harness", "specs", "tests",
                "bench", "docs", "scripts", "examples")


def _ruff(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ruff", *args, "--no-cache"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def test_ruff_check_passes():
    ran = _ruff("check")
    assert ran.returncode == 0, f"ruff check failed (fix it, or see pyproject.toml [tool.ruff]):\n{ran.stdout}{ran.stderr}"


def test_ruff_checks_every_python_file_of_the_code_folders():
    """No folder is left out of the lint by an `exclude` or a narrowed `include`."""
    ran = _ruff("check", "--show-files")
    assert ran.returncode == 0, ran.stderr
    checked = {Path(line).resolve() for line in ran.stdout.splitlines()}
    ours = {p for folder in CODE_FOLDERS for p in (ROOT / folder).rglob("*.py") if "__pycache__" not in p.parts}
    assert {p.relative_to(ROOT).parts[0] for p in ours} >= {"src", "machine", "properties", "explorer", "reports", "cli",
                                                             "frameworks", "harness", "specs", "tests", "bench", "docs",
                                                             "examples"}
    assert ours - checked == set()


def test_the_test_command_runs_ruff_before_pytest_and_stops_on_a_finding():
    script = (ROOT / "scripts" / "test").read_text()
    assert "set -euo pipefail" in script                  # a failing `ruff check` ends the script
    lint = script.index("\npython -m ruff check\n")
    assert lint > script.index("pip install --quiet '.[test]'")
    assert lint < script.index("\npython -m pytest -q ")
