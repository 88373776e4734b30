"""Every comparison of bound code with something else catches each compared field alone.

`check` compares the code's result for a transition (its rule and each var) with the spec's
own stages (`code_matches_spec`), with a second call (the determinism check), with the
result of another concrete value of the same abstract choice (`representatives()`) and with
the run that came by another path (`--paths`); it reads a live run back and compares it with
the state it stands for; `conform` compares the code with the stages on random runs; `replay`
compares a run with the recorded trace. A comparison that drops one field (the rule, say)
still catches a difference in two fields at once, so each test here changes exactly one
field of one transition (tests/compare_adapters.py): the rule, a var's value, or a var's
type (True == 1 == 1.0 in Python; an int where the spec has a bool is another value).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from haltproof.explorer.options import Options
from haltproof.explorer.check import check_spec
from haltproof.machine import binding as B
from haltproof.machine.spec import load_spec

from compare_adapters import RAISING, RETRYING

pytestmark = pytest.mark.verdict

TESTS = Path(__file__).resolve().parent.parent
FIELDS = ["rule", "tries", "status", "noted", "noted_type", "tries_type"]

# the state after `call` with tool=fail from the initial state, as the stages give it
# (tries=1 status=running noted=true, rule retry), with each field off alone
AFTER_FAIL = {"tries": 1, "status": "running", "noted": True}
OFF_AFTER_FAIL = {
    "rule": ({**AFTER_FAIL}, "gave_up"),
    "tries": ({**AFTER_FAIL, "tries": 0}, "retry"),
    "status": ({**AFTER_FAIL, "status": "failed"}, "retry"),
    "noted": ({**AFTER_FAIL, "noted": False}, "retry"),
    "noted_type": ({**AFTER_FAIL, "noted": 1}, "retry"),
    "tries_type": ({**AFTER_FAIL, "tries": 1.0}, "retry"),
}
# how code_matches_spec names each difference
DRIFT = {"rule": "rule: code 'gave_up', spec 'retry'", "tries": "tries: code 0, spec 1",
         "status": "status: code failed, spec running", "noted": "noted: code false, spec true",
         "noted_type": "noted: code 1, spec true", "tries_type": "tries: code 1.0, spec 1"}


@pytest.fixture(autouse=True)
def _tests_importable(monkeypatch):
    monkeypatch.syspath_prepend(str(TESTS))


def retrying(tmp_path: Path, adapter: str) -> Path:
    path = tmp_path / f"{adapter}.yaml"
    path.write_text(RETRYING.format(adapter=adapter))
    return path


def run_of(path: Path, **options):
    (run,) = check_spec(load_spec(path), Options(**options))
    return run


def props(run) -> dict:
    return {p.name: p for p in run.properties}


def shown(result: tuple[dict, str]) -> str:
    return f"{result[0]} (rule {result[1]!r})"


@pytest.mark.parametrize("adapter", ["Retrying", "LiveRetrying"])
def test_code_that_does_what_the_stages_do_is_proved(tmp_path, adapter):
    run = run_of(retrying(tmp_path, adapter), paths=2 if adapter.startswith("Live") else 1)
    assert run.result == "proved"
    assert (run.stats["states"], run.stats["transitions"]) == (5, 6)
    assert run.coverage["rules"] == {"finished": 2, "retry": 2, "gave_up": 2}


# ---------------------------------------------------------------- code_matches_spec

def test_a_rule_alone_that_differs_from_the_stages_is_a_difference():
    """The code fires gave_up into the very state the spec's retry reaches: dropping the
    rule from the comparison judged that transition as matching (issue 26, finding 1)."""
    names = ["tries", "status", "noted"]
    spec_out = ((1, "running", True), "retry")
    assert B._matching(spec_out, (1, "running", True), "gave_up", names) == (
        "gave_up", "the code and the spec's own stages disagree: rule: code 'gave_up', spec 'retry'")
    assert B._matching(spec_out, (1, "running", True), "retry", names) == ("retry", None)
    assert B._matching(spec_out, (1, "running", True), None, names) == ("retry", None)


@pytest.mark.parametrize("adapter", ["Retrying_rule", "LiveRetrying_rule"])
def test_check_fails_code_that_fires_another_rule_into_the_same_state(tmp_path, cli, adapter):
    """Exit 1 with the shortest trace, on the state API and on live binding alike: the code
    reports gave_up where the spec's table says retry, and reaches the same state."""
    path = retrying(tmp_path, adapter)
    ran = cli("check", path, "--format", "json")
    assert ran.code == 1, ran.out + ran.err
    (run,) = ran.json()["runs"]
    assert run["result"] == "violated"
    found = {p["name"]: p for p in run["properties"] if p["status"] != "holds"}
    assert list(found) == ["code_matches_spec"]
    assert found["code_matches_spec"]["message"] == (
        "action call with tool=fail: the code and the spec's own stages disagree: "
        "rule: code 'gave_up', spec 'retry'")
    assert found["code_matches_spec"]["trace"]["steps"] == [
        {"state": {"tries": 0, "status": "running", "noted": False}, "action": None, "choices": {}, "rule": None},
        {"state": {"tries": 1, "status": "running", "noted": True}, "action": "call", "choices": {"tool": "fail"},
         "rule": "gave_up"}]
    text = cli("check", path)
    assert text.code == 1
    assert ("  VIOLATED  code_matches_spec  action call with tool=fail: the code and the spec's own stages "
            "disagree: rule: code 'gave_up', spec 'retry'\n"
            "      step  action     choices    rule     state (changes)\n"
            "      0     (initial)                      tries=0 status=running noted=false\n"
            "      1     call       tool=fail  gave_up  tries=1 noted=true\n") in text.out


def test_steps_and_coverage_read_the_rule_the_code_fired(tmp_path):
    """Where the code and the stages disagree, the code's run is explored: a `step:` property
    and the coverage read the rule the code reported, the one the finding's trace shows."""
    path = retrying(tmp_path, "Retrying_rule")
    path.write_text(path.read_text() + "  gives_up_only_when_failed:\n"
                                       "    step: rule != gave_up or after.status == failed\n")
    run = run_of(path)
    found = props(run)
    step = found["gives_up_only_when_failed"]
    assert step.status == "violated"
    assert [(s.rule, s.state) for s in step.trace.steps] == [(s.rule, s.state) for s in
                                                             found["code_matches_spec"].trace.steps] == [
        (None, {"tries": 0, "status": "running", "noted": False}),
        ("gave_up", {"tries": 1, "status": "running", "noted": True})]
    # fail from the initial state fires gave_up in the code; flaky (the same class to the spec) retry
    assert run.coverage["rules"] == {"finished": 2, "retry": 1, "gave_up": 3}


@pytest.mark.parametrize("field", FIELDS)
def test_code_matches_spec_catches_each_field_alone(tmp_path, field):
    run = run_of(retrying(tmp_path, f"Retrying_{field}"))
    finding = props(run)["code_matches_spec"]
    assert finding.status == "violated"
    assert finding.message == ("action call with tool=fail: the code and the spec's own stages disagree: "
                               + DRIFT[field])
    state, rule = OFF_AFTER_FAIL[field]
    assert [(s.choices, s.rule) for s in finding.trace.steps] == [({}, None), ({"tool": "fail"}, rule)]
    assert finding.trace.steps[-1].state == state


# ---------------------------------------------------------------- the determinism check

@pytest.mark.parametrize("field", FIELDS)
def test_the_determinism_check_catches_each_field_alone(tmp_path, field):
    """The second call of the same transition has one field off: a bool 1 for true, a float
    1.0 for the int 1 included (== in Python, so a plain comparison of the two results
    took them for the same and proved the run)."""
    run = run_of(retrying(tmp_path, f"SecondCall_{field}"))
    finding = props(run)["bound_code"]
    assert finding.status == "violated"
    assert finding.message == (
        "action call with tool=fail: the bound code is nondeterministic: two calls with the same state "
        f"and choices gave {shown((AFTER_FAIL, 'retry'))} and {shown(OFF_AFTER_FAIL[field])}")
    assert [(s.choices, s.rule) for s in finding.trace.steps] == [({}, None)]


def test_the_determinism_check_compares_what_a_declared_exception_stands_for(tmp_path):
    """A second call that raises a declared exception (raises:) where the first returned is
    compared by the outcome the exception stands for: its rule, and the state abstract()
    reads from the run it left with the exception's set: values on top."""
    path = tmp_path / "raising.yaml"
    path.write_text(RAISING.format(adapter="SecondRaises"))
    finding = props(run_of(path))["bound_code"]
    assert finding.message == (
        "action call with tool=fail: the bound code is nondeterministic: two calls with the same state and "
        f"choices gave {shown((AFTER_FAIL, 'retry'))} and "
        f"{shown(({'tries': 0, 'status': 'failed', 'noted': False}, 'gave_up'))}")


# ---------------------------------------------------------------- several concrete values of a class

@pytest.mark.parametrize("field", FIELDS)
def test_the_representatives_check_catches_each_field_alone(tmp_path, field):
    run = run_of(retrying(tmp_path, f"OtherValue_{field}"))
    finding = props(run)["bound_code"]
    assert finding.status == "violated"
    assert finding.message == (
        "action call with tool=fail: two concrete values of the abstract choice tool=fail behave differently: "
        f"representative 1 gives {shown((AFTER_FAIL, 'retry'))}, representative 2 (of 2) gives "
        f"{shown(OFF_AFTER_FAIL[field])}: the code tells apart values the abstraction puts in one class")


# ---------------------------------------------------------------- --paths

# after fail or flaky (both tries=1 status=running noted=true), `call` with tool=ok: the
# stages give tries=2 status=done noted=false, rule finished; the code that came by flaky
# has one field off
AFTER_OK = {"tries": 2, "status": "done", "noted": False}
OFF_AFTER_OK = {
    "rule": ({**AFTER_OK}, "gave_up"),
    "tries": ({**AFTER_OK, "tries": 0}, "finished"),
    "status": ({**AFTER_OK, "status": "failed"}, "finished"),
    "noted": ({**AFTER_OK, "noted": True}, "finished"),
    "noted_type": ({**AFTER_OK, "noted": 0}, "finished"),
    "tries_type": ({**AFTER_OK, "tries": 2.0}, "finished"),
}


@pytest.mark.parametrize("field", FIELDS)
def test_the_paths_check_catches_each_field_alone(tmp_path, field):
    path = retrying(tmp_path, f"AfterFlaky_{field}")
    assert run_of(path).result == "proved"        # one path per state: the kept run came by fail
    run = run_of(path, paths=2)
    finding = props(run)["bound_code"]
    assert finding.status == "violated"
    assert finding.message == (
        "action call with tool=flaky: this path reaches a state another path reached first, but the two runs "
        f"then differ: action call (tool=ok) gives {shown(OFF_AFTER_OK[field])} after this path and "
        f"{shown((AFTER_OK, 'finished'))} after the first: the abstract state leaves out something the code "
        "acts on (--paths)")
    assert [(s.choices, s.rule) for s in finding.trace.steps] == [({}, None)]


# ---------------------------------------------------------------- reading a live run back

@pytest.mark.parametrize("field,shown_state", [
    ("tries", "tries=0 status=running noted=true"), ("status", "tries=1 status=failed noted=true"),
    ("noted", "tries=1 status=running noted=false"), ("noted_type", "tries=1 status=running noted=1"),
    ("tries_type", "tries=1.0 status=running noted=true")])
def test_reading_a_restored_run_back_catches_each_var_alone(tmp_path, field, shown_state):
    """A live run handed to a transition must be in the state it stands for, each var of the
    same type: a restore that gives 1 for true (or 1.0 for 1) gives back another run."""
    assert run_of(retrying(tmp_path, "Restores")).result == "proved"
    run = run_of(retrying(tmp_path, f"Restores_{field}"))
    finding = props(run)["bound_code"]
    assert finding.status == "violated"
    assert finding.message == (f"action call with tool=ok: the live run for this state is in state {shown_state}: "
                               "restore(snapshot(...)) does not give back the run the snapshot was taken of")
    assert [(s.choices, s.rule, s.state) for s in finding.trace.steps] == [
        ({}, None, {"tries": 0, "status": "running", "noted": False}),
        ({"tool": "fail"}, "retry", AFTER_FAIL)]


# ---------------------------------------------------------------- conform

CONFORM_LINE = {"rule": "rule: spec 'retry', code 'gave_up'", "tries": "tries: spec 1, code 0",
                "status": "status: spec running, code failed", "noted": "noted: spec true, code false",
                "noted_type": "noted: spec true, code 1 (int), outside its domain true/false",
                "tries_type": "tries: spec 1, code 1.0 (float), outside its domain 0..2"}


def conform_run(cli, path: Path):
    return cli("conform", path, "--examples", "30", "--seed", "0")


@pytest.mark.parametrize("adapter", [f"{way}_{field}" for field in FIELDS for way in ("Retrying", "LiveRetrying")])
def test_conform_catches_each_field_alone(tmp_path, cli, adapter):
    ran = conform_run(cli, retrying(tmp_path, adapter))
    assert ran.code == 1, ran.out + ran.err
    assert ran.out == (
        f"conformance of retrying and compare_adapters:{adapter} FAILED (seed 0): the minimal run on which the "
        "code and the spec disagree:\n"
        "  params: \n"
        "  initial state: tries=0 status=running noted=false\n"
        "  step 1: call with tool=fail  concrete: tool=\"fail\"\n"
        f"    {CONFORM_LINE[adapter.partition('_')[2]]}\n")


def test_conform_takes_no_rule_from_the_code_as_the_spec_naming_it(tmp_path, cli):
    """A step that returns None as its rule leaves the rule to the spec's table, in `check`
    and in the docs; conform failed it (`rule: spec 'finished', code None`, issue 26, finding 15)."""
    path = retrying(tmp_path, "NoRule")
    assert run_of(path).result == "proved"
    ran = conform_run(cli, path)
    assert (ran.code, ran.err) == (0, "")
    assert ran.out == ("conformance of retrying and compare_adapters:NoRule: 30 random runs (seed 0), 59 steps "
                       "compared, code and spec agree on every step\n")


def test_conform_with_no_rule_from_the_code_still_compares_the_state(tmp_path, cli):
    ran = conform_run(cli, retrying(tmp_path, "NoRule_tries"))
    assert ran.code == 1, ran.out + ran.err
    assert ran.out.endswith("  step 1: call with tool=fail  concrete: tool=\"fail\"\n    tries: spec 1, code 0\n")
    run = run_of(retrying(tmp_path, "NoRule_tries"))
    assert props(run)["code_matches_spec"].message == (
        "action call with tool=fail: the code and the spec's own stages disagree: tries: code 0, spec 1")


# ---------------------------------------------------------------- replay

INITIAL = {"tries": 0, "status": "running", "noted": False}
REPLAY_LINE = {"rule": "the rule differs from the recorded one: recorded retry, replay gives gave_up",
               "tries": "the state differs from the recorded one: tries recorded 1, replay gives 0",
               "status": "the state differs from the recorded one: status recorded running, replay gives failed",
               "noted": "the state differs from the recorded one: noted recorded true, replay gives false",
               "noted_type": "noted = 1 is outside its domain true/false",
               "tries_type": "tries = 1.0 is outside its domain 0..2"}


def fail_trace(tmp_path: Path, **step) -> Path:
    """The run `call` with tool=fail, as the stages make it (rule retry), recorded as a report traces it."""
    path = tmp_path / "trace.json"
    first = {"state": AFTER_FAIL, "action": "call", "choices": {"tool": "fail"}, "rule": "retry", **step}
    path.write_text(json.dumps({"steps": [{"state": INITIAL, "action": None, "choices": {}, "rule": None},
                                          {k: v for k, v in first.items() if v is not ...}]}))
    return path


@pytest.mark.parametrize("adapter", [f"{way}_{field}" for field in FIELDS for way in ("Retrying", "LiveRetrying")])
def test_replay_catches_each_field_alone(tmp_path, cli, adapter):
    """A recorded rule is compared like each recorded var: code that fires gave_up into the
    recorded state replayed as if it followed the trace."""
    trace = fail_trace(tmp_path)
    assert cli("replay", retrying(tmp_path, adapter.partition("_")[0]), "--trace", trace).code == 0
    ran = cli("replay", retrying(tmp_path, adapter), "--trace", trace)
    assert (ran.code, ran.err) == (1, "")
    assert ran.out.endswith(f"# FAILED: step 1: {REPLAY_LINE[adapter.partition('_')[2]]}\n")


def test_replay_with_model_compares_the_rule_the_code_recorded(tmp_path, cli):
    """A trace of the code (gave_up where the stages say retry) is not a run of the stages."""
    trace = fail_trace(tmp_path, rule="gave_up")
    path = retrying(tmp_path, "Retrying_rule")
    assert cli("replay", path, "--trace", trace).code == 0
    ran = cli("replay", path, "--trace", trace, "--model")
    assert ran.code == 1
    assert ran.out.endswith("# FAILED: step 1: the rule differs from the recorded one: recorded gave_up, "
                            "replay gives retry\n")


def test_a_trace_that_records_no_rule_is_compared_on_its_states(tmp_path, cli):
    """A trace written by hand (or by another tool) may leave the rule out: nothing to compare."""
    ran = cli("replay", retrying(tmp_path, "Retrying_rule"), "--trace", fail_trace(tmp_path, rule=...))
    assert ran.code == 0, ran.out + ran.err
    null = cli("replay", retrying(tmp_path, "Retrying"), "--trace", fail_trace(tmp_path, rule=None))
    assert null.code == 1
    assert null.out.endswith("# FAILED: step 1: the rule differs from the recorded one: recorded no rule, "
                             "replay gives retry\n")


def test_a_recorded_rule_that_is_no_name_is_refused(tmp_path, cli):
    trace = fail_trace(tmp_path, rule=3)
    ran = cli("replay", retrying(tmp_path, "Retrying"), "--trace", trace)
    assert (ran.code, ran.out) == (2, "")
    assert ran.err == (f"error: {trace}: step 1 of the trace: 'rule' must be the name of a decide rule (a string) "
                       "or null, not a number\n")


def test_an_itf_trace_compares_the_rule_its_meta_records(tmp_path, cli):
    from haltproof.explorer.itf import trace_to_itf
    itf = trace_to_itf(json.loads(fail_trace(tmp_path).read_text()), {"vars": ["tries", "status", "noted"]})
    path = tmp_path / "trace.itf.json"
    path.write_text(json.dumps(itf))
    ran = cli("replay", retrying(tmp_path, "Retrying_rule"), "--trace", path)
    assert ran.code == 1
    assert ran.out.endswith("# FAILED: step 1: the rule differs from the recorded one: recorded retry, "
                            "replay gives gave_up\n")
    del itf["states"][1]["#meta"]["rule"]          # another tool's trace: no rule recorded
    path.write_text(json.dumps(itf))
    assert cli("replay", retrying(tmp_path, "Retrying_rule"), "--trace", path).code == 0
