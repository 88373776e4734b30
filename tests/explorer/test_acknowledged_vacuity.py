"""Acknowledged vacuity (issue 15): a rule, action, terminal value or choice value may say
`unreachable_when: PARAM_EXPR` + `because: TEXT`. For the params where it holds its vacuity
warning is silenced, and reaching it there is a `declared_unreachable` finding with a
shortest trace, on both engines; a bad declaration is an error at its line (exit 2).
Semantics: docs/reference/spec-language.md, "Acknowledged vacuity".
"""

from __future__ import annotations

import textwrap

import pytest

from haltproof.explorer.options import Options
from haltproof.explorer.check import check_spec
from haltproof.machine.errors import SpecError
from haltproof.machine.spec import parse_spec

pytestmark = pytest.mark.verdict

ENGINES = ("scalar", "vector")

PLAIN = """\
machine: units
params:
  K: [0, 1, 2]
vars:
  n: {type: int, min: 0, max: 3, init: 0}
  status: {type: enum, values: [running, done, gave_up], init: running}
actions:
  work:
    when: status == running and n < K
    do:
      - set: {n: n + 1}
      - decide: status
        rules:
          - {name: enough, when: n >= 2, then: done}
          - {name: more, then: running}
  quit:
    when: status == running and n == K
    do:
      - decide: status
        rules:
          - {name: stop, then: gave_up}
terminal:
  label: status
  values: [done, gave_up]
"""

DECLARED = (PLAIN
            .replace("  work:\n", "  work:\n    unreachable_when: K == 0\n    because: no work fits in K = 0\n")
            .replace("then: done}", "then: done, unreachable_when: K < 2, because: two units need K >= 2}")
            .replace("values: [done, gave_up]",
                     "values: [{value: done, unreachable_when: K < 2, because: two units need K >= 2}, gave_up]"))


def runs(text: str, engine: str) -> dict[int, object]:
    return {r.params["K"]: r for r in check_spec(parse_spec(text, "units.yaml"), Options(engine=engine))}


@pytest.mark.parametrize("engine", ENGINES)
def test_the_warnings_it_explains_are_silenced_for_those_params_only(engine: str) -> None:
    before = runs(PLAIN, engine)
    assert [n.message for n in before[0].notices] == [
        "vacuous: action work (line 8) is never taken", "vacuous: terminal 'done' is never reached"]
    assert [n.message for n in before[1].notices] == [
        "vacuous: decide rule 'enough' of action work (line 14) never fires: its condition is never true in any "
        "reachable step", "vacuous: terminal 'done' is never reached"]
    after = runs(DECLARED, engine)
    kept = [(n.kind, n.name) for n in after[2].notices]      # K = 2 declares nothing: its own warnings stay
    assert kept == [(n.kind, n.name) for n in before[2].notices] == [("action", "quit"), ("terminal", "gave_up")]
    for k in (0, 1):
        assert after[k].notices == [], k
        assert after[k].result == "proved", k
        (p,) = [p for p in after[k].properties if p.name == "declared_unreachable"]
        assert (p.kind, p.status) == ("builtin", "holds")
        assert p.message == ("nothing the spec declares unreachable for these params (unreachable_when) "
                             "is reached")
    # judged only where a declaration holds for the params
    assert [p.name for p in after[2].properties] == [p.name for p in before[2].properties] == [
        "domains", "well_defined"]


@pytest.mark.parametrize("engine", ENGINES)
def test_reaching_a_declared_part_is_a_finding_with_its_trace(engine: str) -> None:
    text = DECLARED.replace("unreachable_when: K < 2, because: two units need K >= 2}\n",
                            "unreachable_when: K < 3, because: wrongly thought impossible}\n")
    got = runs(text, engine)
    assert got[0].result == got[1].result == "proved"
    r = got[2]
    assert r.result == "violated"
    (p,) = [p for p in r.properties if p.name == "declared_unreachable"]
    assert p.status == "violated"
    assert p.message == ("decide rule 'enough' of action work (line 16) fires, but it is declared unreachable "
                         "when K < 3 (units.yaml:16): wrongly thought impossible")
    assert [(s.action, s.rule, s.state["n"]) for s in p.trace.steps] == [
        (None, None, 0), ("work", "more", 1), ("work", "enough", 2)]
    # the other verdicts stand: it cuts nothing short
    assert [(q.name, q.status) for q in r.properties if q.name != "declared_unreachable"] == [
        ("domains", "holds"), ("well_defined", "holds")]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_terminal_value_and_an_action(engine: str) -> None:
    text = DECLARED.replace("values: [{value: done, unreachable_when: K < 2,",
                            "values: [{value: done, unreachable_when: K == 2,")
    (p,) = [p for p in runs(text, engine)[2].properties if p.name == "declared_unreachable"]
    assert p.message == ("terminal 'done' is reached, but it is declared unreachable when K == 2 "
                         "(units.yaml:26): two units need K >= 2")
    assert len(p.trace) == 2 and p.trace.steps[-1].state["status"] == "done"
    text = DECLARED.replace("unreachable_when: K == 0\n", "unreachable_when: K == 1\n")
    (p,) = [p for p in runs(text, engine)[1].properties if p.name == "declared_unreachable"]
    assert p.message == ("action work (line 8) is taken, but it is declared unreachable when K == 1 "
                         "(units.yaml:9): no work fits in K = 0")
    assert [s.action for s in p.trace.steps] == [None, "work"]


def test_several_reached_name_the_shortest_and_count_the_rest() -> None:
    text = (DECLARED.replace("K < 2, because: two units need K >= 2}\n", "K == 2, because: x}\n")
            .replace("{value: done, unreachable_when: K < 2,", "{value: done, unreachable_when: K == 2,"))
    (p,) = [p for p in runs(text, "scalar")[2].properties if p.name == "declared_unreachable"]
    assert p.message.startswith("decide rule 'enough' of action work (line 16) fires")
    assert p.message.endswith(": x (and 1 more part declared unreachable here is reached)")


def test_a_choice_value() -> None:
    from pathlib import Path
    text = (Path(__file__).parent.parent.parent / "docs" / "examples" / "agent_choices.yaml").read_text()
    assert "unreachable_when: R == 0" in text
    got = {r.params["R"]: r for r in check_spec(parse_spec(text, "a.yaml"), Options())}
    assert got[0].notices == [] and got[0].result == "proved"
    broken = text.replace("unreachable_when: R == 0", "unreachable_when: R == 1", 1)     # the value's, not retry's
    got = {r.params["R"]: r for r in check_spec(parse_spec(broken, "a.yaml"), Options())}
    (p,) = [p for p in got[1].properties if p.name == "declared_unreachable"]
    assert p.message.startswith("value error of choice obs of action step is drawn, but it is declared "
                                "unreachable when R == 1 (a.yaml:")
    assert [s.choices for s in p.trace.steps[1:]] == [{"proposal": "call_tool", "obs": "error"}]


def test_an_expected_finding() -> None:
    text = DECLARED.replace("K < 2, because: two units need K >= 2}\n", "K < 3, because: x}\n")
    text += "expect: {violated: [declared_unreachable]}\n"
    (r,) = [r for r in check_spec(parse_spec(text, "units.yaml"), Options()) if r.params["K"] == 2]
    assert r.as_expected is True


@pytest.mark.parametrize("old,new,message", [
    ("    because: no work fits in K = 0\n", "",
     "units.yaml:9: action work has unreachable_when without because: an acknowledged vacuity says both "
     "when and why"),
    ("    unreachable_when: K == 0\n", "",
     "units.yaml:9: action work has because without unreachable_when"),
    ("unreachable_when: K == 0", "unreachable_when: n == 0",
     "units.yaml:9: undefined name"),
    ("unreachable_when: K == 0", "unreachable_when: K",
     "units.yaml:9: unreachable_when of action work must be true/false, but this is int: 'K'"),
    ("because: no work fits in K = 0", "because: ''",
     "units.yaml:10: because of action work must be a non-empty text"),
    ("{value: done, unreachable_when: K < 2, because: two units need K >= 2}", "{value: done, because: x}",
     "units.yaml:26: a terminal value needs the key 'unreachable_when'"),
    ("then: done, unreachable_when: K < 2,", "then: done, unreachable_when: K < 2, unreachable: 1,",
     "units.yaml:16: unknown key in a decide rule"),
])
def test_a_bad_declaration_is_an_error_at_its_line(old: str, new: str, message: str) -> None:
    text = DECLARED.replace(old, new, 1)
    assert text != DECLARED
    with pytest.raises(SpecError) as err:
        parse_spec(text, "units.yaml")
    assert message in str(err.value)


def test_a_bad_declaration_exits_2_on_the_command_line(cli, tmp_path) -> None:
    path = tmp_path / "units.yaml"
    path.write_text(DECLARED.replace("    because: no work fits in K = 0\n", ""))
    ran = cli("check", path)
    assert ran.code == 2
    assert f"{path}:9: action work has unreachable_when without because" in ran.err + ran.out
    assert "Traceback" not in ran.err


def test_the_docs_example_output(cli, tmp_path, monkeypatch) -> None:
    from conftest import ROOT
    doc = (ROOT / "docs" / "reference" / "spec-language.md").read_text()
    section = doc.split("### Acknowledged vacuity", 1)[1]
    shown = section.split("```text\n", 1)[1].split("```", 1)[0].strip()
    (tmp_path / "docs" / "examples").mkdir(parents=True)
    path = tmp_path / "docs" / "examples" / "agent_choices.yaml"
    text = (ROOT / "docs" / "examples" / "agent_choices.yaml").read_text()
    path.write_text(text.replace("unreachable_when: R == 0", "unreachable_when: R == 1", 1))
    monkeypatch.chdir(tmp_path)
    ran = cli("check", "docs/examples/agent_choices.yaml", "-p", "R=1")
    assert ran.code == 1
    assert shown in ran.out


# ---------------------------------------------------------------- mutants that survived (issue 18)
# Mutants of explorer/acknowledged.py that the verdict selection let through (issue 18, the
# sampled run of round 7): which terminal state a `declared_unreachable` finding about a terminal
# value points at. The case was worked out by hand and runs on both engines; the test was seen
# failing with its mutation applied (docs/explanation/mutation-testing.md).
# (These tests were test_acknowledged_kills.)

# `quit` ends a run as gave_up after one transition; `done` takes two. For K == 1 the spec
# declares `done` unreachable: the finding's trace is the shortest run to a `done` state, not
# to the shallower terminal state of another value.
QUITTER = """\
machine: quitter
params:
  K: [1, 2]
vars:
  n: {type: int, min: 0, max: 2, init: 0}
  status: {type: enum, values: [running, done, gave_up], init: running}
actions:
  work:
    when: status == running and n < 2
    do:
      - set: {n: n + 1}
      - decide: status
        rules:
          - {name: enough, when: n >= 2, then: done}
          - {name: more, then: running}
  quit:
    when: status == running
    do:
      - set: {status: gave_up}
terminal:
  label: status
  values: [{value: done, unreachable_when: K == 1, because: one unit is not enough}, gave_up]
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_a_terminal_value_declared_unreachable_is_traced_to_a_state_of_that_value(engine):
    runs = {r.params["K"]: r for r in check_spec(parse_spec(textwrap.dedent(QUITTER), "q.yaml"),
                                                  Options(engine=engine))}
    assert [p.name for p in runs[2].properties] == ["domains", "well_defined"]
    [p] = [p for p in runs[1].properties if p.name == "declared_unreachable"]
    assert (p.status, p.message) == (
        "violated", "terminal 'done' is reached, but it is declared unreachable when K == 1 (q.yaml:22): "
                    "one unit is not enough")
    assert [(s.action, s.state["n"], s.state["status"]) for s in p.trace.steps] == [
        (None, 0, "running"), ("work", 1, "running"), ("work", 2, "done")]


# Three parts declared unreachable for K == 1 and all reached: the finding is the shortest one
# (`quit`, one transition) and counts the two others in the plural.
THREE = (QUITTER
         .replace("{name: enough, when: n >= 2, then: done}",
                  "{name: enough, when: n >= 2, then: done, unreachable_when: K == 1, because: b}")
         .replace("  quit:\n    when: status == running\n",
                  "  quit:\n    unreachable_when: K == 1\n    because: q\n    when: status == running\n"))


@pytest.mark.parametrize("engine", ENGINES)
def test_three_parts_reached_name_the_shortest_and_count_the_two_others(engine):
    runs = {r.params["K"]: r for r in check_spec(parse_spec(textwrap.dedent(THREE), "q.yaml"),
                                                  Options(engine=engine))}
    [p] = [p for p in runs[1].properties if p.name == "declared_unreachable"]
    assert (p.status, p.message) == (
        "violated", "action quit (line 16) is taken, but it is declared unreachable when K == 1 (q.yaml:17): q "
                    "(and 2 more parts declared unreachable here are reached)")
    assert [(s.action, s.state["n"], s.state["status"]) for s in p.trace.steps] == [
        (None, 0, "running"), ("quit", 0, "gave_up")]


@pytest.mark.parametrize("engine", ENGINES)
def test_two_parts_reached_count_the_other_in_the_singular(engine):
    text = THREE.replace("    unreachable_when: K == 1\n    because: q\n", "")
    runs = {r.params["K"]: r for r in check_spec(parse_spec(textwrap.dedent(text), "q.yaml"),
                                                  Options(engine=engine))}
    [p] = [p for p in runs[1].properties if p.name == "declared_unreachable"]
    assert (p.status, p.message) == (
        "violated", "decide rule 'enough' of action work (line 14) fires, but it is declared unreachable when "
                    "K == 1 (q.yaml:14): b (and 1 more part declared unreachable here is reached)")
    assert [(s.action, s.state["n"], s.state["status"]) for s in p.trace.steps] == [
        (None, 0, "running"), ("work", 1, "running"), ("work", 2, "done")]
