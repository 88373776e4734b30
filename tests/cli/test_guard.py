"""`haltproof guard` and the runtime guard (haltproof.guard): exported for every proved seed spec,
its decisions with their exact packets, agreement with the explored graph, and bad input."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from haltproof.cli.guard import write_guard
from haltproof.cli.main import main
from haltproof.explorer.options import Options
from haltproof.explorer.check import prepare
from haltproof.explorer.engine import explore
from haltproof.guard import Guard, GuardError
from haltproof.machine.spec import load_spec

ROOT = Path(__file__).resolve().parent.parent.parent
SEEDS = {"loop_demo": ({"max_steps": 3, "max_retries": 1}),
         "budget_runner": ({"K": 2, "R": 1}),
         "gate_chain": ({"B": 2, "N": 1, "A": 1, "T": 3, "P": 2})}
EMPTY_SEARCH = ROOT / "specs" / "mutants" / "empty_search_continues.yaml"


@pytest.fixture(scope="module")
def seed_guards(tmp_path_factory):
    out = {}
    folder = tmp_path_factory.mktemp("guards")
    for name, pins in SEEDS.items():
        path = folder / f"{name}.json"
        write_guard(str(ROOT / "specs" / f"{name}.yaml"), pins, str(path))
        out[name] = path
    return out


@pytest.fixture(scope="module")
def mutant_guard(tmp_path_factory):
    path = tmp_path_factory.mktemp("mutant") / "guard.json"
    write_guard(str(EMPTY_SEARCH), {"max_steps": 2, "max_retries": 1}, str(path), allow_violated=True)
    return path


def _packet(**kw):
    base = {"verdict": "allow", "event": "before", "step": 1, "reason": "", "action": None, "choices": {},
            "violated": [], "doomed": [], "endangered": [], "continuation": [], "allowed": [], "escape": False}
    base.update(kw)
    return base


LIMIT_INIT = {"steps": 0, "failures": 0, "phase": "start", "observation": "nothing", "decision": "undecided",
              "scenario": "limit"}


def _state(**kw):
    return {**LIMIT_INIT, "phase": "observed", **kw}


# ------------------------------------------------------------------ every proved seed spec

@pytest.mark.slow
@pytest.mark.verdict
@pytest.mark.parametrize("name", sorted(SEEDS))
def test_the_guard_agrees_with_the_explored_graph_on_every_state_and_action(seed_guards, name):
    """Every reachable state, every action and choice combination: allowed exactly where the graph
    has the transition (a proved run breaks nothing), landing on its successor; denied elsewhere."""
    table = json.loads(seed_guards[name].read_text())
    assert table["spec"]["result"] == "proved" and table["spec"]["violated"] == []
    spec = load_spec(ROOT / "specs" / f"{name}.yaml")
    (m,) = prepare(spec, Options(pins=SEEDS[name]))
    ex = explore(m)
    assert [tuple(s) for s in table["states"]] == ex.states
    guard = Guard.load(seed_guards[name], spec=ROOT / "specs" / f"{name}.yaml", params=SEEDS[name])
    checked = 0
    for i in range(len(ex.states)):
        graph = {(m.actions[ex.e_action[e]].name, ex.e_combo[e]): ex.e_dst[e]
                 for e in (ex.edges_of(i) if i < ex.expanded else ())}
        for act in m.actions:
            for ci, labels in enumerate(act.labels):
                guard.reset()
                guard.current = i
                d = guard.before(act.name, dict(labels))
                if (act.name, ci) in graph:
                    assert d.verdict == "allow", (i, act.name, labels, d)
                    after = guard.after(m.state_dict(ex.states[graph[act.name, ci]]))
                    assert after.verdict == "allow" and guard.current == graph[act.name, ci]
                else:
                    assert d.verdict == "deny" and not d.escape, (i, act.name, labels, d)
                checked += 1
        guard.reset()
        guard.current = i
        assert (guard.end().verdict == "allow") == bool(ex.terminal[i])
    assert checked == len(ex.states) * sum(len(a.labels) for a in m.actions)


@pytest.mark.verdict
def test_a_guard_is_exported_for_every_proved_seed_spec(seed_guards):
    for name, path in seed_guards.items():
        table = json.loads(path.read_text())
        assert table["format"] == "haltproof-guard/1"
        assert table["spec"]["name"] == name and table["spec"]["params"] == SEEDS[name]
        g = Guard.load(path)
        for i in table["initial"]:      # a proved run: every monitor holds from every initial state
            g.reset()
            g.current = i
            assert set(g.verdicts().values()) == {"holds"}


# ------------------------------------------------------------------------ the decisions

def test_allow_then_after_then_end_with_packets(seed_guards):
    g = Guard.load(seed_guards["loop_demo"])
    assert g.start({"scenario": "limit"}).to_dict() == _packet(event="start", step=0,
                                                                reason="an initial state of the model")
    d = g.before("read_task_cards", {"obs": "one_match"})
    assert d.to_dict() == _packet(reason="no continuation of it breaks a property", action="read_task_cards",
                                  choices={"obs": "one_match"})
    after = _state(steps=1, observation="one_match", decision="success")
    assert g.after(after).to_dict() == _packet(event="after", reason="a state of the model",
                                               action="read_task_cards", choices={"obs": "one_match"})
    assert g.end("success").to_dict() == _packet(event="end", reason="a terminal state ('success')")


def test_a_refused_end_names_why_and_what_is_allowed(seed_guards):
    g = Guard.load(seed_guards["loop_demo"])
    g.start({"scenario": "limit"})
    g.before("read_task_cards", {"obs": "incomplete"})
    g.after()
    names = ["failed", "one_match", "zero_matches", "many_matches", "incomplete"]
    assert g.end().to_dict() == _packet(
        verdict="deny", event="end", reason="the spec does not end in this state: it is not terminal",
        allowed=[{"action": "read_task_cards", "choices": {"obs": n}} for n in names])


def test_an_end_with_another_label_than_the_spec_s_is_refused(seed_guards):
    g = Guard.load(seed_guards["loop_demo"])
    g.start({"scenario": "limit"})
    g.before("read_task_cards", {"obs": "one_match"})
    g.after()
    assert g.end("limit").to_dict() == _packet(verdict="deny", event="end",
                                               reason="the spec ends this run as 'success', not 'limit'")


def test_deny_a_step_the_model_does_not_have_in_a_terminal_state(seed_guards):
    g = Guard.load(seed_guards["loop_demo"])
    g.start({"scenario": "limit"})
    g.before("read_task_cards", {"obs": "one_match"})
    g.after()
    assert g.before("read_task_cards", {"obs": "failed"}).to_dict() == _packet(
        verdict="deny", step=2, action="read_task_cards", choices={"obs": "failed"},
        reason="the run is in a terminal state: read_task_cards is not a transition of the model here")


def test_a_model_escape_is_reported_with_its_step_and_fails_closed(seed_guards):
    g = Guard.load(seed_guards["loop_demo"])
    g.start({"scenario": "limit"})
    g.before("read_task_cards", {"obs": "incomplete"})
    g.after()
    g.before("read_task_cards", {"obs": "incomplete"})
    off = _state(steps=3, observation="incomplete", decision="continue")      # two steps in one
    assert g.after(off).to_dict() == _packet(
        verdict="deny", event="after", step=2, escape=True, action="read_task_cards",
        choices={"obs": "incomplete"},
        reason="model escape at step 2: {steps: 3, failures: 0, phase: observed, observation: incomplete, "
               "decision: continue, scenario: limit} is not a state the model reaches from {steps: 1, failures: 0, "
               "phase: observed, observation: incomplete, decision: continue, scenario: limit} after "
               "read_task_cards with {obs: incomplete}")
    # fail-closed from then on: nothing proved covers the run any more
    assert g.before("read_task_cards", {"obs": "one_match"}).to_dict() == _packet(
        verdict="deny", step=3, escape=True, action="read_task_cards", choices={"obs": "one_match"},
        reason="the run left the model earlier: nothing proved covers it")


def test_an_escape_can_be_configured_to_ask_and_to_pick_the_run_up_again(seed_guards):
    g = Guard.load(seed_guards["loop_demo"], on_escape="approval_required")
    g.start({"scenario": "limit"})
    g.before("read_task_cards", {"obs": "incomplete"})
    off = _state(steps=2, observation="incomplete", decision="continue")     # a state of the graph, not a successor
    d = g.after(off)
    assert (d.verdict, d.escape, d.step) == ("approval_required", True, 1)
    assert g.state == off and g.before("read_task_cards", {"obs": "one_match"}).verdict == "allow"


def test_approval_required_names_the_endangered_properties_and_the_shortest_continuation(mutant_guard):
    g = Guard.load(mutant_guard)
    g.start({"scenario": "limit"})
    d = g.before("read_task_cards", {"obs": "failed"})
    assert d.to_dict() == _packet(
        verdict="approval_required", action="read_task_cards", choices={"obs": "failed"},
        reason="some continuation of it breaks limit_only_when_observation_allows_going_on, "
               "complete_search_always_decides, final_answer_on_last_step_kept",
        endangered=["limit_only_when_observation_allows_going_on", "complete_search_always_decides",
                    "final_answer_on_last_step_kept"],
        continuation=[{"action": "read_task_cards", "choices": {"obs": "failed"}, "rule": "continue",
                       "state": _state(steps=1, failures=1, observation="failed", decision="continue")},
                      {"action": "read_task_cards", "choices": {"obs": "zero_matches"}, "rule": "limit",
                       "state": _state(steps=2, failures=1, observation="zero_matches", decision="limit")}],
        allowed=[{"action": "read_task_cards", "choices": {"obs": "one_match"}},
                 {"action": "read_task_cards", "choices": {"obs": "many_matches"}}])


def test_deny_a_step_that_breaks_a_property_with_the_breaking_step(mutant_guard):
    g = Guard.load(mutant_guard)
    g.start({"scenario": "limit"})
    d = g.before("read_task_cards", {"obs": "zero_matches"})
    assert d.to_dict() == _packet(
        verdict="deny", action="read_task_cards", choices={"obs": "zero_matches"},
        reason="it breaks complete_search_always_decides", violated=["complete_search_always_decides"],
        continuation=[{"action": "read_task_cards", "choices": {"obs": "zero_matches"}, "rule": "continue",
                       "state": _state(steps=1, observation="zero_matches", decision="continue")}],
        allowed=[{"action": "read_task_cards", "choices": {"obs": "one_match"}},
                 {"action": "read_task_cards", "choices": {"obs": "many_matches"}}])
    # taken anyway: the monitor says violated from then on
    assert g.after().violated == ("complete_search_always_decides",)
    assert g.verdicts()["complete_search_always_decides"] == "violated"


def test_the_four_monitor_values(mutant_guard):
    g = Guard.load(mutant_guard)
    g.start({"scenario": "limit"})
    assert g.verdicts()["complete_search_always_decides"] == "open"
    g.before("read_task_cards", {"obs": "one_match"})
    g.after()
    assert g.verdicts()["complete_search_always_decides"] == "holds"


def test_a_failure_that_is_not_a_step_breaks_the_variant_and_opens_the_budget(tmp_path):
    """failure_not_a_step: a failure does not count as a step, so a run can cycle: the failing
    step breaks the variant now (deny), and from the start the budget's longest run is unbounded
    (its monitor is open)."""
    path = tmp_path / "g.json"
    write_guard(str(ROOT / "specs/mutants/failure_not_a_step.yaml"), {"max_steps": 2, "max_retries": 1},
                str(path), allow_violated=True)
    g = Guard.load(path)
    g.start({"scenario": "limit"})
    assert g.verdicts()["terminates_within_max_steps"] == "open"
    d = g.before("read_task_cards", {"obs": "failed"})
    assert (d.verdict, d.violated, d.reason) == ("deny", ("steps_are_progress",), "it breaks steps_are_progress")
    assert g.before("read_task_cards", {}).verdict == "approval_required"


# ------------------------------------------------------------------------------ bad input

def test_a_guard_file_that_is_not_json_is_refused(tmp_path):
    bad = tmp_path / "g.json"
    bad.write_text("{nope")
    with pytest.raises(GuardError, match=r"g\.json: not a guard: not JSON \(Expecting property name"):
        Guard.load(bad)


def test_a_guard_of_another_spec_version_is_refused(seed_guards, tmp_path):
    spec = tmp_path / "loop_demo.yaml"
    spec.write_text((ROOT / "specs/loop_demo.yaml").read_text() + "\n# edited\n")
    with pytest.raises(GuardError, match="the guard was made from another version of the spec"):
        Guard.load(seed_guards["loop_demo"], spec=spec)
    with pytest.raises(GuardError, match=r"the guard was made for params \{max_steps: 3, max_retries: 1\}, "
                                         r"not \{max_steps: 4, max_retries: 1\}"):
        Guard.load(seed_guards["loop_demo"], params={"max_steps": 4, "max_retries": 1})


def test_an_edited_table_is_refused(seed_guards, tmp_path):
    table = json.loads(seed_guards["loop_demo"].read_text())
    table["terminal"][0] = 1
    path = tmp_path / "g.json"
    path.write_text(json.dumps(table))
    with pytest.raises(GuardError, match="changed after it was written"):
        Guard.load(path)
    table["format"] = "haltproof-guard/0"
    path.write_text(json.dumps(table))
    with pytest.raises(GuardError, match="not a guard of format haltproof-guard/1"):
        Guard.load(path)


def test_unknown_actions_choices_and_vars_are_errors_never_decisions(seed_guards):
    g = Guard.load(seed_guards["loop_demo"])
    g.start({"scenario": "limit"})
    with pytest.raises(GuardError, match="unknown action 'write' of loop_demo; its actions: read_task_cards"):
        g.before("write", {})
    with pytest.raises(GuardError, match="action read_task_cards has no choice 'observation'; its choices: obs"):
        g.before("read_task_cards", {"observation": "failed"})
    with pytest.raises(GuardError, match="choice obs of action read_task_cards has no value 'lost'"):
        g.before("read_task_cards", {"obs": "lost"})
    with pytest.raises(GuardError, match="unknown var 'stepz' of loop_demo"):
        g.after({**LIMIT_INIT, "stepz": 1})
    with pytest.raises(GuardError, match=r"the model has 7 initial states: call start\(state\) first"):
        Guard.load(seed_guards["loop_demo"]).before("read_task_cards", {"obs": "failed"})


# ------------------------------------------------------------------------------- the CLI

def test_cli_refuses_a_sweep_and_a_violated_run(tmp_path, capsys):
    out = tmp_path / "g.json"
    assert main(["guard", str(ROOT / "specs/loop_demo.yaml"), "-o", str(out)]) == 2
    assert ("a guard is of one param combination, and 10 are declared; pin max_steps, max_retries "
            "(e.g. -p max_steps=1 -p max_retries=0)") in capsys.readouterr().err
    code = main(["guard", str(EMPTY_SEARCH), "-p", "max_steps=2", "-p", "max_retries=1", "-o", str(out)])
    assert code == 1 and not out.exists()
    assert capsys.readouterr().err == (
        "haltproof guard: the run is not proved: limit_only_when_observation_allows_going_on, "
        "complete_search_always_decides, final_answer_on_last_step_kept are violated; a guard is written "
        "from a proved run (--allow-violated guards a known violation); no guard written\n")


def test_the_python_module_is_standalone(tmp_path):
    out = tmp_path / "loop_guard.py"
    assert main(["guard", str(ROOT / "specs/loop_demo.yaml"), "-p", "max_steps=2", "-p", "max_retries=0",
                 "-o", str(out)]) == 0
    imported = {n.names[0].name if isinstance(n, ast.Import) else n.module
                for n in ast.walk(ast.parse(out.read_text())) if isinstance(n, (ast.Import, ast.ImportFrom))}
    assert imported == {"__future__", "hashlib", "json", "collections", "collections.abc", "dataclasses", "fractions",
                        "pathlib",
                        "typing"}
    script = ("import loop_guard, sys; g = loop_guard.load(); g.start({'scenario': 'limit'}); "
              "print(g.before('read_task_cards', {'obs': 'failed'}).verdict, 'haltproof' in sys.modules)")
    ran = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, '.'); {script}"],
                         cwd=tmp_path, capture_output=True, text=True, check=True)
    assert ran.stdout == "allow False\n"


def test_the_runtime_imports_only_the_standard_library():
    tree = ast.parse((ROOT / "src/haltproof/guard.py").read_text())
    modules = {n.names[0].name if isinstance(n, ast.Import) else n.module
               for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))}
    assert all(m.split(".")[0] in sys.stdlib_module_names or m == "__future__" for m in modules), modules
