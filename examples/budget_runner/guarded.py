"""The budgeted runner (seed S2) under the guard written from its proof (docs/how-to/guard.md).

    haltproof guard specs/budget_runner.yaml -p K=4 -p R=2 -o budget_guard.json
    python examples/budget_runner/guarded.py budget_guard.json shop.sqlite

A run configured as proved (K=4, R=2) passes the guard untouched: finished/reserved with 4 calls.
A deployment whose budget drifted (K=6 in its configuration, the guard's K is 4) with a policy
that keeps reading the stock leaves the model when it prepares a fifth call: the guard stops the
loop before that call, and the SQLite database keeps the run as the last transition left it."""
import json
import sys

from haltproof.guard import Guard, GuardStopped
from haltproof.harness.budget import DeterministicPolicy, Shop, connect
from haltproof.harness.budget.guarded import GuardedRunner
from haltproof.harness.budget.tasks import TASKS


class StockWatcher:
    """A policy that drifted: after the search it reads the first hit's stock again and again."""

    def next_action(self, view: dict) -> dict:
        if not view["observations"]:
            return {"type": "tool", "tool": "search", "args": {"query": view["task"]["query"]}}
        hit = view["observations"][0]["result"]["hits"][0]
        return {"type": "tool", "tool": "stock", "args": {"item": hit}}


def main(guard_path: str, db: str) -> int:
    conn = connect(db)
    Shop(conn).seed()
    guard = Guard.load(guard_path, spec="specs/budget_runner.yaml", params={"K": 4, "R": 2})
    run = GuardedRunner(conn, DeterministicPolicy(), guard).start(TASKS["camera"], K=4, R=2)
    print(f"as proved: {run['terminal']['status']}/{run['terminal']['final']} after {run['calls']} calls")
    runner = GuardedRunner(conn, StockWatcher(), Guard.load(guard_path))
    try:
        runner.start(TASKS["camera"], K=6, R=2)
    except GuardStopped as stop:
        print(f"K drifted to 6: {stop}")
        saved = runner.store.load("run-2")
        print(f"saved: {saved['calls']} calls, {len(saved['observations'])} observations, "
              f"pending {json.dumps(saved['pending']['action'])}, terminal {saved['terminal']}")
        return 0
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
