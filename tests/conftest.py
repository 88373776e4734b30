"""Shared helpers: where the repo's specs are, and running the CLI in-process."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import pytest

from haltproof.cli.main import main
from report_schema import BROKEN, REPORT, validate_outputs, watch_reports

watch_reports()     # before any test module imports to_json: every report built is validated

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
SPECS = ROOT / "specs"
LOOP_DEMO = SPECS / "loop_demo.yaml"
MUTANTS = SPECS / "mutants"

# The test files live in one folder per layer (tests/machine/, tests/explorer/, ...) and import
# each other by bare name (`from test_binding import bound_copy`), as they import the shared
# helpers here in tests/: every layer folder is on sys.path, whichever folder pytest was given.
# Basenames are unique across the folders (there is no __init__.py; tests/project/test_layout.py
# checks). TEST_PATH is the same path for a subprocess's PYTHONPATH.
LAYERS = sorted(p for p in TESTS.iterdir() if p.is_dir() and any(p.glob("test_*.py")))
TEST_PATH = os.pathsep.join(str(p) for p in [TESTS, *LAYERS])
sys.path.extend(str(p) for p in LAYERS if str(p) not in sys.path)


class Ran:
    def __init__(self, code: int, out: str, err: str):
        self.code, self.out, self.err = code, out, err

    def json(self) -> dict:
        return json.loads(self.out)


@pytest.fixture
def cli(capsys):
    """Run `haltproof ARGS...` in-process; returns exit code, stdout and stderr. The reports it
    writes are validated against the report schema (tests/report_schema.py)."""
    def run(*args: str) -> Ran:
        argv = [str(a) for a in args]
        code = main(argv)
        captured = capsys.readouterr()
        validate_outputs(argv, code, captured.out)
        return Ran(code, captured.out, captured.err)
    return run


@pytest.fixture(autouse=True)
def reports_follow_the_schema():
    """Fail a test whose reports break the schema of haltproof-report/1 (tests/report_schema.py)."""
    BROKEN.clear()
    yield
    assert not BROKEN, f"a report breaks {REPORT}'s schema (src/haltproof/report.schema.json):\n" + "\n".join(BROKEN)


@pytest.fixture(autouse=True)
def one_worker_by_default(monkeypatch):
    """`haltproof check` without -j checks in every core's process; in-process tests keep to
    this one, so what they patch in haltproof is what runs. tests/explorer/test_parallel.py passes -j."""
    import haltproof.explorer.parallel
    monkeypatch.setattr(haltproof.explorer.parallel, "default_workers", lambda: 1)


# Fixtures shared by several test files come in as plugins, not as imports: ci_reports
# (`workdir`, `validator`), spec_checks (`check`).
pytest_plugins = ["pytester", "ci_reports", "spec_checks"]


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """Say loudly when tests were skipped because a system tool (Chromium, Graphviz) is missing:
    a quiet `s` in the progress line is easy to miss, and those tests guard real outputs."""
    missing = []
    for report in terminalreporter.stats.get("skipped", []):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        if "not installed" in reason:
            missing.append(f"{report.nodeid}: {reason.removeprefix('Skipped: ')}")
    if missing:
        terminalreporter.section("SKIPPED: system tools missing", sep="#", red=True, bold=True)
        for line in missing:
            terminalreporter.write_line(line)
        terminalreporter.write_line("scripts/test installs them with apt-get where it can.")


SLOW_SPECS = {"budget_runner.yaml", "gate_chain.yaml"}     # seconds each on every engine


def verdict_specs(paths: list[Path]) -> list:
    """`paths` as parameters, each marked `verdict` (the per-mutant selection of
    docs/explanation/mutation-testing.md) unless it is one of the slow specs, which are marked `slow`."""
    return [pytest.param(p, marks=pytest.mark.slow if p.name in SLOW_SPECS else pytest.mark.verdict)
            for p in paths]


def repo_specs(paths: list[Path]) -> list:
    """`paths` as parameters, the slow specs marked `slow` (`scripts/test -m "not slow"` leaves them out)."""
    return [pytest.param(p, marks=pytest.mark.slow if p.name in SLOW_SPECS else ()) for p in paths]


def sweeps_seed_systems(command: str) -> bool:
    """Whether a documented `haltproof check`/`conform` command explores every bundled spec (no
    path, or the specs folder) or a whole slow spec (no `-p` pins): tens of seconds each."""
    words = shlex.split(command.split("&&")[-1])
    if words[:2] not in (["haltproof", "check"], ["haltproof", "conform"]) or "-p" in words:
        return False
    return len(words) == 2 or any(w.rstrip("/") == "specs" or Path(w).name in SLOW_SPECS for w in words[2:])


def doc_commands(cases: list) -> list:
    """A doc's commands (each a command line, or a tuple starting with one) as parameters, the
    ones that sweep the seed systems marked `slow`."""
    out = []
    for case in cases:
        values = (case,) if isinstance(case, str) else tuple(case)
        out.append(pytest.param(*values, marks=pytest.mark.slow if sweeps_seed_systems(values[0]) else ()))
    return out
