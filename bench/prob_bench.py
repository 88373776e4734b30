"""The probabilities of the weighted G(Q, 9Q, 3) (issue 33): haltproof beside Storm, same run.

    python -m bench.prob_bench                 # Q = 20, 40, 60
    python -m bench.prob_bench --q 20 --no-storm

For each Q, one child process at a time (never two at once):
- **haltproof**: `haltproof check bench/specs/gate_budget_weighted.yaml -p Q=.. -p B=9Q -p A=3
  --format json`: one probability property, one expected property and the outcome table (three
  reach probabilities and one expected total, min and max). Its wall time, its exploration
  time (the report's `stats.seconds`), the rest (the analyses, plus start-up and the report),
  and the child's peak resident memory.
- **export**: `haltproof export --format drn` of the same model (the input Storm reads).
- **storm**: stormpy's sparse engine (doubles) in a child of its own: `build_model_from_drn`,
  then Pmin/Pmax of reaching `reach_rarely_aborts` and Rmin/Rmax of `transitions` until
  `terminal`; its build time, query time and peak memory; its values are checked against
  haltproof's intervals (an interval must contain Storm's value up to Storm's own precision).

No timed assertion: the table goes to stdout (markdown), and `--out FILE` writes it too.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "bench" / "specs" / "gate_budget_weighted.yaml"

STORM = r"""
import json, sys, time, resource
import stormpy
t0 = time.perf_counter()
model = stormpy.build_model_from_drn(sys.argv[1])
built = time.perf_counter() - t0
values = {}
t1 = time.perf_counter()
for name, formula in (("pmin", 'Pmin=? [F "reach_rarely_aborts"]'), ("pmax", 'Pmax=? [F "reach_rarely_aborts"]'),
                      ("rmin", 'R{"transitions"}min=? [F "terminal"]'), ("rmax", 'R{"transitions"}max=? [F "terminal"]')):
    result = stormpy.model_checking(model, stormpy.parse_properties(formula)[0])
    values[name] = float(result.get_value(model.initial_states[0]))
queried = time.perf_counter() - t1
print(json.dumps({"build": built, "query": queried, "values": values, "states": model.nr_states,
                  "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""


def child(argv: list[str], **kw: object) -> tuple[subprocess.CompletedProcess[str], float, int]:
    """Run one child; its wall time and peak resident memory (bytes)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)  # type: ignore[call-overload]
    out, err = proc.communicate()
    _, status, usage = os.wait4(proc.pid, 0) if proc.returncode is None else (0, 0, None)
    wall = time.perf_counter() - start
    rss = usage.ru_maxrss * 1024 if usage is not None else 0
    return subprocess.CompletedProcess(argv, proc.returncode, out, err), wall, rss


def peak(argv: list[str]) -> tuple[subprocess.CompletedProcess[str], float, int]:
    """A child under /usr/bin/time -f %M when there is one (its own peak RSS), else without."""
    timer = Path("/usr/bin/time")
    if timer.exists():
        ran, wall, _ = child([str(timer), "-f", "PEAK %M", *argv])
        lines = ran.stderr.splitlines()
        rss = int(next(ln for ln in reversed(lines) if ln.startswith("PEAK ")).split()[1]) * 1024
        return ran, wall, rss
    return child(argv)


def measure(q: int, storm: bool) -> dict[str, object]:
    pins = ["-p", f"Q={q}", "-p", f"B={9 * q}", "-p", "A=3"]
    ran, wall, rss = peak([sys.executable, "-m", "haltproof", "check", str(SPEC), *pins,
                           "--format", "json"])
    run = json.loads(ran.stdout)["runs"][0]
    row: dict[str, object] = {"q": q, "states": run["stats"]["states"], "transitions": run["stats"]["transitions"],
                              "wall": wall, "explore": run["stats"]["seconds"], "rss": rss}
    props = {p["name"]: p for p in run["properties"]}
    row["haltproof"] = {"rarely_aborts": props["rarely_aborts"].get("interval") or props["rarely_aborts"]["exact"],
                        "transitions": run["outcomes"]["expected"]["transitions"].get("interval")
                        or run["outcomes"]["expected"]["transitions"]["exact"]}
    if storm:
        with tempfile.TemporaryDirectory() as folder:
            drn = Path(folder) / "g.drn"
            exported, export_wall, _ = peak([sys.executable, "-m", "haltproof", "export", str(SPEC), *pins,
                                             "--format", "drn", "-o", str(drn)])
            assert exported.returncode == 0, exported.stderr
            ran, storm_wall, storm_rss = peak([sys.executable, "-c", STORM, str(drn)])
            assert ran.returncode == 0, ran.stderr
            values = json.loads(ran.stdout.splitlines()[-1])
        row.update(export=export_wall, storm=values, storm_wall=storm_wall, storm_rss=storm_rss)
        agree(row["haltproof"], values["values"])  # type: ignore[arg-type]
    return row


def agree(ours: dict[str, dict[str, object]], storm: dict[str, float]) -> None:
    """Storm's value (doubles, relative precision 1e-6 by default) within haltproof's bounds."""
    for name, key in (("rarely_aborts", "p"), ("transitions", "r")):
        for side in ("min", "max"):
            got = ours[name][side]
            lo, hi = (float(got), float(got)) if isinstance(got, str) else (float(got[0]), float(got[1]))  # type: ignore[index]
            want = storm[key + side]
            assert lo - 1e-6 * abs(want) <= want <= hi + 1e-6 * abs(want), (name, side, lo, hi, want)


def table(rows: list[dict[str, object]]) -> str:
    out = ["| Q | states | haltproof wall (s) | of it exploring (s) | analyses + start-up (s) | haltproof peak (MB) "
           "| DRN export (s) | Storm build (s) | Storm queries (s) | Storm peak (MB) | analyses / Storm build+queries "
           "| peak / Storm peak |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        wall, explore, rss = float(r["wall"]), float(r["explore"]), int(r["rss"])  # type: ignore[arg-type]
        rest = wall - explore
        if "storm" in r:
            s = r["storm"]
            build, query, srss = float(s["build"]), float(s["query"]), int(r["storm_rss"])  # type: ignore[index,arg-type]
            storm_cols = (f"{float(r['export']):.1f} | {build:.2f} | {query:.2f} | {srss / 2**20:.0f} | "  # type: ignore[arg-type]
                          f"{rest / (build + query):.1f}x | {rss / srss:.1f}x")
        else:
            storm_cols = "- | - | - | - | - | -"
        out.append(f"| {r['q']} | {int(r['states']):,} | {wall:.1f} | {explore:.1f} | {rest:.1f} | "  # type: ignore[call-overload]
                   f"{rss / 2**20:.0f} | {storm_cols} |")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--q", default="20,40,60")
    ap.add_argument("--no-storm", action="store_true")
    ap.add_argument("--out", metavar="FILE")
    args = ap.parse_args()
    rows = []
    for q in (int(x) for x in args.q.split(",")):
        row = measure(q, storm=not args.no_storm)
        print(json.dumps(row), file=sys.stderr)
        rows.append(row)
    text = table(rows)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
