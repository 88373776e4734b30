"""Mutants of machine/weights.py that the rest of the verdict selection let through (issue 18):
the exact text of a weight error — a whole-number sum, and the offending value a problem quotes.
Each test was seen failing with its mutation applied (docs/mutation.md)."""

from __future__ import annotations

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
    """`_fraction_text` of an integer is its numerator alone: `2`, not `None` or `2/1 (2)`."""
    assert _problems("probabilities:\n  step:\n    obs: {ok: 1, empty: 1}\n") == [
        (15, "the weights of choice obs of action step sum to 2, not 1", None)]


def test_a_non_mapping_where_weights_belong_is_quoted_as_written():
    """`_short` quotes a non-text value by its repr: `5` and `[1, 2]`, not `None` (nor a crash on len(5))."""
    assert _problems("probabilities:\n  step: 5\n") == [
        (14, "probabilities of action step must be a non-empty mapping", "5")]
    assert _problems("probabilities:\n  step: [1, 2]\n") == [
        (14, "probabilities of action step must be a non-empty mapping", "[1, 2]")]
