"""Adapters for the two-var spec TYPED in tests/machine/test_binding.py, whose code returns a value
of the wrong type that equals a right one: True or 1.0 for the int 1, 1 for the bool True.

Each wrong value equals (and hashes like) a state the honest actions reach first, so
only a type-exact domain check on every successor catches it. Nothing here ships.
"""

from __future__ import annotations

from typing import Any

from haltproof.machine.binding import Adapter


class Honest(Adapter):
    """`inc`/`late_x` set x to 1, `flip`/`late_lit` set lit to True, as the spec's stages do."""

    ONE: Any = 1          # what late_x sets x to
    LIT: Any = True       # what late_lit sets lit to

    def concretize(self, state: dict[str, Any], params: dict[str, int]) -> dict[str, Any]:
        return dict(state)

    def step(self, action: str, concrete: dict[str, Any], choices: dict[str, Any]) -> tuple[dict, None]:
        new = dict(concrete)
        if action in ("inc", "late_x"):
            new["x"] = 1 if action == "inc" else self.ONE
        else:
            new["lit"] = True if action == "flip" else self.LIT
        return new, None

    def abstract(self, concrete: dict[str, Any], params: dict[str, int]) -> dict[str, Any]:
        return dict(concrete)


class XTrue(Honest):
    ONE = True


class XFloat(Honest):
    ONE = 1.0


class LitOne(Honest):
    LIT = 1
