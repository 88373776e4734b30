"""bench/mutation_guard.py, the pytest plugin of the mutation runs: a test stuck in a loop a
mutant made endless ends the mutant's run at once with mutmut's exit code for a timeout,
and every other test runs as before. Without it such a mutant burns mutmut's whole limit
(minutes each: why the termination.py run of issue 18 could not finish)."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import ROOT

if str(ROOT) not in sys.path:  # bench/ is not installed: it runs from the repo root
    sys.path.insert(0, str(ROOT))

from bench import mutation, mutation_guard

TESTS = """\
def test_finishes():
    assert sum(range(1000)) == 499500

def test_spins():
    while True:
        pass
"""


def _pytest(tmp_path: Path, selected: str, budget: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_guarded.py").write_text(TESTS)
    env = {**os.environ, mutation_guard.BUDGET_VAR: budget, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "bench.mutation_guard",
                           f"test_guarded.py::{selected}"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_a_test_that_spins_past_its_cpu_budget_ends_the_run_as_a_timeout(tmp_path):
    ran = _pytest(tmp_path, "test_spins", "0.3")
    assert ran.returncode == mutation_guard.TIMEOUT_EXIT == 36
    assert "mutation guard: test_guarded.py::test_spins used 0.3 CPU seconds: stuck, exit 36 (timeout)" in ran.stderr


def test_a_test_within_its_budget_runs_as_before(tmp_path):
    ran = _pytest(tmp_path, "test_finishes", "5")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "1 passed" in ran.stdout


@pytest.mark.parametrize("budget", ["0", "inf", "soon"])
def test_a_budget_that_is_not_a_positive_number_is_refused(tmp_path, budget):
    ran = _pytest(tmp_path, "test_finishes", budget)
    assert ran.returncode == 4                   # pytest's usage error
    assert f"HALTPROOF_MUTANT_TEST_CPU must be a number of CPU seconds in (0, 86400), got {budget!r}" in ran.stderr


def test_the_staged_configuration_loads_the_guard():
    text = (ROOT / "pyproject.toml").read_text()
    staged = tomllib.loads(mutation._with_guard(text))["tool"]["mutmut"]["pytest_add_cli_args"]
    assert staged == ["-p", "no:cacheprovider", "-p", "bench.mutation_guard"]
    with pytest.raises(SystemExit, match="no longer has"):
        mutation._with_guard(text.replace('pytest_add_cli_args = ["-p", "no:cacheprovider"]', ""))


def test_the_stage_holds_every_subpackage_of_the_installed_layout():
    """A subpackage left out of the staged tree would be imported from the checkout through
    the editable install: the mutants would then run against whatever the checkout holds."""
    folders = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    assert {f"src/{name.replace('.', '/')}": folder for name, folder in folders.items()} == mutation.STAGED


def test_every_run_measures_again_which_tests_reach_which_function(tmp_path, monkeypatch):
    """mutmut keeps that record across source changes and refreshes it only for new tests:
    a function added or moved since would have no test at all."""
    monkeypatch.setattr(mutation, "STAGE", tmp_path)
    stats = tmp_path / "mutants" / "mutmut-stats.json"
    stats.parent.mkdir()
    stats.write_text("{}")
    mutation.forget_stats()
    assert not stats.exists()
    mutation.forget_stats()             # nothing to forget: no error


TWICE = """\
import importlib

def _load(tmp_path, value):
    (tmp_path / "written_model.py").write_text(f"VALUE = {value}\\n")
    import sys
    sys.path.insert(0, str(tmp_path))
    try:
        return importlib.import_module("written_model").VALUE
    finally:
        sys.path.remove(str(tmp_path))

def test_first(tmp_path):
    assert _load(tmp_path, 1) == 1

def test_second(tmp_path):
    assert _load(tmp_path, 2) == 2
"""


def test_a_module_a_test_writes_to_tmp_path_is_imported_afresh_by_the_next_test(tmp_path):
    """mutmut runs the selection twice in one process and forks each mutant from it: a test
    that writes and imports a module of a fixed name must not get an earlier run's module
    (from a tmp_path that may be gone) back."""
    (tmp_path / "test_twice.py").write_text(TWICE)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "bench.mutation_guard",
                          "test_twice.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "2 passed" in ran.stdout


def test_only_the_modules_imported_from_the_temporary_directory_are_forgotten(tmp_path, monkeypatch):
    before = set(sys.modules)
    (tmp_path / "scratch_module_of_a_test.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import scratch_module_of_a_test  # noqa: F401
    assert mutation_guard.forget_temporary_modules(before, ROOT) == ["scratch_module_of_a_test"]
    assert "scratch_module_of_a_test" not in sys.modules


SPAWNS = """\
import multiprocessing, os, subprocess, sys

def said(queue):
    queue.put(os.environ.get("MUTANT_UNDER_TEST"))

def test_spawns(tmp_path):
    os.chdir(tmp_path)          # as the doc tests do: mutmut's configuration is not found from here
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.SimpleQueue()
    child = ctx.Process(target=said, args=(queue,))
    child.start()
    child.join(60)
    command = subprocess.run([sys.executable, "-c", "import os; print(os.environ.get('MUTANT_UNDER_TEST'))"],
                             env={**os.environ}, capture_output=True, text=True).stdout.strip()
    print(f"spawned {queue.get()!r} command {command!r}")
"""


@pytest.mark.parametrize("under_test,children_see", [("stats", "None"), ("haltproof.machine.spec.x_f__mutmut_1",
                                                                       "'haltproof.machine.spec.x_f__mutmut_1'")])
def test_the_processes_a_test_starts_while_mutmut_records_run_unrecorded(tmp_path, under_test, children_see):
    """mutmut's recording run (MUTANT_UNDER_TEST=stats) reads its configuration from the working
    folder at a trampoline's first call: a worker spawned from a test's tmp_path died at its first
    import of haltproof, and `-j` started its pool again for ever (the recording never finished).
    With the guard, neither a spawned process nor a command sees the variable while mutmut
    records; a mutant under test still reaches both."""
    (tmp_path / "test_spawning.py").write_text(SPAWNS)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MUTANT_UNDER_TEST": under_test}
    ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
                          "-p", "bench.mutation_guard", "test_spawning.py"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stdout[-2000:]
    shown = "'None'" if children_see == "None" else children_see
    assert f"spawned {children_see} command {shown}" in ran.stdout


def test_this_process_goes_on_recording_without_the_variable(monkeypatch):
    """The recording process keeps recording: mutmut's trampolines fall back to the value mutmut
    set in the process (`set_mutant_under_test`) when the variable is gone. Needs mutmut (the
    `mutation` extra)."""
    trampoline = pytest.importorskip("mutmut.mutation.trampoline")
    monkeypatch.setattr(trampoline, "_mutant_under_test", None)
    monkeypatch.setenv("MUTANT_UNDER_TEST", "")
    trampoline.set_mutant_under_test(mutation_guard.RECORDING)
    mutation_guard.pytest_configure(None)      # type: ignore[arg-type]
    assert "MUTANT_UNDER_TEST" not in os.environ
    assert trampoline.get_mutant_under_test() == mutation_guard.RECORDING
