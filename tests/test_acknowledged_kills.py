"""Mutants of explorer/acknowledged.py that the verdict selection let through (issue 18, the
sampled run of round 7): which terminal state a `declared_unreachable` finding about a terminal
value points at. The case was worked out by hand and runs on both engines; the test was seen
failing with its mutation applied (docs/explanation/mutation-testing.md)."""

from __future__ import annotations

import textwrap

import pytest

from haltproof.explorer.options import Options
from haltproof.explorer.check import check_spec
from haltproof.machine.spec import parse_spec

pytestmark = pytest.mark.verdict

ENGINES = ("scalar", "vector")

# `quit` ends a run as gave_up after one transition; `done` takes two. For K == 1 the spec
# declares `done` unreachable: the finding's trace is the shortest run to a `done` state, not
# to the shallower terminal state of another value.
QUITTER = """\
machine: quitter
params:
  K: [1, 2]
vars:
  n: {type: int, min: 0, max: 2, init: 0}
  status: {type: enum, values: [running, done, gave_up], init: running}
actions:
  work:
    when: status == running and n < 2
    do:
      - set: {n: n + 1}
      - decide: status
        rules:
          - {name: enough, when: n >= 2, then: done}
          - {name: more, then: running}
  quit:
    when: status == running
    do:
      - set: {status: gave_up}
terminal:
  label: status
  values: [{value: done, unreachable_when: K == 1, because: one unit is not enough}, gave_up]
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_a_terminal_value_declared_unreachable_is_traced_to_a_state_of_that_value(engine):
    runs = {r.params["K"]: r for r in check_spec(parse_spec(textwrap.dedent(QUITTER), "q.yaml"),
                                                  Options(engine=engine))}
    assert [p.name for p in runs[2].properties] == ["domains", "well_defined"]
    [p] = [p for p in runs[1].properties if p.name == "declared_unreachable"]
    assert (p.status, p.message) == (
        "violated", "terminal 'done' is reached, but it is declared unreachable when K == 1 (q.yaml:22): "
                    "one unit is not enough")
    assert [(s.action, s.state["n"], s.state["status"]) for s in p.trace.steps] == [
        (None, 0, "running"), ("work", 1, "running"), ("work", 2, "done")]


# Three parts declared unreachable for K == 1 and all reached: the finding is the shortest one
# (`quit`, one transition) and counts the two others in the plural.
THREE = (QUITTER
         .replace("{name: enough, when: n >= 2, then: done}",
                  "{name: enough, when: n >= 2, then: done, unreachable_when: K == 1, because: b}")
         .replace("  quit:\n    when: status == running\n",
                  "  quit:\n    unreachable_when: K == 1\n    because: q\n    when: status == running\n"))


@pytest.mark.parametrize("engine", ENGINES)
def test_three_parts_reached_name_the_shortest_and_count_the_two_others(engine):
    runs = {r.params["K"]: r for r in check_spec(parse_spec(textwrap.dedent(THREE), "q.yaml"),
                                                  Options(engine=engine))}
    [p] = [p for p in runs[1].properties if p.name == "declared_unreachable"]
    assert (p.status, p.message) == (
        "violated", "action quit (line 16) is taken, but it is declared unreachable when K == 1 (q.yaml:17): q "
                    "(and 2 more parts declared unreachable here are reached)")
    assert [(s.action, s.state["n"], s.state["status"]) for s in p.trace.steps] == [
        (None, 0, "running"), ("quit", 0, "gave_up")]


@pytest.mark.parametrize("engine", ENGINES)
def test_two_parts_reached_count_the_other_in_the_singular(engine):
    text = THREE.replace("    unreachable_when: K == 1\n    because: q\n", "")
    runs = {r.params["K"]: r for r in check_spec(parse_spec(textwrap.dedent(text), "q.yaml"),
                                                  Options(engine=engine))}
    [p] = [p for p in runs[1].properties if p.name == "declared_unreachable"]
    assert (p.status, p.message) == (
        "violated", "decide rule 'enough' of action work (line 14) fires, but it is declared unreachable when "
                    "K == 1 (q.yaml:14): b (and 1 more part declared unreachable here is reached)")
    assert [(s.action, s.state["n"], s.state["status"]) for s in p.trace.steps] == [
        (None, 0, "running"), ("work", 1, "running"), ("work", 2, "done")]
