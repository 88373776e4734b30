"""The adapter between specs/loop_demo.yaml and the real chapter-2 loop in haltproof.harness.loop.

The spec's abstract observation classes are what `decide` can tell apart; this module
gives each class a concrete representative (what the exhaustive check feeds the code)
and a Hypothesis strategy of every concrete observation in the class (what
`haltproof conform` draws from). `classify` is the abstraction function back.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from haltproof.machine.binding import Adapter

from . import loop

REPRESENTATIVES: dict[str, dict[str, Any]] = {
    "failed": {"ok": False, "error": loop.UNAVAILABLE},
    "one_match": {"ok": True, "matches": ["task-003"]},
    "zero_matches": {"ok": True, "matches": [], "search_complete": True},
    "many_matches": {"ok": True, "matches": ["task-003", "task-003-copy"]},
    "incomplete": {"ok": True, "matches": ["candidate-005"], "search_complete": False, "next_page": 6},
}

_ids = st.text(min_size=1, max_size=12)


def _complete(matches: st.SearchStrategy) -> st.SearchStrategy:
    """A finished search: search_complete true, or absent (it defaults to true)."""
    present = st.fixed_dictionaries({"ok": st.just(True), "matches": matches,
                                     "search_complete": st.just(True)},
                                    optional={"next_page": st.integers(0, 100)})
    absent = st.fixed_dictionaries({"ok": st.just(True), "matches": matches})
    return st.one_of(absent, present)


STRATEGIES: dict[str, st.SearchStrategy] = {
    "failed": st.fixed_dictionaries({"ok": st.just(False), "error": st.text(max_size=40)}),
    "one_match": _complete(st.lists(_ids, min_size=1, max_size=1)),
    "zero_matches": _complete(st.just([])),
    "many_matches": _complete(st.lists(_ids, min_size=2, max_size=6)),
    "incomplete": st.fixed_dictionaries({"ok": st.just(True), "matches": st.lists(_ids, max_size=4),
                                         "search_complete": st.just(False)},
                                        optional={"next_page": st.integers(1, 100)}),
}


def classify(observation: dict[str, Any] | None) -> str:
    """The abstract class of a concrete observation (the inverse of the strategies)."""
    if observation is None:
        return "nothing"
    if not observation["ok"]:
        return "failed"
    if not observation.get("search_complete", True):
        return "incomplete"
    n = len(observation["matches"])
    return "one_match" if n == 1 else "zero_matches" if n == 0 else "many_matches"


class LoopDemoAdapter(Adapter):
    """Runs haltproof.harness.loop's own `loop_step` (update_state + decide + stop) for each transition."""

    decide: Callable[[dict[str, Any]], str] = staticmethod(loop.decide)

    def concretize(self, state: dict[str, Any], params: dict[str, int]) -> dict[str, Any]:
        concrete = loop.new_state(state["scenario"], params["max_steps"], params["max_retries"])
        concrete.update(steps=state["steps"], failures=state["failures"], phase=state["phase"])
        obs = state["observation"]
        concrete["observation"] = None if obs == "nothing" else copy.deepcopy(REPRESENTATIVES[obs])
        if state["decision"] not in ("undecided", "continue"):
            concrete.update(done=True, terminal=state["decision"])
        return concrete

    def representative(self, action: str, choice: str, label: Any) -> dict[str, Any]:
        return copy.deepcopy(REPRESENTATIVES[label])

    def strategy(self, action: str, choice: str, label: Any) -> st.SearchStrategy:
        return STRATEGIES[label]

    def step(self, action: str, concrete: dict[str, Any], choices: dict[str, Any]) -> tuple[dict[str, Any], str]:
        decision = loop.loop_step(concrete, choices["obs"], decide=type(self).decide)
        return concrete, decision            # the spec names each decide rule after its decision

    def abstract(self, concrete: dict[str, Any], params: dict[str, int]) -> dict[str, Any]:
        if concrete["phase"] == "start":
            decision = "undecided"
        else:
            decision = concrete["terminal"] if concrete["done"] else "continue"
        return {"steps": concrete["steps"], "failures": concrete["failures"], "phase": concrete["phase"],
                "observation": classify(concrete["observation"]), "decision": decision,
                "scenario": concrete["scenario"]}
