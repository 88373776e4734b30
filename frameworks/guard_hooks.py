"""What every framework's runtime guard hook shares: following one run through a guard
(haltproof.guard) and stopping it on a denial, with the decision packet.

Each integration maps its framework's run onto the spec's actions and states exactly as its
explorer does (frameworks/langgraph_guard.py, pydantic_ai_guard.py, openai_agents_guard.py
reuse those mappings), then calls `Follower.before` before a step runs and `Follower.after`
once it ran (`Follower` and `GuardStopped` live in the runtime, haltproof.guard). A `deny` raises `GuardStopped`; an `approval_required` asks the `approve`
callback (none: stopped, fail-closed); an `allow` lets the run go on untouched.
docs/how-to/guard.md, "Framework hooks".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from haltproof.guard import Decision, Follower, Guard, GuardStopped

Approve = Callable[[Decision], bool]
__all__ = ["Approve", "Follower", "GuardStopped", "state_of"]


def state_of(guard: Guard, seen: dict[str, Any]) -> dict[str, Any]:
    """The guard's vars, read from what the integration's mapping gives; a var of the spec the
    mapping does not give is named (the guard was made from another kind of run)."""
    missing = [v for v in guard.var_names if v not in seen]
    if missing:
        raise ValueError(f"the guard of {guard.spec_name} has the var(s) {', '.join(missing)}, which this "
                         f"framework's run does not show (it shows {', '.join(sorted(seen))}): was the guard "
                         "made from this framework's declaration?")
    return {v: seen[v] for v in guard.var_names}
