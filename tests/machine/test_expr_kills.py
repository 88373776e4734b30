"""Mutants of machine/expr.py that the rest of the verdict selection let through (issue 18):
the expression checker's messages, pinned whole with the line and the text they point at.
Each test was seen failing with its mutation applied (docs/explanation/mutation-testing.md)."""

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


TYPED = """\
machine: e
params:
  K: {values: [1, 2]}
vars:
  x: {type: int, min: 0, max: 2, init: 0}
  d: {type: enum, values: [a, b], init: a}
actions:
  inc:
    when: x < 2
    choose: {c: [u, v]}
    do: [{set: {x: x + 1}}]
terminal: x == 2
properties:
"""


def _rejected(props: str) -> list[tuple[str, int | None, str, str | None]]:
    with pytest.raises(SpecError) as info:
        parse_spec(TYPED + props, "e.yaml")
    return [(p.file, p.line, p.message, p.text) for p in info.value.problems]


@pytest.mark.parametrize("prop,message,text", [
    ("'x >= (0'", "property p is not valid syntax", "x >= (0"),
    ("'x >= 0 and lambda'",
     "property p is not valid syntax ('lambda' is a Python keyword: to mean the value, quote it: 'lambda')",
     "x >= 0 and lambda"),
    ("\"x == 'a'\"", "compares int with 'a' {a}: they can never be equal", "x == 'a'"),
    ("\"('a' if x > 0 else 'a') == 1\"", "compares 'a' {a} with int: they can never be equal",
     "('a' if x > 0 else 'a') == 1"),
    ("\"('a' if x > 0 else 'b') == 1\"", "compares {a, b} with int: they can never be equal",
     "('a' if x > 0 else 'b') == 1"),
    ("\"(x if x > 0 else 'a') == 1\"", "the two branches have different types: int and 'a' {a}",
     "x if x > 0 else 'a'"),
    ("'x and true'", "an operand of 'and' must be bool, but this is int", "x"),
    ("'x or true'", "an operand of 'or' must be bool, but this is int", "x"),
    ("'x in (1, 2) == true'", "'in' cannot be chained with another comparison; join separate comparisons with 'and'",
     "x in (1, 2) == true"),
    ("'x in (1, x)'", "the tuple after 'in' may hold only literals and params", "x"),
    ("'c == u'", "choice c is made during its action, so it does not exist in a state: a guard is evaluated "
                 "before the choices are made (test the choice in the action's decide rules, or in a step "
                 "expression)", "c"),
    ("'x > 0 and [x] == 1'", "not allowed in a spec expression (List)", "[x]"),
    ("7", "property p must be true/false, but this is int", "7"),       # a YAML int: its text as written
])
def test_an_expression_error_is_named_whole_with_file_line_and_the_piece_it_is_about(prop, message, text):
    """Each message in full, with the sub-expression it points at (a literal's type named by its
    text: `'a' {a}`; two branches of one literal keep that name, of two they do not)."""
    assert _rejected(f"  p: {{always: {prop}}}\n") == [("e.yaml", 14, message, text)]


def test_a_state_before_a_dot_is_no_value_by_itself():
    assert _rejected("  p: {step: 'after.x > before'}\n") == [
        ("e.yaml", 14, "state before is not a value by itself; use one of its fields: d, x", "before")]


def test_a_literal_block_maps_lines_directly_and_may_continue_a_line():
    """In a `|` block the AST's line is the file's (the line after the key); a line break inside
    an expression is accepted by parsing it again in parentheses."""
    assert _rejected("  p:\n    always: |\n      x >= 0 and\n      len(x) > 0\n") == [("e.yaml", 17, CALLS, "len(x)")]
    spec = parse_spec(TYPED + "  p:\n    always: |\n      x >= 0 and\n        x < 5\n", "e.yaml")
    assert [(p.name, p.expr.text) for p in spec.properties if p.name == "p"] == [("p", "(x >= 0 and\n  x < 5)")]


def test_a_param_in_an_in_tuple_is_allowed():
    spec = parse_spec(TYPED + "  p: {always: 'x in (1, K)'}\n", "e.yaml")
    assert [p.name for p in spec.properties if p.name == "p"] == ["p"]


def test_a_field_of_a_var_is_quoted_as_the_field_access_alone():
    """`x.__class__ == 1`: the problem shows the attribute access, not the whole expression."""
    assert _problems("  p: {always: 'x == 0 or x.__class__ == 1'}\n") == [
        (8, "var x has no fields", "x.__class__")]


@pytest.mark.parametrize("text,named", [
    ("x[0]", "indexing"), ("lambda: 1", "lambda"), ("[a for a in (1, 2)]", "comprehension"),
    ("(a for a in (1, 2))", "comprehension"), ("{a: 1 for a in (1, 2)}", "comprehension"),
    ("{a for a in (1, 2)}", "comprehension"), ('f"{x}"', "f-string"), ("{1: 2}", "dict literal"),
    ("{1, 2}", "set literal"), ("await x", "await"), ("x := 1", "assignment"), ("yield x", "yield"),
    ("yield from x", "yield"),
])
def test_every_refused_construct_is_named_whole_in_its_message(text, named):
    """Each entry of `_describe`'s table: the construct's plain name, never the AST class."""
    assert _problems(f"  p: {{always: '({text})'}}\n") == [
        (8, f"not allowed in a spec expression ({named})", text)]


def test_a_starred_element_of_an_in_tuple_is_named_a_star_expression():
    assert _problems("  p: {always: 'x in (*x,)'}\n") == [
        (8, "not allowed in a spec expression (star-expression)", "*x")]


RECORDS = """\
machine: r
vars:
  x: {type: int, min: 0, max: 2, init: 0}
actions:
  inc:
    when: x < 2
    choose: {c: [{name: small, value: 1}, {name: big, value: 2}]}
    do: [{set: {x: '%s'}}]
terminal: x == 2
"""


FIELDS_ONLY = "field access is only allowed on a choice (or on before/after in a step expression)"


@pytest.mark.parametrize("expr,message,text", [
    ("c.value.real", FIELDS_ONLY, "c.value.real"),
    ("x + (1).real", FIELDS_ONLY, "(1).real"),
    ("x + c.valeu", "choice c has no field 'valeu' (did you mean 'value'?); it has: name, value", "c.valeu"),
    ("x + c.zzz", "choice c has no field 'zzz'; it has: name, value", "c.zzz"),
])
def test_a_field_access_error_is_named_whole_with_the_access_it_is_about(expr, message, text):
    with pytest.raises(SpecError) as info:
        parse_spec(RECORDS % expr, "r.yaml")
    assert [(p.file, p.line, p.message, p.text) for p in info.value.problems] == [("r.yaml", 8, message, text)]
