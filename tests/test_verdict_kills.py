"""Single-line bugs on the verdict path that the rest of the suite let through (issue 18).

Each test here was written against a planted bug that survived: it fails with that line
mutated and passes on the real code (docs/explanation/mutation-testing.md lists the mutation each one kills).
Every verdict is checked on the three ways a spec can run: the scalar engine's generated
loop, its plain loop (the one for independence properties and bound code) and the vector
engine, down to the trace — a bug in one of them must not hide behind the others.
"""

from __future__ import annotations

import copy
import textwrap

import numpy as np
import pytest

from haltproof.explorer.options import Options
from haltproof.explorer.results import RunResult
from haltproof.explorer.check import check_machine, prepare
from haltproof.machine.compiled import Machine
from haltproof.machine.spec import parse_spec
from haltproof.machine.vectorize import vectorize
from haltproof.properties.kinds import Subject

pytestmark = pytest.mark.verdict

WAYS = ("generated", "plain", "vector")


def _machine(text: str) -> Machine:
    [m] = prepare(parse_spec(textwrap.dedent(text), "kills.yaml"), Options(model_only=True))
    return m


def _plain(m: Machine) -> Machine:
    """The same machine without its generated loop: the scalar engine's plain loop runs it."""
    out = copy.copy(m)
    out.sweep = None
    return out


def each_way(text: str, vector: bool = True, **options) -> dict[str, RunResult]:
    """The check of a one-instance spec on every engine and loop, keyed by WAYS; all of them
    must agree on the counts, coverage, bounds and every property's verdict and trace.
    vector=False: a spec the vector engine does not run (`//` that may divide by zero)."""
    m = _machine(text)
    runs = {"generated": check_machine(m, Options(engine="scalar", **options)),
            "plain": check_machine(_plain(m), Options(engine="scalar", **options))}
    if vector:
        runs["vector"] = check_machine(m, Options(engine="vector", **options))
    first = _summary(runs["generated"])
    for way, r in runs.items():
        assert _summary(r) == first, way
    return runs


def _summary(r: RunResult) -> dict:
    return {"result": r.result, "stats": {k: v for k, v in r.stats.items() if k != "seconds"},
            "coverage": r.coverage, "bounds": {k: (b["value"], b["message"]) for k, b in r.bounds.items()},
            "properties": [(p.name, p.status, p.message, p.trace and p.trace.to_json(),
                            p.other_trace and p.other_trace.to_json(), p.subject and p.subject.to_json())
                           for p in r.properties]}


def prop(r: RunResult, name: str):
    [p] = [p for p in r.properties if p.name == name]
    return p


def states(trace, var: str) -> list:
    return [s.state[var] for s in trace.steps]


# ---------------------------------------------------------------- array widths
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
    assert vectorize(_machine(NEGATIVE)).int_t is np.int64
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
    assert vectorize(_machine(NEGATIVE_DOMAIN)).int_t is np.int64
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
    assert vectorize(_machine(text)).int_t is np.int64
    for way, r in each_way(text).items():
        p = prop(r, "small")
        assert p.status == "violated" and [s.state for s in p.trace.steps][-1] == {"y": low + 1, "x": 3}, way


# ---------------------------------------------------------------- range choices
# machine/compiled.py `_choice_items`: a range choice is inclusive of its max; without it
# k = 2 is never tried, x never reaches 3, and `x != 3` is proved.

RANGE_CHOICE = """\
machine: ranged
vars: {x: {type: int, min: 0, max: 4, init: 0}}
actions:
  add:
    when: x < 2
    choose:
      k: {min: 1, max: 2}
    do: [{set: {x: x + k}}]
terminal: x >= 2
properties:
  never_three: {always: x != 3}
  two_in_one_step: {reachable: x == 2}
"""


def test_a_range_choice_takes_both_of_its_ends():
    for way, r in each_way(RANGE_CHOICE).items():
        bad = prop(r, "never_three")
        assert bad.status == "violated", way
        assert states(bad.trace, "x") == [0, 1, 3], way
        assert [s.choices for s in bad.trace.steps] == [{}, {"k": 1}, {"k": 2}], way
        witness = prop(r, "two_in_one_step").witness
        assert states(witness, "x") == [0, 2] and witness.steps[-1].choices == {"k": 2}, way
        assert r.stats["states"] == 4 and r.stats["transitions"] == 4, way   # 0 -> 1, 2; 1 -> 2, 3
        assert r.stats["terminal_states"] == 2, way                          # x = 2 and x = 3


# ---------------------------------------------------------------- independence
# explorer/engine.py and explorer/vengine.py: independence compares, per state up to the
# ignored vars, being terminal first. Here lab = q ends the run at x = 1, lab = p does not:
# the terminal check is the only place the two states differ (a terminal state has no
# guard or transition to compare).

TERMINAL_BY_LABEL = """\
machine: labelled
vars:
  x: {type: int, min: 0, max: 2, init: 0}
  lab: {type: enum, values: [p, q], init: {one_of: [p, q]}}
actions:
  go: {when: x < 2, do: [{set: {x: x + 1}}]}
terminal: x == 2 or (x == 1 and lab == q)
properties:
  ignores_lab: {independent_of: lab}
"""


def test_independence_sees_a_difference_in_being_terminal():
    for way, r in each_way(TERMINAL_BY_LABEL).items():
        p = prop(r, "ignores_lab")
        assert p.status == "violated", way
        assert p.message == "two states equal up to the ignored vars differ in being terminal", way
        assert p.subject == Subject("terminal"), way
        assert [s.state for s in p.trace.steps] == [{"x": 0, "lab": "p"}, {"x": 1, "lab": "p"}], way
        assert [s.state for s in p.other_trace.steps] == [{"x": 0, "lab": "q"}, {"x": 1, "lab": "q"}], way


def test_independence_holds_when_the_terminal_ignores_the_var():
    text = TERMINAL_BY_LABEL.replace("x == 2 or (x == 1 and lab == q)", "x == 2 or (x == 1 and lab == lab)")
    for way, r in each_way(text).items():
        assert prop(r, "ignores_lab").status == "holds" and r.result == "proved", way


# ---------------------------------------------------------------- before and after
# A step property sees the state before the transition as `before` and the one after as
# `after`. Every step below decreases n, so `after.n <= before.n` holds and
# `after.n >= before.n` does not: swapping the two states anywhere (the generated loop's
# inline check, the slow path that makes the finding, the vector engine's arrays) turns
# one verdict into the other. One property per run: the generated loop checks them all
# on the slow path as soon as one looks false, which would hide a swap in the others.

SHRINKING = """\
machine: shrinking
vars: {n: {type: int, min: 0, max: 3, init: 3}}
actions:
  shrink:
    when: n > 0
    choose:
      by: [1, 2]
    do: [{set: {n: "max(n - by, 0)"}}]
terminal: n == 0
properties:
  only: {step: "%s"}
"""


@pytest.mark.parametrize("step", ["after.n <= before.n", "before.n - after.n == by or after.n == 0",
                                  "after.n != 1 or before.n > 1"])
def test_a_step_property_that_holds_reads_before_and_after_the_right_way_round(step):
    for way, r in each_way(SHRINKING % step).items():
        assert prop(r, "only").status == "holds" and r.result == "proved", way


@pytest.mark.parametrize("step,path", [
    ("after.n >= before.n", [3, 2]),          # the first transition: 3 -by=1-> 2
    ("before.n == 3", [3, 2, 1]),             # the first step from n = 2
    ("after.n - before.n == by", [3, 2]),
])
def test_a_step_property_that_breaks_reads_before_and_after_the_right_way_round(step, path):
    for way, r in each_way(SHRINKING % step).items():
        p = prop(r, "only")
        assert p.status == "violated" and p.message == "false for this transition", way
        assert states(p.trace, "n") == path, way
        assert p.trace.steps[-1].choices == {"by": 1}, way


# ---------------------------------------------------------------- every property, every state
# explorer/engine.py `check_state` and `check_step` skip a property once it has failed (or
# failed to evaluate) and go on with the next: a `break` there would never check the
# properties after it again, and one that fails later would be proved.

LATER = """\
machine: later
vars: {x: {type: int, min: 0, max: 4, init: 0}}
actions:
  inc: {when: x < 4, do: [{set: {x: x + 1}}]}
terminal: x == 4
properties:
%s
"""


@pytest.mark.parametrize("first", ["early: {always: x < 1}", "early: {step: after.x != 1}",
                                   "early: {variant: x, bound: 1}",
                                   # raises exactly where `late` fails (a well_defined finding)
                                   "broken: {always: 1 // (x - 3) > -5}", "broken: {step: 1 // (after.x - 3) > -5}",
                                   "broken: {variant: x + 0 * (1 // (x - 3)), bound: 9}"])
@pytest.mark.parametrize("late,path", [("late: {always: x < 3}", [0, 1, 2, 3]),
                                       ("late: {step: after.x != 3}", [0, 1, 2, 3]),
                                       ("late: {variant: x, bound: 2}", [0, 1, 2, 3])])
def test_a_property_that_fails_first_does_not_stop_the_others(first, late, path):
    for way, r in each_way(LATER % ("  " + first + "\n  " + late), vector="//" not in first).items():
        p = prop(r, "late")
        assert p.status == "violated" and states(p.trace, "x") == path, way


# ---------------------------------------------------------------- where an expression fails
# The finding of an expression that raises carries its step: the trace ends with the
# transition that raised, or at the state whose check raised.

FAILING = """\
machine: failing
vars: {x: {type: int, min: 0, max: 3, init: 0}}
actions:
  inc: {when: x < 3, do: [{set: {x: "%s"}}]}
terminal: "%s"
properties:
  p: {step: "%s"}
"""


def test_a_step_property_that_raises_ends_its_trace_with_the_step():
    for way, r in each_way(FAILING % ("x + 1", "x == 3", "1 // (before.x - 1) > -5"), vector=False).items():
        wd = prop(r, "well_defined")
        assert wd.status == "violated", way
        assert wd.message == "property p (kills.yaml:7): integer division or modulo by zero", way
        assert wd.subject == Subject("property", "p"), way
        assert states(wd.trace, "x") == [0, 1, 2], way            # the step 1 -> 2 raised


def test_an_action_that_raises_is_shown_at_the_state_it_raised_in():
    for way, r in each_way(FAILING % ("x + 1 + 0 // (x - 1)", "x == 3", "True"), vector=False).items():
        wd = prop(r, "well_defined")
        assert wd.status == "violated", way
        assert wd.message == "action inc with no choices (kills.yaml:4): integer division or modulo by zero", way
        assert wd.subject == Subject("action", "inc", {}), way
        assert states(wd.trace, "x") == [0, 1], way
        assert wd.trace.steps[-1].action == "inc", way
        assert r.stats["states"] == 2 and r.stats["transitions"] == 1, way


def test_a_guard_that_raises_is_shown_at_the_state_it_raised_in():
    text = (FAILING % ("x + 1", "x == 3", "True")).replace("when: x < 3,", "when: x < 3 and 1 // (x - 1) >= -5,")
    for way, r in each_way(text, vector=False).items():
        wd = prop(r, "well_defined")
        assert wd.status == "violated", way
        assert wd.message == "guard of inc (kills.yaml:4): integer division or modulo by zero", way
        assert wd.subject == Subject("guard", "inc"), way
        assert states(wd.trace, "x") == [0, 1], way
        assert r.stats["states"] == 2 and r.stats["transitions"] == 1, way


def test_a_terminal_that_raises_leaves_the_state_unexpanded():
    for way, r in each_way(FAILING % ("x + 1", "x == 3 or 1 // (x - 1) == 7", "True"), vector=False).items():
        wd = prop(r, "well_defined")
        assert wd.status == "violated", way
        assert wd.message == "terminal (kills.yaml:5): integer division or modulo by zero", way
        assert wd.subject == Subject("terminal"), way
        assert states(wd.trace, "x") == [0, 1], way
        # whether a run may end at x = 1 is unknown: its successors would be invented
        assert r.stats["states"] == 2 and r.stats["transitions"] == 1, way


# ---------------------------------------------------------------- independence, messages

def test_independence_says_which_state_enables_the_action():
    text = TERMINAL_BY_LABEL.replace("x == 2 or (x == 1 and lab == q)", "x == 2").replace(
        "when: x < 2", "when: x < 2 and (x == 0 or lab == p)")
    for way, r in each_way(text).items():
        p = prop(r, "ignores_lab")
        assert p.message == ("two states equal up to the ignored vars: the action is enabled in one "
                             "and disabled in the other"), way
        assert [s.state for s in p.trace.steps][-1] == {"x": 1, "lab": "p"}, way
        assert [s.state for s in p.other_trace.steps][-1] == {"x": 1, "lab": "q"}, way


# ---------------------------------------------------------------- labelled terminals

def test_terminal_labels_are_counted_on_every_loop():
    text = """\
machine: ends
vars:
  x: {type: int, min: 0, max: 3, init: 0}
  status: {type: enum, values: [running, ok, failed], init: running}
actions:
  finish: {when: status == running, choose: {how: [ok, failed]}, do: [{set: {status: how, x: x + 1}}]}
terminal: {label: status, values: [ok, failed]}
properties:
  any: {independent_of: x}
"""
    for way, r in each_way(text).items():
        assert r.coverage["terminals"] == {"ok": 1, "failed": 1}, way


# ---------------------------------------------------------------- a timeout, and progress

BIG = """\
machine: big
vars: {x: {type: int, min: 0, max: 5000, init: 0}}
actions:
  inc: {when: x < 5000, do: [{set: {x: x + 1}}]}
terminal: x == 5000
properties:
  small: {always: x < 5000}
"""


def test_a_timeout_leaves_the_check_incomplete():
    m = _machine(BIG)
    for way, machine in (("generated", m), ("plain", _plain(m))):
        r = check_machine(machine, Options(engine="scalar", timeout=1e-9))
        assert (r.result, r.stopped_by) == ("incomplete", "timeout"), way
        assert prop(r, "small").status == "unknown", way


def test_progress_is_told_the_exploration_as_it_goes_and_at_its_end():
    m = _machine(BIG)
    for way, machine in (("generated", m), ("plain", _plain(m))):
        calls: list[tuple] = []
        r = check_machine(machine, Options(engine="scalar",
                                           progress=lambda spec, params, seen=calls: lambda *a: seen.append(a)))
        assert r.result == "violated", way
        # (states, transitions, depth, frontier): at states 0 and 4096, then the end
        assert [c[:4] for c in calls] == [(1, 0, 0, 1), (4097, 4096, 4096, 1), (5001, 5000, 5000, 0)], way


# ---------------------------------------------------------------- coverage and selection

def test_a_rule_name_two_actions_share_counts_both():
    text = """\
machine: shared
vars: {x: {type: int, min: 0, max: 3, init: 0}, d: {type: bool, init: false}}
actions:
  a: {when: x < 3, do: [{set: {x: x + 1}}, {decide: d, rules: [{name: go, then: true}]}]}
  b: {when: x < 3, do: [{set: {x: x + 1}}, {decide: d, rules: [{name: go, then: false}]}]}
terminal: x == 3
"""
    for way, r in each_way(text).items():
        assert r.coverage["rules"] == {"go": 10}, way        # 5 expanded states, 2 actions each


def test_only_the_selected_properties_are_evaluated():
    """`--property fine`: a property that raises but was not asked for is not evaluated,
    so it makes no well_defined finding."""
    text = LATER % "  broken: {always: 1 // (x - 3) > -5}\n  fine: {always: x < 9}"
    for way, r in each_way(text, vector=False, properties=["fine"]).items():
        assert r.result == "proved", way
        assert [(p.name, p.status) for p in r.properties] == [
            ("domains", "holds"), ("well_defined", "holds"), ("fine", "holds")], way


def test_a_disabled_action_or_a_value_outside_its_domain_skips_only_itself():
    """The plain loop goes on with the next action after a disabled one, and with the next
    choice after one that leaves the domain (0 -k=5-> 5 is outside 0..4, k = 1 is not)."""
    text = """\
machine: skips
vars: {x: {type: int, min: 0, max: 4, init: 0}}
actions:
  first: {when: x == 3, do: [{set: {x: 4}}]}
  then: {when: x < 3, choose: {k: [5, 1]}, do: [{set: {x: "min(x + k, 5) if x == 0 else x + 1"}}]}
terminal: x == 4
"""
    for way, r in each_way(text).items():
        assert prop(r, "domains").status == "violated", way
        assert r.stats["states"] == 5 and r.stats["transitions"] == 6, way    # both choices step 1 -> 2, 2 -> 3


def test_a_spec_without_a_terminal_predicate():
    text = """\
machine: endless
vars: {x: {type: int, min: 0, max: 3, init: 0}}
actions:
  inc: {when: x < 3, do: [{set: {x: x + 1}}]}
properties:
  small: {always: x < 9}
"""
    for way, r in each_way(text).items():
        assert r.result == "proved" and r.stats["states"] == 4 and r.stats["terminal_states"] == 0, way


def test_a_timeout_not_reached_changes_nothing():
    m = _machine(BIG)
    for way, machine in (("generated", m), ("plain", _plain(m))):
        r = check_machine(machine, Options(engine="scalar", timeout=3600.0))
        assert (r.result, r.stopped_by, r.stats["states"]) == ("violated", None, 5001), way


def test_a_variant_that_raises_ends_its_trace_with_the_step():
    text = FAILING.replace('p: {step: "%s"}', 'p: {variant: "x + 0 * (1 // (x - 2))", bound: 9}')
    for way, r in each_way(text % ("x + 1", "x == 3"), vector=False).items():
        wd = prop(r, "well_defined")
        assert wd.status == "violated", way
        assert wd.message == "property p (kills.yaml:7): integer division or modulo by zero", way
        assert wd.subject == Subject("property", "p"), way
        assert states(wd.trace, "x") == [0, 1, 2], way            # the step 1 -> 2 raised


# ---------------------------------------------------------------- the trace as reported
# properties/kinds.py: the JSON of a trace is the report schema (DESIGN.md), and a trace
# of zero transitions (a bad initial state) is still a trace.

def test_a_bad_initial_state_has_a_trace_of_zero_transitions_in_the_report_schema():
    text = LATER % "  never: {always: x > 0}"
    for way, r in each_way(text).items():
        p = prop(r, "never")
        assert p.status == "violated" and p.trace and len(p.trace) == 0, way
        assert p.trace.to_json({"K": 1}) == {
            "kind": "path", "loop_start": None, "params": {"K": 1},
            "steps": [{"state": {"x": 0}, "action": None, "choices": {}, "rule": None}]}, way
        assert "params" not in p.trace.to_json()
    step = prop(each_way(RANGE_CHOICE)["plain"], "never_three").trace.steps[-1]
    assert step.to_json() == {"state": {"x": 3}, "action": "add", "choices": {"k": 2}, "rule": None}
