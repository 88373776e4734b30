"""Mutants of explorer/vengine.py that the rest of the verdict selection let through (issue 18):
an independence check over codes past 2^53 (a float among the outcomes merged two of them: a
false "proved"), a decide table no rule of which matches, a level the system has no memory
for, and the level's new states ranked when their keys are too wide for the int32 index.
Each test was seen failing with its mutation applied (docs/explanation/mutation-testing.md)."""

from __future__ import annotations

import pytest

from haltproof.explorer.options import Options
from haltproof.explorer.check import check_machine
from haltproof.explorer.memory import rough_size
from haltproof.explorer.vengine import LevelDepth, explore_vector
from haltproof.machine.vectorize import vectorize
from test_verdict_kills import TERMINAL_BY_LABEL, _machine, _summary, each_way, prop, states

pytestmark = pytest.mark.verdict

HUGE = """\
machine: huge
vars:
  hi: {type: int, min: 0, max: 1073741823, init: 1073741823}
  lo: {type: int, min: 0, max: 1073741823, init: 0}
  lab: {type: enum, values: [p, q], init: {one_of: [p, q]}}
actions:
  go: {when: lo == 0, do: [{set: {lo: "1 if lab == p else 2"}}]}
properties:
  ignores_lab: {independent_of: lab}
"""


def test_independence_tells_apart_successors_whose_codes_differ_past_2_53():
    """A state space of 2^61 codes: the two successors differ by one in a var, their codes by a
    few units near 2^60, where float64 cannot tell them apart."""
    for way, r in each_way(HUGE).items():
        p = prop(r, "ignores_lab")
        assert (p.status, p.message) == ("violated", "the same transition up to the ignored vars has different "
                                                     "outcomes"), way
        assert states(p.trace, "lo") == [0, 1] and states(p.other_trace, "lo") == [0, 2], way


UNMATCHED = """\
machine: unmatched
vars:
  x: {type: int, min: 0, max: 3, init: 0}
  d: {type: enum, values: [a, b], init: a}
actions:
  inc:
    when: x < 3
    do:
      - set: {x: x + 1}
      - decide: d
        rules:
          - name: low
            when: x < 2
            then: a
"""


def test_a_decide_table_with_no_matching_rule_is_the_scalar_engines_finding():
    for way, r in each_way(UNMATCHED).items():
        wd = prop(r, "well_defined")
        assert wd.status == "violated", way
        assert wd.message == ("action inc with no choices (kills.yaml:10): no rule of the decide table of action inc "
                              "(deciding d) matched"), way
        assert states(wd.trace, "x") == [0, 1], way
        assert (r.stats["states"], r.stats["transitions"]) == (2, 1), way


def test_a_level_the_system_cannot_hold_stops_the_run_out_of_memory(monkeypatch):
    import haltproof.explorer.vengine as V
    monkeypatch.setattr(V, "available_memory", lambda: 0)
    m = _machine(UNMATCHED)
    need = V._VSweep(vectorize(m), False, None, None, None, None, None).level_bytes(1)
    run = check_machine(m, Options(engine="vector"))
    assert (run.result, run.stopped_by, run.stats["states"]) == ("incomplete", "max_memory", 1)
    assert run.stop_reason == (f"stopped at 1 states: out of memory: the next BFS level, from 1 states, may take "
                               f"about {rough_size(need)}; the system has 0B available (a bound, not a bug: try "
                               "--max-memory, more memory, or smaller params)")
    assert prop(run, "well_defined").message == "not decided: the exploration ran out of memory"


GRID = """\
machine: grid
vars:
  x: {type: int, min: 0, max: 2, init: 0}
  y: {type: int, min: 0, max: 2, init: 0}
actions:
  right: {when: x < 2, do: [{set: {x: x + 1}}]}
  up: {when: y < 2, do: [{set: {y: y + 1}}]}
properties:
  not_there: {always: not (x == 1 and y == 2)}
"""


def test_new_states_ranked_before_they_meet_the_index_are_found_in_the_scalar_order(monkeypatch):
    """Every level's keys taken as too wide for the int32 index (RANK_LIMIT 0): the same states,
    order, parents and so traces as the scalar engine; (1, 1) is reached first from (1, 0) by up,
    though its edge from (0, 1) by right comes first among the level's blocks."""
    import haltproof.explorer.vengine as V
    monkeypatch.setattr(V, "RANK_LIMIT", 0)
    for way, r in each_way(GRID).items():
        assert (r.stats["states"], r.stats["transitions"]) == (9, 12), way
        p = prop(r, "not_there")
        assert [(s.state["x"], s.state["y"]) for s in p.trace.steps] == [(0, 0), (1, 0), (1, 1), (1, 2)], way


CUBE = """\
machine: cube
vars:
  x: {type: int, min: 0, max: 4, init: 0}
  y: {type: int, min: 0, max: 4, init: 0}
  z: {type: int, min: 0, max: 4, init: 0}
actions:
  a: {when: x < 4, do: [{set: {x: x + 1}}]}
  b: {when: y < 4, do: [{set: {y: y + 1}}]}
  c: {when: z < 4 and x > 0, do: [{set: {z: z + 1}}]}
terminal: x == 4 and y == 4 and z == 4
properties:
  not_far: {always: x + y + z < 11}
"""


@pytest.mark.parametrize("workers", [2, 3])
def test_a_level_split_among_threads_is_the_one_threads_level(monkeypatch, workers):
    """Levels cut into contiguous pieces (PARALLEL_ROWS 2: every level of 4 states or more), each
    piece's terminals, successors and checks by a thread: the run of one thread, trace included."""
    import haltproof.explorer.vengine as V
    m = _machine(CUBE)
    one = check_machine(m, Options(engine="vector"))
    monkeypatch.setattr(V, "PARALLEL_ROWS", 2)
    split = check_machine(m, Options(engine="vector", workers=workers))
    assert _summary(split) == _summary(one)
    assert (one.result, one.stats["states"], one.stats["max_depth"]) == ("violated", 105, 12)
    assert len(prop(one, "not_far").trace.steps) == 12


STUCK = """\
machine: stuck
vars:
  x: {type: int, min: 0, max: 6, init: 0}
  y: {type: int, min: 0, max: 1, init: 0}
actions:
  inc: {when: x < 6 and not (x == 1 and y == 1), do: [{set: {x: x + 1}}]}
  side: {when: x == 0 and y == 0, do: [{set: {y: 1}}]}
terminal: x == 6
properties:
  ends: {terminates: true}
"""


def test_a_deadlock_found_before_memory_ran_out_mid_level_stands(monkeypatch):
    """The deadlock (x=1, y=1) is met at level 2; memory runs out in the middle of level 4, which
    is undone back to its start: what was found before it, the deadlock too, stays found."""
    import haltproof.explorer.vengine as V
    m = _machine(STUCK)
    calls = iter(range(100))
    checks = V._transition_checks

    def transition_checks(*args, **kwargs):
        if next(calls) == 4:                      # the 5th level, half swept
            raise MemoryError
        return checks(*args, **kwargs)
    monkeypatch.setattr(V, "_transition_checks", transition_checks)
    run = check_machine(m, Options(engine="vector"))
    assert (run.result, run.stopped_by, run.stats["states"]) == ("violated", "max_memory", 7)
    ends = prop(run, "ends")
    assert (ends.status, ends.message) == ("violated", "deadlock: a non-terminal state with no enabled action")
    assert [(s.state["x"], s.state["y"]) for s in ends.trace.steps] == [(0, 0), (0, 1), (1, 1)]


def test_a_level_that_keeps_its_edges_is_estimated_four_bytes_a_row_more():
    """Two vars, int32 codes, one key: 8*(2*2+6) + (4+4+2+8*2) = 106 bytes a row, and 4 more for
    the edge while edges are kept — the estimate --max-memory and the system's memory are judged by."""
    import haltproof.explorer.vengine as V
    s = V._VSweep(vectorize(_machine(UNMATCHED)), False, None, None, None, None, None)
    assert (s.level_bytes(1), s.level_bytes(10)) == (110, 1100)
    s.dropped = True
    assert (s.level_bytes(1), s.level_bytes(10)) == (106, 1060)


def test_a_timeout_not_reached_changes_nothing_on_the_vector_engine():
    """The deadline is the start plus the timeout: an hour ahead, the run is the one without a
    timeout; one already past stops it before its first level."""
    m = _machine(GRID)
    free = check_machine(m, Options(engine="vector"))
    timed = check_machine(m, Options(engine="vector", timeout=3600.0))
    assert (timed.result, timed.stopped_by, timed.stats["states"]) == ("violated", None, 9)
    assert _summary(timed) == _summary(free)
    late = check_machine(m, Options(engine="vector", timeout=1e-9))
    assert (late.result, late.stopped_by) == ("incomplete", "timeout")


def test_the_depth_of_levels_with_no_state_is_zero():
    """Level boundaries with no state in any level (nothing explored): depth 0, as the scalar
    engine's `max_depth` of an empty exploration, and the deepest level starts at state 0."""
    for offsets in ([0], [0, 0], [0, 0, 0]):
        depth = LevelDepth(offsets)
        assert (len(depth), depth.max(), depth.first_deepest()) == (0, 0, 0), offsets
    assert (LevelDepth([0, 3, 3]).max(), LevelDepth([0, 3, 5]).max()) == (0, 1)
    assert LevelDepth([0, 3, 5]).first_deepest() == 3


def test_a_small_space_is_held_in_the_dense_index():
    ex = explore_vector(vectorize(_machine(TERMINAL_BY_LABEL)))
    assert (ex.visited_set, len(ex.states)) == ("dense index", 5)
