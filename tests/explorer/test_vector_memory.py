"""The vector engine near the memory floor (issue 16): once a forward graph's edges are
dropped its visited set is a bitmap over the declared space (explorer/codeset.py), states
keep only a code, a parent and two flags, and a BFS level that cannot fit in what memory
is left stops the run cleanly (incomplete, exit 3) before it allocates anything."""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
from collections.abc import Callable

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


# -- the up-front reservation (issue 26, findings 5, 6 and 13) ---------------------------------
# The per-state arrays were reserved for the whole declared space, capped only by the memory
# available: a param pinned huge, or past-time monitors multiplying the space, asked numpy for
# 12.5 GiB of address space before any bound applied, and where the system refused (an
# address-space limit, strict overcommit, or no /proc to read the memory from) the check
# ended in a traceback, exit 4.

HUGE = """\
machine: huge
params:
  K: {min: 1, max: 1000000000000}
vars:
  n: {type: int, min: 0, max: K, init: 0}
actions:
  tick:
    when: n < K
    do:
      - set: {n: n + 1}
terminal: n == K
properties:
  ends: {terminates: true}
"""


def _deep(levels: int) -> str:
    """previous(previous(...(b)...)) `levels` deep on a 60-step machine: each level a monitor
    bit, the declared space 61 * 2 * 2^levels."""
    nested = "b"
    for _ in range(levels):
        nested = f"previous({nested})"
    return ("machine: deep\nvars:\n  n: {type: int, min: 0, max: 60, init: 0}\n  b: {type: bool, init: true}\n"
            "actions:\n  step:\n    when: n < 60\n    choose: {c: [true, false]}\n"
            "    do:\n      - set: {n: n + 1, b: c}\n"
            f"terminal: n == 60\nproperties:\n  deep: {{always: \"{nested} or n < 41\"}}\n")


def test_the_reservation_is_bounded_by_max_states_and_the_address_space_limit(monkeypatch):
    """As many states as there can be: the declared space, about --max-states, what memory
    holds at 14 bytes a state (int64 codes), and half of what an address-space limit leaves."""
    import haltproof.explorer.memory as M
    import haltproof.explorer.vengine as V
    monkeypatch.setattr(M, "available_memory", lambda: 14 << 30)
    monkeypatch.setattr(M, "address_space_left", lambda: None)
    monkeypatch.setattr(V, "address_space_left", lambda: None)
    assert V._reserve(10 ** 12, np.int64, None, None) == (14 << 30) // 14
    assert V._reserve(10 ** 12, np.int64, None, 100_000) == 100_001
    assert V._reserve(500, np.int32, None, 100_000) == 500
    monkeypatch.setattr(M, "current_rss", lambda: 100 << 20)      # --max-memory leaves 14 MiB
    assert V._reserve(10 ** 12, np.int64, (100 << 20) + (14 << 20), None) == 1 << 20
    monkeypatch.setattr(V, "address_space_left", lambda: 1400 << 20)
    assert V._reserve(10 ** 12, np.int64, None, None) == (700 << 20) // 14
    monkeypatch.setattr(M, "available_memory", lambda: None)      # nothing known: the cap
    monkeypatch.setattr(V, "address_space_left", lambda: None)
    assert V._reserve(10 ** 13, np.int64, None, None) == 1 << 40


def test_a_reservation_the_system_refuses_is_halved_until_granted():
    """8 PiB is more address space than any system maps: the reservation is a hint, so the
    arrays start smaller and grow as states come."""
    import haltproof.explorer.vengine as V
    parts = V._Parts(np.int64, 1 << 50)
    assert 16 <= len(parts.data) < 1 << 50
    parts.append(np.arange(5, dtype=np.int64))
    assert parts.joined().tolist() == [0, 1, 2, 3, 4]


def test_a_dense_index_the_system_refuses_gives_way_to_the_hash_index(monkeypatch):
    """The same states, order and parents from the hash index."""
    import haltproof.explorer.vengine as V
    assert V._dense_index(1 << 50) is None                     # 4 PiB, written: never granted
    m = _gate(10)
    dense = explore_vector(vectorize(m), keep_edges=True)
    monkeypatch.setattr(V, "_dense_index", lambda space: None)
    hashed = explore_vector(vectorize(m), keep_edges=True)
    assert (dense.visited_set, hashed.visited_set) == ("dense index", "hash index")
    assert np.array_equal(dense.codes, hashed.codes) and np.array_equal(dense.parent, hashed.parent)
    assert np.array_equal(dense.e_dst, hashed.e_dst) and dense.complete and hashed.complete


def test_a_bitmap_the_system_refuses_leaves_the_index_in_place(monkeypatch):
    """Edges dropped past the limit, and the bitmap that would replace the index refused:
    the index stays, with the same states and parents as when the bitmap was granted."""
    import haltproof.explorer.vengine as V
    monkeypatch.setattr(V, "KEEP_EDGES_BELOW", 2000)
    vm = vectorize(_gate(20))
    granted = explore_vector(vm)

    class Refused(V.CodeBitmap):
        def __init__(self, space: int) -> None:
            raise MemoryError
    monkeypatch.setattr(V, "CodeBitmap", Refused)
    kept = explore_vector(vm)
    assert (granted.visited_set, kept.visited_set) == ("bitmap", "dense index")
    assert np.array_equal(granted.codes, kept.codes) and np.array_equal(granted.parent, kept.parent)
    assert len(kept.codes) == 64827 and kept.transitions == 138915 and kept.complete


@pytest.mark.verdict
@pytest.mark.parametrize("engine", ["vector", "auto"])
def test_a_param_pinned_huge_explores_to_max_states_where_memory_cannot_be_read(cli, tmp_path, monkeypatch,
                                                                                engine):
    """No /proc (macOS) and no --max-memory: nothing bounded the reservation but 2^40 states,
    8 TiB of codes, which no system grants: exit 4. --max-states bounds it now, and the counter
    counts on to the bound."""
    import haltproof.explorer.memory as M
    import haltproof.explorer.vengine as V
    for module in (M, V):
        monkeypatch.setattr(module, "available_memory", lambda: None)
        monkeypatch.setattr(module, "address_space_left", lambda: None)
    path = tmp_path / "huge.yaml"
    path.write_text(HUGE)
    monkeypatch.setattr("haltproof.explorer.check.AUTO_SCALAR_STATES", 100)
    ran = cli("check", path, "-p", "K=1000000000000", "--max-states", "300", "--engine", engine,
              "--format", "json")
    assert ran.code == 3, ran.err
    (run,) = ran.json()["runs"]
    assert (run["engine"], run["result"], run["stopped_by"]) == ("vector", "incomplete", "max_states")
    assert run["stop_reason"] == "stopped at 301 states: --max-states 300 reached"
    assert run["stats"]["states"] == 301 and run["stats"]["max_depth"] == 300


def _limited(address_space: int) -> Callable[[], None]:
    """A preexec_fn: the child's address space (RLIMIT_AS, `ulimit -v`) limited to `address_space` bytes."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    return limit


def _check_limited(tmp_path, text: str, *args: str) -> tuple[int, dict, str]:
    """`haltproof check` on `text` in a child process limited to 512 MiB of address space
    (about 160 MiB are mapped once numpy and haltproof are imported)."""
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    ran = subprocess.run([sys.executable, "-m", "haltproof", "check", str(path), "--format", "json", *args],
                         capture_output=True, text=True, timeout=120, env=env, preexec_fn=_limited(512 << 20))
    (run,) = json.loads(ran.stdout)["runs"] if ran.stdout else [{}]
    return ran.returncode, run, ran.stderr


@pytest.mark.skipif(sys.platform != "linux", reason="the address-space limit is read from /proc")
def test_a_param_pinned_huge_under_an_address_space_limit_explores_to_max_states(tmp_path):
    """`ulimit -v`: the reservation of 12.5 GiB was refused, exit 4 (finding 5 and 13)."""
    code, run, err = _check_limited(tmp_path, HUGE, "-p", "K=1000000000000", "--max-states", "300",
                                    "--engine", "vector")
    assert code == 3, err
    assert (run["result"], run["stopped_by"]) == ("incomplete", "max_states")
    assert run["stop_reason"] == "stopped at 301 states: --max-states 300 reached"


@pytest.mark.skipif(sys.platform != "linux", reason="the address-space limit is read from /proc")
def test_past_time_operators_nested_deep_under_an_address_space_limit_run_out_of_memory_cleanly(tmp_path):
    """40 nested previous() on 60 steps: 2^40 histories, really. The run explores what fits in
    the address space left and stops before the level that cannot fit: exit 3, out of memory,
    saying which limit (it was exit 4 at the reservation of 12.4 GiB, finding 6)."""
    code, run, err = _check_limited(tmp_path, _deep(40), "--engine", "vector")
    assert code == 3, err
    assert (run["result"], run["stopped_by"]) == ("incomplete", "max_memory")
    states = run["stats"]["states"]
    assert states == 2 ** (run["stats"]["max_depth"] + 1) - 1 and states > 1000
    assert re.fullmatch(rf"stopped at {states:,} states: out of memory: the next BFS level, from {(states + 1) // 2:,} "
                        r"states, may take about [\d.]+[KMG]; the address-space limit \(ulimit -v\) leaves [\d.]+[KMG]B? "
                        r"\(a bound, not a bug: try --max-memory, more memory, or smaller params\)",
                        run["stop_reason"]), run["stop_reason"]
