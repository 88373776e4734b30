"""Mutants of explorer/engine.py that the rest of the verdict selection let through (issue 18):
which of two states an independence finding says enables the action. Each test was seen
failing with its mutation applied (docs/mutation.md). (The rule counts taken back after an
interruption: tests/test_engines.py::test_rule_counts_after_running_out_of_memory_count_the_edges_kept.)"""

from __future__ import annotations

import pytest

from test_verdict_kills import TERMINAL_BY_LABEL, each_way, prop

pytestmark = pytest.mark.verdict


def test_independence_says_the_first_state_met_disables_the_action():
    """The state met first (x=1, lab=p, the third state) has the guard false: the message names it
    disabled, whatever that state's number."""
    text = TERMINAL_BY_LABEL.replace("x == 2 or (x == 1 and lab == q)", "x == 2").replace(
        "when: x < 2", "when: x < 2 and (x == 0 or lab == q)")
    for way, r in each_way(text).items():
        p = prop(r, "ignores_lab")
        assert p.message == ("two states equal up to the ignored vars: the action is disabled in one "
                             "and enabled in the other"), way
        assert [s.state for s in p.trace.steps] == [{"x": 0, "lab": "p"}, {"x": 1, "lab": "p"}], way
        assert [s.state for s in p.other_trace.steps] == [{"x": 0, "lab": "q"}, {"x": 1, "lab": "q"}], way
