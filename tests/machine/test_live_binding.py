"""Live binding (machine/live.py): the code's own runs, reached by snapshot, copy or replay.

The adapters live in tests/live_agents.py; AGENT_SPEC is the agent loop they bind.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
from pathlib import Path
from typing import Any

from hypothesis import find
import pytest

import live_agents
from haltproof.explorer import parallel
from haltproof.explorer.options import Options
from haltproof.explorer.check import check_machine, check_spec, prepare
from haltproof.explorer.conform import conform
from haltproof.explorer.results import RunResult
from haltproof.machine import binding as B, live
from haltproof.machine.compiled import Machine
from haltproof.machine.errors import SpecError
from haltproof.machine.live import LiveAdapter
from haltproof.machine.spec import load_spec, parse_spec
from haltproof.machine.usercode import OutOfTime

TESTS = Path(__file__).resolve().parent.parent

AGENT_SPEC = """\
machine: agent
bind: live_agents:{adapter}
params:
  N: [2, 3]
vars:
  steps: {{type: int, min: 0, max: N, init: 0}}
  status: {{type: enum, values: [running, done, limit], init: running}}
actions:
  work:
    when: status == running
    choose:
      tool: [ok, fail]
    do:
      - set: {{steps: steps + 1}}
      - decide: status
        rules:
          - {{name: finished, when: tool == ok, then: done}}
          - {{name: out_of_steps, when: steps >= N, then: limit}}
          - {{name: again, then: running}}
terminal: status != running
properties:
  stops:
    terminates: true
  within_limit:
    always: steps <= N
"""


@pytest.fixture(autouse=True)
def _tests_importable(monkeypatch):
    monkeypatch.syspath_prepend(str(TESTS))


def agent_spec(tmp_path: Path, adapter: str) -> Path:
    path = tmp_path / f"{adapter.lower()}.yaml"
    path.write_text(AGENT_SPEC.format(adapter=adapter))
    return path


def runs_of(path: Path, **options) -> list:
    return check_spec(load_spec(path), Options(**options))


def props(run) -> dict:
    return {p.name: p for p in run.properties}


MODEL_STATES = {2: 5, 3: 7}     # the spec's own stages: steps 0..N-1 running, plus done/limit ends


@pytest.mark.verdict
def test_a_live_adapter_that_says_nothing_about_copying_is_replayed(tmp_path):
    """Copying is opt-in: a deepcopy does not copy what functions close over, so the
    closure-counting agent is only explored right by replay, and replay is the default."""
    runs = runs_of(agent_spec(tmp_path, "DefaultAdapter"))
    assert [r.binding for r in runs] == ["replay", "replay"]
    assert [r.result for r in runs] == ["proved", "proved"]
    assert [r.stats["states"] for r in runs] == [MODEL_STATES[2], MODEL_STATES[3]]


@pytest.mark.verdict
def test_copying_runs_that_share_a_closure_is_caught_not_proved(tmp_path):
    """Declared copyable by mistake: the copies step the original's closure, so the same
    transition gives another result the second time (the determinism check's finding, on
    the first transition); nothing is proved."""
    runs = runs_of(agent_spec(tmp_path, "CopiedClosures"))
    assert [r.result for r in runs] == ["violated", "violated"]
    assert [props(r)["bound_code"].message for r in runs] == [
        "action work with tool=ok: the bound code is nondeterministic: two calls with the same state and "
        "choices gave {'steps': 1, 'status': 'done'} (rule 'finished') and {'steps': 2, 'status': 'done'} "
        "(rule 'finished')"] * 2
    # without the determinism check, the states it steps into are outside their domains
    unchecked = runs_of(agent_spec(tmp_path, "CopiedClosures"), determinism="off")
    assert [r.result for r in unchecked] == ["violated", "violated"]
    assert all(props(r)["domains"].status == "violated" for r in unchecked)


@pytest.mark.verdict
def test_model_state_counts_are_the_reference(tmp_path):
    runs = runs_of(agent_spec(tmp_path, "AgentAdapter"), model_only=True)
    assert {r.params["N"]: r.stats["states"] for r in runs} == MODEL_STATES
    assert [r.binding for r in runs] == [None, None]


@pytest.mark.parametrize("adapter, mode", [("AgentAdapter", "snapshot"), ("ReplayedAdapter", "replay"),
                                           ("SnapshotAdapter", "snapshot"), ("GeneratorAdapter", "replay")])
@pytest.mark.verdict
def test_each_mode_proves_the_agent_with_the_model_s_states(tmp_path, adapter, mode):
    runs = runs_of(agent_spec(tmp_path, adapter))
    assert [(r.params["N"], r.result, r.binding) for r in runs] == [(2, "proved", mode), (3, "proved", mode)]
    assert {r.params["N"]: r.stats["states"] for r in runs} == MODEL_STATES
    assert {r.params["N"]: r.stats["transitions"] for r in runs} == {2: 4, 3: 6}


@pytest.mark.verdict
def test_a_run_that_stops_being_copyable_is_replayed_from_there(tmp_path):
    (run,) = runs_of(agent_spec(tmp_path, "LateUncopyable"), pins={"N": 3})
    assert (run.result, run.binding) == ("proved", "replay")
    assert (run.stats["states"], run.stats["transitions"]) == (MODEL_STATES[3], 6)


@pytest.mark.verdict
def test_snapshot_adapter_takes_one_snapshot_per_state(tmp_path):
    live_agents.SnapshotAdapter.taken = 0
    runs_of(agent_spec(tmp_path, "SnapshotAdapter"), pins={"N": 3})
    assert live_agents.SnapshotAdapter.taken == MODEL_STATES[3]


@pytest.mark.verdict
def test_replay_mode_finds_the_real_violation_with_the_shortest_trace(tmp_path):
    (run,) = runs_of(agent_spec(tmp_path, "ReplayedMutant"), pins={"N": 2})
    assert run.binding == "replay"
    found = props(run)
    assert run.result == "violated"
    finding = found["code_matches_spec"]
    assert finding.status == "violated"
    assert finding.message == ("action work with tool=fail: the code and the spec's own stages disagree: "
                               "rule: code 'again', spec 'out_of_steps'; status: code running, spec limit")
    # the trace ends with the drifting step, as the code took it (the message has the spec's side)
    assert [(s.choices, s.rule, s.state) for s in finding.trace.steps] == [
        ({}, None, {"steps": 0, "status": "running"}),
        ({"tool": "fail"}, "again", {"steps": 1, "status": "running"}),
        ({"tool": "fail"}, "again", {"steps": 2, "status": "running"})]
    # a drift cuts nothing short: the code's own run goes on, out of its domain
    assert found["domains"].status == "violated"


@pytest.mark.verdict
def test_the_model_alone_cannot_see_the_mutant(tmp_path):
    (run,) = runs_of(agent_spec(tmp_path, "ReplayedMutant"), pins={"N": 2}, model_only=True)
    assert run.result == "proved"


@pytest.mark.verdict
def test_a_restore_that_forgets_is_a_bound_code_finding(tmp_path):
    (run,) = runs_of(agent_spec(tmp_path, "ForgetfulRestore"), pins={"N": 3})
    finding = props(run)["bound_code"]
    assert finding.status == "violated"
    assert finding.message == ("action work with tool=ok: the live run for this state is in state "
                               "steps=0 status=running: "
                               "restore(snapshot(...)) does not give back the run the snapshot was taken of")
    assert [s.state["steps"] for s in finding.trace.steps] == [0, 1]


@pytest.mark.verdict
def test_a_copy_that_shares_state_is_a_bound_code_finding(tmp_path):
    (run,) = runs_of(agent_spec(tmp_path, "SharedCopyAdapter"), pins={"N": 3})
    finding = props(run)["bound_code"]
    assert finding.status == "violated"
    assert "copy.deepcopy does not copy this live run (it shares state with the original)" in finding.message


@pytest.mark.verdict
def test_a_replay_that_leads_elsewhere_is_a_bound_code_finding(tmp_path):
    live_agents.LeakyReplay.calls = 0
    (run,) = runs_of(agent_spec(tmp_path, "LeakyReplay"), pins={"N": 3})
    finding = props(run)["bound_code"]
    assert finding.status == "violated"
    assert finding.message.startswith("action work with tool=ok: the live run for this state is in "
                                      "state steps=2 status=running: ")
    assert ("replaying its path of 1 transitions from start() leads elsewhere: the bound code is "
            "nondeterministic" in finding.message)


@pytest.mark.verdict
def test_start_in_the_wrong_state_is_a_bound_code_finding(tmp_path):
    (run,) = runs_of(agent_spec(tmp_path, "WrongStart"), pins={"N": 2})
    finding = props(run)["bound_code"]
    assert finding.message == "action work with tool=ok: start() for this initial state gives a run in state steps=1 status=running"
    assert len(finding.trace.steps) == 1


@pytest.mark.verdict
def test_json_and_text_report_the_binding(tmp_path, cli):
    spec = agent_spec(tmp_path, "ReplayedAdapter")
    ran = cli("check", spec, "-p", "N=2", "--format", "json")
    assert ran.code == 0
    assert [r["binding"] for r in ran.json()["runs"]] == ["replay"]
    text = cli("check", spec, "-p", "N=2")
    assert "states" in text.out and ", checked the bound code (replay binding)" in text.out
    full = cli("check", spec, "-p", "N=2", "--verbose")
    assert "(checked the bound code: live_agents:ReplayedAdapter)  [binding: replay]" in full.out
    model = cli("check", spec, "-p", "N=2", "--model", "--format", "json")
    assert "binding" not in model.json()["runs"][0]


def test_a_state_adapter_is_reported_as_state(cli):
    ran = cli("check", TESTS.parent / "specs" / "loop_demo.yaml", "-p", "max_steps=1", "-p", "max_retries=0",
              "--format", "json")
    assert [r["binding"] for r in ran.json()["runs"]] == ["state"]


@pytest.mark.verdict
def test_a_live_adapter_without_abstract_is_a_spec_error(tmp_path, cli):
    (tmp_path / "halfway.py").write_text("class Half:\n    def start(self, p, i): return 0\n"
                                         "    def step(self, live, a, c): return None\n")
    spec = tmp_path / "s.yaml"
    spec.write_text(AGENT_SPEC.format(adapter="X").replace("live_agents:X", "halfway:Half"))
    import sys
    sys.path.insert(0, str(tmp_path))
    try:
        ran = cli("check", spec)
    finally:
        sys.path.remove(str(tmp_path))
    assert ran.code == 2
    assert f"{spec}:2: the adapter has no abstract method: 'halfway:Half'" in ran.err


# ---------------------------------------------------------------- async


@pytest.mark.verdict
def test_an_async_adapter_runs_on_one_event_loop_and_is_replayed(tmp_path):
    live_agents.LOOPS_SEEN.clear()
    (run,) = runs_of(agent_spec(tmp_path, "AsyncAdapter"), pins={"N": 3})
    assert (run.result, run.binding) == ("proved", "replay")     # an async generator cannot be copied
    assert run.stats["states"] == MODEL_STATES[3]
    assert len(live_agents.LOOPS_SEEN) == 1


def test_an_async_step_that_never_returns_ends_in_a_clean_timeout(tmp_path, cli):
    ran = cli("check", agent_spec(tmp_path, "HangingAsync"), "-p", "N=2", "--timeout", "1", "--format", "json")
    assert ran.code == 3
    (run,) = ran.json()["runs"]
    assert run["stopped_by"] == "timeout"
    assert run["stop_reason"] == ("stopped at 1 states: --timeout 1 s reached while running the bound code "
                                  "for action work (tool=ok) from state steps=0 status=running")
    assert "Traceback" not in ran.err


def test_conform_threads_one_live_run_through_the_code(tmp_path, cli):
    ran = cli("conform", agent_spec(tmp_path, "AgentAdapter"), "--examples", "20")
    assert ran.code == 0, ran.out
    assert ran.out.startswith("conformance of agent and live_agents:AgentAdapter: 20 random runs")


@pytest.mark.verdict
def test_conform_catches_a_live_mutant(tmp_path, cli):
    ran = cli("conform", agent_spec(tmp_path, "ReplayedMutant"), "--examples", "50", "-p", "N=2")
    assert ran.code == 1
    assert "rule: spec 'out_of_steps', code 'again'" in ran.out
    assert "status: spec limit, code running" in ran.out


# ---------------------------------------------------------------- --paths

TRAIL_SPEC = """\
machine: trail
bind: live_agents:{adapter}
vars:
  x: {{type: int, min: 0, max: 3, init: 0}}
actions:
  go:
    when: x == 0
    choose:
      via: [a, b]
    do:
      - set: {{x: 1}}
  finish:
    when: x == 1
    do:
      - set: {{x: 2}}
terminal: x >= 2
properties:
  ends_at_two:
    always: x <= 2
"""


def trail_spec(tmp_path: Path, adapter: str) -> Path:
    path = tmp_path / f"{adapter.lower()}.yaml"
    path.write_text(TRAIL_SPEC.format(adapter=adapter))
    return path


@pytest.mark.verdict
def test_one_path_per_state_misses_what_the_abstraction_leaves_out(tmp_path):
    (run,) = runs_of(trail_spec(tmp_path, "TrailAdapter"))
    assert run.result == "proved"           # only the path through via=a reaches x=1's finish


@pytest.mark.verdict
def test_paths_2_finds_two_paths_into_one_state_that_behave_differently(tmp_path, cli):
    spec = trail_spec(tmp_path, "TrailAdapter")
    (run,) = runs_of(spec, paths=2)
    finding = props(run)["bound_code"]
    assert finding.status == "violated"
    assert finding.message == (
        "action go with via=b: this path reaches a state another path reached first, but the two runs then "
        "differ: action finish gives {'x': 3} (rule None) after this path and {'x': 2} (rule None) after the "
        "first: the abstract state leaves out something the code acts on (--paths)")
    # a failing step's trace ends in the state it starts from; the message names the step
    assert [(s.action, s.state) for s in finding.trace.steps] == [(None, {"x": 0})]
    assert cli("check", spec, "--paths", "2").code == 1


@pytest.mark.verdict
def test_paths_2_proves_code_whose_paths_agree(tmp_path):
    (run,) = runs_of(trail_spec(tmp_path, "TrailOk"), paths=2)
    assert run.result == "proved"


@pytest.mark.verdict
def test_paths_needs_a_live_adapter(tmp_path, cli):
    ran = cli("check", TESTS.parent / "specs" / "loop_demo.yaml", "--paths", "2")
    assert ran.code == 2
    assert "--paths 2 compares paths into a state, which needs a live adapter (start)" in ran.err
    model = cli("check", trail_spec(tmp_path, "TrailOk"), "--paths", "2", "--model")
    assert model.code == 2
    assert "--paths 2 compares the paths of live-bound code into a state: --model explores" in model.err
    assert cli("check", trail_spec(tmp_path, "TrailOk"), "--paths", "0").code == 2


# ---------------------------------------------------------------- code_matches_spec


@pytest.mark.verdict
def test_a_spec_without_stages_has_no_code_matches_spec(tmp_path):
    text = AGENT_SPEC.format(adapter="ReplayedMutant")
    text = text[:text.index("    do:\n")] + text[text.index("terminal:"):]
    path = tmp_path / "nostages.yaml"
    path.write_text(text)
    (run,) = runs_of(path, pins={"N": 2})
    assert [p.name for p in run.properties if p.kind == "builtin"] == ["domains", "well_defined", "bound_code"]
    # the code alone says what it does (here: rule names the spec has no decide table for)
    assert props(run)["bound_code"].message.endswith("the bound code reports rule 'finished', which action "
                                                     "work's decide table does not have (none)")


@pytest.mark.verdict
def test_code_matches_spec_is_a_reserved_property_name(tmp_path, cli):
    path = tmp_path / "s.yaml"
    path.write_text(AGENT_SPEC.format(adapter="AgentAdapter") + "  code_matches_spec:\n    always: steps >= 0\n")
    ran = cli("check", path)
    assert ran.code == 2
    assert f"{path}:26: code_matches_spec is a built-in property and always checked" in ran.err


# ---------------------------------------------------------------- ghost vars


def ghost_spec(tmp_path: Path, adapter: str, bind: bool = True) -> Path:
    text = AGENT_SPEC.format(adapter=adapter).replace(
        "  status: {type: enum",
        "  fails: {type: int, min: 0, max: N, init: 0, ghost: true}\n  status: {type: enum").replace(
        "      - set: {steps: steps + 1}", "      - set: {steps: steps + 1, fails: fails + (1 if tool == fail else 0)}"
    ) + "  fails_counted:\n    always: fails <= steps\n"
    if not bind:
        text = text.replace(f"bind: live_agents:{adapter}\n", "")
    path = tmp_path / "ghost.yaml"
    path.write_text(text)
    return path


@pytest.mark.verdict
def test_a_ghost_var_is_computed_by_the_stages_alone(tmp_path):
    spec = ghost_spec(tmp_path, "AgentAdapter")
    code, model = runs_of(spec), runs_of(spec, model_only=True)
    assert [(r.result, r.stats["states"], r.stats["transitions"]) for r in code] == \
           [(r.result, r.stats["states"], r.stats["transitions"]) for r in model] == [("proved", 5, 4), ("proved", 7, 6)]
    assert props(code[1])["code_matches_spec"].status == "holds"


@pytest.mark.verdict
def test_a_ghost_var_returned_by_the_code_is_a_bound_code_finding(tmp_path):
    (run,) = runs_of(ghost_spec(tmp_path, "GhostReader"), pins={"N": 2})
    assert props(run)["bound_code"].message.endswith(
        "abstract() must return a dict with exactly the vars ['status', 'steps'], got ['fails', 'status', 'steps']")


@pytest.mark.verdict
def test_a_ghost_var_needs_bind(tmp_path, cli):
    path = ghost_spec(tmp_path, "AgentAdapter", bind=False)
    ran = cli("check", path)
    assert ran.code == 2
    assert f"{path}:6: ghost var fails is one the bound code does not have, but the spec has no bind:" in ran.err


async def _parked_task() -> asyncio.Task:
    """A task left waiting, as a framework's run task paused at its next model call is."""
    return asyncio.get_running_loop().create_task(asyncio.Event().wait())


def test_closing_a_runs_loop_finishes_the_tasks_it_left_pending():
    """As asyncio.run does: cancelled and run to their end, never destroyed pending."""
    driver = live.Driver()
    task = driver.call(_parked_task)
    assert not task.done()
    driver.close()
    assert task.cancelled()
    assert driver.loop is not None and driver.loop.is_closed()


async def _stubborn() -> None:
    while True:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            continue


async def _stubborn_task() -> asyncio.Task:
    return asyncio.get_running_loop().create_task(_stubborn())


def test_a_task_that_ignores_its_cancellation_does_not_hang_the_close(monkeypatch):
    monkeypatch.setattr(live, "CLOSE_GRACE", 0.01)
    driver = live.Driver()
    task = driver.call(_stubborn_task)
    told: list[str] = []
    assert driver.loop is not None
    driver.loop.set_exception_handler(lambda loop, context: told.append(context["message"]))
    driver.close()
    assert driver.loop.is_closed()
    assert not task.done()
    del task
    gc.collect()
    assert told == ["Task was destroyed but it is pending!"]    # what asyncio says of such a task


def test_a_close_while_another_loop_runs_is_finished_by_the_next_call():
    """The garbage collector finalizes an old run's driver inside a new run's call: its loop
    cannot run then, so the next call that runs a loop cancels and finishes its tasks."""
    old, new = live.Driver(), live.Driver()
    task = old.call(_parked_task)

    async def close_old() -> bool:
        old.close()
        return old.loop is not None and old.loop.is_closed()
    assert new.call(close_old) is False
    assert not task.done()
    new.call(asyncio.sleep, 0)
    assert task.cancelled()
    assert old.loop is not None and old.loop.is_closed()
    new.close()


@pytest.mark.verdict
@pytest.mark.parametrize("determinism", ["full", "off"])
def test_every_run_started_is_closed_once_when_the_check_is_done_with_it(tmp_path, determinism):
    """LiveAdapter.close: each run haltproof starts (transitions, determinism re-runs, replays
    for --paths) goes back to the adapter once, so it can release threads and streams in the
    exploring thread rather than whenever the garbage collector finalizes it."""
    live_agents.ClosingAdapter.started.clear()
    live_agents.ClosingAdapter.closed.clear()
    runs = runs_of(agent_spec(tmp_path, "ClosingAdapter"), determinism=determinism, paths=2)
    assert all(props(r)["stops"].status == "holds" for r in runs)
    started, closed = live_agents.ClosingAdapter.started, live_agents.ClosingAdapter.closed
    assert len(started) >= 10
    assert sorted(map(id, closed)) == sorted(map(id, started))


@pytest.mark.verdict
@pytest.mark.parametrize("adapter,agrees", [("ClosingAdapter", True), ("ClosingMutant", False)])
def test_conform_closes_every_run_it_starts_once(tmp_path, adapter, agrees):
    """`haltproof conform` closes each example's run when the example ends, as `check` closes
    its runs: examples that agree, and those that fail and the shrinking that follows them."""
    live_agents.ClosingAdapter.started.clear()
    live_agents.ClosingAdapter.closed.clear()
    machines = prepare(load_spec(agent_spec(tmp_path, adapter)), Options(model_only=True))
    result = conform(machines, getattr(live_agents, adapter)(), examples=30)
    assert result.ok is agrees
    started, closed = live_agents.ClosingAdapter.started, live_agents.ClosingAdapter.closed
    assert len(started) >= 10
    assert sorted(map(id, closed)) == sorted(map(id, started))


@pytest.mark.verdict
def test_a_close_that_raises_fails_conform_unless_its_example_failed_already(tmp_path, cli):
    """A close() that raises is the example's failure, shown after its steps; on an example that
    fails already, that failure is the one shown (as `check` reports the transition's own)."""
    raised = cli("conform", agent_spec(tmp_path, "CloseRaises"), "--examples", "20")
    assert raised.code == 1
    lines = raised.out.splitlines()
    assert lines[:4] == [
        "conformance of agent and live_agents:CloseRaises FAILED (seed 0): the minimal run on which the code "
        "and the spec disagree:", "  params: N=2", "  initial state: steps=0 status=running",
        "  step 1: work with tool=ok  concrete: tool=\"ok\""]
    assert lines[4:6] == ["  step 2: (close) with no choices",
                          "    the adapter's close() raised RuntimeError: the run's pool is shut down already"]
    mutant = cli("conform", agent_spec(tmp_path, "CloseRaisesMutant"), "--examples", "60")
    assert mutant.code == 1 and "(close)" not in mutant.out and "close()" not in mutant.out
    assert "    status: spec limit, code running" in mutant.out


@pytest.mark.verdict
def test_code_that_fails_conform_two_ways_is_shown_its_smallest_failure(tmp_path, cli):
    """The step raises on one example and disagrees with the spec on another: conform shows the
    smallest of the two (Hypothesis raised both as one ExceptionGroup, an internal error, exit 4)."""
    ran = cli("conform", agent_spec(tmp_path, "CrashesOnOk"), "--examples", "60")
    assert ran.code == 1
    assert ran.out.splitlines()[3:5] == ['  step 1: work with tool=ok  concrete: tool="ok"',
                                         "    the code raised RuntimeError: the ok tool is gone"]


def test_closing_the_driver_lets_a_parked_task_leave_its_async_with() -> None:
    """A live run driven by a task of its own (haltproof.frameworks.pydantic_ai) waits between
    transitions inside `async with`. Closing the run's loop cancels it and runs it to its end
    first, as asyncio.run does: left pending on a closed loop, the garbage collector would
    close it later with no loop to run its exit (a crash at exit on CPython 3.11)."""
    import asyncio

    from haltproof.machine.live import Driver

    left: list[str] = []

    class Run:
        async def __aenter__(self) -> Run:
            return self

        async def __aexit__(self, *exc: object) -> None:
            left.append(type(exc[1]).__name__)

    async def parked() -> None:
        async with Run():
            await asyncio.Event().wait()

    async def start() -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(parked())
        await asyncio.sleep(0)          # the task enters its `async with`
        return task

    driver = Driver()
    task = driver.call(start)
    assert not task.done()
    driver.close()
    assert left == ["CancelledError"]
    assert task.cancelled() and driver.loop is not None and driver.loop.is_closed()


# ---------------------------------------------------------------- exact messages (issue 18)

@pytest.mark.verdict
def test_a_copy_that_shares_state_says_how_to_fix_the_adapter(tmp_path):
    """The whole message: what the live run shows, why, and what to do (snapshot or replay)."""
    (run,) = runs_of(agent_spec(tmp_path, "SharedCopyAdapter"), pins={"N": 3})
    assert props(run)["bound_code"].message == (
        "action work with tool=ok: the live run for this state is in state steps=1 status=done: copy.deepcopy "
        "does not copy this live run (it shares state with the original): give the adapter snapshot()/restore(), "
        "or leave copyable = False (replay)")


@pytest.mark.verdict
def test_a_replay_that_leads_elsewhere_names_the_usual_causes(tmp_path):
    live_agents.LeakyReplay.calls = 0
    (run,) = runs_of(agent_spec(tmp_path, "LeakyReplay"), pins={"N": 3})
    assert props(run)["bound_code"].message == (
        "action work with tool=ok: the live run for this state is in state steps=2 status=running: replaying "
        "its path of 1 transitions from start() leads elsewhere: the bound code is nondeterministic (time, "
        "randomness, iteration order, or state kept between runs)")


# ---------------------------------------------------------------- mutants that survived (issue 18)
# Single-line bugs in machine/binding.py's handling of live runs that the verdict selection let
# through (issue 18): `--paths` (which paths into a state are compared, with which concrete
# values, and what the finding says), the concrete values each transition hands the code, what a
# finding or a deadline says when the adapter's own methods fail, and what a worker expanding a
# shared level hands back (the runs it reaches, copying given up, representatives counted). Each
# adapter here is strict: it refuses a disabled action, an unknown action and any concrete value
# other than the one haltproof must hand it, so a slip in what the checker feeds the code becomes
# a finding where the correct checker proves.
# (These tests were test_binding_live_kills.)

# three ways into x=1 (via a, b, c), two into x=2 (how p, q); finish has two choices so a
# message lists them joined, and close has none
FORK = """\
machine: fork
bind: live_agents:Fork
vars:
  x: {type: int, min: 0, max: 5, init: 0}
actions:
  go:
    when: x == 0
    choose:
      via: [a, b, c]
    do: [{set: {x: 1}}]
  finish:
    when: x == 1
    choose:
      how: [p, q]
      mode: [m]
    do: [{set: {x: 2}}]
  close:
    when: x == 2
    do: [{set: {x: 3}}]
terminal: x >= 3
"""

ENABLED = {"go": 0, "finish": 1, "close": 2}
LABELS = {("go", "via"): "abc", ("finish", "how"): "pq", ("finish", "mode"): "m"}


def model() -> Machine:
    [m] = prepare(parse_spec(FORK, "fork.yaml"), Options(model_only=True))
    return m


class Run:
    def __init__(self, x: int) -> None:
        self.x, self.via, self.how = x, "", ""


def checked(action: str, choices: dict[str, Any]) -> dict[str, str]:
    """The labels of `choices`, each concrete value checked to be a fresh `[action, choice,
    label]` (the adapter's representative, never handed out twice: it is marked used here)."""
    names = sorted(n for (a, n) in LABELS if a == action)
    if sorted(choices) != names:
        raise ValueError(f"{action} got choices {sorted(choices)}")
    out = {}
    for name, value in choices.items():
        if type(value) is not list or len(value) != 3 or value[:2] != [action, name] \
                or value[2] not in LABELS[(action, name)]:
            raise ValueError(f"{action} got {name}={value!r}")
        value.append("used")
        out[name] = value[2]
    return out


class Fork(LiveAdapter):
    """A strict live adapter of FORK. `differ`: after which label the runs go on differently
    (close gives x=4, finish x=5); `fail`: after which label the code raises instead;
    `late`: after which label it runs out of time (raises OutOfTime, as the deadline would)."""

    def __init__(self, differ: str = "", fail: str = "", late: str = "") -> None:
        self.differ, self.fail, self.late = differ, fail, late

    def start(self, params: dict[str, Any], init: dict[str, Any]) -> Run:
        return Run(init["x"])

    def representative(self, action: str, choice: str, label: Any) -> Any:
        return [action, choice, label]

    def step(self, live: Run, action: str, choices: dict[str, Any]) -> None:
        if ENABLED.get(action) != live.x:
            raise ValueError(f"action {action!r} stepped at x={live.x}")
        labels = checked(action, choices)
        came = {live.via, live.how}
        if self.late and self.late in came:
            raise OutOfTime()
        if self.fail and self.fail in came:
            raise ValueError("the code broke")
        if action == "go":
            live.x, live.via = 1, labels["via"]
        elif action == "finish":
            live.x, live.how = (5 if self.differ and self.differ == live.via else 2), labels["how"]
        else:
            live.x = 4 if self.differ and self.differ == live.how else 3

    def abstract(self, live: Run) -> dict[str, Any]:
        return {"x": live.x}


def check(adapter: Any, paths: int = 1, determinism: str = "off") -> RunResult:
    bound = B.bind_machine(model(), adapter, "tests:Fork", paths, determinism)
    return check_machine(bound, Options(paths=paths, determinism=determinism))


def bound_code(run: RunResult) -> Any:
    [finding] = [p for p in run.properties if p.name == "bound_code"]
    return finding


# ---------------------------------------------------------------- --paths

@pytest.mark.verdict
def test_the_strict_adapter_is_proved_on_every_path_count():
    """What the checker hands the code (representatives, a fresh copy each time, only enabled
    actions, the path's own action and choices) is right: nothing is a finding."""
    for paths in (1, 2, 3, 4):
        assert bound_code(check(Fork(), paths)).status == "holds", paths
    assert check(Fork(), 3).result == "proved"


@pytest.mark.verdict
def test_paths_compares_up_to_n_minus_1_other_paths_into_each_state():
    # via=c is the third way into x=1: --paths 2 compares only via=b with the first (via=a)
    assert bound_code(check(Fork(differ="c"), 2)).status == "holds"
    finding = bound_code(check(Fork(differ="c"), 3))
    assert finding.status == "violated"
    assert finding.message == (
        "action go with via=c: this path reaches a state another path reached first, but the two runs then "
        "differ: action finish (how=p, mode=m) gives {'x': 5} (rule None) after this path and {'x': 2} "
        "(rule None) after the first: the abstract state leaves out something the code acts on (--paths)")
    assert [(s.action, s.state) for s in finding.trace.steps] == [(None, {"x": 0})]


@pytest.mark.verdict
def test_each_state_has_its_own_budget_of_paths():
    # x=1's second way (via=b) is compared, and so is x=2's (how=q): a budget shared by every
    # state would have none left for x=2
    finding = bound_code(check(Fork(differ="q"), 2))
    assert finding.status == "violated"
    assert finding.message == (
        "action finish with how=q, mode=m: this path reaches a state another path reached first, but the "
        "two runs then differ: action close gives {'x': 4} (rule None) after this path and {'x': 3} "
        "(rule None) after the first: the abstract state leaves out something the code acts on (--paths)")
    assert [(s.action, s.state) for s in finding.trace.steps] == [(None, {"x": 0}), ("go", {"x": 1})]


@pytest.mark.verdict
def test_code_that_raises_while_paths_are_compared_is_a_finding_naming_the_bound_code():
    finding = bound_code(check(Fork(fail="b"), 2))
    assert finding.status == "violated"
    first, *_, last = finding.message.splitlines()
    assert first == "action go with via=b: the bound code raised ValueError: the code broke"
    assert last == "ValueError: the code broke"


@pytest.mark.verdict
def test_a_deadline_while_paths_are_compared_says_what_was_running():
    bound = B.bind_machine(model(), Fork(late="b"), "tests:Fork", 2, "off")
    go = bound.actions[0]
    go.step((0,), *go.combos[0])                # via=a: the first path into x=1
    with pytest.raises(OutOfTime) as stop:
        go.step((0,), *go.combos[1])            # via=b: compared, and finish runs out of time after it
    assert stop.value.doing == "running comparing two paths into a state after action go (via=b) from state x=0"


# ---------------------------------------------------------------- the adapter's own methods failing

class SnapshotFork(Fork):
    """Snapshots its runs; taking one of x=1 fails (`how`: raises, or runs out of time)."""

    def __init__(self, how: str = "") -> None:
        super().__init__()
        self.how = how

    def snapshot(self, live: Run) -> tuple[int, str, str]:
        if live.x == 1 and self.how == "raise":
            raise RuntimeError("no snapshot")
        if live.x == 1 and self.how == "late":
            raise OutOfTime()
        return (live.x, live.via, live.how)

    def restore(self, snap: tuple[int, str, str]) -> Run:
        run = Run(snap[0])
        run.via, run.how = snap[1], snap[2]
        return run


@pytest.mark.verdict
def test_a_snapshot_that_raises_is_a_finding_naming_snapshot():
    assert bound_code(check(SnapshotFork(), 2)).status == "holds"
    finding = bound_code(check(SnapshotFork("raise")))
    first, *_, last = finding.message.splitlines()
    assert first == "action go with via=a: the adapter's snapshot() raised RuntimeError: no snapshot"
    assert last == "RuntimeError: no snapshot"


@pytest.mark.verdict
def test_a_deadline_in_snapshot_says_what_was_running():
    bound = B.bind_machine(model(), SnapshotFork("late"), "tests:Fork", 1, "off")
    go = bound.actions[0]
    with pytest.raises(OutOfTime) as stop:
        go.step((0,), *go.combos[1])
    assert stop.value.doing == "running keeping the live run after action go (via=b) from state x=0"


class Many(Fork):
    """Two concrete values per abstract choice; `odd` the label whose second value behaves
    differently, `late` a label whose second value runs out of time."""

    def __init__(self, odd: str = "", late: str = "") -> None:
        super().__init__()
        self.odd, self.late_second = odd, late

    def representatives(self, action: str, choice: str, label: Any) -> list[Any]:
        return [[action, choice, label], [action, choice, label, 2]]

    def step(self, live: Run, action: str, choices: dict[str, Any]) -> None:
        second = [v for v in choices.values() if len(v) == 4 and v[3] == 2]
        for value in second:
            value.pop()
        super().step(live, action, choices)
        if second and self.late_second in {v[2] for v in second}:
            raise OutOfTime()
        if second and self.odd in {v[2] for v in second}:
            live.x = 5


@pytest.mark.verdict
def test_every_representative_is_handed_to_the_code_with_its_action_and_choice():
    run = check(Many())
    assert bound_code(run).status == "holds"
    assert run.representatives == {"go": {"via": {"a": 2, "b": 2, "c": 2}},
                                   "finish": {"how": {"p": 2, "q": 2}, "mode": {"m": 2}}}


@pytest.mark.verdict
def test_two_representatives_that_behave_differently_name_every_choice():
    finding = bound_code(check(Many(odd="q")))
    assert finding.message == (
        "action finish with how=q, mode=m: two concrete values of the abstract choice how=q, mode=m behave "
        "differently: representative 1 gives {'x': 2} (rule None), representative 3 (of 4) gives {'x': 5} "
        "(rule None): the code tells apart values the abstraction puts in one class")


@pytest.mark.verdict
def test_a_deadline_in_another_representative_says_what_was_running():
    bound = B.bind_machine(model(), Many(late="q"), "tests:Fork", 1, "off")
    go, finish = bound.actions[:2]
    go.step((0,), *go.combos[0])
    with pytest.raises(OutOfTime) as stop:
        finish.step((1,), *finish.combos[1])
    assert stop.value.doing == "running the bound code for action finish (how=q, mode=m) from state x=1"


class NoValues(Many):
    """representatives() raises for the label q (`late`: runs out of time there instead)."""

    def __init__(self, late: bool = False) -> None:
        super().__init__()
        self.late_at_q = late

    def representatives(self, action: str, choice: str, label: Any) -> list[Any]:
        if label == "q" and self.late_at_q:
            raise OutOfTime()
        if label == "q":
            raise ValueError("no values for q")
        return super().representatives(action, choice, label)


class NoValue(Fork):
    """representative() raises for the label q."""

    def representative(self, action: str, choice: str, label: Any) -> Any:
        if label == "q":
            raise ValueError("no value for q")
        return super().representative(action, choice, label)


@pytest.mark.verdict
@pytest.mark.parametrize("adapter, message", [
    (NoValues, "the adapter's representatives() raised ValueError: no values for q"),
    (NoValue, "the adapter's representative() raised ValueError: no value for q"),
])
def test_representatives_that_raise_are_a_finding_naming_the_method(adapter, message):
    finding = bound_code(check(adapter()))
    first, *_, last = finding.message.splitlines()
    assert (first, last) == (f"action finish with how=q, mode=m: {message}", message.split(" raised ")[1])
    assert [(s.action, s.state) for s in finding.trace.steps] == [(None, {"x": 0}), ("go", {"x": 1})]


@pytest.mark.verdict
def test_a_deadline_in_representatives_says_what_was_running():
    bound = B.bind_machine(model(), NoValues(late=True), "tests:Fork", 1, "off")
    go, finish = bound.actions[:2]
    go.step((0,), *go.combos[0])
    with pytest.raises(OutOfTime) as stop:
        finish.step((1,), *finish.combos[1])
    assert stop.value.doing == ("running the adapter's representatives() for action finish (how=q, mode=m) "
                                "from state x=1")


class SecondCallLate(Fork):
    """Runs out of time on the second call of the same transition (the determinism check's)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def step(self, live: Run, action: str, choices: dict[str, Any]) -> None:
        self.calls += 1
        if self.calls == 2:
            raise OutOfTime()
        super().step(live, action, choices)


@pytest.mark.verdict
def test_a_deadline_in_the_determinism_checks_second_call_says_what_was_running():
    bound = B.bind_machine(model(), SecondCallLate(), "tests:Fork", 1, "full")
    go = bound.actions[0]
    with pytest.raises(OutOfTime) as stop:
        go.step((0,), *go.combos[2])
    assert stop.value.doing == "running the bound code for action go (via=c) from state x=0"


@pytest.mark.verdict
def test_the_determinism_checks_seconds_add_up_over_its_calls(monkeypatch):
    ticks = iter(range(1000))

    class Clock:
        @staticmethod
        def perf_counter() -> float:
            return float(next(ticks))

    monkeypatch.setattr(B, "time", Clock)
    run = check(Fork(), 1, "full")
    assert run.determinism == {"mode": "full", "why": "--determinism full", "extra_calls": 6, "seconds": 6.0}


@pytest.mark.verdict
@pytest.mark.parametrize("got,shown", [(5, "int"), ({"a"}, "set"), ([], "an empty list"), ((), "an empty tuple")])
def test_representatives_that_are_no_non_empty_list_are_named_by_their_type(got, shown):
    class Odd(Fork):
        def representatives(self, action: str, choice: str, label: Any) -> Any:
            return got

    finding = bound_code(check(Odd()))
    assert finding.message == (f"action go with via=a: representatives() for via=a of action go must give a "
                               f"non-empty list of concrete values, got {shown}")


# ---------------------------------------------------------------- the state API and the runner

class StateFork(B.Adapter):
    """FORK bound through the state API, as strict about the action it is asked for."""

    def concretize(self, state: dict[str, Any], params: dict[str, int]) -> dict[str, Any]:
        return dict(state)

    def step(self, action: str, concrete: dict[str, Any], choices: dict[str, Any]) -> tuple[Any, None]:
        if ENABLED.get(action) != concrete["x"]:
            raise ValueError(f"action {action!r} stepped at x={concrete['x']}")
        return {"x": concrete["x"] + 1}, None

    def abstract(self, concrete: dict[str, Any], params: dict[str, int]) -> dict[str, Any]:
        return concrete


@pytest.mark.verdict
def test_the_state_api_steps_the_action_asked_for():
    run = check(StateFork())
    assert bound_code(run).status == "holds"
    assert run.result == "proved"


@pytest.mark.verdict
def test_a_live_runner_starts_in_the_state_it_is_given():
    seen = []

    class Starts(Fork):
        def start(self, params: dict[str, Any], init: dict[str, Any]) -> Run:
            seen.append((params, init))
            return super().start(params, init)

    assert B.Runner(model(), Starts()).begin({"x": 4}).x == 4
    assert seen == [({}, {"x": 4})]


@pytest.mark.verdict
def test_a_runner_closes_its_event_loop_when_it_is_freed():
    """An async adapter's calls run on the runner's own loop; freeing the runner closes it
    (a loop per run left open would hold its tasks and file descriptors for the whole check)."""
    import gc

    class AsyncStart(Fork):
        async def start(self, params: dict[str, Any], init: dict[str, Any]) -> Run:  # type: ignore[override]
            return Run(init["x"])

    runner = B.Runner(model(), AsyncStart())
    assert runner.begin({"x": 4}).x == 4
    loop = runner.driver.loop
    assert loop is not None and not loop.is_closed()
    del runner
    gc.collect()
    assert loop.is_closed()


@pytest.mark.verdict
def test_a_state_in_its_domains_is_minus_1_to_the_engines_as_for_a_compiled_machine():
    m = model()
    bound = B.bind_machine(m, Fork(), "tests:Fork")
    assert (bound.domain_error((3,)), bound.domain_error((6,))) == (m.domain_error((3,)), m.domain_error((6,))) \
        == (-1, 0)


@pytest.mark.verdict
def test_the_default_strategy_draws_the_adapters_representative():
    class Tagged(B.Adapter):
        def representative(self, action: str, choice: str, label: Any) -> Any:
            return (action, choice, label)

    assert find(Tagged().strategy("go", "via", "a"), lambda v: True) == ("go", "via", "a")


# ---------------------------------------------------------------- a declaration's adapter

@pytest.mark.verdict
def test_a_declarations_adapter_is_built_by_its_factory_once():
    spec = dataclasses.replace(parse_spec(FORK, "fork.yaml"), adapter=lambda: built.append(Fork()) or built[-1],
                               framework="toy")
    built: list[Fork] = []
    assert B.spec_adapter(spec) is built[0] and len(built) == 1


@pytest.mark.verdict
def test_a_deadline_while_a_declarations_adapter_is_built_says_so():
    def late() -> Fork:
        raise OutOfTime()

    spec = dataclasses.replace(parse_spec(FORK, "fork.yaml"), adapter=late, framework="toy")
    with pytest.raises(OutOfTime) as stop:
        B.spec_adapter(spec)
    assert stop.value.doing == "building the toy adapter for live_agents:Fork"


@pytest.mark.verdict
def test_a_spec_without_a_factory_loads_the_adapter_its_bind_names_at_the_bind_line():
    spec = parse_spec(FORK.replace("live_agents:Fork", "no_such_module_xyz:Fork"), "fork.yaml")
    with pytest.raises(SpecError) as err:
        B.spec_adapter(spec)
    [problem] = err.value.problems
    assert (problem.file, problem.line) == ("fork.yaml", 2)
    assert problem.message == "cannot import the bound module: ModuleNotFoundError: No module named 'no_such_module_xyz'"


# ---------------------------------------------------------------- a level shared among workers
# explorer/parallel.py shares the levels of a bound run among worker processes: a worker learns
# how to reach the states it is given (`BoundCode.expanding`: their paths and saved runs), runs
# their transitions (`outcome`), and this process takes each one's figures as its own
# (`take`, `_absorb`). ForgetfulSlices (tests/explorer/test_parallel_bound.py) runs every slice in this process, each by a
# run built afresh as a new worker's is, so mutmut sees the worker's side too.

def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ref: str) -> Path:
    """The agent loop of tests/machine/test_live_binding.py bound to `ref`, as a spec file."""
    monkeypatch.syspath_prepend(str(TESTS))
    path = tmp_path / "agent.yaml"
    path.write_text(AGENT_SPEC.format(adapter="X").replace("bind: live_agents:X", f"bind: {ref}"))
    return path


def one(path: Path) -> RunResult:
    """The check of `path` with N=3 in this process alone."""
    [run] = check_spec(load_spec(path), Options(pins={"N": 3}))
    return run


def shared(path: Path, monkeypatch: pytest.MonkeyPatch) -> RunResult:
    """The check of `path` with N=3, every level shared among (ForgetfulSlices') workers; checked to be."""
    from test_parallel_bound import ForgetfulSlices     # not at the top: it imports this module
    monkeypatch.setattr(parallel, "SHARE_SECONDS", 0.0)
    levels: list[int] = []
    share = parallel.LevelSharer.share
    monkeypatch.setattr(parallel.LevelSharer, "share", lambda self, level: (levels.append(len(level)),
                                                                             share(self, level))[1])
    options = Options(pins={"N": 3})
    batch = parallel.Batch(parallel.Source(path=str(path)), prepare(load_spec(path), options), options)
    run = parallel.check_shared(batch, ForgetfulSlices(), 2)
    assert levels == [1, 2, 2, 2]        # every level: steps 0..3, each running state has two ways out
    return run


class CountedSnapshots(live_agents.SnapshotAdapter):
    """Snapshots of its own; counts the runs it starts and those it restores (on the class: each
    worker's run has an adapter of its own)."""

    started = 0
    restored = 0

    def start(self, params: dict[str, Any], init: dict[str, Any]) -> live_agents.Agent:
        type(self).started += 1
        return super().start(params, init)

    def restore(self, snap: tuple[int, int, str]) -> live_agents.Agent:
        type(self).restored += 1
        return super().restore(snap)


@pytest.mark.verdict
def test_a_worker_restores_the_snapshot_it_is_sent_rather_than_replaying_the_path(tmp_path, monkeypatch):
    """Each state's run is sent to the worker as its snapshot: the worker restores it (a run
    of its own per transition, and per determinism check's second call) and never starts one."""
    path = agent(tmp_path, monkeypatch, "test_live_binding:CountedSnapshots")
    counts = []
    for check_it in (lambda: one(path), lambda: shared(path, monkeypatch)):
        CountedSnapshots.started = CountedSnapshots.restored = 0
        run = check_it()
        assert (run.binding, run.result, run.stats["states"], run.stats["transitions"]) == ("snapshot", "proved", 7, 6)
        counts.append((CountedSnapshots.started, CountedSnapshots.restored))
    # the one run started is the initial state's, here, before any level is shared
    assert counts == [(1, 12), (1, 12)]


@pytest.mark.verdict
def test_a_worker_that_gives_up_copying_has_the_run_replay(tmp_path, monkeypatch):
    """LateUncopyable's runs hold a generator from their second step: the worker copying them
    gives up and replays, and this process must replay from then on too (the report says so)."""
    path = agent(tmp_path, monkeypatch, "live_agents:LateUncopyable")
    for run in (one(path), shared(path, monkeypatch)):
        assert (run.binding, run.result, run.stats["states"]) == ("replay", "proved", 7)


class TwoFails(live_agents.AgentAdapter):
    """Two concrete failures for the tool's `fail` class, which the agent treats alike."""

    def representatives(self, action: str, choice: str, label: Any) -> list[str]:
        return ["ok"] if label == "ok" else ["fail", "broken"]


@pytest.mark.verdict
def test_the_representatives_counted_in_the_workers_are_reported(tmp_path, monkeypatch):
    path = agent(tmp_path, monkeypatch, "test_live_binding:TwoFails")
    for run in (one(path), shared(path, monkeypatch)):
        assert (run.result, run.representatives) == ("proved", {"work": {"tool": {"ok": 1, "fail": 2}}})


class LateClose(Fork):
    """Runs out of time closing a run (raises OutOfTime, as the deadline would)."""

    def close(self, live: Run) -> None:
        raise OutOfTime()


@pytest.mark.verdict
def test_a_deadline_while_a_run_is_closed_says_what_was_running():
    """The run a transition is done with is closed at once: the deadline passing in close()
    names the action, its choice and the state it left."""
    bound = B.bind_machine(model(), LateClose(), "tests:Fork", 1, "off")
    go = bound.actions[0]
    with pytest.raises(OutOfTime) as stop:
        go.step((0,), *go.combos[1])
    assert stop.value.doing == "running closing a live run after action go (via=b) from state x=0"


class ClosingMany(Many):
    """`Many` keeping every run it starts and every run haltproof closes."""

    def __init__(self) -> None:
        super().__init__()
        self.started: list[Run] = []
        self.closed: list[Run] = []

    def start(self, params: dict[str, Any], init: dict[str, Any]) -> Run:
        run = super().start(params, init)
        self.started.append(run)
        return run

    def close(self, live: Run) -> None:
        self.closed.append(live)


@pytest.mark.verdict
def test_every_run_a_representative_is_tried_on_is_closed_once():
    """Each concrete value of an abstract choice runs the transition on a run of its own; the
    run is closed as soon as its result is read, like the first value's. Fork replays: each
    transition starts its runs afresh, go 3 x 2 values, finish 2 x 4 (2 hows x 2 modes), close 1."""
    adapter = ClosingMany()
    run = check(adapter)
    assert bound_code(run).status == "holds"
    assert len(adapter.started) == 15
    assert [sum(c is r for c in adapter.closed) for r in adapter.started] == [1] * 15


class LateSecondClose(Many):
    """Runs out of time closing a run a second concrete value was tried on."""

    def __init__(self) -> None:
        super().__init__()
        self.seconds: list[Run] = []

    def step(self, live: Run, action: str, choices: dict[str, Any]) -> None:
        if any(len(v) == 4 for v in choices.values()):
            self.seconds.append(live)
        super().step(live, action, choices)

    def close(self, live: Run) -> None:
        if any(live is r for r in self.seconds):
            raise OutOfTime()


@pytest.mark.verdict
def test_a_deadline_while_another_representatives_run_is_closed_says_what_was_running():
    bound = B.bind_machine(model(), LateSecondClose(), "tests:Fork", 1, "off")
    go = bound.actions[0]
    with pytest.raises(OutOfTime) as stop:
        go.step((0,), *go.combos[1])
    assert stop.value.doing == "running closing a live run after action go (via=b) from state x=0"


class CloseFails(live_agents.SnapshotAdapter):
    """Raises closing a run: with the determinism check off, the transition fails after its
    successor's run was kept."""

    def close(self, live: live_agents.Agent) -> None:
        raise RuntimeError("cannot close")


CLOSE_FAILS_HEAD = "action work with tool=ok: the bound code raised RuntimeError: cannot close\n"
CLOSE_FAILS_FRAME = (f'  File "{__file__}", line {CloseFails.close.__code__.co_firstlineno + 1}, in close\n'
                     '    raise RuntimeError("cannot close")\nRuntimeError: cannot close')


def close_fails_findings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[list[tuple[str, str]]]:
    """The violated properties of CloseFails checked in this process and by two workers."""
    from test_parallel_bound import ForgetfulSlices
    path = agent(tmp_path, monkeypatch, "test_live_binding:CloseFails")
    monkeypatch.setattr(parallel, "SHARE_SECONDS", 0.0)
    options = Options(pins={"N": 3}, determinism="off")
    batch = parallel.Batch(parallel.Source(path=str(path)), prepare(load_spec(path), options), options)
    [alone] = check_spec(load_spec(path), options)
    runs = [alone, parallel.check_shared(batch, ForgetfulSlices(), 2)]
    assert [run.result for run in runs] == ["violated", "violated"]
    return [[(p.name, p.message) for p in run.properties if p.status == "violated"] for run in runs]


@pytest.mark.verdict
def test_a_close_that_raises_in_a_worker_is_the_same_finding_as_in_this_process(tmp_path, monkeypatch):
    """The worker's transition kept its successor's run, then failed: its outcome is an error
    with no result, which this process raises as its own (seed-21: `outcome` read the result
    of a transition that has none when it tested `or` for `and`). The mutation pool's version
    of the test below: the frames between haltproof's and the user's differ in the staged tree
    (mutmut's trampoline), the same in both runs, so the two findings are compared whole."""
    alone, shared = close_fails_findings(tmp_path, monkeypatch)
    assert shared == alone
    [(name, message)] = alone
    assert name == "bound_code"
    assert message.startswith(CLOSE_FAILS_HEAD) and message.endswith(CLOSE_FAILS_FRAME)


@pytest.mark.verdict
def test_a_close_that_raises_in_a_worker_shows_the_users_traceback_alone(tmp_path, monkeypatch):
    """Only the user's frame of the traceback, in either process. Not in the mutation pool
    (pyproject.toml [tool.mutmut]): there mutmut's trampoline frames enter the traceback."""
    assert close_fails_findings(tmp_path, monkeypatch) == [[("bound_code", CLOSE_FAILS_HEAD + CLOSE_FAILS_FRAME)]] * 2
