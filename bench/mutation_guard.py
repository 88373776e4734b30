"""A pytest plugin for the mutation runs only (`python -m bench.mutation` loads it with `-p`):
a test that burns more than a fixed budget of CPU seconds ends the mutant's process with
mutmut's exit code for a timeout.

Why: mutmut 3.8 limits a mutant by its whole test run, `(estimated + timeout_constant) *
timeout_multiplier * 2` CPU seconds (with the defaults, 30 times the summed duration of every
test that reaches the mutated function, plus 30 s) and half that in wall seconds. A mutant
that makes a loop endless hangs in the first test that reaches it and burns the whole limit:
for `properties/termination.py` (163 tests, about 6 s) that is about 200 CPU seconds or 100
wall seconds per such mutant, hours for a module. The pool's tests take a second or less but
for a few (the slowest about 20 CPU seconds installed, three times that in the staged tree,
whose modules carry every mutant's code), so a test that has used this budget is stuck; ending
it at once gives the same verdict ("timeout", which counts as killed) in two minutes at most.
The budget is CPU time of this process (ITIMER_PROF), not wall time, so a busy shared machine
does not make a slow but finishing mutant look stuck.

It also forgets, after each test, the modules the test imported from the temporary
directory (a model or adapter it wrote to `tmp_path`). mutmut runs the whole selection
twice in one process (once to record which tests reach which function, once clean) and
forks every mutant's run from it, so a test that writes `tmp_path/bad_init_model.py` and
imports `bad_init_model` would get the first run's module back, whose file pytest (or
another pytest on the machine) may have deleted since: its messages then lose their file
and line, and the clean run fails ("Failed to run clean test").
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
from collections.abc import Generator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

TIMEOUT_EXIT = 36                 # mutmut's exit code for "timeout" (mutmut.stats.status_by_exit_code)
BUDGET_VAR = "HALTPROOF_MUTANT_TEST_CPU"
DEFAULT_BUDGET = 120.0            # CPU seconds per test; the slowest of the pool takes about 20 installed, 3x more staged


def budget() -> float:
    """The CPU seconds one test may use: $HALTPROOF_MUTANT_TEST_CPU, else DEFAULT_BUDGET."""
    text = os.environ.get(BUDGET_VAR)
    if text is None:
        return DEFAULT_BUDGET
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < 86_400:
        raise pytest.UsageError(f"{BUDGET_VAR} must be a number of CPU seconds in (0, 86400), got {text!r}")
    return value


def _stuck(item: pytest.Item, seconds: float) -> Any:
    def on_prof(signum: int, frame: FrameType | None) -> None:
        capture = item.config.pluginmanager.get_plugin("capturemanager")
        if capture is not None:          # say so on the real stderr, not into the captured output
            capture.suspend_global_capture(in_=False)
        sys.stderr.write(f"mutation guard: {item.nodeid} used {seconds:g} CPU seconds: stuck, "
                         f"exit {TIMEOUT_EXIT} (timeout)\n")
        sys.stderr.flush()
        os._exit(TIMEOUT_EXIT)      # no cleanup: the mutant's process is forked for this run only
    return on_prof


RECORDING = "stats"          # mutmut's MUTANT_UNDER_TEST while it records which tests reach which function


def pytest_configure(config: pytest.Config) -> None:
    """While mutmut records, the processes the tests start (`-j` workers, `haltproof` run as a
    command) run the unmutated code without recording. A recording trampoline reads mutmut's
    configuration from the working folder, which in such a process is often the test's tmp_path:
    it died at its first import of haltproof (and `-j` then started its pool again for ever).
    What a child records never reaches this process anyway. So the variable leaves this process's
    environment, which the children inherit; this process goes on recording through mutmut's own
    copy of the value (`set_mutant_under_test`, which its trampolines fall back to). A mutant
    under test is left as it is: the children run it, as before."""
    if os.environ.get("MUTANT_UNDER_TEST") == RECORDING:
        del os.environ["MUTANT_UNDER_TEST"]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    """Arm the CPU timer for one test (setup, call and teardown), and disarm it after."""
    seconds = budget()
    imported = set(sys.modules)
    previous = signal.signal(signal.SIGPROF, _stuck(item, seconds))
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)
        forget_temporary_modules(imported, item.config.rootpath)


def forget_temporary_modules(before: set[str], root: Path) -> list[str]:
    """Drop from sys.modules what was imported since `before` from the temporary directory
    (outside `root`, the tree under test); returns the names dropped. A test's own modules
    in tmp_path are imported afresh by the next run, as in a fresh process."""
    temp = Path(tempfile.gettempdir()).resolve()
    dropped = []
    for name in set(sys.modules) - before:
        file = getattr(sys.modules[name], "__file__", None)
        if file is None:
            continue
        where = Path(file).resolve()
        if where.is_relative_to(temp) and not where.is_relative_to(root.resolve()):
            del sys.modules[name]
            dropped.append(name)
    return sorted(dropped)
