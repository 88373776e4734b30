"""A tree of three agents checked as one machine, against its agents checked one by one.

`python -m bench.trees` (from the repo root; run it under `nice`, one benchmark at a time)
checks bench/specs/trees/planner.yaml (a planner running a researcher and a writer, as
examples/trees/spec/ with wider limits) and, one by one, the planner with its sub-agents as
black boxes (planner_alone.yaml), the researcher and the writer, each in a child process,
`--repeat` times, and reports the medians: the wall time of each command (what a user waits
for, Python's start-up included) and the exploration time the report gives (`stats.seconds`).
Results go to bench/results/trees.json and trees.md; bench/README.md shows the table.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "bench" / "specs" / "trees"
SIZES = {     # name -> the planner's params (the sub-agents' follow from them)
    "small": {"rounds": 3, "research_turns": 3, "draft_turns": 2, "token_budget": 16},
    "large": {"rounds": 8, "research_turns": 6, "draft_turns": 4, "token_budget": 48},
}


def commands(p: dict[str, int]) -> dict[str, list[str]]:
    """The tree's command and each agent's own, with their params."""
    pins = [x for k, v in p.items() for x in ("-p", f"{k}={v}")]
    budget = ["-p", f"budget={p['token_budget']}"]
    return {
        "tree": [str(SPECS / "planner.yaml"), *pins],
        "planner alone": [str(SPECS / "planner_alone.yaml"), *pins],
        "researcher": [str(SPECS / "researcher.yaml"), "-p", f"max_turns={p['research_turns']}", *budget],
        "writer": [str(SPECS / "writer.yaml"), "-p", f"max_turns={p['draft_turns']}", *budget],
    }


def measure(args: list[str], engine: str) -> dict[str, Any]:
    """One `haltproof check` in a child process: wall seconds, exploration seconds, states."""
    cmd = [sys.executable, "-m", "haltproof", "check", *args, "--engine", engine, "--format", "json", "-j", "1"]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {done.returncode}: {done.stderr.strip()[:400]}")
    run = json.loads(done.stdout)["runs"][0]
    return {"wall": wall, "explore": run["stats"]["seconds"], "states": run["stats"]["states"]}


def median_of(args: list[str], engine: str, repeat: int) -> dict[str, Any]:
    runs = [measure(args, engine) for _ in range(repeat)]
    return {"wall": statistics.median(r["wall"] for r in runs),
            "explore": statistics.median(r["explore"] for r in runs), "states": runs[0]["states"]}


def table(results: list[dict[str, Any]]) -> str:
    rows = ["| size | engine | tree states | one-by-one states | tree wall s | one-by-one wall s | wall ratio "
            "| tree explore s | one-by-one explore s | explore ratio |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        rows.append(f"| {r['size']} | {r['engine']} | {r['tree']['states']:,} | {r['alone_states']:,} | "
                    f"{r['tree']['wall']:.2f} | {r['alone_wall']:.2f} | {r['wall_ratio']:.2f} | "
                    f"{r['tree']['explore']:.2f} | {r['alone_explore']:.2f} | {r['explore_ratio']:.1f} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.trees", description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--engines", default="scalar,vector")
    ap.add_argument("--sizes", default=",".join(SIZES))
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = ap.parse_args(argv)
    results = []
    for size in args.sizes.split(","):
        for engine in args.engines.split(","):
            got = {name: median_of(cmd, engine, args.repeat) for name, cmd in commands(SIZES[size]).items()}
            alone = [v for k, v in got.items() if k != "tree"]
            row = {"size": size, "engine": engine, "params": SIZES[size], "tree": got["tree"],
                   "agents": {k: v for k, v in got.items() if k != "tree"},
                   "alone_states": sum(a["states"] for a in alone),
                   "alone_wall": sum(a["wall"] for a in alone), "alone_explore": sum(a["explore"] for a in alone)}
            row["wall_ratio"] = row["tree"]["wall"] / row["alone_wall"]
            row["explore_ratio"] = row["tree"]["explore"] / max(row["alone_explore"], 1e-9)
            results.append(row)
            print(table([row]).splitlines()[-1], flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "trees.json").write_text(json.dumps(results, indent=1) + "\n")
    (args.out / "trees.md").write_text(table(results) + "\n")
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
