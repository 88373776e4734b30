"""`probabilities:` and the bounds of probability properties: read exactly, every mistake an
exit-2 error at its file and line (machine/weights.py)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from haltproof.machine.errors import SpecError
from haltproof.machine.spec import parse_spec

from test_malformed_specs import BASE, assert_rejected, edit

pytestmark = pytest.mark.verdict      # judges verdicts: in the per-mutant selection (docs/explanation/mutation-testing.md)

#  21 probabilities:
#  22   work:
#  23     obs: {good: 0.9, bad: 0.1}
#  24 properties:
#  25   p: {probability: {reach: decision == done, at_least: 0.5}}
WEIGHTED = BASE + """\
probabilities:
  work:
    obs: {good: 0.9, bad: 0.1}
properties:
  p: {probability: {reach: decision == done, at_least: 0.5}}
  e: {expected: {measure: transitions, at_most: 3}}
"""
OBS = "    obs: {good: 0.9, bad: 0.1}\n"


def test_weights_and_bounds_are_read_exactly():
    spec = parse_spec(edit(OBS, "    obs: {good: 0.7, bad: '3/10'}\n", base=WEIGHTED), "w.yaml")
    (w,) = spec.probabilities
    assert (w.action, w.choice, w.line) == ("work", "obs", 23)
    assert w.weights == {"good": Fraction(7, 10), "bad": Fraction(3, 10)}    # 0.7 is 7/10, not a float
    p = spec.property("p")
    assert p is not None and p.chance is not None
    assert (p.kind, p.chance.sense, p.chance.bound) == ("probability", "at_least", Fraction(1, 2))


def test_weights_must_sum_to_one(check):
    r = check(edit(OBS, "    obs: {good: 0.8, bad: 0.1}\n", base=WEIGHTED))
    assert_rejected(r, 23, "the weights of choice obs of action work sum to 9/10 (0.9), not 1")


def test_one_third_three_times_is_exactly_one():
    text = edit("      obs: [good, bad]\n", "      obs: [good, bad, ugly]\n",
                OBS, "    obs: {good: '1/3', bad: '1/3', ugly: '1/3'}\n", base=WEIGHTED)
    (w,) = parse_spec(text, "w.yaml").probabilities
    assert sum(w.weights.values()) == 1


@pytest.mark.parametrize("line_text, line, message", [
    ("    obs: {good: 0.9, bda: 0.1}\n", 23, "not a value of choice obs (good, bad): 'bda'"),
    ("    obs: {good: 1}\n", 23, "choice obs of action work has no weight for bad: give every value one (0 is allowed)"),
    ("    obs: {good: 1.1, bad: -0.1}\n", 23, "the weight of obs = bad is negative: '-0.1'"),
    ("    obs: {good: .inf, bad: 0}\n", 23, "the weight of obs = good must be a finite number: a decimal (0.25), an "
                                          "integer or a fraction ('1/3'): '.inf'"),
    ("    obs: {good: x, bad: 0}\n", 23, "the weight of obs = good must be a finite number: a decimal (0.25), an "
                                       "integer or a fraction ('1/3'): 'x'"),
    ("    obs: {good: true, bad: 0}\n", 23, "the weight of obs = good must be a number, not true/false: 'true'"),
    ("    ob: {good: 1, bad: 0}\n", 23, "action work has no choice named 'ob' (did you mean 'obs'?): 'ob'"),
])
def test_bad_weights_are_rejected_at_their_line(check, line_text, line, message):
    assert_rejected(check(edit(OBS, line_text, base=WEIGHTED)), line, message)


LONG = "0." + "3" * 799 + "1"           # 800 digits after the point
TOO_LONG = "more than the 4,300 an exact number may have"


@pytest.mark.parametrize("line_text, message", [
    ("    obs: {good: '1e-100000000', bad: 1}\n",
     f"the weight of obs = good has 100,000,001 digits written out (its exponent included), {TOO_LONG}: "
     "'1e-100000000'"),
    (f"    obs: {{good: 0.{'3' * 5000}, bad: 0}}\n",
     f"the weight of obs = good has 5,001 digits written out (its exponent included), {TOO_LONG}: "
     f"'0.{'3' * 55}...'"),
    (f"    obs: {{good: '1/{'3' * 4301}', bad: 0}}\n",
     f"the weight of obs = good has 4,301 digits written out (its exponent included), {TOO_LONG}: "
     f"'1/{'3' * 55}...'"),
    (f"    obs: {{good: {LONG}, bad: {LONG}}}\n",
     "the weights of choice obs of action work sum to about 0.666667 (an exact fraction of 1,600 digits), not 1"),
    (f"    obs: {{good: {LONG}, bad: 0.{'6' * 799}8}}\n",
     "the weights of choice obs of action work sum to about 1 - 1e-800 (an exact fraction of 1,601 digits), not 1"),
])
def test_a_weight_of_many_digits_is_read_or_refused_with_its_size(check, line_text, message):
    """A weight is exact, so its digits are bounded (Python refuses to read more than 4,300, and
    `1e-100000000` would take minutes to build); a sum too long to print reads as its value
    (issue 26, finding 7)."""
    assert_rejected(check(edit(OBS, line_text, base=WEIGHTED)), 23, message)


def test_unknown_action_is_rejected(check):
    r = check(edit("  work:\n    obs", "  wrok:\n    obs", base=WEIGHTED))
    assert_rejected(r, 22, "probabilities name an action the spec does not have (did you mean 'work'?): 'wrok'")


@pytest.mark.parametrize("prop, line, message", [
    ("  p: {probability: {reach: decision == done, at_least: 1.5}}\n", 25,
     "the bound of p must be between 0 and 1: '1.5'"),
    ("  p: {probability: {reach: decision == done}}\n", 25,
     "probability of property p needs exactly one of: at_least, at_most"),
    ("  p: {probability: {reach: steps, at_most: 0.5}}\n", 25, "property p must be true/false, but this is int: 'steps'"),
    ("  p: {expected: {measure: tokens, at_most: 2.5}}\n", 25,
     "property p names a measure the spec does not declare (measures: transitions): 'tokens'"),
])
def test_bad_probability_properties_are_rejected(check, prop, line, message):
    text = edit("  p: {probability: {reach: decision == done, at_least: 0.5}}\n", prop, base=WEIGHTED)
    assert_rejected(check(text), line, message)


def test_decimals_stay_refused_elsewhere(check):
    """Only weights and probability bounds may be decimals: a float anywhere else is still refused."""
    r = check(edit("  e: {expected: {measure: transitions, at_most: 3}}\n",
                   "  e: {terminates_within: 2.5}\n", base=WEIGHTED))
    assert_rejected(r, 26, "floating-point numbers are not allowed; domains are finite integers: '2.5'")


def test_a_spec_without_weights_has_none():
    assert parse_spec(BASE, "b.yaml").probabilities == []
    with pytest.raises(SpecError):
        parse_spec(BASE + "probabilities: {}\n", "b.yaml")
