"""Mutants of machine/spec.py that the rest of the verdict selection let through (issue 18):
the loader's messages pinned whole with their line and quoted text, and the accepted forms
(a bool param, a scenario's enum param value) that a planted bug would refuse. Each test was
seen failing with its mutation applied (docs/explanation/mutation-testing.md)."""

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


RICH = """\
machine: rich
vars:
  x: {type: int, min: 0, max: 2, init: 0}
  seen: {type: bool, init: false, description: whether a call was made}
  s: {type: enum, values: [go, stop], init: go}
actions:
  call:
    when: x < 2
    choose: {c: [{name: small, value: 1}, {name: big, value: 2}]}
    do:
      - set: {x: x + 1, seen: true}
  wait:
    when: x < 2
    choose: {c: [u, v]}
    do:
      - set: {x: x + 1}
  stop:
    when: x == 2 and s == go
    do:
      - set: {s: stop}
terminal:
  label: s
  values: [stop]
properties:
  quick: {terminates_within: 3, count: "action == call"}
  top: {maximum: x, at_most: 2}
  never: {always: x < 2}
expect:
  violated: [never]
replay:
  moved: after.x - before.x
"""


def test_a_spec_using_the_less_common_forms_loads_as_written():
    """A record with a field named `value` (no `when`: a record, not a conditional value), one
    choice name in two actions, a described bool var, a labelled terminal, a counted bound, a
    maximum with at_most, `expect` and `replay`."""
    s = parse_spec(RICH, "rich.yaml")
    assert [(a.name, [(n, cs.kind) for n, cs in a.choices]) for a in s.actions] == [
        ("call", [("c", "records")]), ("wait", [("c", "scalars")]), ("stop", [])]
    assert list(dict(s.actions[0].choices)["c"].fields) == ["value"]
    assert [(v.name, v.kind) for v in s.vars] == [("x", "int"), ("seen", "bool"), ("s", "enum")]
    assert s.terminal is not None and s.terminal.label is not None and s.terminal.label.text == "s"
    assert [(p.name, p.kind, p.count and p.count.text, p.bound and p.bound.text) for p in s.properties
            if p.name in ("quick", "top", "never")] == [
        ("quick", "terminates_within", "action == call", "3"), ("top", "maximum", None, "2"),
        ("never", "invariant", None, None)]
    assert s.expect_violated == ["never"]
    assert [(label, e.text) for label, e in s.replay] == [("moved", "after.x - before.x")]


def test_a_bound_spec_whose_actions_only_carry_monitors_compares_no_stages():
    """The pattern monitor's stage is not the user's: with no stage of its own in any action, the
    bound code is not compared with the spec (no `code_matches_spec`)."""
    s = parse_spec("""\
machine: b
bind: some_module:Adapter
vars:
  x: {type: int, min: 0, max: 2, init: 0}
actions:
  inc: {when: x < 2}
terminal: x == 2
properties:
  p: {absence: x > 5}
""", "b.yaml")
    assert [(a.own_stages, len(a.stages)) for a in s.actions] == [(False, 1)]
    assert s.builtins == ("domains", "well_defined", "bound_code")


MISTAKES = """\
machine: m
params:
  K: {values: [1, 2]}
vars:
  x: {type: int, min: 0, max: %(max)s, init: 0}
sets:
  %(set)s: [a, b]
actions:
  inc: {when: x < 1, do: [{set: {x: x + 1}}]}
terminal: x == 1
properties:
  p: {always: x < 2%(prop)s}
fairness: %(fairness)s
"""


@pytest.mark.parametrize("change,problem", [
    ({"max": "'1 > 0'"}, (5, "max of x must be an int, but this is bool", "1 > 0")),
    ({"prop": ", smallest_safe: nope"}, (12, "smallest_safe of p must name a param (the spec has: K)", "nope")),
    ({"fairness": "5"}, (13, "fairness must be a list of assumptions such as {weak: ACTION} or "
                             "{strong: ACTION, when: EXPR}", "5")),
    ({"set": "letters: [a, b]\n  class"}, (8, "a set name must be a plain identifier", "class")),   # not the first key
])
def test_a_loader_error_is_named_whole_at_its_line(change, problem):
    fields = {"max": "1", "set": "letters", "prop": "", "fairness": "[]"} | change
    with pytest.raises(SpecError) as info:
        parse_spec(MISTAKES % fields, "m.yaml")
    assert [(p.line, p.message, p.text) for p in info.value.problems] == [problem]


def test_a_bool_pin_given_as_text_reads_as_its_value():
    """`-p fast=false` arrives as the text "false": it pins False, as "true" pins True."""
    fast = _spec().params[0]
    assert (fast.pinned("false"), fast.pinned("true")) == (False, True)


def test_a_negative_at_most_is_named_at_its_own_line():
    """In a block mapping `at_most:` sits below `bounded_existence:`: the error names its line."""
    with pytest.raises(SpecError) as info:
        parse_spec(SWEPT % {"n": "", "init": "0"} + "properties:\n  few:\n    bounded_existence:\n"
                   "      what: x == 1\n      at_most: -1\n", "s.yaml")
    assert [(p.line, p.message, p.text) for p in info.value.problems] == [
        (22, "at_most of few must be 0 or more", "-1")]


def test_smallest_safe_naming_a_bool_param_quotes_the_name():
    with pytest.raises(SpecError) as info:
        parse_spec(SWEPT % {"n": "", "init": "0"} + "properties:\n  up:\n    always: x >= 0\n"
                   "    smallest_safe: fast\n", "s.yaml")
    assert [(p.line, p.message, p.text) for p in info.value.problems] == [
        (21, "smallest_safe of up needs an int param to order; fast is a bool param", "fast")]


SHAPED = """\
machine: c
params:
  K: %(param)s
vars:
  x: {type: int, min: 0, max: 2, init: 0}
actions:
  inc:
    when: x < 2
    choose:
      c: %(choice)s
    do: [{set: {x: x + 1}}]
terminal: x == 2
properties:
  p:
    absence: x > 5
    scope:
      %(scope)s
"""
ONE_KIND = "the values of param K must all be of one kind: ints, strings, or true/false"
SCOPES = "scope of p must be one of {before: R}, {after: Q}, {between: [Q, R]}, {after: Q, until: R}"


@pytest.mark.parametrize("change,problem", [
    ({"choice": "{min: 0}"}, (10, "choice c needs the key 'max'", None)),
    ({"choice": "{max: 1}"}, (10, "choice c needs the key 'min'", None)),
    ({"choice": "\n        min: 0"}, (11, "choice c needs the key 'max'", None)),
    ({"choice": "{min: 0, max: 1, step: 1}"}, (10, "unknown key in choice c (allowed: max, min, when)", "step")),
    ({"choice": "5"}, (10, "choice c must be a list of values or records, or a {min, max} range", "5")),
    ({"choice": "[]"}, (10, "choice c is an empty set: the action could never happen", None)),
    ({"choice": "[{a: 1}, u]"}, (10, "choice c mixes records and plain values", None)),
    ({"choice": "[1, u]"}, (10, "choice c mixes values of different types", None)),
    ({"choice": "[u, u]"}, (10, "choice c lists a value twice", None)),
    ({"param": "[]"}, (3, "a param needs at least one value", "K")),
    ({"param": "\n    - 1\n    - a"}, (5, ONE_KIND, "a")),
    ({"param": "\n    - a\n    - 1"}, (5, ONE_KIND, "1")),
    ({"param": "\n    - true\n    - 1"}, (5, ONE_KIND, "1")),
    ({"param": "\n    - 1\n    - [" + ", ".join(["12345"] * 12) + "]"},
     (5, ONE_KIND, "[12345, 12345, 12345, 12345, 12345, 12345, 12345, 12345, ...")),
    ({"param": "\n    - 1\n    - " + "a" * 60}, (5, ONE_KIND, "a" * 60)),
    ({"param": "\n    - 1\n    - " + "a" * 61}, (5, ONE_KIND, "a" * 57 + "...")),
    ({"param": "\n    - 1\n    - 1"}, (3, "param K lists a value twice", "[1, 1]")),
    ({"param": "\n    - a\n    - b c"},
     (5, "a value of enum param K must be a name (letters, digits, _), usable in expressions", "b c")),
    ({"scope": "{\n        between: x}"}, (18, "between of p must be a list [Q, R]", None)),
    ({"scope": "{\n        between: [x == 1]}"}, (18, "between of p must be a list [Q, R]", None)),
    ({"scope": "{\n        nope: 1}"}, (16, SCOPES, "nope")),
    ({"scope": "{after: x == 1, before: x == 2}"}, (16, SCOPES, "after, before")),
])
def test_a_choice_param_or_scope_of_the_wrong_shape_is_named_whole_at_its_line(change, problem):
    """Every message of `choice_set`, `param_list` and `pattern_scope`, with the line of the very
    item (a param's second value, the `between` key below a `{` on its own line) and the text it
    quotes (a value longer than 60 characters cut to 57 and `...`)."""
    fields = {"param": "[1, 2]", "choice": "[u, v]", "scope": "before: x == 2"} | change
    with pytest.raises(SpecError) as info:
        parse_spec(SHAPED % fields, "c.yaml")
    assert [(p.file, p.line, p.message, p.text) for p in info.value.problems] == [("c.yaml", *problem)]


def test_a_var_bound_and_a_choice_name_are_named_at_their_own_lines():
    """A block-mapped var's `max:` below its `type:`, and a choice's name: each at its own line."""
    with pytest.raises(SpecError) as info:
        parse_spec(SHAPED.replace("  x: {type: int, min: 0, max: 2, init: 0}",
                                  "  x:\n    type: int\n    min: 0\n    max: 'K > 1'\n    init: 0")
                   % {"param": "[1, 2]", "choice": "[u, v]", "scope": "before: x == 2"}, "c.yaml")
    assert [(p.file, p.line, p.message, p.text) for p in info.value.problems] == [
        ("c.yaml", 8, "max of x must be an int, but this is bool", "K > 1")]
    with pytest.raises(SpecError) as info:
        parse_spec(SHAPED.replace("      c: %(choice)s", "      c: [u, v]\n      class: [a, b]")
                   % {"param": "[1, 2]", "choice": "", "scope": "before: x == 2"}, "c.yaml")
    assert [(p.file, p.line, p.message, p.text) for p in info.value.problems] == [
        ("c.yaml", 11, "a choice name must be a plain identifier", "class")]


@pytest.mark.parametrize("action,problem", [
    ("class: {when: x < 1}", (9, "an action name must be a plain identifier", "class")),
    ("rule: {when: x < 1}", (9, "an action name uses a reserved name", "rule")),
    ("inc: 5", (9, "action inc must be a mapping", "5")),
])
def test_a_bad_action_name_or_body_is_named_whole_at_its_line(action, problem):
    """The action's own name and body are checked before its choices: the whole message, its line
    and the name it quotes."""
    text = MISTAKES % {"max": "1", "set": "letters", "prop": "", "fairness": "[]"}
    with pytest.raises(SpecError) as info:
        parse_spec(text.replace("inc: {when: x < 1, do: [{set: {x: x + 1}}]}", action), "m.yaml")
    assert [(p.line, p.message, p.text) for p in info.value.problems] == [problem]


SCENARIO = """\
machine: s
params:
  K: [1, 2]
vars:
  x: {type: int, min: 0, max: 2, init: {one_of: [0, 1]}}
actions:
  inc:
    when: x < 2
    choose: {c: [u, v], r: {min: 0, max: 1}}
    do: [{set: {x: x + 1}}]
terminal: x == 2
scenarios:
  up:
    params: {K: 1}
    init: {x: 0}
    steps:
      - action: inc
        choices: {c: u, r: 0}
    expect: {x: 1}
"""


@pytest.mark.parametrize("old,new,problem", [
    ("params: {K: 1}", "params: {J: 1}", (14, "not a declared param", "J")),
    ("params: {K: 1}", "params: {K: 3}", (14, "K=3 is not a declared value of K (1, 2)", None)),
    ("params: {K: 1}", "params: {}", (13, "scenario up must set param K (it has several values)", None)),
    ("init: {x: 0}", "init: {}", (13, "scenario up must choose the initial value of x (it has several)", None)),
    ("    steps:\n      - action: inc\n        choices: {c: u, r: 0}", "    steps: 5",
     (16, "steps must be a list", None)),
    ("      - action: inc\n        choices: {c: u, r: 0}", "      - 5", (17, "a scenario step must be a mapping", "5")),
    ("action: inc\n", "action: dec\n", (17, "not an action of this machine", "dec")),
    ("{c: u, r: 0}", "{r: 0}", (17, "action inc needs a value for choice c", None)),
    ("{c: u, r: 0}", "{c: u, r: 0, d: 1}", (18, "action inc has no choice named 'd'", None)),
    ("{c: u, r: 0}", "{c: w, r: 0}", (18, "not a value of choice c (u, v)", "w")),
    ("{c: u, r: 0}", "{c: u, r: a}", (18, "choice r must be an integer", "a")),
    ("expect: {x: 1}", "expect: {y: 1}", (19, "not a declared var", "y")),
    ("        choices: {c: u, r: 0}", "        choices: {c: u, r: 0}\n        note: 1",
     (19, "unknown key in a scenario step (allowed: action, choices)", "note")),
])
def test_every_scenario_error_is_named_whole_at_its_line(old, new, problem):
    """Each message of `_Loader.scenario` in full, at the line of the param, step, choice or
    scenario it is about, with the text it quotes (a choice's allowed values listed in order)."""
    assert old in SCENARIO
    parse_spec(SCENARIO, "s.yaml")        # the scenario as written loads
    with pytest.raises(SpecError) as info:
        parse_spec(SCENARIO.replace(old, new), "s.yaml")
    assert [(p.file, p.line, p.message, p.text) for p in info.value.problems] == [("s.yaml", *problem)]
