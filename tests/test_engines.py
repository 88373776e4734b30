"""The vector engine agrees with the scalar engine: same states in the same order, same
verdicts, same counterexamples, coverage, vacuity notices and bounds — on every spec of
the repository and on random machines."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from explorer.check import Options, check_machine, prepare
from explorer.engine import explore
from explorer.vengine import explore_vector
from machine.compiled import CompiledSpec
from machine.spec import load_spec, parse_spec
from machine.vectorize import NotVectorizable, vectorize

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
                            p.witness.to_json() if p.witness is not None else None)
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
    for scalar, vector, engine in _both(spec):
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
    assert {k: (f.state, f.message, f.step) for k, f in sx.findings.items()} == \
           {k: (f.state, f.message, f.step) for k, f in vx.findings.items()}
    assert [sx.e_rule[e] for e in range(len(sx.e_rule))] == [vx.e_rule[e] for e in range(len(vx.e_dst))]
    scalar = check_machine(m, Options(engine="scalar"))
    vector = check_machine(m, Options(engine="vector"))
    assert _summary(scalar) == _summary(vector)


@pytest.mark.verdict
def test_dropping_edges_of_forward_graphs_changes_no_result(monkeypatch):
    """Past KEEP_EDGES_BELOW transitions a forward graph keeps no edges; a graph that
    turns out not to be forward is explored again with them. Results never change."""
    import explorer.vengine as V
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
    import explorer.vengine as V
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
    # violated by `add` (n = 2 from x = 0) before any `stop` can read n: only the property fails
    ("n < 2 if action == add else n > 0", {"small_steps": "violated", "well_defined": "holds"}),
    # an if whose other branch reads n: stop reads it at once, add is fine
    ("(n > 0) if before.x >= 0 else True", {"well_defined": "violated"}),
], ids=["guarded", "unguarded", "violated-first", "if-branch"])
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

def test_the_hash_index_changes_no_result(monkeypatch):
    """Every spec of the repository, the benchmark and its bug, with the visited set
    forced into the hash index: the same states, order, verdicts and traces."""
    import explorer.vengine as V
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
def test_the_fallback_orderings_change_no_result(monkeypatch, limit):
    """A level whose (source, action-combo) keys do not fit int32 is ranked by argsort
    before it meets the index, and one with more slots than DENSE_SLOTS is ordered by
    argsort instead of a slot table; forced here on small specs, results never change."""
    import explorer.vengine as V
    monkeypatch.setattr(V, limit, 0)
    for path in SPECS:
        for scalar, vector, _ in _both(load_spec(path)):
            assert scalar == vector, path
    for path, pins in BENCH:
        for scalar, vector, _ in _both(load_spec(path), pins):
            assert scalar == vector
