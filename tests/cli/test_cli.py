"""End-to-end tests of the command line: exit codes, report keys, text output, replay."""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import haltproof.explorer.engine
from haltproof.reports.report import shown_path
from haltproof.cli.common import bundled_specs
from haltproof.cli.main import build_parser
from conftest import LOOP_DEMO, MUTANTS, ROOT


@pytest.mark.slow
def test_check_with_no_arguments_is_one_line_a_run_then_the_totals(cli):
    """Quiet by default: the bundled check fits on a screen, one line per spec x params."""
    ran = cli("check")
    assert ran.code == 0
    lines = ran.out.splitlines()
    # the bundled specs as the report shows their folder: specs/ in a checkout, the installed
    # package's folder in site-packages otherwise (CI installs the package, not the checkout)
    where = re.escape(shown_path(str(bundled_specs()[0].parent)))
    runs = [ln for ln in lines if re.fullmatch(rf"proved  {where}/\w+\.yaml \[\w+\] \S.*: [\d,]+ states, \d+\.\d\d s.*", ln)]
    assert len(runs) == 66 and lines[:66] == runs
    assert sum("[loop_demo]" in ln for ln in runs) == 10
    assert lines[66] == ""
    assert re.fullmatch(r"\d+ warnings in \d+ runs \(vacuity: parts of a spec that never matter\): "
                        r"--verbose lists them", lines[67])
    assert lines[68:] == ["66 runs: 66 proved, 0 violated as expected, 0 failed, 0 incomplete -> proved"]


@pytest.mark.slow
def test_check_with_no_arguments_checks_the_bundled_specs(cli):
    ran = cli("check", "--verbose")
    assert ran.code == 0
    assert "loop_demo" in ran.out
    demo = [ln for ln in ran.out.splitlines() if "[loop_demo]" in ln]
    assert len(demo) == 10
    headers = [ln for ln in ran.out.splitlines() if re.search(r"\.yaml  \[\w+\]  ", ln)]
    assert {re.search(r"\[(\w+)\]", h).group(1) for h in headers} == {"loop_demo", "budget_runner", "gate_chain"}
    assert ran.out.count("proved:") == len(headers)
    assert "mutant" not in ran.out.lower()


def test_json_report_has_exactly_the_contract_keys(cli):
    ran = cli("check", LOOP_DEMO, "-p", "max_steps=2", "-p", "max_retries=1", "--format", "json")
    assert ran.code == 0
    rep = ran.json()
    assert rep["schema"] == "haltproof-report/1"
    assert rep["tool"]["name"] == "haltproof" and rep["tool"]["version"]
    assert rep["result"] == "proved"
    (run,) = rep["runs"]
    assert {"spec", "machine", "params", "result", "stats", "properties", "coverage"} <= set(run)
    assert run["spec"].endswith("loop_demo.yaml") and run["machine"] == "loop_demo"
    assert run["params"] == {"max_steps": 2, "max_retries": 1}
    assert set(run["stats"]) == {"states", "transitions", "terminal_states", "max_depth", "seconds"}
    assert run["stats"]["states"] == 112 and run["stats"]["max_depth"] == 2
    for p in run["properties"]:
        assert {"name", "kind", "status", "message", "trace"} <= set(p)
        assert p["status"] in ("holds", "violated", "unknown")
    assert set(run["coverage"]) == {"rules", "terminals"}
    assert run["coverage"]["rules"]["continue"] > 0
    assert set(run["coverage"]["terminals"]) == {"success", "needs_input", "error", "limit"}


def test_json_trace_shape(cli):
    ran = cli("check", MUTANTS / "failure_not_a_step.yaml", "-p", "max_steps=2", "-p", "max_retries=0",
              "--format", "json")
    assert ran.code == 0                       # violated exactly as expected
    (run,) = ran.json()["runs"]
    term = next(p for p in run["properties"] if p["name"] == "terminates")
    assert term["status"] == "violated" and term["expected"] is True
    trace = term["trace"]
    assert trace["kind"] == "lasso" and trace["loop_start"] == 1
    first = trace["steps"][0]
    assert first["action"] is None and first["rule"] is None and first["choices"] == {}
    assert set(first["state"]) == {"steps", "failures", "phase", "observation", "decision", "scenario"}
    assert trace["steps"][1] == {"state": trace["steps"][1]["state"], "action": "read_task_cards",
                                 "choices": {"obs": "failed"}, "rule": "continue"}


def test_text_output_shows_stats_statuses_and_counterexample_table(cli, tmp_path):
    text = (MUTANTS / "limit_before_observation.yaml").read_text()
    spec = tmp_path / "m.yaml"
    spec.write_text(text[:text.index("\nexpect:")] + "\n")
    ran = cli("check", spec, "-p", "max_steps=3", "-p", "max_retries=0", "--verbose")
    assert ran.code == 1
    out = ran.out
    assert "max_steps=3 max_retries=0" in out
    assert "states" in out and "transitions" in out and "depth 3" in out and " s\n" in out
    assert "VIOLATED  final_answer_on_last_step_kept" in out
    assert "holds     at_most_max_steps" in out
    assert "step  action           choices" in out
    assert "read_task_cards  obs=one_match   limit" in out
    assert out.rstrip().endswith("-> violated")


def test_max_states_gives_incomplete_and_proves_nothing(cli):
    ran = cli("check", LOOP_DEMO, "--max-states", "3", "--format", "json")
    assert ran.code == 3
    rep = ran.json()
    assert rep["result"] == "incomplete"
    for run in rep["runs"]:
        assert run["result"] == "incomplete" and run["stopped_by"] == "max_states"
        statuses = {p["name"]: p["status"] for p in run["properties"]}
        assert "holds" not in {s for n, s in statuses.items() if n != "success_reachable"}
        assert run["warnings"] == []            # no vacuity claims on a partial exploration


def test_timeout_gives_incomplete(cli, monkeypatch):
    clock = iter(range(0, 10**9, 1000))
    monkeypatch.setattr(haltproof.explorer.engine.time, "monotonic", lambda: next(clock))
    ran = cli("check", LOOP_DEMO, "-p", "max_steps=5", "-p", "max_retries=1", "--timeout", "5")
    assert ran.code == 3
    assert "stopped at --timeout" in ran.out
    assert "-> incomplete" in ran.out


def test_a_violation_beats_incomplete(cli):
    ran = cli("check", LOOP_DEMO, MUTANTS / "failure_not_a_step.yaml", "--max-states", "30",
              "--format", "json")
    # loop_demo runs are cut short (3) but nothing unexpected is violated anywhere
    assert ran.code == 3


def _grid_file(tmp_path, n: int, properties: str):
    from test_engines import GRID
    path = tmp_path / "grid.yaml"
    path.write_text(GRID.format(n=n, properties=properties))
    return path


@pytest.mark.parametrize("properties,code", [("holds", 3), ("early_bug", 1)])
def test_max_memory_stops_a_large_exploration_before_it_is_done(tmp_path, properties, code):
    """512,000 states, and a limit 48 MiB above what the process holds before it explores:
    it stops, incomplete, and says how many states fit; a violation found by then stands."""
    from test_engines import GRID_EARLY_BUG, GRID_HOLDS
    spec = _grid_file(tmp_path, 79, GRID_HOLDS if properties == "holds" else GRID_EARLY_BUG)
    script = ("import sys\n"
              "from haltproof.cli.main import main\n"
              "from haltproof.explorer.memory import current_rss\n"
              "limit = (current_rss() >> 20) + 48\n"
              f"code = main(['check', {str(spec)!r}, '--engine', 'scalar', '--format', 'json', "
              "'--max-memory', f'{limit}M'])\n"
              "print(limit, file=sys.stderr)\n"
              "sys.exit(code)\n")
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert ran.returncode == code, ran.stderr
    limit = int(ran.stderr.strip().splitlines()[-1])
    (run,) = json.loads(ran.stdout)["runs"]
    assert run["stopped_by"] == "max_memory"
    states = run["stats"]["states"]
    assert 0 < states < 512_000
    assert run["stop_reason"] == f"stopped at {states:,} states: memory limit {limit}M reached"
    if properties == "early_bug":
        bug = next(p for p in run["properties"] if p["name"] == "not_both")
        assert run["result"] == "violated" and bug["status"] == "violated" and len(bug["trace"]["steps"]) == 3
    else:
        assert run["result"] == "incomplete"
        assert {p["status"] for p in run["properties"]} == {"unknown"}


@pytest.mark.parametrize("engine", ["scalar", "vector"])
def test_running_out_of_memory_is_incomplete_not_a_bug(cli, tmp_path, monkeypatch, engine):
    """A MemoryError in the middle of the exploration: exit 3 with what fit, never exit 4."""
    import haltproof.explorer.engine as E
    import haltproof.explorer.vengine as V
    from test_engines import GRID_HOLDS
    spec = _grid_file(tmp_path, 29, GRID_HOLDS)
    if engine == "scalar":      # the plain loop checks every new state: state 5001 does not fit
        checked = E._Sweep.check_state

        def check_state(self, j, t):
            if j == 5000:
                raise MemoryError
            return checked(self, j, t)
        monkeypatch.setattr(E._Sweep, "check_state", check_state)
        monkeypatch.setattr(E, "_runs_generated", lambda m: False)
    else:                       # the checks of level 20's transitions do not fit
        levels = iter(range(10**6))
        checks = V._transition_checks

        def transition_checks(*args):
            if next(levels) == 20:
                raise MemoryError
            return checks(*args)
        monkeypatch.setattr(V, "_transition_checks", transition_checks)
    ran = cli("check", spec, "--engine", engine, "--format", "json")
    assert ran.code == 3, ran.err
    (run,) = ran.json()["runs"]
    assert (run["result"], run["stopped_by"]) == ("incomplete", "max_memory")
    states = run["stats"]["states"]
    assert run["stop_reason"] == (f"stopped at {states:,} states: out of memory (a bound, not a bug: try "
                                  "--max-memory, more memory, or smaller params)")
    assert states == (5001 if engine == "scalar" else sum((d + 1) * (d + 2) // 2 for d in range(21)))


@pytest.mark.parametrize("size,message", [
    ("0", "must be positive, got '0'"), ("-1G", "must be positive, got '-1G'"),
    ("0.0001K", "must be positive, got '0.0001K'"),
    ("1.5", "must be a whole number of bytes, got '1.5'"),
    ("12x", "must be a size: bytes or a number with K, M, G or T, e.g. 512M or 4G, got '12x'"),
    ("G", "must be a size: bytes or a number with K, M, G or T, e.g. 512M or 4G, got 'G'"),
    ("", "must be a size: bytes or a number with K, M, G or T, e.g. 512M or 4G, got ''"),
    ("9" * 400 + "G", "must be a finite number, got '" + "9" * 19 + "... (403 characters)")])
def test_max_memory_refuses_what_is_not_a_positive_size(cli, size, message):
    ran = cli("check", LOOP_DEMO, f"--max-memory={size}")
    assert ran.code == 2 and ran.out == ""
    assert f"haltproof: error: argument --max-memory: --max-memory {message}" in ran.err
    assert "Traceback" not in ran.err


@pytest.mark.parametrize("text,size", [("4G", 4 << 30), ("512M", 512 << 20), ("512m", 512 << 20),
                                       ("1000000", 1_000_000), ("1.5G", 3 << 29), ("64K", 64 << 10),
                                       ("512MiB", 512 << 20), ("2T", 2 << 40)])
def test_max_memory_sizes(text, size):
    from haltproof.explorer.memory import parse_size, size_text
    assert parse_size(text) == size
    assert parse_size(size_text(size)) == size


@pytest.mark.parametrize("args,message", [
    (["-p", "nope=1"], "no spec declares a param named 'nope'"),
    (["-p", "max_steps=9"], "not a declared value of max_steps (1..5)"),
    (["-p", "max_steps=two"], "-p max_steps must be an integer, got 'two'"),
    (["-p", "max_steps"], "write -p NAME=VALUE"),
    (["--property", "nope"], "no such property"),
    (["--max-states", "0"], "must be positive"),
    (["--format", "xml"], "invalid choice"),
])
def test_usage_errors_exit_2_with_a_message(cli, args, message):
    ran = cli("check", LOOP_DEMO, *args)
    assert ran.code == 2
    assert message in ran.err
    assert ran.out == ""
    assert "Traceback" not in ran.err


NUMERIC = [
    ("check", "--timeout", "nan", "--timeout must be a finite number, got 'nan'"),
    ("check", "--timeout", "inf", "--timeout must be a finite number, got 'inf'"),
    ("check", "--timeout", "1e999", "--timeout must be a finite number, got '1e999'"),
    ("check", "--timeout", "0", "--timeout must be positive, got '0'"),
    ("check", "--max-states", "nan", "--max-states must be a number, got 'nan'"),
    ("check", "--max-states", "inf", "--max-states must be a number, got 'inf'"),
    ("graph", "--max-nodes", "nan", "--max-nodes must be a number, got 'nan'"),
    ("graph", "--max-nodes", "0", "--max-nodes must be positive, got '0'"),
    ("conform", "--examples", "inf", "--examples must be a number, got 'inf'"),
    ("conform", "--max-depth", "nan", "--max-depth must be a number, got 'nan'"),
    ("conform", "--seed", "nan", "invalid int value: 'nan'"),
]


@pytest.mark.parametrize("command, option, value, message", NUMERIC,
                         ids=[f"{c} {o}={v}" for c, o, v, _ in NUMERIC])
def test_numeric_options_refuse_nan_and_infinity(cli, command, option, value, message):
    """`--timeout nan` was accepted: ignored on a small spec, a stop after one state on a big one."""
    ran = cli(command, LOOP_DEMO, f"{option}={value}")
    assert (ran.code, ran.out) == (2, "")
    assert ran.err.splitlines()[-1] == f"haltproof: error: argument {option}: {message}"


def test_a_param_pinned_twice_sweeps_both_values_in_the_given_order(cli):
    """`-p K=1 -p K=2` silently checked K=2 only; it means both."""
    ran = cli("check", LOOP_DEMO, "-p", "max_steps=3", "-p", "max_steps=1", "-p", "max_retries=0",
              "--format", "json")
    assert ran.code == 0, ran.err
    assert [r["params"] for r in ran.json()["runs"]] == [{"max_steps": 3, "max_retries": 0},
                                                         {"max_steps": 1, "max_retries": 0}]


def test_each_pinned_value_is_checked_against_the_declared_range(cli):
    ran = cli("check", LOOP_DEMO, "-p", "max_steps=9", "-p", "max_steps=2")    # the last one was all
    assert (ran.code, ran.out) == (2, "")
    assert ran.err == (f"error: {shown_path(str(LOOP_DEMO))}:25: -p max_steps=9: not a declared value of max_steps "
                       "(1..5)\n")


def test_the_same_pinned_value_twice_is_refused(cli):
    ran = cli("check", LOOP_DEMO, "-p", "max_steps=2", "-p", "max_steps=2")
    assert (ran.code, ran.out, ran.err) == (2, "", "error: -p max_steps=2 is given twice\n")


@pytest.mark.parametrize("command", [["graph"], ["replay", "--scenario", "one_match"]])
def test_commands_of_one_combination_refuse_two_values(cli, command):
    ran = cli(command[0], LOOP_DEMO, *command[1:], "-p", "max_steps=2", "-p", "max_steps=3",
              "-p", "max_retries=1")
    assert (ran.code, ran.out) == (2, "")
    assert ran.err == (f"error: -p max_steps: {command[0]} runs one param combination, and max_steps "
                       "is given 2 values (2, 3)\n")


LOOP = "symlink loop (resolving it leads back to itself)"


def test_a_symlink_loop_as_the_spec_is_named_as_such(cli, tmp_path):
    loop = tmp_path / "loop.yaml"
    loop.symlink_to(loop)
    for command in (["check"], ["graph"], ["replay", "--scenario", "x"], ["conform"]):
        ran = cli(command[0], loop, *command[1:])
        assert (ran.code, ran.out) == (2, ""), command
        assert ran.err == f"error: {loop}: {LOOP}\n", command


def test_a_symlink_loop_in_the_path_is_named_as_such(cli, tmp_path):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    ran = cli("check", tmp_path / "a" / "spec.yaml")
    assert (ran.code, ran.out, ran.err) == (2, "", f"error: {tmp_path / 'a' / 'spec.yaml'}: {LOOP}\n")


def test_a_directory_holding_a_symlink_loop_does_not_skip_it(cli, tmp_path):
    (tmp_path / "good.yaml").write_text(LOOP_DEMO.read_text())
    (tmp_path / "loop.yaml").symlink_to(tmp_path / "loop.yaml")
    ran = cli("check", tmp_path)
    assert (ran.code, ran.out, ran.err) == (2, "", f"error: {tmp_path / 'loop.yaml'}: {LOOP}\n")


def test_a_broken_symlink_is_named_as_such(cli, tmp_path):
    (tmp_path / "good.yaml").write_text(LOOP_DEMO.read_text())
    (tmp_path / "gone.yaml").symlink_to("moved.yaml")
    expected = f"error: {tmp_path / 'gone.yaml'}: broken symlink (to moved.yaml, which does not exist)\n"
    for target in (tmp_path, tmp_path / "gone.yaml"):
        ran = cli("check", target)
        assert (ran.code, ran.out, ran.err) == (2, "", expected)


def test_missing_spec_path_is_a_usage_error(cli, tmp_path):
    ran = cli("check", tmp_path / "missing.yaml")
    assert ran.code == 2 and "no such file or directory" in ran.err


def test_property_filter_checks_only_that_property_and_the_builtins(cli):
    ran = cli("check", LOOP_DEMO, "--property", "terminates", "-p", "max_steps=1", "-p", "max_retries=0",
              "--format", "json")
    assert ran.code == 0
    (run,) = ran.json()["runs"]
    assert [p["name"] for p in run["properties"]] == ["domains", "well_defined", "bound_code", "code_matches_spec",
                                                      "terminates"]


def test_json_file_matches_stdout_report(cli, tmp_path):
    out = tmp_path / "r.json"
    ran = cli("check", LOOP_DEMO, "-p", "max_steps=1", "-p", "max_retries=0", "--json", out)
    assert ran.code == 0
    rep = json.loads(out.read_text())
    assert rep["runs"][0]["stats"]["states"] == 42
    assert "proved" in ran.out       # stdout stays text


def test_replay_a_trace_from_the_report(cli, tmp_path):
    ran = cli("check", MUTANTS / "retry_past_last_step.yaml", "-p", "max_steps=2", "--format", "json")
    assert ran.code == 0
    report = tmp_path / "report.json"
    report.write_text(ran.out)
    replayed = cli("replay", MUTANTS / "retry_past_last_step.yaml", "--trace", report,
                   "--property", "continue_only_below_max_steps")
    assert replayed.code == 0, replayed.out
    assert "# ok: 2 steps" in replayed.out
    # a bare trace object works too, and a tampered one is caught
    prop = next(p for p in ran.json()["runs"][0]["properties"] if p["name"] == "domains")
    trace = prop["trace"]
    bare = tmp_path / "trace.json"
    bare.write_text(json.dumps(trace))
    assert cli("replay", MUTANTS / "retry_past_last_step.yaml", "--trace", bare).code == 1  # ends out of domain
    trace["steps"][1]["state"]["steps"] = 0
    bare.write_text(json.dumps(trace))
    bad = cli("replay", MUTANTS / "retry_past_last_step.yaml", "--trace", bare)
    assert bad.code == 1
    assert "step 1: the state differs from the recorded one: steps recorded 0, replay gives 1" in bad.out


def test_a_trace_naming_a_key_twice_is_a_usage_error(cli, tmp_path):
    """json.loads keeps the last value, so a state read one way here is read another way elsewhere."""
    ran = cli("check", MUTANTS / "retry_past_last_step.yaml", "-p", "max_steps=2", "--format", "json")
    prop = next(p for p in ran.json()["runs"][0]["properties"] if p["name"] == "domains")
    bare = tmp_path / "trace.json"
    bare.write_text(json.dumps(prop["trace"]).replace('"state": {', '"state": {"steps": 7, ', 1))
    ran = cli("replay", MUTANTS / "retry_past_last_step.yaml", "--trace", bare)
    assert (ran.code, ran.out) == (2, "")
    assert ran.err == (f"error: {bare}: not a JSON trace: duplicate key 'steps' in a JSON object (which "
                       "value is meant is ambiguous)\n")


def test_replay_trace_errors_are_usage_errors(cli, tmp_path):
    junk = tmp_path / "junk.json"
    junk.write_text("{not json")
    ran = cli("replay", LOOP_DEMO, "--trace", junk)
    assert ran.code == 2 and "not a JSON trace" in ran.err
    report = tmp_path / "two.json"
    ran = cli("check", MUTANTS / "limit_before_observation.yaml", "-p", "max_steps=3", "-p", "max_retries=0",
              "--format", "json")
    report.write_text(ran.out)
    ran = cli("replay", LOOP_DEMO, "--trace", report)
    assert ran.code == 2 and "name one with --property" in ran.err


def test_an_internal_error_exits_4_and_asks_for_a_report(cli, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("boom")
    monkeypatch.setattr("haltproof.explorer.check.explore", broken)
    ran = cli("check", LOOP_DEMO, "-p", "max_steps=1", "-p", "max_retries=0")
    assert ran.code == 4
    assert "internal error" in ran.err and "Please file it" in ran.err and "boom" in ran.err


def test_progress_goes_to_stderr_only(cli):
    ran = cli("check", LOOP_DEMO, "-p", "max_steps=2", "-p", "max_retries=0", "--progress")
    assert ran.code == 0
    assert "states" in ran.err and "loop_demo" in ran.err
    assert "\r" not in ran.out


@pytest.mark.slow
def test_console_script_runs(tmp_path):
    """The installed `haltproof` entry point works from another directory."""
    ran = subprocess.run([sys.executable, "-m", "haltproof.cli.main", "check", "-p", "max_steps=1",
                          "-p", "max_retries=0"], cwd=tmp_path, capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    assert "loop_demo" in ran.stdout


SCRIPT = Path(sys.executable).parent / "haltproof"
SAME_AS_SCRIPT = [
    ("graph", LOOP_DEMO, "-p", "max_steps=1", "-p", "max_steps=2", "-p", "max_retries=0"),
    ("graph", LOOP_DEMO, "-p", "max_steps=1", "-p", "max_retries=0", "-o", "/nonexistent/dir/g.dot"),
    ("graph", LOOP_DEMO, "--max-nodes", "0"),
    ("check", LOOP_DEMO, "-p", "max_steps=1", "-p", "max_steps=1"),
    ("check", LOOP_DEMO, "--update-baseline"),
    ("replay", LOOP_DEMO, "--scenario", "nope"),
    ("replay", LOOP_DEMO, "--scenario", "limit", "-p", "max_steps=1", "-p", "max_steps=2"),
    ("conform", MUTANTS / "failure_not_a_step.yaml"),
]


@pytest.mark.parametrize("argv", SAME_AS_SCRIPT, ids=[" ".join(map(str, a[:1] + a[2:])) for a in SAME_AS_SCRIPT])
def test_python_m_explorer_cli_is_the_haltproof_script(argv):
    """Under `python -m haltproof.cli.main` the CLI module was loaded twice, and graph's UsageError
    (from the second copy) was a traceback instead of exit 2."""
    args = [str(a) for a in argv]
    by_module = subprocess.run([sys.executable, "-m", "haltproof.cli.main", *args], capture_output=True, text=True)
    by_script = subprocess.run([str(SCRIPT), *args], capture_output=True, text=True)
    assert (by_module.returncode, by_module.stdout, by_module.stderr) == \
           (by_script.returncode, by_script.stdout, by_script.stderr)
    assert by_module.returncode == 2 and by_module.stdout == "" and "Traceback" not in by_module.stderr
    assert by_module.stderr.startswith(("error: ", "usage: haltproof "))


def test_python_m_explorer_cli_graph_usage_error_message():
    ran = subprocess.run([sys.executable, "-m", "haltproof.cli.main", "graph", str(LOOP_DEMO), "-p", "max_steps=1",
                          "-p", "max_steps=2"], capture_output=True, text=True)
    assert (ran.returncode, ran.stdout, ran.stderr) == \
           (2, "", "error: -p max_steps: graph runs one param combination, and max_steps is given 2 values "
                   "(1, 2)\n")


def test_property_filter_over_several_specs(cli, tmp_path):
    ran = cli("check", LOOP_DEMO, MUTANTS / "decide_counts_as_step.yaml", "--property", "domains",
              "--format", "json")
    rep = ran.json()
    assert len(rep["runs"]) == 10 + 6
    builtins = {"loop_demo": ["domains", "well_defined", "bound_code", "code_matches_spec"],
                "loop_decide_counts_as_step": ["domains", "well_defined"]}
    assert all([p["name"] for p in r["properties"]] == builtins[r["machine"]] for r in rep["runs"])
    ran = cli("check", LOOP_DEMO, MUTANTS / "decide_counts_as_step.yaml", "--property", "nope")
    assert ran.code == 2 and "no spec has a property with this name" in ran.err


def test_unwritable_json_file_is_a_usage_error(cli, tmp_path):
    ran = cli("check", LOOP_DEMO, "-p", "max_steps=1", "-p", "max_retries=0",
              "--json", tmp_path / "no" / "such" / "dir.json")
    assert ran.code == 2 and "cannot write the report" in ran.err
    assert ran.out == ""


# ---------------------------------------------------------------- the shape of the CLI (issue 12)

SUBCOMMANDS = ("check", "conform", "replay", "graph", "export", "guard", "traces", "init", "lint", "mcp")


def _imported(path: Path) -> set[str]:
    """Every module a file imports, relative imports of the cli package resolved."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = ("haltproof.cli." if node.level else "") + (node.module or "")
            out.add(base.rstrip("."))
            out.update(f"{base.rstrip('.')}.{a.name}" if node.level and not node.module else ""
                       for a in node.names)
    return out - {""}


def test_one_module_per_subcommand_none_importing_the_dispatcher():
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert tuple(sub.choices) == SUBCOMMANDS
    for name in SUBCOMMANDS:
        module = importlib.import_module(f"haltproof.cli.{name}")
        assert callable(getattr(module, f"cmd_{name}")) and callable(module.add_parser)
        assert "haltproof.cli.main" not in _imported(ROOT / "cli" / f"{name}.py"), name
    # common.py imports no subcommand and not the dispatcher: only the leaf module of usage errors
    assert {m for m in _imported(ROOT / "cli" / "common.py") if m.startswith("haltproof.cli")} == {"haltproof.cli.usage"}
    assert not {m for m in _imported(ROOT / "cli" / "usage.py") if m.startswith("haltproof")}


def test_the_graph_format_parses_no_arguments_and_imports_no_cli():
    """argparse and exit codes belong to cli/graph.py, not to the report format."""
    imported = _imported(ROOT / "reports" / "graph.py")
    assert "argparse" not in imported and "sys" not in imported
    assert not [m for m in imported if m.startswith("haltproof.cli")]


def test_no_cli_function_is_longer_than_80_lines():
    for path in sorted((ROOT / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                assert node.end_lineno - node.lineno + 1 <= 80, f"{path.name}: {node.name}"


@pytest.mark.parametrize("option, what", [("--baseline", "a file name"), ("--emit-tests", "a directory name")])
@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_baseline_or_tests_directory_is_refused(cli, tmp_path, monkeypatch, option, what, value):
    """`--baseline=` (an unset CI variable) used to be taken as no --baseline: the gate compared
    nothing and exited 0; `--emit-tests=` wrote no tests; `--baseline " "` wrote a file named " "."""
    monkeypatch.chdir(tmp_path)
    ran = cli("check", LOOP_DEMO, "-p", "max_steps=1", "-p", "max_retries=0", f"{option}={value}")
    assert (ran.code, ran.out, ran.err) == (2, "", f"error: {option} needs {what}\n")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("value", ["", " "])
def test_replay_refuses_an_empty_trace_file_name(cli, value):
    """`--trace=` was read as the current directory: "error: : not a JSON trace: [Errno 21] ..."."""
    ran = cli("replay", LOOP_DEMO, f"--trace={value}", "-p", "max_steps=1", "-p", "max_retries=0")
    assert (ran.code, ran.out, ran.err) == (2, "", "error: --trace needs a file name\n")
