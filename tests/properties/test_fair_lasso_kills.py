"""Mutants of properties/liveness.py that the verdict selection let through (issue 18, the
sampled run of round 7): how `_Graph.cycle` builds a fair lasso's cycle. Each assumption the
cycle must honour is a goal; one already met by the states visited or the edges taken so far
is skipped, any other adds a shortest path to it. Getting that wrong shows a cycle that is
longer than it needs, or one that is not fair at all (a false counterexample). Also (the
seed-20 sample): `OwnView`, one property's view of the graph, passes the questions it does not
change on to the graph as asked. Each case was worked out by hand, checked on both engines;
each test was seen failing with its mutation applied (docs/explanation/mutation-testing.md)."""

from __future__ import annotations

import textwrap

import pytest

from haltproof.explorer.options import Options
from haltproof.explorer.results import RunResult
from haltproof.explorer.check import check_spec, prepare
from haltproof.explorer.engine import explore
from haltproof.explorer.vengine import explore_vector
from haltproof.machine.spec import parse_spec
from haltproof.machine.vectorize import vectorize
from haltproof.properties import liveness as L
from haltproof.properties.exploration import RuleFacts

pytestmark = pytest.mark.verdict

ENGINES = ("scalar", "vector")


def _run(text: str, engine: str) -> RunResult:
    (r,) = check_spec(parse_spec(textwrap.dedent(text), "t.yaml"), Options(engine=engine))
    return r


def _lasso(r: RunResult, name: str) -> tuple[str, str, list[tuple[str | None, int]], int | None]:
    [p] = [p for p in r.properties if p.name == name]
    assert p.trace is not None and p.trace.kind == "lasso"
    return p.status, p.message, [(s.action, s.state["s"]) for s in p.trace.steps], p.trace.loop_start


# `a` is taken inside the loop {0, 1, 2}; `finish` never is, and is disabled only at s == 2.
# Taking `a` (0 -> 1) visits no state where `finish` is disabled, so the cycle must go on
# through s == 2 (detour, ret); closing it at once (back) would keep `finish` enabled all
# along: an unfair cycle, a false counterexample.
DETOUR = """\
machine: detour
vars:
  s: {type: int, min: 0, max: 3, init: 0}
actions:
  a:
    when: s == 0
    do:
      - set: {s: 1}
  back:
    when: s == 1
    do:
      - set: {s: 0}
  detour:
    when: s == 1
    do:
      - set: {s: 2}
  ret:
    when: s == 2
    do:
      - set: {s: 0}
  finish:
    when: s != 2
    do:
      - set: {s: 3}
terminal: s == 3
properties:
  ends: {terminates: true}
  done: {existence: s == 3}
fairness:
  - weak: a
  - weak: finish
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_a_cycle_visits_a_state_that_disables_a_weak_assumption_after_taking_another(engine):
    r = _run(DETOUR, engine)
    steps = [(None, 0), ("a", 1), ("detour", 2), ("ret", 0)]
    fair = "fair under: weak a, weak finish"
    assert _lasso(r, "ends") == (
        "violated", f"a fair cycle of 3 transitions among non-terminal states: the run can go on forever; {fair}",
        steps, 0)
    assert _lasso(r, "done") == (
        "violated", f"existence violated: a run can cycle forever through 3 transitions and it never holds; {fair}",
        steps, 0)


# The ring 0 -b-> 1 -a-> 2 -c-> 0: the shortest path that takes `a` (the first assumption)
# takes `b` on its way, so `b` needs no path of its own: the cycle is the ring once round,
# not once and a half round again to take `b` a second time.
RING = """\
machine: ring
vars:
  s: {type: int, min: 0, max: 3, init: 0}
actions:
  b:
    when: s == 0
    do:
      - set: {s: 1}
  a:
    when: s == 1
    do:
      - set: {s: 2}
  c:
    when: s == 2
    do:
      - set: {s: 0}
  stop:
    when: s == 2
    do:
      - set: {s: 3}
terminal: s == 3
properties:
  ends: {terminates: true}
fairness:
  - weak: a
  - weak: b
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_an_assumption_taken_on_the_way_to_another_adds_no_path(engine):
    assert _lasso(_run(RING, engine), "ends") == (
        "violated", "a fair cycle of 3 transitions among non-terminal states: the run can go on forever; "
                    "fair under: weak a, weak b",
        [(None, 0), ("b", 1), ("a", 2), ("c", 0)], 0)


# Two fair loops, one behind the other: {1, 2} (depth 1-2) and, past `across`, {3, 4} (depth 3-4).
# The lasso starts in the shallower one. (Tarjan's algorithm finds the deeper loop first, as it
# finishes first: a choice that keeps the first component found would start the lasso at s == 3.)
TWO_LOOPS = """\
machine: two_loops
vars:
  s: {type: int, min: 0, max: 5, init: 0}
actions:
  go:
    when: s == 0
    do:
      - set: {s: 1}
  up:
    when: s == 1 or s == 3
    do:
      - set: {s: s + 1}
  down:
    when: s == 2 or s == 4
    do:
      - set: {s: s - 1}
  across:
    when: s == 2
    do:
      - set: {s: 3}
  stop:
    when: s == 4
    do:
      - set: {s: 5}
terminal: s == 5
properties:
  ends: {terminates: true}
fairness:
  - weak: stop
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_of_two_fair_loops_the_lasso_enters_the_shallower(engine):
    assert _lasso(_run(TWO_LOOPS, engine), "ends") == (
        "violated", "a fair cycle of 2 transitions among non-terminal states: the run can go on forever; "
                    "fair under: weak stop",
        [(None, 0), ("go", 1), ("up", 2), ("down", 1)], 1)


# `OwnView` answers the protocol questions it does not change (those about rules, choices and
# obligations) with the explored graph's own answer, to the same question. `step`'s rule
# `never` is never true, `hidden` is true only where `small` fires first; the values 1 and 2
# of `by` always take the same step.
OWN = """\
    machine: own
    vars:
      x: {type: int, min: 0, max: 3, init: 0}
    actions:
      step:
        when: x < 2
        choose:
          by: {min: 1, max: 3}
        do:
          - decide: x
            rules:
              - {name: never, when: x > 5, then: 0}
              - {name: small, when: by < 3, then: x + 1}
              - {name: hidden, when: by < 2, then: 0}
              - {name: big, then: x + 2}
    terminal: x >= 2
    properties:
      gets_there: {existence: x >= 2}
    """


@pytest.mark.parametrize("engine", ENGINES)
def test_a_property_s_own_view_answers_as_the_explored_graph(engine):
    (m,) = prepare(parse_spec(textwrap.dedent(OWN), "own.yaml"), Options(model_only=True))
    ex = explore(m) if engine == "scalar" else explore_vector(vectorize(m))
    own = L.own_view(ex, None)                  # without gets_there's monitor
    assert isinstance(own, L.OwnView)
    assert own.rule_facts(0, [0, 2]) == RuleFacts(frozenset({2}), {0: frozenset(), 2: frozenset({"small"})})
    assert own.choice_groups([0]) == {0: [[0, 1], [2]]}
    assert own.open_states("gets_there").tolist() == [True, True, False, False]


# `flip` toggles x forever; `stop` ends the run, but no fairness makes it happen
TOGGLE = """\
    machine: toggle
    vars:
      x: {type: int, min: 0, max: 1, init: 0}
      done: {type: bool, init: false}
    actions:
      flip:
        when: not done
        do:
          - set: {x: 1 - x}
      stop:
        when: not done and x == 1
        do:
          - set: {done: true}
    terminal: done
    properties:
      gets_done: {existence: done}
    """


@pytest.mark.parametrize("engine", ENGINES)
def test_a_bad_run_is_searched_for_among_cycles_unless_the_caller_knows_there_is_none(engine):
    """`bad_run`'s default is the sound one: a caller that does not say the graph is acyclic
    gets the lasso `x` toggling forever, never done; one that says so wrongly gets none. A
    finite bad run is found either way."""
    (m,) = prepare(parse_spec(textwrap.dedent(TOGGLE), "toggle.yaml"), Options(model_only=True))
    ex = explore(m) if engine == "scalar" else explore_vector(vectorize(m))
    open_ = ex.open_states("gets_done")
    assert open_.tolist() == [True, True, False]       # open until done
    assert L.bad_run(ex, open_, []) == L.BadRun(start=0, cycle=(0, 1))
    assert L.bad_run(ex, open_, [], acyclic=True) is None
    assert L.bad_run(ex, open_ | True, [], acyclic=True) == L.BadRun(end=2)     # a run ends open in done
