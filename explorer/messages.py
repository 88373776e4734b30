"""The text of every finding both engines make, in one place, so the scalar and the vector
engine word the same fact the same way (the differential tests compare their findings)."""

from __future__ import annotations

from typing import Any

from haltproof.machine.compiled import Machine

FALSE_IN_STATE = "false in this state"                  # an invariant
FALSE_FOR_TRANSITION = "false for this transition"      # a step invariant
TERMINAL_DIFFERS = "two states equal up to the ignored vars differ in being terminal"
OUTCOMES_DIFFER = "the same transition up to the ignored vars has different outcomes"


def outside_domain(m: Machine, var: int, value: Any) -> str:
    """A `domains` finding: var number `var` took `value`, which its domain does not hold."""
    return f"{m.var_names[var]} = {value!r} is outside its domain {m.domain_text(var)}"


def guard_differs(first_enabled: bool) -> str:
    """An independence finding about a guard: enabled in the first state, or disabled."""
    one, other = ("enabled", "disabled") if first_enabled else ("disabled", "enabled")
    return f"two states equal up to the ignored vars: the action is {one} in one and {other} in the other"
