"""The vacuity notices, exactly: every field of every notice (kind, name, message, line,
action, summary), on every way a spec runs (the scalar engine's generated and plain loops,
the vector engine, and the vector engine when it kept no edges and only its precomputed
facts are left). Issue 18: the mutation run of properties/vacuity.py showed that the
notices' texts and fields, and the vector engine's path to them, were not pinned by any
fast test. docs/explanation/mutation-testing.md lists the mutants of vacuity.py that no spec can tell apart.
"""

from __future__ import annotations

import inspect
import textwrap
from typing import Any

import pytest

from haltproof.api import check
from haltproof.explorer import vengine
from haltproof.explorer.options import Options
from haltproof.explorer.check import check_machine
from haltproof.machine.pymodel import Model, action

from engine_ways import each_way, machine_of
from vacuity_base import ChoiceBase

pytestmark = pytest.mark.verdict


def notices_each_way(text: str, monkeypatch: pytest.MonkeyPatch, vector: bool = True) -> list[dict[str, Any]]:
    """The notices of a one-instance spec, as JSON, after checking that every way gives the
    same: the two scalar loops, the vector engine, and the vector engine with its edges
    dropped (a graph whose every edge leads one level deeper keeps none past
    KEEP_EDGES_BELOW transitions; the notices must then come from what it precomputed)."""
    runs = each_way(text, vector=vector)
    if vector:
        monkeypatch.setattr(vengine, "KEEP_EDGES_BELOW", 0)
        runs["vector without edges"] = check_machine(machine_of(text), Options(engine="vector"))
    got = {way: [n.to_json() for n in r.notices] for way, r in runs.items()}
    first = got["generated"]
    for way, js in got.items():
        assert js == first, way
    return first


def rule(name: str, action: str, line: int, why: str) -> dict[str, Any]:
    where = f"decide rule {name!r} of action {action} (line {line})"
    return {"kind": "rule", "name": name, "message": f"vacuous: {where} {why}", "line": line,
            "action": action, "summary": f"vacuous: {where} never fires"}


def choice(name: str, action: str, line: int, values: str) -> dict[str, Any]:
    return {"kind": "choice", "name": name, "line": line, "action": action, "summary": "",
            "message": f"vacuous: choice {name} of action {action} (line {line}): the values {values} "
                       "always lead to the same step; they never make a difference"}


# An action never taken comes first, so the notices of the actions after it must still be
# made; `shadow` holds only where `zero` or `one` fires first (both are named, sorted);
# `dead` is never true; the terminal value `stuck` is reached only through `shadow`.
RULES = """\
machine: rules
vars:
  n: {type: int, min: 0, max: 3, init: 0}
  status: {type: enum, values: [running, done, failed, stuck], init: running}
actions:
  never:
    when: n > 3
    do: [{set: {n: 0}}]
  work:
    when: status == running
    choose: {c: [0, 1, 2]}
    do:
      - set: {n: 'min(n + 1, 3)'}
      - decide: status
        rules:
          - {name: zero, when: c == 0 and n == 3, then: done}
          - {name: one, when: c == 1 and n == 3, then: failed}
          - {name: shadow, when: c <= 1 and n == 3, then: stuck}
          - {name: dead, when: n > 3, then: stuck}
          - {name: again, when: n < 3, then: running}
          - {name: end, then: done}
terminal:
  label: status
  values: [done, failed, stuck]
"""


def test_every_kind_of_dead_part_is_reported_with_its_fields(monkeypatch):
    assert notices_each_way(RULES, monkeypatch) == [
        {"kind": "action", "name": "never", "message": "vacuous: action never (line 6) is never taken",
         "line": 6, "action": "never", "summary": ""},
        rule("shadow", "work", 18, "never fires: it is shadowed, whenever its condition holds an "
                                   "earlier rule (one, zero) fires first"),
        rule("dead", "work", 19, "never fires: its condition is never true in any reachable step"),
        {"kind": "terminal", "name": "stuck", "message": "vacuous: terminal 'stuck' is never reached",
         "line": 22, "action": None, "summary": ""},
    ]


def test_an_unlabelled_terminal_never_reached_is_reported(monkeypatch):
    spec = """\
    machine: endless
    vars: {n: {type: int, min: 0, max: 2, init: 0}}
    actions:
      up: {when: n < 2, do: [{set: {n: n + 1}}]}
    terminal: n > 2
    properties:
      small: {always: n <= 2}
    """
    assert notices_each_way(textwrap.dedent(spec), monkeypatch) == [
        {"kind": "terminal", "name": "terminal", "message": "vacuous: terminal 'terminal' is never reached",
         "line": 5, "action": None, "summary": ""}]


# `two`: a single choice of exactly two values, neither making a difference. `pair`: two
# choices whose four combinations all lead to the same step: not a single choice, no notice.
# `three`: of three values, two make no difference (the third does).
CHOICES = """\
machine: same
vars:
  n: {type: int, min: 0, max: 3, init: 0}
  m: {type: int, min: 0, max: 2, init: 0}
actions:
  two:
    when: n == 0
    choose: {how: [slow, fast]}
    do: [{set: {n: 1}}]
  pair:
    when: n == 1
    choose: {x: [a, b], y: [c, d]}
    do: [{set: {n: 2}}]
  three:
    when: n == 2
    choose:
      k: [1, 2, 3]
    do: [{set: {n: 3, m: 'min(k, 2)'}}]
terminal: n == 3
"""


def test_choice_values_that_never_matter_are_reported_with_their_fields(monkeypatch):
    assert notices_each_way(CHOICES, monkeypatch) == [
        choice("how", "two", 8, "slow, fast"),
        choice("k", "three", 17, "2, 3"),
    ]


# The conditions of every rule are evaluated for each transition to tell "never true" from
# "shadowed"; `10 // c` raises for c = 0 (where `first` fires, so the step itself is fine).
# That transition is skipped, not the ones after it: for c = 1 `shadow` holds under `first`.
# (The vector engine refuses a `//` that may divide by zero: the scalar loops only.)
RAISING_CONDITION = """\
machine: div
vars:
  status: {type: enum, values: [running, done], init: running}
actions:
  go:
    when: status == running
    choose: {c: [0, 1]}
    do:
      - decide: status
        rules:
          - {name: first, when: c <= 1, then: done}
          - {name: shadow, when: 10 // c > 5, then: done}
terminal: status == done
"""


def test_a_rule_condition_that_raises_skips_only_its_own_transition(monkeypatch):
    assert notices_each_way(RAISING_CONDITION, monkeypatch, vector=False) == [
        rule("shadow", "go", 12, "never fires: it is shadowed, whenever its condition holds an "
                                 "earlier rule (first) fires first"),
        choice("c", "go", 7, "0, 1"),
    ]


class Reporting(Model):
    """A Python model's action names the rule it took; it has no conditions to tell why a
    rule never fires, so the notice says only that it never does."""

    def domains(self, p):
        return {"s": ["run", "done"]}

    def init(self, p):
        return [{"s": "run"}]

    def terminal(self, s, p):
        return s["s"] == "done"

    @action(when=lambda s, p: s["s"] == "run", outcome=["ok", "fine"], rules=["finished", "never"])
    def go(self, s, p, outcome):
        return {"s": "done"}, "finished"


def test_a_python_model_rule_that_never_fires_is_reported_without_why():
    line = inspect.getsourcelines(Reporting.go)[1]
    (run,) = check(Reporting).runs
    assert [n.to_json() for n in run.notices] == [
        rule("never", "go", line, "never fires"),
        choice("outcome", "go", line, "ok, fine"),
    ]


# In the initial state `quit`'s transition comes before `go`'s: the conditions of `go`'s
# rules are read on `go`'s own transitions, whatever other actions' come first.
ORDER = """\
machine: order
vars:
  status: {type: enum, values: [running, done], init: running}
actions:
  quit: {when: status == running, do: [{set: {status: done}}]}
  go:
    when: status == running
    do:
      - decide: status
        rules:
          - {name: first, when: status == running, then: done}
          - {name: shadow, when: status == running, then: done}
terminal: status == done
"""


def test_the_rules_of_an_action_are_judged_on_its_transitions_after_another_actions(monkeypatch):
    assert notices_each_way(ORDER, monkeypatch) == [
        rule("shadow", "go", 12, "never fires: it is shadowed, whenever its condition holds an "
                                 "earlier rule (first) fires first")]


class FromChoiceBase(ChoiceBase):
    """Everything it has is declared in tests/vacuity_base.py."""


def test_notices_about_inherited_declarations_name_the_base_module():
    base = inspect.getsourcefile(ChoiceBase)
    lines = inspect.getsource(ChoiceBase).splitlines()
    first = inspect.getsourcelines(ChoiceBase)[1]
    terminal = first + next(k for k, ln in enumerate(lines) if "def terminal" in ln)
    inc = first + next(k for k, ln in enumerate(lines) if "@action" in ln)
    (run,) = check(FromChoiceBase).runs
    assert [(n.kind, n.name, n.line, n.file) for n in run.notices] == [
        ("choice", "speed", inc, base), ("terminal", "terminal", terminal, base)]
