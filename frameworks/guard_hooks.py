"""What every framework's runtime guard hook shares: following one run through a guard
(haltproof.guard) and stopping it on a denial, with the decision packet.

Each integration maps its framework's run onto the spec's actions and states exactly as its
explorer does (frameworks/langgraph_guard.py, pydantic_ai_guard.py, openai_agents_guard.py
reuse those mappings), then calls `Follower.before` before a step runs and `Follower.after`
once it ran. A `deny` raises `GuardStopped`; an `approval_required` asks the `approve`
callback (none: stopped, fail-closed); an `allow` lets the run go on untouched.
docs/how-to/guard.md, "Framework hooks".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from haltproof.guard import Decision, Guard

Approve = Callable[[Decision], bool]


class GuardStopped(RuntimeError):
    """The guard stopped the run at this event: `decision` is the packet (`decision.to_dict()`)."""

    def __init__(self, decision: Decision):
        self.decision = decision
        super().__init__(f"haltproof guard: {decision.verdict} at step {decision.step} ({decision.event}"
                         f"{' ' + decision.action if decision.action else ''}): {decision.reason}")


class Follower:
    """One run followed through a guard: every decision kept in order, a denial raised."""

    def __init__(self, guard: Guard, approve: Approve | None = None):
        self.guard = guard
        self.approve = approve
        self.decisions: list[Decision] = []

    def start(self, state: dict[str, Any] | None = None) -> Decision:
        """A new run in the initial state `state` (None: the spec's only one)."""
        return self.check(self.guard.start(state))

    def before(self, action: str, choices: dict[str, Any] | None = None) -> Decision:
        return self.check(self.guard.before(action, choices))

    def after(self, state: dict[str, Any]) -> Decision:
        return self.check(self.guard.after(state))

    def end(self, reason: Any = None) -> Decision:
        return self.check(self.guard.end(reason))

    def check(self, decision: Decision) -> Decision:
        """Keep the decision; raise GuardStopped unless it allows (or the approver approves)."""
        self.decisions.append(decision)
        if decision.verdict == "allow":
            return decision
        if decision.verdict == "approval_required" and self.approve is not None and self.approve(decision):
            return decision
        raise GuardStopped(decision)


def state_of(guard: Guard, seen: dict[str, Any]) -> dict[str, Any]:
    """The guard's vars, read from what the integration's mapping gives; a var of the spec the
    mapping does not give is named (the guard was made from another kind of run)."""
    missing = [v for v in guard.var_names if v not in seen]
    if missing:
        raise ValueError(f"the guard of {guard.spec_name} has the var(s) {', '.join(missing)}, which this "
                         f"framework's run does not show (it shows {', '.join(sorted(seen))}): was the guard "
                         "made from this framework's declaration?")
    return {v: seen[v] for v in guard.var_names}
