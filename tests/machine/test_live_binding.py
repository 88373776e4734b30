"""Live binding (machine/live.py): the code's own runs, reached by snapshot, copy or replay.

The adapters live in tests/live_agents.py; AGENT_SPEC is the agent loop they bind.
"""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path

import pytest

import live_agents
from haltproof.explorer.options import Options
from haltproof.explorer.check import check_spec
from haltproof.machine import live
from haltproof.machine.spec import load_spec

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
