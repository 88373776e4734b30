"""Mutants of machine/astgen.py (the AST builders of every generated function and of the
scalar engine's generated loop) that the rest of the verdict selection let through (issue 18).
Each test was seen failing with its mutation applied (docs/explanation/mutation-testing.md)."""

from __future__ import annotations

import textwrap

import pytest

from haltproof.explorer import engine as E
from haltproof.explorer.options import Options
from haltproof.explorer.check import check_machine, check_spec
from haltproof.machine.spec import parse_spec
from haltproof.machine.usercode import OutOfTime
from engine_ways import machine_of

pytestmark = pytest.mark.verdict

COUNTER = """\
machine: counter
vars:
  x: {type: int, min: 0, max: 3, init: 0}
actions:
  inc: {when: x < 3, do: [{set: {x: x + 1}}]}
terminal: x == 3
properties:
  small: {always: x < 3}
"""


@pytest.mark.parametrize("stop, stopped_by, reason", [
    (MemoryError, "max_memory", "stopped at 4 states: out of memory (a bound, not a bug: try --max-memory, "
                                "more memory, or smaller params)"),
    (OutOfTime, "timeout", "stopped at 4 states: --timeout reached"),
])
def test_an_interruption_inside_an_actions_stages_stops_the_run(monkeypatch, stop, stopped_by, reason):
    """The generated loop catches only evaluation errors (`except _ERR`) around an action's
    stages; MemoryError or the deadline passing in what they call (here the slow path of the
    invariant, which fails on the new state x=3) stops the run, never a well_defined finding."""
    checked = E._Sweep.check_state

    def check_state(self: E._Sweep, j: int, t: tuple) -> None:
        if t == (3,):
            raise stop()
        checked(self, j, t)
    monkeypatch.setattr(E._Sweep, "check_state", check_state)
    r = check_machine(machine_of(COUNTER), Options(engine="scalar"))
    assert (r.result, r.stopped_by, r.stop_reason) == ("incomplete", stopped_by, reason)
    statuses = {p.name: p.status for p in r.properties}
    assert (statuses["well_defined"], statuses["small"]) == ("unknown", "unknown")


def test_an_error_in_the_second_value_of_a_set_names_that_value_s_line_not_the_set_s():
    """Fresh sample (seed 19): a marked expression gets a generated line of its own, so the
    division by zero in `y: 1 // x` is told at line 11, not at the `set:` of line 9."""
    text = textwrap.dedent("""\
        machine: m
        vars:
          x: {type: int, min: 0, max: 2, init: 0}
          y: {type: int, min: 0, max: 2, init: 0}
        actions:
          go:
            when: x < 1
            do:
              - set:
                  x: x + 1
                  y: 1 // x
        terminal: x == 1
        """)
    [r] = check_spec(parse_spec(text, "t.yaml"), Options(engine="scalar"))
    [p] = [p for p in r.properties if p.name == "well_defined"]
    assert (p.status, p.message) == (
        "violated", "action go with no choices (t.yaml:11): integer division or modulo by zero")
