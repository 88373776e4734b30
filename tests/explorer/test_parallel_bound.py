"""`-j N` on a single run of bound code: its BFS levels are shared among worker processes, each
with its own import of the code (explorer/parallel.py, `LevelSharer`), and the report is the one
process's. Each test makes the run share from its first level (SHARE_SECONDS = 0) and checks
that it did, so none of them passes by checking in one process."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from concurrent.futures import wait

from haltproof.explorer import parallel

from conftest import LOOP_DEMO, ROOT, SPECS
from test_binding import bound_copy
from test_live_binding import agent_spec
from test_parallel import untimed

TESTS = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def share_from_the_first_level(monkeypatch) -> list[int]:
    """Every level shared, and the size of each level the workers were given, in order (counted
    here: the check runs in this process, not in the supervised child of cli/supervise.py)."""
    monkeypatch.setenv("HALTPROOF_IN_PROCESS", "1")
    monkeypatch.setattr(parallel, "SHARE_SECONDS", 0.0)
    monkeypatch.syspath_prepend(str(TESTS))     # the workers inherit the path: the test adapters
    shared: list[int] = []
    share = parallel.LevelSharer.share

    def counted(self: parallel.LevelSharer, level: list[Any]) -> None:
        shared.append(len(level))
        share(self, level)
    monkeypatch.setattr(parallel.LevelSharer, "share", counted)
    return shared


def both(cli, *args: Any) -> tuple[Any, Any]:
    """The check with -j 1 and with -j 2, each as it ran."""
    one = cli("check", *args, "-j", "1", "--format", "json")
    two = cli("check", *args, "-j", "2", "--format", "json")
    return one, two


SEED_RUNS = [
    (LOOP_DEMO, ("-p", "max_steps=3", "-p", "max_retries=1"), "state"),
    (SPECS / "gate_chain.yaml", ("-p", "B=2", "-p", "N=1", "-p", "A=1", "-p", "T=3", "-p", "P=2"), "replay"),
    (SPECS / "budget_runner.yaml", ("-p", "K=2", "-p", "R=1"), "snapshot"),
]


@pytest.mark.parametrize("spec, pins, binding", SEED_RUNS, ids=["loop_demo", "gate_chain", "budget_runner"])
def test_a_seed_spec_s_single_run_shared_gives_the_serial_report(cli, share_from_the_first_level, spec, pins,
                                                                binding):
    """The three seed systems, one of each binding style (state API, live replay, live snapshot)."""
    one, two = both(cli, spec, *pins)
    assert one.code == two.code == 0
    (run,) = two.json()["runs"]
    assert run["binding"] == binding
    # every level went to the workers, each state once
    assert len(share_from_the_first_level) == run["stats"]["max_depth"] + 1
    assert sum(share_from_the_first_level) == run["stats"]["states"]
    assert untimed(two.json()) == untimed(one.json())


@pytest.mark.parametrize("adapter, binding", [("AgentAdapter", "snapshot"), ("SnapshotAdapter", "snapshot"),
                                              ("ReplayedAdapter", "replay"), ("GeneratorAdapter", "replay"),
                                              ("AsyncAdapter", "replay")])
def test_every_live_style_shared_gives_the_serial_report(cli, tmp_path, share_from_the_first_level, adapter,
                                                         binding):
    """A copy, a snapshot (sent to the workers pickled) and a replay (its path sent) reach each
    frontier state in the worker as they do in one process; generators and async runs too."""
    one, two = both(cli, agent_spec(tmp_path, adapter), "-p", "N=3")
    assert one.code == two.code == 0
    assert two.json()["runs"][0]["binding"] == binding
    assert share_from_the_first_level
    assert untimed(two.json()) == untimed(one.json())


@pytest.mark.parametrize("adapter", ["broken_decides:LimitFirst", "broken_decides:Crashing"])
def test_a_violation_found_in_a_worker_has_the_serial_trace(cli, tmp_path, share_from_the_first_level, adapter):
    """A wrong decide (a property violated) and a decide that raises (bound_code, with the user's
    traceback): the same finding, message and shortest trace."""
    one, two = both(cli, bound_copy(tmp_path, adapter), "-p", "max_steps=3", "-p", "max_retries=1")
    assert one.code == two.code == 1
    assert share_from_the_first_level
    assert untimed(two.json()) == untimed(one.json())


def test_a_violation_of_a_live_run_in_a_worker_has_the_serial_trace(cli, tmp_path, share_from_the_first_level):
    one, two = both(cli, agent_spec(tmp_path, "ReplayedMutant"), "-p", "N=3")
    assert one.code == two.code == 1
    violated = [p for p in two.json()["runs"][0]["properties"] if p["status"] == "violated"]
    assert [p["name"] for p in violated] == ["domains", "code_matches_spec"]
    assert untimed(two.json()) == untimed(one.json())


def test_the_determinism_check_holds_in_the_workers(cli, tmp_path, share_from_the_first_level):
    """Code that answers differently the second time is caught where it runs, a worker."""
    ran = cli("check", bound_copy(tmp_path, "broken_decides:Flaky"), "-p", "max_steps=2", "-p", "max_retries=1",
              "-j", "2", "--format", "json")
    assert ran.code == 1 and share_from_the_first_level
    p = next(p for p in ran.json()["runs"][0]["properties"] if p["name"] == "bound_code")
    assert p["message"].startswith("action read_task_cards with obs=failed: the bound code is nondeterministic: "
                                   "two calls with the same state and choices gave ")
    assert len(p["trace"]["steps"]) == 1


def test_a_killed_worker_s_slice_is_run_again(cli, tmp_path, monkeypatch, share_from_the_first_level):
    """The first worker to concretize a state of max_steps=3 is killed (SIGKILL): its slice runs
    again and the report is the serial one."""
    marker = tmp_path / "died"
    monkeypatch.setenv("HALTPROOF_TEST_MARKER", str(marker))
    spec = bound_copy(tmp_path, "dying_adapters:DiesOnce")
    two = cli("check", spec, "-p", "max_steps=3", "-p", "max_retries=1", "-j", "2", "--format", "json")
    assert marker.exists(), "no worker was killed: the test proves nothing"
    one = cli("check", spec, "-p", "max_steps=3", "-p", "max_retries=1", "-j", "1", "--format", "json")
    assert one.code == two.code == 0
    assert untimed(two.json()) == untimed(one.json())


def test_a_slice_that_kills_every_worker_stops_the_run_incomplete(cli, tmp_path, share_from_the_first_level):
    """Code that kills every worker process (never this one): after MAX_ATTEMPTS the states of
    that slice are lost, and the run ends incomplete at them, saying why (exit 3)."""
    ran = cli("check", bound_copy(tmp_path, "dying_adapters:DiesAlways"), "-p", "max_steps=3",
              "-p", "max_retries=1", "-j", "2", "--format", "json")
    assert ran.code == 3
    (run,) = ran.json()["runs"]
    assert run["stopped_by"] == "workers_lost"
    assert run["stop_reason"] == (f"stopped at 7 states: lost workers: the worker process expanding it died "
                                  f"{parallel.MAX_ATTEMPTS} times")
    assert share_from_the_first_level == [7]        # the initial states: none of them was expanded
    assert run["stats"]["transitions"] == 0


def test_a_user_error_only_a_worker_meets_is_exit_2(cli, tmp_path, share_from_the_first_level):
    ran = cli("check", bound_copy(tmp_path, "dying_adapters:FailsInWorkers"), "-p", "max_steps=2",
              "-p", "max_retries=1", "-j", "2")
    assert ran.code == 2
    assert "cannot create the adapter: RuntimeError: no adapter in a worker process" in ran.err
    assert "Traceback" not in ran.err and ran.out == ""


# The check in its own process (a hang would show as that process timing out, never as a stuck
# test run), every level shared.
SHARED_CHECK = """
import sys
from haltproof.cli.main import main
from haltproof.explorer import parallel

if __name__ == "__main__":
    parallel.SHARE_SECONDS = 0.0
    sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("adapter", ["Sleeping", "Spinning"])
def test_code_that_hangs_in_a_worker_ends_at_the_timeout_incomplete(tmp_path, adapter):
    """A decide that sleeps or spins forever, met in a worker: the worker's deadline stops it,
    and the run is incomplete (exit 3) saying what the code was running, as in one process."""
    spec = bound_copy(tmp_path, f"stuck_code:{adapter}")
    ran = subprocess.run([sys.executable, "-c", SHARED_CHECK, "check", str(spec), "-p", "max_steps=3",
                          "-p", "max_retries=1", "-j", "2", "--timeout", "12", "--format", "json"],
                         cwd=ROOT, env={**_env(), "PYTHONPATH": str(TESTS)}, capture_output=True, text=True,
                         timeout=120)
    assert ran.returncode == 3, ran.stderr
    (run,) = json.loads(ran.stdout)["runs"]
    assert run["stopped_by"] == "timeout"
    assert run["stop_reason"].startswith("stopped at ")
    assert (" states: --timeout 12 s reached while running the bound code for action read_task_cards (obs=failed) "
            "from state steps=") in run["stop_reason"]


def _env() -> dict[str, str]:
    return dict(os.environ)


@pytest.mark.parametrize("spec, pins, binding", SEED_RUNS, ids=["loop_demo", "gate_chain", "budget_runner"])
def test_levels_begun_here_then_shared_give_the_serial_report(cli, monkeypatch, share_from_the_first_level, spec,
                                                              pins, binding):
    """The default course of a long run: its first levels run in this process (the live runs kept
    here: a snapshot is pickled for the workers), the workers start after SHARE_SECONDS, and
    every level from the first one they are ready for is shared."""
    monkeypatch.setattr(parallel, "SHARE_SECONDS", 1e-9)

    monkeypatch.setattr(parallel.LocalSlices, "warm", _waited(parallel.LocalSlices.warm))
    one, two = both(cli, spec, *pins)
    assert one.code == two.code == 0
    (run,) = two.json()["runs"]
    assert run["binding"] == binding
    # level 0 here (the clock starts), level 1 here (the workers start), the rest shared
    assert len(share_from_the_first_level) == run["stats"]["max_depth"] + 1 - 2
    assert untimed(two.json()) == untimed(one.json())


def test_a_spec_stage_that_fails_in_a_worker_names_its_spec_line(cli, tmp_path, share_from_the_first_level):
    """The spec's own stages run beside the code (code_matches_spec); one that divides by zero
    in a worker is reported here with the spec file and line, as one process reports it."""
    spec = bound_copy(tmp_path, "haltproof.harness.loop_binding:LoopDemoAdapter")
    text = spec.read_text()
    spec.write_text(text.replace("steps: steps + 1\n", "steps: steps + 1 + 0 // (2 - steps)\n", 1))
    one, two = both(cli, spec, "-p", "max_steps=3", "-p", "max_retries=1")
    assert one.code == two.code == 1
    p = next(p for p in two.json()["runs"][0]["properties"] if p["name"] == "well_defined")
    line = next(n for n, t in enumerate(spec.read_text().splitlines(), 1) if "0 // (2 - steps)" in t)
    assert p["message"] == (f"action read_task_cards with obs=failed ({spec}:{line}): "
                            "integer division or modulo by zero")
    assert share_from_the_first_level
    assert untimed(two.json()) == untimed(one.json())


def _waited(warm: Any) -> Any:
    """LocalSlices.warm that returns once the workers have imported the code (or died trying)."""
    def waited(self: parallel.LocalSlices, empty: parallel.Slice, workers: int) -> Any:
        ready = warm(self, empty, workers)
        wait(self.warming)
        return ready
    return waited


def test_workers_that_die_importing_the_code_are_replaced_then_lost(cli, tmp_path, monkeypatch,
                                                                     share_from_the_first_level):
    """The workers die while they import the run (before any level is shared): the broken pool
    is replaced when the first level is shared, and the run ends incomplete, never exit 4."""
    monkeypatch.setattr(parallel, "SHARE_SECONDS", 1e-9)
    monkeypatch.setattr(parallel.LocalSlices, "warm", _waited(parallel.LocalSlices.warm))
    ran = cli("check", bound_copy(tmp_path, "dying_adapters:DiesWhenCreatedInWorkers"), "-p", "max_steps=3",
              "-p", "max_retries=1", "-j", "2", "--format", "json")
    assert ran.code == 3, ran.err
    (run,) = ran.json()["runs"]
    assert run["stopped_by"] == "workers_lost"
    assert run["stop_reason"].endswith(f": lost workers: the worker process expanding it died "
                                       f"{parallel.MAX_ATTEMPTS} times")
    assert len(share_from_the_first_level) == 1      # levels 0 and 1 here, level 2 lost
    assert run["stats"]["max_depth"] == 2


@pytest.mark.parametrize("adapter, binding", [("Replayed", "replay"), ("Snapshotted", "snapshot"),
                                              ("Copied", "snapshot")])
def test_a_state_a_declared_exception_reached_is_reached_so_in_the_workers(cli, tmp_path, monkeypatch,
                                                                            share_from_the_first_level, adapter,
                                                                            binding):
    """A live run left by a declared exception (`raises:` with `set:`) stands for its state with
    the exception's values on top: a worker reaching that state (replayed, or restored from the
    snapshot or copy sent to it, with those values) explores on from it as one process does."""
    from test_live_raises import ADAPTERS, SPEC
    (tmp_path / "raising.py").write_text(ADAPTERS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "raising", raising=False)
    spec = tmp_path / f"{adapter.lower()}.yaml"
    spec.write_text(SPEC.format(adapter=adapter))
    # each slice in a worker that has never seen a state: only what is sent with it reaches it
    monkeypatch.setattr(parallel, "LocalSlices", lambda workers: ForgetfulSlices())
    one, two = both(cli, spec)
    assert one.code == two.code == 0, two.out
    (run,) = two.json()["runs"]
    assert (run["binding"], run["stats"]["states"]) == (binding, 8)
    assert len(share_from_the_first_level) == run["stats"]["max_depth"] + 1
    assert untimed(two.json()) == untimed(one.json())


class ForgetfulSlices(parallel.Slices):
    """Slices run here, one after the other, each by a run built afresh (as by a new worker)."""

    def run(self, slices: list[parallel.Slice]) -> list[parallel.SliceResult]:
        out = []
        for sl in slices:
            parallel._EXPANDING.clear()
            out.append(pickle.loads(parallel.expand_slice(sl)))
        return out
