"""Mutants of machine/weights.py that the rest of the verdict selection let through (issue 18):
the exact text of a weight error — a whole-number sum, and the offending value a problem quotes.
Each test was seen failing with its mutation applied (docs/explanation/mutation-testing.md)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from haltproof.machine.spec import SpecError, parse_spec

pytestmark = pytest.mark.verdict

WEIGHED = """\
machine: w
vars:
  n: {type: int, min: 0, max: 2, init: 0}
sets:
  outcome: [ok, empty]
actions:
  step:
    when: n < 2
    choose: {obs: outcome}
    do:
      - set: {n: n + 1}
terminal: n == 2
"""


def _problems(extra: str) -> list[tuple[int | None, str, str | None]]:
    with pytest.raises(SpecError) as info:
        parse_spec(WEIGHED + extra, "w.yaml")
    return [(p.line, p.message, p.text) for p in info.value.problems]


def test_weights_summing_to_a_whole_number_name_it_as_one():
    """`fraction_text` of an integer is its numerator alone: `2`, not `None` or `2/1 (2)`."""
    assert _problems("probabilities:\n  step:\n    obs: {ok: 1, empty: 1}\n") == [
        (15, "the weights of choice obs of action step sum to 2, not 1", None)]


def test_a_non_mapping_where_weights_belong_is_quoted_as_written():
    """`_short` quotes a non-text value by its repr: `5` and `[1, 2]`, not `None` (nor a crash on len(5))."""
    assert _problems("probabilities:\n  step: 5\n") == [
        (14, "probabilities of action step must be a non-empty mapping", "5")]
    assert _problems("probabilities:\n  step: [1, 2]\n") == [
        (14, "probabilities of action step must be a non-empty mapping", "[1, 2]")]


CHOICES = """\
machine: w
params:
  k: {values: [%s]}
vars:
  n: {type: int, min: 0, max: 2, init: 0}
sets:
  outcome: [ok, empty]
actions:
  step:
    when: n < 2
    choose: {obs: outcome, flag: [true, false], r: {min: 0, max: 1}}
    do:
      - set: {n: n + 1}
terminal: n == 2
"""


def _choices(weights: str, k: str = "1"):
    return parse_spec(CHOICES % k + "probabilities:\n  step:\n    " + weights + "\n", "w.yaml")


def _refused(weights: str, k: str = "1") -> list[tuple[int | None, str, str | None]]:
    with pytest.raises(SpecError) as info:
        _choices(weights, k)
    return [(p.line, p.message, p.text) for p in info.value.problems]


def test_a_bool_choice_is_weighted_by_true_and_false_as_text():
    [w] = _choices("flag: {'true': 0.25, 'false': 0.75}").probabilities
    assert (w.action, w.choice, w.weights, w.line) == ("step", "flag", {True: Fraction(1, 4), False: Fraction(3, 4)}, 17)


def test_underscores_in_a_weight_are_digit_separators():
    [w] = _choices("obs: {ok: '1_0/2_0', empty: 0.5}").probabilities
    assert w.weights == {"ok": Fraction(1, 2), "empty": Fraction(1, 2)}


def test_weight_errors_name_the_value_at_its_line():
    assert _refused("r: {'0': 1, '1': 0}") == [
        (17, "weights on the range choice r are not supported yet: list its values instead", None)]
    assert _refused("obs: {ok: -0.5, empty: 1.5}") == [(17, "the weight of obs = ok is negative", "-0.5")]
    assert _refused("obs: {ok: true, empty: 1}") == [
        (17, "the weight of obs = ok must be a number, not true/false", "true")]      # as the spec spells it


def test_a_decimal_four_keys_deep_outside_weights_and_bounds_stays_refused():
    """`params: {k: {values: [0.5]}}` is four keys deep like a weight, but not under probabilities
    nor a probability bound: YAML's float is refused there as everywhere else."""
    with pytest.raises(SpecError) as info:
        _choices("obs: {ok: 0.5, empty: 0.5}", k="0.5")
    assert [(p.line, p.message, p.text) for p in info.value.problems] == [
        (3, "floating-point numbers are not allowed; domains are finite integers", "0.5")]


def test_text_where_weights_belong_is_quoted_as_written_without_repr_quotes():
    assert _problems("probabilities:\n  step: often\n") == [
        (14, "probabilities of action step must be a non-empty mapping", "often")]


TWO_ACTIONS = """\
machine: w
vars:
  n: {type: int, min: 0, max: 2, init: 0}
actions:
  step:
    when: n < 2
    choose: {obs: [ok, empty]}
    do:
      - set: {n: n + 1}
  idle:
    when: n == 5
terminal: n == 2
probabilities:
"""
NUMBER = "a decimal (0.25), an integer or a fraction ('1/3')"


@pytest.mark.parametrize("weights,problems", [
    ("  zzz:\n    obs: {ok: 1}", [(14, "probabilities name an action the spec does not have", "zzz")]),
    ("  x: 1\n  stepp:\n    obs: {ok: 1}", [
        (14, "probabilities name an action the spec does not have", "x"),
        (15, "probabilities name an action the spec does not have (did you mean 'step'?)", "stepp")]),
    ("  step:\n    obz: {ok: 1}", [(15, "action step has no choice named 'obz' (did you mean 'obs'?)", "obz")]),
    ("  step:\n    qqq: {ok: 1}", [(15, "action step has no choice named 'qqq'", "qqq")]),
    ("  idle:\n    obs: {ok: 1}", [(15, "action idle has no choice named 'obs' (it makes none)", "obs")]),
    ("  step:\n    obs:\n      ok: 1\n      bad: 0", [(17, "not a value of choice obs (ok, empty)", "bad")]),
    ("  step:\n    obs:\n      empty: 0\n      ok: [1]", [(17, f"the weight of obs = ok must be a number: {NUMBER}", "[1]")]),
    ("  step:\n    obs:\n      empty: 0\n      ok: '1/0'", [
        (17, f"the weight of obs = ok must be a finite number: {NUMBER}", "1/0")]),
    ("  step:\n    obs:\n      empty: 0\n      ok: 'x'", [
        (17, f"the weight of obs = ok must be a finite number: {NUMBER}", "x")]),
    ("  step:\n    obs:\n      empty: 0\n      ok: -1", [(17, "the weight of obs = ok is negative", "-1")]),
    ("  step:\n    obs:\n      ok: 1", [
        (15, "choice obs of action step has no weight for empty: give every value one (0 is allowed)", None)]),
    ("  step:\n    obs:\n      ok: 0.25\n      empty: 0.25", [
        (15, "the weights of choice obs of action step sum to 1/2 (0.5), not 1", None)]),
    ("  step:\n    obs: 5", [(15, "weights of choice obs of action step must be a non-empty mapping", "5")]),
    ("  step: " + "a" * 70, [(14, "probabilities of action step must be a non-empty mapping", "a" * 57 + "...")]),
    ("  step: " + "a" * 60, [(14, "probabilities of action step must be a non-empty mapping", "a" * 60)]),
    ("  step: " + "a" * 61, [(14, "probabilities of action step must be a non-empty mapping", "a" * 57 + "...")]),
])
def test_every_weight_error_is_named_whole_at_the_line_of_its_key(weights, problems):
    """Each message of the weights' checks in full, at the line of the action, the choice or the
    value it is about (one problem per action), a name with no close match given no hint at all,
    and a value longer than 60 characters cut to its first 57 and `...`."""
    with pytest.raises(SpecError) as info:
        parse_spec(TWO_ACTIONS + weights + "\n", "w.yaml")
    assert [(p.line, p.message, p.text) for p in info.value.problems] == problems
