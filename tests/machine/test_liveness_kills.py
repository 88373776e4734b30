"""Mutants of machine/liveness.py that the rest of the verdict selection let through (issue 18):
`existence` after Q owes P once, however many Qs follow. Each test was seen failing with its
mutation applied (docs/explanation/mutation-testing.md)."""

from __future__ import annotations

import pytest

from test_liveness import ENGINES, EXISTENCE, judge

pytestmark = pytest.mark.verdict


@pytest.mark.parametrize("engine", ENGINES)
def test_existence_after_q_is_met_for_good_by_one_p(engine: str):
    """A second Q after P starts no new obligation (it would in `between`/`after_until`, where
    each Q restarts one): the run ends with P owed only if `after` were read as those."""
    p = judge(["Q", "P", "Q", ""], EXISTENCE["after"], engine)
    assert (p.kind, p.status, p.trace) == ("existence", "holds", None), p.message
