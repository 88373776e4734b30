"""The budgeted runner under the runtime guard of specs/budget_runner.yaml (docs/how-to/guard.md).

    guard = Guard.load("budget_guard.json", spec="specs/budget_runner.yaml", params={"K": 4, "R": 2})
    run = GuardedRunner(connect("shop.sqlite"), DeterministicPolicy(), guard).start(task, K=4, R=2)

Every transition the runner saves (a decision, an attempt) is shown to the guard as the spec's
abstract state (binding.py's `abstract_state`, the one the proof was checked against, with this
run's entries of the effect ledger); the end, with its terminal label. The guard watches the
executor and its configuration, not the policy: the proved spec lets the policy propose
anything, so no proposal leaves it, but an executor that drifted does (a deployment whose K is
not the guard's, a budget check lost): the transition that leaves the model is denied right
after it was saved, so `GuardStopped` stops the loop before the next tool call. Nothing is
lost: the run's state, its observations and the ledger stay in SQLite as the last transition
left them. A run stopped, or crashed, is resumed only without the guard (`Runner.resume`): a
guard follows a run from its start.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from haltproof.guard import Decision, Follower, Guard

from .binding import abstract_state
from .runner import Event, Runner

FOLLOWED = ("decision", "attempt")


class GuardedRunner(Runner):
    """A Runner whose runs are followed through `guard`; GuardStopped at its first denial."""

    def __init__(self, conn: sqlite3.Connection, policy: Any, guard: Guard, *, approve: Callable[[Decision], bool] | None = None,
                 **kwargs: Any):
        told = kwargs.pop("on_event", None) or (lambda event: None)
        self.follower = Follower(guard, approve)

        def on_event(event: Event) -> None:
            told(event)
            self._follow(event)
        super().__init__(conn, policy, on_event=on_event, **kwargs)

    def resume(self, run_id: str) -> dict[str, Any]:
        raise RuntimeError(f"run {run_id}: a guard follows a run from its start; resume it with Runner "
                           "(its state and ledger are in the database as the guard left them)")

    def _follow(self, event: Event) -> None:
        kind = event["event"]
        if kind == "start":
            self.follower.start(self._state(event["run"]))
        elif kind in FOLLOWED:
            run = self.store.load(self._run_id)
            self.follower.after(self._state(run))
        elif kind == "end":
            self.follower.end(self._state(event["run"])["status"])

    def _state(self, run: dict[str, Any]) -> dict[str, Any]:
        self._run_id = run["run_id"]
        return abstract_state({"run": run, "ledger": self.shop.ledger(run["run_id"])})
