"""Fairness assumptions: what `terminates`, `existence` and `response` count as a bad run
under them, on both engines, agreeing with TLC's WF/SF on the TLA+ twins in
tests/fixtures/fairness/ (their verdicts derived by hand: TLC is not installed here, see
the comments there); how reports name them; and bad input. Semantics: docs/reference/spec-language.md,
"fairness".
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from haltproof.explorer.options import Options
from haltproof.explorer.check import check_spec
from haltproof.machine.errors import SpecError
from haltproof.machine.spec import parse_spec
from haltproof.properties.kinds import HOLDS, VIOLATED

pytestmark = pytest.mark.verdict

ENGINES = ("scalar", "vector")
FIXTURES = Path(__file__).parent.parent / "fixtures" / "fairness"
RETRY = (FIXTURES / "retry.yaml").read_text()
FLAKY = (FIXTURES / "flaky.yaml").read_text()
STRONG_OK = "fairness:\n  - strong: call_tool\n    when: outcome == ok\n"
WEAK_OK = "fairness:\n  - weak: call_tool\n    when: outcome == ok\n"


def run(text: str, engine: str, name: str = "spec.yaml"):
    (r,) = check_spec(parse_spec(text, name), Options(engine=engine))
    assert r.engine == engine
    return r, {p.name: p for p in r.properties}


def tlc_verdicts(tla: Path) -> list[tuple[str, str, str]]:
    """(Spec name, haltproof's fairness list, TLC's verdict) from the module's comments."""
    rows = re.findall(r"^\\\* haltproof: (\w+)\s+fairness: (\[.*?\])\s+TLC \(by hand\): (holds|violated)$",
                      tla.read_text(), re.M)
    assert rows, f"no verdict lines in {tla}"
    return rows


TWINS = [(model, spec, fairness, verdict) for model in ("retry", "flaky")
         for spec, fairness, verdict in tlc_verdicts(FIXTURES / f"{model}.tla")]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("model", "spec", "fairness", "verdict"), TWINS, ids=[f"{m}-{s}" for m, s, _, _ in TWINS])
def test_verdicts_agree_with_tlc_on_the_tla_twins(model: str, spec: str, fairness: str, verdict: str,
                                                  engine: str) -> None:
    text = (FIXTURES / f"{model}.yaml").read_text() + f"fairness: {fairness}\n"
    _, props = run(text, engine, f"{model}.yaml")
    want = HOLDS if verdict == "holds" else VIOLATED
    assert (props["ends"].status, props["finishes"].status) == (want, want), (spec, props["ends"].message)


def test_the_twins_cover_weak_and_strong_holding_and_failing() -> None:
    assert {(re.sub(r"^\[(\{(\w+).*|\])$", r"\2", f), v) for _, _, f, v in TWINS} == {
        ("", "violated"), ("weak", "violated"), ("strong", "violated"), ("weak", "holds"), ("strong", "holds")}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_retry_loop_does_not_terminate_without_fairness(engine: str) -> None:
    r, props = run(RETRY, engine)
    p = props["ends"]
    assert p.status == VIOLATED
    assert p.message == "a cycle of 2 transitions among non-terminal states: the run can go on forever"
    assert p.trace is not None and (p.trace.kind, len(p.trace), p.trace.loop_start) == ("lasso", 3, 1)
    assert [(s.action, s.choices, s.state["status"]) for s in p.trace.steps] == [
        (None, {}, "idle"), ("call_tool", {"outcome": "fail"}, "waiting"), ("observe", {}, "idle"),
        ("call_tool", {"outcome": "fail"}, "waiting")]
    assert p.fairness is None
    assert r.result == "violated"


@pytest.mark.parametrize("engine", ENGINES)
def test_strong_fairness_of_success_proves_the_retry_loop_terminates(engine: str) -> None:
    r, props = run(RETRY + STRONG_OK, engine)
    assert props["ends"].status == HOLDS
    assert props["ends"].message == ("every run reaches a terminal state; "
                                     "under fairness: strong call_tool when outcome == ok")
    assert props["ends"].fairness == ["strong call_tool when outcome == ok"]
    assert props["finishes"].status == HOLDS
    assert props["finishes"].message.endswith("; under fairness: strong call_tool when outcome == ok")
    assert r.result == "proved"


@pytest.mark.parametrize("engine", ENGINES)
def test_weak_fairness_of_success_is_not_enough_for_the_two_step_loop(engine: str) -> None:
    """Success is not enabled continuously (never while the result is looked at): the same
    lasso is fair under weak fairness, and says so."""
    _, props = run(RETRY + WEAK_OK, engine)
    p = props["ends"]
    assert p.status == VIOLATED
    assert p.message == ("a fair cycle of 2 transitions among non-terminal states: the run can go on forever; "
                         "fair under: weak call_tool when outcome == ok")
    assert p.trace is not None and (len(p.trace), p.trace.loop_start) == (3, 1)
    assert [(s.action, s.state["status"], s.state["result"]) for s in p.trace.steps[1:]] == [
        ("call_tool", "waiting", "fail"), ("observe", "idle", "fail"), ("call_tool", "waiting", "fail")]
    q = props["finishes"]
    assert q.status == VIOLATED and q.trace is not None and (len(q.trace), q.trace.loop_start) == (3, 1)
    assert q.message == ("existence violated: a run can cycle forever through 2 transitions and it never holds; "
                         "fair under: weak call_tool when outcome == ok")


@pytest.mark.parametrize("engine", ENGINES)
def test_weak_fairness_is_enough_where_success_stays_enabled(engine: str) -> None:
    _, props = run(FLAKY + WEAK_OK, engine)
    assert props["ends"].status == HOLDS and props["ends"].fairness == ["weak call_tool when outcome == ok"]


@pytest.mark.parametrize("engine", ENGINES)
def test_the_fair_cycle_takes_what_a_weak_assumption_needs(engine: str) -> None:
    """`observe` is enabled all along the loop, so weak fairness of it holds on a cycle only
    if the cycle takes it: the lasso shows observe, where without fairness it spins."""
    text = textwrap.dedent("""\
        machine: spin
        vars:
          s: {type: int, min: 0, max: 2, init: 0}
        actions:
          spin:
            when: s < 2
            do:
              - set: {s: 1 - s}
          observe:
            when: s < 2
            do:
              - set: {s: 1 - s}
          finish:
            when: s == 1
            do:
              - set: {s: 2}
        terminal: s == 2
        properties:
          ends: {terminates: true}
        """)
    for fairness, actions in (("", [None, "spin", "spin"]),
                              ("fairness:\n  - weak: observe\n", [None, "observe", "spin"])):
        _, props = run(text + fairness, engine)
        p = props["ends"]
        assert p.status == VIOLATED and p.trace is not None
        assert ([s.action for s in p.trace.steps], p.trace.loop_start) == (actions, 0)


@pytest.mark.parametrize("engine", ENGINES)
def test_response_under_fairness(engine: str) -> None:
    """Every tool request is answered, if the tool does not fail forever."""
    text = RETRY.replace("  finishes: {existence: status == done}\n",
                         "  answered: {response: {trigger: status == waiting, response: result == ok}}\n")
    _, props = run(text, engine)
    assert props["answered"].status == VIOLATED
    assert props["answered"].trace is not None and props["answered"].trace.kind == "lasso"
    _, props = run(text + STRONG_OK, engine)
    assert props["answered"].status == HOLDS
    assert props["answered"].fairness == ["strong call_tool when outcome == ok"]


def test_a_proof_that_needs_no_fairness_names_none() -> None:
    text = RETRY.replace("          - {name: retry, then: idle}\n", "          - {name: retry, then: done}\n") + STRONG_OK
    _, props = run(text, "scalar")
    assert props["ends"].message == "every run reaches a terminal state"
    assert props["ends"].fairness is None


def test_fairness_does_not_bound_terminates_within_and_says_so() -> None:
    text = RETRY.replace("  ends: {terminates: true}\n", "  ends: {terminates: true}\n  quick: {terminates_within: 4}\n"
                         "  ranked: {variant: \"1 if status == waiting else 0\", bound: 1}\n")
    r, props = run(text + STRONG_OK, "scalar")
    assert props["ends"].status == HOLDS
    assert props["quick"].status == VIOLATED         # a fair run may still fail as often as it likes
    assert props["ranked"].status == VIOLATED
    assert r.warnings == ["property quick (terminates_within) is judged over every run, fair or not: "
                          "fairness does not bound how long a run takes",
                          "property ranked (variant) is judged over every run, fair or not: "
                          "fairness does not bound how long a run takes"]
    r, _ = run(text, "scalar")
    assert r.warnings == []


def test_every_output_format_names_the_assumptions(tmp_path: Path) -> None:
    spec = tmp_path / "retry.yaml"
    spec.write_text(RETRY + STRONG_OK)
    out = subprocess.run([sys.executable, "-m", "haltproof", "check", str(spec), "--format", "json"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    props = {p["name"]: p for p in json.loads(out.stdout)["runs"][0]["properties"]}
    assert props["ends"]["fairness"] == ["strong call_tool when outcome == ok"]
    assert "fairness" not in props["domains"]
    for fmt in ("text", "verbose", "sarif", "junit", "github", "markdown", "html"):
        flag = ["--verbose"] if fmt == "verbose" else ["--format", fmt]
        out = subprocess.run([sys.executable, "-m", "haltproof", "check", str(spec), *flag],
                             capture_output=True, text=True, cwd=tmp_path)
        assert out.returncode == 0, (fmt, out.stderr)
        shown = out.stdout.replace("call\\_tool", "call_tool")      # markdown escapes the underscore
        assert "under fairness: strong call_tool when outcome == ok" in shown, fmt


BAD = [
    ("fairness: {weak: call_tool}\n", 26, "fairness must be a list of assumptions"),
    ("fairness:\n  - weak: call\n", 27, "fairness names an action the spec does not declare "
                                        "(actions: call_tool, observe): 'call'"),
    ("fairness:\n  - {weak: call_tool, strong: call_tool}\n", 27,
     "a fairness assumption needs exactly one of: weak, strong (naming an action)"),
    ("fairness:\n  - {fair: call_tool}\n", 27, "a fairness assumption needs exactly one of: weak, strong"),
    ("fairness:\n  - {weak: call_tool, if: true}\n", 27, "unknown key in a fairness assumption (allowed: weak, when): 'if'"),
    ("fairness:\n  - strong: observe\n    when: outcome == ok\n", 28, "outcome"),
    ("fairness:\n  - strong: call_tool\n    when: outcome\n", 28, "the when of fairness for call_tool"),
    ("fairness:\n  - strong: call_tool\n    when: nosuch == 1\n", 28, "nosuch"),
]


@pytest.mark.parametrize(("tail", "line", "message"), BAD, ids=[str(k) for k in range(len(BAD))])
def test_bad_fairness_is_an_error_at_its_line(tail: str, line: int, message: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_spec(RETRY + tail, "retry.yaml")
    assert f"retry.yaml:{line}: " in str(err.value)
    assert message in str(err.value)


def test_bad_fairness_exits_2_without_a_traceback(tmp_path: Path) -> None:
    spec = tmp_path / "retry.yaml"
    spec.write_text(RETRY + "fairness:\n  - weak: call\n")
    out = subprocess.run([sys.executable, "-m", "haltproof", "check", str(spec)], capture_output=True, text=True,
                         cwd=tmp_path)
    assert out.returncode == 2
    assert "retry.yaml:27: fairness names an action the spec does not declare" in out.stderr
    assert "Traceback" not in out.stderr and out.stdout == ""


@pytest.mark.parametrize("engine", ENGINES)
def test_strong_fairness_removes_only_the_states_where_it_is_enabled(engine: str) -> None:
    """The Emerson-Lei refinement: success is possible only at s == 0; a run that leaves s == 0
    for good and shuttles between 1 and 2 honours strong fairness (success enabled finitely
    often) and never ends. Dropping the whole strongly connected set would prove it: a false
    "holds"."""
    text = textwrap.dedent("""\
        machine: wander
        vars:
          s: {type: int, min: 0, max: 3, init: 0}
        actions:
          call_tool:
            when: s == 0
            choose:
              outcome: [ok, fail]
            do:
              - decide: s
                rules:
                  - {name: succeeded, when: outcome == ok, then: 3}
                  - {name: failed, then: 1}
          to_c:
            when: s == 1
            do:
              - set: {s: 2}
          to_a:
            when: s == 1
            do:
              - set: {s: 0}
          back:
            when: s == 2
            do:
              - set: {s: 1}
        terminal: s == 3
        properties:
          ends: {terminates: true}
        """) + STRONG_OK
    _, props = run(text, engine)
    p = props["ends"]
    assert p.status == VIOLATED, p.message
    assert p.trace is not None and p.trace.loop_start == 1
    assert [(s.action, s.state["s"]) for s in p.trace.steps] == [(None, 0), ("call_tool", 1), ("to_c", 2),
                                                                 ("back", 1)]
    assert p.message.endswith("fair under: strong call_tool when outcome == ok")


@pytest.mark.parametrize("engine", ENGINES)
def test_a_weak_assumption_s_cycle_passes_where_it_is_disabled(engine: str) -> None:
    """`finish` is never taken inside the loop and is disabled only at s == 2: the shortest
    cycle (0, 1, 0) keeps it enabled throughout and is not fair; the lasso must go round
    through s == 2 (a shorter, unfair lasso would be a false counterexample)."""
    text = textwrap.dedent("""\
        machine: detour
        vars:
          s: {type: int, min: 0, max: 4, init: 0}
        actions:
          to_t:
            when: s == 0
            do:
              - set: {s: 1}
          to_u:
            when: s == 0
            do:
              - set: {s: 2}
          t_back:
            when: s == 1
            do:
              - set: {s: 0}
          u_next:
            when: s == 2
            do:
              - set: {s: 3}
          v_back:
            when: s == 3
            do:
              - set: {s: 0}
          finish:
            when: s != 2
            do:
              - set: {s: 4}
        terminal: s == 4
        properties:
          ends: {terminates: true}
        fairness:
          - weak: finish
        """)
    _, props = run(text, engine)
    p = props["ends"]
    assert p.status == VIOLATED and p.trace is not None
    assert ([s.action for s in p.trace.steps], p.trace.loop_start) == ([None, "to_u", "u_next", "v_back"], 0)


def test_the_vector_engine_keeps_its_edges_for_a_liveness_pattern(monkeypatch: pytest.MonkeyPatch) -> None:
    """A forward graph's edges may be dropped past a size; a liveness pattern needs every end
    state, so check keeps them (here past a lowered limit, to keep the test small)."""
    from haltproof.explorer import vengine
    monkeypatch.setattr(vengine, "KEEP_EDGES_BELOW", 3)
    text = textwrap.dedent("""\
        machine: counter
        vars:
          i: {type: int, min: 0, max: 10, init: 0}
          dead: {type: bool, init: false}
        actions:
          inc:
            when: i < 10 and not dead
            do:
              - set: {i: i + 1}
          stall:
            when: i == 5 and not dead
            do:
              - set: {i: i + 1, dead: true}
        terminal: i == 10
        properties:
          done: {existence: i == 10}
        """)
    _, props = run(text, "vector")
    p = props["done"]
    assert p.status == VIOLATED and p.trace is not None
    assert (len(p.trace), p.trace.steps[-1].action, p.trace.steps[-1].state) == (6, "stall", {
        "i": 6, "dead": True})          # the monitor is hidden


def test_a_deadlock_or_an_end_relies_on_no_fairness() -> None:
    """Finite bad runs are fair whatever is assumed: their findings name no assumption, even
    where the graph also has a cycle that fairness excuses (a hung call is a deadlock)."""
    text = RETRY.replace("outcome: [ok, fail]", "outcome: [ok, fail, hang]")
    text = text.replace("values: [none, ok, fail]", "values: [none, ok, fail, hang]")
    text = text.replace("    when: status == waiting\n", "    when: status == waiting and result != hang\n")
    _, props = run(text + STRONG_OK, "scalar")
    assert props["ends"].status == VIOLATED and props["ends"].message.startswith("deadlock")
    assert props["finishes"].status == VIOLATED and props["finishes"].trace is not None
    assert props["finishes"].trace.kind == "path"
    assert props["ends"].fairness is None and props["finishes"].fairness is None
