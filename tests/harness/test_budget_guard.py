"""The budgeted runner under its runtime guard (harness/budget/guarded.py): a run as proved is
untouched, a drifted executor (its K, its budget check) is stopped before the call that leaves
the model, and the SQLite database keeps the run as the last transition left it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from haltproof.cli.guard import write_guard
from haltproof.guard import Guard, GuardStopped
from haltproof.harness.budget import gate as G
from haltproof.harness.budget.guarded import GuardedRunner
from haltproof.harness.budget.policies import DeterministicPolicy
from haltproof.harness.budget.runner import Runner
from haltproof.harness.budget.tasks import TASKS
from haltproof.harness.budget.tools import Shop, connect

from broken_runners import no_pre_call_check
from conftest import ROOT

SPEC = ROOT / "specs" / "budget_runner.yaml"
SEEDED = {"cam-100": (3, 1), "fla-300": (0, 1), "tri-200": (2, 1), "tri-201": (1, 1)}
AFTER_TWO = ("{task: reserve, c: 2, hits: one, doc: True, supply: none, receipt: False, written: 0, "
             "pending: %s, attempts: 0, started: False, recorded: 2, status: running}")
LEFT = (f"model escape at step 5: {AFTER_TWO % 'stock'} is not a state the model reaches from "
        f"{AFTER_TWO % 'none'} after one step")


@pytest.fixture(scope="module")
def guard_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("budget") / "guard.json"
    write_guard(str(SPEC), {"K": 2, "R": 2}, str(path))
    return path


@pytest.fixture
def conn(tmp_path):
    c = connect(str(tmp_path / "shop.sqlite"))
    Shop(c).seed()
    yield c
    c.close()


@pytest.mark.verdict
def test_a_run_as_proved_is_untouched(guard_file, conn, tmp_path) -> None:
    guard = Guard.load(guard_file, spec=SPEC, params={"K": 2, "R": 2})
    runner = GuardedRunner(conn, DeterministicPolicy(), guard)
    guarded = runner.start(TASKS["camera-info"], K=2, R=2)
    other = connect(str(tmp_path / "plain.sqlite"))
    Shop(other).seed()
    plain = Runner(other, DeterministicPolicy()).start(TASKS["camera-info"], K=2, R=2)
    assert guarded == plain and guarded["terminal"]["status"] == "finished" and guarded["calls"] == 2
    assert guard.ended and guard.state["status"] == "finished_info"
    assert [(d.event, d.verdict) for d in runner.follower.decisions] == [
        ("start", "allow"), *[("after", "allow")] * 5, ("end", "allow")]


@pytest.mark.verdict
def test_a_deployment_whose_K_drifted_is_stopped_before_the_call_past_the_proved_K(guard_file, conn) -> None:
    """The guard's K is 2; the runner was configured with K=4: the third call is prepared where the
    spec ends the run budget_exhausted. Stopped right after that decision was saved: the stock is
    never read, and a resume (without the guard) goes on from exactly there."""
    runner = GuardedRunner(conn, DeterministicPolicy(), Guard.load(guard_file))
    with pytest.raises(GuardStopped) as stop:
        runner.start(TASKS["camera"], K=4, R=2)
    assert stop.value.decision.to_dict() == {
        "verdict": "deny", "event": "after", "step": 5, "reason": LEFT, "action": None, "choices": {},
        "violated": [], "doomed": [], "endangered": [], "continuation": [], "allowed": [], "escape": True}
    saved = runner.store.load("run-1")
    assert (saved["calls"], len(saved["observations"]), saved["terminal"]) == (2, 2, None)
    assert saved["pending"]["action"] == {"type": "tool", "tool": "stock", "args": {"item": "cam-100"}}
    assert [o["tool"] for o in saved["observations"]] == ["search", "document"]
    assert runner.shop.ledger() == [] and runner.shop.inventory() == SEEDED
    with pytest.raises(RuntimeError) as refused:
        runner.resume("run-1")
    assert str(refused.value) == ("run run-1: a guard follows a run from its start; resume it with Runner (its "
                                  "state and ledger are in the database as the guard left them)")
    done = Runner(conn, DeterministicPolicy()).resume("run-1")
    assert (done["terminal"]["status"], done["calls"], len(done["observations"])) == ("finished", 4, 4)
    assert [e["run_id"] for e in runner.shop.ledger()] == ["run-1"]


@pytest.mark.verdict
def test_an_executor_that_lost_its_budget_check_is_stopped_before_the_call_over_K(guard_file, conn) -> None:
    """The runner's K is the guard's, but its gate lost the pre-call check (tests/broken_runners.py):
    the same third call is prepared, and stopped the same way."""
    gate = G.GATE.replace(check_budget=no_pre_call_check)
    runner = GuardedRunner(conn, DeterministicPolicy(), Guard.load(guard_file), gate=gate)
    with pytest.raises(GuardStopped) as stop:
        runner.start(TASKS["camera"], K=2, R=2)
    assert (stop.value.decision.verdict, stop.value.decision.reason) == ("deny", LEFT)
    assert runner.store.load("run-1")["calls"] == 2 and runner.shop.inventory() == SEEDED


def test_events_still_reach_the_callers_on_event(guard_file, conn) -> None:
    seen: list[str] = []
    GuardedRunner(conn, DeterministicPolicy(), Guard.load(guard_file),
                  on_event=lambda e: seen.append(e["event"])).start(TASKS["camera-info"], K=2, R=2)
    assert seen == ["start", "decision", "attempt", "decision", "attempt", "decision", "end"]


@pytest.mark.slow
def test_the_guarded_budget_example_runs_as_the_docs_say(tmp_path) -> None:
    doc = (ROOT / "docs" / "how-to" / "guard.md").read_text()
    export = "haltproof guard specs/budget_runner.yaml -p K=4 -p R=2 -o budget_guard.json"
    run = "python examples/budget_runner/guarded.py budget_guard.json shop.sqlite"
    assert f"```sh\n{export}\n{run}\n```" in doc
    (tmp_path / "specs").mkdir()
    shutil.copy(SPEC, tmp_path / "specs")
    shutil.copytree(ROOT / "examples" / "budget_runner", tmp_path / "examples" / "budget_runner")
    bin_dir = Path(sys.executable).parent
    for command in (export, run):
        argv = command.split()
        argv[0] = str(bin_dir / "haltproof") if argv[0] == "haltproof" else sys.executable
        done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "as proved: finished/reserved after 4 calls"
    assert lines[1].startswith("K drifted to 6: haltproof guard: deny at step 9 (after): model escape at step 9: ")
    assert lines[2] == ('saved: 4 calls, 4 observations, pending {"type": "tool", "tool": "stock", "args": '
                        '{"item": "cam-100"}}, terminal None')
