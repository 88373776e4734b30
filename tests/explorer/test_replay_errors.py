"""Replay and scenarios never crash on the user's mistakes (issue 11).

A spec expression that cannot be evaluated (or bound code that raises) while a scenario
or a trace is replayed stops the run at that step, named like the engines name it
(`well_defined` or `bound_code`, with the expression's file and line): the scenario
fails (`check` exits 1) and `haltproof replay` prints the steps so far and exits 1. A
trace file that is not a trace (wrong JSON types, ITF garbage) is exit 2 naming the file
and the step; a trace that is not a run of the spec (an unknown action, a choice or a
value outside its set) is exit 1 naming the step."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from conftest import LOOP_DEMO
from haltproof.reports.report import shown_path

TESTS = Path(__file__).resolve().parent.parent

# The reproducer: the scenario reaches x = 0, where the terminal predicate divides by zero.
TERMINAL_DIVIDES = """\
machine: term
vars:
  x: {type: int, min: 0, max: 1, init: 1}
actions:
  flip:
    do:
      - set: {x: 1 - x}
terminal: '1 // x == 7'
properties:
  ends:
    terminates: true
scenarios:
  down:
    steps:
      - {action: flip}
    expect: {x: 0}
"""

# Each scenario runs into one failing expression; line numbers are asserted below.
FAILING = """\
machine: failing
vars:
  x: {type: int, min: 0, max: 3, init: 2}
  y: {type: int, min: 0, max: 3, init: 0}
actions:
  down:
    when: 'x > 0'
    do:
      - set: {x: x - 1}
  guarded:
    when: '4 // x > 1'
    do:
      - set: {y: 1}
  divide:
    choose: {d: [0, 1]}
    do:
      - set: {y: 2 // d}
  pick:
    choose: {k: [1, 2, 3]}
    do:
      - decide: y
        rules:
          - {name: one, when: 'k == 1', then: 1}
          - name: odd
            when: 'k // (k - 3) == 0'
            then: 2
terminal: 'y == 3'
properties:
  small: {always: 'y <= 3'}
scenarios:
  guard_fails:
    steps:
      - {action: down}
      - {action: down}
      - {action: guarded}
    expect: {x: 0}
  step_fails:
    steps:
      - {action: down}
      - {action: divide, choices: {d: 0}}
    expect: {y: 2}
  no_rule:
    steps:
      - {action: pick, choices: {k: 2}}
    expect: {y: 1}
  rule_condition_fails:
    steps:
      - {action: pick, choices: {k: 3}}
    expect: {y: 2}
  fine:
    steps:
      - {action: pick, choices: {k: 1}}
    expect: {y: 1}
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _where(path: Path, line: int) -> str:
    return f"{shown_path(str(path))}:{line}"


# ---------------------------------------------------------------- scenarios: check and replay

def test_a_scenario_reaching_a_failing_terminal_predicate_fails_check_with_exit_1(cli, tmp_path):
    path = _write(tmp_path, "term.yaml", TERMINAL_DIVIDES)
    ran = cli("check", path)
    assert ran.code == 1, ran.err
    assert "Traceback" not in ran.err and "internal error" not in ran.err
    assert (f"  FAILED    scenario down: step 1: well_defined: the terminal predicate ({_where(path, 8)}) "
            "fails: integer division or modulo by zero\n") in ran.out
    ran = cli("check", path, "--format", "json")
    assert ran.code == 1
    (run,) = ran.json()["runs"]
    assert run["scenarios"] == [{"name": "down", "status": "failed", "steps": 1, "message":
                                 f"step 1: well_defined: the terminal predicate ({_where(path, 8)}) fails: "
                                 "integer division or modulo by zero"}]


def test_replaying_that_scenario_prints_the_steps_so_far_and_exits_1(cli, tmp_path):
    path = _write(tmp_path, "term.yaml", TERMINAL_DIVIDES)
    ran = cli("replay", path, "--scenario", "down")
    assert ran.code == 1
    assert "Traceback" not in ran.err and ran.err == ""
    lines = ran.out.splitlines()
    assert lines[-3:] == [
        "0     (initial)                 x=1",
        "1     flip                      x=0",
        f"# FAILED: step 1: well_defined: the terminal predicate ({_where(path, 8)}) fails: "
        "integer division or modulo by zero"]


def test_a_terminal_predicate_failing_in_the_initial_state_is_step_0(cli, tmp_path):
    path = _write(tmp_path, "term0.yaml", TERMINAL_DIVIDES.replace("init: 1}", "init: 0}")
                  .replace("expect: {x: 0}", "expect: {x: 1}"))
    ran = cli("replay", path, "--scenario", "down")
    assert ran.code == 1
    assert ran.out.splitlines()[-1] == (f"# FAILED: step 0: well_defined: the terminal predicate "
                                        f"({_where(path, 8)}) fails: integer division or modulo by zero")


@pytest.mark.parametrize("scenario, message", [
    ("guard_fails", "step 3: well_defined: the guard of action guarded ({where}:11) fails: "
                    "integer division or modulo by zero"),
    ("step_fails", "step 2: well_defined: action divide with d=0 ({where}:17) fails: "
                   "integer division or modulo by zero"),
    ("no_rule", "step 1: well_defined: action pick with k=2 ({where}:21) fails: no rule of the decide "
                "table of action pick (deciding y) matched"),
    ("rule_condition_fails", "step 1: well_defined: action pick with k=3 ({where}:25) fails: "
                             "integer division or modulo by zero"),
])
def test_each_failing_expression_is_named_with_its_step_and_line(cli, tmp_path, scenario, message):
    path = _write(tmp_path, "failing.yaml", FAILING)
    expected = message.format(where=shown_path(str(path)))
    ran = cli("replay", path, "--scenario", scenario)
    assert ran.code == 1 and ran.err == ""
    assert ran.out.splitlines()[-1] == f"# FAILED: {expected}"
    ran = cli("check", path, "--format", "json")
    assert ran.code == 1 and "Traceback" not in ran.err
    (run,) = ran.json()["runs"]
    by_name = {sc["name"]: sc for sc in run["scenarios"]}
    assert by_name[scenario]["status"] == "failed" and by_name[scenario]["message"] == expected
    assert by_name["fine"]["status"] == "passed"


def test_the_steps_before_the_failing_one_are_printed(cli, tmp_path):
    path = _write(tmp_path, "failing.yaml", FAILING)
    ran = cli("replay", path, "--scenario", "guard_fails")
    table = [ln for ln in ran.out.splitlines() if not ln.startswith("#")]
    assert [ln.split()[:2] for ln in table[1:]] == [["0", "(initial)"], ["1", "down"], ["2", "down"]]


REPLAY_LINES = """\
machine: shown
vars:
  x: {type: int, min: 0, max: 2, init: 2}
actions:
  down:
    when: 'x > 0'
    do:
      - set: {x: x - 1}
  pick:
    choose: {k: [1, 2]}
    when: 'x == 0'
    do:
      - set: {x: 0}
terminal: 'false'
replay:
  x: after.x
  ratio: '2 // after.x'
  picked: k
properties:
  small: {always: 'x <= 2'}
scenarios:
  to_zero:
    steps:
      - {action: down}
      - {action: down}
    expect: {x: 0}
"""


def test_a_replay_line_that_cannot_be_evaluated_fails_the_scenario(cli, tmp_path):
    path = _write(tmp_path, "shown.yaml", REPLAY_LINES)
    ran = cli("replay", path, "--scenario", "to_zero")
    assert ran.code == 1 and ran.err == ""
    assert ran.out.splitlines()[-1] == (f"# FAILED: step 1: well_defined: replay line picked ({_where(path, 18)}) "
                                        "fails: the expression reads choice k, which action down does not make "
                                        "(guard it with action == ...)")
    # the engine does not evaluate replay lines: the scenario alone fails the check
    ran = cli("check", path, "--format", "json")
    assert ran.code == 1
    (run,) = ran.json()["runs"]
    assert run["result"] == "violated" and all(p["status"] == "holds" for p in run["properties"])
    assert [(sc["name"], sc["status"]) for sc in run["scenarios"]] == [("to_zero", "failed")]


def test_a_replay_line_dividing_by_zero_names_its_line(cli, tmp_path):
    path = _write(tmp_path, "shown.yaml", REPLAY_LINES.replace("  picked: k\n", ""))
    ran = cli("replay", path, "--scenario", "to_zero")
    assert ran.code == 1
    assert ran.out.splitlines() == [
        "# scenario to_zero of shown, no params", "x: 1", "ratio: 2",
        f"# FAILED: step 2: well_defined: replay line ratio ({_where(path, 17)}) fails: "
        "integer division or modulo by zero"]


# ---------------------------------------------------------------- bound code

def _bound_loop_demo(tmp_path: Path, adapter: str) -> Path:
    text = LOOP_DEMO.read_text()
    shipped = "bind: haltproof.harness.loop_binding:LoopDemoAdapter"
    assert text.count(shipped) == 1
    return _write(tmp_path, f"{adapter.lower()}.yaml", text.replace(shipped, f"bind: broken_decides:{adapter}"))


def test_bound_code_raising_in_a_replayed_scenario_is_bound_code_with_the_users_traceback(cli, tmp_path,
                                                                                          monkeypatch):
    monkeypatch.syspath_prepend(str(TESTS))
    path = _bound_loop_demo(tmp_path, "Crashing")
    ran = cli("replay", path, "--scenario", "permanent_error")
    assert ran.code == 1 and ran.err == ""
    failed = ran.out[ran.out.index("# FAILED: "):]
    assert failed.startswith("# FAILED: step 1: bound_code: action read_task_cards with obs=failed fails: "
                             "the bound code raised KeyError: 'retry_budget'\n")
    assert "broken_decides.py" in failed and "crashing_decide" in failed      # the user's frame
    assert "machine/binding.py" not in failed and "explorer/" not in failed   # not haltproof's
    ran = cli("check", path, "-p", "max_steps=5", "-p", "max_retries=1", "--format", "json")
    assert ran.code == 1 and "Traceback" not in ran.err
    (run,) = ran.json()["runs"]
    sc = next(s for s in run["scenarios"] if s["name"] == "permanent_error")
    assert sc["status"] == "failed" and sc["steps"] == 0
    assert sc["message"].startswith("step 1: bound_code: action read_task_cards with obs=failed fails: "
                                    "the bound code raised KeyError")


# ---------------------------------------------------------------- traces

FLAG = """\
machine: flag
params: {N: [2, 3]}
vars:
  n: {type: int, min: 0, max: N, init: 0}
  done: {type: bool, init: false}
  mode: {type: enum, values: [a, b], init: a}
actions:
  tick:
    when: not done
    choose: {stop: [true, false]}
    do:
      - set: {n: n + 1, done: stop or n + 1 >= N}
terminal: done
properties:
  bounded: {terminates_within: N}
"""

GOOD = {"params": {"N": 2}, "steps": [
    {"state": {"n": 0, "done": False, "mode": "a"}},
    {"action": "tick", "choices": {"stop": False}, "state": {"n": 1, "done": False, "mode": "a"}},
    {"action": "tick", "choices": {"stop": False}, "state": {"n": 2, "done": True, "mode": "a"}}]}


def _replay_trace(cli, tmp_path: Path, data: object):
    spec = _write(tmp_path, "flag.yaml", FLAG)
    trace = tmp_path / "run.json"
    trace.write_text(json.dumps(data))
    return cli("replay", spec, "--trace", trace), shown_path(str(trace))


def _edit(change) -> object:
    data = copy.deepcopy(GOOD)
    out = change(data)
    return data if out is None else out


def test_the_good_trace_replays(cli, tmp_path):
    ran, _ = _replay_trace(cli, tmp_path, GOOD)
    assert ran.code == 0 and ran.out.splitlines()[-1] == "# ok: 2 steps, final state n=2 done=true mode=a"


@pytest.mark.parametrize("change, message", [
    (lambda d: d["steps"][1].update(action="tock"), "step 1: no action named 'tock'"),
    (lambda d: d["steps"][1].update(choices={"stop": 3}),
     "step 1: stop=3 is not a choice of action tick (it chooses stop in {true, false})"),
    (lambda d: d["steps"][1].update(choices={"stop": 0}),           # 0 is not false
     "step 1: stop=0 is not a choice of action tick (it chooses stop in {true, false})"),
    (lambda d: d["steps"][1].update(choices={}),
     "step 1: no choices is not a choice of action tick (it chooses stop in {true, false})"),
    (lambda d: d["steps"][0]["state"].update(n=7),
     "step 0: the run starts in n=7 done=false mode=a, which is not an initial state of the machine "
     "(n = 7 is outside its domain 0..2)"),
    (lambda d: d["steps"][1]["state"].update(n=7),
     "step 1: the state differs from the recorded one: n recorded 7 (outside its domain 0..2), replay gives 1"),
    (lambda d: d["steps"][1]["state"].update(mode="zz"),
     "step 1: the state differs from the recorded one: mode recorded zz (outside its domain {a, b}), "
     "replay gives a"),
    (lambda d: d["steps"][2]["state"].update(done=False),
     "step 2: the state differs from the recorded one: done recorded false, replay gives true"),
    (lambda d: d["steps"].append(copy.deepcopy(d["steps"][2])),
     "step 3: the run is already in a terminal state; tick cannot happen"),
], ids=["unknown_action", "choice_outside", "zero_for_false", "missing_choice", "init_outside_domain",
        "value_outside_domain", "enum_outside_domain", "state_differs", "after_terminal"])
def test_a_trace_that_is_not_a_run_of_the_spec_exits_1_naming_the_step(cli, tmp_path, change, message):
    ran, _ = _replay_trace(cli, tmp_path, _edit(change))
    assert ran.code == 1 and ran.err == ""
    assert ran.out.splitlines()[-1] == f"# FAILED: {message}"


@pytest.mark.parametrize("change, message", [
    (lambda d: d["steps"][1].update(choices=[True]),
     "step 1 of the trace: 'choices' must be an object (choice name -> value), not a list"),
    (lambda d: d["steps"][1].update(choices="stop"),
     "step 1 of the trace: 'choices' must be an object (choice name -> value), not a string"),
    (lambda d: d["steps"][1].update(choices={"stop": [False]}),
     "step 1: choice stop is [false] (a list); a choice is a number, a string or true/false"),
    (lambda d: d["steps"][1]["state"].update(n="1"), 'step 1: var n is "1" (a string); n is an int var'),
    (lambda d: d["steps"][0]["state"].update(n=0.0), "step 0: var n is 0.0 (a number); n is an int var"),
    (lambda d: d["steps"][1]["state"].update(done=0), "step 1: var done is 0 (a number); done is a bool var "
                                                      "(true/false)"),
    (lambda d: d["steps"][1]["state"].update(n=True), "step 1: var n is true (a boolean); n is an int var"),
    (lambda d: d["steps"][1]["state"].update(mode=1), "step 1: var mode is 1 (a number); mode is an enum var "
                                                      "(a string)"),
    (lambda d: d["steps"][1]["state"].update(n={"a": 1}), 'step 1: var n is {"a": 1} (an object); n is an '
                                                          "int var"),
    (lambda d: d["steps"][2]["state"].update(extra=1),
     "step 2: the trace's state has vars ['done', 'extra', 'mode', 'n'], the spec has ['done', 'mode', 'n']"),
    (lambda d: d["steps"][2]["state"].pop("mode") and None,
     "step 2: the trace's state has vars ['done', 'n'], the spec has ['done', 'mode', 'n']"),
    (lambda d: d["steps"][1].update(state=[1]), "step 1 of the trace has no 'state' object"),
    (lambda d: d["steps"][1].update(action=3), "step 1 of the trace names no action"),
    (lambda d: d.update(steps={"0": {}}), "not a trace: expected an object with a non-empty 'steps' list"),
    (lambda d: [d], "not a trace: expected an object with a non-empty 'steps' list"),
    (lambda d: d.update(params=[2]), "the trace's 'params' must be an object (param name -> value), not a list"),
    (lambda d: d.update(params={"N": "2"}), 'the trace records param N = "2", not a declared value of N (2, 3)'),
    (lambda d: d.update(params={"N": 9}), "the trace records param N = 9, not a declared value of N (2, 3)"),
    (lambda d: d.update(params={"N": 2, "Q": 1}), "the trace records param Q, which flag does not declare "
                                                  "(it has: N)"),
    (lambda d: {"runs": {"a": 1}}, "not a haltproof report: 'runs' must be a list of run objects"),
    (lambda d: {"runs": ["run"]}, "not a haltproof report: 'runs' must be a list of run objects"),
    (lambda d: {"runs": [{"properties": ["p"]}]},
     "not a haltproof report: 'properties' of run 0 must be a list of objects"),
    (lambda d: {"runs": [{"properties": [{"name": "p", "trace": [1]}]}]},
     "run 0, property 'p': 'trace' must be an object, not a list"),
], ids=["choices_list", "choices_string", "choice_list_value", "int_as_string", "int_as_float", "bool_as_int",
        "int_as_bool", "enum_as_int", "int_as_object", "extra_var", "missing_var", "state_list", "action_int",
        "steps_object", "top_list", "params_list", "param_as_string", "param_undeclared_value",
        "param_unknown", "runs_object", "runs_of_strings", "properties_of_strings", "trace_list"])
def test_a_trace_file_that_is_not_a_trace_exits_2_naming_the_file(cli, tmp_path, change, message):
    ran, shown = _replay_trace(cli, tmp_path, _edit(change))
    assert ran.code == 2 and ran.out == ""
    assert "Traceback" not in ran.err
    assert ran.err.strip() == f"error: {shown}: {message}"


ITF_GOOD = {"#meta": {"params": {"N": 2}}, "vars": ["n", "done", "mode"],
            "states": [{"#meta": {"index": 0}, "n": 0, "done": False, "mode": "a"},
                       {"#meta": {"index": 1, "action": "tick", "choices": {"stop": False}},
                        "n": {"#bigint": "1"}, "done": False, "mode": "a"}]}


@pytest.mark.parametrize("change, code, message", [
    (lambda d: d["states"][1].update(n={"#map": [[1, 2]]}), 2,
     "error: {file}: step 1: var n is {{\"1\": 2}} (an object); n is an int var"),
    (lambda d: d["states"][0].update(n={"#unserializable": "x"}), 2,
     "error: {file}: step 0: var n is {{\"#unserializable\": \"x\"}} (an object); n is an int var"),
    (lambda d: d["states"][1]["#meta"].update(choices={"stop": {"#set": [False]}}), 2,
     "error: {file}: step 1: choice stop is [false] (a list); a choice is a number, a string or true/false"),
    (lambda d: d["states"][1]["#meta"].update(choices=[False]), 2,
     "error: {file}: not a valid ITF trace: state 1: '#meta.choices' must be an object"),
    (lambda d: d.update(states="garbage"), 2,
     "error: {file}: not a valid ITF trace: 'states' must be a non-empty list of states"),
    (lambda d: d.update({"#meta": {"params": {"N": {"#bigint": "two"}}}}), 2,
     "error: {file}: not a valid ITF trace: param N: #bigint 'two' is not an integer"),
    (lambda d: d["states"][1]["#meta"].update(action="tock"), 1, "# FAILED: step 1: no action named 'tock'"),
    (lambda d: d["states"][1].update(n={"#bigint": "5"}), 1,
     "# FAILED: step 1: the state differs from the recorded one: n recorded 5 (outside its domain 0..2), "
     "replay gives 1"),
], ids=["map_value", "unserializable_value", "set_choice", "choices_list", "states_string", "bad_bigint",
        "unknown_action", "value_outside_domain"])
def test_itf_files_with_garbage_are_exit_2_and_wrong_runs_exit_1(cli, tmp_path, change, code, message):
    data = copy.deepcopy(ITF_GOOD)
    change(data)
    ran, shown = _replay_trace(cli, tmp_path, data)
    assert ran.code == code and "Traceback" not in ran.err
    last = (ran.err if code == 2 else ran.out).strip().splitlines()[-1]
    assert last == message.format(file=shown)


def test_a_well_defined_counterexample_replays_to_its_failing_step(cli, tmp_path):
    """The trace `check` gives for a terminal predicate that fails replays to that state, exit 1."""
    spec = _write(tmp_path, "term.yaml", TERMINAL_DIVIDES[:TERMINAL_DIVIDES.index("scenarios:")])
    report = tmp_path / "report.json"
    for fmt in ("json", "itf"):
        assert cli("check", spec, "--json", report, "--trace-format", fmt).code == 1
        ran = cli("replay", spec, "--trace", report, "--property", "well_defined")
        assert ran.code == 1 and ran.err == ""
        assert ran.out.splitlines()[-1] == (f"# FAILED: step 1: well_defined: the terminal predicate "
                                            f"({_where(spec, 8)}) fails: integer division or modulo by zero")


def test_the_documented_example_prints_what_the_docs_show(cli, tmp_path, monkeypatch):
    doc = (TESTS.parent / "docs" / "reference" / "spec-language.md").read_text()
    example = doc[doc.index("For example, `term.yaml`:"):]
    spec = example[example.index("```yaml\n") + 8:example.index("```\n")]
    shown = example[example.index("```text\n") + 8:]
    shown = shown[:shown.index("```\n")].splitlines()
    assert shown[0] == "$ haltproof replay term.yaml --scenario down"
    monkeypatch.chdir(tmp_path)
    Path("term.yaml").write_text(spec)
    ran = cli("replay", "term.yaml", "--scenario", "down")
    assert ran.code == 1
    assert ran.out.splitlines() == shown[1:]
