"""Mutants of machine/fold.py (the per-action folding of `action == ...` in step expressions,
which the vector engine compiles each action's step properties from) that the rest of the
verdict selection let through (issue 18). Each test was seen failing with its mutation
applied (docs/explanation/mutation-testing.md)."""

from __future__ import annotations

import pytest

from haltproof.explorer import vengine
from engine_ways import each_way, prop

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


# The vector engine compiles a count, a measure or a step property once per action, with
# `action == ...` decided for it: `by` is made by inc alone and read only where `action == inc`
# holds, so stop's code reads no choice (unfolded, the vector engine refuses the spec).
FORWARD = """\
machine: m
vars:
  x: {type: int, min: 0, max: 3, init: 0}
  steps: {type: int, min: 0, max: 3, init: 0}
  done: {type: bool, init: false}
actions:
  inc:
    when: x < 2 and not done
    choose: {by: [1, 2]}
    do: [{set: {x: x + by, steps: steps + 1}}]
  stop: {when: x >= 2 and not done, do: [{set: {done: true, steps: steps + 1}}]}
terminal: done
properties:
  quick:
    terminates_within: 2
    count: action == inc and by == 1
measures:
  climbed: {sum: "by if action == inc else 0"}
"""


def test_a_choice_read_only_under_its_actions_name_is_read_by_that_action_alone(monkeypatch):
    monkeypatch.setattr(vengine, "KEEP_EDGES_BELOW", 0)       # the vector engine keeps no edge either
    for way, r in each_way(FORWARD).items():
        assert (r.result, r.stats["states"], r.stats["transitions"]) == ("proved", 8, 7), way
        assert prop(r, "quick").status == "holds", way
        assert {k: b["value"] for k, b in r.bounds.items()} == {"transitions": 3, "climbed": 3}, way


THREE = """\
machine: m
vars:
  x: {type: int, min: 0, max: 2, init: 0}
  done: {type: bool, init: false}
  last: {type: enum, values: [start, inc, skip, stop], init: start}
actions:
  inc: {when: x < 2, do: [{set: {x: x + 1, last: inc}}]}
  skip: {when: x == 1 and not done, do: [{set: {x: 2, last: skip}}]}
  stop: {when: x == 2 and not done, do: [{set: {done: true, last: stop}}]}
terminal: done
properties:
  others_end_at_2:
    step: (action != stop and action != skip) or after.x == 2
  others_count:
    step: action in (skip, stop) or after.x == before.x + 1
  others_move_x:
    step: action not in (inc, skip) or after.x != before.x
  remembered:
    step: action == after.last
"""


def test_and_of_tests_that_all_hold_and_in_of_a_tuple_fold_to_their_truth_and_a_var_is_left_alone():
    """For inc, `action != stop and action != skip` is true (every operand folded true), and
    `action in (skip, stop)` is false; for stop, `action not in (inc, skip)` is true; and
    `action == after.last` compares with a var: it is not folded at all."""
    for way, r in each_way(THREE).items():
        assert [(p.name, p.status) for p in r.properties if p.kind == "step_invariant"] == [
            ("others_end_at_2", "holds"), ("others_count", "holds"), ("others_move_x", "holds"),
            ("remembered", "holds")], way
        assert (r.result, r.stats["states"], r.stats["transitions"]) == ("proved", 5, 5), way


# fresh sample (seed 19): an `and` decided false for one action by a later operand keeps the
# operands before it (they may still fail) under the same `and`: stop's code for `big_stop`
# is `before.x > 5 and False`, still an `and`.
DECIDED_LATE = NOT_ACTION[:NOT_ACTION.index("properties:\n")] + """\
properties:
  big_stop:
    step: not (before.x > 5 and action == stop)
  small_inc:
    step: not (before.x < 2 and action == inc) or after.x == before.x + 1
"""


def test_an_and_decided_false_by_a_later_operand_keeps_the_earlier_ones_under_and():
    for way, r in each_way(DECIDED_LATE).items():
        assert [(p.name, p.status) for p in r.properties if p.kind == "step_invariant"] == [
            ("big_stop", "holds"), ("small_inc", "holds")], way
        assert (r.result, r.stats["states"], r.stats["transitions"]) == ("proved", 4, 3), way


# fresh sample (seed 21): an `if` whose test folding does not decide keeps all three parts,
# each folded: for inc, `x_grew` is `(after.x - before.x if before.x < 2 else 0) == 1`.
UNDECIDED_IF = NOT_ACTION[:NOT_ACTION.index("properties:\n")] + """\
properties:
  x_grew:
    step: not (action == inc) or (after.x - before.x if before.x < 2 else 0) == 1
  x_kept:
    step: action == inc or (after.x if before.x == 2 else (1 if action == stop else 0)) == 2
"""


def test_an_if_whose_test_is_undecided_folds_its_test_body_and_orelse():
    for way, r in each_way(UNDECIDED_IF).items():
        assert [(p.name, p.status) for p in r.properties if p.kind == "step_invariant"] == [
            ("x_grew", "holds"), ("x_kept", "holds")], way
        assert (r.result, r.stats["states"], r.stats["transitions"]) == ("proved", 4, 3), way
