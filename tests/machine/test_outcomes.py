"""Exceptions as outcomes (machine/outcomes.py): `raises:` per action in a bound spec."""

from __future__ import annotations

from pathlib import Path

import pytest

from haltproof.explorer.options import Options
from haltproof.explorer.check import check_spec
from haltproof.machine.errors import SpecError
from haltproof.machine.spec import load_spec, parse_spec

TESTS = Path(__file__).resolve().parent.parent

SPEC = """\
machine: raising
bind: live_agents:{adapter}
params:
  N: [2]
vars:
  steps: {{type: int, min: 0, max: N, init: 0}}
  status: {{type: enum, values: [running, done, limit, broken], init: running}}
actions:
  work:
    when: status == running
    choose:
      tool: [ok, fail{extra_tool}]
    do:
      - decide: status
        rules:
          - {{name: out_of_steps, when: steps >= N, then: limit}}
          - {{name: finished, when: tool == ok, then: done}}{crash_rule}
          - {{name: again, then: running}}
      - set: {{steps: steps + (0 if status == limit else 1)}}
{raises}terminal: status != running
properties:
  stops:
    terminates: true
"""

RAISES = """\
    raises:
      - class: live_agents.StepLimitExceeded
        match: 'limit of \\d+ steps'
        rule: out_of_steps
        set: {status: limit}
"""


@pytest.fixture(autouse=True)
def _tests_importable(monkeypatch):
    monkeypatch.syspath_prepend(str(TESTS))


CRASHED = "\n          - {name: crashed, when: tool == crash, then: broken}"


def spec_text(adapter: str = "RaisingAdapter", raises: str = RAISES, extra_tool: str = "") -> str:
    """The spec; `extra_tool` adds the tool `crash` (and its rule, for the stages to match the code)."""
    return SPEC.format(adapter=adapter, raises=raises, extra_tool=extra_tool,
                       crash_rule=CRASHED if extra_tool else "")


def check_text(tmp_path: Path, text: str) -> list:
    path = tmp_path / "raising.yaml"
    path.write_text(text)
    return check_spec(load_spec(path), Options())


def by_name(run) -> dict:
    return {p.name: p for p in run.properties}


@pytest.mark.parametrize("adapter, mode", [("RaisingAdapter", "replay"), ("RaisingCopied", "snapshot")])
def test_a_declared_exception_is_the_outcome_it_stands_for(tmp_path, adapter, mode):
    (run,) = check_text(tmp_path, spec_text(adapter))
    assert (run.result, run.binding) == ("proved", mode)
    # running at steps 0, 1, 2; done at 1, 2; from steps=2 both tools meet the raised limit:
    # the state the run was left in (steps=2) with the declared status on top
    assert (run.stats["states"], run.stats["transitions"]) == (6, 6)
    assert run.coverage["rules"] == {"finished": 2, "out_of_steps": 2, "again": 2}


def test_without_the_declaration_the_exception_is_a_bound_code_finding(tmp_path):
    (run,) = check_text(tmp_path, spec_text(raises=""))
    finding = by_name(run)["bound_code"]
    assert finding.status == "violated"
    assert finding.message.startswith("action work with tool=ok: the bound code raised StepLimitExceeded: "
                                      "hit the limit of 2 steps\n")
    assert 'raise StepLimitExceeded(f"hit the limit of {self.limit} steps")' in finding.message
    assert [s.state["steps"] for s in finding.trace.steps] == [0, 1, 2]


def test_a_message_that_does_not_match_stays_a_finding(tmp_path):
    (run,) = check_text(tmp_path, spec_text(raises=RAISES.replace("limit of", "quota of")))
    assert by_name(run)["bound_code"].status == "violated"
    assert "StepLimitExceeded: hit the limit of 2 steps" in by_name(run)["bound_code"].message


def test_an_undeclared_exception_beside_a_declared_one_is_still_a_finding(tmp_path):
    (run,) = check_text(tmp_path, spec_text(extra_tool=", crash"))
    finding = by_name(run)["bound_code"]
    assert finding.message.startswith("action work with tool=crash: the bound code raised ToolError: "
                                      "the tool crashed\n")
    assert len(finding.trace.steps) == 1


def test_the_tool_error_declared_as_its_own_outcome(tmp_path):
    raises = RAISES + """\
      - class: live_agents.ToolError
        set: {status: broken}
"""
    (run,) = check_text(tmp_path, spec_text(raises=raises, extra_tool=", crash"))
    assert run.result == "proved"
    # a crash leaves steps as the tool left it (counted) with status broken; the code names
    # no rule for it, so the spec's stages do (crashed)
    assert (run.stats["states"], run.stats["transitions"]) == (8, 9)
    assert run.coverage["rules"] == {"finished": 2, "out_of_steps": 3, "again": 2, "crashed": 2}


def problems(text: str) -> list[str]:
    with pytest.raises(SpecError) as caught:
        parse_spec(text, "s.yaml")
    return [str(p) for p in caught.value.problems]


@pytest.mark.parametrize("change, message", [
    ("match: 'limit of \\d+ steps'", "s.yaml:22: match is not a valid regular expression "
                                     "(missing ), unterminated subpattern at position 0): '(limit'"),
    ("rule: out_of_steps", "s.yaml:23: rule must name a decide rule of action work "
                           "(out_of_steps, finished, again): 'nope'"),
    ("set: {status: limit}", "s.yaml:24: set gives status a value that is not one of "
                             "running, done, limit, broken: 'stopped'"),
    ("class: live_agents.StepLimitExceeded", "s.yaml:21: class must be the exception's dotted path, "
                                             "e.g. mypkg.errors.LimitExceeded: 'live agents!'"),
])
def test_malformed_declarations_name_file_and_line(change, message):
    bad = {"match: 'limit of \\d+ steps'": "match: '(limit'", "rule: out_of_steps": "rule: nope",
           "set: {status: limit}": "set: {status: stopped}",
           "class: live_agents.StepLimitExceeded": "class: live agents!"}[change]
    text = spec_text(raises=RAISES.replace(change, bad))
    assert problems(text) == [message]


def test_raises_without_bind_is_refused():
    text = spec_text().replace("bind: live_agents:RaisingAdapter\n", "")
    assert problems(text) == ["s.yaml:19: raises of action work describes the exceptions of bound code, "
                              "but the spec has no bind:"]


@pytest.mark.parametrize("path, message", [
    ("live_agents.NoSuchError", "raises names a class that cannot be found (no importable module defines it)"),
    ("no_such_module.Error", "raises names a class that cannot be found (no importable module defines it)"),
    ("live_agents.Agent", "raises must name an exception class (a subclass of Exception)"),
])
def test_an_unknown_class_is_an_exit_2_error_at_its_line(tmp_path, cli, path, message):
    spec = tmp_path / "raising.yaml"
    spec.write_text(spec_text(raises=RAISES.replace("live_agents.StepLimitExceeded", path)))
    ran = cli("check", spec)
    assert ran.code == 2
    assert f"{spec}:21: {message}: '{path}'" in ran.err
    assert ran.out == ""


def test_a_builtin_class_by_bare_name(tmp_path):
    raises = RAISES.replace("live_agents.StepLimitExceeded", "Exception").replace(
        "        match: 'limit of \\d+ steps'\n", "        match: 'limit'\n")
    (run,) = check_text(tmp_path, spec_text(raises=raises))
    assert run.result == "proved"


def test_conform_takes_declared_exceptions_as_outcomes_too(tmp_path, cli):
    spec = tmp_path / "raising.yaml"
    spec.write_text(spec_text())
    ran = cli("conform", spec, "--examples", "30")
    assert ran.code == 0, ran.out
    spec.write_text(spec_text(raises=""))
    undeclared = cli("conform", spec, "--examples", "30")
    assert undeclared.code == 1
    assert "the code raised StepLimitExceeded: hit the limit of 2 steps" in undeclared.out
