"""The chapter-2 loop as real code (haltproof.harness.loop, seed S1): golden scenarios, the five-line
step format, the stop policy file, and a `decide` that never reads the scenario name."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

import pytest

from haltproof.harness import loop
from haltproof.harness.loop import StopPolicyError, decide, load_stop_policy, run_loop

from conftest import ROOT

GOLDEN = [  # (scenario, max_retries, decision, step at which the run ends) - SEEDS.md S1
    ("one_match", 1, "success", 1),
    ("two_matches", 1, "needs_input", 1),
    ("temporary_error", 1, "success", 2),
    ("permanent_error", 1, "error", 2),
    ("limit", 1, "limit", 5),
    ("missing_file", 1, "error", 2),
    ("no_matches", 1, "needs_input", 1),
    ("permanent_error", 0, "error", 1),
]


def _harness(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "haltproof.harness.loop", *args], cwd=ROOT,
                          capture_output=True, text=True)


# ------------------------------------------------------------------ run_loop: the golden scenarios

def test_the_seven_scripted_scenarios_are_served():
    assert set(loop.SCENARIOS) == {"one_match", "two_matches", "temporary_error", "permanent_error",
                                   "limit", "missing_file", "no_matches"}


@pytest.mark.parametrize("scenario,retries,decision,steps", GOLDEN,
                         ids=[f"{g[0]}-r{g[1]}" for g in GOLDEN])
def test_golden_scenario_ends_right(scenario, retries, decision, steps):
    result = run_loop(scenario, max_steps=5, max_retries=retries)
    assert result["terminal"] == decision
    state = result["state"]
    assert state["steps"] == steps and state["done"] is True and state["terminal"] == decision
    events = result["events"]
    assert [e["step"] for e in events] == list(range(1, steps + 1))   # one event per action
    assert [e["decision"] for e in events] == ["continue"] * (steps - 1) + [decision]
    assert all(e["state"] == "observed" and e["action"] == {"name": "read_task_cards"} for e in events)
    script = loop.SCENARIOS[scenario]
    assert [e["observation"] for e in events] == [script[min(i, len(script) - 1)] for i in range(steps)]
    assert state["failures"] == sum(1 for e in events if not e["observation"]["ok"])
    assert state["scenario"] == scenario


def test_limit_reads_five_pages_in_order():
    events = run_loop("limit", 5, 1)["events"]
    assert [e["observation"]["next_page"] for e in events] == [2, 3, 4, 5, 6]
    assert all(e["observation"]["search_complete"] is False for e in events)


def test_run_loop_uses_the_bundled_limits_by_default():
    assert run_loop("limit")["state"]["steps"] == 5
    assert run_loop("permanent_error")["state"]["steps"] == 2


@pytest.mark.parametrize("max_steps", [1, 2, 3, 4, 5])
def test_limit_scenario_stops_at_max_steps(max_steps):
    result = run_loop("limit", max_steps, 1)
    assert result["terminal"] == "limit" and result["state"]["steps"] == max_steps


def test_first_failure_on_the_last_step_is_limit_not_a_sixth_action():
    result = run_loop("temporary_error", max_steps=1, max_retries=1)
    assert result["terminal"] == "limit" and result["state"]["steps"] == 1


def test_success_on_the_last_allowed_step_stays_success():
    result = run_loop("temporary_error", max_steps=2, max_retries=1)
    assert result["terminal"] == "success" and result["state"]["steps"] == 2


@pytest.mark.parametrize("max_steps,max_retries", [(0, 1), (6, 1), (5, 2), (5, -1)])
def test_run_loop_refuses_limits_outside_the_course(max_steps, max_retries):
    with pytest.raises(ValueError):
        run_loop("one_match", max_steps, max_retries)


def test_run_loop_refuses_an_unknown_scenario():
    with pytest.raises(ValueError, match="no_such"):
        run_loop("no_such")


def test_update_state_counts_steps_and_failures_and_decide_is_not_a_step():
    state = loop.new_state("permanent_error", 5, 1)
    loop.update_state(state, {"ok": False, "error": "x"})
    assert (state["steps"], state["failures"], state["phase"]) == (1, 1, "observed")
    before = dict(state)
    assert decide(state) == "continue"
    assert state == before                           # deciding changes nothing
    loop.update_state(state, {"ok": True, "matches": ["a"]})
    assert (state["steps"], state["failures"]) == (2, 1)


# ------------------------------------------------------------------ python -m haltproof.harness.loop

PERMANENT_ERROR_OUTPUT = """\
step: 1
state: observed
action: read_task_cards
observation: {"ok": false, "error": "error: the task cards are unavailable"}
decision: continue
step: 2
state: observed
action: read_task_cards
observation: {"ok": false, "error": "error: the task cards are unavailable"}
decision: error
"""


def test_cli_prints_the_five_line_format_for_permanent_error():
    ran = _harness("--scenario", "permanent_error")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == PERMANENT_ERROR_OUTPUT
    assert ran.stderr == ""


@pytest.mark.parametrize("scenario,retries,decision,steps", GOLDEN[:7], ids=[g[0] for g in GOLDEN[:7]])
def test_cli_five_line_blocks(scenario, retries, decision, steps):
    ran = _harness("--scenario", scenario)
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    assert len(lines) == 5 * steps
    script = loop.SCENARIOS[scenario]
    for n in range(steps):
        block = lines[5 * n:5 * n + 5]
        assert block[0] == f"step: {n + 1}"
        assert block[1] == "state: observed"
        assert block[2] == "action: read_task_cards"
        assert block[3].startswith("observation: ")
        assert json.loads(block[3][len("observation: "):]) == script[min(n, len(script) - 1)]
        assert block[4] == f"decision: {decision if n == steps - 1 else 'continue'}"


def test_cli_max_retries_zero_ends_permanent_error_at_step_one():
    ran = _harness("--scenario", "permanent_error", "--max-retries", "0")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == (
        "step: 1\n"
        "state: observed\n"
        "action: read_task_cards\n"
        'observation: {"ok": false, "error": "error: the task cards are unavailable"}\n'
        "decision: error\n")


def test_cli_reads_a_custom_policy(tmp_path):
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"max_steps": 3, "max_retries": 1}))
    ran = _harness("--scenario", "limit", "--policy", str(policy))
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    assert len(lines) == 15 and lines[-5] == "step: 3" and lines[-1] == "decision: limit"


def test_cli_in_process_matches(capsys):
    assert loop.main(["--scenario", "two_matches"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == "decision: needs_input" and out.count("step: ") == 1


# ------------------------------------------------------------------ the stop policy file

def _policy(tmp_path, text: str, name: str = "02_stop_policy.json"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_bundled_stop_policy():
    assert load_stop_policy() == {"max_steps": 5, "max_retries": 1}


def test_custom_stop_policy(tmp_path):
    path = _policy(tmp_path, '{"max_retries": 0, "max_steps": 2}', "mine.json")
    assert load_stop_policy(path) == {"max_steps": 2, "max_retries": 0}
    assert load_stop_policy(str(path)) == {"max_steps": 2, "max_retries": 0}


@pytest.mark.parametrize("steps,retries", [(1, 0), (5, 1), (3, 1)])
def test_limits_at_the_edges_are_accepted(tmp_path, steps, retries):
    path = _policy(tmp_path, json.dumps({"max_steps": steps, "max_retries": retries}))
    assert load_stop_policy(path) == {"max_steps": steps, "max_retries": retries}


@pytest.mark.parametrize("data,field,allowed", [
    ({"max_steps": 0, "max_retries": 1}, "max_steps", "1..5"),
    ({"max_steps": 6, "max_retries": 1}, "max_steps", "1..5"),
    ({"max_steps": 5, "max_retries": 2}, "max_retries", "0..1"),
    ({"max_steps": 5, "max_retries": -1}, "max_retries", "0..1"),
    ({"max_steps": True, "max_retries": 1}, "max_steps", "1..5"),
    ({"max_steps": 5, "max_retries": False}, "max_retries", "0..1"),
    ({"max_steps": "5", "max_retries": 1}, "max_steps", "1..5"),
    ({"max_steps": 5, "max_retries": "1"}, "max_retries", "0..1"),
    ({"max_steps": 2.0, "max_retries": 1}, "max_steps", "1..5"),
    ({"max_steps": None, "max_retries": 1}, "max_steps", "1..5"),
], ids=["steps0", "steps6", "retries2", "retries-1", "steps-bool", "retries-bool", "steps-str",
        "retries-str", "steps-float", "steps-null"])
def test_out_of_range_values_are_refused(tmp_path, data, field, allowed):
    path = _policy(tmp_path, json.dumps(data))
    with pytest.raises(StopPolicyError) as info:
        load_stop_policy(path)
    assert isinstance(info.value, ValueError)
    msg = str(info.value)
    assert field in msg and allowed in msg
    assert "02_stop_policy.json" in msg
    other = "max_retries" if field == "max_steps" else "max_steps"
    assert other not in msg                          # it names the field that is wrong


def test_check_limits_is_a_value_error_naming_the_field():
    with pytest.raises(ValueError, match=r"max_steps.*1\.\.5"):
        loop.check_limits(9, 0)
    with pytest.raises(ValueError, match=r"max_retries.*0\.\.1"):
        loop.check_limits(5, 3)


def test_a_key_given_twice_is_refused(tmp_path):
    path = _policy(tmp_path, '{"max_steps": 2, "max_retries": 0, "max_steps": 9}')
    with pytest.raises(StopPolicyError) as info:
        load_stop_policy(path)
    assert str(info.value) == (f"{path}: duplicate key 'max_steps' in a JSON object (which value is "
                               "meant is ambiguous)")


def test_malformed_json_names_the_file_and_line(tmp_path):
    path = _policy(tmp_path, '{\n  "max_steps": 5,\n  "max_retries": \n}\n', "broken.json")
    with pytest.raises(StopPolicyError) as info:
        load_stop_policy(path)
    msg = str(info.value)
    assert "broken.json" in msg
    assert "broken.json:4" in msg or "line 4" in msg      # the '}' where a value was expected
    assert "JSON" in msg


def test_bad_json_on_line_one(tmp_path):
    path = _policy(tmp_path, "max_steps = 5\n", "toml.json")
    with pytest.raises(StopPolicyError) as info:
        load_stop_policy(path)
    assert "toml.json:1" in str(info.value) or "line 1" in str(info.value)


@pytest.mark.parametrize("text,words", [
    ("[5, 1]", ["object"]),
    ('"max_steps"', ["object"]),
    ("null", ["object"]),
    ('{"max_steps": 5}', ["max_retries", "missing"]),
    ('{"max_retries": 1}', ["max_steps", "missing"]),
    ('{"max_steps": 5, "max_retries": 1, "max_stpes": 3}', ["max_stpes", "unknown"]),
], ids=["list", "string", "null", "no-retries", "no-steps", "unknown-field"])
def test_malformed_policy_is_a_clear_error(tmp_path, text, words):
    path = _policy(tmp_path, text, "odd_policy.json")
    with pytest.raises(StopPolicyError) as info:
        load_stop_policy(path)
    msg = str(info.value)
    assert "odd_policy.json" in msg
    for w in words:
        assert w in msg
    assert "Traceback" not in msg


NOT_UTF8 = b'\xff\xfe{"max_steps": 5, "max_retries": 1}'


def test_policy_file_that_is_not_utf8_is_a_clear_error(tmp_path):
    path = tmp_path / "latin.json"
    path.write_bytes(NOT_UTF8)
    with pytest.raises(StopPolicyError, match="latin.json"):
        load_stop_policy(path)


def test_cli_policy_file_that_is_not_utf8_exits_2(tmp_path):
    path = tmp_path / "latin.json"
    path.write_bytes(NOT_UTF8)
    ran = _harness("--policy", str(path))
    assert ran.returncode == 2
    assert "latin.json" in ran.stderr and "Traceback" not in ran.stderr


def test_missing_policy_file(tmp_path):
    with pytest.raises(StopPolicyError, match="nowhere.json"):
        load_stop_policy(tmp_path / "nowhere.json")


@pytest.mark.parametrize("text,needle", [
    ('{"max_steps": 7, "max_retries": 1}', "max_steps"),
    ('{"max_steps": 5,', "bad.json"),
    ('{"max_steps": 5}', "max_retries"),
    ("[1]", "bad.json"),
])
def test_cli_bad_policy_exits_2_without_traceback(tmp_path, text, needle):
    path = _policy(tmp_path, text, "bad.json")
    ran = _harness("--scenario", "one_match", "--policy", str(path))
    assert ran.returncode == 2
    assert ran.stdout == ""
    assert needle in ran.stderr and "bad.json" in ran.stderr
    assert "Traceback" not in ran.stderr


def test_cli_out_of_range_override_exits_2(capsys):
    assert loop.main(["--scenario", "one_match", "--max-steps", "9"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "max_steps" in captured.err and "1..5" in captured.err


OVERRIDES = [
    ("--max-steps", "-1", "max_steps must be in 1..5, got -1"),
    ("--max-steps", "0", "max_steps must be in 1..5, got 0"),
    ("--max-steps", "6", "max_steps must be in 1..5, got 6"),
    ("--max-steps", "9" * 30, "max_steps must be in 1..5, got " + "9" * 30),
    ("--max-retries", "-1", "max_retries must be in 0..1, got -1"),
    ("--max-retries", "2", "max_retries must be in 0..1, got 2"),
    ("--max-retries", "1" + "0" * 50, "max_retries must be in 0..1, got 10000000000000000000... (51 characters)"),
]


@pytest.mark.parametrize("option, value, message", OVERRIDES, ids=[f"{o}={v[:8]}" for o, v, _ in OVERRIDES])
def test_cli_override_out_of_range_names_the_option(option, value, message, capsys):
    """The same field can come from the policy file or the option: the message says which."""
    assert loop.main(["--scenario", "one_match", option, value]) == 2
    assert capsys.readouterr() == ("", f"error: {option}: {message}\n")


@pytest.mark.parametrize("value", ["True", "2.0", "[3]", '"3"'])
def test_policy_field_of_the_wrong_type_names_the_range(tmp_path, value):
    path = _policy(tmp_path, f'{{"max_steps": {value.lower()}, "max_retries": 1}}', "typed.json")
    with pytest.raises(StopPolicyError) as info:
        load_stop_policy(path)
    shown = {"True": "True", "2.0": "2.0", "[3]": "[3]", '"3"': "'3'"}[value]
    assert str(info.value) == f"{path}: max_steps must be an integer in 1..5, got {shown}"


def test_policy_file_past_its_size_limit_is_refused_before_parsing(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(loop, "MAX_POLICY_BYTES", 40)
    text = '{"max_steps": 5, "max_retries": 1}'                                     # 34 bytes
    path = _policy(tmp_path, text + " " * 7, "big.json")                         # 41 bytes
    assert loop.main(["--policy", str(path)]) == 2
    assert capsys.readouterr() == ("", f"error: {path}: the file is 41 bytes, more than the limit of "
                                       "40 bytes for a stop policy\n")
    path.write_text(text + " " * 6)                                              # 40 bytes
    assert load_stop_policy(path) == {"max_steps": 5, "max_retries": 1}


# ------------------------------------------------------------------ decide never reads the scenario

class ScenarioForbidden(dict):
    """A state whose scenario cannot be read: any access raises."""

    def __getitem__(self, key):
        if key == "scenario":
            raise AssertionError("decide read the scenario name")
        return super().__getitem__(key)

    def get(self, key, default=None):
        if key == "scenario":
            raise AssertionError("decide read the scenario name")
        return super().get(key, default)

    def __contains__(self, key):
        if key == "scenario":
            raise AssertionError("decide asked for the scenario name")
        return super().__contains__(key)


OBSERVATIONS = {
    "failed": {"ok": False, "error": "error: the task cards are unavailable"},
    "failed-empty-text": {"ok": False, "error": ""},
    "one_match": {"ok": True, "matches": ["task-003"]},
    "one_match-complete": {"ok": True, "matches": ["task-003"], "search_complete": True},
    "zero_matches": {"ok": True, "matches": [], "search_complete": True},
    "zero_matches-implicit": {"ok": True, "matches": []},
    "many_matches": {"ok": True, "matches": ["task-003", "task-003-copy"]},
    "many_matches-three": {"ok": True, "matches": ["a", "b", "c"], "search_complete": True, "next_page": 2},
    "incomplete": {"ok": True, "matches": ["candidate-005"], "search_complete": False, "next_page": 6},
    "incomplete-empty": {"ok": True, "matches": [], "search_complete": False},
}


def _oracle(obs: dict, steps: int, failures: int, max_steps: int, max_retries: int) -> str:
    """SEEDS.md S1, in exactly its order."""
    if not obs["ok"] and failures > max_retries:
        return "error"
    if obs["ok"] and obs.get("search_complete", True):
        return "success" if len(obs["matches"]) == 1 else "needs_input"
    if steps >= max_steps:
        return "limit"
    return "continue"


def _combos():
    for max_steps, max_retries in itertools.product(range(1, 6), (0, 1)):
        for steps in range(1, max_steps + 1):
            for failures in range(0, steps + 1):
                yield steps, failures, max_steps, max_retries


@pytest.mark.parametrize("obs_name", sorted(OBSERVATIONS))
def test_decide_never_reads_the_scenario(obs_name):
    obs = OBSERVATIONS[obs_name]
    n = 0
    for steps, failures, max_steps, max_retries in _combos():
        base = {"phase": "observed", "steps": steps, "failures": failures, "done": False,
                "terminal": None, "max_steps": max_steps, "max_retries": max_retries,
                "observation": dict(obs)}
        expected = _oracle(obs, steps, failures, max_steps, max_retries)
        assert decide(dict(base)) == expected                                  # no scenario key at all
        assert decide(ScenarioForbidden(base, scenario="limit")) == expected   # reading it raises
        for scenario in loop.SCENARIOS:
            assert decide({**base, "scenario": scenario}) == expected          # any label, same decision
        n += 1
    assert n == 100                   # every counter combination within the course's limits


def test_the_forbidden_state_really_forbids():
    """The guard itself works: a decide that peeks is caught."""
    def peeking(state):
        return "limit" if state.get("scenario") == "limit" else decide(state)
    with pytest.raises(AssertionError, match="scenario"):
        peeking(ScenarioForbidden({"observation": OBSERVATIONS["incomplete"], "steps": 1, "failures": 0,
                                   "max_steps": 5, "max_retries": 1}, scenario="limit"))


def test_decide_does_not_change_the_state():
    for obs in OBSERVATIONS.values():
        state = ScenarioForbidden({"phase": "observed", "steps": 2, "failures": 1, "done": False,
                                   "terminal": None, "max_steps": 3, "max_retries": 1,
                                   "observation": dict(obs)}, scenario="one_match")
        before = dict(state)
        decide(state)
        assert dict(state) == before
