"""Past-time operators (issue 15): once(e), historically(e), previous(e) and since(a, b) in
`always` and `reachable` properties, compiled into monitor vars (machine/pasttime.py), on
both engines: each holding and failing with the exact shortest trace, nesting, what they
cost, and the mistakes that are errors. Semantics: docs/reference/spec-language.md, "Past-time operators".

As in test_patterns.py, a *script* machine walks states 0..n-1 in order and a letter set per
state says which of P, Q, S hold there; a violation must be found at the first state where
the run so far breaks the property, so the trace's length is that state's index.
"""

from __future__ import annotations

import textwrap

import pytest

from haltproof.explorer.options import Options
from haltproof.explorer.check import check_spec
from haltproof.machine.errors import SpecError
from haltproof.machine.spec import parse_spec


def script(states: list[str], prop: str) -> str:
    """test_patterns.script, the predicates written bare (the templates quote whole expressions)."""
    def holds(letter: str) -> str:
        at = [f"i == {k}" for k, letters in enumerate(states) if letter in letters]
        return "(" + (" or ".join(at) or "False") + ")"
    body = prop.format(**{x: holds(x) for x in "PQS"})
    return textwrap.dedent(f"""\
        machine: script
        vars:
          i: {{type: int, min: 0, max: {len(states) - 1}, init: 0}}
        actions:
          next:
            when: i < {len(states) - 1}
            do:
              - set: {{i: i + 1}}
        terminal:
          when: i == {len(states) - 1}
        properties:
          it: {body}
        """)

pytestmark = pytest.mark.verdict

ENGINES = ("scalar", "vector")


def judge(states: list[str], prop: str, engine: str):
    spec = parse_spec(script(states, prop), "test_spec.yaml")
    (r,) = check_spec(spec, Options(engine=engine))
    assert r.engine == engine
    (p,) = [p for p in r.properties if p.name == "it"]
    return p


ONCE = "{{always: 'not {Q} or once({P})'}}"              # Q only once P has held (now included)
HISTORICALLY = "{{always: 'not {Q} or historically({P})'}}"   # Q only while P has always held
PREVIOUS = "{{always: 'not {Q} or previous({P})'}}"      # Q only right after a P-state
SINCE = "{{always: 'not {Q} or since({P}, {S})'}}"        # Q only if P has held ever since an S-state
REACH = "{{reachable: 'once({P}) and {Q}'}}"              # a Q-state after (or at) a P-state

# (template, run, index of the first state that breaks it, or None when it holds)
CASES = [
    (ONCE, ["", "P", "", "Q"], None),
    (ONCE, ["PQ"], None),                    # once includes the current state
    (ONCE, ["", "", "Q", "P"], 2),
    (HISTORICALLY, ["P", "P", "PQ"], None),
    (HISTORICALLY, ["P", "", "P", "PQ"], 3),
    (HISTORICALLY, ["Q"], 0),
    (PREVIOUS, ["P", "Q", "P", "Q"], None),
    (PREVIOUS, ["PQ"], None),                # in an initial state, previous(e) is e there
    (PREVIOUS, ["Q"], 0),
    (PREVIOUS, ["P", "", "Q"], 2),
    (SINCE, ["S", "P", "PQ"], None),
    (SINCE, ["SQ", ""], None),               # the S-state itself is enough
    (SINCE, ["S", "", "PQ"], 2),             # P broke off at 1
    (SINCE, ["", "P", "PQ"], 2),             # no S-state ever
    (SINCE, ["S", "", "S", "PQ"], None),     # a new S-state starts again
    (SINCE, ["S", "P", "S", "Q"], 3),        # P must hold now too (unless S does)
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("template,states,broken", CASES)
def test_operator_on_a_script(template: str, states: list[str], broken: int | None, engine: str) -> None:
    p = judge(states, template, engine)
    assert p.kind == "invariant"
    if broken is None:
        assert p.status == "holds", p.message
        assert p.trace is None
        return
    assert p.status == "violated"
    assert p.message.startswith("false in this state; its past-time monitors (")
    assert len(p.trace) == broken
    assert p.trace.steps[-1].state["i"] == broken


@pytest.mark.parametrize("engine", ENGINES)
def test_reachable_with_a_past_time_operator(engine: str) -> None:
    p = judge(["", "P", "", "Q"], REACH, engine)
    assert p.status == "holds" and len(p.witness) == 3
    assert p.message.startswith("reached after 3 transitions; its past-time monitors (1 var) added 0 of the")
    p = judge(["Q", "", "P"], REACH, engine)
    assert p.status == "violated" and p.message.startswith("unreachable: no reachable state satisfies it")


@pytest.mark.parametrize("engine", ENGINES)
def test_nesting_works(engine: str) -> None:
    """once(previous(i) > 1): previous(i) is 2 first in state 3."""
    text = script(["", "", "", "", ""], "X").replace("it: X", "it: {always: 'not once(previous(i) > 1)'}")
    (r,) = check_spec(parse_spec(text, "t.yaml"), Options(engine=engine))
    (p,) = [p for p in r.properties if p.name == "it"]
    assert p.status == "violated" and len(p.trace) == 3
    assert p.message.startswith("false in this state; its past-time monitors (3 vars) added")
    assert p.trace.steps[-1].state == {"i": 3}        # the monitors are hidden from the trace


BRANCHING = """\
machine: approvals
vars:
  n: {type: int, min: 0, max: 3, init: 0}
  last: {type: enum, values: [none, approve, write, refuse], init: none}
actions:
  act:
    when: n < 3
    choose: {e: [approve, write, refuse]}
    do:
      - set: {n: n + 1, last: e}
terminal:
  when: n == 3
properties:
  approval_before_write: {always: last != write or once(last == approve)}
  no_write_twice: {always: not (last == write and previous(last) == write)}
  writes_only_since_approval: {always: 'last != write or since(last != refuse, last == approve)'}
  never_refused: {always: historically(last != refuse)}
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_the_shortest_counterexample_among_branches(engine: str) -> None:
    (r,) = check_spec(parse_spec(BRANCHING, "approvals.yaml"), Options(engine=engine))
    got = {p.name: p for p in r.properties}
    want = {"approval_before_write": ["write"], "no_write_twice": ["write", "write"],
            "writes_only_since_approval": ["write"], "never_refused": ["refuse"]}
    for name, events in want.items():
        p = got[name]
        assert p.status == "violated", name
        assert [s.choices.get("e") for s in p.trace.steps[1:]] == events, name


@pytest.mark.parametrize("engine", ENGINES)
def test_a_holding_property_says_what_its_monitors_cost(engine: str) -> None:
    """(n, last) has 5 states; once(last == a), one state behind, splits (2, a) and (2, b) by
    whether state 1 was an a: 7 states, 2 added."""
    text = textwrap.dedent("""\
        machine: cost
        vars:
          n: {type: int, min: 0, max: 2, init: 0}
          last: {type: enum, values: [none, a, b], init: none}
        actions:
          act:
            when: n < 2
            choose: {e: [a, b]}
            do:
              - set: {n: n + 1, last: e}
        terminal:
          when: n == 2
        properties:
          it: {always: n < 2 or once(last == a) or last == b}
        """)
    (r,) = check_spec(parse_spec(text, "cost.yaml"), Options(engine=engine))
    (p,) = [p for p in r.properties if p.name == "it"]
    assert p.status == "holds"
    assert p.message.endswith("; its past-time monitors (1 var) added 2 of the 7 states explored")
    assert r.stats["states"] == 7


@pytest.mark.parametrize("body,message", [
    ("{step: once(after.i == 1)}",
     "test_spec.yaml:12: once() is a past-time operator: only an always or reachable property may use it: "
     "'once(after.i == 1)'"),
    ("{always: once(i)}", "test_spec.yaml:12: an argument of once() must be bool, but this is int: 'i'"),
    ("{always: since(i == 1)}", "test_spec.yaml:12: since() takes exactly 2 plain arguments: 'since(i == 1)'"),
    ("{always: previous(i + 1) > 0}",
     "test_spec.yaml:12: previous() of an int takes a var (previous(x)), not an expression: write "
     "previous(x) + 1 for previous(x + 1): 'previous(i + 1)'"),
    ("{absence: once(i == 1)}",
     "test_spec.yaml:12: once() is a past-time operator: only an always or reachable property may use it"),
    ("{always: sometime(i == 1)}",
     "test_spec.yaml:12: only min(), max() and abs() may be called (and once(), historically(), previous(), "
     "since() in an always or reachable property)"),
])
def test_misuse_is_a_named_error(body: str, message: str) -> None:
    text = script(["", ""], "X").replace("it: X", f"it: {body}")
    with pytest.raises(SpecError) as err:
        parse_spec(text, "test_spec.yaml")
    assert message in str(err.value)


def test_a_guard_cannot_use_them() -> None:
    text = script(["", ""], "{{always: true}}").replace("when: i < 1", "when: i < 1 and historically(i == 0)")
    with pytest.raises(SpecError) as err:
        parse_spec(text, "test_spec.yaml")
    assert "test_spec.yaml:6: historically() is a past-time operator: only an always or reachable property " \
           "may use it" in str(err.value)


def test_the_docs_example_is_the_shipped_one(cli) -> None:
    from conftest import ROOT
    path = ROOT / "docs" / "examples" / "agent_history.yaml"
    doc = (ROOT / "docs" / "reference" / "spec-language.md").read_text()
    section = doc.split("### Past-time operators", 1)[1]
    block = section.split("```yml\n", 1)[1].split("```", 1)[0]
    assert block == path.read_text()
    ran = cli("check", path, "--verbose")
    assert ran.code == 0
    assert ("holds     never_two_writes_in_a_row        true in every reachable state; its past-time monitors "
            "(2 vars) added 6 of the 30 states explored") in ran.out
    for engine in ENGINES:        # the variant the docs describe
        text = path.read_text().replace("when: turn < 4 and approval and last != write", "when: turn < 4")
        (r,) = check_spec(parse_spec(text, "h.yaml"), Options(engine=engine))
        got = {p.name: [s.action for s in p.trace.steps[1:]] for p in r.properties if p.status == "violated"}
        assert got == {"writes_only_since_an_approval": ["write"], "first_write_waits_for_an_answer": ["write"],
                       "never_two_writes_in_a_row": ["write", "write"]}
