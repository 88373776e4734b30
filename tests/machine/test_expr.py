"""The safe expression language (machine/expr.py): types, the whitelist, enum literals,
chained comparisons, `in`, min/max/abs, evaluation of the compiled code, and the lines
errors are reported at (through haltproof.machine.spec.parse_spec for YAML block scalars).
"""

from __future__ import annotations

import ast
import itertools

import pytest

from haltproof.machine import expr as E
from haltproof.machine.compiled import CompiledSpec
from haltproof.machine.errors import Located, SpecError
from haltproof.machine.spec import parse_spec

pytestmark = pytest.mark.verdict      # judges verdicts: in the per-mutant selection (docs/explanation/mutation-testing.md)

# ---------------------------------------------------------------- a scope to check against

COLOR = E.EnumT(frozenset({"red", "green"}), "color")
OBS = E.EnumT(frozenset({"hit", "miss"}), "choice obs")


def _name(n: str):
    return lambda: ast.Name(n, ast.Load())


def _item(n: str, i: int):
    return lambda: ast.Subscript(ast.Name(n, ast.Load()), ast.Constant(i), ast.Load())


SCOPE = E.Scope(
    {
        "x": E.Binding(E.INT, _name("x"), what="var x"),
        "y": E.Binding(E.INT, _name("y"), what="var y"),
        "flag": E.Binding(E.BOOL, _name("flag"), what="var flag"),
        "color": E.Binding(COLOR, _name("color"), what="var color"),
        "N": E.Binding(E.INT, _name("N"), what="param"),
        "obs": E.Binding(OBS, _item("obs", 0),
                         {"ok": (E.BOOL, _item("obs", 1)), "n": (E.INT, _item("obs", 2))},
                         what="choice obs"),
        "hidden": E.Binding(E.INT, None, refuse="write before.hidden or after.hidden"),
    },
    literals=frozenset({"red", "green", "blue", "hit", "miss"}),
)
FILE = "spec.yaml"
LINE = 10


def chk(text, *, line: int = LINE, block: bool = False) -> E.Expr:
    return E.check(text, SCOPE, Located(FILE, line), line_offset_block=block)


def fails(text, *, line: int = LINE, block: bool = False):
    """The single Problem raised for TEXT."""
    with pytest.raises(SpecError) as info:
        chk(text, line=line, block=block)
    problems = info.value.problems
    assert len(problems) == 1
    return problems[0]


def run(ex: E.Expr, **env):
    """Evaluate a checked expression's Python AST with no builtins but min/max/abs."""
    base = {"x": 0, "y": 0, "flag": False, "color": "red", "N": 3, "obs": ("hit", True, 1)}
    base.update(env)
    code = compile(ast.fix_missing_locations(ast.Expression(ex.py)), "<test>", "eval")
    return eval(code, {"__builtins__": {}, "min": min, "max": max, "abs": abs}, base)


# ---------------------------------------------------------------- types

@pytest.mark.parametrize("text, typ", [
    ("x", E.INT),
    ("x + 1", E.INT),
    ("x * y - N // 2 % 3", E.INT),
    ("-x", E.INT),
    ("min(x, y, 3)", E.INT),
    ("abs(x - y)", E.INT),
    ("obs.n", E.INT),
    ("x if flag else y", E.INT),
    ("flag", E.BOOL),
    ("x < y", E.BOOL),
    ("not flag", E.BOOL),
    ("flag and x == 1 or obs.ok", E.BOOL),
    ("True", E.BOOL),
    ("color == red", E.BOOL),
    ("color in (red, green)", E.BOOL),
], ids=lambda v: str(v) if isinstance(v, str) else None)
def test_inferred_type(text, typ):
    assert chk(text).type == typ


def test_enum_types():
    assert chk("color").type == COLOR
    assert chk("obs").type == OBS
    assert chk("red").type == E.EnumT(frozenset({"red"}), "'red'")
    assert chk("'red'").type.values == frozenset({"red"})
    # The branches of a conditional join into one enum.
    assert chk("red if flag else blue").type.values == frozenset({"red", "blue"})
    assert chk("color if flag else blue").type.values == frozenset({"red", "green", "blue"})


def test_yaml_scalars_are_literals():
    assert chk(7).type == E.INT and run(chk(7)) == 7
    assert chk(True).type == E.BOOL and run(chk(True)) is True
    assert chk(False).text == "false"


def test_choices_used_are_recorded():
    assert chk("obs.ok and flag").choices_used == frozenset({"obs"})
    assert chk("obs == hit").choices_used == frozenset({"obs"})
    assert chk("flag").choices_used == frozenset()


@pytest.mark.parametrize("text, fragment", [
    ("x == flag", "compares int with bool"),
    ("x == red", "compares int with"),
    ("color == blue", "can never be equal"),      # blue is a literal, but not a value of color
    ("color < green", "ordering comparison needs two ints"),
    ("flag < True", "ordering comparison needs two ints"),
    ("x + flag", "an arithmetic operand must be int, but this is bool"),
    ("x + red", "an arithmetic operand must be int"),
    ("not x", "the operand of 'not' must be bool, but this is int"),
    ("-color", "a signed value must be int"),
    ("x and flag", "an operand of 'and' must be bool"),
    ("flag or 1", "an operand of 'or' must be bool"),
    ("x if y else 1", "the condition of 'if' must be bool"),
    ("1 if flag else red", "the two branches have different types: int and"),
    ("min(x, color)", "an argument of min() must be int"),
    ("abs(flag)", "an argument of abs() must be int"),
], ids=lambda v: v if " " not in v or "(" in v or "==" in v else None)
def test_type_errors(text, fragment):
    p = fails(text)
    assert fragment in p.message
    assert p.file == FILE and p.line == LINE


# ---------------------------------------------------------------- the whitelist

@pytest.mark.parametrize("text, fragment, offending", [
    ("open('x')", "only min(), max() and abs() may be called", "open('x')"),
    ("__import__('os')", "only min(), max() and abs() may be called", "__import__('os')"),
    ("eval('1')", "only min(), max() and abs() may be called", "eval('1')"),
    ("(lambda: 1)()", "only min(), max() and abs() may be called", "(lambda: 1)()"),
    ("lambda: 1", "not allowed in a spec expression (lambda)", "lambda: 1"),
    ("x.__class__", "var x has no fields", "x.__class__"),
    ("obs.__class__", "choice obs has no field '__class__'", "obs.__class__"),
    ("obs.ok.real", "field access is only allowed on a choice", "obs.ok.real"),
    ("(1).real", "field access is only allowed on a choice", "(1).real"),
    ("x[0]", "not allowed in a spec expression (indexing)", "x[0]"),
    ("x ** 2", "operator not allowed", "x ** 2"),
    ("x / 2", "operator not allowed", "x / 2"),
    ("x << 1", "operator not allowed", "x << 1"),
    ("x | 1", "operator not allowed", "x | 1"),
    ("x @ y", "operator not allowed", "x @ y"),
    ("~x", "operator not allowed", "~x"),
    ("x is 1", "comparison not allowed", "x is 1"),
    ("x is not 1", "comparison not allowed", "x is not 1"),
    ("None", "only integers, true/false and strings", "None"),
    ("1.5", "only integers, true/false and strings", "1.5"),
    ("1j", "only integers, true/false and strings", "1j"),
    ("b'x'", "only integers, true/false and strings", "b'x'"),
    ("...", "only integers, true/false and strings", "..."),
    ("f'{x}'", "not allowed in a spec expression (f-string)", "f'{x}'"),
    ("[a for a in (1, 2)]", "not allowed in a spec expression (comprehension)", "[a for a in (1, 2)]"),
    ("{1: 2}", "not allowed in a spec expression (dict literal)", "{1: 2}"),
    ("{1, 2}", "not allowed in a spec expression (set literal)", "{1, 2}"),
    ("[1, 2]", "not allowed in a spec expression", "[1, 2]"),
    ("(x := 1)", "not allowed in a spec expression (assignment)", "x := 1"),
    ("(1, 2)", "tuples are only allowed after 'in'", "(1, 2)"),
    ("max(*(1, 2))", "plain positional arguments only", "max(*(1, 2))"),
    ("max(x, y, key=abs)", "plain positional arguments only", "max(x, y, key=abs)"),
    ("min(x)", "min() takes two or more arguments", "min(x)"),
    ("max()", "max() takes two or more arguments", "max()"),
    ("abs(x, y)", "abs() takes exactly one argument", "abs(x, y)"),
    ("hidden + 1", "write before.hidden or after.hidden", "hidden"),
    ("nope", "undefined name", "nope"),
])
def test_whitelist(text, fragment, offending):
    p = fails(text)
    assert fragment in p.message
    assert p.text == offending
    assert p.line == LINE
    assert "Traceback" not in str(p)


def test_syntax_error_names_file_line_and_text():
    p = fails("x == ")
    assert p.message == "expression is not valid syntax"
    assert (p.file, p.line, p.text) == (FILE, LINE, "x ==")
    assert str(p) == "spec.yaml:10: expression is not valid syntax: 'x =='"


@pytest.mark.parametrize("text", [
    "not " * 5_000 + "flag",             # CPython's parser: RecursionError
    "x" + " + 0" * 20_000,               # RecursionError, a left-leaning chain
    "-" * 100_000 + "1",                 # MemoryError
    "(" * 300 + "x" + ")" * 300,         # SyntaxError "too many nested parentheses"
    "-" * 2_000 + "1",                   # parses, but would overflow the checker and compile()
    "not " * 100 + "flag",               # 101 levels: the first depth refused
], ids=["not-5000", "plus-20000", "neg-100000", "parens-300", "neg-2000", "not-100"])
def test_nesting_deeper_than_the_limit(text):
    p = fails(text)
    assert str(p) == "spec.yaml:10: expression nests deeper than 100 levels"


def test_nesting_up_to_the_limit_is_fine():
    assert chk("not " * 99 + "flag").type == E.BOOL                 # 100 levels
    assert run(chk("x" + " + 1" * 99), x=0) == 99                    # 100 levels
    assert chk(" and ".join(["flag"] * 10_000)).type == E.BOOL      # wide, not deep: 2 levels


def test_nesting_error_in_a_literal_block_is_at_its_first_line():
    p = fails("not " * 200 + "flag\n", block=True)
    assert (p.line, p.message) == (LINE + 1, "expression nests deeper than 100 levels")


@pytest.mark.parametrize("text", ["", "   "])
def test_empty_expression(text):
    assert "is empty" in fails(text).message


@pytest.mark.parametrize("value", [None, 1.5, [1], {"a": 1}])
def test_non_text_expression(value):
    assert "must be a string, a number or true/false" in fails(value).message


# ---------------------------------------------------------------- names and enum literals

def test_enum_literal_resolves_unquoted():
    ex = chk("color == red")
    assert isinstance(ex.py.comparators[0], ast.Constant)
    assert ex.py.comparators[0].value == "red"
    assert run(ex, color="red") is True
    assert run(ex, color="green") is False


def test_quoted_and_unquoted_literal_compile_the_same():
    assert ast.dump(chk("color == red").py) == ast.dump(chk("color == 'red'").py)


def test_names_win_over_literals():
    scope = SCOPE.extended({"red": E.Binding(E.INT, _name("red"), what="var red")})
    ex = E.check("red + 1", scope, Located(FILE, 1))
    assert ex.type == E.INT
    assert isinstance(ex.py.left, ast.Name) and ex.py.left.id == "red"


def test_did_you_mean_names_and_literals():
    assert "did you mean 'color'?" in fails("colour == red").message
    assert "did you mean 'green'?" in fails("color == gren").message


def test_no_hint_without_a_close_name():
    p = fails("zzzzzz")
    assert p.message == "undefined name"


def test_choice_field_typo_hint():
    p = fails("obs.okk")
    assert "choice obs has no field 'okk' (did you mean 'ok'?)" in p.message
    assert "it has: n, ok" in p.message


def test_python_keyword_value_gets_the_quoting_hint():
    p = fails("color == continue")
    assert "not valid syntax" in p.message
    assert "'continue' is a Python keyword" in p.message and "quote it" in p.message


@pytest.mark.parametrize("text", ["x ==", "x if flag", "not"])
def test_expression_keywords_get_no_quoting_hint(text):
    assert "Python keyword" not in fails(text).message


def test_lowercase_true_in_an_expression():
    try:
        ex = chk("flag and true")
    except SpecError as exc:
        assert "True" in str(exc), str(exc)      # rejected: then say how to write it
    else:
        assert ex.type == E.BOOL and run(ex, flag=True) is True


# ---------------------------------------------------------------- comparisons and `in`

def test_chained_comparison_evaluates_like_python():
    ex = chk("0 <= x < N")
    assert ex.type == E.BOOL
    for x in range(-2, 6):
        assert run(ex, x=x, N=3) is (0 <= x < 3)


def test_chained_comparison_of_three_operands():
    ex = chk("x < y <= N")
    for x, y in itertools.product(range(-1, 5), repeat=2):
        assert run(ex, x=x, y=y, N=3) is (x < y <= 3)
    ex = chk("x == y == 2")
    assert run(ex, x=2, y=2) is True and run(ex, x=2, y=1) is False


def test_chained_comparison_checks_every_link():
    assert "can never be equal" in fails("0 < x == red").message
    assert "ordering comparison needs two ints" in fails("color == red < 3").message


def test_in_on_literal_tuple():
    ex = chk("color in (red,)")
    assert ex.type == E.BOOL
    assert run(ex, color="red") is True and run(ex, color="green") is False
    assert run(chk("color not in (red, 'green')"), color="green") is False
    ex = chk("x not in (1, N)")          # params may appear in the tuple
    assert run(ex, x=1) is False and run(ex, x=3, N=3) is False and run(ex, x=2) is True


@pytest.mark.parametrize("text, fragment", [
    ("x in x", "'in' needs a literal tuple on its right"),
    ("x in N", "'in' needs a literal tuple on its right"),
    ("x in (y, 1)", "the tuple after 'in' may hold only literals and params"),
    ("x in (1 + 1, 2)", "the tuple after 'in' may hold only literals and params"),
    ("x in (red, 1)", "can never equal the left side"),
    ("color in (1,)", "can never equal the left side"),
    ("color in (red, blue)", "can never equal the left side"),   # blue is no value of color
    ("'a' in 'abc'", "'in' needs a literal tuple on its right"),
])
def test_in_rejected_forms(text, fragment):
    assert fragment in fails(text).message


@pytest.mark.parametrize("text", ["color in (red, green) == red", "x in (0, 1) < 3"])
def test_comparison_chained_after_in_is_rejected(text):
    fails(text)


# ---------------------------------------------------------------- evaluation

def test_floor_division_and_modulo_follow_python():
    div, mod = chk("x // y"), chk("x % y")
    for x, y in itertools.product(range(-7, 8), [-3, -2, -1, 1, 2, 3]):
        assert run(div, x=x, y=y) == x // y
        assert run(mod, x=x, y=y) == x % y
    assert run(div, x=-7, y=2) == -4 and run(mod, x=-7, y=2) == 1


def test_min_max_abs_evaluate():
    assert run(chk("min(x, y, N)"), x=4, y=-2, N=3) == -2
    assert run(chk("max(x, y, N)"), x=4, y=-2, N=3) == 4
    assert run(chk("abs(x - y)"), x=1, y=5) == 4
    assert run(chk("-abs(x) + +y"), x=-3, y=2) == -1


def test_precedence_and_conditionals_evaluate():
    assert run(chk("1 + x * 2"), x=3) == 7
    assert run(chk("(1 + x) * 2"), x=3) == 8
    ex = chk("x if flag else y")
    assert run(ex, flag=True, x=1, y=2) == 1 and run(ex, flag=False, x=1, y=2) == 2
    ex = chk("not flag or x > 1 and y > 1")
    for f, x, y in itertools.product([False, True], [0, 2], [0, 2]):
        assert run(ex, flag=f, x=x, y=y) is ((not f) or (x > 1 and y > 1))


def test_choice_fields_read_the_record():
    ex = chk("obs.ok and obs.n == 1 and obs == hit")
    assert run(ex, obs=("hit", True, 1)) is True
    assert run(ex, obs=("hit", False, 1)) is False
    assert run(ex, obs=("miss", True, 1)) is False


def test_compiled_names_cannot_reach_builtins():
    # Only names of the scope are emitted; every other name was rejected above.
    ex = chk("min(x, abs(y)) == max(N, 1)")
    names = {n.id for n in ast.walk(ex.py) if isinstance(n, ast.Name)}
    assert names == {"x", "y", "N", "min", "max", "abs"}


# ---------------------------------------------------------------- through a whole spec

ARITH_SPEC = """\
machine: arith
params:
  d: [-3, -2, 2, 3]
vars:
  a: {type: int, min: -7, max: 7, init: {one_of: [-7, -6, -5, -1, 0, 1, 5, 6, 7]}}
  q: {type: int, min: -10, max: 10, init: 0}
  r: {type: int, min: -10, max: 10, init: 0}
  m: {type: int, min: -10, max: 10, init: 0}
  phase: {type: enum, values: [start, done], init: start}
actions:
  compute:
    when: phase == start
    do:
      - set:
          q: a // d
          r: a % d
          m: max(min(a, d), -abs(d))
          phase: done
terminal: phase == done
"""


def test_compiled_spec_floor_division_and_modulo():
    spec = parse_spec(ARITH_SPEC, "arith.yaml")
    compiled = CompiledSpec(spec)
    for d in (-3, -2, 2, 3):
        m = compiled.instantiate({"d": d})
        act = m.actions[0]
        assert len(m.inits) == 9
        for s in m.inits:
            assert act.guard(s) is True
            (new, rule), = [act.step(s, *combo) for combo in act.combos]
            a = s[0]
            assert new == (a, a // d, a % d, max(min(a, d), -abs(d)), "done"), (a, d)
            assert rule is None
            assert m.is_terminal(new) and not m.is_terminal(s)


SINGLE_SPEC = """\
machine: single
vars:
  steps: {type: int, min: 0, max: 3, init: 0}
actions:
  tick:
    when: steps < 3
    do:
      - set: {steps: steps + 1}
terminal: steps == 3
"""


def test_single_assignment_stage_keeps_an_int():
    m = CompiledSpec(parse_spec(SINGLE_SPEC, "single.yaml")).instantiate({})
    act = m.actions[0]
    (new, _), = [act.step(m.inits[0], *combo) for combo in act.combos]
    assert new == (1,)
    assert type(new[0]) is int
    assert m.domain_error(new) == -1


DECIDE_SPEC = """\
machine: dec
params:
  lim: [2]
vars:
  n: {type: int, min: 0, max: lim, init: 0}
  verdict: {type: enum, values: [open, win, lose, continue], init: open}
actions:
  play:
    when: verdict in (open, 'continue')
    choose:
      roll:
        - {name: six, value: 6, lucky: true}
        - {name: one, value: 1, lucky: false}
    do:
      - set: {n: n + 1, verdict: verdict}
      - decide: verdict
        rules:
          - {name: jackpot, when: roll.lucky and roll.value % 2 == 0, then: win}
          - {name: out, when: n >= lim, then: lose}
          - {name: again, then: continue}
terminal:
  label: verdict
  values: [win, lose]
"""


def test_decide_table_first_match_wins_and_keyword_value():
    spec = parse_spec(DECIDE_SPEC, "dec.yaml")
    m = CompiledSpec(spec).instantiate({"lim": 2})
    act = m.actions[0]
    results = {labels["roll"]: act.step(m.inits[0], *combo)
               for labels, combo in zip(act.labels, act.combos)}
    assert results["six"] == ((1, "win"), "jackpot")
    assert results["one"] == ((1, "continue"), "again")
    assert act.guard((1, "continue")) is True
    assert act.step((1, "continue"), *act.combos[act.labels.index({"roll": "one"})]) == ((2, "lose"), "out")


# ---------------------------------------------------------------- lines of expression errors

def test_line_of_error_in_a_plain_scalar():
    assert fails("x + nope", line=42).line == 42


def test_line_inside_a_block_text():
    # A block scalar starts on the line after its key; the error is on the 2nd line of the text.
    p = fails("(x +\n nope)", line=10, block=True)
    assert p.line == 12
    assert p.text == "nope"
    assert fails("(x +\n nope)", line=10, block=False).line == 11


def _spec_with_guard(guard_yaml: str) -> str:
    return f"""\
machine: m
vars:
  steps: {{type: int, min: 0, max: 3, init: 0}}
  decision: {{type: enum, values: [going, done], init: going}}
actions:
  work:
{guard_yaml}
    do:
      - set: {{steps: steps + 1, decision: going}}
terminal: decision == done
"""


def _line_of(spec_text: str) -> int:
    with pytest.raises(SpecError) as info:
        parse_spec(spec_text, "blk.yaml")
    (problem,) = info.value.problems
    assert problem.file == "blk.yaml"
    return problem.line


def test_spec_with_guard_helper_is_valid():
    parse_spec(_spec_with_guard("    when: decision == going"), "ok.yaml")


def test_literal_block_error_on_second_line():
    text = _spec_with_guard("    when: |\n"        # line 7
                            "      (decision == going\n"
                            "       and stepz < 3)")   # line 9
    assert _line_of(text) == 9


def test_literal_block_error_on_first_line():
    text = _spec_with_guard("    when: |\n"        # line 7
                            "      (decison == going\n"   # line 8
                            "       and steps < 3)")
    assert _line_of(text) == 8


def test_folded_block_error_on_first_line():
    text = _spec_with_guard("    when: >-\n"       # line 7
                            "      decison == going\n"    # line 8
                            "      and steps < 3")
    assert _line_of(text) == 8


def test_block_scalar_type_error_is_located_in_the_block():
    text = _spec_with_guard("    when: |\n"        # line 7
                            "      (steps\n"
                            "       + decision) > 0")    # line 9
    assert _line_of(text) == 9


def test_folded_block_error_on_second_line():
    text = _spec_with_guard("    when: >-\n"       # line 7
                            "      decision == going\n"   # line 8
                            "      and stepz < 3")        # line 9
    assert _line_of(text) == 9


def test_plain_multiline_scalar_error_on_second_line():
    text = _spec_with_guard("    when: decision == going\n"   # line 7
                            "      and stepz < 3")            # line 8
    assert _line_of(text) == 8
