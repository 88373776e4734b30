"""Agent trees (`agents:` and `run:`, machine/compose.py): a parent runs sub-agent specs to their
end; the tree is one machine whose traces nest the sub-agents' steps. Bad composition is exit 2
at the file and line; a tree is judged the same by both engines."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from haltproof.machine.compose import running_call
from haltproof.machine.spec import SpecError, load_spec

ENGINES = ["scalar", "vector"]

HELPER = """\
machine: helper
params:
  limit: {min: 1, max: 5}
vars:
  turn: {type: int, min: 0, max: limit, init: 0}
  used: {type: int, min: 0, max: 10, init: 0}
  done: {type: bool, init: false}
actions:
  call:
    when: not done and turn < limit
    choose:
      enough: [stop, more]
    do:
      - set: {turn: turn + 1, used: used + 1, done: enough == stop}
terminal: done or turn >= limit
measures:
  model_calls: {count: action == call}
"""

PARENT = """\
machine: orchestrator
params:
  max_turns: [2]
vars:
  turn: {type: int, min: 0, max: max_turns, init: 0}
  model_calls: {type: int, min: 0, max: 10, init: 0}
agents:
  helper:
    spec: helper.yaml
    params: {limit: 3}
    shared: {used: model_calls}
actions:
  ask:
    when: turn < max_turns
    run: helper
    do:
      - set: {turn: turn + 1, model_calls: model_calls + 1}
terminal: turn >= max_turns
measures:
  model_calls: {count: action == ask}
properties:
  at_most_4_calls:
    maximum: model_calls
    at_most: 4
"""


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    """Paths in messages are shown relative to the working directory: make it the specs' folder."""
    monkeypatch.chdir(tmp_path)


def write(tmp_path: Path, **files: str) -> Path:
    for name, text in files.items():
        (tmp_path / f"{name}.yaml").write_text(textwrap.dedent(text))
    return tmp_path / f"{next(iter(files))}.yaml"


def problems(path: Path) -> list[str]:
    with pytest.raises(SpecError) as err:
        load_spec(path)
    return [f"{Path(p.file).name}:{p.line}: {p.message}" for p in err.value.problems]


# -- a tree that breaks and one that holds

@pytest.mark.verdict
@pytest.mark.parametrize("engine", ENGINES)
def test_a_child_limit_that_ignores_the_parents_budget_is_caught_with_the_shortest_nested_trace(
        cli, tmp_path, engine):
    spec = write(tmp_path, parent=PARENT, helper=HELPER)
    r = cli("check", spec, "--engine", engine, "--verbose")
    assert r.code == 1
    block = r.out[r.out.index("  VIOLATED  at_most_4_calls"):].splitlines()
    assert block[:10] == [
        "  VIOLATED  at_most_4_calls  reaches 5, more than at_most 4, after 7 transitions (the highest is 8, "
        "first reached after 10 transitions)",
        "      step  action         choices      rule  state (changes)",
        "      0     (initial)                         turn=0 model_calls=0 helper.turn=0 helper.done=false calling=top",
        "      1     ask                               calling=ask",
        "      2       helper.call  enough=stop        model_calls=1 helper.turn=1 helper.done=true",
        "      3     ask.return                        turn=1 model_calls=2 helper.turn=0 helper.done=false calling=top",
        "      4     ask                               calling=ask",
        "      5       helper.call  enough=more        model_calls=3 helper.turn=1",
        "      6       helper.call  enough=stop        model_calls=4 helper.turn=2 helper.done=true",
        "      7     ask.return                        turn=2 model_calls=5 helper.turn=0 helper.done=false calling=top",
    ]
    assert "  bounds: transitions at most 10, model_calls at most 8" in block
    steps = cli("check", spec, "--engine", engine, "--format", "json").json()["runs"][0]["properties"]
    trace = next(p for p in steps if p["name"] == "at_most_4_calls")["trace"]["steps"]
    assert [(s["action"], s.get("depth")) for s in trace] == [
        (None, None), ("ask", None), ("helper.call", 1), ("ask.return", None), ("ask", None), ("helper.call", 1),
        ("helper.call", 1), ("ask.return", None)]


@pytest.mark.verdict
@pytest.mark.parametrize("engine", ENGINES)
def test_a_child_that_spends_the_shared_budget_keeps_the_tree_within_it(cli, tmp_path, engine):
    helper = HELPER.replace("when: not done and turn < limit", "when: not done and turn < limit and used < budget") \
        .replace("  limit: {min: 1, max: 5}\n", "  limit: {min: 1, max: 5}\n  budget: {min: 1, max: 10}\n") \
        .replace("terminal: done or turn >= limit", "terminal: done or turn >= limit or used >= budget")
    parent = PARENT.replace("params: {limit: 3}", "params: {limit: 3, budget: 3}") \
        .replace("when: turn < max_turns", "when: turn < max_turns and model_calls < 3")
    parent = parent.replace("terminal: turn >= max_turns", "terminal: turn >= max_turns or model_calls >= 3")
    spec = write(tmp_path, parent=parent, helper=helper)
    r = cli("check", spec, "--engine", engine, "--format", "json")
    assert r.code == 0, r.out
    run = r.json()["runs"][0]
    prop = next(p for p in run["properties"] if p["name"] == "at_most_4_calls")
    assert prop["maximum"]["value"] == 4 and prop["status"] == "holds"
    assert run["bounds"]["model_calls"]["value"] == 4      # the helper's calls and the parent's, added up


@pytest.mark.verdict
@pytest.mark.parametrize("engine", ENGINES)
def test_a_deadlock_inside_a_sub_agent_is_the_parents_call_without_an_end(cli, tmp_path, engine):
    stuck = HELPER.replace("terminal: done or turn >= limit", "terminal: done")   # out of turns: stuck
    parent = PARENT + "  stops:\n    terminates: true\n"
    spec = write(tmp_path, parent=parent, helper=stuck)
    r = cli("check", spec, "--engine", engine, "--property", "stops")
    assert r.code == 1
    finding = ("VIOLATED  stops  deadlock: a non-terminal state with no enabled action, inside sub-agent helper, run "
               "by ask: that call never returns\n")
    assert finding in r.out
    assert r.out.split(finding)[1].splitlines()[:6] == [
        "      step  action         choices      rule  state (changes)",
        "      0     (initial)                         turn=0 model_calls=0 helper.turn=0 helper.done=false calling=top",
        "      1     ask                               calling=ask",
        "      2       helper.call  enough=more        model_calls=1 helper.turn=1",
        "      3       helper.call  enough=more        model_calls=2 helper.turn=2",
        "      4       helper.call  enough=more        model_calls=3 helper.turn=3",
    ]


@pytest.mark.verdict
def test_a_sub_agent_that_runs_its_own_sub_agent_nests_two_deep(cli, tmp_path):
    middle = """\
    machine: middle
    vars:
      asked: {type: bool, init: false}
      used: {type: int, min: 0, max: 10, init: 0}
    agents:
      helper:
        spec: helper.yaml
        params: {limit: 1}
        shared: {used: used}
    actions:
      delegate:
        when: not asked
        run: helper
        do:
          - set: {asked: true}
    terminal: asked
    """
    parent = PARENT.replace("spec: helper.yaml\n    params: {limit: 3}", "spec: middle.yaml") \
        .replace("agents:\n  helper:", "agents:\n  mid:").replace("run: helper", "run: mid")
    spec = write(tmp_path, parent=parent, middle=middle, helper=HELPER)
    r = cli("check", spec, "--format", "json")
    assert r.code == 0, r.out
    prop = next(p for p in r.json()["runs"][0]["properties"] if p["name"] == "at_most_4_calls")
    assert prop["maximum"]["value"] == 4
    steps = prop["witness"]["steps"]
    assert [(s["action"], s.get("depth")) for s in steps][:5] == [
        (None, None), ("ask", None), ("mid.delegate", 1), ("mid.helper.call", 2), ("mid.delegate.return", 1)]
    tree = load_spec(spec)
    assert running_call(tree, {"calling": "ask", "mid.calling": "delegate"}) == "sub-agent mid.helper, run by mid.delegate"
    assert running_call(tree, {"calling": "ask", "mid.calling": "top"}) == "sub-agent mid, run by ask"
    assert running_call(tree, {"calling": "top", "mid.calling": "top"}) is None


# -- bad composition: exit 2 at the file and line

def test_a_missing_sub_spec_is_named_at_its_line(tmp_path):
    spec = write(tmp_path, parent=PARENT)
    assert problems(spec) == ["parent.yaml:9: sub-agent helper: no spec file helper.yaml"]


def test_a_cycle_of_sub_agents_is_refused(tmp_path):
    a = "machine: a\nvars:\n  x: {type: bool, init: false}\nagents:\n  b: b.yaml\nactions:\n  go:\n    run: b\n"
    b = "machine: b\nvars:\n  y: {type: bool, init: false}\nagents:\n  a: a.yaml\nactions:\n  go:\n    run: a\n"
    spec = write(tmp_path, a=a, b=b)
    assert problems(spec) == [
        "b.yaml:5: sub-agent a makes a cycle of sub-agents (a.yaml -> b.yaml -> a.yaml): an agent that runs "
        "itself needs a depth bound: give sub-agent a depth: N (an int, or an int param of this spec), the most "
        "copies of a.yaml that may run nested inside its outermost run"]


def test_an_agent_that_runs_itself_is_refused(tmp_path):
    me = "machine: me\nvars:\n  x: {type: bool, init: false}\nagents:\n  me: me.yaml\nactions:\n  go:\n    run: me\n"
    spec = write(tmp_path, me=me)
    assert problems(spec) == [
        "me.yaml:5: sub-agent me makes a cycle of sub-agents (me.yaml -> me.yaml): an agent that runs itself "
        "needs a depth bound: give sub-agent me depth: N (an int, or an int param of this spec), the most copies "
        "of me.yaml that may run nested inside its outermost run"]


def test_a_shared_var_of_another_type_is_refused(tmp_path):
    parent = PARENT.replace("model_calls: {type: int, min: 0, max: 10, init: 0}",
                            "model_calls: {type: int, min: 0, max: 10, init: 0}\n  flag: {type: bool, init: false}") \
        .replace("shared: {used: model_calls}", "shared: {used: flag}")
    spec = write(tmp_path, parent=parent, helper=HELPER)
    assert problems(spec) == ["parent.yaml:12: shared var used of sub-agent helper is an int (helper.yaml:6) "
                              "but flag is a bool here: a shared var has one type"]


def test_a_shared_var_of_another_range_is_refused_before_exploring(cli, tmp_path):
    parent = PARENT.replace("model_calls: {type: int, min: 0, max: 10, init: 0}",
                            "model_calls: {type: int, min: 0, max: 12, init: 0}")
    spec = write(tmp_path, parent=parent, helper=HELPER)
    r = cli("check", spec)
    assert r.code == 2
    assert r.err.strip() == ("error: parent.yaml:8: shared var used of sub-agent helper has the range 0..10 there but "
                             "model_calls has 0..12 here: a shared var has one range (with max_turns=2)")


def test_a_param_of_the_child_not_bound_is_refused(tmp_path):
    spec = write(tmp_path, parent=PARENT.replace("    params: {limit: 3}\n", ""), helper=HELPER)
    assert problems(spec) == ["parent.yaml:8: param limit of sub-agent helper (helper.yaml:3) is not bound: give it "
                              "under params: of sub-agent helper, as an expression over this spec's params"]


def test_a_bound_param_the_child_does_not_allow_is_refused(cli, tmp_path):
    spec = write(tmp_path, parent=PARENT.replace("params: {limit: 3}", "params: {limit: max_turns + 7}"),
                 helper=HELPER)
    r = cli("check", spec)
    assert r.code == 2
    assert r.err.strip() == ("error: parent.yaml:8: param limit of sub-agent helper is bound to max_turns + 7 = 9, which "
                             "helper.yaml does not allow (1..5) (with max_turns=2)")


def test_run_of_an_undeclared_sub_agent_and_run_with_choices_are_refused(tmp_path):
    parent = PARENT.replace("run: helper", "run: helpr")
    spec = write(tmp_path, parent=parent, helper=HELPER)
    assert problems(spec) == ["parent.yaml:8: sub-agent helper is declared but no action runs it (run: helper)"]
    parent = PARENT.replace("run: helper", "run: helper\n    choose:\n      x: [a, b]")
    spec = write(tmp_path, parent=parent, helper=HELPER)
    assert problems(spec) == ["parent.yaml:16: action ask runs sub-agent helper and makes choices: its do: runs "
                              "when the sub-agent has ended, so make the choices in an action of their own"]


def test_a_sub_agents_own_mistake_is_named_in_its_own_file(tmp_path):
    spec = write(tmp_path, parent=PARENT, helper=HELPER.replace("used + 1", "usd + 1"))
    assert [p.split(": ")[0] for p in problems(spec)] == ["helper.yaml:14"]


# -- the nested steps in every trace format

def nested_trace(cli, tmp_path: Path) -> dict:
    spec = write(tmp_path, parent=PARENT, helper=HELPER)
    props = cli("check", spec, "--format", "json").json()["runs"][0]["properties"]
    return next(p for p in props if p["name"] == "at_most_4_calls")["trace"]


def test_itf_keeps_the_depth_of_nested_steps(cli, tmp_path):
    from haltproof.explorer.itf import itf_to_trace, trace_to_itf
    trace = nested_trace(cli, tmp_path)
    itf = trace_to_itf(trace)
    assert [s["#meta"].get("depth") for s in itf["states"]] == [None, None, 1, None, None, 1, 1, None]
    assert itf_to_trace(itf)["steps"] == trace["steps"]


def test_html_indents_nested_steps(cli, tmp_path):
    from haltproof.reports.html import render_html
    spec = write(tmp_path, parent=PARENT, helper=HELPER)
    html = render_html(cli("check", spec, "--format", "json").json())
    assert '<td class="action">ask</td>' in html
    assert '<td class="action">&nbsp;&nbsp;&nbsp;&nbsp;helper.call</td>' in html


def test_no_code_reaches_a_sub_agents_file(tmp_path):
    """--no-code (run_code=False) holds for the whole tree: a sub-agent that is a framework
    declaration is refused, its target never imported."""
    (tmp_path / "app.py").write_text("raise SystemExit('imported')\n")
    decl = "framework: langgraph\ntarget: app:graph\n"
    spec = write(tmp_path, parent=PARENT.replace("spec: helper.yaml", "spec: decl.yaml"), decl=decl)
    with pytest.raises(SpecError) as err:
        load_spec(spec, run_code=False)
    assert [(Path(p.file).name, p.line) for p in err.value.problems] == [("decl.yaml", 1)]
    assert "--no-code" in err.value.problems[0].message


def test_one_sub_agent_run_by_two_actions_returns_to_the_one_that_called_it(cli, tmp_path):
    parent = PARENT.replace("""    run: helper
    do:
      - set: {turn: turn + 1, model_calls: model_calls + 1}""", """    run: helper
    do:
      - set: {turn: turn + 1, model_calls: model_calls + 1}
  ask_again:
    when: turn < max_turns
    run: helper
    do:
      - set: {turn: max_turns}""")
    spec = write(tmp_path, parent=parent, helper=HELPER)
    r = cli("check", spec, "--format", "json")
    assert r.code == 1
    run = r.json()["runs"][0]
    prop = next(p for p in run["properties"] if p["name"] == "at_most_4_calls")
    assert prop["message"].startswith("reaches 5, more than at_most 4, after 7 transitions (the highest is 8,")
    assert run["source"]["vars"] == {"turn": 5, "model_calls": 6, "calling": 7}    # not the helper's lines
    guards = {a.name: ast.unparse(a.guard.py) for a in load_spec(spec).actions}
    assert guards["ask.return"] == "s[4] == 'ask' and (s[3] or s[2] >= 3)"
    assert guards["ask_again.return"] == "s[4] == 'ask_again' and (s[3] or s[2] >= 3)"
    assert guards["helper.call"] == ("s[4] in ('ask', 'ask_again') and (not (s[3] or s[2] >= 3)) and "
                                     "(not s[3] and s[2] < 3)")


@pytest.mark.verdict
def test_an_expression_of_a_sub_agent_that_fails_is_named_in_its_own_file(cli, tmp_path):
    """(The vector engine refuses `//` over a param that may be 0, as for any spec.)"""
    spec = write(tmp_path, parent=PARENT, helper=HELPER.replace("used: used + 1,", "used: used + 1 // (limit - 3),"))
    r = cli("check", spec, "--engine", "scalar", "--property", "well_defined")
    assert r.code == 1
    assert ("VIOLATED  well_defined  action helper.call with enough=stop (helper.yaml:14): integer division or "
            "modulo by zero\n") in r.out


FLAKY = """\
machine: flaky
vars:
  done: {type: bool, init: false}
actions:
  call:
    when: not done
    choose:
      outcome: [ok, fail]
    do:
      - set: {done: outcome == ok}
terminal: done
fairness:
  - strong: call
    when: outcome == ok
measures:
  fails: {count: outcome == fail}
"""

CALLER = """\
machine: caller
vars:
  asked: {type: bool, init: false}
agents:
  flaky: flaky.yaml
actions:
  ask:
    when: not asked
    run: flaky
    do:
      - set: {asked: true}
terminal: asked
properties:
  stops:
    terminates: true
"""


@pytest.mark.verdict
@pytest.mark.parametrize("engine", ENGINES)
def test_a_sub_agents_fairness_comes_with_it(cli, tmp_path, engine):
    spec = write(tmp_path, caller=CALLER, flaky=FLAKY)
    r = cli("check", spec, "--engine", engine, "--format", "json")
    assert r.code == 0, r.out
    run = r.json()["runs"][0]
    stops = next(p for p in run["properties"] if p["name"] == "stops")
    assert stops["status"] == "holds"
    assert run["bounds"]["flaky.fails"]["message"] == "not computed: the state graph has a cycle"   # named for it
    spec = write(tmp_path, caller=CALLER, flaky=FLAKY[:FLAKY.index("fairness:")] + FLAKY[FLAKY.index("measures:"):])
    r = cli("check", spec, "--engine", engine, "--format", "json")
    assert r.code == 1
    stops = next(p for p in r.json()["runs"][0]["properties"] if p["name"] == "stops")
    assert stops["status"] == "violated" and stops["trace"]["kind"] == "lasso"
    assert [(s["action"], s.get("depth")) for s in stops["trace"]["steps"]] == [
        (None, None), ("ask", None), ("flaky.call", 1)]


def test_measures_of_one_name_add_up_only_with_one_kind(tmp_path):
    flaky = FLAKY.replace("fails: {count: outcome == fail}", "fails: {sum: 1}")
    caller = CALLER + "measures:\n  fails: {count: action == ask}\n"
    spec = write(tmp_path, caller=caller, flaky=flaky)
    assert problems(spec) == ["flaky.yaml:16: measure fails is a sum here but a count in caller.yaml (line 17): "
                              "a measure adds up across the tree only with one kind"]


HAND_INLINED = """\
machine: orchestrator_by_hand
params:
  max_turns: [2]
vars:
  turn: {type: int, min: 0, max: max_turns, init: 0}
  model_calls: {type: int, min: 0, max: 10, init: 0}
  h_turn: {type: int, min: 0, max: 3, init: 0}
  h_done: {type: bool, init: false}
  calling: {type: enum, values: [top, ask], init: top}
actions:
  ask:
    when: calling == top and turn < max_turns
    do:
      - set: {calling: ask}
  call:
    when: calling == ask and not (h_done or h_turn >= 3) and not h_done and h_turn < 3
    choose:
      enough: [stop, more]
    do:
      - set: {h_turn: h_turn + 1, model_calls: model_calls + 1, h_done: enough == stop}
  ask_return:
    when: calling == ask and (h_done or h_turn >= 3)
    do:
      - set: {calling: top}
      - set: {turn: turn + 1, model_calls: model_calls + 1}
      - set: {h_turn: 0, h_done: false}
terminal: calling == top and turn >= max_turns
properties:
  at_most_4_calls:
    maximum: model_calls
    at_most: 4
"""


@pytest.mark.verdict
def test_a_tree_explores_exactly_the_machine_written_out_by_hand(cli, tmp_path):
    """Differential: the tree and the same machine inlined by hand have the same states,
    transitions, terminal states, depth and worst case."""
    tree = cli("check", write(tmp_path, parent=PARENT, helper=HELPER), "--format", "json").json()["runs"][0]
    hand = cli("check", write(tmp_path, hand=HAND_INLINED), "--format", "json").json()["runs"][0]
    keys = ("states", "transitions", "terminal_states", "max_depth")
    assert [tree["stats"][k] for k in keys] == [hand["stats"][k] for k in keys] == [37, 44, 5, 10]

    def worst(run: dict) -> dict:
        return next(p for p in run["properties"] if p["name"] == "at_most_4_calls")["maximum"]
    assert worst(tree) == worst(hand)
