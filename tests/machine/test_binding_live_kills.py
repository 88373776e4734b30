"""Single-line bugs in machine/binding.py's handling of live runs that the verdict selection let
through (issue 18): `--paths` (which paths into a state are compared, with which concrete
values, and what the finding says), the concrete values each transition hands the code, what a
finding or a deadline says when the adapter's own methods fail, and what a worker expanding a
shared level hands back (the runs it reaches, copying given up, representatives counted). Each
adapter here is strict: it refuses a disabled action, an unknown action and any concrete value
other than the one haltproof must hand it, so a slip in what the checker feeds the code becomes
a finding where the correct checker proves."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from hypothesis import find

import live_agents
from haltproof.explorer import parallel
from haltproof.explorer.options import Options
from haltproof.explorer.results import RunResult
from haltproof.explorer.check import check_machine, check_spec, prepare
from haltproof.machine import binding as B
from haltproof.machine.compiled import Machine
from haltproof.machine.errors import SpecError
from haltproof.machine.live import LiveAdapter
from haltproof.machine.spec import load_spec, parse_spec
from haltproof.machine.usercode import OutOfTime
from test_live_binding import AGENT_SPEC
from test_parallel_bound import ForgetfulSlices

pytestmark = pytest.mark.verdict

TESTS = Path(__file__).resolve().parent.parent

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

def test_the_strict_adapter_is_proved_on_every_path_count():
    """What the checker hands the code (representatives, a fresh copy each time, only enabled
    actions, the path's own action and choices) is right: nothing is a finding."""
    for paths in (1, 2, 3, 4):
        assert bound_code(check(Fork(), paths)).status == "holds", paths
    assert check(Fork(), 3).result == "proved"


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


def test_code_that_raises_while_paths_are_compared_is_a_finding_naming_the_bound_code():
    finding = bound_code(check(Fork(fail="b"), 2))
    assert finding.status == "violated"
    first, *_, last = finding.message.splitlines()
    assert first == "action go with via=b: the bound code raised ValueError: the code broke"
    assert last == "ValueError: the code broke"


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


def test_a_snapshot_that_raises_is_a_finding_naming_snapshot():
    assert bound_code(check(SnapshotFork(), 2)).status == "holds"
    finding = bound_code(check(SnapshotFork("raise")))
    first, *_, last = finding.message.splitlines()
    assert first == "action go with via=a: the adapter's snapshot() raised RuntimeError: no snapshot"
    assert last == "RuntimeError: no snapshot"


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


def test_every_representative_is_handed_to_the_code_with_its_action_and_choice():
    run = check(Many())
    assert bound_code(run).status == "holds"
    assert run.representatives == {"go": {"via": {"a": 2, "b": 2, "c": 2}},
                                   "finish": {"how": {"p": 2, "q": 2}, "mode": {"m": 2}}}


def test_two_representatives_that_behave_differently_name_every_choice():
    finding = bound_code(check(Many(odd="q")))
    assert finding.message == (
        "action finish with how=q, mode=m: two concrete values of the abstract choice how=q, mode=m behave "
        "differently: representative 1 gives {'x': 2} (rule None), representative 3 (of 4) gives {'x': 5} "
        "(rule None): the code tells apart values the abstraction puts in one class")


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


@pytest.mark.parametrize("adapter, message", [
    (NoValues, "the adapter's representatives() raised ValueError: no values for q"),
    (NoValue, "the adapter's representative() raised ValueError: no value for q"),
])
def test_representatives_that_raise_are_a_finding_naming_the_method(adapter, message):
    finding = bound_code(check(adapter()))
    first, *_, last = finding.message.splitlines()
    assert (first, last) == (f"action finish with how=q, mode=m: {message}", message.split(" raised ")[1])
    assert [(s.action, s.state) for s in finding.trace.steps] == [(None, {"x": 0}), ("go", {"x": 1})]


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


def test_a_deadline_in_the_determinism_checks_second_call_says_what_was_running():
    bound = B.bind_machine(model(), SecondCallLate(), "tests:Fork", 1, "full")
    go = bound.actions[0]
    with pytest.raises(OutOfTime) as stop:
        go.step((0,), *go.combos[2])
    assert stop.value.doing == "running the bound code for action go (via=c) from state x=0"


def test_the_determinism_checks_seconds_add_up_over_its_calls(monkeypatch):
    ticks = iter(range(1000))

    class Clock:
        @staticmethod
        def perf_counter() -> float:
            return float(next(ticks))

    monkeypatch.setattr(B, "time", Clock)
    run = check(Fork(), 1, "full")
    assert run.determinism == {"mode": "full", "why": "--determinism full", "extra_calls": 6, "seconds": 6.0}


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


def test_the_state_api_steps_the_action_asked_for():
    run = check(StateFork())
    assert bound_code(run).status == "holds"
    assert run.result == "proved"


def test_a_live_runner_starts_in_the_state_it_is_given():
    seen = []

    class Starts(Fork):
        def start(self, params: dict[str, Any], init: dict[str, Any]) -> Run:
            seen.append((params, init))
            return super().start(params, init)

    assert B.Runner(model(), Starts()).begin({"x": 4}).x == 4
    assert seen == [({}, {"x": 4})]


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


def test_a_state_in_its_domains_is_minus_1_to_the_engines_as_for_a_compiled_machine():
    m = model()
    bound = B.bind_machine(m, Fork(), "tests:Fork")
    assert (bound.domain_error((3,)), bound.domain_error((6,))) == (m.domain_error((3,)), m.domain_error((6,))) \
        == (-1, 0)


def test_the_default_strategy_draws_the_adapters_representative():
    class Tagged(B.Adapter):
        def representative(self, action: str, choice: str, label: Any) -> Any:
            return (action, choice, label)

    assert find(Tagged().strategy("go", "via", "a"), lambda v: True) == ("go", "via", "a")


# ---------------------------------------------------------------- a declaration's adapter

def test_a_declarations_adapter_is_built_by_its_factory_once():
    spec = dataclasses.replace(parse_spec(FORK, "fork.yaml"), adapter=lambda: built.append(Fork()) or built[-1],
                               framework="toy")
    built: list[Fork] = []
    assert B.spec_adapter(spec) is built[0] and len(built) == 1


def test_a_deadline_while_a_declarations_adapter_is_built_says_so():
    def late() -> Fork:
        raise OutOfTime()

    spec = dataclasses.replace(parse_spec(FORK, "fork.yaml"), adapter=late, framework="toy")
    with pytest.raises(OutOfTime) as stop:
        B.spec_adapter(spec)
    assert stop.value.doing == "building the toy adapter for live_agents:Fork"


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


def test_a_worker_restores_the_snapshot_it_is_sent_rather_than_replaying_the_path(tmp_path, monkeypatch):
    """Each state's run is sent to the worker as its snapshot: the worker restores it (a run
    of its own per transition, and per determinism check's second call) and never starts one."""
    path = agent(tmp_path, monkeypatch, "test_binding_live_kills:CountedSnapshots")
    counts = []
    for check_it in (lambda: one(path), lambda: shared(path, monkeypatch)):
        CountedSnapshots.started = CountedSnapshots.restored = 0
        run = check_it()
        assert (run.binding, run.result, run.stats["states"], run.stats["transitions"]) == ("snapshot", "proved", 7, 6)
        counts.append((CountedSnapshots.started, CountedSnapshots.restored))
    # the one run started is the initial state's, here, before any level is shared
    assert counts == [(1, 12), (1, 12)]


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


def test_the_representatives_counted_in_the_workers_are_reported(tmp_path, monkeypatch):
    path = agent(tmp_path, monkeypatch, "test_binding_live_kills:TwoFails")
    for run in (one(path), shared(path, monkeypatch)):
        assert (run.result, run.representatives) == ("proved", {"work": {"tool": {"ok": 1, "fail": 2}}})


class LateClose(Fork):
    """Runs out of time closing a run (raises OutOfTime, as the deadline would)."""

    def close(self, live: Run) -> None:
        raise OutOfTime()


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


def test_a_close_that_raises_in_a_worker_is_the_same_finding_as_in_this_process(tmp_path, monkeypatch):
    """The worker's transition kept its successor's run, then failed: its outcome is an error
    with no result, which this process raises as its own (seed-21: `outcome` read the result
    of a transition that has none when it tested `or` for `and`)."""
    path = agent(tmp_path, monkeypatch, "test_binding_live_kills:CloseFails")
    monkeypatch.setattr(parallel, "SHARE_SECONDS", 0.0)
    options = Options(pins={"N": 3}, determinism="off")
    batch = parallel.Batch(parallel.Source(path=str(path)), prepare(load_spec(path), options), options)
    [alone] = check_spec(load_spec(path), options)
    for run in (alone, parallel.check_shared(batch, ForgetfulSlices(), 2)):
        assert run.result == "violated"
        assert [(p.name, p.message) for p in run.properties if p.status == "violated"] == [(
            "bound_code", "action work with tool=ok: the bound code raised RuntimeError: cannot close\n"
                          f'  File "{__file__}", line {CloseFails.close.__code__.co_firstlineno + 1}, in close\n'
                          '    raise RuntimeError("cannot close")\nRuntimeError: cannot close')]
