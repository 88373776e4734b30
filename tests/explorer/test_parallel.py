"""`-j N`: a sweep's runs checked in worker processes give the serial report (explorer/parallel.py).

Each comparison is of the whole JSON report with the timing keys removed: the same runs in
the same order with the same figures, traces and messages. The workers are spawned
processes, so these tests take a few seconds each.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from haltproof.api import check
from haltproof.explorer.options import Options
from haltproof.explorer.parallel import MAX_ATTEMPTS
from haltproof.reports.graph import build_graph

from conftest import LOOP_DEMO, MUTANTS, ROOT, SPECS

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
    assert text.out.count("incomplete (stopped at lost workers)") == 4     # the run lines and the findings
    assert text.out.count(f"not checked: the worker process checking it died {MAX_ATTEMPTS} times") == 2


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
