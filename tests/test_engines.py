"""The vector engine agrees with the scalar engine: same states in the same order, same
verdicts, same counterexamples, coverage, vacuity notices and bounds — on every spec of
the repository and on random machines."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from haltproof.explorer.options import Options
from haltproof.explorer.check import check_machine, prepare
from haltproof.explorer.engine import explore
from haltproof.explorer.vengine import explore_vector
from haltproof.machine.compiled import CompiledSpec
from haltproof.machine.spec import load_spec, parse_spec
from haltproof.machine.usercode import OutOfTime
from haltproof.machine.vectorize import NotVectorizable, vectorize

from conftest import ROOT, verdict_specs
from test_differential import models, render

SPECS = sorted(p for p in (ROOT / "specs").rglob("*.yaml")) + [ROOT / "docs" / "examples" / "retry_loop.yaml"]
BENCH = [(ROOT / "bench" / "specs" / "gate_budget.yaml", {"Q": 10, "B": 90, "A": 3}),
         (ROOT / "bench" / "specs" / "gate_budget.yaml", {"Q": 10, "B": 160, "A": 3}),
         (ROOT / "bench" / "specs" / "gate_budget_bug.yaml", {"Q": 10, "B": 50, "A": 3})]


def _summary(run) -> dict:
    return {"result": run.result, "stats": {k: v for k, v in run.stats.items() if k != "seconds"},
            "properties": [(p.name, p.status, p.message,
                            p.trace.to_json() if p.trace is not None else None,
                            p.other_trace.to_json() if p.other_trace is not None else None,
                            p.witness.to_json() if p.witness is not None else None, p.subject)
                           for p in run.properties],
            "coverage": run.coverage, "notices": [n.to_json() for n in run.notices],
            "bounds": {k: (b["value"], b["exact"], b["message"],
                           b["witness"].to_json() if b["witness"] is not None else None)
                       for k, b in run.bounds.items()},
            "scenarios": [(s.name, s.ok, s.message) for s in run.scenarios]}


def _both(spec, pins: dict | None = None, **opts) -> list[tuple[dict, dict, str]]:
    for m in prepare(spec, Options(pins=pins or {}, model_only=True)):
        try:
            vectorize(m)
        except NotVectorizable as why:
            pytest.skip(f"runs on the scalar engine only: {why}")
    out = []
    for engine_runs in zip(*[[check_machine(m, Options(engine=e, model_only=True, **opts))
                              for m in prepare(spec, Options(pins=pins or {}, model_only=True))]
                             for e in ("scalar", "vector")]):
        scalar, vector = engine_runs
        out.append((_summary(scalar), _summary(vector), vector.engine))
    return out


@pytest.mark.parametrize("path", verdict_specs(SPECS), ids=lambda p: str(p.relative_to(ROOT)))
def test_engines_agree_on_every_repo_spec(path: Path):
    spec = load_spec(path)
    for scalar, vector, _engine in _both(spec):
        assert scalar == vector


@pytest.mark.verdict
@pytest.mark.parametrize("path,pins", BENCH, ids=lambda x: str(x))
def test_engines_agree_on_the_benchmark_model(path, pins):
    for scalar, vector, engine in _both(load_spec(path), pins):
        assert engine == "vector"
        assert scalar == vector


@pytest.mark.verdict
def test_engines_agree_when_the_exploration_is_cut_short():
    spec = load_spec(ROOT / "bench" / "specs" / "gate_budget.yaml")
    for scalar, vector, _ in _both(spec, {"Q": 10, "B": 90, "A": 3}, max_states=500):
        assert scalar["result"] == vector["result"] == "incomplete"
        assert [p[:3] for p in scalar["properties"]] == [p[:3] for p in vector["properties"]]


def test_vector_engine_is_the_default_where_it_applies(cli):
    small = cli("check", ROOT / "bench" / "specs" / "gate_budget.yaml", "-p", "Q=10", "-p", "B=90", "-p", "A=3",
                "--format", "json")
    assert small.json()["runs"][0]["engine"] == "scalar"      # 9,317 states: numpy would only add overhead
    ran = cli("check", ROOT / "bench" / "specs" / "gate_budget.yaml", "-p", "Q=20", "-p", "B=180", "-p", "A=3",
              "--format", "json")
    run = ran.json()["runs"][0]
    assert run["engine"] == "vector" and run["stats"]["states"] == 64827 and run["stats"]["transitions"] == 138915
    loop = cli("check", ROOT / "specs" / "loop_demo.yaml", "-p", "max_steps=2", "-p", "max_retries=0",
               "--format", "json")
    assert loop.json()["runs"][0]["engine"] == "scalar"        # bound to code: the scalar engine runs it
    forced = cli("check", ROOT / "specs" / "loop_demo.yaml", "--engine", "vector")
    assert forced.code == 2 and "--engine vector cannot run this spec" in forced.err


@settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(models())
@pytest.mark.slow
def test_engines_agree_on_random_machines(model):
    spec = parse_spec(render(model), "random.yaml")
    m = CompiledSpec(spec).instantiate({})
    try:
        vm = vectorize(m)
    except NotVectorizable:
        return
    sx, vx = explore(m), explore_vector(vm)
    assert [sx.states[i] for i in range(len(sx.states))] == [vx.states[i] for i in range(len(vx.states))]
    assert list(sx.parent) == list(vx.parent)
    assert list(sx.e_dst) == [int(d) for d in vx.e_dst] and list(sx.edge_start) == [int(x) for x in vx.edge_start]
    assert {k: (f.state, f.message, f.step, f.subject) for k, f in sx.findings.items()} == \
           {k: (f.state, f.message, f.step, f.subject) for k, f in vx.findings.items()}
    assert [sx.e_rule[e] for e in range(len(sx.e_rule))] == [vx.e_rule[e] for e in range(len(vx.e_dst))]
    scalar = check_machine(m, Options(engine="scalar"))
    vector = check_machine(m, Options(engine="vector"))
    assert _summary(scalar) == _summary(vector)


@pytest.mark.verdict
def test_dropping_edges_of_forward_graphs_changes_no_result(monkeypatch):
    """Past KEEP_EDGES_BELOW transitions a forward graph keeps no edges; a graph that
    turns out not to be forward is explored again with them. Results never change."""
    import haltproof.explorer.vengine as V
    monkeypatch.setattr(V, "KEEP_EDGES_BELOW", 0)
    forward = load_spec(ROOT / "bench" / "specs" / "gate_budget.yaml")
    machines = prepare(forward, Options(pins={"Q": 10, "B": 90, "A": 3}))
    ex = explore_vector(vectorize(machines[0]))
    assert ex.forward and ex.e_dst is None                       # nothing stored per edge
    for scalar, vector, _ in _both(forward, {"Q": 10, "B": 90, "A": 3}):
        assert scalar == vector
    for scalar, vector, _ in _both(load_spec(ROOT / "bench" / "specs" / "gate_budget_bug.yaml"),
                                   {"Q": 10, "B": 50, "A": 3}):        # the bug: a violation, no edges
        assert scalar == vector
    branchy = parse_spec(
        "machine: branchy\nvars: {x: {type: int, min: 0, max: 4, init: 0}}\n"
        "actions:\n  step: {when: x < 4, do: [{set: {x: x + 1}}]}\n"
        "  jump: {when: x == 0, do: [{set: {x: 4}}]}\n"
        "terminal: x == 4\nproperties:\n  within3: {terminates_within: 3}\n", "branchy.yaml")
    ex = explore_vector(vectorize(CompiledSpec(branchy).instantiate({})))
    assert not ex.forward and ex.e_dst is not None               # explored again, with edges
    for scalar, vector, _ in _both(branchy):
        assert scalar == vector


@pytest.mark.verdict
def test_a_partial_exploration_without_stored_edges(monkeypatch):
    """Edges dropped, then --max-states stops the run: termination stays undecided and the
    bounds say "at least", exactly as on the scalar engine — no crash."""
    import haltproof.explorer.vengine as V
    monkeypatch.setattr(V, "KEEP_EDGES_BELOW", 0)
    spec = load_spec(ROOT / "bench" / "specs" / "gate_budget.yaml")
    for scalar, vector, _ in _both(spec, {"Q": 10, "B": 90, "A": 3}, max_states=3000):
        assert vector["result"] == "incomplete"
        value, exact, message, witness = vector["bounds"]["transitions"]
        assert exact is False and message.startswith(f"at least {value} (")
        assert len(witness["steps"]) - 1 == value             # a real run of that length
        assert [p[:3] for p in scalar["properties"]] == [p[:3] for p in vector["properties"]]



# -- fixed-width integers: numpy wraps where Python does not, so widths are decided up front

def _spec(text: str):
    return parse_spec(text, "wide.yaml")


WIDE_PROPERTY = """\
machine: wide
vars: {x: {type: int, min: 0, max: 3, init: 0}}
actions:
  inc: {when: x < 3, do: [{set: {x: x + 1}}]}
terminal: x == 3
properties:
  small: {always: x * 1073741824 * 4 < 5}
"""

STAGED = """\
machine: staged
vars:
  x: {type: int, min: 0, max: 3, init: 0}
  tmp: {type: int, min: 0, max: 0, init: 0}
  hot: {type: bool, init: false}
actions:
  go:
    when: x < 3
    do:
      - set: {tmp: x * 1000000, x: x + 1}
      - decide: hot
        rules:
          - {name: heats, when: tmp * 3000 > 0, then: true}
          - {name: stays, then: false}
      - set: {tmp: 0}
terminal: x == 3
properties:
  never_hot: {always: not hot}
"""


@pytest.mark.verdict
@pytest.mark.parametrize("text,steps", [(WIDE_PROPERTY, 1), (STAGED, 2)], ids=["property", "between-stages"])
def test_values_past_32_bits_run_in_64_bits_and_are_caught(text, steps):
    """x * 2^32 and a var read between stages while outside its domain (tmp = 10^6 before
    the last stage resets it) wrap in int32; the interval analysis widens the arrays."""
    m = CompiledSpec(_spec(text)).instantiate({})
    assert vectorize(m).int_t is np.int64
    for scalar, vector, engine in _both(_spec(text)):
        assert engine == "vector" and scalar == vector
        bad = [p for p in vector["properties"] if p[1] == "violated"]
        assert len(bad) == 1 and len(bad[0][3]["steps"]) - 1 == steps


@pytest.mark.verdict
def test_values_past_64_bits_run_on_the_scalar_engine(cli, tmp_path):
    text = WIDE_PROPERTY.replace("x * 1073741824 * 4 < 5", "x * 1099511627776 * 1073741824 * 4 < 5")
    with pytest.raises(NotVectorizable, match="beyond exact 64-bit arithmetic"):
        vectorize(CompiledSpec(_spec(text)).instantiate({}))
    path = tmp_path / "wide.yaml"
    path.write_text(text)
    auto = cli("check", path, "--format", "json")
    run = auto.json()["runs"][0]
    assert auto.code == 1 and run["engine"] == "scalar" and run["result"] == "violated"
    forced = cli("check", path, "--engine", "vector")
    assert forced.code == 2 and "beyond exact 64-bit arithmetic" in forced.err


@pytest.mark.verdict
def test_small_values_run_in_32_bits():
    spec = load_spec(ROOT / "bench" / "specs" / "gate_budget.yaml")
    vm = vectorize(prepare(spec, Options(pins={"Q": 100, "B": 900, "A": 3}))[0])
    assert vm.int_t is np.int32


# -- a step property reading a choice its action does not make, behind and/or/if

READS = """\
machine: reads
vars:
  x: {{type: int, min: 0, max: 4, init: 0}}
actions:
  add:
    when: x < 4
    choose:
      n: [1, 2]
    do:
      - set:
          x: "min(x + n, 4)"
  stop:
    when: x >= 1
    do:
      - set:
          x: 4
terminal: x == 4
properties:
  small_steps:
    step: "{step}"
"""


@pytest.mark.verdict
@pytest.mark.parametrize("step,expect", [
    # guarded: `stop` never reads n, so this holds on both engines
    ("action == stop or n <= 2", {"small_steps": "holds", "well_defined": "holds"}),
    # unguarded for `stop` once x >= 2: the scalar engine raises on the first such stop
    ("before.x < 2 or after.x - before.x <= n", {"well_defined": "violated"}),
    # violated by `add` (n = 2 from x = 0) before any `stop` reads n: a failed property is still
    # evaluated, so the later read is a `well_defined` violation too
    ("n < 2 if action == add else n > 0", {"small_steps": "violated", "well_defined": "violated"}),
    # an if whose other branch reads n: stop reads it at once, add is fine
    ("(n > 0) if before.x >= 0 else True", {"well_defined": "violated"}),
    # `and` reads n before the constant that decides it: folding the constant must keep the read
    # (both engines said well_defined holds; found by the differential test of issue 15)
    ("n < 9 and False", {"small_steps": "violated", "well_defined": "violated"}),
    ("n > 0 and action == add", {"well_defined": "violated"}),
], ids=["guarded", "unguarded", "violated-first", "if-branch", "read-before-false", "read-before-action"])
def test_a_missing_choice_is_reported_the_same_on_both_engines(step, expect):
    text = READS.format(step=step)
    vm = vectorize(CompiledSpec(_spec(text)).instantiate({}))
    assert vm.step_props                       # vectorized, not sent to the scalar engine
    for scalar, vector, engine in _both(_spec(text)):
        assert engine == "vector" and scalar == vector
        status = {p[0]: p[1] for p in vector["properties"]}
        for name, want in expect.items():
            assert status[name] == want, (name, vector["properties"])
        if expect.get("well_defined") == "violated":
            wd = next(p for p in vector["properties"] if p[0] == "well_defined")
            assert "reads choice n, which action stop does not make" in wd[2]


@pytest.mark.verdict
def test_enum_vars_sharing_values_keep_their_own_encoding():
    """`mode`'s values are not a run of literal ids (`idle` and `done` come from `phase`),
    so its code digit goes through a lookup table rather than arithmetic."""
    text = """\
machine: shared
vars:
  phase: {type: enum, values: [idle, busy, done], init: idle}
  mode: {type: enum, values: [idle, done], init: idle}
  n: {type: int, min: 0, max: 3, init: 0}
actions:
  work:
    when: phase != done
    do:
      - set: {n: "min(n + 1, 3)", mode: "done if n >= 2 else idle"}
      - decide: phase
        rules:
          - {name: finishes, when: n == 3, then: done}
          - {name: keeps_busy, then: busy}
terminal: phase == done
properties:
  mode_follows: {always: "mode == idle or n >= 3"}
  done_means_done: {always: "phase != done or mode == done"}
"""
    vm = vectorize(CompiledSpec(_spec(text)).instantiate({}))
    assert vm.local[1] is not None and vm.local[0] is None
    for scalar, vector, engine in _both(_spec(text)):
        assert engine == "vector" and scalar == vector
        assert {p[0]: p[1] for p in vector["properties"]}["mode_follows"] == "holds"


# -- product spaces above the dense index: the compact hash index of explorer/codeset.py

@pytest.mark.slow
def test_the_hash_index_changes_no_result(monkeypatch):
    """Every spec of the repository, the benchmark and its bug, with the visited set
    forced into the hash index: the same states, order, verdicts and traces."""
    import haltproof.explorer.vengine as V
    monkeypatch.setattr(V, "DENSE_LIMIT", 0)
    for path in SPECS:
        for scalar, vector, _ in _both(load_spec(path)):
            assert scalar == vector, path
    for path, pins in BENCH:
        for scalar, vector, _ in _both(load_spec(path), pins):
            assert scalar == vector
    monkeypatch.setattr(V, "KEEP_EDGES_BELOW", 0)          # edges dropped as well
    for path, pins in BENCH:
        for scalar, vector, _ in _both(load_spec(path), pins):
            assert scalar == vector


HUGE = """\
machine: huge
vars:
  x: {type: int, min: 0, max: 1000000000, init: 0}
  y: {type: int, min: 0, max: 1000000, init: 0}
actions:
  step_x: {when: "x < 60 and y < 60", do: [{set: {x: x + 1}}]}
  step_y: {when: "x < 60 and y < 60", do: [{set: {y: y + 1}}]}
  jump: {when: "x == 59", do: [{set: {x: 1000000000}}]}
terminal: x >= 60 or y >= 60
properties:
  y_small: {always: y <= 60}
  far: {reachable: x == 1000000000}
"""


def test_a_declared_space_of_10_to_the_15_runs_on_the_vector_engine(cli, tmp_path):
    vm = vectorize(CompiledSpec(_spec(HUGE)).instantiate({}))
    assert vm.space > 10 ** 15
    for scalar, vector, engine in _both(_spec(HUGE)):
        assert engine == "vector" and scalar == vector
        assert vector["result"] == "proved" and vector["stats"]["states"] > 3600
    path = tmp_path / "huge.yaml"
    path.write_text(HUGE.replace("y <= 60", "y <= 59"))
    run = cli("check", path, "--engine", "vector", "--format", "json").json()["runs"][0]
    bad = next(p for p in run["properties"] if p["name"] == "y_small")
    assert run["engine"] == "vector" and bad["status"] == "violated"
    assert len(bad["trace"]["steps"]) - 1 == 60          # the shortest way to y = 60


@pytest.mark.parametrize("limit", ["RANK_LIMIT", "DENSE_SLOTS"])
@pytest.mark.slow
def test_the_fallback_orderings_change_no_result(monkeypatch, limit):
    """A level whose (source, action-combo) keys do not fit int32 is ranked by argsort
    before it meets the index, and one with more slots than DENSE_SLOTS is ordered by
    argsort instead of a slot table; forced here on small specs, results never change."""
    import haltproof.explorer.vengine as V
    monkeypatch.setattr(V, limit, 0)
    for path in SPECS:
        for scalar, vector, _ in _both(load_spec(path)):
            assert scalar == vector, path
    for path, pins in BENCH:
        for scalar, vector, _ in _both(load_spec(path), pins):
            assert scalar == vector


# -- running out of memory is a bound: the exploration stops as at --max-states

GRID = """\
machine: grid
description: three counters, raised one at a time up to N; (N + 1)^3 states
params:
  N: [{n}]
vars:
  x: {{type: int, min: 0, max: N, init: 0}}
  y: {{type: int, min: 0, max: N, init: 0}}
  z: {{type: int, min: 0, max: N, init: 0}}
actions:
  raise_x:
    when: x < N
    do:
      - set: {{x: x + 1}}
  raise_y:
    when: y < N
    do:
      - set: {{y: y + 1}}
  raise_z:
    when: z < N
    do:
      - set: {{z: z + 1}}
terminal:
  when: x == N and y == N and z == N
properties:
  {properties}
"""
GRID_HOLDS = "within_range: {always: x + y + z <= 3 * N}\n  terminates: {terminates: true}"
GRID_EARLY_BUG = "not_both: {always: not (x == 1 and y == 1)}\n  terminates: {terminates: true}"


def grid(n: int, properties: str = GRID_HOLDS):
    return parse_spec(GRID.format(n=n, properties=properties), "grid.yaml")


def _grid_machine(n: int = 29):
    (m,) = prepare(grid(n, GRID_HOLDS + "\n  corner: {reachable: x == 10 and y == 5 and z == 0}"), Options())
    return m


def _prefix_of(part, full, half: int = 0) -> None:
    """`part` is `full` stopped before state part.expanded: the same states in the same
    order as far as found, the same edges for the states it expanded; `half` states were
    found from the state it left half expanded."""
    n, done = len(part.states), part.expanded
    assert [part.states[i] for i in range(n)] == [full.states[i] for i in range(n)]
    assert [int(p) for p in part.parent] == [int(p) for p in full.parent[:n]]
    assert len(part.terminal) == done and list(part.terminal) == list(full.terminal[:done])
    assert [int(x) for x in part.edge_start] == [int(x) for x in full.edge_start[:done + 1]]
    assert part.transitions == int(part.edge_start[-1]) == len(part.e_dst)
    assert [int(d) for d in part.e_dst] == [int(d) for d in full.e_dst[:part.transitions]]
    assert n == 1 + sum(1 for p in full.parent[1:] if p < done) + half    # what expanding them finds


@pytest.mark.parametrize("stop", ["memory", "deadline"])
@pytest.mark.parametrize("loop", ["generated", "plain"])
def test_stopping_in_the_middle_of_a_state_leaves_a_consistent_partial_exploration(monkeypatch, loop, stop):
    """MemoryError, or the deadline passing in user code, while a state is half expanded
    (raised where a new state is checked): that state goes back to unexpanded, everything
    before it stays, and nothing is lost."""
    import haltproof.explorer.engine as E
    m = _grid_machine()
    if loop == "plain":
        m = copy.copy(m)
        m.sweep = None
    full = explore(m)
    hit = full.reached["corner"]
    checked = E._Sweep.check_state

    def check_state(self, j, t):
        if j == hit:
            raise MemoryError if stop == "memory" else OutOfTime("running corner from state x=10 y=5 z=0")
        return checked(self, j, t)
    monkeypatch.setattr(E._Sweep, "check_state", check_state)
    part = explore(m)
    if stop == "memory":
        assert (part.stopped_by, part.out_of_memory, part.complete) == ("max_memory", True, False)
        assert part.index == {}                   # dropped to make room for the report
    else:
        assert (part.stopped_by, part.out_of_memory, part.complete) == ("timeout", False, False)
        assert part.stopped_in == "running corner from state x=10 y=5 z=0"
        assert len(part.index) == len(part.states)
    assert part.expanded == full.parent[hit]      # the state being expanded when it stopped
    assert len(part.states) == hit + 1            # the state found last stays found
    _prefix_of(part, full, half=sum(1 for p in full.parent[:hit + 1] if p == part.expanded))
    assert "corner" not in part.reached
    assert sum(part.rule_counts.values()) == 0 and len(part.e_dst) > 0


def test_memory_running_out_in_the_middle_of_a_level_undoes_the_level(monkeypatch):
    import haltproof.explorer.vengine as V
    vm = vectorize(_grid_machine())
    full = explore_vector(vm)
    calls = iter(range(10**6))
    checks = V._transition_checks

    def transition_checks(*args, **kwargs):
        if next(calls) == 12:                     # the 13th level, half swept
            raise MemoryError
        return checks(*args, **kwargs)
    monkeypatch.setattr(V, "_transition_checks", transition_checks)
    part = explore_vector(vm)
    assert (part.stopped_by, part.out_of_memory, part.complete) == ("max_memory", True, False)
    assert part.levels[-1][0] == part.expanded and len(part.levels) == 13     # levels 0..12, 12 unexpanded
    _prefix_of(part, full)


@pytest.mark.parametrize("engine", ["scalar", "vector"])
def test_max_memory_stops_where_the_memory_is_looked_at(monkeypatch, engine):
    """The k-th look at the process's memory sees k MiB: with --max-memory 3M the scalar
    engine stops at its 4th look (state 3 * 4096), over the limit. The vector engine looks
    before each level with what the level may take: at its 3rd look (3 MiB held) nothing is
    left for level 2, so it stops there, before expanding it, and says so."""
    import haltproof.explorer.engine as E
    import haltproof.explorer.vengine as V
    from haltproof.explorer.memory import rough_size
    looks = iter(range(1, 10**6))
    monkeypatch.setattr(E if engine == "scalar" else V, "current_rss", lambda: next(looks) << 20)
    m = _grid_machine()
    run = check_machine(m, Options(engine=engine, max_memory=3 << 20))
    full = explore(m)
    if engine == "scalar":
        done, detail = 3 * E.MEMORY_EVERY, ""
    else:                                       # levels 0..1 (1 + 3 states) expanded, level 2 holds 6
        need = V._VSweep(vectorize(m), False, None, None, None, None, None).level_bytes(6)
        done, detail = 4, f": the next BFS level, from 6 states, may take about {rough_size(need)} more; 0B left"
    found = 1 + sum(1 for p in full.parent[1:] if p < done)
    assert (run.result, run.stopped_by, run.stats["states"]) == ("incomplete", "max_memory", found)
    assert run.stop_reason == f"stopped at {found:,} states: memory limit 3M reached{detail}"
    assert {p.name: p.message for p in run.properties}["within_range"] == \
        "not decided: the exploration stopped at --max-memory"


@pytest.mark.parametrize("engine", ["scalar", "vector"])
def test_a_violation_found_before_the_memory_limit_stands(monkeypatch, engine):
    """As at --max-states: what was found stays found, and a violation beats incomplete."""
    import haltproof.explorer.engine as E
    import haltproof.explorer.vengine as V
    looks = iter(range(1, 10**6))
    monkeypatch.setattr(E if engine == "scalar" else V, "current_rss", lambda: next(looks) << 20)
    (m,) = prepare(grid(29, GRID_EARLY_BUG), Options())
    run = check_machine(m, Options(engine=engine, max_memory=3 << 20))
    assert (run.result, run.verdict, run.stopped_by) == ("violated", "fail", "max_memory")
    bug = next(p for p in run.properties if p.name == "not_both")
    assert bug.status == "violated" and [s.state for s in bug.trace.steps] == \
        [{"x": 0, "y": 0, "z": 0}, {"x": 1, "y": 0, "z": 0}, {"x": 1, "y": 1, "z": 0}]


@pytest.mark.verdict      # fast: in explorer/engine.py's per-mutant selection
@pytest.mark.parametrize("loop", ["generated", "plain"])
def test_rule_counts_after_running_out_of_memory_count_the_edges_kept(monkeypatch, loop):
    """The half-expanded state's edges are taken back, and so are their rules' counts."""
    import haltproof.explorer.engine as E
    (m,) = prepare(load_spec(ROOT / "specs" / "loop_demo.yaml"),
                   Options(pins={"max_steps": 5, "max_retries": 1}, model_only=True))
    if loop == "plain":
        m = copy.copy(m)
        m.sweep = None
    # an independence property (decide_ignores_scenario) is checked on the plain loop only
    only = {p.name for p in m.spec.properties if p.kind != "independent"}
    loops, undo = [], E._undo_partial

    def undone(x, i, generated, fired):
        loops.append(generated)         # which loop was interrupted
        undo(x, i, generated, fired)
    monkeypatch.setattr(E, "_undo_partial", undone)
    full = explore(m, properties=only)
    checked = E._Sweep.check_state
    seen = []

    def check_state(self, j, t):
        if j >= 50:
            seen.append(j)
            raise MemoryError
        return checked(self, j, t)
    monkeypatch.setattr(E._Sweep, "check_state", check_state)
    part = explore(m, properties=only)
    assert loops == [loop == "generated"]
    (hit,) = seen
    assert part.out_of_memory and part.expanded == full.parent[hit]
    taken_back = list(full.e_dst[full.edge_start[part.expanded]:]).index(hit)
    assert taken_back > 0           # the state had edges (and rules counted) before it ran out
    _prefix_of(part, full, half=sum(1 for p in full.parent[:hit + 1] if p == part.expanded))
    fired: dict[str, int] = {r: 0 for r in full.rule_counts}
    for e in range(part.transitions):
        fired[part.e_rule[e]] += 1
    assert part.rule_counts == fired and sum(fired.values()) == part.transitions > 0
