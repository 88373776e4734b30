"""Binding a spec to real code: `haltproof check` explores what haltproof.harness.loop really does.

The broken and rewritten `decide` functions live in tests/broken_decides.py (never shipped);
each spec here is a copy of loop_demo.yaml whose `bind:` names one of those adapters.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
import textwrap

import pytest

import broken_decides
from haltproof.explorer.options import Options, sweep
from haltproof.explorer.check import check_spec, prepare
from haltproof.cli.main import main
from haltproof.harness.loop_binding import REPRESENTATIVES
from haltproof.machine import binding as B
from haltproof.machine.compiled import Machine
from haltproof.machine.errors import SpecError
from haltproof.machine.spec import load_spec, parse_spec

from conftest import LOOP_DEMO, MUTANTS

TESTS = Path(__file__).resolve().parent.parent
SHIPPED_BIND = "bind: haltproof.harness.loop_binding:LoopDemoAdapter"
HEADER = "(checked the bound code: haltproof.harness.loop_binding:LoopDemoAdapter)"
ALL_TEN = {(s, r) for s in range(1, 6) for r in (0, 1)}


@pytest.fixture(autouse=True)
def _tests_importable(monkeypatch):
    """`bind: broken_decides:Name` imports from this directory, wherever pytest was started."""
    monkeypatch.syspath_prepend(str(TESTS))


def bound_copy(tmp_path: Path, bind: str, *, keep_scenarios: bool = False, name: str | None = None) -> Path:
    """loop_demo.yaml with its bind line replaced (and, unless asked, its scenarios removed)."""
    text = LOOP_DEMO.read_text()
    assert text.count(SHIPPED_BIND) == 1
    text = text.replace(SHIPPED_BIND, f"bind: {bind}" if bind else "")
    if not keep_scenarios:
        text = text[:text.index("\nscenarios:")] + "\n"
    path = tmp_path / f"{name or re.sub(r'[^A-Za-z0-9]+', '_', bind) or 'unbound'}.yaml"
    path.write_text(text)
    return path


def bind_line(path: Path) -> int:
    return next(n for n, ln in enumerate(path.read_text().splitlines(), start=1) if ln.startswith("bind:"))


def _by_params(report: dict) -> dict:
    return {(r["params"]["max_steps"], r["params"]["max_retries"]): r for r in report["runs"]}


# ------------------------------------------------------------------ (a) the shipped harness is proved

@pytest.fixture(scope="module")
def bound_and_model():
    """JSON reports of `haltproof check specs/loop_demo.yaml` with and without --model."""
    out = {}
    for key, extra in (("code", []), ("model", ["--model"])):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            code = main(["check", str(LOOP_DEMO), "--format", "json", *extra])
        out[key] = (code, json.loads(buf.getvalue()))
    return out


def test_check_says_it_checked_the_bound_code(cli):
    ran = cli("check", LOOP_DEMO, "--verbose")
    assert ran.code == 0, ran.out[-3000:]
    headers = [ln for ln in ran.out.splitlines() if ln.startswith("specs/loop_demo.yaml") or "[loop_demo]" in ln]
    assert len(headers) == 10
    assert all(HEADER in h for h in headers)
    assert "VIOLATED" not in ran.out and "unknown" not in ran.out


def test_check_model_does_not_claim_the_code(cli):
    ran = cli("check", LOOP_DEMO, "--model", "-p", "max_steps=2", "-p", "max_retries=0")
    assert ran.code == 0
    assert "checked the bound code" not in ran.out


def test_check_model_leaves_out_the_code_builtins_and_says_so(cli):
    """--model runs none of the bound code: bound_code and code_matches_spec are left out of
    every format (never "holds"), and each run says what it explored instead."""
    pins = ("-p", "max_steps=2", "-p", "max_retries=0")
    line = cli("check", LOOP_DEMO, "--model", *pins)
    assert ", the spec's stages only (--model: the bound code did not run)" in line.out
    full = cli("check", LOOP_DEMO, "--model", "--verbose", *pins)
    assert ("(--model: explored the spec's own stages; the bound code haltproof.harness.loop_binding:"
            "LoopDemoAdapter did not run, so bound_code and code_matches_spec were not checked)") in full.out
    assert "bound_code" not in full.out.replace("so bound_code and code_matches_spec", "")
    ran = cli("check", LOOP_DEMO, "--model", "--format", "json", *pins)
    (run,) = json.loads(ran.out)["runs"]
    assert run["explored"] == "model"
    assert run["code_not_run"] == {"bind": "haltproof.harness.loop_binding:LoopDemoAdapter",
                                   "not_checked": ["bound_code", "code_matches_spec"], "by": "--model"}
    assert [p["name"] for p in run["properties"][:3]] == ["domains", "well_defined", "at_most_max_steps"]
    for fmt in ("sarif", "junit"):
        assert "bound_code" not in cli("check", LOOP_DEMO, "--model", "--format", fmt, *pins).out
    bound = json.loads(cli("check", LOOP_DEMO, "--format", "json", *pins).out)["runs"][0]
    assert "code_not_run" not in bound and {"bound_code", "code_matches_spec"} <= {p["name"] for p in bound["properties"]}


def test_check_model_refuses_to_check_a_code_builtin(cli):
    ran = cli("check", LOOP_DEMO, "--model", "--property", "code_matches_spec")
    assert ran.code == 2
    assert ("--property code_matches_spec: --model explores the spec's own stages and runs none of the "
            "bound code, so it cannot check code_matches_spec") in ran.err


def test_bound_check_proves_all_ten_combinations(bound_and_model):
    code, report = bound_and_model["code"]
    assert code == 0 and report["result"] == "proved"
    runs = _by_params(report)
    assert set(runs) == ALL_TEN
    for run in runs.values():
        assert run["explored"] == "code: haltproof.harness.loop_binding:LoopDemoAdapter"
        assert run["result"] == "proved"
        statuses = {p["name"]: p["status"] for p in run["properties"]}
        assert statuses.get("bound_code") == "holds"
        assert set(statuses.values()) == {"holds"}, statuses


def test_bound_and_model_explore_the_same_space(bound_and_model):
    code_runs = _by_params(bound_and_model["code"][1])
    model_code, model = bound_and_model["model"]
    assert model_code == 0
    model_runs = _by_params(model)
    assert set(model_runs) == ALL_TEN
    for key, run in code_runs.items():
        m = model_runs[key]
        assert m["explored"] == "model"
        for stat in ("states", "transitions", "terminal_states", "max_depth"):
            assert run["stats"][stat] == m["stats"][stat], (key, stat)
        assert run["coverage"] == m["coverage"], key
    assert code_runs[(5, 1)]["stats"]["states"] == 322 and code_runs[(5, 1)]["stats"]["transitions"] == 420


@pytest.mark.verdict
def test_bound_check_runs_the_real_decide(tmp_path):
    """Every reachable state and choice goes through the code: count the calls."""
    broken_decides.CALLS.clear()
    (run,) = check_spec(load_spec(bound_copy(tmp_path, "broken_decides:Recording")),
                        Options(pins={"max_steps": 5, "max_retries": 1}))
    assert run.result == "proved" and run.explored == "code: broken_decides:Recording"
    non_terminal = run.stats["states"] - run.stats["terminal_states"]
    assert len(broken_decides.CALLS) == 2 * 5 * non_terminal     # 5 classes, each called twice
    assert set(broken_decides.CALLS) == {"success", "needs_input", "error", "limit", "continue"}


# ------------------------------------------------------------------ (b) broken twins of the YAML mutants

TWINS = [  # adapter in broken_decides, YAML mutant in specs/mutants/
    ("LimitFirst", "limit_before_observation"),
    ("RetryPastLastStep", "retry_past_last_step"),
    ("EmptySearchContinues", "empty_search_continues"),
    ("ReadsScenario", "decide_reads_scenario"),
]
# Where a mutant names its extra rule, the code reports the decision it took instead.
RENAMED = {"retry": "continue", "scripted_limit": "limit"}
SHIPPED_RULES = {"error", "success", "needs_input", "limit", "continue"}


def _same_trace(code_trace, yaml_trace, where):
    assert (code_trace is None) == (yaml_trace is None), where
    if yaml_trace is None:
        return
    assert code_trace.kind == yaml_trace.kind and code_trace.loop_start == yaml_trace.loop_start, where
    assert len(code_trace.steps) == len(yaml_trace.steps), where
    for n, (c, y) in enumerate(zip(code_trace.steps, yaml_trace.steps)):
        assert c.state == y.state, (where, n)
        assert c.action == y.action and c.choices == y.choices, (where, n)
        if y.rule in SHIPPED_RULES or y.rule is None:
            assert c.rule == y.rule, (where, n)
        else:
            assert c.rule == RENAMED[y.rule], (where, n)


@pytest.mark.parametrize("adapter,mutant", TWINS, ids=[t[1] for t in TWINS])
def test_broken_decide_is_caught_like_its_yaml_mutant(tmp_path, adapter, mutant):
    mutant_spec = load_spec(MUTANTS / f"{mutant}.yaml")
    expected = set(mutant_spec.expect_violated)
    bound_spec = load_spec(bound_copy(tmp_path, f"broken_decides:{adapter}"))
    combos = sweep(mutant_spec, {})
    assert combos
    for params in combos:
        (y,) = check_spec(mutant_spec, Options(pins=params))
        (c,) = check_spec(bound_spec, Options(pins=params))
        assert c.explored == f"code: broken_decides:{adapter}"
        y_violated = {p.name for p in y.properties if p.status == "violated"}
        c_violated = {p.name for p in c.properties if p.status == "violated"}
        assert y_violated == expected, params                 # the mutant file is what we think it is
        # and code_matches_spec: the broken decide drifts from loop_demo's own stages
        assert c_violated == expected | {"code_matches_spec"}, params
        yp = {p.name: p for p in y.properties}
        for p in c.properties:
            if p.name in expected:
                q = yp[p.name]
                assert p.kind == q.kind
                _same_trace(p.trace, q.trace, (params, p.name))
                _same_trace(getattr(p, "other_trace", None), getattr(q, "other_trace", None),
                            (params, p.name, "other"))
        assert {p.name: p.status for p in c.properties if p.name not in ("bound_code", "code_matches_spec")} == \
               {p.name: p.status for p in y.properties}, params
        assert next(p for p in c.properties if p.name == "bound_code").status != "violated"


@pytest.mark.verdict
def test_limit_first_trace_is_the_success_on_the_last_step(tmp_path):
    (c,) = check_spec(load_spec(bound_copy(tmp_path, "broken_decides:LimitFirst")),
                      Options(pins={"max_steps": 5, "max_retries": 1}))
    p = next(p for p in c.properties if p.name == "final_answer_on_last_step_kept")
    assert len(p.trace) == 5
    last = p.trace.steps[-1]
    assert last.rule == "limit" and last.state["steps"] == 5 and last.state["decision"] == "limit"
    assert last.choices["obs"] in ("one_match", "zero_matches", "many_matches")


def test_retry_past_last_step_takes_a_sixth_action_in_the_code(tmp_path):
    (c,) = check_spec(load_spec(bound_copy(tmp_path, "broken_decides:RetryPastLastStep")),
                      Options(pins={"max_steps": 5, "max_retries": 1}))
    d = next(p for p in c.properties if p.name == "domains")
    assert len(d.trace) == 6 and d.trace.steps[-1].state["steps"] == 6
    assert "outside its domain" in d.message


def test_the_shipped_decide_is_not_a_twin(tmp_path):
    """The comparison can fail: the real decide is proved where each mutant is caught."""
    spec = load_spec(bound_copy(tmp_path, "haltproof.harness.loop_binding:LoopDemoAdapter"))
    for run in check_spec(spec, Options(pins={"max_steps": 3})):
        assert run.result == "proved"


# ------------------------------------------------------------------ (c) written differently, same decisions

@pytest.mark.parametrize("adapter", ["ByTable", "Reordered"])
def test_equivalent_decide_is_proved_for_all_ten(tmp_path, adapter):
    runs = check_spec(load_spec(bound_copy(tmp_path, f"broken_decides:{adapter}")), Options())
    model = {tuple(r.params.values()): r for r in check_spec(load_spec(LOOP_DEMO), Options(model_only=True))}
    assert {tuple(r.params.values()) for r in runs} == ALL_TEN
    for r in runs:
        assert r.explored == f"code: broken_decides:{adapter}"
        assert r.result == "proved", (r.params, [(p.name, p.message) for p in r.properties
                                                 if p.status != "holds"])
        assert all(p.status == "holds" for p in r.properties)
        assert r.stats["states"] == model[tuple(r.params.values())].stats["states"]
        assert r.coverage == model[tuple(r.params.values())].coverage


# ------------------------------------------------------------------ (d) code that misbehaves is a finding

def _check_json(cli, path: Path, *pins: str):
    args = ["check", path, "--format", "json"]
    for p in pins:
        args += ["-p", p]
    ran = cli(*args)
    return ran, ran.json()


def _prop(run: dict, name: str) -> dict:
    return next(p for p in run["properties"] if p["name"] == name)


def _raises_here(adapter, state: dict, params: dict, obs: str) -> bool:
    concrete = adapter.concretize(dict(state), params)
    try:
        adapter.step("read_task_cards", concrete, {"obs": dict(REPRESENTATIVES[obs])})
    except KeyError:
        return True
    return False


def test_code_that_raises_is_bound_code_violated_with_its_traceback(cli, tmp_path):
    path = bound_copy(tmp_path, "broken_decides:Crashing")
    ran, report = _check_json(cli, path, "max_steps=3", "max_retries=1")
    assert ran.code == 1
    assert "internal error" not in ran.err and "Traceback" not in ran.err
    (run,) = report["runs"]
    assert run["result"] == "violated"
    p = _prop(run, "bound_code")
    assert p["status"] == "violated"
    msg = p["message"]
    assert "KeyError" in msg and "retry_budget" in msg
    assert "crashing_decide" in msg and "broken_decides.py" in msg          # the user's frame
    assert "machine/binding.py" not in msg                                   # not haltproof's
    assert "obs=failed" in msg


@pytest.mark.verdict
@pytest.mark.parametrize("adapter,length", [("Crashing", 0), ("CrashingLate", 1)])
def test_the_trace_of_code_that_raises_ends_where_it_raised(tmp_path, adapter, length):
    params = {"max_steps": 3, "max_retries": 1}
    (run,) = check_spec(load_spec(bound_copy(tmp_path, f"broken_decides:{adapter}")), Options(pins=params))
    p = next(p for p in run.properties if p.name == "bound_code")
    assert p.status == "violated" and "KeyError" in p.message
    assert p.trace is not None and len(p.trace) == length                    # a shortest one
    code = getattr(broken_decides, adapter)()
    *before, last = p.trace.steps
    m = re.search(r"with obs=(\w+)", p.message)
    assert m, p.message
    assert _raises_here(code, last.state, params, m.group(1))               # it raised in this state
    for step in before:                                                      # and not on the way there
        assert not _raises_here(code, step.state, params, m.group(1))


def test_json_keeps_a_trace_that_is_only_the_initial_state(cli, tmp_path):
    ran, report = _check_json(cli, bound_copy(tmp_path, "broken_decides:Crashing"), "max_steps=3",
                              "max_retries=1")
    (run,) = report["runs"]
    trace = _prop(run, "bound_code")["trace"]
    assert trace is not None
    assert len(trace["steps"]) == 1 and trace["steps"][0]["state"]["steps"] == 0


def test_json_trace_of_code_that_raises_later(cli, tmp_path):
    ran, report = _check_json(cli, bound_copy(tmp_path, "broken_decides:CrashingLate"), "max_steps=3",
                              "max_retries=1")
    assert ran.code == 1
    (run,) = report["runs"]
    p = _prop(run, "bound_code")
    assert "crashing_late_decide" in p["message"]
    steps = p["trace"]["steps"]
    assert len(steps) == 2
    assert steps[-1]["state"]["steps"] == 1 and steps[-1]["state"]["failures"] == 1


def test_code_that_raises_shows_the_traceback_in_the_text_report(cli, tmp_path):
    ran = cli("check", bound_copy(tmp_path, "broken_decides:Crashing"), "-p", "max_steps=2",
              "-p", "max_retries=0")
    assert ran.code == 1
    assert "VIOLATED  bound_code" in ran.out
    assert "in crashing_decide" in ran.out and "KeyError: 'retry_budget'" in ran.out


def test_nondeterministic_code_is_found(cli, tmp_path):
    ran, report = _check_json(cli, bound_copy(tmp_path, "broken_decides:Flaky"), "max_steps=3",
                              "max_retries=1")
    assert ran.code == 1
    (run,) = report["runs"]
    p = _prop(run, "bound_code")
    assert p["status"] == "violated" and "nondeterministic" in p["message"]
    assert "'continue'" in p["message"] and "'limit'" in p["message"]


def test_decision_outside_its_enum_is_a_domains_violation(cli, tmp_path):
    ran, report = _check_json(cli, bound_copy(tmp_path, "broken_decides:MaybeDecision"), "max_steps=2",
                              "max_retries=1")
    assert ran.code == 1
    (run,) = report["runs"]
    p = _prop(run, "domains")
    assert p["status"] == "violated" and "'maybe'" in p["message"]
    assert p["trace"]["steps"][-1]["state"]["decision"] == "maybe"
    assert _prop(run, "bound_code")["status"] != "violated"


def test_steps_as_text_is_a_domains_violation(cli, tmp_path):
    ran, report = _check_json(cli, bound_copy(tmp_path, "broken_decides:StepsAsText"), "max_steps=2",
                              "max_retries=1")
    assert ran.code == 1
    (run,) = report["runs"]
    p = _prop(run, "domains")
    assert p["status"] == "violated" and "steps = '1'" in p["message"]
    assert p["trace"]["steps"][-1]["state"]["steps"] == "1"
    assert _prop(run, "bound_code")["status"] != "violated"


def test_unhashable_value_from_abstract_is_a_finding(cli, tmp_path):
    ran = cli("check", bound_copy(tmp_path, "broken_decides:ObservationAsDict"), "-p", "max_steps=2",
              "-p", "max_retries=1", "--format", "json")
    assert ran.code == 1, ran.err[-800:]
    assert "internal error" not in ran.err
    (run,) = ran.json()["runs"]
    bad = [p for p in run["properties"] if p["name"] in ("domains", "bound_code") and p["status"] == "violated"]
    assert bad and "observation" in bad[0]["message"]


def test_abstract_missing_a_var_is_bound_code(cli, tmp_path):
    ran, report = _check_json(cli, bound_copy(tmp_path, "broken_decides:MissingVar"), "max_steps=2",
                              "max_retries=1")
    assert ran.code == 1
    (run,) = report["runs"]
    p = _prop(run, "bound_code")
    assert p["status"] == "violated" and "failures" in p["message"] and "abstract()" in p["message"]


def test_a_rule_the_decide_table_lacks_is_bound_code(cli, tmp_path):
    ran, report = _check_json(cli, bound_copy(tmp_path, "broken_decides:UnknownRule"), "max_steps=2",
                              "max_retries=1")
    assert ran.code == 1
    (run,) = report["runs"]
    p = _prop(run, "bound_code")
    assert p["status"] == "violated" and "'retry'" in p["message"]
    assert "continue, error, limit, needs_input, success" in p["message"]     # the rules it has


# ------------------------------------------------------------------ (e) bind errors are spec errors

def _assert_spec_error(ran, path: Path, *words: str):
    assert ran.code == 2, (ran.out, ran.err)
    assert ran.out == ""
    assert "Traceback" not in ran.err and "internal error" not in ran.err
    assert f"{path.name}:{bind_line(path)}" in ran.err
    for w in words:
        assert w in ran.err


@pytest.mark.parametrize("bind,words", [
    ("no_such_module_hp:Adapter", ["no_such_module_hp"]),
    ("haltproof.harness.loop_binding:NoSuchAdapter", ["NoSuchAdapter"]),
    ("haltproof.harness.loop_binding", ["module:Name"]),
    ("broken_decides:InitRaises", ["no config for the adapter"]),
    ("broken_decides:NoStep", ["step"]),
], ids=["no-module", "no-attribute", "not-module-colon-name", "init-raises", "no-step"])
def test_bind_errors_exit_2_with_file_and_line(cli, tmp_path, bind, words):
    path = bound_copy(tmp_path, bind, name="badbind")
    _assert_spec_error(cli("check", path), path, *words)


def test_module_that_fails_to_import_is_a_spec_error(cli, tmp_path, monkeypatch):
    (tmp_path / "hp_import_fails.py").write_text("raise RuntimeError('boom at import')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    path = bound_copy(tmp_path, "hp_import_fails:Adapter", name="badimport")
    _assert_spec_error(cli("check", path), path, "boom at import")


def test_a_bad_bind_stops_the_whole_check_before_any_run(cli, tmp_path):
    path = bound_copy(tmp_path, "haltproof.harness.loop_binding:NoSuchAdapter", name="badbind")
    ran = cli("check", LOOP_DEMO, path)
    _assert_spec_error(ran, path, "NoSuchAdapter")


@pytest.mark.parametrize("command", ["replay", "conform"])
def test_bind_errors_in_replay_and_conform(cli, tmp_path, command):
    path = bound_copy(tmp_path, "no_such_module_hp:Adapter", keep_scenarios=True, name="badbind")
    args = ["replay", path, "--scenario", "one_match"] if command == "replay" else \
           ["conform", path, "--examples", "5"]
    _assert_spec_error(cli(*args), path, "no_such_module_hp")


def test_model_mode_does_not_import_the_bound_code(cli, tmp_path):
    path = bound_copy(tmp_path, "no_such_module_hp:Adapter", name="badbind")
    ran = cli("check", path, "--model", "-p", "max_steps=1", "-p", "max_retries=0")
    assert ran.code == 0


# ------------------------------------------------------------------ (f) replay runs the bound code

SCENARIO_ENDS = {"one_match": ("success", 1), "two_matches": ("needs_input", 1),
                 "temporary_error": ("success", 2), "permanent_error": ("error", 2), "limit": ("limit", 5),
                 "missing_file": ("error", 2), "no_matches": ("needs_input", 1),
                 "permanent_error_no_retry": ("error", 1)}


@pytest.mark.parametrize("model", [False, True], ids=["code", "model"])
@pytest.mark.parametrize("scenario", sorted(SCENARIO_ENDS))
def test_replay_scenarios_end_right(cli, scenario, model):
    ran = cli("replay", LOOP_DEMO, "--scenario", scenario, *(["--model"] if model else []))
    assert ran.code == 0, ran.out
    decision, steps = SCENARIO_ENDS[scenario]
    final = ran.out.splitlines()[-1]
    assert final.startswith(f"# ok: {steps} steps")
    assert f"decision={decision}" in final
    body = [ln for ln in ran.out.splitlines() if not ln.startswith("#")]
    assert len(body) == 5 * steps and body[-1] == f"decision: {decision}"


def test_replay_calls_the_code_and_model_does_not(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("HALTPROOF_IN_PROCESS", "1")    # the calls are recorded in this process (cli/supervise.py)
    path = bound_copy(tmp_path, "broken_decides:Recording", keep_scenarios=True)
    broken_decides.CALLS.clear()
    ran = cli("replay", path, "--scenario", "limit", "--model")
    assert ran.code == 0 and broken_decides.CALLS == []
    ran = cli("replay", path, "--scenario", "limit")
    assert ran.code == 0
    assert broken_decides.CALLS and set(broken_decides.CALLS) == {"continue", "limit"}
    assert broken_decides.CALLS.count("limit") >= 1 and broken_decides.CALLS.count("continue") >= 4


def test_replay_of_broken_code_fails_where_the_model_passes(cli, tmp_path):
    path = bound_copy(tmp_path, "broken_decides:EmptySearchContinues", keep_scenarios=True)
    assert cli("replay", path, "--scenario", "no_matches", "--model").code == 0
    ran = cli("replay", path, "--scenario", "no_matches")
    assert ran.code == 1
    assert "# FAILED" in ran.out
    assert "decision: continue" in ran.out


# ------------------------------------------------------------------ (g) --timeout bounds the bound code

def haltproof_process(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess:
    """`haltproof ARGS` in its own process, with tests/stuck_code.py importable. Code that
    does not return would hold it: it shows as TimeoutExpired here, never as a stuck test
    run (and a stuck thread that kept the process alive would show the same way)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), str(TESTS.parent)])}
    return subprocess.run([sys.executable, "-m", "haltproof.cli.main", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


STUCK_AT = ("running the bound code for action read_task_cards (obs=failed) from state steps=1 failures=1 "
            "phase=observed observation=failed decision=continue scenario=one_match")


@pytest.mark.parametrize("adapter", ["Sleeping", "Spinning"])
@pytest.mark.slow
def test_timeout_ends_a_check_whose_bound_code_never_returns(tmp_path, adapter):
    """decide sleeps for an hour, or spins, from the second step on: the check ends at
    --timeout, incomplete, and says which action on which state was running."""
    path = bound_copy(tmp_path, f"stuck_code:{adapter}")
    ran = haltproof_process("check", path, "-p", "max_steps=3", "-p", "max_retries=1", "--timeout", "2",
                            "--json", tmp_path / "report.json", cwd=tmp_path)
    assert ran.returncode == 3, ran.stderr
    reason = f"stopped at 42 states: --timeout 2 s reached while {STUCK_AT}"
    assert f"  {reason}" in ran.stdout.splitlines()
    assert "incomplete (stopped at --timeout): 42 states" in ran.stdout
    report = json.loads((tmp_path / "report.json").read_text())
    (run,) = report["runs"]
    assert (report["result"], run["result"], run["stopped_by"]) == ("incomplete", "incomplete", "timeout")
    assert run["stop_reason"] == reason
    assert {p["name"]: p["status"] for p in run["properties"]}["bound_code"] == "unknown"


@pytest.mark.slow
def test_timeout_ends_a_bound_check_from_the_python_api_in_a_thread(tmp_path):
    """Off the main thread there is no SIGALRM: each call runs in a worker that is given up
    at the deadline. The process still exits (the sleeping worker is a daemon)."""
    path = bound_copy(tmp_path, "stuck_code:Sleeping")
    script = tmp_path / "api_in_thread.py"
    script.write_text(
        "import json, sys, threading\n"
        "from haltproof.api import check\n"
        "out = {}\n"
        "def run():\n"
        f"    report = check({str(path)!r}, params={{'max_steps': 3, 'max_retries': 1}}, timeout=2)\n"
        "    out.update(result=report.result, code=report.exit_code, reason=report.runs[0].stop_reason)\n"
        "worker = threading.Thread(target=run)\n"
        "worker.start()\n"
        "worker.join()\n"
        "print(json.dumps(out))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), str(TESTS.parent)])}
    ran = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == {"result": "incomplete", "code": 3,
                                      "reason": f"stopped at 42 states: --timeout 2 s reached while {STUCK_AT}"}


@pytest.mark.slow
def test_timeout_bounds_creating_the_adapter(tmp_path):
    path = bound_copy(tmp_path, "stuck_code:SleepingInit")
    ran = haltproof_process("check", path, "--timeout", "2", cwd=tmp_path)
    assert ran.returncode == 3 and ran.stdout == ""
    assert ran.stderr == "haltproof: incomplete: --timeout reached while creating the adapter stuck_code:SleepingInit\n"


@pytest.mark.slow
def test_timeout_bounds_importing_the_bound_module(tmp_path):
    (tmp_path / "hp_import_spins.py").write_text("while True:\n    pass\n")
    path = bound_copy(tmp_path, "hp_import_spins:Adapter")
    ran = haltproof_process("check", path, "--timeout", "2", cwd=tmp_path)
    assert ran.returncode == 3 and ran.stdout == ""
    assert ran.stderr == ("haltproof: incomplete: --timeout reached while importing the bound module "
                          "hp_import_spins (bind: hp_import_spins:Adapter)\n")


@pytest.mark.slow
def test_timeout_bounds_replay_and_conform(tmp_path):
    path = bound_copy(tmp_path, "stuck_code:Spinning", keep_scenarios=True)
    ran = haltproof_process("replay", path, "--scenario", "permanent_error", "--timeout", "2", cwd=tmp_path)
    assert ran.returncode == 3
    assert ran.stderr == ("haltproof: incomplete: --timeout reached while running the bound code for action "
                          "read_task_cards (obs=failed) from state steps=1 failures=1 phase=observed "
                          "observation=failed decision=continue scenario=permanent_error\n")
    ran = haltproof_process("conform", path, "--timeout", "2", cwd=tmp_path)
    assert ran.returncode == 3, ran.stdout + ran.stderr
    assert ran.stdout.startswith("conformance of loop_demo and stuck_code:Spinning: incomplete, --timeout "
                                 "reached after ")
    assert ran.stdout.rstrip().endswith("no difference found so far, which proves nothing")


@pytest.mark.slow
def test_timeout_bounds_graph_exploring_stuck_code(tmp_path):
    """graph explores the bound code too: it had no --timeout, and a stuck step held it for
    ever. At the deadline no graph is written (a graph of part of the space would read as
    the whole), exit 3, naming what was running."""
    path = bound_copy(tmp_path, "stuck_code:Spinning")
    out = tmp_path / "g.dot"
    ran = haltproof_process("graph", path, "-p", "max_steps=3", "-p", "max_retries=1", "--timeout", "2",
                            "-o", out, cwd=tmp_path)
    assert (ran.returncode, ran.stdout) == (3, "")
    assert ran.stderr == (f"haltproof graph: incomplete: stopped at 42 states: --timeout 2 s reached while "
                          f"{STUCK_AT}; no graph written\n")
    assert not out.exists()
    ran = haltproof_process("graph", bound_copy(tmp_path, "stuck_code:SleepingInit"), "-p", "max_steps=3",
                            "-p", "max_retries=1", "--timeout", "2", cwd=tmp_path)
    assert (ran.returncode, ran.stdout) == (3, "")
    assert ran.stderr == ("haltproof graph: incomplete: --timeout 2 s reached while creating the adapter "
                          "stuck_code:SleepingInit; no graph written\n")


def test_graph_with_a_timeout_that_is_not_reached_draws_the_whole_graph(cli, tmp_path):
    with_timeout = cli("graph", LOOP_DEMO, "-p", "max_steps=2", "-p", "max_retries=1", "--timeout", "60")
    without = cli("graph", LOOP_DEMO, "-p", "max_steps=2", "-p", "max_retries=1")
    assert (with_timeout.code, with_timeout.err) == (0, "") and with_timeout.out == without.out
    bad = cli("graph", LOOP_DEMO, "-p", "max_steps=2", "-p", "max_retries=1", "--timeout", "nan")
    assert bad.code == 2 and "--timeout must be a finite number, got 'nan'" in bad.err


# ------------------------------------------------------------------ (e) values of the wrong type

TYPED = """\
machine: typed
bind: typed_adapters:{adapter}
vars:
  x: {{type: int, min: 0, max: 1, init: 0}}
  lit: {{type: bool, init: false}}
actions:
  inc: {{when: x == 0, do: [{{set: {{x: 1}}}}]}}
  flip: {{when: not lit, do: [{{set: {{lit: true}}}}]}}
  late_x: {{when: x == 0, do: [{{set: {{x: 1}}}}]}}
  late_lit: {{when: not lit, do: [{{set: {{lit: true}}}}]}}
terminal: x == 1 and lit
"""


def _typed(tmp_path: Path, adapter: str):
    path = tmp_path / f"typed_{adapter}.yaml"
    path.write_text(TYPED.format(adapter=adapter))
    (run,) = check_spec(load_spec(path), Options())
    return run


def test_the_honest_typed_adapter_is_proved(tmp_path):
    run = _typed(tmp_path, "Honest")
    assert run.result == "proved" and run.explored == "code: typed_adapters:Honest"
    assert (run.stats["states"], run.stats["transitions"]) == (4, 8)


@pytest.mark.parametrize("adapter,action,var,shown,domain", [
    ("XTrue", "late_x", "x", "True", "0..1"),
    ("XFloat", "late_x", "x", "1.0", "0..1"),
    ("LitOne", "late_lit", "lit", "1", "true/false")])
def test_a_value_of_the_wrong_type_from_the_code_is_a_domains_violation(tmp_path, adapter, action, var,
                                                                        shown, domain):
    """The wrong value equals a state already reached (True == 1 == 1.0): it is still checked."""
    run = _typed(tmp_path, adapter)
    assert run.result == "violated"
    p = next(p for p in run.properties if p.name == "domains")
    assert p.status == "violated" and p.message == f"{var} = {shown} is outside its domain {domain}"
    assert [s.action for s in p.trace.steps] == [None, action]            # the shortest trace
    assert repr(p.trace.steps[-1].state[var]) == shown
    assert next(p for p in run.properties if p.name == "bound_code").status != "violated"


def test_a_value_whose_own_methods_never_return_is_a_finding_not_a_hang(tmp_path):
    """haltproof hashed and compared the code's values (the determinism check) outside the
    deadline: a user class whose __eq__ or __hash__ loops hung the check. Only builtin
    values are ever hashed, compared or printed now."""
    path = bound_copy(tmp_path, "stuck_code:EndlessValue")
    ran = haltproof_process("check", path, "-p", "max_steps=2", "-p", "max_retries=0", "--timeout", "30",
                            "--json", tmp_path / "report.json", cwd=tmp_path)
    assert ran.returncode == 1, ran.stderr
    (run,) = json.loads((tmp_path / "report.json").read_text())["runs"]
    bound = {p["name"]: p for p in run["properties"]}["bound_code"]
    assert bound["status"] == "violated"
    assert bound["message"].endswith("abstract() gave var observation a value of type _Endless; abstract states "
                                     "hold ints, bools and strings")


# ---------------------------------------------------------------- mutants that survived (issue 18)
# Single-line bugs in machine/binding.py that the verdict selection let through (issue 18):
# the checks bound code's results pass before haltproof trusts them, the way an adapter is
# loaded, and how the determinism mode is chosen. Each message is pinned exactly: a
# finding that names the wrong var or the wrong reason sends the user the wrong way.
# (These tests were test_binding_kills.)

KINDS = """\
machine: kinds
vars:
  n: {type: int, min: -2, max: %d, init: 0}
  flag: {type: bool, init: false}
  mode: {type: enum, values: [idle, busy], init: idle}
actions:
  go: {when: n < 0, do: [{set: {n: n + 1}}]}
terminal: n == 0
"""


def _machine(top: int = 3) -> Machine:
    [m] = prepare(parse_spec(textwrap.dedent(KINDS % top), "kinds.yaml"), Options(model_only=True))
    return m


# ---------------------------------------------------------------- values the code gives back

@pytest.mark.verdict
@pytest.mark.parametrize("var,value,ok", [
    (0, 0, True), (0, -2, True), (0, 3, True), (0, -3, False), (0, 4, False),
    (0, True, False), (0, 1.0, False), (0, "1", False),          # 1 by ==, not an int
    (1, False, True), (1, True, True), (1, 0, False), (1, 1, False), (1, "true", False),
    (2, "idle", True), (2, "busy", True), (2, "done", False), (2, 0, False),
])
def test_a_value_is_in_its_domain_only_with_the_domains_type(var, value, ok):
    assert B.value_checkers(_machine())[var](value) is ok


@pytest.mark.verdict
@pytest.mark.parametrize("result,message", [
    (([1], None), "abstract() must return a dict with exactly the vars ['a', 'b'], got list"),
    (({1: 2, "a": 1}, None), "abstract() must return a dict with exactly the vars ['a', 'b'], got keys that are "
                             "not all strings"),
    (({"a": 1}, None), "abstract() must return a dict with exactly the vars ['a', 'b'], got ['a']"),
    (({"a": 1, "b": 2, "c": 3}, None), "abstract() must return a dict with exactly the vars ['a', 'b'], "
                                       "got ['a', 'b', 'c']"),
    (({"a": 1, "b": [1]}, None), "abstract() gave var b a value of type list; abstract states hold ints, bools "
                                 "and strings"),
    (({"a": 1, "b": 2}, 3), "the bound code reports a rule of type int; a rule is the name of a decide rule "
                            "(a string) or None"),
])
def test_what_the_code_returns_is_checked_before_it_is_trusted(result, message):
    with pytest.raises(B.CodeError) as found:
        B._plain_result(result, ["b", "a"])
    assert str(found.value) == message


@pytest.mark.verdict
def test_a_result_of_builtin_values_passes():
    assert B._plain_result(({"a": 1, "b": "x"}, "rule"), ["a", "b"]) == ({"a": 1, "b": "x"}, "rule")
    assert B._plain_result(({"a": None, "b": 1.5}, None), ["a", "b"]) == ({"a": None, "b": 1.5}, None)
    assert B.checked_hashable((1, "x"), ["a", "b"], "abstract()") == (1, "x")
    with pytest.raises(B.CodeError) as found:
        B.checked_hashable((1, [2]), ["a", "b"], "abstract()")
    assert str(found.value) == ("abstract() gave var b the unhashable value [2] (list); abstract states hold "
                                "ints, bools and strings")


@pytest.mark.verdict
def test_the_code_and_the_spec_disagree_on_a_type_not_only_a_value():
    """True, 1 and 1.0 are three values: the code giving 1 where the spec's stages give True differs."""
    names = ["n", "flag"]
    assert B._matching(((1, True), None), (1, True), None, names) == (None, None)
    assert B._matching(((1, True), "r"), (1, True), None, names) == ("r", None)      # the spec names the rule
    assert B._matching(((1, True), None), (1, 1), None, names) == (
        None, "the code and the spec's own stages disagree: flag: code 1, spec true")
    assert B._matching(((1, True), "r"), (2, True), "s", names) == (
        "s", "the code and the spec's own stages disagree: rule: code 's', spec 'r'; n: code 2, spec 1")


# ---------------------------------------------------------------- loading an adapter

@pytest.mark.verdict
@pytest.mark.parametrize("ref,message", [
    ("nocolon", "bind must be written module:Name"),
    (":X", "bind must be written module:Name"),
    ("m:", "bind must be written module:Name"),
    ("no_such_module_xyz:X", "cannot import the bound module: ModuleNotFoundError: No module named "
                             "'no_such_module_xyz'"),
    ("haltproof.harness.loop_binding:Nope", "module haltproof.harness.loop_binding has no 'Nope'"),
    ("haltproof.harness.loop_binding:LoopDemoAdapter.nope",
     "module haltproof.harness.loop_binding has no 'LoopDemoAdapter.nope'"),
    ("math:pi", "the adapter has no concretize, step, abstract method"),
    ("fractions:Fraction", "the adapter has no concretize, step, abstract method"),
    # a dotted name is looked up attribute by attribute; a class that cannot be made is named
    ("live_agents:AgentAdapter.agent",
     "cannot create the adapter: TypeError: Agent.__init__() missing 1 required positional argument: 'limit'"),
])
def test_an_adapter_that_cannot_be_loaded_is_a_spec_error_at_the_bind_line(ref, message):
    with pytest.raises(SpecError) as refused:
        B.load_adapter(ref, "f.yaml", 3)
    [problem] = refused.value.problems
    assert (problem.file, problem.line, problem.message, problem.text) == ("f.yaml", 3, message, ref)


@pytest.mark.verdict
def test_a_class_is_instantiated_and_an_instance_taken_as_it_is():
    from haltproof.harness import loop_binding
    made = B.load_adapter("haltproof.harness.loop_binding:LoopDemoAdapter", "f.yaml", 3)
    assert type(made) is loop_binding.LoopDemoAdapter


# ---------------------------------------------------------------- determinism modes

@pytest.mark.verdict
def test_auto_checks_every_transition_up_to_100000_declared_states_and_samples_past_them():
    # n in -2..top (top + 3 values) x 2 bools x 2 modes
    assert B.declared_states(_machine(3)) == 6 * 2 * 2
    at = _machine(24_997)                        # 25,000 x 4 = 100,000
    assert B.declared_states(at) == 100_000
    assert B.determinism_for(at, "auto").__dict__ == {
        "mode": "full", "why": "auto: 100,000 declared states, at most 100,000", "extra_calls": 0, "seconds": 0.0}
    past = _machine(24_998)
    assert B.determinism_for(past, "auto").__dict__ == {
        "mode": "sample", "why": "auto: 100,004 declared states, more than 100,000", "extra_calls": 0,
        "seconds": 0.0}
    assert B.determinism_for(past, "off").__dict__ == {"mode": "off", "why": "--determinism off",
                                                       "extra_calls": 0, "seconds": 0.0}
    with pytest.raises(ValueError) as refused:
        B.determinism_for(past, "never")
    assert str(refused.value) == "determinism must be one of auto, full, sample, off, got 'never'"
    assert B.Determinism("full", "why", 3, 0.123456).to_json() == {
        "mode": "full", "why": "why", "extra_calls": 3, "seconds": 0.1235}


# ---------------------------------------------------------------- what messages show

@pytest.mark.verdict
def test_values_in_messages_are_written_as_in_a_spec():
    assert [B._value_text(v) for v in (True, False, 0, 1, "idle")] == ["true", "false", "0", "1", "idle"]


def _raises_in_user_code() -> None:
    raise ValueError("boom")


@pytest.mark.verdict
def test_the_users_traceback_keeps_the_users_frames_and_the_error():
    try:
        _raises_in_user_code()
    except ValueError as exc:
        text = B.user_traceback(exc)
    lines = text.splitlines()
    assert lines[0].startswith('  File "') and lines[0].endswith(", in test_the_users_traceback_keeps_the_users_"
                                                                 "frames_and_the_error")
    assert lines[-2:] == ['    raise ValueError("boom")', "ValueError: boom"]
    assert text == text.strip("\n") and "XX" not in text


@pytest.mark.verdict
def test_the_working_directorys_module_wins_over_a_same_named_one_earlier_on_the_path(tmp_path, monkeypatch):
    """A -j worker inherits its parent's sys.path, where another folder's `adapter.py` may come
    first: the working directory's own file is the one meant (it was an exit 2, 'module adapter
    has no AgentAdapter', in a worker only)."""
    from haltproof.machine.binding import import_user_module
    other, here = tmp_path / "other", tmp_path / "here"
    other.mkdir()
    here.mkdir()
    (other / "hp_same_name.py").write_text("WHICH = 'other'\n")
    (here / "hp_same_name.py").write_text("WHICH = 'here'\n")
    monkeypatch.chdir(here)
    monkeypatch.setattr(sys, "path", [str(other), str(here), *sys.path])
    monkeypatch.delitem(sys.modules, "hp_same_name", raising=False)
    assert import_user_module("hp_same_name", str(tmp_path / "spec_folder")).WHICH == "here"
    sys.modules.pop("hp_same_name", None)


@pytest.mark.verdict
def test_a_same_named_module_of_another_folder_already_imported_is_not_taken_for_this_ones(tmp_path, monkeypatch):
    """Two examples each with an `hp_twice.py` beside its spec, checked in one process: the
    second spec gets its own file, not the first's module; asked again, a folder keeps the
    module it imported (seed-22 mutant: the loaded module's file read as `abspath(None)`)."""
    from haltproof.machine.binding import import_user_module
    one, two = tmp_path / "one", tmp_path / "two"
    for folder in (one, two):
        folder.mkdir()
        (folder / "hp_twice.py").write_text(f"WHICH = {folder.name!r}\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "hp_twice", raising=False)
    first = import_user_module("hp_twice", str(one))
    assert (first.WHICH, import_user_module("hp_twice", str(one)) is first) == ("one", True)
    assert import_user_module("hp_twice", str(two)).WHICH == "two"
    sys.modules.pop("hp_twice", None)


@pytest.mark.verdict
def test_a_module_beside_the_spec_is_imported_from_the_specs_folder(tmp_path, monkeypatch):
    """A spec found anywhere imports the code beside it: its folder joins the path (first)."""
    from haltproof.machine.binding import import_user_module
    (tmp_path / "hp_beside.py").write_text("WHICH = 'beside'\n")
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(tmp_path)])
    monkeypatch.delitem(sys.modules, "hp_beside", raising=False)
    assert import_user_module("hp_beside", str(tmp_path)).WHICH == "beside"
    assert sys.path[0] == str(tmp_path) and sys.path.count(str(tmp_path)) == 1
    sys.modules.pop("hp_beside", None)
