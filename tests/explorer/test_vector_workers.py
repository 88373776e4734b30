"""The vector engine's workers (issue 16): threads sharing each level give the very report
one worker gives — same states, numbering, counts, traces, verdicts — on every bundled spec
the vector engine runs and on the benchmark model, with levels split however small."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from haltproof.explorer.vengine import explore_vector
from haltproof.machine.compiled import CompiledSpec
from haltproof.machine.spec import load_spec
from haltproof.machine.vectorize import NotVectorizable, vectorize

from conftest import ROOT

GATE = ROOT / "bench" / "specs" / "gate_budget.yaml"
BUNDLED = sorted((ROOT / "specs").rglob("*.yaml")) + [ROOT / "docs" / "examples" / "retry_loop.yaml"]


def _untimed(x: Any) -> Any:
    """A JSON report without its timings."""
    if isinstance(x, dict):
        return {k: _untimed(v) for k, v in x.items() if k not in ("seconds", "duration_s")}
    if isinstance(x, list):
        return [_untimed(v) for v in x]
    return x


def _report(cli, monkeypatch, workers: int, *args: str) -> tuple[int, Any]:
    """`haltproof check ARGS --engine vector --format json -j WORKERS`: a single run is
    checked in this process, its vector engine on `workers` threads, every level split
    (PARALLEL_ROWS = 1)."""
    import haltproof.explorer.vengine as V
    with monkeypatch.context() as patch:
        patch.setattr(V, "PARALLEL_ROWS", 1)
        ran = cli("check", *args, "--engine", "vector", "--format", "json", "-j", str(workers))
    return ran.code, _untimed(ran.json())


def test_j_gives_the_vector_engine_of_a_single_run_its_threads(cli, monkeypatch):
    """-j N on a check of one run reaches the vector engine (else the comparisons below would
    compare one worker with itself)."""
    import haltproof.explorer.check as C
    asked = []
    real = C.explore_vector
    monkeypatch.setattr(C, "explore_vector", lambda vm, **kw: asked.append(kw["workers"]) or real(vm, **kw))
    for j in ("1", "3"):
        ran = cli("check", GATE, "-p", "Q=10", "-p", "B=90", "-p", "A=3", "--engine", "vector", "-j", j)
        assert ran.code == 0, ran.err
    assert asked == [1, 3]


def _vector_runs(path) -> bool:
    spec = load_spec(path)
    if spec.bind or spec.python:
        return False
    try:
        from haltproof.explorer.options import Options
        from haltproof.explorer.check import prepare
        for m in prepare(spec, Options(model_only=True)):
            vectorize(m)
    except NotVectorizable:
        return False
    return True


@pytest.mark.parametrize("path", [p for p in BUNDLED if _vector_runs(p)], ids=lambda p: str(p.relative_to(ROOT)))
def test_two_workers_give_the_one_worker_report_on_every_bundled_spec(path, cli, monkeypatch):
    one = _report(cli, monkeypatch, 1, path)
    two = _report(cli, monkeypatch, 2, path)
    assert two == one


@pytest.mark.parametrize("q", [20, 40])
@pytest.mark.parametrize("keep", [1_000_000, 0], ids=["edges kept", "edges dropped"])
def test_two_and_three_workers_give_the_one_worker_report_on_the_benchmark(q, keep, cli, monkeypatch):
    import haltproof.explorer.vengine as V
    monkeypatch.setattr(V, "KEEP_EDGES_BELOW", keep)
    pins = ["-p", f"Q={q}", "-p", f"B={9 * q}", "-p", "A=3"]
    code, one = _report(cli, monkeypatch, 1, GATE, *pins)
    assert code == 0 and one["runs"][0]["stats"]["states"] == (q + 1) ** 3 * 7
    assert _report(cli, monkeypatch, 2, GATE, *pins) == (0, one)
    assert _report(cli, monkeypatch, 3, GATE, *pins) == (0, one)
    bug = ROOT / "bench" / "specs" / "gate_budget_bug.yaml"
    pins = ["-p", f"Q={q}", "-p", f"B={5 * q}", "-p", "A=3"]
    code, one = _report(cli, monkeypatch, 1, bug, *pins)
    budget = next(p for p in one["runs"][0]["properties"] if p["name"] == "budget")
    assert budget["status"] == "violated" and len(budget["trace"]["steps"]) == q + 2     # Q + 1 transitions
    assert code == 0                                        # the spec expects that violation
    assert _report(cli, monkeypatch, 2, bug, *pins) == (0, one)


@pytest.mark.parametrize("q, states, transitions", [(60, 1_588_867, 3_404_715)])
def test_two_workers_count_the_reference_table_exactly(q, states, transitions):
    """../shared/bench's reference counts, with the real split threshold (PARALLEL_ROWS)."""
    vm = vectorize(CompiledSpec(load_spec(GATE)).instantiate({"Q": q, "B": 9 * q, "A": 3}))
    one, two = explore_vector(vm), explore_vector(vm, workers=2)
    assert (len(two.codes), two.transitions, two.visited_set) == (states, transitions, "bitmap")
    assert np.array_equal(one.codes, two.codes) and np.array_equal(one.parent, two.parent)
    assert one.levels == two.levels and np.array_equal(one.terminal, two.terminal)


@pytest.mark.parametrize("workers", [0, -1, True, 1.5, "2"])
def test_workers_must_be_a_positive_integer(workers):
    vm = vectorize(CompiledSpec(load_spec(GATE)).instantiate({"Q": 2, "B": 18, "A": 3}))
    with pytest.raises(ValueError, match=f"workers must be a positive integer, got {workers!r}"):
        explore_vector(vm, workers=workers)


WIDE = """\
machine: wide
vars:
  x: {type: int, min: 0, max: 20, init: 0}
  y: {type: int, min: 0, max: 20, init: 0}
actions:
  right: {when: x < 20, do: [{set: {x: x + 1}}]}
  up: {when: y < 20, do: [{set: {y: y + 1}}]}
properties:
  below_ten: {always: x + y < 10}
  eight: {reachable: x + y == 8 and x > 2}
"""


@pytest.mark.parametrize("workers", [2, 3, 4])
def test_a_finding_in_a_level_split_between_workers_is_the_first_state_of_the_level(monkeypatch, workers):
    """Every state of level 10 breaks the invariant, and the level is split in pieces: the
    finding is its first state (the scalar engine's), not the first piece to finish's."""
    import haltproof.explorer.vengine as V
    from haltproof.explorer.engine import explore
    from haltproof.machine.spec import parse_spec
    monkeypatch.setattr(V, "PARALLEL_ROWS", 1)
    m = CompiledSpec(parse_spec(WIDE, "wide.yaml")).instantiate({})
    scalar, split = explore(m), explore_vector(vectorize(m), workers=workers)
    assert split.findings["below_ten"].state == scalar.findings["below_ten"].state
    assert split.reached["eight"] == scalar.reached["eight"]
    assert split.states[split.findings["below_ten"].state] == (10, 0)      # the first of level 10
