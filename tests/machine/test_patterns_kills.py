"""Mutants of machine/patterns.py that the rest of the verdict selection let through (issue 18):
a `before R` scope closes for good at its first R. Each test was seen failing with its mutation
applied (docs/explanation/mutation-testing.md)."""

from __future__ import annotations

import pytest

from test_patterns import ABSENCE, ENGINES, PRECEDENCE, judge
from haltproof.machine.spec import parse_spec

pytestmark = pytest.mark.verdict


@pytest.mark.parametrize("engine", ENGINES)
def test_before_r_ends_at_the_first_r_and_a_later_r_reopens_nothing(engine: str):
    """P between a first and a second R is after the scope: with the scope not closed at the
    first R, P would leave the monitor pending and the second R would break it at state 3."""
    p = judge(["", "R", "P", "R"], ABSENCE["before"], engine)
    assert (p.status, p.trace) == ("holds", None), p.message


def test_a_bounded_existence_monitor_has_a_phase_a_count_and_a_prev_var():
    """The hidden vars of `bounded_existence` are named PROP:monitor, PROP:monitor:count, PROP:monitor:prev."""
    text = ("machine: b\nvars:\n  x: {type: int, min: 0, max: 2, init: 0}\nactions:\n"
            "  inc: {when: x < 2, do: [{set: {x: x + 1}}]}\nterminal: x == 2\nproperties:\n"
            "  few: {bounded_existence: {what: x == 1, at_most: 1}}\n")
    assert [v.name for v in parse_spec(text, "b.yaml").vars] == [
        "x", "few:monitor", "few:monitor:count", "few:monitor:prev"]


@pytest.mark.parametrize("engine", ENGINES)
def test_precedence_after_q_met_once_stays_met_at_a_later_q(engine: str):
    """`after: Q` opens once, at the first Q: a cause S met after it stays met when Q comes again,
    so a later effect P needs no new cause (only `between` and `after ... until` restart at each Q)."""
    p = judge(["", "Q", "S", "Q", "P"], PRECEDENCE["after"], engine)
    assert (p.status, p.trace) == ("holds", None), p.message
