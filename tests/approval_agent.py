"""Bound code for tests/machine/test_bound_monitors.py: a tiny agent whose events the spec's property
patterns, past-time operators and conditional choices judge through `bind:` (never shipped)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from haltproof.machine.binding import Adapter


@dataclass
class Agent:
    """The concrete run: how many events, the last one, and whether a write was approved."""

    n: int = 0
    last: str = "none"
    approved: bool = False
    seen: tuple[tuple[str, ...], ...] = ()      # the choice names each step was given


def act(agent: Agent, event: str, careful: bool) -> Agent:
    """One event. A careful agent turns a write nobody approved into a refusal."""
    if careful and event == "write" and not agent.approved:
        event = "refuse"
    approved = agent.approved or event == "approve"
    return Agent(agent.n + 1, event, approved and event != "refuse", agent.seen)


class Reckless(Adapter):
    """Writes whenever asked: `approval_before_write` must fail after one step."""

    careful = False

    def concretize(self, state: dict[str, Any], params: dict[str, int]) -> Agent:
        return Agent(state["n"], state["last"], state["last"] == "approve")

    def step(self, action: str, concrete: Agent, choices: dict[str, Any]) -> tuple[Agent, str | None]:
        if set(choices) != ({"e", "reason"} if choices.get("e") == "refuse" else {"e"}):
            raise AssertionError(f"the code was given the choices {sorted(choices)}")
        return act(concrete, choices["e"], self.careful), None

    def abstract(self, concrete: Agent, params: dict[str, int]) -> dict[str, Any]:
        return {"n": concrete.n, "last": concrete.last}


class Careful(Reckless):
    """Refuses a write nobody approved: `approval_before_write` holds."""

    careful = True
