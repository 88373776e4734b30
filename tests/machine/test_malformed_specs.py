"""Malformed specs through the real CLI: exit 2, `<path>:<line>:` of the mistake, a message
that names the problem, nothing on stdout, never a traceback.

Every case is one small edit of BASE, a valid spec (checked by `test_base_spec_is_valid`),
so each case contains exactly the one mistake it is about. The expected line number is
written out in each case; BASE's own line numbers are in the comment next to it.
"""

from __future__ import annotations

import pytest

from spec_checks import Ran

pytestmark = pytest.mark.verdict      # judges verdicts: in the per-mutant selection (docs/explanation/mutation-testing.md)

#  1 machine: m
#  2 params:
#  3   n: {min: 1, max: 3}
#  4 vars:
#  5   steps: {type: int, min: 0, max: n, init: 0}
#  6   decision: {type: enum, values: [going, done], init: going}
#  7 actions:
#  8   work:
#  9     when: decision == going
# 10     choose:
# 11       obs: [good, bad]
# 12     do:
# 13       - set: {steps: steps + 1, decision: going}
# 14       - decide: decision
# 15         rules:
# 16           - {name: finish, when: steps >= n, then: done}
# 17           - {name: again, then: going}
# 18 terminal:
# 19   label: decision
# 20   values: [done]
BASE = """\
machine: m
params:
  n: {min: 1, max: 3}
vars:
  steps: {type: int, min: 0, max: n, init: 0}
  decision: {type: enum, values: [going, done], init: going}
actions:
  work:
    when: decision == going
    choose:
      obs: [good, bad]
    do:
      - set: {steps: steps + 1, decision: going}
      - decide: decision
        rules:
          - {name: finish, when: steps >= n, then: done}
          - {name: again, then: going}
terminal:
  label: decision
  values: [done]
"""

GUARD = "    when: decision == going\n"          # line 9
STEPS = "  steps: {type: int, min: 0, max: n, init: 0}\n"   # line 5
DECISION = "  decision: {type: enum, values: [going, done], init: going}\n"   # line 6


def edit(*pairs: str, base: str = BASE) -> str:
    """BASE with each `old` replaced by `new`; every `old` must occur exactly once."""
    assert len(pairs) % 2 == 0
    text = base
    for old, new in zip(pairs[::2], pairs[1::2]):
        assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times"
        text = text.replace(old, new)
    return text


def guard(expr: str) -> str:
    """BASE with the guard of `work` (line 9) replaced."""
    return edit(GUARD, f"    when: {expr}\n")


def assert_rejected(r: Ran, line: int, message: str) -> None:
    """Exit 2, no report, no traceback, and the whole message `error: <path>:<line>: MESSAGE`
    on a line of its own: every word, the quoted text and the line number are pinned (a
    message that loses its line, its subject or the text it points at is a defect too)."""
    assert "Traceback" not in r.err and "Traceback" not in r.out, r.err
    assert "internal error" not in r.err, r.err
    assert r.code == 2, f"exit {r.code}\n{r.err}"
    assert r.out == "", "a rejected spec must not print a (partial) report"
    assert f"error: {r.path}:{line}: {message}" in r.err.splitlines(), \
        f"not the line-{line} message {message!r}:\n{r.err}"


# ---------------------------------------------------------------- the base spec itself

def test_base_spec_is_valid(check):
    r = check(BASE)
    assert r.code == 0, r.err
    assert "proved" in r.out
    assert "Traceback" not in r.err


def test_assert_rejected_catches_a_wrong_line(check):
    """The helper itself must be able to fail: the right message at another line, or a part
    of the message, is not enough."""
    r = check(edit(DECISION, "  decision: type: enum\n"))
    assert_rejected(r, 6, 'not valid YAML: mapping values are not allowed here')
    with pytest.raises(AssertionError):
        assert_rejected(r, 5, "not valid YAML: mapping values are not allowed here")
    with pytest.raises(AssertionError):
        assert_rejected(r, 6, "not valid YAML")         # only a part of the message


# ---------------------------------------------------------------- YAML level

def test_invalid_yaml_syntax(check):
    r = check(edit(DECISION, "  decision: type: enum\n"))
    assert_rejected(r, 6, 'not valid YAML: mapping values are not allowed here')


def test_tab_indentation(check):
    r = check(edit(GUARD, "\twhen: decision == going\n"))
    assert_rejected(r, 9, "not valid YAML: found character '\\t' that cannot start any token")


def test_unclosed_flow_mapping_points_at_its_opening_line(check):
    r = check(edit(DECISION, "  decision: {type: enum, values: [going, done], init: going\n"))
    assert r.code == 2 and r.out == "" and "Traceback" not in r.err
    # Either located at line 6, or at least saying that the mapping began at line 6.
    assert f"{r.path}:6:" in r.err or "line 6" in r.err, r.err


def test_duplicate_key(check):
    r = check(edit(STEPS, STEPS + "  steps: {type: bool, init: true}\n"))
    assert_rejected(r, 6, "duplicate key (first at line 5): 'steps'")


def test_duplicate_key_inside_flow_mapping(check):
    r = check(edit(STEPS, "  steps: {type: int, min: 0, max: n, init: 0, max: 2}\n"))
    assert_rejected(r, 5, "duplicate key (first at line 5): 'max'")


def test_empty_file(check):
    assert_rejected(check(""), 1, 'the file is empty')


def test_only_comments(check):
    assert_rejected(check("# a spec will go here\n"), 1, 'the file is empty')


def test_top_level_is_a_list(check):
    assert_rejected(check("- machine: m\n- vars: {}\n"), 1, 'a spec must be a mapping: "[{\'machine\': \'m\'}, {\'vars\': '
                                                            '{}}]"')


def test_second_yaml_document(check):
    r = check(BASE + "---\nmachine: other\n")
    assert_rejected(r, 21, 'not valid YAML: but found another document')


@pytest.mark.parametrize("tagged, tag", [
    ("!!python/object:os.system going", "tag:yaml.org,2002:python/object:os.system"),
    ("!!python/object/apply:os.system ['echo hi']", "tag:yaml.org,2002:python/object/apply:os.system"),
    ("!!python/name:os.system ''", "tag:yaml.org,2002:python/name:os.system"),
    ("!custom going", "!custom"),
], ids=["python-object", "python-object-apply", "python-name", "local-tag"])
def test_yaml_tag(check, tagged, tag):
    r = check(edit("init: going}", f"init: {tagged}}}"))
    assert_rejected(r, 6, f"YAML tag not allowed in a spec: {tag!r}")


def test_merge_key(check):
    r = check(edit(STEPS, "  steps: &s {type: int, min: 0, max: n, init: 0}\n"
                          "  other:\n"
                          "    <<: *s\n"))
    assert_rejected(r, 7, "YAML merge keys ('<<') are not supported in a spec")


def test_non_string_key(check):
    r = check(edit(STEPS, "  1: {type: bool, init: true}\n" + STEPS))
    assert_rejected(r, 5, "keys must be strings: '1'")


# ---------------------------------------------------------------- schema

def test_unknown_top_level_key(check):
    r = check(BASE + "propertes:\n  p: {always: steps >= 0}\n")
    assert_rejected(r, 21, 'unknown key in the spec (allowed: actions, agents, bind, description, expect, fairness, '
                           'machine, measures, params, probabilities, properties, replay, scenarios, sets, '
                           "spans, terminal, vars): 'propertes'")


def test_misspelled_required_top_level_key(check):
    r = check(edit("machine: m\n", "name: m\n"))
    assert_rejected(r, 1, 'unknown key in the spec (allowed: actions, agents, bind, description, expect, fairness, machine, '
                          'measures, params, probabilities, properties, replay, scenarios, sets, spans, terminal, '
                          "vars): 'name'")


def test_missing_required_top_level_key(check):
    r = check(edit("machine: m\n", "description: no name\n"))
    assert_rejected(r, 1, "the spec needs the key 'machine'")


def test_unknown_key_in_a_var(check):
    r = check(edit(STEPS, "  steps:\n"
                          "    type: int\n"
                          "    min: 0\n"
                          "    max: n\n"
                          "    maximum: 3\n"
                          "    init: 0\n"))
    assert_rejected(r, 9, "unknown key in int var steps (allowed: description, ghost, init, max, min, type): 'maximum'")


def test_var_without_type(check):
    r = check(edit(STEPS, "  steps:\n"
                          "    min: 0\n"
                          "    max: n\n"
                          "    init: 0\n"))
    assert_rejected(r, 5, 'var steps needs a type: int, enum or bool')


def test_var_with_bad_type(check):
    r = check(edit(STEPS, "  steps:\n"
                          "    type: integer\n"
                          "    min: 0\n"
                          "    max: n\n"
                          "    init: 0\n"))
    assert_rejected(r, 6, "var steps needs a type: int, enum or bool: 'integer'")


def test_var_without_init(check):
    r = check(edit(STEPS, "  steps:\n"
                          "    type: int\n"
                          "    min: 0\n"
                          "    max: n\n"))
    assert_rejected(r, 6, "int var steps needs the key 'init'")


def test_var_with_reserved_name(check):
    r = check(edit(STEPS, STEPS + "  action: {type: bool, init: true}\n"))
    assert_rejected(r, 6, "a var name uses a reserved name: 'action'")


def test_enum_value_named_like_a_var(check):
    r = check(edit("values: [going, done]", "values: [going, done, steps]"))
    assert_rejected(r, 6, "enum value 'steps' of decision has the same name as a var; rename one of them so "
                          'unquoted names stay unambiguous')


def test_enum_init_not_among_values(check):
    # A quoted string literal: the type system knows it is the value 'idle'.
    r = check(edit("init: going}", "init: \"'idle'\"}"))
    assert_rejected(r, 6, "init of decision can be 'idle', which is not a value of decision (going, done): "
                          '"\'idle\'"')


def test_enum_init_not_among_values_unquoted(check):
    r = check(edit("init: going}", "init: idle}"))
    assert_rejected(r, 6, "init of decision: 'idle' is not a value of decision (going, done): 'idle'")
    assert "going" in r.err and "done" in r.err, r.err


def test_int_init_outside_domain_for_some_param(check):
    # max is n (1..3): init 2 is fine for n=2,3 and outside the domain for n=1.
    r = check(edit("min: 0, max: n, init: 0}", "min: 0, max: n, init: 2}"))
    assert_rejected(r, 5, 'initial value 2 of steps is outside its domain 0..1 (with n=1)')


def test_int_var_with_bool_bound(check):
    r = check(edit("min: 0, max: n, init: 0}", "min: false, max: n, init: 0}"))
    assert_rejected(r, 5, "min of steps must be an int, but this is bool: 'false'")


def test_var_bound_divides_by_zero_for_some_param(check):
    r = check(edit("max: n, init: 0}", "max: 3 // (n - 1), init: 0}"))
    assert_rejected(r, 5, "division by zero (with n=1): '3 // (n - 1)'")


def test_float_value(check):
    r = check(edit("max: n, init: 0}", "max: 2.5, init: 0}"))
    assert_rejected(r, 5, "floating-point numbers are not allowed; domains are finite integers: '2.5'")


def test_float_in_param_values(check):
    r = check(edit("n: {min: 1, max: 3}", "n: [1, 2.0]"))
    assert_rejected(r, 3, "floating-point numbers are not allowed; domains are finite integers: '2.0'")


def test_param_min_greater_than_max(check):
    r = check(edit("n: {min: 1, max: 3}", "n: {min: 3, max: 1}"))
    assert_rejected(r, 3, 'param n has min 3 > max 1: no values')


def test_bad_param_gives_no_cascading_undefined_name(check):
    r = check(edit("n: {min: 1, max: 3}", "n: {min: 3, max: 1}"))
    assert_rejected(r, 3, 'param n has min 3 > max 1: no values')
    assert "undefined name" not in r.err, r.err


def test_param_value_not_an_integer(check):
    r = check(edit("n: {min: 1, max: 3}", "n: three"))
    assert_rejected(r, 3, "param n must be an integer: 'three'")


def test_param_lists_a_value_twice(check):
    r = check(edit("n: {min: 1, max: 3}", "n: [1, 1]"))
    assert_rejected(r, 3, "param n lists a value twice: '[1, 1]'")


def test_pinned_param_value_not_declared(check):
    r = check(BASE, "-p", "n=7")
    assert_rejected(r, 3, '-p n=7: not a declared value of n (1..3)')


def test_every_problem_is_reported_at_its_own_line(check):
    r = check(edit(STEPS, "  steps: {type: int, min: 0, max: n, init: true}\n",
                   DECISION, "  decision: {type: enum, values: [going, done], init: \"'idle'\"}\n"))
    assert_rejected(r, 5, "init of steps must be int, but this is bool: 'true'")
    assert_rejected(r, 6, "init of decision can be 'idle', which is not a value of decision (going, done): "
                          '"\'idle\'"')


# ---------------------------------------------------------------- expressions

def test_undefined_name_with_did_you_mean(check):
    r = check(guard("decison == going"))
    assert_rejected(r, 9, "undefined name (did you mean 'decision'?): 'decison'")


def test_int_compared_with_enum(check):
    r = check(guard("steps == done"))
    assert_rejected(r, 9, "compares int with 'done' {done}: they can never be equal: 'steps == done'")


def test_enum_compared_with_value_of_no_var(check):
    r = check(guard("decision == 'gone'"))
    assert_rejected(r, 9, 'compares decision {done, going} with \'gone\' {gone}: they can never be equal: "decision '
                          '== \'gone\'"')


def test_enum_ordered(check):
    r = check(guard("decision < going"))
    assert_rejected(r, 9, "ordering comparison needs two ints, got decision {done, going} and 'going' {going}: "
                          "'decision < going'")


def test_condition_that_is_an_int(check):
    r = check(guard("steps + 1"))
    assert_rejected(r, 9, "guard of work must be true/false, but this is int: 'steps + 1'")


def test_rule_condition_that_is_an_int(check):
    r = check(edit("when: steps >= n,", "when: n - steps,"))
    assert_rejected(r, 16, "condition of rule finish must be true/false, but this is int: 'n - steps'")


# what a call of any other function is told
CALLS = ("only min(), max() and abs() may be called (and once(), historically(), previous(), since() "
         "in an always or reachable property)")


@pytest.mark.parametrize("expr, message", [
    ("open('x') == 1",
     CALLS + ': "open(\'x\')"'),
    ("__import__('os') == 1",
     CALLS + ': "__import__(\'os\')"'),
    ('steps.__class__ == 1',
     "var steps has no fields: 'steps.__class__'"),
    ("'lambda: true'",
     "not allowed in a spec expression (lambda): 'lambda: true'"),
    ('"(lambda x: x)(1) == 1"',
     CALLS + ": '(lambda x: x)(1)'"),
    ('steps[0] == 1',
     "not allowed in a spec expression (indexing): 'steps[0]'"),
    ('steps ** 2 < 4',
     "operator not allowed (use +, -, *, //, %): 'steps ** 2'"),
    ('steps / 2 < 4',
     "operator not allowed (use +, -, *, //, %): 'steps / 2'"),
    ('(steps & 1) == 1',
     "operator not allowed (use +, -, *, //, %): 'steps & 1'"),
    ('~steps == 1',
     "operator not allowed (use not, -, +): '~steps'"),
    ('decision is going',
     "comparison not allowed (use ==, !=, <, <=, >, >=, in, not in): 'decision is going'"),
    ('decision == None',
     "only integers, true/false and strings are allowed as constants: 'None'"),
    ('steps < 2.5',
     "only integers, true/false and strings are allowed as constants: '2.5'"),
    ("f'{steps}' == going",
     'not allowed in a spec expression (f-string): "f\'{steps}\'"'),
    ("'[x for x in (1, 2)] == 1'",
     "not allowed in a spec expression (comprehension): '[x for x in (1, 2)]'"),
    ('(x := 1) == 1',
     "not allowed in a spec expression (assignment): 'x := 1'"),
    ("'{1: 2} == 1'",
     "not allowed in a spec expression (dict literal): '{1: 2}'"),
    ('(1, 2)',
     "tuples are only allowed after 'in': '(1, 2)'"),
    ('decision in decision',
     "'in' needs a literal tuple on its right, like (a, b): 'decision'"),
    ('steps in (n, steps)',
     "the tuple after 'in' may hold only literals and params: 'steps'"),
    ('min(steps) == 0',
     "min() takes two or more arguments: 'min(steps)'"),
    ('abs(steps, 1) == 0',
     "abs() takes exactly one argument: 'abs(steps, 1)'"),
    ('max(steps, 1, key=1) == 0',
     "call with plain positional arguments only: 'max(steps, 1, key=1)'"),
], ids=["call-open", "call-import", "attr-dunder-var", "lambda", "lambda-call",
        "indexing", "power", "true-division", "bitand", "invert", "is", "none", "float", "fstring",
        "comprehension", "walrus", "dict", "bare-tuple", "in-name", "in-var-tuple", "min-one-arg",
        "abs-two-args", "keyword-arg"])
def test_forbidden_construct(check, expr, message):
    r = check(guard(expr))
    assert_rejected(r, 9, message)


def test_dunder_field_of_a_choice(check):
    r = check(edit("obs: [good, bad]", "obs: [{name: good, ok: true}, {name: bad, ok: false}]",
                   "when: steps >= n,", "when: obs.__class__ == 1,"))
    assert_rejected(r, 16, "choice obs has no field '__class__'; it has: name, ok: 'obs.__class__'")


def test_python_keyword_enum_value_unquoted(check):
    r = check(edit("values: [going, done]", "values: [going, continue, done]",
                   GUARD, "    when: decision == continue\n"))
    assert_rejected(r, 9, "guard of work is not valid syntax ('continue' is a Python keyword: to mean the value, "
                          "quote it: 'continue'): 'decision == continue'")


def test_python_keyword_enum_value_quoted_is_fine(check):
    r = check(edit("values: [going, done]", "values: [going, continue, done]",
                   GUARD, "    when: decision in (going, 'continue')\n"))
    assert r.code == 0, r.err


def test_comparison_chained_after_in(check):
    r = check(guard("steps in (0, 1) < 3"))
    assert_rejected(r, 9, "'in' cannot be chained with another comparison; join separate comparisons with 'and': "
                          "'steps in (0, 1) < 3'")


@pytest.mark.parametrize("expr", ["obs == good", "obs.ok"])
def test_guard_using_a_choice_explains_why(check, expr):
    r = check(edit("obs: [good, bad]", "obs: [{name: good, ok: true}, {name: bad, ok: false}]",
                   GUARD, f"    when: {expr}\n"))
    assert_rejected(r, 9, 'choice obs is made during its action, so it does not exist in a state: a guard is '
                          "evaluated before the choices are made (test the choice in the action's decide rules, or "
                          "in a step expression): 'obs'")
    assert "undefined name" not in r.err and "only allowed on a choice" not in r.err, r.err
    assert "guard" in r.err and "choice" in r.err, r.err


# ---------------------------------------------------------------- actions and choices

def test_decide_result_outside_target_enum(check):
    r = check(edit("then: done}", "then: good}"))
    assert_rejected(r, 16, "result of rule finish can be 'good', which is not a value of decision (going, done): "
                           "'good'")


def test_decide_result_quoted_string_outside_target_enum(check):
    r = check(edit("then: done}", "then: \"'finished'\"}"))
    assert_rejected(r, 16, "result of rule finish can be 'finished', which is not a value of decision (going, "
                           'done): "\'finished\'"')


def test_decide_result_typo_suggests_a_value_of_the_var(check):
    r = check(edit("then: done}", "then: finished}"))
    assert_rejected(r, 16, "result of rule finish: 'finished' is not a value of decision (going, done): 'finished'")
    assert "did you mean 'finish'" not in r.err, r.err
    assert "done" in r.err, r.err


def test_decide_result_wrong_type(check):
    r = check(edit("then: done}", "then: true}"))
    assert_rejected(r, 16, "result of rule finish must be enum, but this is bool: 'true'")


def test_rule_that_can_never_fire_after_unconditional_rule(check):
    r = check(edit("{name: finish, when: steps >= n, then: done}", "{name: finish, then: done}"))
    assert_rejected(r, 17, "rule 'again' can never fire: rule 'finish' before it has no condition")


def test_two_rules_with_one_name(check):
    r = check(edit("{name: again, then: going}", "{name: finish, then: going}"))
    assert_rejected(r, 17, "two rules named 'finish' in one table (first at line 16)")


def test_rule_without_name(check):
    r = check(edit("{name: again, then: going}", "{then: going}"))
    assert_rejected(r, 17, "a decide rule needs the key 'name'")


def test_second_decide_stage(check):
    r = check(edit("      - decide: decision\n",
                   "      - decide: decision\n"
                   "        rules: [{name: first, then: going}]\n"
                   "      - decide: decision\n"))
    assert_rejected(r, 16, 'action work has a second decide stage; one action makes one decision (merge the tables: '
                           'rules are tried in order)')


def test_decide_on_undeclared_var(check):
    r = check(edit("- decide: decision", "- decide: decisoin"))
    assert_rejected(r, 14, "not a declared var: 'decisoin'")


def test_unknown_stage(check):
    r = check(edit("- set: {steps: steps + 1, decision: going}", "- assign: {steps: steps + 1}"))
    assert_rejected(r, 13, 'a stage is either {set: {...}} or {decide: VAR, rules: [...]}')


def test_unknown_key_in_action(check):
    r = check(edit(GUARD, "    whenn: decision == going\n"))
    assert_rejected(r, 9, 'unknown key in action work (allowed: because, choose, description, do, raises, '
                          "run, unreachable_when, when): 'whenn'")


def test_action_sets_undeclared_var(check):
    r = check(edit("{steps: steps + 1, decision: going}", "{stepz: steps + 1, decision: going}"))
    assert_rejected(r, 13, "not a declared var: 'stepz'")


def test_set_int_var_to_enum(check):
    r = check(edit("{steps: steps + 1, decision: going}", "{steps: going, decision: going}"))
    assert_rejected(r, 13, "new value of steps must be int, but this is 'going' {going}: 'going'")


def test_empty_choice_set(check):
    r = check(edit("obs: [good, bad]", "obs: []"))
    assert_rejected(r, 11, 'choice obs is an empty set: the action could never happen')


def test_choice_range_empty_for_some_param(check):
    r = check(edit("obs: [good, bad]", "obs: {min: 2, max: n}"))
    assert_rejected(r, 11, 'choice obs of action work is an empty set (with n=1)')


def test_choice_range_with_string_bound(check):
    r = check(edit("obs: [good, bad]", "obs: {min: 0, max: \"'x'\"}"))
    assert_rejected(r, 11, 'max of choice obs must be an int, but this is \'x\' {x}: "\'x\'"')


def test_choice_range_with_bool_bound(check):
    r = check(edit("obs: [good, bad]", "obs: {min: 0, max: true}"))
    assert_rejected(r, 11, "max of choice obs must be an int, but this is bool: 'true'")


def test_choice_named_like_a_var(check):
    r = check(edit("obs: [good, bad]", "steps: [good, bad]"))
    assert_rejected(r, 11, 'choice steps has the same name as a var')


def test_choice_from_an_undeclared_set(check):
    r = check(edit("obs: [good, bad]", "obs: outcomes"))
    assert_rejected(r, 11, "no set named 'outcomes' under sets: 'outcomes'")


def test_records_with_different_fields(check):
    r = check(edit("obs: [good, bad]", "obs:\n"
                                       "        - {name: good, ok: true}\n"
                                       "        - {name: bad, okay: false}"))
    assert_rejected(r, 13, "record 'bad' of choice obs has fields ['okay'], the first record has ['ok']")


def test_choice_field_typo(check):
    r = check(edit("obs: [good, bad]", "obs: [{name: good, ok: true}, {name: bad, ok: false}]",
                   "when: steps >= n,", "when: obs.okk,"))
    assert_rejected(r, 16, "choice obs has no field 'okk' (did you mean 'ok'?); it has: name, ok: 'obs.okk'")


def test_terminal_value_not_a_value_of_the_label(check):
    r = check(edit("  values: [done]\n", "  values:\n    - done\n    - finished\n"))
    assert_rejected(r, 22, "terminal value can never equal the label (decision {done, going}): 'finished'")


# ---------------------------------------------------------------- properties, expect, scenarios

PROPS = BASE + "properties:\n"        # line 21; a property name is line 22, its body from 23


def test_property_with_two_kinds(check):
    r = check(PROPS + "  p:\n    always: steps >= 0\n    reachable: steps == 1\n")
    assert_rejected(r, 22, 'property p needs exactly one of: always, step, reachable, terminates, '
                           'terminates_within, variant, independent_of, probability, expected, maximum, possible, '
                           "absence, universality, precedence, bounded_existence, existence, response: 'always, "
                           "reachable'")


def test_property_with_no_kind(check):
    r = check(PROPS + "  p:\n    alway: steps >= 0\n")
    assert_rejected(r, 22, 'property p needs exactly one of: always, step, reachable, terminates, '
                           'terminates_within, variant, independent_of, probability, expected, maximum, possible, '
                           'absence, universality, precedence, bounded_existence, existence, response')


def test_step_invariant_with_bare_var(check):
    r = check(PROPS + "  p:\n    step: steps >= 0\n")
    assert_rejected(r, 23, "a step expression sees two states: write before.steps or after.steps: 'steps'")


def test_step_invariant_field_typo(check):
    r = check(PROPS + "  p:\n    step: before.stepz <= after.steps\n")
    assert_rejected(r, 23, "state before has no field 'stepz' (did you mean 'steps'?); it has: decision, steps: "
                           "'before.stepz'")


def test_property_named_like_a_builtin(check):
    r = check(PROPS + "  domains:\n    always: steps >= 0\n")
    assert_rejected(r, 22, 'domains is a built-in property and always checked')


def test_terminates_with_a_non_true_value(check):
    r = check(PROPS + "  p:\n    terminates: 1\n")
    assert_rejected(r, 23, "terminates takes the value true: '1'")


def test_variant_without_bound(check):
    r = check(PROPS + "  p:\n    variant: steps\n")
    assert_rejected(r, 23, "property p needs the key 'bound'")


def test_independent_of_undeclared_var(check):
    r = check(PROPS + "  p:\n    independent_of: [stepz]\n")
    assert_rejected(r, 23, "not a declared var: 'stepz'")


def test_expect_names_unknown_property(check):
    r = check(PROPS + "  p:\n    always: steps >= 0\n"
                      "expect:\n  violated:\n    - p\n    - q\n")
    assert_rejected(r, 27, "expect names a property the spec does not have: 'q'")


SCENARIO = BASE + """\
scenarios:
  s:
    params: {n: 1}
    steps:
      - {action: work, choices: {obs: good}}
    expect: {decision: done}
"""   # lines 21-26


def test_scenario_base_is_valid(check):
    r = check(SCENARIO)
    assert r.code == 0, r.err


def test_scenario_names_unknown_action(check):
    r = check(edit("      - {action: work, choices: {obs: good}}\n",
                   "      - {action: work, choices: {obs: good}}\n"
                   "      - {action: wrok, choices: {obs: good}}\n", base=SCENARIO))
    assert_rejected(r, 26, "not an action of this machine: 'wrok'")


def test_scenario_choice_value_unknown(check):
    r = check(edit("{obs: good}", "{obs: great}", base=SCENARIO))
    assert_rejected(r, 25, "not a value of choice obs (good, bad): 'great'")


def test_scenario_param_not_declared_value(check):
    r = check(edit("params: {n: 1}", "params: {n: 7}", base=SCENARIO))
    assert_rejected(r, 23, 'n=7 is not a declared value of n (1..3)')


def test_scenario_expects_a_value_outside_the_var(check):
    r = check(edit("expect: {decision: done}", "expect: {decision: finished}", base=SCENARIO))
    assert_rejected(r, 26, "not a value of enum var decision: 'finished'")


# ---------------------------------------------------------------- every other refusal of the loader

ACTIONS = BASE[BASE.index("actions:\n"):BASE.index("terminal:\n")]      # lines 7-17
RECORDS = ("obs: [good, bad]", "obs: [{name: good, ok: true}, {name: bad, ok: false}]")    # line 11


@pytest.mark.parametrize("text, line, message", [
    pytest.param(edit("machine: m\n", "machine: ''\n"),
                 1, 'machine must be a non-empty name',
                 id='machine-empty-name'),
    pytest.param(edit(ACTIONS, "actions: {}\n"),
                 7, 'a machine needs at least one action',
                 id='no-actions'),
    pytest.param(edit("  n: {min: 1, max: 3}\n", "  n: []\n"),
                 3, "a param needs at least one value: 'n'",
                 id='param-no-values'),
    pytest.param(edit(STEPS + DECISION, "", "vars:\n", "vars: {}\n"),
                 4, 'a machine needs at least one var',
                 id='no-vars'),
    pytest.param(edit("obs: [good, bad]", "obs: 3"),
                 11, "choice obs must be a list of values or records, or a {min, max} range: '3'",
                 id='choice-not-a-list'),
    pytest.param(edit("obs: [good, bad]", "obs: [good, {name: bad}]"),
                 11, 'choice obs mixes records and plain values',
                 id='choice-records-and-values'),
    pytest.param(edit("obs: [good, bad]", "obs: [good, 1]"),
                 11, 'choice obs mixes values of different types',
                 id='choice-value-types'),
    pytest.param(BASE[:BASE.index("    do:\n")] + "    do: {set: {steps: 1}}\n" + BASE[BASE.index("terminal:"):],
                 12, 'do of action work must be a list of stages',
                 id='do-not-a-list'),
    pytest.param(edit("    when: decision == going\n", "    when: decision == going\n    unreachable_when: n == 3\n"),
                 10, 'action work has unreachable_when without because: an acknowledged vacuity says both when and why',
                 id='unreachable-without-because'),
    pytest.param(edit("    when: decision == going\n", "    when: decision == going\n    because: never\n"),
                 10, 'action work has because without unreachable_when: an acknowledged vacuity says both when and why',
                 id='because-without-unreachable'),
    pytest.param(edit("        rules:\n          - {name: finish, when: steps >= n, then: done}\n          - {name: again, then: going}\n", "        rules: []\n"),
                 15, 'rules must be a non-empty list',
                 id='rules-empty'),
    pytest.param(edit("values: [done]", "values: []"),
                 20, 'terminal values must be a non-empty list',
                 id='terminal-values-empty'),
    pytest.param(PROPS + "  p:\n    absence: steps == 2\n    scope: {during: steps == 1}\n",
                 24, "scope of p must be one of {before: R}, {after: Q}, {between: [Q, R]}, {after: Q, until: R}: 'during'",
                 id='pattern-scope'),
    pytest.param(PROPS + "  p:\n    expected: {measure: 3, at_most: 2}\n",
                 23, "measure must name a measure: '3'",
                 id='expected-measure-not-a-name'),
    pytest.param(PROPS + "  p:\n    always: steps >= 0\nexpect:\n  violated: []\n",
                 25, 'expect violated must be a non-empty list of properties',
                 id='expect-violated-empty'),
    pytest.param(edit("    steps:\n      - {action: work, choices: {obs: good}}\n", "    steps: 3\n", base=SCENARIO),
                 24, 'steps must be a list',
                 id='scenario-steps-not-a-list'),
    pytest.param(edit(*RECORDS).replace("{name: bad, ok: false}", "{ok: false}"),
                 11, "each record of choice obs needs a string 'name'",
                 id='record-without-name'),
    pytest.param(edit(*RECORDS).replace("{name: bad, ok: false}", "{name: good, ok: false}"),
                 11, "choice obs has two records named 'good' (first at line 11)",
                 id='two-records-one-name'),
    pytest.param(BASE + "measures:\n  transitions: {count: after.steps > 0}\n",
                 22, "'transitions' is always measured; pick another name",
                 id='measure-named-transitions'),
    pytest.param(BASE + "measures:\n  m: {description: nothing}\n",
                 22, 'measure m needs exactly one of: count, sum',
                 id='measure-without-kind'),
    pytest.param(edit("params: {n: 1}", "params: {n: 1, k: 2}", base=SCENARIO),
                 23, "not a declared param: 'k'",
                 id='scenario-unknown-param'),
    pytest.param(edit("  n: {min: 1, max: 3}\n", "  n: {min: 1, max: 3}\n  mode: [fast, 'so slow']\n"),
                 4, "a value of enum param mode must be a name (letters, digits, _), usable in expressions: 'so slow'",
                 id='enum-param-not-a-name'),
    pytest.param(edit("values: [going, done]", "values: [going, done, going]"),
                 6, 'values of decision list a value twice',
                 id='enum-values-twice'),
    pytest.param(edit(*RECORDS).replace("{name: bad, ok: false}", "{name: bad, ok: [1]}"),
                 11, "a record field must be an integer, true/false or a string: 'ok'",
                 id='record-field-a-list'),
    pytest.param(edit(*RECORDS).replace("{name: bad, ok: false}", "{name: bad, ok: 1}"),
                 11, 'field ok of choice obs is int here but bool in an earlier record',
                 id='record-field-types'),
    pytest.param(edit("values: [going, done]", "values: [going, done, n]"),
                 6, "enum value 'n' of decision has the same name as a param; rename one of them so unquoted names stay unambiguous",
                 id='enum-value-named-like-a-param'),
    pytest.param(edit("values: [going, done]", "values: [going, done, obs]"),
                 6, "enum value 'obs' of decision has the same name as a choice; rename one of them so unquoted names stay unambiguous",
                 id='enum-value-named-like-a-choice'),
    pytest.param(edit(STEPS, STEPS + "  n: {type: bool, init: true}\n"),
                 6, 'var n has the same name as a param',
                 id='var-named-like-a-param'),
    pytest.param(edit("      obs: [good, bad]\n", "      obs: [good, bad]\n      n: [1, 2]\n"),
                 12, 'choice n has the same name as a param',
                 id='choice-named-like-a-param'),
    pytest.param(edit("    params: {n: 1}\n", "", base=SCENARIO),
                 22, 'scenario s must set param n (it has several values)',
                 id='scenario-without-params'),
    pytest.param(edit("{action: work, choices: {obs: good}}", "{action: work}", base=SCENARIO),
                 25, 'action work needs a value for choice obs',
                 id='scenario-step-without-choice'),
]
)
def test_every_other_refusal_says_its_whole_message_at_its_line(check, text, line, message):
    """The loader's refusals no case above reaches (issue 18: a refusal whose message, subject
    or line nothing pins lets a mutant of it through), each the whole message at its line."""
    assert_rejected(check(text), line, message)
