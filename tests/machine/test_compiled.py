"""machine/compiled.py, the compiled spec: the spec lines errors are reported at, the domains
named in messages, the parameter errors' text, range choices.

Written against mutants that the rest of the verdict selection let through (issue 18; the file
was test_compiled_kills): each test was seen failing with its mutation applied
(docs/explanation/mutation-testing.md)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from haltproof.explorer.options import Options
from haltproof.explorer.check import check_spec, prepare
from haltproof.explorer.replay import run_steps
from haltproof.machine import compiled as compiled_module
from haltproof.machine.spec import SpecError, load_spec, parse_spec
from test_check_kills import PATTERNS
from engine_ways import each_way, machine_of, prop

pytestmark = pytest.mark.verdict

DECIDE = """\
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
            when: x > 5
            then: a
          - name: second
            then: >-
              b if 4 // (x - 2) > 0 else a
terminal:
  label: d
  values: [b]
"""


def test_an_error_in_a_rules_then_names_the_then_line_not_the_when_before_it():
    for way, r in each_way(DECIDE, vector=False).items():
        wd = prop(r, "well_defined")
        assert wd.status == "violated", way
        assert wd.message == "action inc with no choices (kills.yaml:16): integer division or modulo by zero", way


ENUM_BOUND = """\
machine: colours
bind: colour_code:Paint
vars:
  c: {type: enum, values: [red, green], init: red}
  lit: {type: bool, init: false}
actions:
  paint: {when: c == red, do: [{set: {c: green}}]}
  light: {when: not lit, do: [{set: {lit: true}}]}
terminal: c == green and lit
"""

ADAPTER = '''
from haltproof.machine.binding import Adapter


class Paint(Adapter):
    COLOUR = "green"
    LIT = True

    def concretize(self, state, params):
        return dict(state)

    def step(self, action, concrete, choices):
        new = dict(concrete)
        if action == "paint":
            new["c"] = self.COLOUR
        else:
            new["lit"] = self.LIT
        return new, None

    def abstract(self, concrete, params):
        return dict(concrete)


class Blue(Paint):
    COLOUR = "blue"


class Two(Paint):
    LIT = 2
'''


@pytest.mark.parametrize("adapter,message", [
    ("Blue", "c = 'blue' is outside its domain {red, green}"),
    ("Two", "lit = 2 is outside its domain true/false")])
def test_a_bound_value_outside_an_enum_or_bool_domain_names_the_domain(tmp_path: Path, adapter, message):
    (tmp_path / "colour_code.py").write_text(ADAPTER)
    path = tmp_path / f"colours_{adapter}.yaml"
    path.write_text(ENUM_BOUND.replace("colour_code:Paint", f"colour_code:{adapter}"))
    (run,) = check_spec(load_spec(path), Options())
    dom = next(p for p in run.properties if p.name == "domains")
    assert dom.status == "violated" and dom.message == message


def test_a_parameter_expression_that_divides_by_zero_shows_the_expression():
    text = textwrap.dedent("""\
        machine: m
        params:
          n: {min: 1, max: 2}
        vars:
          x: {type: int, min: 0, max: 3 // (n - 1), init: 0}
        actions:
          inc: {when: x < 1, do: [{set: {x: x + 1}}]}
        terminal: x == 1
        """)
    with pytest.raises(SpecError) as raised:
        check_spec(parse_spec(text, "p.yaml"), Options())
    [problem] = raised.value.problems
    assert (problem.line, problem.message, problem.text) == (5, "division by zero (with n=1)", "3 // (n - 1)")


CONDITIONAL = """\
machine: m
vars:
  x: {type: int, min: 0, max: 3, init: 0}
actions:
  inc:
    when: x < 3
    choose:
      obs:
        values:
          - ok
          - value: error
            when: VALUE_WHEN
        when: >-
          CHOICE_WHEN
    do:
      - set: {x: x + 1}
terminal: x == 3
"""


@pytest.mark.parametrize("choice_when,value_when,message", [
    ("4 // (x - 1) > 0", "true", "action inc with obs=ok (kills.yaml:13): integer division or modulo by zero"),
    ("x != 1", "4 // (x - 2) > 0", "action inc with obs=error (kills.yaml:12): integer division or modulo by zero")])
def test_an_error_in_a_conditional_choices_when_names_that_when_s_line(choice_when, value_when, message):
    """The choice's own `when:` (line 13, below the choice's line 8) and a value's (line 12)."""
    spec = CONDITIONAL.replace("CHOICE_WHEN", choice_when).replace("VALUE_WHEN", value_when)
    for way, r in each_way(spec, vector=False).items():
        wd = prop(r, "well_defined")
        assert (wd.status, wd.message) == ("violated", message), way


RECORD_REPLAY = """\
machine: r
vars:
  last: {type: enum, values: [none, search, stop], init: none}
actions:
  act:
    when: last == none
    choose:
      tool:
        - {name: search, cost: 2}
        - {name: stop, cost: 0}
    do:
      - set: {last: tool}
terminal: last != none
replay:
  tool: tool
  cost: tool.cost
  last: after.last
  before: before.last
  literal: search
"""


def test_a_replay_line_of_a_bare_record_choice_prints_the_record_and_nothing_else_does():
    """`tool` alone is the record, as JSON; its field, a var holding the same label and the
    enum literal `search` (an identifier too, equal to the record's name) print as values."""
    [m] = prepare(parse_spec(RECORD_REPLAY, "r.yaml"), Options(model_only=True))
    out = run_steps(m, {"last": "none"}, [("act", {"tool": "search"})])
    assert out.problem is None
    assert out.lines == [[("tool", '{"name": "search", "cost": 2}'), ("cost", "2"), ("last", "search"),
                          ("before", "none"), ("literal", "search")]]


INITS = """\
machine: m
params:
  n: {min: 1, max: 2}
vars:
  x: {type: int, min: 0, max: 3, init: {one_of: [n, 1]}}
  y: {type: int, min: 0, max: 3, init: {one_of: [0, 1, 2]}}
actions:
  inc: {when: x < 3, do: [{set: {x: x + 1}}]}
terminal: x == 3
"""


def test_an_init_listing_a_value_twice_for_some_params_is_refused_at_its_var():
    with pytest.raises(SpecError) as raised:
        check_spec(parse_spec(INITS, "i.yaml"), Options(pins={"n": [1]}))
    [problem] = raised.value.problems
    assert (problem.line, problem.message) == (5, "init of x lists a value twice (with n=1)")


def test_too_many_initial_states_are_refused_at_the_var_with_the_most_values(monkeypatch):
    monkeypatch.setattr(compiled_module, "MAX_PRODUCT", 5)
    with pytest.raises(SpecError) as raised:
        check_spec(parse_spec(INITS, "i.yaml"), Options(pins={"n": [2]}))
    [problem] = raised.value.problems
    assert (problem.line, problem.message) == (
        6, "the vars' init values make 6 initial states, more than the limit of 5 (with n=2)")


def test_a_spec_without_a_terminal_replays_to_a_state_that_is_not_terminal():
    """`is_terminal` of a spec without `terminal:` answers False, a bool like every other's."""
    [m] = prepare(parse_spec(INITS.replace("terminal: x == 3\n", ""), "i.yaml"),
                  Options(model_only=True, pins={"n": [2]}))
    assert m.is_terminal(m.inits[0]) is False
    out = run_steps(m, {"x": 2, "y": 0}, [("inc", {})])
    assert out.problem is None and out.terminal is False


# fresh sample (seed 19): which properties may fail is judged against the choices each action
# makes; a step property reading a choice only under its action's name cannot fail.
READS_A_CHOICE = """\
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
  climbs:
    step: not (action == inc) or after.x == before.x + by
"""


def test_a_step_property_reading_a_choice_under_its_action_is_judged_on_every_engine():
    for way, r in each_way(READS_A_CHOICE).items():
        assert (prop(r, "climbs").status, r.result) == ("holds", "proved"), way
        assert (r.stats["states"], r.stats["transitions"]) == (6, 6), way


# fresh sample (seed 19): a set of two vars assigns both, simultaneously (y sees x before).
TWO_AT_ONCE = """\
machine: m
vars:
  x: {type: int, min: 0, max: 2, init: 0}
  y: {type: int, min: 0, max: 2, init: 0}
actions:
  go:
    when: x < 1
    do:
      - set: {x: x + 1, y: x + 2}
terminal: x == 1
"""


def test_a_set_of_two_vars_replays_to_both_new_values_computed_from_the_old_state():
    [m] = prepare(parse_spec(TWO_AT_ONCE, "two.yaml"), Options(model_only=True))
    out = run_steps(m, {"x": 0, "y": 0}, [("go", {})])
    assert (out.problem, out.terminal, out.states) == (None, True, [(0, 0), (1, 2)])


WITHIN = """\
machine: within
params:
  n: {min: 1, max: 3}
vars: {x: {type: int, min: 0, max: 1, init: 0}}
actions:
  go: {when: x < 1, do: [{set: {x: x + 1}}]}
terminal: x == 1
properties:
  instant:
    terminates_within: n - 2
"""


def test_a_terminates_within_bound_of_0_is_a_bound_and_below_it_is_refused():
    """With n=2 the bound is 0 (no transition at all): checked, and violated by the run of one;
    with n=1 it is -1, refused at the bound's line."""
    zero = WITHIN.replace("params:\n  n: {min: 1, max: 3}\n", "").replace("n - 2", "0")
    for way, r in each_way(zero).items():
        p = prop(r, "instant")
        assert (p.status, p.message) == ("violated", "a run takes 1 transition, more than 0"), way
        assert [(s.action, s.state["x"]) for s in p.trace.steps] == [(None, 0), ("go", 1)], way
    (r,) = check_spec(parse_spec(WITHIN, "w.yaml"), Options(pins={"n": [2]}))
    assert (prop(r, "instant").status, prop(r, "instant").message) == ("violated", "a run takes 1 transition, "
                                                                                   "more than 0")
    with pytest.raises(SpecError) as raised:
        check_spec(parse_spec(WITHIN, "w.yaml"), Options(pins={"n": [1]}))
    [problem] = raised.value.problems
    assert (problem.line, problem.message) == (10, "the bound of instant is -1: a run takes at least 0 transitions, "
                                                   "so terminates_within needs a bound of 0 or more (with n=1)")
    with pytest.raises(SpecError) as raised:
        check_spec(parse_spec(WITHIN.replace("n - 2", "3 // (n - 1)"), "w.yaml"), Options(pins={"n": [1]}))
    [problem] = raised.value.problems
    assert (problem.line, problem.message) == (10, "division by zero (with n=1)")


def test_an_initial_state_given_by_the_users_vars_starts_the_monitors_in_their_initial_values():
    """A trace's first row without the monitors (what replay reads): the monitors are appended
    in their one initial value; a row naming them gives them itself."""
    m = machine_of(PATTERNS)
    assert m.full_state({"n": 1, "last": "refuse"}) == (1, "refuse", "open", "waiting", "waiting")
    named = {"n": 0, "last": "none", "fine:monitor": "open", "scoped:monitor": "inside", "broken:monitor": "waiting"}
    assert m.full_state(named) == (0, "none", "open", "inside", "waiting")
