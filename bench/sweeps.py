"""Sweeps with `-j`: the bundled specs' sweep, the budget runner's bound-code sweep and its
largest combination as one run (its levels shared between the workers), each checked with
`-j 1` and with `-j 2` (issue 16's targets: at least 1.6x faster with two workers).

`python -m bench --sweeps` (or `python -m bench.sweeps`) measures each command as its own child
process (wall time, CPU seconds of the process and its workers, peak RSS of the process group)
and asserts what a benchmark may assert: both worker counts exit 0 and give the same JSON report
once timings are removed. Speed-ups are reported, never asserted (the machine may be loaded).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from bench.run import BENCH, REPO, machine_info, run_measured

SWEEPS = (("bundled specs (107 runs, bound code)", ["specs"]),
          ("budget_runner bound-code sweep (24 runs)", ["specs/budget_runner.yaml"]),
          # one run: -j 2 shares its BFS levels between two worker processes (explorer/parallel.py)
          ("budget_runner K=8 R=2, one bound-code run", ["specs/budget_runner.yaml", "-p", "K=8", "-p", "R=2"]))
WORKERS = (1, 2)
TIMING = {"seconds"}


def untimed(data: Any) -> Any:
    """A report without its timings: what must be equal across worker counts."""
    if isinstance(data, dict):
        return {k: untimed(v) for k, v in data.items() if k not in TIMING}
    if isinstance(data, list):
        return [untimed(v) for v in data]
    return data


def measure(target: list[str], workers: int, timeout: float) -> dict[str, Any]:
    """One `haltproof check TARGET -j WORKERS --format json` as its own process."""
    argv = [sys.executable, "-m", "haltproof", "check", *target, "-j", str(workers), "--format", "json"]
    proc = run_measured(argv, REPO, timeout)
    row: dict[str, Any] = {"workers": workers, "command": " ".join(["haltproof", *argv[3:]]), "rc": proc["rc"],
                           "wall_s": proc["wall_s"], "cpu_s": proc["cpu_s"], "peak_rss": proc["peak_rss"],
                           "timed_out": proc["timed_out"], "report": None}
    if proc["rc"] == 0:
        row["report"] = untimed(json.loads(proc["stdout"]))
        row["states"] = sum(r["stats"]["states"] for r in row["report"]["runs"])
    else:
        row["error"] = proc["stderr"][-400:]
    return row


def run(timeout: float = 600.0, log: Any = None) -> dict[str, Any]:
    """Every sweep at every worker count; `failures` lists what broke the assertions."""
    out: dict[str, Any] = {"machine": machine_info(), "load_before": os.getloadavg()[0], "sweeps": [],
                           "failures": []}
    for label, target in SWEEPS:
        rows = []
        for n in WORKERS:
            if log:
                log(f"sweeps: {label} -j {n}")
            rows.append(measure(target, n, timeout))
        for r in rows:
            if r["rc"] != 0:
                out["failures"].append(f"{label} -j {r['workers']}: exit {r['rc']} {r.get('error', '')}")
        reports = [r.pop("report") for r in rows]
        if all(r["rc"] == 0 for r in rows) and any(rep != reports[0] for rep in reports):
            out["failures"].append(f"{label}: the -j reports differ")
        out["sweeps"].append({"label": label, "runs": len(reports[0]["runs"]) if reports[0] else None,
                              "rows": rows, "speedup": rows[0]["wall_s"] / rows[-1]["wall_s"]})
    out["load_after"] = os.getloadavg()[0]
    out["passed"] = not out["failures"]
    return out


def render(res: dict[str, Any]) -> str:
    m = res["machine"]
    lines = [f"### Sweeps with -j: {m.get('nproc')} CPUs ({m.get('cpu')}), load average {res['load_before']:.2f} before, "
             f"{res['load_after']:.2f} after", "",
             "| sweep | runs | -j | wall s | states/s | CPU s (all processes) | peak RSS | wall ÷ -j 1 | reports equal |",
             "|---|--:|--:|--:|--:|--:|--:|--:|---|"]
    for s in res["sweeps"]:
        first = s["rows"][0]["wall_s"]
        equal = "yes" if not any(f.startswith(s["label"]) for f in res["failures"]) else "NO"
        for r in s["rows"]:
            rss = f"{r['peak_rss'] / 2**20:,.0f} MB" if r["peak_rss"] else "-"
            rate = f"{r['states'] / r['wall_s']:,.0f}" if r.get("states") and r["wall_s"] else "-"
            lines.append(f"| {s['label']} | {s['runs']} | {r['workers']} | {r['wall_s']:.2f} | {rate} | "
                         f"{r['cpu_s']:.2f} | {rss} | {r['wall_s'] / first:.2f}x | {equal} |")
        lines.append(f"| {s['label']}: speed-up of -j 2 | | | {s['speedup']:.2f}x | | | | | |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.sweeps", description=__doc__)
    ap.add_argument("--out", type=Path, default=BENCH / "results", metavar="DIR")
    ap.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS")
    args = ap.parse_args(argv)
    res = run(args.timeout, lambda *a: print(*a, file=sys.stderr, flush=True))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "sweeps.json").write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    text = render(res)
    (args.out / "sweeps.md").write_text(text, encoding="utf-8")
    print(text)
    if res["failures"]:
        print("BENCHMARK FAILED\n" + "\n".join(f"  {f}" for f in res["failures"]), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
