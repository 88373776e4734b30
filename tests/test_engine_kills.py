"""Mutants of explorer/engine.py that the rest of the verdict selection let through (issue 18):
which of two states an independence finding says enables the action; memory running out among
the initial states of the generated loop. Each test was seen
failing with its mutation applied (docs/explanation/mutation-testing.md). (The rule counts taken back after an
interruption: tests/test_engines.py::test_rule_counts_after_running_out_of_memory_count_the_edges_kept.)"""

from __future__ import annotations

import pytest

import haltproof.explorer.engine as E
from haltproof.explorer.options import Options
from haltproof.explorer.check import check_machine
from haltproof.machine.usercode import OutOfTime
from haltproof.properties.kinds import Subject
from test_verdict_kills import TERMINAL_BY_LABEL, _machine, _plain, each_way, prop

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
        assert p.subject == Subject("guard", "go"), way
        assert [s.state for s in p.trace.steps] == [{"x": 0, "lab": "p"}, {"x": 1, "lab": "p"}], way
        assert [s.state for s in p.other_trace.steps] == [{"x": 0, "lab": "q"}, {"x": 1, "lab": "q"}], way


INITS = """\
machine: inits
vars:
  x: {type: int, min: 0, max: 3, init: {one_of: [0, 1, 2]}}
actions:
  inc: {when: x < 3, do: [{set: {x: x + 1}}]}
terminal: x == 3
properties:
  low: {always: x < 3}
"""


def test_memory_running_out_among_the_initial_states_of_the_generated_loop(monkeypatch):
    """MemoryError while the third initial state is checked: nothing expanded, the three states
    found kept at depth 0, the run incomplete and saying why."""
    m = _machine(INITS)
    assert E._runs_generated(m)
    checked = E._Sweep.check_state

    def check_state(self, j, t):
        if j == 2:
            raise MemoryError
        return checked(self, j, t)
    monkeypatch.setattr(E._Sweep, "check_state", check_state)
    ex = E.explore(m)
    assert (ex.expanded, len(ex.states), list(ex.depth), ex.stopped_by) == (0, 3, [0, 0, 0], "max_memory")
    run = check_machine(m, Options(engine="scalar"))
    assert (run.result, run.stats["states"], run.stats["max_depth"]) == ("incomplete", 3, 0)
    assert run.stop_reason == ("stopped at 3 states: out of memory (a bound, not a bug: try --max-memory, "
                               "more memory, or smaller params)")
    assert prop(run, "low").message == "not decided: the exploration ran out of memory"


def test_a_run_stopped_by_max_states_says_so_not_that_memory_ran_out():
    """Nothing ran out of memory: the stop and every undecided property name --max-states."""
    for way, r in each_way(INITS, max_states=2).items():
        assert (r.result, r.stop_reason) == ("incomplete", "stopped at 3 states: --max-states 2 reached"), way
        assert [(p.name, p.status, p.message) for p in r.properties] == [
            (name, "unknown", "not decided: the exploration stopped at --max-states")
            for name in ("domains", "well_defined", "low")], way


def test_max_states_equal_to_the_states_there_are_explores_them_all():
    """--max-states 4 of 4 states: complete (the bound is passed only by a state more); 3: cut."""
    for way, r in each_way(INITS, max_states=4).items():
        assert (r.result, r.stop_reason, r.stats["states"]) == ("violated", None, 4), way
    for way, r in each_way(INITS, max_states=3).items():
        assert (r.result, r.stop_reason) == ("violated", "stopped at 4 states: --max-states 3 reached"), way


class FullAt(list):
    """A list whose append runs out of memory once it holds `limit` items."""

    def __init__(self, limit: int):
        super().__init__()
        self.limit = limit

    def append(self, item):
        if len(self) == self.limit:
            raise MemoryError
        super().append(item)


def test_memory_running_out_between_two_appends_of_the_plain_loop_cuts_every_list_to_what_is_whole(monkeypatch):
    """The third initial state is in the states, parents, actions and combos when appending its
    rule runs out of memory: every per-state list is cut back to the two whole states."""
    m = _plain(_machine(INITS))
    assert not E._runs_generated(m)
    init = E._Sweep.__init__

    def sweep_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.ex.via_rule = FullAt(2)
    monkeypatch.setattr(E._Sweep, "__init__", sweep_init)
    ex = E.explore(m)
    assert (ex.stopped_by, ex.expanded) == ("max_memory", 0)
    assert (list(ex.states), list(ex.parent), list(ex.depth)) == ([(0,), (1,)], [-1, -1], [0, 0])
    assert (list(ex.via_action), list(ex.via_combo), list(ex.via_rule)) == ([-1, -1], [-1, -1], [None, None])


def test_the_deadline_passing_among_the_initial_states_says_what_was_running(monkeypatch):
    """OutOfTime while the third initial state is checked: a timeout, with what was running."""
    checked = E._Sweep.check_state

    def check_state(self, j, t):
        if j == 2:
            raise OutOfTime("running low from state x=2")
        return checked(self, j, t)
    monkeypatch.setattr(E._Sweep, "check_state", check_state)
    for m in (_machine(INITS), _plain(_machine(INITS))):
        ex = E.explore(m)
        assert (ex.stopped_by, ex.stopped_in, ex.out_of_memory, ex.expanded) == (
            "timeout", "running low from state x=2", False, 0)


def test_a_label_value_never_reached_is_counted_zero_on_every_loop():
    """`failed` is a terminal value no state has: coverage lists it with 0 (the sweep seeds every
    value of the label before exploring), and the vacuity warning names it."""
    text = """\
machine: labelled_zero
vars:
  status: {type: enum, values: [running, done, failed], init: running}
actions:
  finish: {when: status == running, do: [{set: {status: done}}]}
terminal: {label: status, values: [done, failed]}
"""
    for way, r in each_way(text).items():
        assert r.coverage["terminals"] == {"done": 1, "failed": 0}, way


def test_an_error_a_worker_relayed_is_named_with_its_spec_line_when_it_has_one():
    """A worker's error comes back as a Relayed with the spec line it met there: the message names
    file:line as a local error would, and nothing for an error of the bound code (no spec line)."""
    from haltproof.machine.binding import Relayed
    m = _machine(TERMINAL_BY_LABEL)
    assert E.failure(m, "property p", Relayed("division by zero", 7, "well_defined")) == (
        "property p (kills.yaml:7): division by zero")
    assert E.failure(m, "action go with (no choices)", Relayed("the adapter broke", None, "bound_code")) == (
        "action go with (no choices): the adapter broke")
