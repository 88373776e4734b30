"""Hostile inputs (issue 11): files and options built to exhaust memory, the stack or the
user's patience must end in exit 2 with one located message, never a MemoryError, a
RecursionError, a hang, a silently ignored value or a file written on a wrong input.

Each test asserts the whole of stderr: the exact message, file and line.
"""

from __future__ import annotations

import sys

import pytest

from haltproof.explorer import options as options_module
from haltproof.api import check as api_check
from haltproof.machine.pymodel import terminates_within
from haltproof.machine import compiled as compiled_module, spec as spec_module, yamlpos
from haltproof.machine.errors import SpecError
from conftest import LOOP_DEMO, ROOT
from test_malformed_specs import BASE, edit

sys.path.insert(0, str(ROOT / "docs" / "examples"))
from retry_model import RetryLoop


def only_error(r, line: int | None, message: str) -> None:
    """Exit 2, nothing on stdout, and stderr is exactly this one located message."""
    where = f"{r.path}:{line}" if line is not None else r.path
    assert (r.code, r.out, r.err) == (2, "", f"error: {where}: {message}\n")


# ---------------------------------------------------------------- YAML: aliases and nesting

def laughs(levels: int) -> str:
    """`sets:` holding the "billion laughs": each level lists nine aliases of the one before,
    so the 21-line text below BASE expands to 9**levels values."""
    lines = ["sets:", "  a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, levels):
        lines.append(f"  a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def test_billion_laughs_stops_at_the_alias_that_exceeds_the_budget(check):
    # BASE has 20 lines; sets is line 21, a0 line 22, a4 (whose *a3 crosses 100,000) line 26
    r = check(BASE + laughs(10))
    only_error(r, 26, "aliases expand the spec past 100,000 nodes and characters (a YAML alias bomb?)")


def test_a_small_alias_bomb_is_refused_too(check):
    """Six levels (531,441 values) fit in memory even without the budget: still refused."""
    r = check(BASE + laughs(6))
    only_error(r, 26, "aliases expand the spec past 100,000 nodes and characters (a YAML alias bomb?)")


def test_alias_budget_counts_scalar_text(check, monkeypatch):
    """One long text reused through aliases costs its length each time: a 1,000-character
    expression aliased into a hundred places would be parsed a hundred times."""
    monkeypatch.setattr(yamlpos, "ALIAS_BUDGET", 2_500)
    text = "x" * 1_000
    r = check(BASE + f"description: &d {text}\nsets:\n  a: *d\n  b: *d\n  c: *d\n")
    only_error(r, 25, "aliases expand the spec past 2,500 nodes and characters (a YAML alias bomb?)")


def test_reused_aliases_within_the_budget_still_load(check):
    r = check(edit("      obs: [good, bad]\n", "      obs: &o [good, bad]\n",
                   "terminal:\n", "  again:\n    when: decision == going\n    choose:\n      obs: *o\n"
                                  "terminal:\n"))
    assert r.code == 0, r.err


def test_recursive_alias_is_refused_at_the_alias(check):
    r = check(BASE + "sets:\n  loop: &a [1, *a]\n")
    only_error(r, 22, "this alias refers to a node that contains it: a spec cannot be a recursive "
                      "structure")


def test_ten_thousand_nested_lists(check):
    r = check(BASE + "sets:\n  deep: " + "[" * 10_000 + "]" * 10_000 + "\n")
    only_error(r, 22, "the YAML nests deeper than 100 levels")


def test_ten_thousand_nested_flow_mappings(check):
    r = check(BASE + "sets:\n  deep: " + "{k: " * 10_000 + "x" + "}" * 10_000 + "\n")
    only_error(r, 22, "the YAML nests deeper than 100 levels")


def test_nested_block_mappings(check):
    deep = "".join("  " * (i + 1) + f"k{i}:\n" for i in range(200))
    r = check(BASE + "sets:\n" + deep + "  " * 201 + "x\n")
    # the top mapping is level 1 and sets level 2, so level 101 is the value of k98: the mapping
    # that starts with k99, on line 121
    only_error(r, 121, "the YAML nests deeper than 100 levels")


def test_a_hundred_levels_are_allowed_and_not_one_more(check):
    # the top mapping and sets are two levels: 98 lists make 100, 99 lists 101
    r = check(BASE + "sets:\n  deep: " + "[" * 98 + "]" * 98 + "\n")
    assert r.code == 0, r.err
    r = check(BASE + "sets:\n  deep: " + "[" * 99 + "]" * 99 + "\n")
    only_error(r, 22, "the YAML nests deeper than 100 levels")


def test_nesting_built_from_aliases_is_bounded_too(check):
    """Each anchor nests 60 levels around the previous alias: b at line 23 reaches 122."""
    r = check(BASE + "sets:\n"
              "  a: &a " + "[" * 60 + "]" * 60 + "\n"
              "  b: &b " + "[" * 60 + "*a" + "]" * 60 + "\n"
              "  c: &c " + "[" * 60 + "*b" + "]" * 60 + "\n")
    only_error(r, 23, "the YAML nests deeper than 100 levels")


# ---------------------------------------------------------------- expressions nested too deep

@pytest.mark.parametrize("command", ["check", "graph"])
@pytest.mark.parametrize("spec, line, what", [
    (edit("    when: decision == going\n", "    when: " + "not " * 5_000 + "decision == going\n"),
     9, "guard of work"),
    (edit("{steps: steps + 1,", "{steps: steps" + " + 0" * 20_000 + " + 1,"),
     13, "new value of steps"),
], ids=["not-5000", "plus-20000"])
def test_deep_expression_in_check_and_graph(check, command, spec, line, what):
    r = check(spec, *(["-p", "n=1"] if command == "graph" else []), command=command)
    only_error(r, line, f"{what} nests deeper than 100 levels")


# ---------------------------------------------------------------- size

def test_spec_over_the_size_limit_is_refused_before_parsing(check, monkeypatch):
    monkeypatch.setattr(spec_module, "MAX_SPEC_BYTES", 1_000)
    text = BASE + "#" * (1_001 - len(BASE) - 1) + "\n"      # 1,001 bytes
    r = check(text)
    only_error(r, None, "the file is 1,001 bytes, more than the limit of 1,000 bytes for a spec")
    r = check(text[:-2] + "\n")                              # 1,000 bytes: loads
    assert r.code == 0, r.err


def test_spec_one_byte_over_one_mib(check):
    text = BASE + "#" * (1024 * 1024 - len(BASE)) + "\n"
    r = check(text)
    only_error(r, None, "the file is 1,048,577 bytes, more than the limit of 1,048,576 bytes for a spec")


def test_size_limit_holds_for_a_file_without_a_size(tmp_path, monkeypatch):
    """A FIFO (or /dev/zero) reports no size: the read itself stops past the limit."""
    monkeypatch.setattr(spec_module, "MAX_SPEC_BYTES", 1_000)
    with pytest.raises(SpecError) as info:
        spec_module.load_spec("/dev/zero")
    assert str(info.value) == "/dev/zero: the file is larger than the limit of 1,000 bytes for a spec"


def test_parse_spec_refuses_text_over_the_limit(monkeypatch):
    monkeypatch.setattr(spec_module, "MAX_SPEC_BYTES", 1_000)
    with pytest.raises(SpecError) as info:
        spec_module.parse_spec(BASE + "#" * 600 + "é" * 100 + "\n", "api.yaml")
    assert str(info.value) == "api.yaml: the file is 1,273 bytes, more than the limit of 1,000 bytes for a spec"


# ---------------------------------------------------------------- huge ranges and products

BIG_K = edit("  n: {min: 1, max: 3}\n", "  n: {min: 1, max: 3}\n  K: {min: 1, max: 1000000000000}\n")


def test_a_sweep_past_the_combination_limit_names_the_params_and_suggests_pinning(check):
    r = check(BIG_K)
    only_error(r, 4, "the params make 3,000,000,000,000 combinations, more than the 10,000 a check "
                     "sweeps: pin params with -p NAME=VALUE, e.g. -p K=1 (K has 1..1000000000000, "
                     "n has 1..3)")


def test_pinning_the_huge_param_makes_the_spec_work(check):
    r = check(BIG_K, "-p", "K=5", "--verbose")
    assert (r.code, r.err) == (0, ""), r.err
    assert r.out.splitlines()[-1] == "3 runs: 3 proved, 0 violated as expected, 0 failed, 0 incomplete -> proved"
    assert [ln.split("  ")[-1] for ln in r.out.splitlines() if "  [m]  " in ln] == \
           ["n=1 K=5", "n=2 K=5", "n=3 K=5"]


def test_a_pin_outside_a_huge_range_is_refused_without_listing_it(check):
    r = check(BIG_K, "-p", "K=0")
    only_error(r, 4, "-p K=0: not a declared value of K (1..1000000000000)")


def test_the_combination_limit_itself(check, monkeypatch):
    monkeypatch.setattr(options_module, "MAX_COMBINATIONS", 2)
    r = check(BASE)                                     # n: 3 values
    only_error(r, 3, "the params make 3 combinations, more than the 2 a check sweeps: pin params "
                     "with -p NAME=VALUE, e.g. -p n=1 (n has 1..3)")
    assert check(BASE, "-p", "n=2").code == 0


def test_a_param_range_beyond_64_bits(check):
    r = check(edit("  n: {min: 1, max: 3}\n", "  n: {min: 1, max: 100000000000000000000000}\n"),
              "-p", "n=2")
    assert r.code == 0, r.err


def test_a_huge_choice_range_is_refused_at_the_choice(check):
    r = check(edit("      obs: [good, bad]\n", "      obs: [good, bad]\n      amount: {min: 0, max: 1000000000000}\n"),
              "-p", "n=1")
    only_error(r, 12, "action work makes 2,000,000,000,002 choice combinations per step, more than "
                      "the limit of 1,000,000 (with n=1)")


def test_too_many_initial_states_is_refused(check, monkeypatch):
    monkeypatch.setattr(compiled_module, "MAX_PRODUCT", 3)
    r = check(edit("init: going}", "init: {one_of: [going, done]}}",
                   "max: n, init: 0}", "max: n, init: {one_of: [0, 1]}}"), "-p", "n=1")
    only_error(r, 5, "the vars' init values make 4 initial states, more than the limit of 3 (with n=1)")


@pytest.mark.parametrize("engine", ["scalar", "vector", "auto"])
def test_a_var_domain_of_10_to_the_12_is_never_materialized(check, engine):
    r = check(edit("  steps: {type: int, min: 0, max: n, init: 0}\n",
                   "  steps: {type: int, min: 0, max: n, init: 0}\n"
                   "  big: {type: int, min: 0, max: 1000000000000, init: 0}\n"), "--engine", engine)
    assert (r.code, r.err) == (0, ""), r.err


def test_a_domain_beyond_the_vector_code_space_is_declined_not_exploded(check):
    r = check(edit("  steps: {type: int, min: 0, max: n, init: 0}\n",
                   "  steps: {type: int, min: 0, max: n, init: 0}\n"
                   "  big: {type: int, min: 0, max: 10000000000000000000000, init: 0}\n"),
              "--engine", "vector", "-p", "n=1")
    only_error(r, None, "--engine vector cannot run this spec: the product of the domains "
                        "(40,000,000,000,000,000,000,004 states) does not fit a state code (below 2^62)")


class HugeRetry(RetryLoop):
    params = {"K": range(1, 10**12), "R": [0, 1]}


def test_a_python_model_param_range_is_not_materialized():
    with pytest.raises(SpecError) as info:
        api_check(HugeRetry)
    (problem,) = info.value.problems
    assert problem.message.startswith("the params make 1,999,999,999,998 combinations, more than the "
                                      "10,000 a check sweeps: pin params with -p NAME=VALUE, e.g. -p K=1")
    report = api_check(HugeRetry, params={"K": 2, "R": 1})
    assert report.result == "proved" and len(report.runs) == 1


# ---------------------------------------------------------------- bounds that cannot be negative

def test_a_negative_terminates_within_is_refused_at_its_line(check):
    r = check(BASE + "properties:\n  quick:\n    description: too quick\n    terminates_within: -1\n")
    only_error(r, 24, "the bound of quick is -1: a run takes at least 0 transitions, so "
                      "terminates_within needs a bound of 0 or more")


def test_a_constant_negative_expression_is_refused_when_loading(check):
    r = check(BASE + "properties:\n  quick: {terminates_within: 'min(2, 3) - 5'}\n")
    only_error(r, 22, "the bound of quick is -3: a run takes at least 0 transitions, so "
                      "terminates_within needs a bound of 0 or more")


def test_a_bound_negative_for_some_params_is_refused_for_those(check):
    r = check(BASE + "properties:\n  quick:\n    terminates_within: n - 2\n")
    only_error(r, 23, "the bound of quick is -1: a run takes at least 0 transitions, so "
                      "terminates_within needs a bound of 0 or more (with n=1)")
    r = check(BASE + "properties:\n  quick:\n    terminates_within: n - 2\n", "-p", "n=2")
    assert r.code == 1 and "quick" in r.out         # 0 is a bound: violated by a run of 2


def test_terminates_within_zero_is_a_bound(check):
    r = check(BASE + "properties:\n  quick: {terminates_within: 0}\n", "-p", "n=1")
    assert r.code == 1 and "a run takes 1 transition, more than 0" in r.out


class NegativeBound(RetryLoop):
    quick = terminates_within(lambda p: p["K"] - 3)


@pytest.mark.verdict          # fast: in the per-mutant selection of machine/pymodel.py (docs/explanation/mutation-testing.md)
def test_a_python_model_negative_bound_is_refused():
    with pytest.raises(SpecError) as info:
        api_check(NegativeBound, params={"K": 2, "R": 0})
    (problem,) = info.value.problems
    assert problem.message == ("the bound of quick is -1: a run takes at least 0 transitions, so "
                               "terminates_within needs a bound of 0 or more (with K=2, R=0)")


@pytest.mark.slow
def test_an_expression_too_long_for_the_vector_code_falls_back_or_is_declined(check):
    """`x or x or ...` 3,000 terms is flat for Python but became a `|` chain too deep for its
    compiler in the vector engine (RecursionError, exit 4)."""
    spec = edit("    when: decision == going\n", "    when: decision == going" + " or steps == 9" * 3_000 + "\n")
    r = check(spec, "-p", "n=1", "--engine", "vector")
    only_error(r, None, "--engine vector cannot run this spec: an expression is too long for the "
                        "generated array code (Python's compiler nests too deeply)")
    r = check(spec, "-p", "n=1")                        # auto: the scalar engine runs it
    assert (r.code, r.err) == (0, ""), r.err


class SteppedRetry(RetryLoop):
    params = {"K": range(2, 2 * 10**12, 2), "R": [0, 1]}


def test_a_stepped_range_is_shown_without_listing_it():
    with pytest.raises(SpecError) as info:
        api_check(SteppedRetry, params={"K": 3})
    (problem,) = info.value.problems
    assert problem.message == "-p K=3: not a declared value of K (2, 4, ..., 1999999999998 (999,999,999,999 values))"


# ---------------------------------------------------------------- the Python API's options

API_OPTIONS = [
    (dict(timeout=float("nan")), "timeout must be a finite number, got nan"),
    (dict(timeout=float("inf")), "timeout must be a finite number, got inf"),
    (dict(timeout=0), "timeout must be positive, got 0"),
    (dict(timeout=-1.5), "timeout must be positive, got -1.5"),
    (dict(timeout="3"), "timeout must be a positive number, got '3'"),
    (dict(timeout=True), "timeout must be a positive number, got True"),
    (dict(max_states=0), "max_states must be positive, got 0"),
    (dict(max_states=-5), "max_states must be positive, got -5"),
    (dict(max_states=2.5), "max_states must be a positive integer, got 2.5"),
    (dict(max_states=True), "max_states must be a positive integer, got True"),
    (dict(max_states=float("nan")), "max_states must be a positive integer, got nan"),
    (dict(properties="terminates"), "properties must be a list of property names, got 'terminates'"),
    (dict(model="yes"), "model must be True or False, got 'yes'"),
    (dict(max_memory=0), "max_memory must be positive, got 0"),
    (dict(max_memory=True), "max_memory must be a positive integer, got True"),
    (dict(max_memory=1.5e9), "max_memory must be a positive integer, got 1500000000.0"),
    (dict(max_memory="0.0001K"), "max_memory must be positive, got '0.0001K'"),
    (dict(max_memory="lots"), "max_memory must be a size: bytes or a number with K, M, G or T, e.g. 512M or "
                              "4G, got 'lots'"),
]


@pytest.mark.parametrize("options, message", API_OPTIONS, ids=[str(o) for o, _ in API_OPTIONS])
def test_api_options_are_checked_before_anything_runs(options, message):
    """`check(timeout=nan)` proved (nan compares false with the clock), `max_states=0` or
    `-5` gave incomplete runs, `max_states=True` stopped after one state."""
    with pytest.raises(ValueError) as info:
        api_check(LOOP_DEMO, **options)
    assert str(info.value) == message


API_PINS = [
    ({"max_steps": True}, "-p max_steps must be an integer, got True"),
    ({"max_steps": 2.0}, "-p max_steps must be an integer, got 2.0"),
    ({"max_steps": "2"}, "-p max_steps must be an integer, got '2'"),
    ({"max_steps": None}, "-p max_steps must be an integer, got None"),
    ({"max_steps": [2, True]}, "-p max_steps must be an integer, got True"),
    ({"max_steps": []}, "-p max_steps: no value given (an empty list pins no combination)"),
    ({"max_steps": [2, 2]}, "-p max_steps=2 is given twice"),
]


@pytest.mark.parametrize("params, message", API_PINS, ids=[str(p) for p, _ in API_PINS])
def test_api_params_of_the_wrong_type_are_refused(params, message):
    """`True` was pinned as 1 (and its runs reported with max_steps=True), 2.0 failed with a
    TypeError, and an empty list swept nothing: "proved", and assert_proved() passed."""
    with pytest.raises(SpecError) as info:
        api_check(LOOP_DEMO, params=params)
    assert str(info.value) == f"{LOOP_DEMO}: {message}"


def test_api_params_must_be_a_mapping():
    with pytest.raises(SpecError) as info:
        api_check(LOOP_DEMO, params=[("max_steps", 2)])
    assert str(info.value) == f"{LOOP_DEMO}: the params to pin must be a mapping of param names to values, got list"


def test_a_python_model_pin_of_the_wrong_type_is_refused():
    with pytest.raises(SpecError) as info:
        api_check(RetryLoop, params={"K": True})
    (problem,) = info.value.problems
    assert problem.message == "-p K must be an integer, got True"


def test_valid_api_options_still_run():
    report = api_check(LOOP_DEMO, params={"max_steps": [2, 3], "max_retries": 0}, timeout=60,
                       max_states=10**6, properties=["terminates"])
    assert report.result == "proved" and [r.params for r in report.runs] == \
        [{"max_steps": 2, "max_retries": 0}, {"max_steps": 3, "max_retries": 0}]


@pytest.mark.parametrize("value, shown", [("true", "true"), ("2.0", "2.0"), ('"2"', '"2"')])
def test_a_trace_param_of_the_wrong_type_is_blamed_on_the_trace(check, tmp_path, value, shown):
    """A trace recording `"max_steps": true` was replayed with max_steps = 1."""
    trace = tmp_path / "trace.json"
    trace.write_text('{"params": {"n": ' + value + '}, "steps": [{"state": {"decision": "going", '
                     '"steps": 0}}]}')
    r = check(BASE, "--trace", str(trace), command="replay")
    assert (r.code, r.out, r.err) == (2, "", f"error: {trace}: the trace records param n = {shown}, not "
                                             "a declared value of n (1..3)\n")


def test_an_api_pin_of_a_huge_range_is_refused_without_listing_it():
    """`params={"K": range(1, 10**12)}` was listed out in full (a MemoryError or a hang)."""
    with pytest.raises(SpecError) as info:
        api_check(LOOP_DEMO, params={"max_steps": range(1, 10**12)})
    assert str(info.value) == (f"{LOOP_DEMO}: -p max_steps=range(1, 1000000000000) gives 999,999,999,999 "
                               "values, more than the 10,000 combinations a check sweeps")
    report = api_check(LOOP_DEMO, params={"max_steps": range(2, 4), "max_retries": 0})
    assert [r.params["max_steps"] for r in report.runs] == [2, 3]


def test_no_run_at_all_proves_nothing():
    """`overall([])` said "proved" (exit 0) for a gate that checked nothing."""
    from haltproof.reports.report import overall
    assert overall([]) == ("incomplete", 3)


@pytest.mark.parametrize("option", ["--json", "--junit", "--sarif", "--html"])
def test_an_unwritable_report_file_is_refused_before_anything_is_explored(cli, tmp_path, monkeypatch, option):
    """The fuzz found `--json /missing/dir/x.json` reported only after the whole exploration."""
    def explore(*args, **kwargs):
        raise AssertionError("explored although the report file cannot be written")
    monkeypatch.setattr("haltproof.explorer.check.explore", explore)
    missing = tmp_path / "missing" / "report.out"
    ran = cli("check", LOOP_DEMO, "-p", "max_steps=1", "-p", "max_retries=0", option, missing)
    assert (ran.code, ran.out) == (2, "")
    assert ran.err == (f"error: {option} {missing}: cannot write the report: no such directory: "
                       f"{missing.parent}\n")
    ran = cli("check", LOOP_DEMO, "-p", "max_steps=1", "-p", "max_retries=0", option, tmp_path)
    assert (ran.code, ran.out, ran.err) == (2, "", f"error: {option} {tmp_path}: cannot write the report: "
                                                   "is a directory\n")


@pytest.mark.parametrize("option", ["--json", "--junit", "--sarif", "--html"])
def test_an_empty_report_file_name_is_refused(cli, option):
    """`--json=` used to be taken as no --json at all: the report was silently not written."""
    ran = cli("check", LOOP_DEMO, "-p", "max_steps=1", "-p", "max_retries=0", f"{option}=")
    assert (ran.code, ran.out, ran.err) == (2, "", f"error: {option} needs a file name\n")
