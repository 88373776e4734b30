"""Test-only user code that does not return: a `decide` that sleeps for an hour or spins
forever at one reachable state, and a Python model whose action or `init` does the same.

Nothing here ships. The --timeout tests run these in a subprocess (`bind:
stuck_code:Name`, `stuck_code:Model`, with the tests directory on PYTHONPATH), so a
check they held would show as that subprocess timing out, never as a stuck test run.
"""

from __future__ import annotations

import time
from typing import Any

from haltproof.harness import loop
from haltproof.harness.loop_binding import LoopDemoAdapter
from haltproof.machine.pymodel import Model, action, always, terminates_within

State = dict[str, Any]


def _stuck(how: str) -> None:
    if how == "sleep":
        time.sleep(3600)
    while True:
        pass


def _late(state: State) -> bool:
    """From the second step on, once a failure was counted (as crashing_late_decide)."""
    return state["steps"] >= 2 and state["failures"] > 0


def sleeping_decide(state: State) -> str:
    if _late(state):
        _stuck("sleep")
    return loop.decide(state)


def spinning_decide(state: State) -> str:
    if _late(state):
        _stuck("spin")
    return loop.decide(state)


class Sleeping(LoopDemoAdapter):
    decide = staticmethod(sleeping_decide)


class Spinning(LoopDemoAdapter):
    decide = staticmethod(spinning_decide)


class SleepingDraw(LoopDemoAdapter):
    """Its strategy for a failed observation sleeps when Hypothesis draws from it (not when
    strategy() builds it): user code that runs inside the library, not called by haltproof."""

    def strategy(self, action: str, choice: str, label: Any) -> Any:
        from hypothesis import strategies as st
        drawn = st.just(self.representative(action, choice, label))
        return drawn.map(lambda value: _stuck("sleep")) if label == "failed" else drawn


class SleepingInit(LoopDemoAdapter):
    def __init__(self) -> None:
        _stuck("sleep")


class Retry(Model):
    """A bounded retry loop (docs/examples/retry_model.py, smaller) that gets stuck on
    the second call when it fails, in the way its class attribute `how` says."""

    how = "spin"
    params = {"K": [3]}

    def domains(self, p: dict[str, int]) -> dict[str, Any]:
        return {"calls": range(0, p["K"] + 1), "status": ["running", "done", "failed"]}

    def init(self, p: dict[str, int]) -> list[State]:
        return [{"calls": 0, "status": "running"}]

    def terminal(self, s: State, p: dict[str, int]) -> bool:
        return s["status"] != "running"

    @action(when=lambda s, p: s["status"] == "running", outcome=["ok", "error"],
            rules=["finished", "gave_up", "retry"])
    def call_tool(self, s: State, p: dict[str, int], outcome: str) -> tuple[State, str]:
        calls = s["calls"] + 1
        if calls == 2 and outcome == "error":
            _stuck(self.how)
        if outcome == "ok":
            return {"calls": calls, "status": "done"}, "finished"
        if calls >= p["K"]:
            return {"calls": calls, "status": "failed"}, "gave_up"
        return {"calls": calls, "status": "running"}, "retry"

    @always
    def within_budget(self, s: State, p: dict[str, int]) -> bool:
        return s["calls"] <= p["K"]


class SleepingRetry(Retry):
    how = "sleep"


class SpinningInit(Retry):
    def init(self, p: dict[str, int]) -> list[State]:
        _stuck("spin")


def _spinning_count(before: State, after: State, p: dict[str, int], action: str, choices: dict[str, Any],
                    rule: str | None) -> bool:
    _stuck("spin")
    return True


class SpinningCount(Retry):
    """Explores in full (its action never gets stuck); only the count of its
    terminates_within property, run after the exploration, spins."""

    @action(when=lambda s, p: s["status"] == "running", outcome=["ok", "error"],
            rules=["finished", "gave_up", "retry"])
    def call_tool(self, s: State, p: dict[str, int], outcome: str) -> tuple[State, str]:
        calls = s["calls"] + 1
        if outcome == "ok":
            return {"calls": calls, "status": "done"}, "finished"
        if calls >= p["K"]:
            return {"calls": calls, "status": "failed"}, "gave_up"
        return {"calls": calls, "status": "running"}, "retry"

    calls_bounded = terminates_within(lambda p: p["K"], count=_spinning_count)


class _Endless:
    """A value whose hash, equality and repr never return."""

    def __hash__(self) -> int:
        _stuck("spin")
        return 0

    def __eq__(self, other: object) -> bool:
        _stuck("spin")
        return False

    def __repr__(self) -> str:
        _stuck("spin")
        return ""


class EndlessValue(LoopDemoAdapter):
    """abstract() hands back a value of the user's own class, whose methods never return."""

    def abstract(self, concrete: Any, params: dict[str, int]) -> dict[str, Any]:
        state = super().abstract(concrete, params)
        return {**state, "observation": _Endless()}
