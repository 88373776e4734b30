"""Property patterns, past-time operators and conditional choices on a spec with `bind:`: the
monitors are the spec's (they read the abstract state the bound code reports), a choice that is
not made is never passed to the code (docs/reference/spec-language.md, "Property patterns")."""

from __future__ import annotations

from pathlib import Path

import pytest

from haltproof.explorer.options import Options
from haltproof.explorer.check import check_spec
from haltproof.machine.spec import parse_spec

TESTS = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.verdict


@pytest.fixture(autouse=True)
def _tests_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    """`bind: approval_agent:Name` imports from this directory, wherever pytest was started."""
    monkeypatch.syspath_prepend(str(TESTS))


SPEC = """\
machine: approvals
bind: approval_agent:{adapter}
vars:
  n: {{type: int, min: 0, max: 3, init: 0}}
  last: {{type: enum, values: [none, approve, write, refuse], init: none}}
actions:
  act:
    when: n < 3
    choose:
      e: [approve, write, refuse]
      reason: {{values: [policy, user], when: e == refuse}}
terminal:
  when: n == 3
properties:
  approval_before_write: {{precedence: {{cause: last == approve, effect: last == write}}}}
  writes_once_approved:
    always: last != write or once(last == approve)
  ends: {{existence: n == 3}}
  refusal_answered: {{response: {{trigger: last == refuse, response: last == approve}}}}
"""


def run(adapter: str) -> dict:
    (r,) = check_spec(parse_spec(SPEC.format(adapter=adapter), "approvals.yaml"), Options(engine="scalar"))
    return {p.name: p for p in r.properties}


def test_the_careful_code_proves_every_pattern_but_the_response() -> None:
    got = run("Careful")
    statuses = {name: p.status for name, p in got.items()}
    assert statuses == {"domains": "holds", "well_defined": "holds", "bound_code": "holds",
                        "approval_before_write": "holds", "writes_once_approved": "holds", "ends": "holds",
                        "refusal_answered": "violated"}
    assert "code_matches_spec" not in got        # the monitors' stage is no stage of the user's
    assert got["approval_before_write"].message == ("in its scope, no effect state comes before a cause state; "
                                                     "the pattern monitors added 6 of the 15 states explored")
    # the shortest run that ends refused, the code given `reason` only with a refusal (it checks)
    trace = got["refusal_answered"].trace
    assert [(s.action, s.choices, s.state) for s in trace.steps] == [
        (None, {}, {"n": 0, "last": "none"}),
        ("act", {"e": "approve"}, {"n": 1, "last": "approve"}),
        ("act", {"e": "approve"}, {"n": 2, "last": "approve"}),
        ("act", {"e": "refuse", "reason": "policy"}, {"n": 3, "last": "refuse"})]
    assert got["refusal_answered"].message == ("response violated: a run ends after 3 transitions "
                                               "and the trigger is not answered")


def test_the_reckless_code_breaks_precedence_with_the_shortest_trace() -> None:
    got = run("Reckless")
    for name in ("approval_before_write", "writes_once_approved"):
        p = got[name]
        assert p.status == "violated", name
        assert [(s.action, s.choices, s.state) for s in p.trace.steps] == [
            (None, {}, {"n": 0, "last": "none"}), ("act", {"e": "write"}, {"n": 1, "last": "write"})]
    assert got["bound_code"].status == "holds"


def test_a_spec_with_bound_code_and_patterns_is_compared_where_it_has_stages() -> None:
    """An action with stages of the user's is compared with the code (code_matches_spec), the
    monitors left out of the comparison: they are the spec's alone."""
    text = SPEC.format(adapter="Reckless").replace(
        "      reason: {values: [policy, user], when: e == refuse}\n",
        "      reason: {values: [policy, user], when: e == refuse}\n    do:\n      - set: {n: n + 1, last: e}\n")
    (r,) = check_spec(parse_spec(text, "approvals.yaml"), Options(engine="scalar"))
    got = {p.name: p for p in r.properties}
    assert got["code_matches_spec"].status == "holds", got["code_matches_spec"].message
    assert got["approval_before_write"].status == "violated" and len(got["approval_before_write"].trace) == 1


def test_replaying_a_pattern_trace_of_bound_code_rebuilds_the_monitors(cli, tmp_path: Path) -> None:
    """The report's trace shows no monitor; `replay --trace` runs the code again from it and the
    monitors start over from their initial values."""
    path = tmp_path / "approvals.yaml"
    path.write_text(SPEC.format(adapter="Reckless"))
    report = tmp_path / "report.json"
    ran = cli("check", path, "--format", "json")
    assert ran.code == 1
    report.write_text(ran.out)
    ran = cli("replay", path, "--trace", report, "--property", "approval_before_write")
    assert ran.code == 0, ran.out + ran.err
    assert ran.out.splitlines()[2:] == [
        "0     (initial)                 n=0 last=none",
        "1     act        e=write        n=1 last=write",
        "# ok: 1 steps, final state n=1 last=write (not terminal)"]


def test_conform_draws_a_conditional_choice_only_where_it_is_made(cli, tmp_path: Path) -> None:
    """`haltproof conform` passes the code the choices a transition makes: `reason` only with a
    refusal (the adapter raises if it gets it otherwise, or misses it)."""
    path = tmp_path / "approvals.yaml"
    path.write_text(SPEC.format(adapter="Reckless").replace(
        "      reason: {values: [policy, user], when: e == refuse}\n",
        "      reason: {values: [policy, user], when: e == refuse}\n    do:\n      - set: {n: n + 1, last: e}\n"))
    ran = cli("conform", path, "--examples", "60")
    assert ran.code == 0, ran.out + ran.err
