"""`-j N`: a sweep's runs checked in worker processes give the serial report (explorer/parallel.py).

Each comparison is of the whole JSON report with the timing keys removed: the same runs in
the same order with the same figures, traces and messages. The workers are spawned
processes, so these tests take a few seconds each.
"""

from __future__ import annotations

from concurrent import futures as cf
from dataclasses import replace
import json
import multiprocessing
import os
import pickle
import re
import shutil
import subprocess
from pathlib import Path
import sys
import time
import types
from typing import Any

import pytest

from haltproof.api import check
from haltproof.explorer import parallel
from haltproof.explorer.check import check_machine, prepare
from haltproof.explorer.options import Options
from haltproof.explorer.parallel import MAX_ATTEMPTS
from haltproof.explorer.results import RunResult
from haltproof.machine.spec import load_spec
from haltproof.reports.graph import build_graph
from haltproof.reports.report import to_json

from conftest import LOOP_DEMO, MUTANTS, ROOT, SPECS
from test_binding import bound_copy

TIMING = {"seconds"}     # what may differ between two checks of the same runs


def untimed(data: Any) -> Any:
    """A report without its timings."""
    if isinstance(data, dict):
        return {k: untimed(v) for k, v in data.items() if k not in TIMING}
    if isinstance(data, list):
        return [untimed(v) for v in data]
    return data


def bound_to(tmp_path: Path, ref: str) -> Path:
    """loop_demo bound to `ref` (tests/dying_adapters.py) instead of the shipped harness."""
    text = LOOP_DEMO.read_text(encoding="utf-8")
    spec = tmp_path / "loop_demo.yaml"
    spec.write_text(text.replace("bind: haltproof.harness.loop_binding:LoopDemoAdapter", f"bind: {ref}"),
                    encoding="utf-8")
    return spec


def test_mutants_j2_give_the_serial_report(cli):
    """Several specs of a directory, each a sweep, violated as they expect: one report."""
    one = cli("check", MUTANTS, "-j", "1", "--format", "json")
    two = cli("check", MUTANTS, "-j", "2", "--format", "json")
    assert one.code == two.code == 0
    assert len(one.json()["runs"]) == 41
    assert untimed(two.json()) == untimed(one.json())


@pytest.mark.slow
def test_bundled_specs_j2_give_the_serial_report(cli):
    """The issue's test: `haltproof check specs -j 2 --format json` equals `-j 1`, bound code included."""
    one = cli("check", SPECS, "-j", "1", "--format", "json")
    two = cli("check", SPECS, "-j", "2", "--format", "json")
    assert one.code == two.code == 0
    assert len(one.json()["runs"]) == 107
    assert untimed(two.json()) == untimed(one.json())


def test_a_killed_worker_loses_nothing(cli, tmp_path, monkeypatch):
    """The worker checking max_steps=3 is killed once (SIGKILL): that run is checked again and
    the report is the serial one."""
    marker = tmp_path / "died"
    monkeypatch.setenv("HALTPROOF_TEST_MARKER", str(marker))
    spec = bound_to(tmp_path, "dying_adapters:DiesOnce")
    two = cli("check", spec, "-j", "2", "--format", "json")
    assert marker.exists(), "the worker was not killed: the test proves nothing"
    one = cli("check", spec, "-j", "1", "--format", "json")
    assert one.code == two.code == 0
    assert [r["params"]["max_steps"] for r in two.json()["runs"]] == [1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    assert untimed(two.json()) == untimed(one.json())


def test_a_run_that_kills_every_worker_is_incomplete_and_the_rest_complete(cli, tmp_path):
    """A combination whose code kills its worker every time is tried MAX_ATTEMPTS times, then
    reported incomplete (exit 3) with why; every other run is checked in full."""
    spec = bound_to(tmp_path, "dying_adapters:DiesAlways")
    ran = cli("check", spec, "-j", "2", "--format", "json")
    assert ran.code == 3
    runs = ran.json()["runs"]
    assert len(runs) == 10
    lost = [r for r in runs if r["params"]["max_steps"] == 3]
    assert [r["result"] for r in lost] == ["incomplete", "incomplete"]
    assert {r["stopped_by"] for r in lost} == {"workers_lost"}
    assert {r["stop_reason"] for r in lost} == {
        f"not checked: the worker process checking it died {MAX_ATTEMPTS} times"}
    assert {p["status"] for r in lost for p in r["properties"]} == {"unknown"}
    serial = [r for r in cli("check", spec, "-j", "1", "--format", "json").json()["runs"]
              if r["params"]["max_steps"] == 3]        # in this process the code does not die
    assert [[(p["name"], p["kind"]) for p in r["properties"]] for r in lost] == \
        [[(p["name"], p["kind"]) for p in r["properties"]] for r in serial]
    assert [r["result"] for r in runs if r["params"]["max_steps"] != 3] == ["proved"] * 8
    text = cli("check", spec, "-j", "2")
    assert text.code == 3
    assert text.out.count("incomplete (stopped at lost workers)") == 3     # the two run lines, their findings once
    assert "the same findings in 1 more run: max_steps=3 max_retries=1" in text.out
    assert text.out.count(f"not checked: the worker process checking it died {MAX_ATTEMPTS} times") == 1


# Installed beside a spawned worker (PYTHONPATH): the worker cannot import haltproof's pool code,
# so it dies as it starts, before it takes a run (as a worker of the mutation pool's recording
# run did, its mutmut unable to find its configuration from the test's working folder).
REFUSES_THE_POOL = """\
import sys
if "--multiprocessing-fork" in sys.argv:
    class _Refuse:
        def find_spec(self, name, path=None, target=None):
            if name == "haltproof.explorer.parallel":
                raise ImportError("this worker cannot import haltproof")
    sys.meta_path.insert(0, _Refuse())
"""


@pytest.mark.verdict
def test_workers_that_die_as_they_start_leave_the_runs_incomplete_rather_than_retried_for_ever(tmp_path):
    """A pool that broke before any worker took a run charged no run for it, and the same round
    was tried again for ever: a hang. Every run is now charged, and after MAX_ATTEMPTS such
    rounds each is incomplete (exit 3) with why; the workers' own tracebacks are on stderr.
    In a process of its own: a hang shows as TimeoutExpired, not as a stuck suite."""
    (tmp_path / "sitecustomize.py").write_text(REFUSES_THE_POOL)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    ran = subprocess.run([sys.executable, "-m", "haltproof.cli.main", "check", str(LOOP_DEMO), "-j", "2",
                          "-p", "max_steps=2", "--format", "json"], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=120)
    assert ran.returncode == 3, ran.stderr[-2000:]
    runs = json.loads(ran.stdout)["runs"]
    assert [(r["params"], r["result"], r["stopped_by"]) for r in runs] == [
        ({"max_steps": 2, "max_retries": 0}, "incomplete", "workers_lost"),
        ({"max_steps": 2, "max_retries": 1}, "incomplete", "workers_lost")]
    assert {r["stop_reason"] for r in runs} == {
        f"not checked: the worker processes died {MAX_ATTEMPTS} times before taking a run (what they said is on "
        "stderr)"}
    assert "ImportError: this worker cannot import haltproof" in ran.stderr


def test_a_user_error_met_in_a_worker_exits_2_with_its_message(cli, tmp_path):
    """A SpecError raised in a worker reaches the user as it would from this process."""
    spec = bound_to(tmp_path, "dying_adapters:FailsInWorkers")
    ran = cli("check", spec, "-j", "2")
    assert ran.code == 2
    assert ran.out == ""
    assert ran.err.strip() == (f"error: {spec}:22: cannot create the adapter: RuntimeError: no adapter in a "
                               "worker process: 'dying_adapters:FailsInWorkers'")


def test_api_workers_keep_the_graphs_for_the_html_report():
    """check(workers=2) keeps each small run's explored graph, as drawn from one process."""
    one, two = check(LOOP_DEMO, workers=1), check(LOOP_DEMO, workers=2)
    assert untimed(two.to_json()) == untimed(one.to_json())
    graphs = [[build_graph(r._exploration) if r._exploration is not None else None for r in rep.runs]
              for rep in (one, two)]
    assert sum(g is not None for g in graphs[0]) == 8
    assert graphs[1] == graphs[0]
    assert [r._spec for r in two.runs] == [two.runs[0]._spec] * 10


@pytest.mark.parametrize("given", ["0", "-1", "x", "1025"])
def test_bad_worker_counts_are_usage_errors(cli, given):
    ran = cli("check", LOOP_DEMO, "-j", given)
    assert ran.code == 2
    assert re.search(r"--workers", ran.err)


def test_options_refuse_bad_worker_counts():
    with pytest.raises(ValueError, match="workers must be"):
        Options(workers=0)
    with pytest.raises(ValueError, match="workers must be"):
        Options(workers=True)


def test_spec_errors_travel_between_processes():
    import pickle
    from haltproof.machine.errors import Problem, SpecError
    err = SpecError([Problem("a.yaml", 3, "bad", "x")])
    back = pickle.loads(pickle.dumps(err))
    assert back.problems == err.problems and str(back) == str(err)


def test_a_copied_spec_dir_is_checked_from_its_own_path(cli, tmp_path):
    """Workers load a spec by the path the report shows, relative paths included."""
    shutil.copy(LOOP_DEMO, tmp_path / "loop_demo.yaml")
    ran = cli("check", tmp_path, "-j", "2", "--model", "--format", "json")
    assert ran.code == 0
    assert {r["spec"] for r in ran.json()["runs"]} == {str(tmp_path / "loop_demo.yaml")}


SCALING_DOC = (ROOT / "docs" / "how-to" / "scaling.md").read_text(encoding="utf-8")


def _scaling_commands() -> list[str]:
    return [line.split("  #")[0].strip() for block in re.findall(r"```bash\n(.*?)```", SCALING_DOC, re.S)
            for line in block.splitlines() if line.startswith("haltproof ")]


def test_the_scaling_page_is_linked_and_its_commands_run(cli, monkeypatch):
    assert "(docs/how-to/scaling.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
    commands = _scaling_commands()
    assert commands == ["haltproof check specs/loop_demo.yaml -j 2", "haltproof check specs/loop_demo.yaml -j 1",
                        "haltproof check specs/budget_runner.yaml -p K=8 -p R=2 -j 2"]
    monkeypatch.chdir(ROOT)
    outs = []
    for command in commands:
        ran = cli(*command.split()[1:])
        assert ran.code == 0, (command, ran.err)
        outs.append(re.sub(r"\d+\.\d\d s", "0.00 s", ran.out))
    assert outs[0] == outs[1]
    assert outs[2].startswith("proved  specs/budget_runner.yaml [budget_runner] K=8 R=2: 2,107 states, ")


def test_a_deadline_that_passes_while_a_worker_imports_the_code_makes_the_run_incomplete(tmp_path):
    """The whole check's --timeout bounds a worker's own import of the bound code too: the run
    comes back incomplete (stopped_by timeout) and says why, it does not end the check."""
    import pickle
    import time

    from haltproof.explorer.parallel import Job, Source, restore, run_job
    from haltproof.machine.spec import load_spec
    from haltproof.explorer.check import prepare
    import dying_adapters    # imported here first: the deadline is to pass in the adapter's creation
    assert dying_adapters.SlowToCreate
    spec = bound_to(tmp_path, "dying_adapters:SlowToCreate")
    params = {"max_steps": 1, "max_retries": 0}
    options = Options(pins=params, timeout=60)
    blob = run_job(Job(0, Source(path=str(spec)), params, options, time.time() + 1.0))
    assert pickle.loads(blob) == ("late", "creating the adapter dying_adapters:SlowToCreate")
    (m,) = prepare(load_spec(LOOP_DEMO), Options(pins=params))
    r = restore(blob, m, options)
    assert (r.result, r.stopped_by, r.params) == ("incomplete", "timeout", params)
    assert r.stop_reason == ("not checked: the --timeout passed while creating the adapter "
                             "dying_adapters:SlowToCreate in the worker process, before the run started")


TINY = """machine: tiny
params:
  a: {min: 1, max: 25}
  b: {min: 1, max: 20}
vars:
  x: {type: int, min: 0, max: 1, init: 0}
actions:
  go:
    when: x == 0
    do:
      - set:
          x: 1
terminal: x == 1
"""

# Runs `haltproof check SPEC -j 2` with the pipe the workers report their runs on shrunk to one
# page (about 340 reports), so a sweep of 500 runs fills it unless the parent reads as it goes.
SMALL_PIPE = """
import fcntl, sys
from haltproof.cli.main import main
from haltproof.explorer import parallel

made = parallel.LocalPool.__init__

def small_pipes(self, workers):
    made(self, workers)
    queue = self.context.SimpleQueue

    def shrunk():
        q = queue()
        fcntl.fcntl(q._writer.fileno(), fcntl.F_SETPIPE_SZ, 4096)
        return q
    self.context.SimpleQueue = shrunk

parallel.LocalPool.__init__ = small_pipes
sys.exit(main(["check", sys.argv[1], "-j", "2", "--quiet"]))
"""


@pytest.mark.slow
def test_a_sweep_of_more_runs_than_the_start_pipe_holds_ends(tmp_path):
    """The workers say which run they take on a pipe; the parent must drain it while it waits,
    or a long sweep stops with every worker blocked (it did, past about 5,000 runs)."""
    import subprocess
    import sys
    spec = tmp_path / "tiny.yaml"
    spec.write_text(TINY, encoding="utf-8")
    ran = subprocess.run([sys.executable, "-c", SMALL_PIPE, str(spec)], capture_output=True, text=True,
                         timeout=300, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "500 runs: 500 proved, 0 violated as expected, 0 failed, 0 incomplete -> proved\n"


def test_the_examples_j2_give_the_serial_report(cli, monkeypatch):
    """The async agent loop bound live (its adapter imported from the working directory, in each
    worker too) and the docs' example specs."""
    monkeypatch.chdir(ROOT / "examples" / "agent_loop")
    one = cli("check", "agent.yaml", ROOT / "docs" / "examples", "-j", "1", "--format", "json")
    two = cli("check", "agent.yaml", ROOT / "docs" / "examples", "-j", "2", "--format", "json")
    assert one.code == two.code == 1, two.err[-800:]        # a docs example shows a violation on purpose
    ran = {Path(r["spec"]).name for r in one.json()["runs"]}
    assert ran == {"agent.yaml"} | {p.name for p in (ROOT / "docs" / "examples").glob("*.yaml")}
    assert untimed(two.json()) == untimed(one.json())


def test_framework_declarations_j2_give_the_serial_report(cli):
    """A declaration's spec carries its adapter factory (a closure): the run comes back from a
    worker without it, the parent's own spec put back (it was an exit 4, 'Can't pickle')."""
    folder = ROOT / "examples" / "frameworks" / "langgraph"
    one = cli("check", folder / "react.yaml", folder / "supervisor.yaml", "-j", "1", "--format", "json")
    two = cli("check", folder / "react.yaml", folder / "supervisor.yaml", "-j", "2", "--format", "json")
    assert one.code == two.code == 0, (one.code, two.code, two.err[-500:])
    assert untimed(two.json()) == untimed(one.json())


# ---------------------------------------------------------------- mutants that survived (issue 18)
# Mutants of explorer/parallel.py that no verdict test reached (issue 18): a run rebuilt and
# checked by a worker's own function and put back in the parent, the runs a dead worker leaves
# (reported lost, never dropped, after exactly MAX_ATTEMPTS deaths), one run's levels shared out
# and the workers' outcomes taken in serial order. Each test was seen failing with its mutation
# applied (docs/explanation/mutation-testing.md).
#
# They stay fast: the workers' functions run in this process where they can (`run_job`,
# `expand_slice` by slices run here), and where a pool is the subject (`LocalPool`,
# `LocalSlices`) its processes are forked from this one instead of spawned — the same pool code,
# without a second import of haltproof per worker; the spawned pools are the tests above and
# test_parallel_bound.py's. A forked worker runs the mutated code too (mutmut switches a mutant on
# by an environment variable the child inherits).
# (These tests were test_parallel_kills.)

TESTS = Path(__file__).resolve().parent.parent
DEFAULT_WORKERS = parallel.default_workers     # conftest's one_worker_by_default replaces it in every test

SMALL = """\
machine: small
params:
  top: {min: 1, max: 3}
vars:
  x: {type: int, min: 0, max: 3, init: 0}
  done: {type: bool, init: false}
actions:
  inc:
    when: x < top and not done
    do:
      - set: {x: x + 1}
  stop:
    when: not done
    do:
      - set: {done: true}
terminal: done
properties:
  bounded:
    always: x <= top
  never_three:
    absence: x == 3
"""


def small_spec(tmp_path: Path) -> Path:
    path = tmp_path / "small.yaml"
    path.write_text(SMALL, encoding="utf-8")
    return path


def json_of(runs: list[RunResult]) -> Any:
    return untimed(to_json(runs))


def forked(pool: Any, spec: Path) -> Any:
    """A LocalPool or LocalSlices whose workers are forked from this process (see the docstring),
    each with `spec` loaded and compiled already (inherited: what a spawned worker does first)."""
    parallel._compiled(str(spec), True)
    pool.context = multiprocessing.get_context("fork")
    return pool


@pytest.fixture
def workers_see_the_tests(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test adapters importable by name, and no worker state of an earlier test left behind."""
    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.setattr(parallel, "_SPECS", {})
    monkeypatch.setattr(parallel, "_EXPANDING", {})
    monkeypatch.setattr(parallel, "_LINE", None)


@pytest.mark.verdict
def test_the_default_worker_count_is_one_when_the_cores_cannot_be_counted(monkeypatch):
    monkeypatch.setattr(parallel.os, "cpu_count", lambda: None)
    assert DEFAULT_WORKERS() == 1
    monkeypatch.setattr(parallel.os, "cpu_count", lambda: 6)
    assert DEFAULT_WORKERS() == 6


@pytest.mark.verdict
def test_a_worker_loads_and_compiles_each_spec_once(tmp_path, workers_see_the_tests):
    path = str(small_spec(tmp_path))
    spec, compiled = parallel._compiled(path, True)
    assert compiled.spec is spec and spec.name == "small"
    assert parallel._compiled(path, True)[1] is compiled
    assert parallel._compiled(path, False)[1] is not compiled     # --no-code compiles its own


@pytest.mark.verdict
def test_the_jobs_of_a_batch_carry_each_run_alone_in_serial_order(tmp_path):
    path = small_spec(tmp_path)
    options = Options(pins={"top": [1, 2]}, workers=2)
    machines = prepare(load_spec(path), options)
    jobs, ms = parallel.jobs_of([parallel.Batch(parallel.Source(path=str(path)), machines, options)])
    assert ms == machines
    assert [(j.index, j.params, j.options.pins, j.options.workers, j.end) for j in jobs] == [
        (0, {"top": 1}, {"top": 1}, 1, None), (1, {"top": 2}, {"top": 2}, 1, None)]


@pytest.mark.verdict
def test_the_jobs_of_a_batch_carry_the_checks_deadline_as_a_wall_clock_time(tmp_path, monkeypatch):
    """30 seconds left of the check at wall-clock time 1000: every job ends at 1030 (a worker's clock
    is the wall clock, not this process's monotonic one)."""
    path = small_spec(tmp_path)
    options = Options(pins={"top": [1, 2]}, workers=2)
    machines = prepare(load_spec(path), options)
    monkeypatch.setattr(parallel, "usercode", types.SimpleNamespace(remaining=lambda: 30.0))
    monkeypatch.setattr(parallel, "time", types.SimpleNamespace(time=lambda: 1000.0, monotonic=time.monotonic))
    jobs, _ = parallel.jobs_of([parallel.Batch(parallel.Source(path=str(path)), machines, options)])
    assert [(j.index, j.end) for j in jobs] == [(0, 1030.0), (1, 1030.0)]


@pytest.mark.verdict
@pytest.mark.parametrize("engine", ["scalar", "vector"])
def test_a_run_checked_by_the_workers_function_comes_back_as_the_serial_run(tmp_path, workers_see_the_tests,
                                                                            engine):
    """run_job (here, in this process) then restore: the serial report, the explored graph kept and drawn
    with the parent's own machine (the vector engine's rebuilt to decode its states)."""
    path = small_spec(tmp_path)
    options = Options(pins={"top": 2}, engine=engine)
    (serial,) = [check_machine(m, options) for m in prepare(load_spec(path), options)]
    (m,) = prepare(load_spec(path), options)
    blob = parallel.run_job(parallel.Job(0, parallel.Source(path=str(path)), {"top": 2}, options, None))
    back = parallel.restore(blob, m, options)
    assert back._spec is m.spec and back.engine == engine
    assert json_of([back]) == json_of([serial])
    assert back._exploration is not None and back._exploration.machine is m
    assert build_graph(back._exploration) == build_graph(serial._exploration)


@pytest.mark.verdict
def test_a_result_travels_without_the_declarations_adapter_factory(tmp_path):
    path = small_spec(tmp_path)
    (m,) = prepare(load_spec(path), Options(pins={"top": 1}))
    r = check_machine(m, Options(pins={"top": 1}))
    r = replace(r, _spec=replace(r._spec, adapter=lambda: None))
    sent, cls, state = parallel._detached(r)
    assert sent._spec.adapter is None and sent._exploration is None
    assert cls is type(r._exploration) and state is not None
    assert [len(state[name]) for name in parallel.LAZY_COLUMNS] == [4, 4, 4, 3, 3, 3]   # 4 states, 3 transitions
    pickle.dumps((sent, cls, state))


@pytest.mark.verdict
@pytest.mark.parametrize("doing, why", [
    ("importing the model", "the --timeout passed while importing the model in the worker process, "
                            "before the run started"),
    (None, "the --timeout passed in the worker process, before the run started")])
def test_a_run_the_deadline_caught_in_a_worker_is_incomplete_and_says_why(tmp_path, doing, why):
    path = small_spec(tmp_path)
    options = Options(pins={"top": 1})
    (m,) = prepare(load_spec(path), options)
    r = parallel.restore(pickle.dumps(("late", doing)), m, options)
    assert (r.result, r.stopped_by, r.stop_reason) == ("incomplete", "timeout", f"not checked: {why}")
    assert r.stats == {"states": 0, "transitions": 0, "terminal_states": 0, "max_depth": 0, "seconds": 0.0}
    assert [(p.name, p.kind, p.status, p.message) for p in r.properties] == [
        ("domains", "builtin", "unknown", f"not decided: {why}"),
        ("well_defined", "builtin", "unknown", f"not decided: {why}"),
        ("bounded", "invariant", "unknown", f"not decided: {why}"),
        ("never_three", "absence", "unknown", f"not decided: {why}")]


@pytest.mark.verdict
def test_only_a_single_run_of_bound_code_has_its_levels_shared(tmp_path):
    bound = bound_copy(tmp_path, "haltproof.harness.loop_binding:LoopDemoAdapter")
    one = Options(pins={"max_steps": 2, "max_retries": 0})
    (m,) = prepare(load_spec(bound), one)
    source = parallel.Source(path=str(bound))
    assert parallel.shareable([parallel.Batch(source, [m], one)])
    assert not parallel.shareable([parallel.Batch(source, [m], replace(one, paths=2))])
    (plain,) = prepare(load_spec(small_spec(tmp_path)), Options(pins={"top": 1}))
    assert not parallel.shareable([parallel.Batch(source, [plain], one)])


class HereSlices(parallel.Slices):
    """Slices expanded in this process, as workers would (each slice pickled both ways); `lose`:
    the level (counted from 0) whose slices all come back lost instead; `warmed`: warm's calls."""

    def __init__(self, lose: int | None = None):
        self.levels = 0
        self.lose = lose
        self.warmed: list[tuple[parallel.Slice, int]] = []

    def run(self, slices: list[parallel.Slice]) -> list[parallel.SliceResult]:
        level, self.levels = self.levels, self.levels + 1
        if level == self.lose:
            return [("lost", "the worker expanding it went away", [])] * len(slices)
        return [pickle.loads(parallel.expand_slice(pickle.loads(pickle.dumps(sl)))) for sl in slices]

    def warm(self, empty: parallel.Slice, workers: int) -> Any:
        self.warmed.append((empty, workers))
        return lambda: True


def shared_and_serial(path: Path, pins: dict[str, int], slices: parallel.Slices) -> tuple[RunResult, RunResult]:
    options = Options(pins=pins, workers=2)
    (m,) = prepare(load_spec(path), options)
    shared = parallel.check_shared(parallel.Batch(parallel.Source(path=str(path)), [m], options), slices, 2)
    (m,) = prepare(load_spec(path), options)
    return shared, check_machine(m, options)


@pytest.fixture
def levels_shared(monkeypatch: pytest.MonkeyPatch, workers_see_the_tests: None) -> list[int]:
    """The size of each level handed to the workers, in order; every level shared unless a test
    sets SHARE_SECONDS back."""
    monkeypatch.setattr(parallel, "SHARE_SECONDS", 0.0)
    shared: list[int] = []
    share = parallel.LevelSharer.share

    def counted(self: parallel.LevelSharer, level: list[Any]) -> None:
        shared.append(len(level))
        share(self, level)
    monkeypatch.setattr(parallel.LevelSharer, "share", counted)
    return shared


@pytest.mark.verdict
def test_two_shared_checks_in_a_row_each_expand_their_own_run(tmp_path, levels_shared):
    """A worker (a Dask worker lives on) keeps the run it built under the check's token: the second
    check, another combination, must not be expanded by the first one's run."""
    bound = bound_copy(tmp_path, "haltproof.harness.loop_binding:LoopDemoAdapter")
    for steps, states in ((1, 42), (2, 77)):
        levels_shared.clear()
        shared, serial = shared_and_serial(bound, {"max_steps": steps, "max_retries": 0}, HereSlices())
        assert json_of([shared]) == json_of([serial])
        assert (shared.result, shared.stats["states"], sum(levels_shared)) == ("proved", states, states)


@pytest.mark.verdict
def test_levels_are_shared_once_the_run_has_gone_on_for_share_seconds(tmp_path, levels_shared, monkeypatch):
    """The first level starts the clock, the first level past SHARE_SECONDS warms the workers (with an
    empty slice of this check), and every level from the next one on is shared."""
    monkeypatch.setattr(parallel, "SHARE_SECONDS", 1.0)
    ticks = iter(range(0, 1000, 10))
    monkeypatch.setattr(parallel, "time", types.SimpleNamespace(monotonic=lambda: next(ticks), time=time.time))
    slices = HereSlices()
    shared, serial = shared_and_serial(bound_copy(tmp_path, "haltproof.harness.loop_binding:LoopDemoAdapter"),
                                       {"max_steps": 4, "max_retries": 0}, slices)
    assert json_of([shared]) == json_of([serial])
    ((empty, workers),) = slices.warmed
    assert (empty.states, workers, empty.job.params) == ([], 2, {"max_steps": 4, "max_retries": 0})
    assert shared.stats["max_depth"] == 4
    assert len(levels_shared) == 3      # levels 0 and 1 here, 2 to 4 shared


@pytest.mark.verdict
def test_a_level_whose_slices_were_lost_stops_the_run_there_incomplete(tmp_path, levels_shared):
    bound = bound_copy(tmp_path, "haltproof.harness.loop_binding:LoopDemoAdapter")
    shared, _ = shared_and_serial(bound, {"max_steps": 2, "max_retries": 0}, HereSlices(lose=1))
    assert (shared.result, shared.stopped_by) == ("incomplete", "workers_lost")
    assert shared.stop_reason == "stopped at 42 states: lost workers: the worker expanding it went away"
    assert levels_shared == [7, 35]


def counted() -> tuple[list[tuple[int, int]], parallel.DoneFn]:
    """A progress callback and what it was told: (runs done, runs in all) each time."""
    done: list[tuple[int, int]] = []
    return done, lambda k, n: done.append((k, n))


@pytest.mark.verdict
def test_a_pool_of_workers_gives_the_serial_runs_and_counts_them_done(tmp_path, workers_see_the_tests):
    path = small_spec(tmp_path)
    options = Options(pins={"top": [1, 2, 3]})
    batch = parallel.Batch(parallel.Source(path=str(path)), prepare(load_spec(path), options), options)
    jobs, machines = parallel.jobs_of([batch])
    done, tick = counted()
    runs = forked(parallel.LocalPool(2), path).run(jobs, machines, tick)
    assert json_of(runs) == json_of([check_machine(m, options) for m in prepare(load_spec(path), options)])
    assert [r._spec for r in runs] == [batch.machines[0].spec] * 3
    assert done == [(1, 3), (2, 3), (3, 3)]


@pytest.mark.verdict
def test_runs_that_finish_together_are_taken_in_serial_order(tmp_path, workers_see_the_tests, monkeypatch):
    """`wait` may hand back several finished runs at once (here always every run)."""
    monkeypatch.setattr(parallel, "wait", lambda fs, return_when=None: cf.wait(fs))
    path = small_spec(tmp_path)
    options = Options(pins={"top": [1, 2, 3]})
    jobs, machines = parallel.jobs_of([parallel.Batch(parallel.Source(path=str(path)),
                                                      prepare(load_spec(path), options), options)])
    runs = forked(parallel.LocalPool(2), path).run(jobs, machines, None)
    assert [(r.params, r.result) for r in runs] == [({"top": 1}, "proved"), ({"top": 2}, "proved"),
                                                    ({"top": 3}, "violated")]


def deaths(marker: Path) -> int:
    return len(marker.read_text().split()) if marker.exists() else 0


@pytest.mark.verdict
def test_a_run_whose_worker_dies_max_attempts_times_is_lost_after_exactly_that_many(
        tmp_path, workers_see_the_tests, monkeypatch):
    """dying_adapters.DiesThrice kills its worker at max_steps=3 the first three times: three deaths
    and the run is reported lost; a fourth attempt would have checked it. After the first death
    the run is tried alone, in a pool of one process, so no other run is charged for its deaths."""
    marker = tmp_path / "deaths"
    monkeypatch.setenv("HALTPROOF_TEST_MARKER", str(marker))
    sizes: list[int] = []

    class Counted(cf.ProcessPoolExecutor):
        def __init__(self, max_workers: int | None = None, **kw: Any):
            super().__init__(max_workers, **kw)
            sizes.append(self._max_workers)
    monkeypatch.setattr(parallel, "ProcessPoolExecutor", Counted)
    spec = bound_copy(tmp_path, "dying_adapters:DiesThrice")
    options = Options(pins={"max_steps": [2, 3], "max_retries": 0})
    jobs, machines = parallel.jobs_of([parallel.Batch(parallel.Source(path=str(spec)),
                                                      prepare(load_spec(spec), options), options)])
    runs = forked(parallel.LocalPool(2), spec).run(jobs, machines, None)
    assert deaths(marker) == parallel.MAX_ATTEMPTS
    assert sizes == [2, 1, 1]
    assert [(r.result, r.stopped_by) for r in runs] == [("proved", None), ("incomplete", "workers_lost")]
    assert runs[1].stop_reason == f"not checked: the worker process checking it died {parallel.MAX_ATTEMPTS} times"


@pytest.mark.verdict
def test_a_pool_of_workers_shares_a_runs_levels_as_one_process_explores_them(tmp_path, levels_shared):
    bound = bound_copy(tmp_path, "haltproof.harness.loop_binding:LoopDemoAdapter")
    shared, serial = shared_and_serial(bound, {"max_steps": 2, "max_retries": 0},
                                       forked(parallel.LocalSlices(2), bound))
    assert json_of([shared]) == json_of([serial])
    assert sum(levels_shared) == shared.stats["states"] == 77


@pytest.mark.verdict
def test_a_slice_whose_worker_dies_max_attempts_times_is_lost_after_exactly_that_many(
        tmp_path, levels_shared, monkeypatch):
    """The first death, in a round of several slices, charges none of them (any may have killed the
    worker); the slices then go one at a time, and the one that kills its worker is charged
    MAX_ATTEMPTS times: four deaths in all, where DiesFourTimes would have let a fifth attempt live."""
    marker = tmp_path / "deaths"
    monkeypatch.setenv("HALTPROOF_TEST_MARKER", str(marker))
    spec = bound_copy(tmp_path, "dying_adapters:DiesFourTimes")
    shared, _ = shared_and_serial(spec, {"max_steps": 3, "max_retries": 0}, forked(parallel.LocalSlices(2), spec))
    assert deaths(marker) == 1 + parallel.MAX_ATTEMPTS
    assert (shared.result, shared.stopped_by) == ("incomplete", "workers_lost")
    assert shared.stop_reason == (f"stopped at 27 states: lost workers: the worker process expanding it died "
                                  f"{parallel.MAX_ATTEMPTS} times")
    assert levels_shared == [7]


@pytest.mark.verdict
def test_check_batches_takes_each_course_and_counts_the_runs_done(tmp_path, levels_shared, monkeypatch):
    """One worker: in this process; several runs and workers: the pool; one run of bound code and
    workers: its levels shared. Each gives the serial runs and says how many are done of how many."""
    pool, slices = parallel.LocalPool, HereSlices()
    path = small_spec(tmp_path)
    monkeypatch.setattr(parallel, "LocalPool", lambda workers: forked(pool(workers), path))
    monkeypatch.setattr(parallel, "LocalSlices", lambda workers: slices)
    options = Options(pins={"top": [1, 2]})
    serial = json_of([check_machine(m, options) for m in prepare(load_spec(path), options)])
    for workers in (1, 2):
        done, tick = counted()
        batch = parallel.Batch(parallel.Source(path=str(path)), prepare(load_spec(path), options), options)
        assert json_of(parallel.check_batches([batch], workers, tick)) == serial
        assert done == [(1, 2), (2, 2)]
    bound = bound_copy(tmp_path, "haltproof.harness.loop_binding:LoopDemoAdapter")
    one = Options(pins={"max_steps": 1, "max_retries": 0})
    serial = json_of([check_machine(m, one) for m in prepare(load_spec(bound), one)])
    done, tick = counted()
    batch = parallel.Batch(parallel.Source(path=str(bound)), prepare(load_spec(bound), one), one)
    assert json_of(parallel.check_batches([batch], 2, tick)) == serial
    assert done == [(1, 1)] and levels_shared == [7, 35]


@pytest.mark.verdict
def test_a_job_with_a_deadline_still_ahead_is_checked_whole(tmp_path, workers_see_the_tests):
    """run_job bounds the worker by the time left until the check's deadline: a minute ahead, the
    run comes back done, the serial run."""
    path = small_spec(tmp_path)
    options = Options(pins={"top": 2})
    (serial,) = [check_machine(m, options) for m in prepare(load_spec(path), options)]
    (m,) = prepare(load_spec(path), options)
    blob = parallel.run_job(parallel.Job(0, parallel.Source(path=str(path)), {"top": 2}, options, time.time() + 60))
    assert pickle.loads(blob)[0] == "done"
    assert json_of([parallel.restore(blob, m, options)]) == json_of([serial])


@pytest.mark.verdict
def test_one_run_with_several_workers_is_checked_in_this_process(tmp_path, monkeypatch):
    """A single run that is not shared needs no pool: none is made, and it is the serial run."""
    def no_pool(workers: int) -> Any:
        raise AssertionError("a pool for one run")
    monkeypatch.setattr(parallel, "LocalPool", no_pool)
    path = small_spec(tmp_path)
    options = Options(pins={"top": 1})
    serial = json_of([check_machine(m, options) for m in prepare(load_spec(path), options)])
    batch = parallel.Batch(parallel.Source(path=str(path)), prepare(load_spec(path), options), options)
    done, tick = counted()
    assert json_of(parallel.check_batches([batch], 2, tick)) == serial
    assert done == [(1, 1)]


@pytest.mark.verdict
def test_a_slice_the_deadline_caught_comes_back_late_with_what_was_running(tmp_path, monkeypatch):
    """OutOfTime while the worker builds the run: the slice is `late` (the parent then reports the
    run out of time, not its workers lost), saying the bound code was running, no outcomes."""
    def out_of_time(sl: parallel.Slice) -> Any:
        raise parallel.OutOfTime()
    monkeypatch.setattr(parallel, "_shared_machine", out_of_time)
    path = small_spec(tmp_path)
    options = Options(pins={"top": 1})
    (job,), _ = parallel.jobs_of([parallel.Batch(parallel.Source(path=str(path)),
                                                 prepare(load_spec(path), options), options)])
    blob = parallel.expand_slice(parallel.Slice(job, "token", [({"x": 0, "done": False}, None)]))
    assert pickle.loads(blob) == ("late", "running the bound code in a worker process", [])


@pytest.mark.verdict
def test_shared_levels_of_a_run_with_a_conditional_choice_are_the_serial_run(tmp_path, levels_shared, monkeypatch):
    """A worker makes a conditional choice (`reason`, made only where e == refuse) exactly where
    the engine would: admitted from the state it expands, the shared run is the serial one."""
    from test_bound_monitors import SPEC, TESTS as HERE
    monkeypatch.syspath_prepend(str(HERE))
    path = tmp_path / "approvals.yaml"
    path.write_text(SPEC.format(adapter="Careful"), encoding="utf-8")
    shared, serial = shared_and_serial(path, {}, HereSlices())
    assert json_of([shared]) == json_of([serial])
    assert (shared.result, shared.stats["states"], levels_shared) == ("violated", 15, [1, 2, 5, 7])


@pytest.mark.verdict
def test_a_model_class_named_with_angle_brackets_stays_in_this_process(tmp_path, monkeypatch, request):
    """A qualname with "<" (a class made by a function, here bound at module level under that very
    name) is never taken for one a worker can import by name, even if this process could."""
    from haltproof.machine.pymodel import Model
    (tmp_path / "odd_models.py").write_text(
        "from haltproof.machine.pymodel import Model\n"
        "Odd = type('<odd>', (Model,), {})\n"
        "globals()['<odd>'] = Odd\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    request.addfinalizer(lambda: sys.modules.pop("odd_models", None))
    import odd_models
    assert issubclass(odd_models.Odd, Model) and odd_models.Odd.__qualname__ == "<odd>"
    assert parallel.model_source(odd_models.Odd) is None


@pytest.mark.verdict
def test_a_model_class_a_worker_can_import_is_sent_as_its_module_and_name(tmp_path, monkeypatch, request,
                                                                        workers_see_the_tests):
    """`module:Class` when importing that name here gives the very class; None for a class a worker
    could not find by name (made in a function, in no importable module, another class under the
    name), and for a nested class or one of __main__ even where this process finds it under that
    name (a worker's __main__ is not this one's)."""
    from haltproof.machine.pymodel import Model
    import stuck_code

    class Local(Model):
        pass
    (tmp_path / "nested_models.py").write_text(
        "from haltproof.machine.pymodel import Model\n"
        "Inner = type('Inner', (Model,), {'__qualname__': 'Outer.Inner'})\n"
        "globals()['Outer.Inner'] = Inner\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    request.addfinalizer(lambda: sys.modules.pop("nested_models", None))
    import nested_models
    in_main = type("InMain", (Model,), {"__module__": "__main__"})
    monkeypatch.setattr(sys.modules["__main__"], "InMain", in_main, raising=False)
    gone = type("Gone", (Model,), {"__module__": "no_such_module_here"})
    other = type("Retry", (Model,), {"__module__": "stuck_code"})
    assert parallel.model_source(stuck_code.Retry) == parallel.Source(model="stuck_code:Retry")
    assert [parallel.model_source(cls) for cls in (Local, nested_models.Inner, in_main, gone, other)] == [None] * 5


@pytest.mark.verdict
def test_warming_has_each_worker_expand_the_empty_slice_and_says_when_all_are_done(tmp_path, workers_see_the_tests):
    """warm hands each of the workers the check's empty slice (each builds the run: nothing to
    expand, "done"); what it returns turns true once every one of them is done."""
    bound = bound_copy(tmp_path, "haltproof.harness.loop_binding:LoopDemoAdapter")
    options = Options(pins={"max_steps": 1, "max_retries": 0})
    (job,), _ = parallel.jobs_of([parallel.Batch(parallel.Source(path=str(bound)),
                                                 prepare(load_spec(bound), options), options)])
    slices = forked(parallel.LocalSlices(2), bound)
    try:
        ready = slices.warm(parallel.Slice(job, "token", []), 2)
        cf.wait(slices.warming)
        assert ready() is True
        assert [pickle.loads(f.result()) for f in slices.warming] == [("done", None, [])] * 2
    finally:
        slices.close()


class BrokenBetweenLevels(parallel.LocalSlices):
    """Local slices whose workers are killed after each level, so the next level meets a broken
    pool as it hands its slices out (a worker that died between two levels)."""

    def run(self, slices: list[parallel.Slice]) -> list[parallel.SliceResult]:
        if self.pool is not None:
            for proc in list((self.pool._processes or {}).values()):
                proc.kill()
            for _ in range(1000):           # until the pool's own thread sees the death
                if self.pool._broken:
                    break
                time.sleep(0.01)
            assert self.pool._broken
        return super().run(slices)


@pytest.mark.verdict
def test_a_level_handed_to_a_pool_broken_meanwhile_goes_to_a_new_pool(tmp_path, levels_shared):
    """No slice is charged for a death between two levels: the level's slices go whole to a
    fresh pool, and the run is the serial one."""
    bound = bound_copy(tmp_path, "haltproof.harness.loop_binding:LoopDemoAdapter")
    shared, serial = shared_and_serial(bound, {"max_steps": 2, "max_retries": 0},
                                       forked(BrokenBetweenLevels(2), bound))
    assert json_of([shared]) == json_of([serial])
    assert (shared.result, shared.stats["states"], levels_shared) == ("proved", 77, [7, 35, 35])


@pytest.mark.verdict
def test_both_pools_spawn_their_workers():
    """Workers are spawned, never forked from this process (which may hold threads, the user's
    imported code and a run's state): what the forked pools of these tests stand in for."""
    assert parallel.LocalPool(2).context.get_start_method() == "spawn"
    assert parallel.LocalSlices(2).context.get_start_method() == "spawn"


class CountingContext:
    """The fork context, counting the worker processes a pool starts through it."""

    def __init__(self) -> None:
        self.fork = multiprocessing.get_context("fork")
        self.made = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.fork, name)

    def Process(self, *args: Any, **kwargs: Any) -> Any:     # the context's own name
        self.made += 1
        return self.fork.Process(*args, **kwargs)


@pytest.mark.verdict
def test_a_pool_of_runs_starts_its_workers_with_its_own_context(tmp_path, workers_see_the_tests):
    """Two workers for three runs, both started through the pool's context (spawn, in use)."""
    path = small_spec(tmp_path)
    options = Options(pins={"top": [1, 2, 3]})
    jobs, machines = parallel.jobs_of([parallel.Batch(parallel.Source(path=str(path)),
                                                      prepare(load_spec(path), options), options)])
    pool = forked(parallel.LocalPool(2), path)
    pool.context = context = CountingContext()
    runs = pool.run(jobs, machines, None)
    assert [(r.params, r.result) for r in runs] == [({"top": 1}, "proved"), ({"top": 2}, "proved"),
                                                    ({"top": 3}, "violated")]
    assert context.made == 2
