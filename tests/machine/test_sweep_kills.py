"""Mutants of machine/sweep.py (the scalar engine's generated BFS loop) that the rest of the
verdict selection let through (issue 18): the spec line an error in the loop is reported at,
and a choice a step property reads that its action does not make. Each test was seen failing
with its mutation applied (docs/explanation/mutation-testing.md)."""

from __future__ import annotations

import pytest

from engine_ways import each_way, prop

pytestmark = pytest.mark.verdict

RULE_WHEN = """\
machine: m
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
          - name: first
            when: 4 // (x - 2) > 0
            then: b
          - name: second
            then: a
terminal: x == 3
"""


def test_an_error_in_a_rules_when_names_the_when_line():
    """The generated loop's `if` of a rule's `when` is mapped to the when's own spec line
    (the plain loop's is too; each_way has them agree)."""
    for way, r in each_way(RULE_WHEN, vector=False).items():
        wd = prop(r, "well_defined")
        assert wd.status == "violated", way
        assert wd.message == "action inc with no choices (kills.yaml:13): integer division or modulo by zero", way
        assert [s.state["x"] for s in wd.trace.steps] == [0, 1], way


CHOICE = """\
machine: m
vars:
  x: {type: int, min: 0, max: 3, init: 0}
  done: {type: bool, init: false}
actions:
  inc:
    when: x < 2 and not done
    choose: {by: [1, 2]}
    do: [{set: {x: x + by}}]
  stop: {when: x >= 2 and not done, do: [{set: {done: true}}]}
terminal: done
properties:
  guarded:
    step: action != inc or after.x == before.x + by
"""

UNGUARDED = """\
  unguarded:
    step: by > 0 or after.done
"""


def test_a_step_property_reading_a_choice_its_action_does_not_make_is_a_finding():
    """In stop's transitions the loop reads `by` as the sentinel of a choice stop does not make:
    the guarded property never reaches it, the unguarded one does (well_defined)."""
    for way, r in each_way(CHOICE, vector=False).items():
        assert (r.result, prop(r, "guarded").status, r.stats["transitions"]) == ("proved", "holds", 6), way
    for way, r in each_way(CHOICE + UNGUARDED, vector=False).items():
        wd = prop(r, "well_defined")
        assert wd.status == "violated", way
        assert wd.message == ("property unguarded (kills.yaml:16): the expression reads choice by, which "
                              "action stop does not make (guard it with action == ...)"), way
        assert [(s.action, s.state["x"]) for s in wd.trace.steps] == [(None, 0), ("inc", 2), ("stop", 2)], way
