"""The vector engine near the memory floor (issue 16): once a forward graph's edges are
dropped its visited set is a bitmap over the declared space (explorer/codeset.py), states
keep only a code, a parent and two flags, and a BFS level that cannot fit in what memory
is left stops the run cleanly (incomplete, exit 3) before it allocates anything."""

from __future__ import annotations

import numpy as np
import pytest

from haltproof.explorer.options import Options
from haltproof.explorer.check import check_machine, prepare
from haltproof.explorer.memory import rough_size, size_text
from haltproof.explorer.vengine import explore_vector
from haltproof.machine.spec import load_spec
from haltproof.machine.vectorize import vectorize

from conftest import ROOT

GATE = ROOT / "bench" / "specs" / "gate_budget.yaml"


def _gate(q: int, b: int | None = None):
    (m,) = prepare(load_spec(GATE), Options(pins={"Q": q, "B": 9 * q if b is None else b, "A": 3}))
    return m


@pytest.mark.parametrize("dense_limit", [0, 1 << 25], ids=["from the hash index", "from the dense index"])
def test_a_forward_graph_past_the_edge_limit_keeps_its_visited_set_in_a_bitmap(monkeypatch, dense_limit):
    """Same states, order and parents as the run that keeps every edge (and so an index
    of every state), with the visited set in one bit per possible code at the end."""
    import haltproof.explorer.vengine as V
    monkeypatch.setattr(V, "DENSE_LIMIT", dense_limit)
    monkeypatch.setattr(V, "KEEP_EDGES_BELOW", 2000)
    vm = vectorize(_gate(20))
    lean, full = explore_vector(vm), explore_vector(vm, keep_edges=True)
    assert (lean.visited_set, lean.e_dst) == ("bitmap", None)
    assert full.visited_set == ("hash index" if dense_limit == 0 else "dense index")
    assert len(lean.codes) == 64827 and lean.transitions == 138915 and lean.complete
    assert np.array_equal(lean.codes, full.codes) and np.array_equal(lean.parent, full.parent)
    assert lean.levels == full.levels


def test_a_sparse_graph_on_the_bitmap_gives_the_reference_counts(monkeypatch):
    """The sparse variant of shared/bench (B = 4Q: the budget binds first, most of the
    declared space is never reached): 195,335 states at Q = 40, 418,575 transitions."""
    import haltproof.explorer.vengine as V
    monkeypatch.setattr(V, "KEEP_EDGES_BELOW", 1000)
    run = check_machine(_gate(40, 160), Options(engine="vector"))
    assert (run.result, run.stats["states"], run.stats["transitions"]) == ("proved", 195335, 418575)


def test_a_graph_that_turns_out_not_forward_leaves_the_bitmap_and_starts_again(monkeypatch):
    """An edge back into a level already seen: the bitmap cannot number it, so the run
    starts again keeping edges (and an index); the verdicts are the scalar engine's."""
    import haltproof.explorer.vengine as V
    from haltproof.machine.compiled import CompiledSpec
    from haltproof.machine.spec import parse_spec
    monkeypatch.setattr(V, "KEEP_EDGES_BELOW", 0)
    spec = parse_spec("machine: back\nvars: {x: {type: int, min: 0, max: 40, init: 0}}\n"
                      "actions:\n  up: {when: x < 40, do: [{set: {x: x + 1}}]}\n"
                      "  back: {when: x == 30, do: [{set: {x: 2}}]}\n"
                      "terminal: x == 40\nproperties:\n  ends: {terminates: true}\n", "back.yaml")
    m = CompiledSpec(spec).instantiate({})
    ex = explore_vector(vectorize(m))
    assert (ex.visited_set, ex.forward, len(ex.codes)) == ("dense index", False, 41)
    assert ex.e_dst is not None
    vector, scalar = check_machine(m, Options(engine="vector")), check_machine(m, Options(engine="scalar"))
    assert vector.result == scalar.result == "violated"


def _level_sizes(m) -> list[int]:
    full = explore_vector(vectorize(m))
    return [hi - lo for lo, hi in full.levels]


def test_a_level_that_cannot_fit_under_max_memory_stops_before_it_is_allocated(monkeypatch):
    """The process holds 100 MiB (as looked at); --max-memory leaves room for the levels of
    up to 2,000 states: the run stops before the first larger level, incomplete, and says
    what that level needs and what was left."""
    import haltproof.explorer.vengine as V
    monkeypatch.setattr(V, "current_rss", lambda: 100 << 20)
    m = _gate(20)
    sizes = _level_sizes(m)
    vm = vectorize(m)
    per_state = V._VSweep(vm, False, None, None, None, None, None).level_bytes(1)
    room = 2000 * per_state
    run = check_machine(m, Options(engine="vector", max_memory=(100 << 20) + room))
    stop = next(k for k, n in enumerate(sizes) if n > 2000)
    states = sum(sizes[:stop + 1])              # levels 0..stop found, level `stop` not expanded
    assert (run.result, run.stopped_by, run.stats["states"]) == ("incomplete", "max_memory", states)
    limit = size_text((100 << 20) + room)
    assert run.stop_reason == (f"stopped at {states:,} states: memory limit {limit} reached: the next BFS level, "
                               f"from {sizes[stop]:,} states, may take about {rough_size(sizes[stop] * per_state)} "
                               f"more; {rough_size(room)} left")


def test_a_level_the_system_cannot_hold_is_out_of_memory_not_an_oom_kill(monkeypatch, cli):
    """No --max-memory, and the system has 1 MiB available: the first level that may need
    more stops the run with exit 3 and says so, never a killed process nor exit 4."""
    import haltproof.explorer.vengine as V
    monkeypatch.setattr(V, "available_memory", lambda: 1 << 20)
    sizes = _level_sizes(_gate(20))
    ran = cli("check", GATE, "-p", "Q=20", "-p", "B=180", "-p", "A=3", "--engine", "vector", "--format", "json")
    assert ran.code == 3, ran.err
    (run,) = ran.json()["runs"]
    per_state = V._VSweep(vectorize(_gate(20)), False, None, None, None, None, None).level_bytes(1)
    stop = next(k for k, n in enumerate(sizes) if n * per_state > 1 << 20)
    states = sum(sizes[:stop + 1])
    assert (run["result"], run["stopped_by"], run["stats"]["states"]) == ("incomplete", "max_memory", states)
    assert run["stop_reason"] == (
        f"stopped at {states:,} states: out of memory: the next BFS level, from {sizes[stop]:,} states, may take "
        f"about {rough_size(sizes[stop] * per_state)}; the system has 1.0M available (a bound, not a bug: try "
        "--max-memory, more memory, or smaller params)")


@pytest.mark.parametrize("size,text", [(0, "0B"), (1023, "1023B"), (1024, "1.0K"), (310 << 20, "310M"),
                                       (int(2.14 * (1 << 30)), "2.1G"), (9 << 40, "9.0T")])
def test_rough_sizes(size, text):
    assert rough_size(size) == text
