"""Mutants of machine/fold.py (the per-action folding of `action == ...` in step expressions,
which the vector engine compiles each action's step properties from) that the rest of the
verdict selection let through (issue 18). Each test was seen failing with its mutation
applied (docs/mutation.md)."""

from __future__ import annotations

import pytest

from test_verdict_kills import each_way, prop

pytestmark = pytest.mark.verdict

NOT_ACTION = """\
machine: m
vars:
  x: {type: int, min: 0, max: 2, init: 0}
  done: {type: bool, init: false}
actions:
  inc: {when: x < 2, do: [{set: {x: x + 1}}]}
  stop: {when: x == 2 and not done, do: [{set: {done: true}}]}
terminal: done
properties:
  stop_ends:
    step: not (action == stop) or after.done
  inc_counts:
    step: not (action == inc) or after.x == before.x + 1
  inc_never_ends:
    step: not (action == inc) or after.done
"""


def test_not_of_a_decided_action_test_is_its_negation():
    """`not (action == stop)` folds to False for stop and True for every other action."""
    for way, r in each_way(NOT_ACTION).items():
        assert [(p.name, p.status) for p in r.properties if p.kind == "step_invariant"] == [
            ("stop_ends", "holds"), ("inc_counts", "holds"), ("inc_never_ends", "violated")], way
        broken = prop(r, "inc_never_ends")
        assert [(s.action, s.state) for s in broken.trace.steps] == [
            (None, {"x": 0, "done": False}), ("inc", {"x": 1, "done": False})], way
        assert r.result == "violated", way
