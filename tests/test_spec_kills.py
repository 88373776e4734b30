"""Mutants of machine/spec.py that the rest of the verdict selection let through (issue 18):
the loader's messages pinned whole with their line and quoted text, and the accepted forms
(a bool param, a scenario's enum param value) that a planted bug would refuse. Each test was
seen failing with its mutation applied (docs/mutation.md)."""

from __future__ import annotations

import pytest

from haltproof.machine.spec import Spec, SpecError, parse_spec

pytestmark = pytest.mark.verdict

SWEPT = """\
machine: s
params:
  fast: {type: bool}
  mode: [calm, wild]
  n: {min: 0, max: 3%(n)s}
vars:
  x: {type: int, min: 0, max: 2, init: %(init)s}
actions:
  inc: {when: x < 2, do: [{set: {x: x + 1}}]}
terminal: x == 2
scenarios:
  up:
    params: {fast: true, mode: wild, n: 1}
    steps:
      - {action: inc}
      - {action: inc}
    expect: {x: 2}
"""


def _spec(n: str = "", init: str = "0") -> Spec:
    return parse_spec(SWEPT % {"n": n, "init": init}, "s.yaml")


def _problems(n: str = "", init: str = "0") -> list[tuple[int | None, str, str | None]]:
    with pytest.raises(SpecError) as info:
        _spec(n, init)
    return [(p.line, p.message, p.text) for p in info.value.problems]


def test_a_bool_param_and_a_scenarios_enum_value_are_accepted():
    """`{type: bool}` is the one type a param names; a scenario's `mode: wild` is YAML's positioned
    string, read as the plain text it is."""
    s = _spec()
    assert [(p.name, p.kind, list(p.values)) for p in s.params] == [
        ("fast", "bool", [False, True]), ("mode", "enum", ["calm", "wild"]), ("n", "int", [0, 1, 2, 3])]
    [up] = s.scenarios
    assert (up.name, up.params, up.init) == ("up", {"fast": True, "mode": "wild", "n": 1}, {})


def test_an_unknown_key_of_a_ranged_param_is_named_with_the_allowed_keys():
    assert _problems(n=", step: 1") == [(5, "unknown key in param n (allowed: max, min, values)", "step")]


def test_a_scenario_must_choose_among_several_initial_values():
    assert _problems(init="{one_of: [0, 1]}") == [
        (12, "scenario up must choose the initial value of x (it has several)", None)]


DECIDED = """\
machine: d
vars:
  x: {type: int, min: 0, max: 1, init: 0}
  s: {type: enum, values: [go, stop], init: go}
actions:
  step:
    when: x < 1
    do:
      - set: {x: x + 1}
      - decide: s
        rules:
          - {name: %s, then: stop}
terminal: s == stop
"""


def test_a_rule_without_a_usable_name_is_named_at_its_line():
    for name, text in (("3", "3"), ("'  '", "  ")):
        with pytest.raises(SpecError) as info:
            parse_spec(DECIDED % name, "d.yaml")
        assert [(p.line, p.message, p.text) for p in info.value.problems] == [(12, "a rule needs a name", text)]
