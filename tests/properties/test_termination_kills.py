"""The termination analyses (properties/termination.py) on the graph shapes the rest of the
suite never gave them (issue 18: the survivors of its mutation run). Each case was worked out
by hand; the complete ones run on the three ways a spec runs (the scalar engine's generated
and plain loops, the vector engine), which must agree, and the partial ones on each engine
with that engine's own exact figures (the vector engine expands whole levels).

- weighted worst cases over a graph whose edges skip levels (the vector engine's peeled
  order, its per-level edge lists, more than one initial state), with weights past 2^53,
  where a float total would round;
- weighted worst cases over a graph whose every edge leads one level deeper (the BFS levels
  as the order), with states of one successor and steps that count nothing;
- a graph whose last state has no incoming edge;
- the shortest cycle through the shallowest state on a cycle, when BFS reaches a state twice,
  when the cycle is long, and when there are two cycles;
- partial explorations: a cycle among the explored states, and "at least" bounds whose runs
  end in states not expanded.
"""

from __future__ import annotations

from typing import Any

import pytest

from haltproof.explorer.options import Options
from haltproof.explorer.results import RunResult
from haltproof.explorer.check import check_machine

from engine_ways import each_way, machine_of, prop

pytestmark = pytest.mark.verdict

BIG = 36028797018963969          # 2^55 + 1: a few of these summed are past float64's exact range


def bounds(r: RunResult) -> dict[str, tuple[Any, list[tuple[str | None, dict[str, int]]] | None]]:
    """Each bound's value and its witness as (action, state) steps."""
    return {k: (b["value"], b.get("witness") and [(s.action, s.state) for s in b["witness"].steps])
            for k, b in r.bounds.items()}


def lasso(r: RunResult) -> tuple[int | None, list[tuple[str | None, int]]]:
    t = prop(r, "ends").trace
    assert t is not None and t.kind == "lasso"
    return t.loop_start, [(s.action, s.state["x"]) for s in t.steps]


def partial(text: str, engine: str, max_states: int) -> RunResult:
    r = check_machine(machine_of(text), Options(engine=engine, max_states=max_states))
    assert r.stopped_by is not None
    return r


# Two initial states (y = 0 first); only y = 1 may jump by two, so the heaviest run starts
# at the second initial state and its edges skip a level (the graph is not level by level).
SKIP = """\
machine: skip
vars:
  x: {type: int, min: 0, max: 4, init: 0}
  y: {type: int, min: 0, max: 1, init: {one_of: [0, 1]}}
actions:
  one: {when: x < 4, do: [{set: {x: x + 1}}]}
  two: {when: x < 3 and y == 1, do: [{set: {x: x + 2}}]}
terminal: x == 4
properties:
  ends: {terminates: true}
measures:
  jumps: {sum: (after.x - before.x) * (after.x - before.x) * 36028797018963969}
  twos: {count: after.x - before.x == 2}
"""


def test_weighted_worst_cases_over_a_graph_whose_edges_skip_levels():
    r = each_way(SKIP)["vector"]
    assert r.result == "proved"
    chain = [(None, {"x": 0, "y": 0})] + [("one", {"x": x, "y": 0}) for x in range(1, 5)]
    jumps = [(None, {"x": 0, "y": 1}), ("two", {"x": 2, "y": 1}), ("two", {"x": 4, "y": 1})]
    assert bounds(r) == {"transitions": (4, chain), "jumps": (8 * BIG, jumps), "twos": (2, jumps)}
    assert 8 * BIG == 288230376151711752 != int(float(8 * BIG))


@pytest.mark.parametrize("engine,max_states,expected", [
    # scalar: states 0 and 1 (x = 0, y = 0 and 1) expanded one at a time, stopped at 2
    ("scalar", 2, {"transitions": (1, [(None, {"x": 0, "y": 0}), ("one", {"x": 1, "y": 0})]),
                   "jumps": (BIG, [(None, {"x": 0, "y": 0}), ("one", {"x": 1, "y": 0})]),
                   "twos": (0, [(None, {"x": 0, "y": 0})])}),
    # scalar, 4 states expanded: (1, 1) -> (2, 1) goes back to a state found one level up, so
    # the explored part is not level by level; edges lead to state 4, the first not expanded
    ("scalar", 6, {"transitions": (2, [(None, {"x": 0, "y": 0}), ("one", {"x": 1, "y": 0}), ("one", {"x": 2, "y": 0})]),
                   "jumps": (5 * BIG, [(None, {"x": 0, "y": 1}), ("one", {"x": 1, "y": 1}), ("two", {"x": 3, "y": 1})]),
                   "twos": (1, [(None, {"x": 0, "y": 1}), ("one", {"x": 1, "y": 1}), ("two", {"x": 3, "y": 1})])}),
    # vector: the whole first level expanded; the runs end in states of the next, unexpanded
    ("vector", 2, {"transitions": (1, [(None, {"x": 0, "y": 0}), ("one", {"x": 1, "y": 0})]),
                   "jumps": (4 * BIG, [(None, {"x": 0, "y": 1}), ("two", {"x": 2, "y": 1})]),
                   "twos": (1, [(None, {"x": 0, "y": 1}), ("two", {"x": 2, "y": 1})])}),
    # vector, two levels expanded (5 states): the edge (x 1 -> 2, y 1) stays in level 1, so the
    # explored part is not level by level; the heaviest run ends in x = 4, not expanded
    ("vector", 5, {"transitions": (3, [(None, {"x": 0, "y": 1})] + [("one", {"x": x, "y": 1}) for x in (1, 2, 3)]),
                   "jumps": (8 * BIG, [(None, {"x": 0, "y": 1}), ("two", {"x": 2, "y": 1}), ("two", {"x": 4, "y": 1})]),
                   "twos": (2, [(None, {"x": 0, "y": 1}), ("two", {"x": 2, "y": 1}), ("two", {"x": 4, "y": 1})])}),
])
def test_partial_weighted_worst_cases_end_in_states_not_expanded(engine, max_states, expected):
    r = partial(SKIP, engine, max_states)
    assert r.result == "incomplete"
    assert bounds(r) == expected
    assert r.bounds["jumps"]["message"] == f"at least {expected['jumps'][0]} (the exploration stopped at --max-states)"
    assert prop(r, "ends").status == "unknown"


# Every edge leads one level deeper. `pick` has two successors, `last` one (and counts
# nothing for `heavy` and `twos`): the worst cases are the BFS levels walked back. The
# weight of `products` depends on the state a step leaves, so states of one level differ.
FORWARD = """\
machine: forward
vars:
  x: {type: int, min: 0, max: 3, init: 0}
  y: {type: int, min: 0, max: 2, init: 0}
actions:
  pick: {when: x < 2, choose: {c: [1, 2]}, do: [{set: {x: x + 1, y: c}}]}
  last: {when: x == 2, do: [{set: {x: 3, y: 0}}]}
terminal: x == 3
properties:
  ends: {terminates: true}
measures:
  heavy: {sum: after.y * 36028797018963969}
  twos: {count: after.y == 2}
  lasts: {count: after.y == 0}
  products: {sum: before.y * after.y}
"""


def test_weighted_worst_cases_over_a_level_by_level_graph():
    r = each_way(FORWARD)["vector"]
    ones = [(None, {"x": 0, "y": 0}), ("pick", {"x": 1, "y": 1}), ("pick", {"x": 2, "y": 1})]
    twos = [(None, {"x": 0, "y": 0}), ("pick", {"x": 1, "y": 2}), ("pick", {"x": 2, "y": 2})]
    assert bounds(r) == {"transitions": (3, ones + [("last", {"x": 3, "y": 0})]),
                         "heavy": (4 * BIG, twos), "twos": (2, twos),
                         "lasts": (1, ones + [("last", {"x": 3, "y": 0})]), "products": (4, twos)}


def test_partial_weighted_worst_cases_over_a_level_by_level_graph():
    # vector, max 3 states: levels 0 and 1 expanded (3 states), level 2 found, not expanded
    r = partial(FORWARD, "vector", 3)
    twos = [(None, {"x": 0, "y": 0}), ("pick", {"x": 1, "y": 2}), ("pick", {"x": 2, "y": 2})]
    assert bounds(r) == {"transitions": (2, [(None, {"x": 0, "y": 0}), ("pick", {"x": 1, "y": 1}),
                                             ("pick", {"x": 2, "y": 1})]),
                         "heavy": (4 * BIG, twos), "twos": (2, twos), "lasts": (0, [(None, {"x": 0, "y": 0})]),
                         "products": (4, twos)}


def test_a_last_state_without_incoming_edges_is_in_the_order():
    """Three initial states, one edge between the first two: the graph is acyclic but not
    level by level, and the last state has no incoming edge."""
    r = each_way("""\
machine: inits
vars: {x: {type: int, min: 0, max: 2, init: {one_of: [0, 1, 2]}}}
actions:
  up: {when: x == 0, do: [{set: {x: 1}}]}
terminal: x >= 1
properties:
  ends: {terminates: true}
""")["vector"]
    assert r.result == "proved" and prop(r, "ends").status == "holds"
    assert bounds(r) == {"transitions": (1, [(None, {"x": 0}), ("up", {"x": 1})])}


# One cycle of eight states through the initial one, with a chord 0 -> 2 that BFS from 0
# reaches before the path 0 -> 1 -> 2: the shortest cycle has seven transitions.
RING = """\
machine: ring
vars: {x: {type: int, min: 0, max: 7, init: 0}}
actions:
  up: {when: x < 7, do: [{set: {x: x + 1}}]}
  skip: {when: x == 0, do: [{set: {x: 2}}]}
  wrap: {when: x == 7, do: [{set: {x: 0}}]}
terminal: x > 7
properties:
  ends: {terminates: true}
"""


def test_the_shortest_cycle_through_the_initial_state_takes_the_chord():
    r = each_way(RING)["vector"]
    assert prop(r, "ends").message == "a cycle of 7 transitions among non-terminal states: the run can go on forever"
    assert lasso(r) == (0, [(None, 0), ("skip", 2)] + [("up", x) for x in range(3, 8)] + [("wrap", 0)])


@pytest.mark.parametrize("first", ["near", "far"])
def test_of_two_cycles_the_lasso_takes_the_shallower(first):
    """A cycle 1 <-> 2 one step from the start, and 4 <-> 5 two steps away; the branch to the
    deeper one is numbered first or second, so neither order of the cycles hides the choice."""
    near = "  a: {when: x == 0, do: [{set: {x: 1}}]}\n"
    far = "  b: {when: x == 0, do: [{set: {x: 3}}]}\n"
    r = each_way(
        "machine: two_cycles\nvars: {x: {type: int, min: 0, max: 5, init: 0}}\nactions:\n"
        + (near + far if first == "near" else far + near)
        + "  c: {when: x == 1, do: [{set: {x: 2}}]}\n  d: {when: x == 2, do: [{set: {x: 1}}]}\n"
          "  e: {when: x == 3, do: [{set: {x: 4}}]}\n  f: {when: x == 4, do: [{set: {x: 5}}]}\n"
          "  g: {when: x == 5, do: [{set: {x: 4}}]}\n"
          "terminal: x > 5\nproperties:\n  ends: {terminates: true}\n")["vector"]
    start, steps = lasso(r)
    assert steps == [(None, 0), ("a", 1), ("c", 2), ("d", 1)]
    assert start == 1


def test_a_cycle_among_the_states_explored_before_a_bound_is_a_violation():
    """0 <-> 1 is a cycle; the vector engine stops with state 2 found but not expanded."""
    r = partial("""\
machine: early_cycle
vars: {x: {type: int, min: 0, max: 9, init: 0}}
actions:
  up: {when: x < 9, do: [{set: {x: x + 1}}]}
  back: {when: x == 1, do: [{set: {x: 0}}]}
terminal: x == 9
properties:
  ends: {terminates: true}
""", "vector", 2)
    assert r.stats["states"] == 3
    assert prop(r, "ends").status == "violated"
    assert lasso(r) == (0, [(None, 0), ("up", 1), ("back", 0)])


# Each step weighs 2^61 + 1 (the vector engine takes values below 2^62; a float would
# round it to 2^61), and a run has four: the total is past int64. The vector engine must
# add these as Python ints: on a level-by-level graph, on one whose edges skip levels, and
# when the fourth step leads out of the explored part (a partial exploration's runs have
# one edge more than its expanded levels).
HUGE = """\
machine: huge
vars:
  x: {type: int, min: 0, max: 4, init: 0}
  b: {type: int, min: 0, max: 1, init: 0}
actions:
  one: {when: x < 4, do: [{set: {x: x + 1, b: 1}}]}
terminal: x == 4
properties:
  ends: {terminates: true}
measures:
  heavy: {sum: after.b * 2305843009213693953}
"""
HEAVIEST = 4 * (2 ** 61 + 1)
CHAIN = [(None, {"x": 0, "b": 0})] + [("one", {"x": x, "b": 1}) for x in range(1, 5)]


@pytest.mark.parametrize("skips", [False, True])
def test_a_total_past_int64_is_exact(skips):
    text = HUGE.replace("actions:\n", "actions:\n  two: {when: x < 3, do: [{set: {x: x + 2, b: 1}}]}\n") if skips else HUGE
    r = each_way(text)["vector"]
    assert r.engine == "vector"
    assert bounds(r)["heavy"] == (HEAVIEST, CHAIN)
    assert r.bounds["heavy"]["message"] == "at most 9223372036854775812"


def test_a_partial_total_past_int64_is_exact():
    r = partial(HUGE, "vector", 4)          # x = 0 .. 3 expanded (four levels), x = 4 found
    assert r.result == "incomplete" and r.stats["states"] == 5
    assert bounds(r)["heavy"] == (HEAVIEST, CHAIN)
    assert r.bounds["heavy"]["message"] == "at least 9223372036854775812 (the exploration stopped at --max-states)"
