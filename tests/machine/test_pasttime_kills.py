"""Mutants of machine/pasttime.py that the rest of the verdict selection let through (issue 18):
previous() of an enum expression that is not a var (its monitor takes the sorted values, the
first one its placeholder). Each test was seen failing with its mutation applied
(docs/explanation/mutation-testing.md)."""

from __future__ import annotations

import textwrap

import pytest

from haltproof.explorer.options import Options
from haltproof.explorer.check import check_spec
from haltproof.machine.spec import parse_spec

pytestmark = pytest.mark.verdict

# n counts 0, 1, 2; each test adds its property
COUNTER = """\
machine: past
vars:
  n: {type: int, min: 0, max: 2, init: 0}
actions:
  next: {when: n < 2, do: [{set: {n: n + 1}}]}
terminal: n == 2
properties:
"""


@pytest.mark.parametrize("engine", ("scalar", "vector"))
def test_previous_of_an_enum_expression_that_is_no_var(engine: str):
    """`previous('b' if n > 0 else 'a')`: its monitor has no var to copy, so it is an enum of the
    expression's values, initially the first of them sorted (a placeholder no state reads: in
    the initial state previous(e) is e). The run a, b, b breaks `previous(..) == a` at b, b."""
    text = COUNTER + """  it: {always: "previous('b' if n > 0 else 'a') == 'a'"}\n"""
    (r,) = check_spec(parse_spec(text, "prev.yaml"), Options(engine=engine))
    (p,) = [p for p in r.properties if p.name == "it"]
    assert r.engine == engine
    assert (p.status, len(p.trace), p.trace.steps[-1].state) == ("violated", 2, {"n": 2})
    assert r.stats["states"] == 3


def test_a_past_time_monitor_var_is_named_by_its_call_with_spaces_collapsed():
    """The monitor var of `once(n ==  1)` is named `it:once(n == 1)`: the property, then the
    call's text with each run of whitespace one space."""
    text = COUNTER + """  it: {always: "once(n ==  1) or n == 0"}\n"""
    assert [v.name for v in parse_spec(text, "past.yaml").vars] == ["n", "it:once(n == 1)"]


def test_previous_of_an_enum_var_takes_the_vars_values_in_its_order():
    """The monitor of `previous(d)` copies d's declared values, in d's order (b before a), not sorted."""
    text = textwrap.dedent("""\
        machine: past
        vars:
          d: {type: enum, values: [b, a], init: b}
        actions:
          flip: {when: d == 'b', do: [{set: {d: a}}]}
        terminal: d == 'a'
        properties:
          it: {always: "previous(d) == 'b'"}
        """)
    monitor = parse_spec(text, "past.yaml").vars[-1]
    assert (monitor.name, list(monitor.values)) == ("it:previous(d)", ["b", "a"])
