"""Mutants of machine/expr.py that the rest of the verdict selection let through (issue 18):
the expression checker's messages, pinned whole with the line and the text they point at.
Each test was seen failing with its mutation applied (docs/mutation.md)."""

from __future__ import annotations

import pytest

from haltproof.machine.spec import SpecError, parse_spec

pytestmark = pytest.mark.verdict

COUNTER = """\
machine: e
vars:
  x: {type: int, min: 0, max: 2, init: 0}
actions:
  inc: {when: x < 2, do: [{set: {x: x + 1}}]}
terminal: x == 2
properties:
"""


def _problems(props: str) -> list[tuple[int | None, str, str | None]]:
    with pytest.raises(SpecError) as info:
        parse_spec(COUNTER + props, "e.yaml")
    return [(p.line, p.message, p.text) for p in info.value.problems]


CALLS = ("only min(), max() and abs() may be called (and once(), historically(), previous(), since() "
         "in an always or reachable property)")


def test_an_unknown_call_is_quoted_alone_at_its_own_line():
    """The problem points at the call itself, not at the whole expression or its first line."""
    assert _problems("  p: {always: x + foo(1) > 0}\n") == [(8, CALLS, "foo(1)")]
    assert _problems("  p:\n    always: >-\n      x >= 0 and\n      len(x) > 0\n") == [(11, CALLS, "len(x)")]


def test_abs_with_two_arguments_says_it_takes_one():
    assert _problems("  p: {always: 'abs(x, 1) > 0'}\n") == [(8, "abs() takes exactly one argument", "abs(x, 1)")]


def test_a_refused_name_before_a_dot_is_quoted_alone():
    """`x.y` in a step expression: the refusal points at `x`, the name it is about."""
    assert _problems("  p: {step: 'after.x >= 0 and x.y > 0'}\n") == [
        (8, "a step expression sees two states: write before.x or after.x", "x")]
