"""Adapters for tests/machine/test_representatives.py: several concrete values per abstract choice."""

from __future__ import annotations

import copy
from typing import Any

from haltproof.harness.loop_binding import REPRESENTATIVES, LoopDemoAdapter

MORE: dict[str, list[dict[str, Any]]] = {      # other members of each class, which the code treats alike
    "failed": [{"ok": False, "error": "timeout"}],
    "one_match": [{"ok": True, "matches": ["other-id"], "search_complete": True}],
    "zero_matches": [{"ok": True, "matches": []}, {"ok": True, "matches": [], "search_complete": True,
                                                   "note": "empty"}],
    "many_matches": [{"ok": True, "matches": ["a", "b", "c"]}],
    "incomplete": [],
}


class Several(LoopDemoAdapter):
    def representatives(self, action: str, choice: str, label: Any) -> list[dict[str, Any]]:
        return [copy.deepcopy(REPRESENTATIVES[label]), *copy.deepcopy(MORE[label])]


class TooCoarse(Several):
    """Puts a two-match search in the one_match class: the code decides differently on it."""

    def representatives(self, action: str, choice: str, label: Any) -> list[dict[str, Any]]:
        values = super().representatives(action, choice, label)
        return values + [{"ok": True, "matches": ["x", "y"]}] if label == "one_match" else values


class NoneForFailed(Several):
    def representatives(self, action: str, choice: str, label: Any) -> list[dict[str, Any]]:
        return [] if label == "failed" else super().representatives(action, choice, label)




SEEN: list[Any] = []


class Recording(Several):
    """Several, remembering every observation the code was given."""

    def step(self, action: str, concrete: dict[str, Any], choices: dict[str, Any]) -> tuple[dict[str, Any], str]:
        SEEN.append(copy.deepcopy(choices["obs"]))
        return super().step(action, concrete, choices)
