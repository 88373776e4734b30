"""Liveness patterns (existence, response) in every scope, on both engines: one run where each
holds and one where it breaks, down to the exact bad maximal run. Semantics:
docs/reference/spec-language.md, "Liveness patterns".

A *script* machine walks states 0..n-1 in order; a letter set per state says which of P, Q,
R, S hold there (response: P is the trigger, S the response). The run either ends in state
n-1 (terminal) or, with `loop`, goes from state n-1 back to state `loop` forever. A finite
bad run is the whole run (its trace has n-1 transitions); a lasso is given by its prefix
length (`loop_start`) and its cycle length, the monitor's phase telling apart the first
pass through the script's loop from the later ones.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from haltproof.explorer.options import Options
from haltproof.explorer.check import check_spec
from haltproof.machine.spec import parse_spec
from haltproof.properties.kinds import HOLDS, VIOLATED

pytestmark = pytest.mark.verdict

ENGINES = ("scalar", "vector")
ROOT = Path(__file__).parent.parent.parent
DOC = (ROOT / "docs" / "reference" / "spec-language.md").read_text()
EXAMPLE = ROOT / "docs" / "examples" / "agent_liveness.yaml"


def script(states: list[str], prop: str, loop: int | None = None) -> str:
    """The machine whose one maximal run visits states 0..n-1 (then, with `loop`, cycles back)."""
    def holds(letter: str) -> str:
        at = [f"i == {k}" for k, letters in enumerate(states) if letter in letters]
        return " or ".join(at) or "False"
    preds = {x: holds(x) for x in "PQRS"}
    body = prop.format(**{x: f"'{v}'" for x, v in preds.items()})
    last = len(states) - 1
    back = f"""
          back:
            when: i == {last}
            do:
              - set: {{i: {loop}}}""" if loop is not None else ""
    end = "" if loop is not None else f"terminal:\n  when: i == {last}\n"
    return textwrap.dedent(f"""\
        machine: script
        vars:
          i: {{type: int, min: 0, max: {last}, init: 0}}
        actions:
          next:
            when: i < {last}
            do:
              - set: {{i: i + 1}}{back}
        """) + end + textwrap.dedent(f"""\
        properties:
          it: {body}
        """)


def judge(states: list[str], prop: str, engine: str, loop: int | None = None):
    spec = parse_spec(script(states, prop, loop), "test_spec.yaml")
    (r,) = check_spec(spec, Options(engine=engine))
    assert r.engine == engine
    (p,) = [p for p in r.properties if p.name == "it"]
    return p


EXISTENCE = {
    "global": "{{existence: {P}}}",
    "before": "{{existence: {P}, scope: {{before: {R}}}}}",
    "after": "{{existence: {P}, scope: {{after: {Q}}}}}",
    "between": "{{existence: {P}, scope: {{between: [{Q}, {R}]}}}}",
    "after_until": "{{existence: {P}, scope: {{after: {Q}, until: {R}}}}}",
}
RESPONSE = {k: v.replace("existence: {P}", "response: {{trigger: {P}, response: {S}}}")
            for k, v in EXISTENCE.items()}

# (pattern, scope, run, loop, expected): None when it holds, else (transitions in the trace,
# loop_start or None for a finite run, the script state the trace ends in)
CASES = [
    (EXISTENCE, "global", ["", "P", ""], None, None),
    (EXISTENCE, "global", ["", "", ""], None, (2, None, 2)),            # ends without P
    (EXISTENCE, "global", ["", ""], 0, (2, 0, 0)),                     # cycles without P
    (EXISTENCE, "global", ["", "P"], 0, None),
    (EXISTENCE, "before", ["", "P", "R"], None, None),
    (EXISTENCE, "before", ["", "", ""], None, None),                   # no R: nothing owed
    (EXISTENCE, "before", ["", "R", ""], None, (2, None, 2)),          # R came first
    (EXISTENCE, "before", ["", "PR", ""], None, (2, None, 2)),         # P at R itself is too late
    (EXISTENCE, "before", ["", "R"], 0, (4, 2, 0)),                    # broken, then cycling on
    (EXISTENCE, "after", ["", "Q", "P"], None, None),
    (EXISTENCE, "after", ["", "PQ", ""], None, None),                  # the Q state itself is in scope
    (EXISTENCE, "after", ["", "", ""], None, None),                    # no Q: nothing owed
    (EXISTENCE, "after", ["P", "Q", ""], None, (2, None, 2)),          # P before Q does not count
    (EXISTENCE, "after", ["", "Q", ""], 1, (4, 2, 2)),            # owed from the first pass on
    (EXISTENCE, "between", ["", "Q", "P", "R"], None, None),
    (EXISTENCE, "between", ["", "Q", "", ""], None, None),             # no R: nothing owed
    (EXISTENCE, "between", ["", "Q", "", "R"], None, (3, None, 3)),
    (EXISTENCE, "between", ["Q", "P", "Q", "R"], None, (3, None, 3)),  # each Q starts anew
    (EXISTENCE, "between", ["Q", "R"], 0, (4, 2, 0)),               # broken at R, then cycling
    (EXISTENCE, "after_until", ["", "Q", "P", "R"], None, None),
    (EXISTENCE, "after_until", ["", "", ""], None, None),
    (EXISTENCE, "after_until", ["", "Q", ""], None, (2, None, 2)),     # no R, and no P either
    (EXISTENCE, "after_until", ["", "Q", "R"], None, (2, None, 2)),
    (EXISTENCE, "after_until", ["", "Q", ""], 2, (3, 2, 2)),       # owed, then a self-loop
    (RESPONSE, "global", ["", "P", "S"], None, None),
    (RESPONSE, "global", ["", "PS", ""], None, None),                  # answered in the same state
    (RESPONSE, "global", ["", "P", ""], None, (2, None, 2)),
    (RESPONSE, "global", ["S", "P", ""], None, (2, None, 2)),          # an answer before does not count
    (RESPONSE, "global", ["P", "S"], 0, None),                         # every trigger answered, forever
    (RESPONSE, "global", ["P", ""], 0, (3, 1, 1)),                 # owed from state 1 on
    (RESPONSE, "before", ["P", "S", "R"], None, None),
    (RESPONSE, "before", ["P", "", ""], None, None),                   # no R: nothing owed
    (RESPONSE, "before", ["", "PR", ""], None, None),                  # a trigger at R is out of scope
    (RESPONSE, "before", ["P", "", "R"], None, (2, None, 2)),
    (RESPONSE, "before", ["P", "SR"], None, (1, None, 1)),             # an answer at R is too late
    (RESPONSE, "after", ["P", "Q", ""], None, None),                   # a trigger before Q is out of scope
    (RESPONSE, "after", ["", "PQ", "S"], None, None),
    (RESPONSE, "after", ["", "Q", "P"], None, (2, None, 2)),
    (RESPONSE, "after", ["Q", "P", ""], 1, (4, 2, 2)),
    (RESPONSE, "between", ["", "PQ", "S", "R"], None, None),
    (RESPONSE, "between", ["", "PQ", "", ""], None, None),             # no R: nothing owed
    (RESPONSE, "between", ["P", "", "R"], None, None),                 # no Q: nothing owed
    (RESPONSE, "between", ["", "PQ", "", "R"], None, (3, None, 3)),
    (RESPONSE, "between", ["PQ", "R"], 0, (4, 2, 0)),
    (RESPONSE, "after_until", ["", "PQ", "S", "R"], None, None),
    (RESPONSE, "after_until", ["P", "Q", "R"], None, None),
    (RESPONSE, "after_until", ["", "PQ", "", ""], None, (3, None, 3)),  # no R: still owed
    (RESPONSE, "after_until", ["", "PQ", "R", ""], None, (3, None, 3)),  # R came first
    (RESPONSE, "after_until", ["PQ", ""], 1, (2, 1, 1)),
]


def _case_id(case: tuple) -> str:
    pattern, scope, run, loop, want = case
    kind = "existence" if pattern is EXISTENCE else "response"
    return f"{kind}-{scope}-{'.'.join(x or '_' for x in run)}" + (f"-loop{loop}" if loop is not None else "") \
        + ("-holds" if want is None else "-fails")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_liveness_pattern(case: tuple, engine: str) -> None:
    pattern, scope, run, loop, want = case
    p = judge(run, pattern[scope], engine, loop)
    kind = "existence" if pattern is EXISTENCE else "response"
    assert p.kind == kind
    if want is None:
        assert p.status == HOLDS, p.message
        assert p.trace is None
        return
    length, loop_start, last = want
    assert p.status == VIOLATED, p.message
    assert p.trace is not None
    assert (len(p.trace), p.trace.loop_start, p.trace.steps[-1].state["i"]) == (length, loop_start, last)
    assert p.trace.kind == ("path" if loop_start is None else "lasso")
    if loop_start is None:
        assert f"violated: a run ends after {length} transition" in p.message
    else:
        cycle = length - loop_start
        assert f"violated: a run can cycle forever through {cycle} transition" in p.message
        assert p.trace.steps[loop_start].state == p.trace.steps[-1].state      # it really loops


def test_every_pattern_and_scope_has_a_holding_and_a_failing_case() -> None:
    seen = {(id(c[0]), c[1], c[4] is None) for c in CASES}
    for pattern in (EXISTENCE, RESPONSE):
        for scope in pattern:
            assert {(id(pattern), scope, True), (id(pattern), scope, False)} <= seen, scope


def test_a_finite_bad_run_comes_before_a_lasso() -> None:
    """Two ways to break `existence`: end at once, or cycle. The shortest finite one is shown."""
    text = textwrap.dedent("""\
        machine: fork
        vars:
          i: {type: int, min: 0, max: 3, init: 0}
        actions:
          spin:
            when: i < 2
            do:
              - set: {i: 1 - i}
          stop:
            when: i == 1
            do:
              - set: {i: 3}
        terminal:
          when: i == 3
        properties:
          it: {existence: i == 2}
        """)
    for engine in ENGINES:
        (r,) = check_spec(parse_spec(text, "fork.yaml"), Options(engine=engine))
        (p,) = [p for p in r.properties if p.name == "it"]
        assert p.status == VIOLATED and p.trace is not None
        assert (p.trace.kind, len(p.trace), p.trace.steps[-1].action) == ("path", 2, "stop")


@pytest.mark.parametrize("engine", ENGINES)
def test_a_holding_liveness_pattern_says_what_its_monitor_cost(engine: str) -> None:
    p = judge(["", "P", ""], EXISTENCE["global"], engine)
    assert p.message == ("in its scope, every maximal run reaches a state that satisfies it; "
                         "the pattern monitors added 0 of the 3 states explored")
    (r,) = check_spec(parse_spec(EXAMPLE.read_text(), str(EXAMPLE)), Options(engine=engine))
    (p,) = [p for p in r.properties if p.name == "decides"]
    assert p.message.endswith("; the pattern monitors added 10 of the 16 states explored")



def test_the_docs_example_is_the_shipped_agent_loop() -> None:
    section = DOC.split("### Liveness patterns", 1)[1].split("## fairness", 1)[0]
    block = section.split("```yml\n", 1)[1].split("```", 1)[0]
    assert block in EXAMPLE.read_text()


@pytest.mark.parametrize("engine", ENGINES)
def test_the_docs_verdicts_of_the_agent_loop(engine: str) -> None:
    """The verdict table of docs/reference/spec-language.md, and what fairness changes, as checked."""
    section = DOC.split("### Liveness patterns", 1)[1].split("## fairness", 1)[0]
    table = dict(re.findall(r"^\| `(\w+)` \| (holds|violated: lasso|violated: a run that ends after \d+ transitions) \|",
                            section, re.M))
    assert len(table) == 12
    text = EXAMPLE.read_text()
    (r,) = check_spec(parse_spec(text, str(EXAMPLE)), Options(engine=engine))
    got = {}
    for p in r.properties:
        if p.kind in ("existence", "response"):
            if p.status == HOLDS:
                got[p.name] = "holds"
            else:
                assert p.status == VIOLATED and p.trace is not None
                got[p.name] = ("violated: lasso" if p.trace.kind == "lasso"
                               else f"violated: a run that ends after {len(p.trace)} transitions")
    assert got == table
    fair = "fairness:\n  - strong: tool_result\n    when: outcome == ok\n"
    (r,) = check_spec(parse_spec(text + fair, str(EXAMPLE)), Options(engine=engine))
    flipped = {p.name for p in r.properties if p.fairness and p.status == HOLDS}
    assert flipped == {"finishes", "finishes_once_it_asked", "questions_resolved", "calls_finish_once_it_asked"}
    assert {p.name for p in r.properties if p.status == VIOLATED} == {"asks_at_the_limit", "calls_settle_at_the_limit"}
    assert all(p.message.endswith("; under fairness: strong tool_result when outcome == ok")
               for p in r.properties if p.name in flipped)


def test_the_fairness_docs_command(tmp_path: Path) -> None:
    section = DOC.split("## fairness", 1)[1].split("\n## ", 1)[0]
    (command,) = re.findall(r"```bash\n(.*?)```", section, re.S)
    line, _, comment = command.strip().partition("  # ")
    assert comment == "violated (exit 1)"
    ran = subprocess.run([sys.executable, "-m", "haltproof", *shlex.split(line)[1:]], cwd=ROOT,
                         capture_output=True, text=True)
    assert ran.returncode == 1, ran.stderr
    spec = tmp_path / "retry.yaml"
    spec.write_text((ROOT / "tests" / "fixtures" / "fairness" / "retry.yaml").read_text()
                    + "fairness: [{strong: call_tool, when: outcome == ok}]\n")
    ran = subprocess.run([sys.executable, "-m", "haltproof", "check", str(spec), "--verbose"], capture_output=True,
                         text=True)
    assert ran.returncode == 0
    assert re.search(r"holds +ends +every run reaches a terminal state; under fairness: strong call_tool when "
                     r"outcome == ok\n", ran.stdout)
    assert "bounds: transitions unbounded: a run can cycle forever" in ran.stdout


@pytest.mark.parametrize("engine", ENGINES)
def test_a_partial_exploration_proves_nothing_but_its_bad_runs_are_real(engine: str) -> None:
    """Stopped at 8 states: no pattern holds (a bad run may lie beyond), while the two runs
    that end badly within the explored part are reported, exactly as in the full check."""
    (r,) = check_spec(parse_spec(EXAMPLE.read_text(), str(EXAMPLE)), Options(engine=engine, max_states=8))
    props = {p.name: p for p in r.properties if p.kind in ("existence", "response")}
    bad = {n: len(p.trace) for n, p in props.items() if p.status == VIOLATED and p.trace is not None}
    assert bad == {"asks_at_the_limit": 4, "calls_settle_at_the_limit": 4}
    assert {p.status for n, p in props.items() if n not in bad} == {"unknown"}
    assert props["decides"].message == "not decided: the exploration stopped at --max-states"


def test_an_emitted_regression_test_judges_a_liveness_finding() -> None:
    """--emit-tests replays a liveness pattern's bad run: still broken while it still ends (or
    cycles) with the obligation open, fixed once it does not."""
    from haltproof.explorer.regress import machine_for, still_violated
    from haltproof.machine.spec import load_spec
    text = EXAMPLE.read_text()
    (r,) = check_spec(parse_spec(text, str(EXAMPLE)), Options(engine="scalar"))
    props = {p.name: p for p in r.properties}
    m = machine_for(load_spec(EXAMPLE), r.params)
    for name, kind in (("asks_at_the_limit", "path"), ("finishes", "lasso")):
        trace = props[name].trace
        assert trace is not None and trace.kind == kind
        broken, why = still_violated(m, name, trace.to_json(r.params))
        assert broken is True, why
        assert why.startswith("the recorded counterexample still breaks it: the run still ")
    fixed_spec = parse_spec(text.replace("response: {trigger: fails == MAX_FAILS, response: status == needs_input}",
                                         "response: {trigger: fails == MAX_FAILS, response: status != thinking}"),
                            str(EXAMPLE))
    from haltproof.machine.compiled import CompiledSpec
    fixed = CompiledSpec(fixed_spec).instantiate(r.params)
    trace = props["asks_at_the_limit"].trace
    assert trace is not None
    assert still_violated(fixed, "asks_at_the_limit", trace.to_json(r.params)) == (
        False, "the run now ends with the obligation met")
