"""Mutants of properties/vacuity.py that the verdict selection let through (issue 18, the
sampled run of round 7): every field of the notice about a conditional choice that is never
made (conditional choices run on the scalar engine only, so the spec runs on its two loops,
which must agree), and the file of the notice about an action never taken that a Python
model inherits from a base class in another module. Each test was seen failing with its
mutation applied (docs/explanation/mutation-testing.md)."""

from __future__ import annotations

import inspect

import pytest

from haltproof.api import check

from engine_ways import each_way
from vacuity_base import NeverTakenBase, RuleNeverReportedBase

pytestmark = pytest.mark.verdict

NEVER_MADE = """\
machine: never_made
vars:
  n: {type: int, min: 0, max: 2, init: 0}
actions:
  go:
    when: n < 2
    choose:
      extra: {values: [a, b], when: n > 5}
    do:
      - set: {n: n + 1}
terminal:
  when: n == 2
"""


def test_a_conditional_choice_never_made_is_a_notice_naming_its_action():
    for way, r in each_way(NEVER_MADE, vector=False).items():
        assert [n.to_json() for n in r.notices] == [
            {"kind": "choice", "name": "extra", "line": 8, "action": "go", "summary": "",
             "message": "vacuous: choice extra of action go (line 8) is never made: its when is never true in "
                        "any reachable state"}], way


def test_an_inherited_action_never_taken_names_the_base_module():
    class FromNeverTakenBase(NeverTakenBase):
        """Its actions are declared in tests/vacuity_base.py."""

    base = inspect.getsourcefile(NeverTakenBase)
    lines, first = inspect.getsourcelines(NeverTakenBase)
    never = first + max(k for k, ln in enumerate(lines) if "@action" in ln)
    (run,) = check(FromNeverTakenBase).runs
    assert [(n.kind, n.name, n.line, n.action, n.file) for n in run.notices] == [
        ("action", "never", never, "never", base)]


def test_an_inherited_rule_never_reported_names_the_base_module():
    """Fresh sample (seed 19): the notice of a dead decide rule carries the rule's file."""
    class FromRuleBase(RuleNeverReportedBase):
        """Its action and rules are declared in tests/vacuity_base.py."""

    base = inspect.getsourcefile(RuleNeverReportedBase)
    lines, first = inspect.getsourcelines(RuleNeverReportedBase)
    step = first + max(k for k, ln in enumerate(lines) if "@action" in ln)
    (run,) = check(FromRuleBase).runs
    assert [(n.kind, n.name, n.line, n.action, n.file) for n in run.notices] == [
        ("rule", "stuck", step, "step", base)]
