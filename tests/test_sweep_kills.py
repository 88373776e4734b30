"""Mutants of machine/sweep.py (the scalar engine's generated BFS loop) that the rest of the
verdict selection let through (issue 18): the spec line an error in the loop is reported at.
Each test was seen failing with its mutation applied (docs/mutation.md)."""

from __future__ import annotations

import pytest

from test_verdict_kills import each_way, prop

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
