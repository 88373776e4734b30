"""Safety-shaped property patterns (absence, universality, precedence, bounded_existence) in
every scope, on both engines: one run where each holds and one where it breaks, down to the
exact shortest trace. Semantics: docs/reference/spec-language.md, "Property patterns".

A *script* machine walks states 0..n-1 in order; a letter set per state says which of P, Q,
R, S hold there, so each case reads as the run it is. A violation must be reported on the
first state at which the run so far already breaks the pattern: the trace's length is that
state's index.
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


def script(states: list[str], prop: str) -> str:
    """A machine whose one run visits states 0..n-1, letter X in states[i] meaning X holds at i."""
    def holds(letter: str) -> str:
        at = [f"i == {k}" for k, letters in enumerate(states) if letter in letters]
        return " or ".join(at) or "False"
    preds = {x: holds(x) for x in "PQRS"}
    body = prop.format(**{x: f"'{v}'" for x, v in preds.items()})
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


def judge(states: list[str], prop: str, engine: str):
    spec = parse_spec(script(states, prop), "test_spec.yaml")
    (r,) = check_spec(spec, Options(engine=engine))
    assert r.engine == engine
    (p,) = [p for p in r.properties if p.name == "it"]
    return p


ABSENCE = {
    "global": "{{absence: {P}}}",
    "before": "{{absence: {P}, scope: {{before: {R}}}}}",
    "after": "{{absence: {P}, scope: {{after: {Q}}}}}",
    "between": "{{absence: {P}, scope: {{between: [{Q}, {R}]}}}}",
    "after_until": "{{absence: {P}, scope: {{after: {Q}, until: {R}}}}}",
}
UNIVERSALITY = {k: v.replace("absence", "universality") for k, v in ABSENCE.items()}
PRECEDENCE = {k: v.replace("absence: {P}", "precedence: {{cause: {S}, effect: {P}}}")
              for k, v in ABSENCE.items()}
BOUNDED = {k: v.replace("absence: {P}", "bounded_existence: {{what: {P}, at_most: 1}}")
           for k, v in ABSENCE.items()}

# (pattern template, scope, run, index of the first state that breaks it or None when it holds)
CASES = [
    (ABSENCE, "global", ["", "", ""], None),
    (ABSENCE, "global", ["", "", "P", ""], 2),
    (ABSENCE, "before", ["", "R", "P"], None),               # P after the first R is out of scope
    (ABSENCE, "before", ["P", "", ""], None),                # no R ever: nothing to come before
    (ABSENCE, "before", ["", "P", "", "R", ""], 3),          # wrong once R comes
    (ABSENCE, "before", ["", "PR", ""], None),               # P at R itself is allowed (!P U R)
    (ABSENCE, "after", ["P", "", "Q", ""], None),            # P before the first Q is allowed
    (ABSENCE, "after", ["", "Q", "", "P", ""], 3),
    (ABSENCE, "after", ["", "PQ", ""], 1),                   # the Q state itself is in scope
    (ABSENCE, "between", ["", "Q", "P", ""], None),          # no R closes the interval
    (ABSENCE, "between", ["P", "Q", "", "R", "P"], None),
    (ABSENCE, "between", ["", "Q", "P", "", "R"], 4),
    (ABSENCE, "after_until", ["", "Q", "", "R", "P"], None),
    (ABSENCE, "after_until", ["", "Q", "", "P", ""], 3),     # no R needed
    (ABSENCE, "after_until", ["Q", "R", "Q", "PR"], None),   # P at R closes: allowed
    (UNIVERSALITY, "global", ["P", "P"], None),
    (UNIVERSALITY, "global", ["P", "P", ""], 2),
    (UNIVERSALITY, "before", ["P", "R", ""], None),
    (UNIVERSALITY, "before", ["P", "", "P", "R"], 3),
    (UNIVERSALITY, "after", ["", "PQ", "P"], None),
    (UNIVERSALITY, "after", ["", "PQ", "", "P"], 2),
    (UNIVERSALITY, "between", ["", "PQ", "P", "R", ""], None),
    (UNIVERSALITY, "between", ["", "PQ", "", "P", "R"], 4),
    (UNIVERSALITY, "after_until", ["", "PQ", "P", "R", ""], None),
    (UNIVERSALITY, "after_until", ["", "PQ", "", "P"], 2),
    (PRECEDENCE, "global", ["", "S", "P"], None),
    (PRECEDENCE, "global", ["", "PS", "P"], None),           # the cause may come with the effect
    (PRECEDENCE, "global", ["", "", "P", "S"], 2),
    (PRECEDENCE, "before", ["", "P", "", ""], None),         # no R ever
    (PRECEDENCE, "before", ["", "R", "P"], None),
    (PRECEDENCE, "before", ["", "P", "S", "R"], 3),
    (PRECEDENCE, "after", ["P", "Q", "S", "P"], None),
    (PRECEDENCE, "after", ["", "Q", "", "P", "S"], 3),
    (PRECEDENCE, "between", ["", "Q", "S", "P", "R"], None),
    (PRECEDENCE, "between", ["", "Q", "P", ""], None),       # no R closes the interval
    (PRECEDENCE, "between", ["", "Q", "P", "S", "R"], 4),
    (PRECEDENCE, "between", ["Q", "S", "Q", "P", "R"], 4),   # each Q needs its own cause
    (PRECEDENCE, "after_until", ["", "Q", "S", "P", "R"], None),
    (PRECEDENCE, "after_until", ["", "Q", "", "P"], 3),
    (PRECEDENCE, "after_until", ["Q", "S", "Q", "P"], 3),
    (BOUNDED, "global", ["P", "P", "", ""], None),           # one stretch of P
    (BOUNDED, "global", ["P", "", "", "P", ""], 3),
    (BOUNDED, "before", ["P", "", "R", "P"], None),
    (BOUNDED, "before", ["P", "", "P", "", "R"], 4),
    (BOUNDED, "after", ["P", "", "Q", "P", "P"], None),
    (BOUNDED, "after", ["P", "PQ", "", "P"], 3),             # the stretch at Q counts from Q
    (BOUNDED, "between", ["", "Q", "P", "", "P"], None),     # no R closes the interval
    (BOUNDED, "between", ["", "Q", "P", "R", "Q", "P", "R"], None),   # one per interval
    (BOUNDED, "between", ["", "Q", "P", "", "P", "R"], 5),
    (BOUNDED, "after_until", ["", "Q", "P", "R", "Q", "P"], None),
    (BOUNDED, "after_until", ["", "Q", "P", "", "P"], 4),
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("table,scope,states,broken", CASES)
def test_pattern_on_a_script(table: dict[str, str], scope: str, states: list[str], broken: int | None,
                             engine: str) -> None:
    p = judge(states, table[scope], engine)
    kind = next(k for k in ("absence", "universality", "precedence", "bounded_existence") if k in table[scope])
    assert p.kind == kind
    if broken is None:
        assert p.status == "holds", p.message
        assert "the pattern monitors added" in p.message
        assert p.trace is None
        return
    assert p.status == "violated"
    assert p.message.startswith(f"{kind}")
    assert p.message.endswith("violated: the run so far already breaks it")
    assert p.trace is not None and p.trace.kind == "path"
    assert len(p.trace) == broken
    assert p.trace.steps[-1].state["i"] == broken
    assert p.trace.steps[-1].action == ("next" if broken else None)


BRANCHING = """\
machine: approvals
vars:
  n: {type: int, min: 0, max: 3, init: 0}
  last: {type: enum, values: [none, approve, write, refuse], init: none}
sets:
  event: [approve, write, refuse]
actions:
  act:
    when: n < 3
    choose: {e: event}
    do:
      - set: {n: n + 1, last: e}
terminal:
  when: n == 3
properties:
  approval_before_write: {precedence: {cause: last == approve, effect: last == write}}
  no_write_after_refusal:
    absence: last == write
    scope: {after: last == refuse, until: last == approve}
  few_refusals: {bounded_existence: {what: last == refuse, at_most: 1}}
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_the_shortest_counterexample_among_branches(engine: str) -> None:
    """With every event possible at every step, each pattern's counterexample is a shortest one."""
    (r,) = check_spec(parse_spec(BRANCHING, "approvals.yaml"), Options(engine=engine))
    got = {p.name: p for p in r.properties}
    want = {"approval_before_write": (1, {"e": "write"}),
            "no_write_after_refusal": (2, {"e": "write"}),
            "few_refusals": (3, {"e": "refuse"})}
    for name, (length, choices) in want.items():
        p = got[name]
        assert p.status == "violated", name
        assert len(p.trace) == length, name
        assert p.trace.steps[-1].action == "act" and p.trace.steps[-1].choices == choices, name
    lasts = [s.state["last"] for s in got["few_refusals"].trace.steps]
    assert lasts[:2] == ["none", "refuse"] and lasts[2] != "refuse"     # two separate stretches


@pytest.mark.parametrize("fmt", ["text", "json", "html", "junit", "sarif", "github", "markdown"])
def test_monitor_vars_are_hidden_in_every_format(fmt: str) -> None:
    """A trace shows the user's vars only, in every output format: a monitor is the property's
    bookkeeping, not a var of the machine (docs/reference/spec-language.md, "Property patterns")."""
    from haltproof.reports.formats import FORMATS
    from haltproof.reports.report import to_json
    from haltproof.reports.text import render_text
    runs = check_spec(parse_spec(BRANCHING, "approvals.yaml"), Options(engine="scalar"))
    p = next(p for p in runs[0].properties if p.name == "approval_before_write")
    assert [set(s.state) for s in p.trace.steps] == [{"n", "last"}, {"n", "last"}]
    report = to_json(runs)
    out = render_text(report, verbose=True) if fmt == "text" else FORMATS[fmt](report)
    assert ":monitor" not in out
    assert "last" in out or fmt == "github"       # annotations name no state
@pytest.mark.parametrize("body,message", [
    ("{absence: i, scope: {after: i == 1}}", "test_spec.yaml:12: the predicate of it must be true/false"),
    ("{absence: i == 1, scope: {until: i == 1}}", "test_spec.yaml:12: scope of it must be one of"),
    ("{absence: i == 1, scope: {between: [i == 1]}}", "test_spec.yaml:12: between of it must be a list [Q, R]"),
    ("{precedence: {cause: i == 1}}", "test_spec.yaml:12: precedence of it needs the key 'effect'"),
    ("{bounded_existence: {what: i == 1, at_most: -1}}", "test_spec.yaml:12: at_most of it must be 0 or more"),
    ("{absence: i == 1, always: i == 1}", "test_spec.yaml:12: property it needs exactly one of"),
])
def test_bad_patterns_are_named_errors(body: str, message: str) -> None:
    text = script(["", ""], "X").replace("it: X", f"it: {body}")
    with pytest.raises(SpecError) as err:
        parse_spec(text, "test_spec.yaml")
    assert message in str(err.value)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_pattern_applies_only_where_its_when_holds(engine: str) -> None:
    text = textwrap.dedent("""\
        machine: gated
        params:
          strict: [0, 1]
        vars:
          i: {type: int, min: 0, max: 2, init: 0}
        actions:
          next:
            when: i < 2
            do:
              - set: {i: i + 1}
        terminal:
          when: i == 2
        properties:
          it: {absence: i == 2, when: strict == 1}
        """)
    got = {r.params["strict"]: r for r in check_spec(parse_spec(text, "t.yaml"), Options(engine=engine))}
    assert [p.name for p in got[0].properties if p.name == "it"] == []
    (p,) = [p for p in got[1].properties if p.name == "it"]
    assert p.status == "violated" and len(p.trace) == 2


def test_the_docs_example_is_the_branching_spec() -> None:
    """docs/reference/spec-language.md's pattern example (fenced `yml`: test_docs reads the `yaml` blocks as the
    shipped retry_loop example) is the one whose counterexamples are tested above."""
    from pathlib import Path
    doc = (Path(__file__).parent.parent.parent / "docs" / "reference" / "spec-language.md").read_text()
    section = doc.split("### Property patterns", 1)[1]
    block = section.split("```yml\n", 1)[1].split("```", 1)[0]
    assert block in BRANCHING


@pytest.mark.parametrize("engine", ENGINES)
def test_a_monitor_reading_an_ignored_var_leaves_independence_alone(engine: str) -> None:
    """The monitor is the property's, not the machine's: reading `noise` does not make the
    machine depend on it."""
    text = textwrap.dedent("""\
        machine: indep
        vars:
          step: {type: int, min: 0, max: 3, init: 0}
          noise: {type: bool, init: {one_of: [false, true]}}
        actions:
          tick:
            when: step < 3
            do:
              - set: {step: step + 1}
        terminal:
          when: step == 3
        properties:
          ind: {independent_of: noise}
          quiet: {absence: noise and step == 2}
        """)
    (r,) = check_spec(parse_spec(text, "t.yaml"), Options(engine=engine))
    got = {p.name: p for p in r.properties}
    assert got["ind"].status == "holds", got["ind"].message
    assert got["quiet"].status == "violated" and len(got["quiet"].trace) == 2
