"""The interval analysis that picks the vector engine's integer width (machine/ranges.py),
to the exact number: each spec below has its widest value decided by one construct,
worked out by hand. Too narrow a bound lets int32 wrap into a false verdict; a wrong
bound of any kind shows here as a different number (issue 18: most of this module's
planted bugs survived the end-to-end tests, which only see a width)."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from haltproof.explorer.options import Options
from haltproof.explorer.check import prepare
from haltproof.machine.ranges import widest_value
from haltproof.machine.spec import parse_spec
from haltproof.machine.vectorize import vectorize

from engine_ways import each_way, machine_of, prop, states

pytestmark = pytest.mark.verdict

NLITS = 5          # more than any int domain's high end below: an int read as an enum shows


def widest(text: str) -> int:
    spec = parse_spec(textwrap.dedent(text), "ranges.yaml")
    [m] = prepare(spec, Options(model_only=True))
    return widest_value(spec, m, NLITS)


COUNTER = """\
machine: counter
vars:
  x: {type: int, min: 0, max: 3, init: 0}
actions:
  inc: {when: x < 3, do: [{set: {x: "%s"}}]}
terminal: x == 3
"""

ONLY_BOOLS = """\
machine: bools
vars:
  b: {type: bool, init: false}
actions:
  flip: {when: not b, do: [{set: {b: "%s"}}]}
terminal: b
properties:
  tautology: {always: "%s"}
"""


@pytest.mark.parametrize("update,expect", [
    ("x + 1", 4),                          # (1, 4)
    ("x - 1 + 2", 4),                      # x - 1 is (-1, 2); + 2 is (1, 4)
    ("(x - 2) - (x - 1)", 4),              # (-2, 1) - (-1, 2) is (-4, 2)
    ("-x + 10", 10),                       # -x is (-3, 0), + 10 is (7, 10); a flipped sign gives 13
    ("x * -1000 + 5000", 5000),            # (-3000, 0), then (2000, 5000)
    ("(x - 7) * (x - 1)", 14),             # (-7, -4) * (-1, 2): products 7, -14, 4, -8
    ("(x + 1) * (x + 2)", 20),             # (1, 4) * (2, 5): the high ends' product
    ("+x + 10", 13),                       # a unary plus keeps (0, 3); only minus flips
    ("min(x, 1) * 1000", 1000),            # min of (0, 3) and (1, 1) is (0, 1)
    ("max(x, 2) * 100", 300),              # max of (0, 3) and (2, 2) is (2, 3)
    ("abs(x) * 100", 300),                 # (0, 3) stays
    ("abs(x - 2) * 100", 200),             # x - 2 is (-2, 1); abs is (0, 2)
    ("abs(x - 5) * 10", 50),               # x - 5 is (-5, -2); abs is (2, 5)
    ("x // 2 + 7", 10),                    # // never beyond an operand: (-3, 3), + 7 is (4, 10)
    ("x % 2 + 7", 10),                     # the same for %
    ("100 if x > 1 else -200", 200),       # the union of both branches: (-200, 100)
    ("100 if 1 < x else -200", 200),       # a var on the right of a comparison
    # each end of each operation where it decides the result, not an operand
    ("(x - 20) + (x - 20)", 40),           # the low ends added: (-40, -34)
    ("10 - x", 10),                        # (10 - 3, 10 - 0); a + for the low end gives 13
    ("x - 5", 5),                          # (0 - 5, 3 - 5); a + for the high end gives 8
    ("(x - 9) // 2 * 100", 900),           # |-9|, the left operand's low end
    ("(x + 5) // 2 * 100", 800),           # 8, the left operand's high end
    ("2 // (x - 9) * 100", 900),           # |-9|, the right operand's low end
    ("2 // (x + 9) * 100", 1200),          # 12, the right operand's high end
    ("x // 2 - 100", 103),                 # (-3, 3) - 100: -103
    ("min(x - 9, 0 - x) * 100", 900),      # min of (-9, -6) and (-3, 0) is (-9, -6)
    ("max(x - 9, 0 - x) * 100", 300),      # max of (-9, -6) and (-3, 0) is (-3, 0)
    ("(abs(x - 5) - 9) * 100", 700),       # abs of (-5, -2) is (2, 5): (2 - 9) * 100
    ("(abs(x - 2) - 9) * 100", 900),       # abs of (-2, 1) is (0, 2): (0 - 9) * 100
])
def test_the_exact_bound_of_a_set_stage(update, expect):
    assert widest(COUNTER % update) == expect


@pytest.mark.parametrize("value,update,expect", [
    ("b", "b", 1), ("not b", "not b", 1), ("b or not b", "b and True", 1), ("b == b", "b != False", 1),
])
def test_a_boolean_is_zero_or_one(value, update, expect):
    assert widest(ONLY_BOOLS % (update, value)) == expect


def test_an_int_domain_counts_with_its_own_ends():
    text = COUNTER.replace("min: 0, max: 3", "min: -2, max: 1").replace("x < 3", "x < 1").replace("x == 3", "x == 1")
    assert widest(text % "x + 1") == 2                  # the domain's -2 and x + 1 up to 2
    unread = COUNTER.replace("vars:\n", "vars:\n  far: {type: int, min: %s, max: %s, init: 0}\n")
    assert widest(unread % (-50, 70000, "x + 1")) == 70000     # a var no expression reads: its high end
    assert widest(unread % (-80000, 5, "x + 1")) == 80000      # and its low end


def test_the_terminal_the_guards_and_the_properties_are_bounded():
    assert widest(COUNTER.replace("terminal: x == 3", "terminal: x * 1000 == 3000") % "x + 1") == 3000
    assert widest(COUNTER.replace("when: x < 3", "when: x * 700 < 2100") % "x + 1") == 2100
    assert widest(COUNTER % "x + 1" + "properties:\n  small: {always: x * 900 < 5000}\n") == 5000
    assert widest(COUNTER % "x + 1" + "properties:\n  grows: {step: after.x * 600 > before.x * 500}\n") == 1800
    assert widest(COUNTER % "x + 1" + "properties:\n  was: {step: before.x * 800 >= 0}\n") == 2400
    assert widest(COUNTER % "x + 1" + "measures:\n  m: {sum: after.x * 400}\n") == 1200


def test_params_and_choices_are_bounded_by_their_values():
    text = "params: {K: 1000}\n" + COUNTER % "x + 1" + "properties:\n  small: {always: x * K < 99999}\n"
    assert widest(text) == 99999
    assert widest("params: {K: 1000}\n" + COUNTER % "x + 1" + "properties:\n  small: {always: x * K < 9}\n") == 3000
    chosen = COUNTER.replace("do:", "choose: {k: [2000, 1]}, do:") % "min(x + k, 3)"
    assert widest(chosen) == 2003                       # k is (1, 2000), not its last value; x + k is (1, 2003)
    ranged = COUNTER.replace("do:", "choose: {k: {min: -700, max: 1}}, do:") % "max(x + k, 0)"
    assert widest(ranged) == 700                        # x + k is (-700, 4)


# a decide stage: the var afterwards is the union of its domain and every rule's value
DECIDED = """\
machine: decided
vars:
  x: {type: int, min: 0, max: 3, init: 0}
  y: {type: int, min: 0, max: 10, init: 0}
actions:
  go:
    when: x < 3
    do:
      - decide: y
        rules:
          - {name: low, when: x > 1, then: "x * -100"}
          - {name: one, then: 1}
      - set: {x: "min(x + 1, 3)", y: "max(min(y * 2, 10), 0)"}
terminal: x == 3
"""


def test_a_decided_var_is_bounded_by_the_union_of_its_rules():
    # y after the decide: (0, 10) with (-300, 0) and (1, 1) is (-300, 10); y * 2 is (-600, 20)
    assert widest(DECIDED) == 600
    staged = DECIDED.replace('y: "max(min(y * 2, 10), 0)"', 'y: "max(min(y + 0, 10), 0)"')
    assert widest(staged) == 300                        # then x * -100 itself: (-300, 0)


def test_a_set_stage_sees_the_values_of_the_stage_before():
    text = """\
machine: staged
vars:
  x: {type: int, min: 0, max: 3, init: 0}
  t: {type: int, min: 0, max: 0, init: 0}
actions:
  go:
    when: x < 3
    do:
      - set: {t: "x * 50", x: x + 1}
      - set: {t: "t * 3"}
      - set: {t: 0}
terminal: x == 3
"""
    assert widest(textwrap.dedent(text)) == 450         # t is (0, 150) after the first stage


def test_enum_ids_count_up_to_the_number_of_literals():
    text = """\
machine: modes
vars:
  m: {type: enum, values: [a, b, c], init: a}
  n: {type: enum, values: [a, b, c], init: b}
actions:
  go: {when: m != n, do: [{set: {m: n}}]}
terminal: m == n
"""
    assert widest(text) == NLITS                        # no literal read: the domains alone
    assert widest(text.replace("when: m != n", "when: m != n and m != c")) == NLITS   # a literal: an id
    assert widest(text + "properties:\n  moved: {step: action == go}\n") == NLITS      # an action's id


# ---------------------------------------------------------------- array widths, each way (issue 18)
# Mutants that survived (formerly in test_verdict_kills); each test was seen failing with its
# mutation applied.
# machine/ranges.py `_Ranges.of`: the widest value is max(|low|, |high|) of every bound;
# with |low| dropped, x * -2^32 (bounds -3 * 2^32 .. 0) looks small, runs in int32,
# wraps to 0 and proves `> -5` while Python ints say -2^32.

NEGATIVE = """\
machine: negative
vars: {x: {type: int, min: 0, max: 3, init: 0}}
actions:
  inc: {when: x < 3, do: [{set: {x: x + 1}}]}
terminal: x == 3
properties:
  above: {always: x * -1073741824 * 4 > -5}
"""


def test_a_large_negative_intermediate_widens_the_arrays_to_64_bits():
    assert vectorize(machine_of(NEGATIVE)).int_t is np.int64
    for way, r in each_way(NEGATIVE).items():
        p = prop(r, "above")
        assert (r.engine, p.status) == ("vector" if way == "vector" else "scalar", "violated"), way
        assert states(p.trace, "x") == [0, 1], way


NEGATIVE_DOMAIN = """\
machine: negative_domain
vars: {x: {type: int, min: -3000000000, max: 0, init: 0}}
actions:
  dec: {when: x > -3, do: [{set: {x: x - 1}}]}
terminal: x == -3
properties:
  small: {always: x > -2}
"""


def test_a_domain_with_a_low_end_past_32_bits_runs_in_64_bits():
    """The decoding adds the low end of a domain: -3 * 10^9 does not fit int32."""
    assert vectorize(machine_of(NEGATIVE_DOMAIN)).int_t is np.int64
    for way, r in each_way(NEGATIVE_DOMAIN).items():
        p = prop(r, "small")
        assert p.status == "violated" and states(p.trace, "x") == [0, -1, -2], way


FAR_DOMAIN = """\
machine: far
vars:
  y: {type: int, min: %d, max: %d, init: %d}
  x: {type: int, min: 0, max: 3, init: 0}
actions:
  inc: {when: x < 3, do: [{set: {x: x + 1}}]}
terminal: x == 3
properties:
  small: {always: x < 3}
"""


@pytest.mark.parametrize("low,high", [(3000000000, 3000000003), (-2147483649, -2147483647),
                                      (2147483647, 2147483649)], ids=["far", "low-end", "high-end"])
def test_a_far_domain_of_a_var_no_expression_reads_widens_the_arrays(low, high):
    """y is never read, only decoded: its domain alone must make the arrays int64. Each
    of these has few values (the product of the domains stays small) and one end past
    32 bits; a widest value kept per var instead of over all of them, or a domain's
    widest value without its low or its high end, left it to int32."""
    text = FAR_DOMAIN % (low, high, low + 1)
    assert vectorize(machine_of(text)).int_t is np.int64
    for way, r in each_way(text).items():
        p = prop(r, "small")
        assert p.status == "violated" and [s.state for s in p.trace.steps][-1] == {"y": low + 1, "x": 3}, way
