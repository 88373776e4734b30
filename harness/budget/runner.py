"""The budgeted runner: real policy, real tools on SQLite, durable state, one gate.

    runner = Runner(connect("shop.sqlite"), DeterministicPolicy())
    run = runner.start({"goal": "reserve", "query": "camera", "quantity": 1}, K=4, R=2)
    run = runner.resume("run-1")            # after the process died at any point

The loop only composes the pure transitions of haltproof.harness.budget.transitions (the code
specs/budget_runner.yaml is checked against) with I/O, saving the state after each:

    nothing pending   -> consult: the policy sees a deep copy of the view; the gate
                         validates, authorizes, checks the budget (for a tool) or
                         finalizes (for finish); the run ends or a call is prepared
    a call pending    -> begin_attempt: check c < K, count c + 1 - SAVED - then call the
                         tool, then record_attempt - SAVED; a failure is retried
                         (same action, same idempotency key, the policy not asked)
                         while attempts <= R
    resumed mid-call  -> recover: the effect ledger says whether the reservation landed;
                         otherwise the counted attempt is recorded as interrupted

`hooks` (tests only) is called with the name of a point in the loop - "counted" (c + 1
saved, the tool not yet called) and "called" (the tool returned, its result not yet
recorded) - so a test can kill the run exactly there.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from . import transitions as T
from .gate import GATE, Gate
from .store import RunStore
from .tools import Faults, Shop

Event = dict[str, Any]


class Runner:
    def __init__(self, conn: sqlite3.Connection, policy: Any, *, faults: Faults | None = None,
                 on_event: Callable[[Event], None] | None = None,
                 hooks: Callable[[str, dict[str, Any]], None] | None = None, gate: Gate = GATE):
        self.conn = conn
        self.shop = Shop(conn, faults)
        self.store = RunStore(conn)
        self.policy = policy
        self.on_event = on_event or (lambda event: None)
        self.hooks = hooks or (lambda point, run: None)
        self.gate = gate

    def start(self, task: dict[str, Any], K: int, R: int, run_id: str | None = None) -> dict[str, Any]:
        """Create a run (task, K and R are fixed with it) and drive it to a terminal."""
        if run_id is None:
            n = len(self.store.run_ids()) + 1
            while self.store.exists(f"run-{n}"):
                n += 1
            run_id = f"run-{n}"
        run = T.new_run(run_id, task, K, R)
        self.store.create(run)
        self.on_event({"event": "start", "run": T.json_copy(run)})
        return self._drive(run)

    def resume(self, run_id: str) -> dict[str, Any]:
        """Continue a run from its database: whatever was saved last is where it goes on."""
        run = self.store.load(run_id)
        self.on_event({"event": "resume", "run": T.json_copy(run)})
        return self._drive(run)

    def _save(self, run: dict[str, Any]) -> None:
        self.store.save(run)

    def _drive(self, run: dict[str, Any]) -> dict[str, Any]:
        pending = run["pending"]
        if run["terminal"] is None and pending is not None and pending["started"]:
            receipt = self.shop.receipt_for(pending["key"]) if pending["action"]["tool"] == "reserve" else None
            rule = T.recover(run, receipt)
            self._save(run)
            self.on_event({"event": "recovered", "rule": rule, "observation": run["observations"][-1],
                           "calls": run["calls"], "K": run["K"]})
        while run["terminal"] is None:
            if run["pending"] is None:
                proposals: list[Any] = []

                def ask(view: dict[str, Any]) -> Any:     # consult() below calls it, and only it
                    proposals.append(self.policy.next_action(view))  # noqa: B023
                    return proposals[-1]  # noqa: B023

                rule = T.consult(run, ask, self.gate)
                self._save(run)
                self.on_event({"event": "decision", "n": run["decisions"] if rule == "prepared" else None,
                               "proposal": proposals[0] if proposals else None, "rule": rule,
                               "action": run["pending"]["action"] if run["pending"] else None})
                continue
            ended = T.begin_attempt(run, self.gate)      # the rule when the run ends instead
            self._save(run)                              # c + 1 is durable before the call
            if ended is not None:
                break
            pending = run["pending"]
            self.hooks("counted", run)
            outcome = self.shop.call(pending["action"], pending["key"], run["run_id"])
            self.hooks("called", run)
            rule = T.record_attempt(run, outcome)
            self._save(run)
            self.on_event({"event": "attempt", "rule": rule, "observation": run["observations"][-1],
                           "calls": run["calls"], "K": run["K"]})
        self.on_event({"event": "end", "run": T.json_copy(run)})
        return run
