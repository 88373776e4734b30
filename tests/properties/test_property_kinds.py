"""Every property kind on small hand-made specs: one where it holds, one where it breaks.

Each violation is checked down to the trace: its kind, its length, the action, choices
and rule of its last step, and the states along the way, all worked out by hand from
the spec. Also: bounds making a check incomplete, `when:` on params, and the vacuity
warnings and coverage counts.
"""

from __future__ import annotations

import pytest

import textwrap

from haltproof.explorer.options import Options
from haltproof.explorer.results import RunResult
from haltproof.explorer.check import check_spec
from haltproof.machine.spec import parse_spec
from haltproof.properties.kinds import Subject

pytestmark = pytest.mark.verdict      # judges verdicts: in the per-mutant selection (docs/explanation/mutation-testing.md)


def runs(text: str, **options) -> list[RunResult]:
    spec = parse_spec(textwrap.dedent(text), "test_spec.yaml")
    return check_spec(spec, Options(**options))


def run(text: str, **options) -> RunResult:
    out = runs(text, **options)
    assert len(out) == 1
    return out[0]


def prop(r: RunResult, name: str):
    found = [p for p in r.properties if p.name == name]
    assert len(found) == 1, f"{name} not judged exactly once: {[p.name for p in r.properties]}"
    return found[0]


def column(trace, var: str) -> list:
    return [s.state[var] for s in trace.steps]


def actions(trace) -> list:
    return [s.action for s in trace.steps]


def assert_path(trace, length: int) -> None:
    assert trace is not None
    assert trace.kind == "path"
    assert trace.loop_start is None
    assert len(trace) == length
    assert len(trace.steps) == length + 1
    first = trace.steps[0]
    assert first.action is None and first.choices == {} and first.rule is None


COUNTER = """
machine: counter
vars:
  x: {type: int, min: 0, max: 5, init: 0}
actions:
  inc:
    when: x < 5
    do:
      - set: {x: x + 1}
terminal: x == 5
properties:
"""


# ---------------------------------------------------------------- invariant (always)

def test_invariant_holds_and_violated_with_shortest_trace():
    r = run(COUNTER + """
  in_range: {always: x <= 5}
  below3: {always: x < 3}
""")
    ok = prop(r, "in_range")
    assert ok.kind == "invariant" and ok.status == "holds" and ok.trace is None
    bad = prop(r, "below3")
    assert bad.kind == "invariant" and bad.status == "violated"
    assert_path(bad.trace, 3)
    assert column(bad.trace, "x") == [0, 1, 2, 3]
    assert actions(bad.trace) == [None, "inc", "inc", "inc"]
    last = bad.trace.steps[-1]
    assert (last.action, last.choices, last.rule) == ("inc", {}, None)
    assert r.result == "violated"
    assert prop(r, "domains").status == "holds"
    assert prop(r, "well_defined").status == "holds"


def test_invariant_violated_in_initial_state_has_empty_trace():
    r = run(COUNTER + """
  positive: {always: x > 0}
""")
    p = prop(r, "positive")
    assert p.status == "violated"
    assert_path(p.trace, 0)
    assert p.trace.steps[0].state == {"x": 0}


def test_invariant_trace_is_shortest_among_branches():
    # x = 3 is reachable in three steps by `inc` and in two by `jump, inc`.
    r = run("""
machine: branches
vars:
  x: {type: int, min: 0, max: 3, init: 0}
actions:
  inc:
    when: x < 3
    do:
      - set: {x: x + 1}
  jump:
    when: x == 0
    do:
      - set: {x: 2}
terminal: x == 3
properties:
  never3: {always: x != 3}
""")
    p = prop(r, "never3")
    assert p.status == "violated"
    assert_path(p.trace, 2)
    assert column(p.trace, "x") == [0, 2, 3]
    assert actions(p.trace) == [None, "jump", "inc"]


# ---------------------------------------------------------------- step invariant

STEPPER = """
machine: stepper
vars:
  n: {type: int, min: 0, max: 3, init: 0}
  mode: {type: enum, values: [idle, busy, done], init: idle}
actions:
  work:
    when: mode != done
    choose:
      amount: [1, 2]
    do:
      - set: {n: "min(n + amount, 3)"}
      - decide: mode
        rules:
          - {name: finish, when: n >= 3, then: done}
          - {name: keep, then: busy}
terminal: mode == done
properties:
"""
# Reachable: (0 idle) -1-> (1 busy) keep, -2-> (2 busy) keep; (1 busy) -1-> (2 busy) keep,
# -2-> (3 done) finish; (2 busy) -1-> (3 done) finish, -2-> (3 done) finish.


def test_step_invariant_holds():
    r = run(STEPPER + """
  grows: {step: after.n > before.n}
  finish_means_three: {step: "rule != finish or after.n == 3"}
""")
    for name in ("grows", "finish_means_three"):
        p = prop(r, name)
        assert p.kind == "step_invariant" and p.status == "holds" and p.trace is None
    assert r.result == "proved"


def test_step_invariant_violated_by_a_choice():
    r = run(STEPPER + """
  grows_by_one: {step: after.n == before.n + 1}
""")
    p = prop(r, "grows_by_one")
    assert p.status == "violated"
    assert_path(p.trace, 1)
    assert p.trace.steps[0].state == {"n": 0, "mode": "idle"}
    last = p.trace.steps[-1]
    assert last.state == {"n": 2, "mode": "busy"}
    assert (last.action, last.choices, last.rule) == ("work", {"amount": 2}, "keep")


def test_step_invariant_violated_by_a_rule():
    r = run(STEPPER + """
  finish_only_on_small_steps: {step: "rule != finish or amount == 1"}
""")
    p = prop(r, "finish_only_on_small_steps")
    assert p.status == "violated"
    assert_path(p.trace, 2)
    assert [s.state for s in p.trace.steps] == [
        {"n": 0, "mode": "idle"}, {"n": 1, "mode": "busy"}, {"n": 3, "mode": "done"}]
    assert [s.choices for s in p.trace.steps] == [{}, {"amount": 1}, {"amount": 2}]
    assert [s.rule for s in p.trace.steps] == [None, "keep", "finish"]
    assert actions(p.trace) == [None, "work", "work"]


# ---------------------------------------------------------------- reachable

def test_reachable_holds_with_shortest_witness_and_violated_without_trace():
    r = run(STEPPER + """
  done_reachable: {reachable: n == 3 and mode == done}
  start_reachable: {reachable: mode == idle}
  early_done: {reachable: mode == done and n < 3}
""")
    ok = prop(r, "done_reachable")
    assert ok.kind == "reachable" and ok.status == "holds"
    assert ok.witness is not None and len(ok.witness) == 2
    assert ok.witness.steps[-1].state == {"n": 3, "mode": "done"}
    assert ok.witness.steps[-1].rule == "finish"
    start = prop(r, "start_reachable")
    assert start.status == "holds" and len(start.witness) == 0
    bad = prop(r, "early_done")
    assert bad.status == "violated"
    assert bad.trace is None
    assert "unreachable" in bad.message
    assert r.result == "violated"


# ---------------------------------------------------------------- terminates

def test_terminates_holds():
    r = run(COUNTER + """
  ends: {terminates: true}
""")
    p = prop(r, "ends")
    assert p.kind == "terminates" and p.status == "holds" and p.trace is None
    assert r.result == "proved"


def test_terminates_deadlock_gives_path_to_shallowest_deadlock():
    # Deadlocks: x = 3 (after three incs) and x = 4 (after inc, hop). The shallowest is 4.
    r = run("""
machine: stuck
vars:
  x: {type: int, min: 0, max: 5, init: 0}
actions:
  inc:
    when: x < 3
    do:
      - set: {x: x + 1}
  hop:
    when: x == 1
    do:
      - set: {x: 4}
terminal: x == 5
properties:
  ends: {terminates: true}
""")
    p = prop(r, "ends")
    assert p.status == "violated"
    assert "deadlock" in p.message
    assert_path(p.trace, 2)
    assert column(p.trace, "x") == [0, 1, 4]
    last = p.trace.steps[-1]
    assert (last.action, last.choices, last.rule) == ("hop", {}, None)


def test_terminates_deadlock_single_chain():
    r = run("""
machine: stuck3
vars:
  x: {type: int, min: 0, max: 5, init: 0}
actions:
  inc:
    when: x < 3
    do:
      - set: {x: x + 1}
terminal: x == 5
properties:
  ends: {terminates: true}
""")
    p = prop(r, "ends")
    assert p.status == "violated"
    assert_path(p.trace, 3)
    assert column(p.trace, "x") == [0, 1, 2, 3]


LOOP = """
machine: loop
vars:
  x: {type: int, min: 0, max: 3, init: 0}
actions:
  up:
    when: x < 2
    do:
      - set: {x: x + 1}
  down:
    when: x == 2
    do:
      - set: {x: x - 1}
  finish:
    when: x == 2
    do:
      - set: {x: 3}
terminal: x == 3
properties:
"""


def test_terminates_cycle_gives_lasso():
    r = run(LOOP + """
  ends: {terminates: true}
""")
    p = prop(r, "ends")
    assert p.status == "violated"
    t = p.trace
    assert t.kind == "lasso"
    assert t.loop_start == 1
    assert column(t, "x") == [0, 1, 2, 1]
    assert actions(t) == [None, "up", "up", "down"]
    assert t.steps[-1].state == t.steps[t.loop_start].state
    assert len(t) == 3


def test_terminates_self_loop_at_initial_state():
    r = run("""
machine: selfloop
vars:
  x: {type: int, min: 0, max: 2, init: 0}
actions:
  stay:
    do:
      - set: {x: x}
  go:
    when: x == 0
    do:
      - set: {x: 2}
terminal: x == 2
properties:
  ends: {terminates: true}
  progress: {variant: x, bound: 2}
""")
    t = prop(r, "ends").trace
    assert prop(r, "ends").status == "violated"
    assert t.kind == "lasso" and t.loop_start == 0
    assert len(t) == 1
    assert t.steps[1].action == "stay"
    assert t.steps[-1].state == t.steps[0].state == {"x": 0}
    v = prop(r, "progress")
    assert v.status == "violated"
    assert_path(v.trace, 1)
    assert v.trace.steps[-1].action == "stay"


# ---------------------------------------------------------------- terminates within

BRANCHY = """
machine: branchy
vars:
  x: {type: int, min: 0, max: 4, init: 0}
actions:
  step:
    when: x < 4
    do:
      - set: {x: x + 1}
  jump:
    when: x == 0
    do:
      - set: {x: 4}
terminal: x == 4
properties:
"""


def test_terminates_within_all_transitions():
    r = run(BRANCHY + """
  within4: {terminates_within: 4}
  within3: {terminates_within: 3}
""")
    ok = prop(r, "within4")
    assert ok.kind == "terminates_within" and ok.status == "holds"
    bad = prop(r, "within3")
    assert bad.status == "violated"
    # the counterexample is the longest run, not the shortest (jump) one
    assert_path(bad.trace, 4)
    assert column(bad.trace, "x") == [0, 1, 2, 3, 4]
    assert actions(bad.trace) == [None, "step", "step", "step", "step"]
    assert "4" in bad.message


TOOLS = """
machine: tools
vars:
  calls: {type: int, min: 0, max: 2, init: 0}
  thoughts: {type: int, min: 0, max: 3, init: 0}
actions:
  think:
    when: calls == 0 and thoughts < 3
    do:
      - set: {thoughts: thoughts + 1}
  call:
    when: calls < 2
    do:
      - set: {calls: calls + 1}
terminal: calls == 2 or thoughts == 3
properties:
"""
# Longest run: think, think, call, call (4 transitions, 2 of them calls).


def test_terminates_within_counts_only_selected_transitions():
    r = run(TOOLS + """
  two_calls: {terminates_within: 2, count: action == call}
  one_call: {terminates_within: 1, count: action == call}
  four_steps: {terminates_within: 4}
  three_steps: {terminates_within: 3}
""")
    assert prop(r, "two_calls").status == "holds"
    assert prop(r, "four_steps").status == "holds"

    bad = prop(r, "one_call")
    assert bad.status == "violated"
    t = bad.trace
    assert t.kind == "path" and t.steps[0].state == {"calls": 0, "thoughts": 0}
    assert actions(t).count("call") == 2            # the most counted transitions a run can take
    assert t.steps[-1].state["calls"] == 2
    for prev, cur in zip(t.steps, t.steps[1:]):     # a real run: each step is one action
        delta = {k: cur.state[k] - prev.state[k] for k in cur.state}
        assert delta == ({"calls": 1, "thoughts": 0} if cur.action == "call"
                         else {"calls": 0, "thoughts": 1})
    assert "2" in bad.message

    longest = prop(r, "three_steps")
    assert longest.status == "violated"
    assert_path(longest.trace, 4)
    assert actions(longest.trace) == [None, "think", "think", "call", "call"]
    assert longest.trace.steps[-1].state == {"calls": 2, "thoughts": 2}


def test_terminates_within_cycle_is_a_lasso():
    r = run(LOOP + """
  within10: {terminates_within: 10}
""")
    p = prop(r, "within10")
    assert p.status == "violated"
    assert p.trace.kind == "lasso"
    assert p.trace.loop_start == 1
    assert p.trace.steps[-1].state == p.trace.steps[1].state


# ---------------------------------------------------------------- variant

def test_variant_holds():
    r = run(COUNTER + """
  progress: {variant: x, bound: 5}
""")
    p = prop(r, "progress")
    assert p.kind == "variant" and p.status == "holds"
    assert r.result == "proved"


def test_variant_violated_by_a_step_that_does_not_increase():
    r = run("""
machine: flipper
vars:
  x: {type: int, min: 0, max: 3, init: 0}
  e: {type: enum, values: [plain, flipped], init: plain}
actions:
  inc:
    when: x < 3
    do:
      - set: {x: x + 1}
  flip:
    when: e == plain and x == 1
    do:
      - set: {e: flipped}
terminal: x == 3
properties:
  progress: {variant: x, bound: 3}
""")
    p = prop(r, "progress")
    assert p.status == "violated"
    assert_path(p.trace, 2)
    assert [s.state for s in p.trace.steps] == [
        {"x": 0, "e": "plain"}, {"x": 1, "e": "plain"}, {"x": 1, "e": "flipped"}]
    last = p.trace.steps[-1]
    assert (last.action, last.choices, last.rule) == ("flip", {}, None)
    assert "1 to 1" in p.message


def test_variant_violated_by_exceeding_its_bound():
    r = run(COUNTER + """
  progress: {variant: x, bound: 3}
""")
    p = prop(r, "progress")
    assert p.status == "violated"
    assert_path(p.trace, 4)
    assert column(p.trace, "x") == [0, 1, 2, 3, 4]
    assert p.trace.steps[-1].action == "inc"
    assert "bound 3" in p.message


# ---------------------------------------------------------------- independent of

LABELLED = """
machine: labelled
vars:
  x: {{type: int, min: 0, max: 2, init: 0}}
  lab: {{type: enum, values: [p, q], init: {{one_of: [p, q]}}}}
actions:
  go:
    when: {guard}
    do:
      - set: {{x: "{update}"}}
terminal: x == 2
properties:
  ignores_lab: {{independent_of: lab}}
"""


def test_independent_of_holds():
    r = run(LABELLED.format(guard="x < 2", update="x + 1"))
    p = prop(r, "ignores_lab")
    assert p.kind == "independent" and p.status == "holds"
    assert r.result == "proved"


def test_independent_of_violated_by_the_outcome():
    r = run(LABELLED.format(guard="x < 2", update="min(x + (1 if lab == p else 2), 2)"))
    p = prop(r, "ignores_lab")
    assert p.status == "violated"
    assert_path(p.trace, 1)
    assert_path(p.other_trace, 1)
    assert [s.state for s in p.trace.steps] == [{"x": 0, "lab": "p"}, {"x": 1, "lab": "p"}]
    assert [s.state for s in p.other_trace.steps] == [{"x": 0, "lab": "q"}, {"x": 2, "lab": "q"}]
    assert p.trace.steps[-1].action == p.other_trace.steps[-1].action == "go"


def test_independent_of_violated_by_the_guard():
    r = run(LABELLED.format(guard="x < 2 and lab == p", update="x + 1"))
    p = prop(r, "ignores_lab")
    assert p.status == "violated"
    # the same state up to lab: go is enabled with lab = p and disabled with lab = q
    firsts = {p.trace.steps[-1].state["lab"], p.other_trace.steps[-1].state["lab"]}
    assert firsts == {"p", "q"}
    assert p.trace.steps[-1].state["x"] == p.other_trace.steps[-1].state["x"] == 0
    assert len(p.trace) == len(p.other_trace) == 0


# ---------------------------------------------------------------- built-in domains

OVERSHOOT = """
machine: overshoot
vars:
  x: {{type: int, min: 0, max: 3, init: 0}}
actions:
  add:
    when: x < 3
    choose:
      k: [1, 2]
    do:
      - set: {{x: "{update}"}}
terminal: x == 3
properties:
  in_range: {{always: x <= 3}}
"""


def test_domains_holds():
    r = run(OVERSHOOT.format(update="min(x + k, 3)"))
    assert prop(r, "domains").status == "holds"
    assert prop(r, "in_range").status == "holds"
    assert r.result == "proved"


def test_domains_violated_with_shortest_trace_to_the_bad_value():
    # 0 -k=2-> 2 -k=2-> 4: outside 0..3. Reached from the shallowest state that can overshoot.
    r = run(OVERSHOOT.format(update="x + k"))
    d = prop(r, "domains")
    assert d.kind == "builtin" and d.status == "violated"
    assert_path(d.trace, 2)
    assert column(d.trace, "x") == [0, 2, 4]
    assert [s.choices for s in d.trace.steps] == [{}, {"k": 2}, {"k": 2}]
    assert (d.trace.steps[-1].action, d.trace.steps[-1].rule) == ("add", None)
    assert "x = 4" in d.message and "0..3" in d.message
    # the out-of-domain value is never a state; what held elsewhere is not proved
    assert r.stats["states"] == 4
    assert prop(r, "in_range").status == "unknown"
    assert r.result == "violated"


def test_domains_violated_by_a_decide_rule_names_the_rule():
    r = run("""
machine: decide_out
vars:
  x: {type: int, min: 0, max: 3, init: 0}
  score: {type: int, min: 0, max: 2, init: 0}
actions:
  step:
    when: x < 3
    choose:
      bonus: [0, 1]
    do:
      - set: {x: x + 1}
      - decide: score
        rules:
          - {name: reward, when: bonus == 1, then: score + 1}
          - {name: same, then: score}
terminal: x == 3
""")
    d = prop(r, "domains")
    assert d.status == "violated"
    assert_path(d.trace, 3)
    assert [s.state for s in d.trace.steps] == [
        {"x": 0, "score": 0}, {"x": 1, "score": 1}, {"x": 2, "score": 2}, {"x": 3, "score": 3}]
    last = d.trace.steps[-1]
    assert (last.action, last.choices, last.rule) == ("step", {"bonus": 1}, "reward")
    assert r.stats["states"] == 9
    # every in-domain transition is counted; the one that overshoots is not
    assert r.coverage["rules"] == {"reward": 5, "same": 6}


# ---------------------------------------------------------------- built-in well_defined

GAPS = """
machine: gaps
vars:
  x: {{type: int, min: 0, max: 3, init: 0}}
  size: {{type: enum, values: [unset, small, big], init: unset}}
actions:
  inc:
    when: x < 3
    do:
      - set: {{x: x + 1}}
      - decide: size
        rules:
          - {{name: is_small, when: x < 2, then: small}}
          {middle}
          - {{name: is_big, when: x == 3, then: big}}
terminal: x == 3
properties:
  in_range: {{always: x <= 3}}
"""


def test_well_defined_holds_when_every_decision_has_a_rule():
    r = run(GAPS.format(middle="- {name: is_mid, when: x == 2, then: small}"))
    assert prop(r, "well_defined").status == "holds"
    assert r.result == "proved"
    assert r.coverage["rules"] == {"is_small": 1, "is_mid": 1, "is_big": 1}


def test_well_defined_violated_by_a_decide_table_without_matching_rule():
    r = run(GAPS.format(middle=""))
    w = prop(r, "well_defined")
    assert w.kind == "builtin" and w.status == "violated"
    assert "no rule" in w.message and "inc" in w.message
    # the trace ends in the state where the decision cannot be made
    assert_path(w.trace, 1)
    assert [s.state for s in w.trace.steps] == [{"x": 0, "size": "unset"}, {"x": 1, "size": "small"}]
    assert (w.trace.steps[-1].action, w.trace.steps[-1].rule) == ("inc", "is_small")
    assert prop(r, "in_range").status == "unknown"
    assert r.result == "violated"


DIVIDE = """
machine: divide
vars:
  x: {{type: int, min: 0, max: 3, init: 0}}
  y: {{type: int, min: 0, max: 6, init: 0}}
actions:
  inc:
    when: x < 3
    do:
      - set: {{x: x + 1, y: "6 // ({d} - x)"}}
terminal: x == 3
properties:
  in_range: {{always: y <= 6}}
  ends: {{terminates: true}}
"""


def test_well_defined_holds_without_division_by_zero():
    r = run(DIVIDE.format(d=4))
    assert prop(r, "well_defined").status == "holds"
    assert prop(r, "in_range").status == "holds"
    assert r.stats["states"] == 4


def test_well_defined_violated_by_division_by_zero():
    # (0,0) -> (1,3) -> (2,6) -> 6 // (2 - 2)
    r = run(DIVIDE.format(d=2))
    w = prop(r, "well_defined")
    assert w.status == "violated"
    assert "inc" in w.message
    assert_path(w.trace, 2)
    assert [s.state for s in w.trace.steps] == [{"x": 0, "y": 0}, {"x": 1, "y": 3}, {"x": 2, "y": 6}]
    assert w.trace.steps[-1].action == "inc"
    # the failing state is not a deadlock, and nothing else is claimed proved
    assert prop(r, "ends").status == "unknown"
    assert prop(r, "in_range").status == "unknown"


def test_well_defined_violated_in_a_property_expression():
    r = run(COUNTER + """
  odd: {always: 6 // (2 - x) >= -6}
""")
    w = prop(r, "well_defined")
    assert w.status == "violated"
    assert "odd" in w.message
    assert_path(w.trace, 2)
    assert column(w.trace, "x") == [0, 1, 2]


CHOSEN_DIVISOR = """
machine: divisor
vars:
  x: {type: int, min: 0, max: 5, init: 1}
actions:
  cut:
    when: x == 1
    choose: {d: [1, 0]}
    do: [{set: {x: 2 // d}}]
terminal: x != 1
"""


@pytest.mark.parametrize("text,subject", [
    (CHOSEN_DIVISOR, {"check": "action", "name": "cut", "choices": {"d": 0}}),
    (COUNTER + "  odd: {always: 6 // (2 - x) >= -6}\n", {"check": "property", "name": "odd"}),
    (COUNTER.replace("terminal: x == 5", "terminal: 6 // (2 - x) < 0") + "  small: {always: x <= 5}\n",
     {"check": "terminal"}),
])
def test_a_finding_names_what_failed_and_its_subject_round_trips_through_json(text, subject):
    """The subject is what `--emit-tests` records (explorer/regress.py re-judges exactly it): its
    JSON keeps the check, and the name and choices only when there are some; read back, it is
    the same subject."""
    w = prop(run(text, engine="scalar"), "well_defined")
    assert w.status == "violated"
    assert w.subject is not None and w.subject.to_json() == subject
    assert Subject.from_json(subject) == w.subject
    assert Subject.from_json(w.subject.to_json()).to_json() == subject


# ---------------------------------------------------------------- bounds: incomplete

ALL_KINDS = COUNTER + """
  in_range: {always: x <= 5}
  small_steps: {step: after.x == before.x + 1}
  ends: {terminates: true}
  within5: {terminates_within: 5}
  progress: {variant: x, bound: 5}
  five_reachable: {reachable: x == 5}
"""
HOLDING = ["in_range", "small_steps", "ends", "within5", "progress", "five_reachable",
           "domains", "well_defined"]


def test_everything_holds_when_exploration_is_complete():
    r = run(ALL_KINDS)
    assert r.result == "proved" and r.stopped_by is None
    for name in HOLDING:
        assert prop(r, name).status == "holds", name


def test_too_small_max_states_makes_holding_properties_unknown():
    r = run(ALL_KINDS, max_states=2)
    assert r.result == "incomplete"
    assert r.stopped_by == "max_states"
    for name in HOLDING:
        assert prop(r, name).status == "unknown", name
    assert r.warnings == []          # coverage of a partial exploration proves nothing


def test_violation_found_before_the_bound_stays_violated():
    r = run(ALL_KINDS + """
  zero: {always: x < 1}
""", max_states=2)
    z = prop(r, "zero")
    assert z.status == "violated"
    assert_path(z.trace, 1)
    assert column(z.trace, "x") == [0, 1]
    assert prop(r, "in_range").status == "unknown"
    assert r.result == "violated"
    assert r.stopped_by == "max_states"


def test_reachable_found_before_the_bound_holds():
    r = run(COUNTER + """
  one_reachable: {reachable: x == 1}
  five_reachable: {reachable: x == 5}
""", max_states=2)
    one = prop(r, "one_reachable")
    assert one.status == "holds" and len(one.witness) == 1
    assert prop(r, "five_reachable").status == "unknown"
    assert r.result == "incomplete"


def test_deadlock_found_before_the_bound_stays_violated():
    r = run("""
machine: early_deadlock
vars:
  x: {type: int, min: 0, max: 10, init: 0}
actions:
  to_dead:
    when: x == 0
    do:
      - set: {x: 1}
  start:
    when: x == 0
    do:
      - set: {x: 2}
  inc:
    when: x >= 2 and x < 10
    do:
      - set: {x: x + 1}
terminal: x == 10
properties:
  ends: {terminates: true}
  in_range: {always: x <= 10}
""", max_states=3)
    assert r.stopped_by == "max_states"
    p = prop(r, "ends")
    assert p.status == "violated"
    assert_path(p.trace, 1)
    assert column(p.trace, "x") == [0, 1]
    assert prop(r, "in_range").status == "unknown"
    assert r.result == "violated"


# ---------------------------------------------------------------- when: on params

def test_property_with_false_when_is_absent_from_that_run():
    out = runs("""
machine: sized
params:
  n: [1, 2]
vars:
  x: {type: int, min: 0, max: n, init: 0}
actions:
  inc:
    when: x < n
    do:
      - set: {x: x + 1}
terminal: x == n
properties:
  two_reachable: {when: n > 1, reachable: x == 2}
  in_range: {always: x <= n}
""")
    by_n = {r.params["n"]: r for r in out}
    assert set(by_n) == {1, 2}
    names1 = [p.name for p in by_n[1].properties]
    assert "two_reachable" not in names1
    assert "in_range" in names1
    assert by_n[1].result == "proved"          # it would be unreachable there, were it checked
    assert prop(by_n[2], "two_reachable").status == "holds"
    assert by_n[2].result == "proved"


def test_bound_of_inactive_property_is_not_evaluated():
    out = runs("""
machine: guarded_bound
params:
  n: [0, 2]
vars:
  x: {type: int, min: 0, max: 2, init: 0}
actions:
  inc:
    when: x < 2
    do:
      - set: {x: x + 1}
terminal: x == 2
properties:
  quick: {when: n > 0, terminates_within: 4 // n}
  progress: {when: n > 0, variant: x, bound: 4 // n}
""")
    by_n = {r.params["n"]: r for r in out}
    assert [p.name for p in by_n[0].properties] == ["domains", "well_defined"]
    assert by_n[0].result == "proved"
    assert prop(by_n[2], "quick").status == "holds"
    assert prop(by_n[2], "progress").status == "holds"


# ---------------------------------------------------------------- vacuity and coverage

VACUOUS = """
machine: vacuous
vars:
  x: {type: int, min: 0, max: 3, init: 0}
  out: {type: enum, values: [running, ok, failed, timeout], init: running}
actions:
  step:
    choose:
      k: [1, 2]
    do:
      - set: {x: x + k}
      - decide: out
        rules:
          - {name: good, when: x >= 2, then: ok}
          - {name: bad, when: x > 5, then: failed}
          - {name: go_on, then: running}
  unused:
    when: x > 5
    do:
      - set: {x: 0}
terminal: {label: out, values: [ok, failed, timeout]}
"""
# (0 running) -1-> (1 running) go_on, -2-> (2 ok) good; (1 running) -1-> (2 ok) good,
# -2-> (3 ok) good. Terminal states: (2 ok), (3 ok).


def test_vacuity_warnings_and_coverage_counts():
    r = run(VACUOUS)
    assert r.result == "proved"
    assert r.stats["states"] == 4
    assert r.stats["transitions"] == 4
    assert r.stats["terminal_states"] == 2
    assert r.coverage["rules"] == {"good": 3, "bad": 0, "go_on": 1}
    assert r.coverage["terminals"] == {"ok": 2, "failed": 0, "timeout": 0}
    text = "\n".join(r.warnings)
    rule_warnings = [w for w in r.warnings if "rule" in w]
    assert len(rule_warnings) == 1 and "'bad'" in rule_warnings[0]
    terminal_warnings = [w for w in r.warnings if "terminal" in w]
    assert len(terminal_warnings) == 2
    assert any("'failed'" in w for w in terminal_warnings)
    assert any("'timeout'" in w for w in terminal_warnings)
    assert "'ok'" not in text and "'good'" not in text and "'go_on'" not in text
    assert any("unused" in w for w in r.warnings)
    assert len(r.warnings) == 4


def test_no_vacuity_warnings_when_everything_is_covered():
    r = run(STEPPER + """
  grows: {step: after.n > before.n}
""")
    assert r.warnings == []
    assert r.coverage["rules"] == {"finish": 3, "keep": 3}
    assert r.coverage["terminals"] == {"terminal": 1}
