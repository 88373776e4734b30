"""Params of any kind: enum and bool params beside ints, and `-p` taking any value of the
declared type and range (an int declared `{min, max, values}` past its default sweep)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from haltproof.explorer.options import Options
from haltproof.explorer.check import check_spec
from haltproof.machine.errors import SpecError
from haltproof.machine.spec import load_spec

ROOT = Path(__file__).resolve().parent.parent.parent
EXAMPLE = ROOT / "docs" / "examples" / "param_kinds.yaml"
HASTY = ("-p", "policy=hasty", "-p", "log_failures=false", "-p", "R=1")


def _runs(cli, *args: str) -> tuple[int, list[dict]]:
    ran = cli("check", EXAMPLE, *args, "--format", "json")
    return ran.code, json.loads(ran.out)["runs"]


def test_the_declared_values_are_the_default_sweep(cli):
    code, runs = _runs(cli)
    assert code == 0
    assert [tuple(r["params"].values()) for r in runs] == [
        (policy, log, r) for policy in ("patient", "hasty") for log in (False, True) for r in (1, 2)]
    assert all(r["result"] == "proved" for r in runs)
    patient = next(r for r in runs if r["params"] == {"policy": "patient", "log_failures": True, "R": 1})
    assert [s["status"] for s in patient["scenarios"]] == ["passed"]


def test_an_int_inside_its_bounds_but_outside_the_sweep_is_accepted(cli):
    """A bug report's R=7 needs no copy of the spec: R declares min 0, max 100."""
    code, runs = _runs(cli, "-p", "R=7", "-p", "policy=patient", "-p", "log_failures=true")
    assert code == 0
    (run,) = runs
    assert run["params"] == {"policy": "patient", "log_failures": True, "R": 7}
    assert run["stats"]["states"] == 17 and run["stats"]["max_depth"] == 8


def test_enum_and_bool_params_are_read_by_expressions(cli):
    """hasty gives up on the first error; logging counts only where log_failures is true."""
    code, (run,) = _runs(cli, *HASTY)
    assert code == 0 and run["stats"]["states"] == 3 and run["stats"]["max_depth"] == 1
    code, (logging,) = _runs(cli, "-p", "policy=patient", "-p", "log_failures=true", "-p", "R=1")
    assert code == 0 and logging["stats"]["states"] == 5


@pytest.mark.parametrize("pin, message", [
    ("R=101", "docs/examples/param_kinds.yaml:7: -p R=101: not a declared value of R "
              "(any int 0..100; swept by default: 1, 2)"),
    ("R=-1", "docs/examples/param_kinds.yaml:7: -p R=-1: not a declared value of R "
             "(any int 0..100; swept by default: 1, 2)"),
    ("R=x", "docs/examples/param_kinds.yaml: -p R must be an integer, got 'x'"),
    ("policy=careful", "docs/examples/param_kinds.yaml:5: -p policy=careful: not a declared value of policy "
                       "(patient, hasty)"),
    ("policy=1", "docs/examples/param_kinds.yaml: -p policy must be one of patient, hasty, got 1"),
    ("log_failures=yes", "docs/examples/param_kinds.yaml: -p log_failures must be true or false, got 'yes'"),
    ("log_failures=1", "docs/examples/param_kinds.yaml: -p log_failures must be true or false, got 1"),
])
def test_a_value_outside_the_type_or_range_exits_2_naming_param_and_values(cli, pin, message):
    ran = cli("check", EXAMPLE.relative_to(ROOT), "-p", pin)
    assert (ran.code, ran.out) == (2, "")
    assert ran.err == f"error: {message}\n"


@pytest.fixture
def _in_root(monkeypatch):
    monkeypatch.chdir(ROOT)


pytestmark = pytest.mark.usefixtures("_in_root")


def test_the_python_api_pins_typed_values():
    runs = check_spec(load_spec(EXAMPLE), Options(pins={"policy": "hasty", "log_failures": [True, False], "R": 40}))
    assert [r.params for r in runs] == [{"policy": "hasty", "log_failures": True, "R": 40},
                                        {"policy": "hasty", "log_failures": False, "R": 40}]
    with pytest.raises(SpecError, match=re.escape("-p log_failures must be true or false, got 1")):
        check_spec(load_spec(EXAMPLE), Options(pins={"log_failures": 1}))
    with pytest.raises(SpecError, match=re.escape("-p R must be an integer, got True")):
        check_spec(load_spec(EXAMPLE), Options(pins={"R": True}))


def test_an_enum_param_cannot_be_compared_with_a_value_it_does_not_have(tmp_path, cli):
    spec = tmp_path / "s.yaml"
    spec.write_text(EXAMPLE.read_text().replace("policy == hasty", "policy == 3"))
    ran = cli("check", spec)
    assert ran.code == 2
    assert "s.yaml:26: compares param policy {hasty, patient} with int: they can never be equal: 'policy == 3'" in ran.err


BAD_PARAMS = [
    ("policy: [patient, 3]", 5, "the values of param policy must all be of one kind: ints, strings, or true/false"),
    ("policy: [patient, patient]", 5, "param policy lists a value twice"),
    ("policy: [patient, a-b]", 5, "a value of enum param policy must be a name (letters, digits, _)"),
    ("policy: {values: patient}", 5, "values of param policy must be a list"),
    ("policy: {type: int}", 5, "param policy: type may only be bool (ints and enums are told by their values)"),
    ("policy: {min: 1, max: 3, values: [4]}", 5, "param policy: value 4 is outside min 1 .. max 3"),
    ("policy: {min: 1, max: 3, values: [a]}", 5, "param policy has min and max: its values must be ints"),
]


@pytest.mark.parametrize("line, at, message", BAD_PARAMS, ids=[b[0] for b in BAD_PARAMS])
def test_a_malformed_param_is_a_spec_error_at_its_line(tmp_path, cli, line, at, message):
    text = EXAMPLE.read_text()
    assert text.count("  policy: [patient, hasty]") == 1
    spec = tmp_path / "s.yaml"
    spec.write_text(text.replace("policy: [patient, hasty]                # an enum param: names, usable unquoted",
                                 line))
    ran = cli("check", spec)
    assert ran.code == 2 and ran.out == ""
    assert f"s.yaml:{at}: {message}" in ran.err, ran.err


def test_a_scenario_gives_an_enum_param_a_declared_value(tmp_path, cli):
    spec = tmp_path / "s.yaml"
    spec.write_text(EXAMPLE.read_text().replace("params: {policy: patient,", "params: {policy: careful,"))
    ran = cli("check", spec)
    assert ran.code == 2
    assert "s.yaml:44: policy=careful is not a declared value of policy (patient, hasty)" in ran.err


def test_replay_takes_a_recorded_int_inside_the_bounds(tmp_path, cli):
    """A trace recording R=7 (a bug report's) replays although 7 is not in the default sweep."""
    trace = {"params": {"policy": "patient", "log_failures": False, "R": 7}, "kind": "path", "loop_start": None,
             "steps": [{"state": {"tries": 0, "logged": 0, "status": "running"}, "action": None, "choices": {}},
                       {"state": {"tries": 1, "logged": 0, "status": "running"}, "action": "call_tool",
                        "choices": {"outcome": "error"}}]}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(trace))
    ran = cli("replay", EXAMPLE, "--trace", path)
    assert ran.code == 0, ran.err
    assert "R=7" in ran.out


def test_the_spec_language_doc_shows_the_example():
    doc = (ROOT / "docs" / "reference" / "spec-language.md").read_text()
    assert "```yml\n" + EXAMPLE.read_text() + "```" in doc     # yml: the ```yaml blocks are retry_loop's


def test_too_many_combinations_names_enum_params_by_their_values(tmp_path, cli):
    """The sweep limit's message lists an enum param's names (it once added 1 to a name)."""
    names = ", ".join(f"m{i}" for i in range(12))
    spec = tmp_path / "s.yaml"
    spec.write_text(EXAMPLE.read_text().replace("policy: [patient, hasty]", f"policy: [patient, hasty, {names}]")
                    .replace("R: {min: 0, max: 100, values: [1, 2]}", "R: {min: 0, max: 1000}"))
    ran = cli("check", spec)
    assert ran.code == 2 and ran.out == ""
    assert ("the params make 28,028 combinations, more than the 10,000 a check sweeps: pin params with "
            "-p NAME=VALUE, e.g. -p R=0 (R has 0..1000, policy has patient, hasty, ..., m11 (14 values), "
            "log_failures has false, true)") in ran.err
