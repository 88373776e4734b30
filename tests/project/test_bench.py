"""The benchmark runner (bench/run.py, `python -m bench`): parsing, the exact-count
assertions, and a tiny end-to-end run at Q=10. Fast checks only: no timing assertions."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
if str(ROOT) not in sys.path:  # bench/ is not installed: it runs from the repo root
    sys.path.insert(0, str(ROOT))

from bench import run as bench  # noqa: E402

BASELINE = ROOT.parent / "shared" / "bench" / "baseline.py"


def _report(states=9317, transitions=19965, budget_trace_steps=None, result="proved"):
    trace = None
    if budget_trace_steps is not None:
        trace = {"kind": "path", "loop_start": None,
                 "steps": [{"state": {"r": i}, "action": None if i == 0 else "call_read"}
                           for i in range(budget_trace_steps + 1)]}
    return json.dumps({
        "schema": "haltproof-report/1", "tool": {"name": "haltproof", "version": "9.9"},
        "result": result, "exit_code": 0,
        "runs": [{"spec": "bench/specs/gate_budget.yaml", "params": {"Q": 10, "B": 90, "A": 3},
                  "result": result,
                  "stats": {"states": states, "transitions": transitions, "terminal_states": 5324,
                            "seconds": 0.04},
                  "properties": [
                      {"name": "domains", "kind": "builtin", "status": "holds", "trace": None},
                      {"name": "budget", "kind": "invariant",
                       "status": "holds" if trace is None else "violated", "trace": trace}]}],
        "sweeps": []})


def test_reference_table_is_the_closed_form():
    for q, (states, transitions) in bench.REFERENCE.items():
        n = (q + 1) ** 3
        assert (states, transitions) == (n * 7, 5 * n * 3)
    assert bench.expected_counts(5) == (6 ** 3 * 7, 5 * 6 ** 3 * 3)


def test_parse_haltproof_report():
    rep = bench.parse_haltproof_report(_report())
    assert (rep["states"], rep["transitions"], rep["result"]) == (9317, 19965, "proved")
    assert rep["tool_check_s"] == 0.04 and rep["version"] == "9.9"
    assert rep["prop_status"] == "holds" and rep["cex_steps"] is None


def test_parse_haltproof_report_counts_trace_transitions_not_states():
    rep = bench.parse_haltproof_report(_report(states=6433, transitions=13785, budget_trace_steps=11,
                                               result="violated"))
    assert rep["prop_status"] == "violated"
    assert rep["cex_steps"] == 11  # 12 states on the trace, the first being the initial state


def test_parse_haltproof_report_rejects_garbage():
    with pytest.raises(ValueError):
        bench.parse_haltproof_report("Traceback (most recent call last): ...")
    with pytest.raises(ValueError):
        bench.parse_haltproof_report(json.dumps({"runs": []}))


def test_parse_baseline_output():
    line = ('{"states": 9317, "transitions": 19965, "distinct_edges": 19000, "violation": null, '
            '"terminal": 5324, "tool": "baseline", "python": "3.11.7", "check_s": 0.05}')
    res = bench.parse_baseline_output("some noise\n" + line + "\n")
    assert (res["states"], res["transitions"], res["violation"], res["tool_check_s"]) == (9317, 19965, None, 0.05)
    bug = bench.parse_baseline_output('{"states": 2100, "transitions": 4400, "violation": "used<=B", '
                                      '"cex_steps": 11, "cex": []}')
    assert bug["cex_steps"] == 11 and bug["violation"] == "used<=B"
    with pytest.raises(ValueError):
        bench.parse_baseline_output("")


def test_count_assertions_raise_on_a_mismatch():
    bench.assert_counts("haltproof", 10, 9317, 19965)
    bench.assert_counts("haltproof", 100, 7_212_107, 15_454_515)
    with pytest.raises(bench.CountMismatch, match="9316"):
        bench.assert_counts("haltproof", 10, 9316, 19965)
    with pytest.raises(bench.CountMismatch):
        bench.assert_counts("baseline", 40, 482_447, 1_033_816)
    with pytest.raises(bench.CountMismatch):
        bench.assert_counts("haltproof", 10, None, None)
    bench.assert_cex("haltproof", 10, 11)
    with pytest.raises(bench.BenchFailure):
        bench.assert_cex("haltproof", 10, 12)
    with pytest.raises(bench.BenchFailure):
        bench.assert_cex("haltproof", 10, None)


def test_parse_peer_outputs():
    spin = ("State-vector 20 byte, depth reached 33, errors: 0\n     9317 states, stored\n"
            "    10649 states, matched\n    19966 transitions (= stored+matched)\n")
    assert bench.parse_spin_output(spin) == {"states": 9317, "transitions": 19965, "raw_transitions": 19966,
                                             "errors": 0}
    tlc = ("Model checking completed. No error has been found.\n"
           "19966 states generated, 9317 distinct states found, 0 states left on queue.\n")
    assert bench.parse_tlc_output(tlc)["transitions"] == 19965
    rumur = "Status:\n\n\tNo error found.\n\n\t9317 states, 19965 rules fired in 0s.\n"
    assert bench.parse_rumur_output(rumur) == {"states": 9317, "transitions": 19965, "errors": 0}


def test_engine_detection_from_help():
    assert bench.engines_from_help("usage: haltproof check [-h] [--max-states N]") == [None]
    assert bench.engines_from_help("  --engine {auto,scalar,vector}\n") == ["auto", "scalar", "vector"]


def test_a_mismatching_tool_fails_the_run_loudly(tmp_path, capsys):
    fake = tmp_path / "baseline.py"
    fake.write_text('import json; print(json.dumps({"states": 9316, "transitions": 19965, '
                    '"violation": None, "check_s": 0.0}))\n')
    code = bench.main(["--q", "10", "--tools", "baseline", "--baseline", str(fake),
                       "--out", str(tmp_path / "out"), "--no-readme", "--quiet", "--timeout", "60"])
    assert code == 1
    assert "BENCHMARK FAILED" in capsys.readouterr().err
    res = json.loads((tmp_path / "out" / "latest.json").read_text())
    assert res["passed"] is False
    assert res["rows"][0]["status"] == "MISMATCH" and "9316" in res["rows"][0]["note"]


def test_bug_variant_counterexample_at_q10_is_11(cli):
    ran = cli("check", ROOT / "bench/specs/gate_budget_bug.yaml", "-p", "Q=10", "-p", "B=50", "-p", "A=3",
              "--format", "json")
    rep = bench.parse_haltproof_report(ran.out)
    assert rep["prop_status"] == "violated"
    assert rep["cex_steps"] == 11


@pytest.mark.slow
def test_python_m_bench_q10_writes_exact_counts(tmp_path):
    out = tmp_path / "results"
    p = subprocess.run([sys.executable, "-m", "bench", "--q", "10", "--tools", "haltproof,baseline",
                        "--out", str(out), "--no-readme", "--quiet", "--timeout", "120"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    res = json.loads((out / "latest.json").read_text())
    md = (out / "latest.md").read_text()
    assert res["passed"] and res["options"]["q"] == [10]
    hp = [r for r in res["rows"] if r["tool"].startswith("haltproof")]
    assert hp, res["rows"]
    for r in hp:
        assert (r["status"], r["states"], r["transitions"]) == ("ok", 9317, 19965)
        assert r["wall_s"] > 0 and r["peak_rss"] > 0 and r["bytes_per_state"] > 0
    hp_bug = [r for r in res["bug_rows"] if r["tool"].startswith("haltproof")]
    assert hp_bug and all(r["cex_steps"] == 11 for r in hp_bug)
    assert "9,317" in md and "19,965" in md
    if BASELINE.exists():
        base = next(r for r in res["rows"] if r["tool"] == "baseline")
        assert (base["states"], base["transitions"]) == (9317, 19965)
        assert next(r for r in res["bug_rows"] if r["tool"] == "baseline")["cex_steps"] == 11
        assert all(r["wall_vs_baseline"] is not None for r in hp)
    else:
        assert res["tools"]["baseline"]["available"] is False
        assert "MISSING" in res["tools"]["baseline"]["why"]


_MEASURE_BOTH = """
import json, sys
from bench import run as bench
big = bench.run_measured([sys.executable, "-c", "b = bytearray(150 * 2**20); b[::4096] = b'x' * len(b[::4096])"],
                         ".", timeout=60)
small = bench.run_measured([sys.executable, "-c", "pass"], ".", timeout=60)
print(json.dumps({"big": big, "small": small}))
"""


def test_peak_rss_is_per_child_and_timeouts_end_a_measurement():
    # measured from a fresh, small process as `python -m bench` is: a child's peak RSS
    # counts what it shared with its parent before exec, and this pytest process may be
    # large by now
    done = subprocess.run([sys.executable, "-c", _MEASURE_BOTH], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    both = json.loads(done.stdout)
    big, small = both["big"], both["small"]
    assert big["rc"] == 0 and small["rc"] == 0
    assert big["peak_rss"] > 150 * 2**20
    assert small["peak_rss"] < 100 * 2**20  # not the max over every child so far
    slow = bench.run_measured([sys.executable, "-c", "import time; time.sleep(30)"], ROOT, timeout=0.3)
    assert slow["timed_out"] and slow["wall_s"] < 10


BAD_OPTIONS = [
    ("--timeout", "nan", "--timeout must be a finite number, got 'nan'"),
    ("--timeout", "inf", "--timeout must be a finite number, got 'inf'"),
    ("--timeout", "-inf", "--timeout must be a finite number, got '-inf'"),
    ("--timeout", "0", "--timeout must be in (0, 604800], got '0'"),
    ("--timeout", "-5", "--timeout must be in (0, 604800], got '-5'"),
    ("--timeout", "1e10", "--timeout must be in (0, 604800], got '1e10'"),
    ("--timeout", "soon", "--timeout must be a number, got 'soon'"),
    ("--repeat", "0", "--repeat must be at least 1, got '0'"),
    ("--repeat", "-2", "--repeat must be at least 1, got '-2'"),
    ("--repeat", "nan", "--repeat must be a number, got 'nan'"),
    ("--q", "0", "--q wants positive integers"),
    ("--q", "10,-1", "--q wants positive integers"),
]


@pytest.mark.parametrize("option, value, message", BAD_OPTIONS, ids=[f"{o}={v}" for o, v, _ in BAD_OPTIONS])
def test_numeric_options_are_refused_before_anything_runs(option, value, message, tmp_path, capsys):
    """--timeout nan or -5 made the timer fire at once (every measurement killed, reported as
    "killed after the nan s timeout"), and inf an OverflowError in the timer thread: no
    timeout at all."""
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as info:
        bench.main([f"{option}={value}", "--tools", "baseline", "--out", str(out), "--no-readme", "--quiet"])
    assert info.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines()[-1] == f"python -m bench: error: argument {option}: {message}"
    assert not out.exists()



def test_the_large_preset_measures_issue_16s_rows():
    """--large: Q = 150, 200, 300 of the shared table, the vector engine with -j 1 and -j 2
    against SPIN, no bug variant; whatever the command line gives stays."""
    args = bench.build_parser().parse_args(["--large"])
    bench._large_defaults(args, ["--large"])
    assert (args.q, args.tools, args.engines, args.workers, args.no_bug) == \
        ([150, 200, 300], ["haltproof", "spin"], ["vector"], [1, 2], True)
    argv = ["--large", "--q=200", "--workers", "1,2,4"]
    args = bench.build_parser().parse_args(argv)
    bench._large_defaults(args, argv)
    assert (args.q, args.workers) == ([200], [1, 2, 4])
    assert bench.expected_counts(300) == (190_896_307, 409_063_515)


def test_spin_is_not_run_where_it_would_need_more_than_a_third_of_the_memory(monkeypatch, tmp_path):
    monkeypatch.setattr(bench, "available_bytes", lambda: 20 * 10 ** 9)
    args = bench.build_parser().parse_args(["--tools", "spin", "--quiet"])
    runner = bench.Runner(args)
    row = runner.spin_row(300)              # 190.9 M states at 60 bytes: 11 GB
    assert (row["status"], row["note"]) == ("skipped", "not run: pan would need about 11 GB (60 bytes a state), "
                                                       "over a third of the 20 GB available on this shared machine")


@pytest.mark.parametrize("value, message", [("0", "--workers wants positive integers"),
                                            ("two", "--workers wants integers separated by commas, not 'two'")])
def test_bad_worker_counts_are_refused(value, message, capsys):
    with pytest.raises(SystemExit):
        bench.build_parser().parse_args(["--workers", value])
    assert capsys.readouterr().err.splitlines()[-1] == f"python -m bench: error: argument --workers: {message}"


def test_pan_counts_past_ten_million_are_read_from_its_g_format():
    """pan prints 5.6844207e+07 past 10^7 (G(200)): read, and compared at 8 digits, not an error."""
    spin = ("5.6844207e+07 states, stored\n 65000000 states, matched\n"
            "1.2180902e+08 transitions (= stored+matched)\nState-vector 28 byte, depth reached 801, errors: 0\n")
    parsed = bench.parse_spin_output(spin)
    assert parsed == {"states": 56_844_207, "transitions": 121_809_019, "raw_transitions": 121_809_020,
                      "errors": 0, "significant_digits": 8}
    args = bench.build_parser().parse_args(["--tools", "spin", "--quiet"])
    row = bench.Runner(args)._peer_counts(bench._row("spin", 200, 1800, "safe"), 200, parsed)
    assert (row["status"], row["note"]) == ("ok", "pan printed its counts to 8 significant digits")
