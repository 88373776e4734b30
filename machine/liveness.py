"""Liveness-shaped property patterns (Dwyer, Avrunin and Corbett) as small monitors.

`existence` and `response` cannot be broken by a finite prefix alone (except where the
scope's end R closes them): a run breaks them by ending, or by going on forever, while an
*obligation* is open. Their monitor is one hidden phase var carried in the product state,
advanced over the state each transition leaves (as machine/patterns.py does for the safety
patterns); the property's expression says whether, once the monitor has read the current
state too, the obligation is open there. A run is bad when it ends (terminal or deadlock)
in a state where it is open, or when it is open in every state it visits infinitely often;
properties/liveness.py searches the explored graph for such a run. `violated` (R came
while the obligation was open) is absorbing and counts as open: every maximal run through
it is bad. Exact semantics: docs/reference/spec-language.md, "Liveness patterns".

The names: P (existence: the predicate; response: the trigger), S (the response), Q and R
(the scope's start and end), M (the phase, one of machine/patterns.PHASES: `waiting` before
the scope, `pending` an obligation open, `met` none open, `closed`, `violated`).
"""

from __future__ import annotations

from .patterns import Monitor, MonitorVar

LIVENESS = ("existence", "response")


def _existence(scope: str) -> tuple[str, str]:
    """(initial phase, the phase after reading a state) of `existence: P` in `scope`."""
    if scope == "global":
        return "pending", "('met' if (M == 'met' or P) else 'pending')"
    if scope == "before":
        return "pending", "(('violated' if R else ('met' if P else 'pending')) if M == 'pending' else M)"
    if scope == "after":
        eff = "('pending' if (M == 'waiting' and Q) else M)"
        return "waiting", f"(('met' if P else 'pending') if {eff} == 'pending' else {eff})"
    # between / after-until: every Q-state outside an open obligation starts one anew
    eff = "('pending' if ((M == 'waiting' or M == 'met') and Q and not R) else M)"
    return "waiting", (f"(('violated' if R else ('met' if P else 'pending')) if {eff} == 'pending' else "
                       f"(('waiting' if R else 'met') if {eff} == 'met' else {eff}))")


def _response(scope: str) -> tuple[str, str]:
    """(initial phase, the phase after reading a state) of `response: {trigger: P, response: S}`."""
    answer = "('met' if S else ('pending' if P else {m}))"
    if scope == "global":
        return "met", answer.format(m="M")
    if scope == "before":
        return "met", (f"((('violated' if M == 'pending' else 'closed') if R else {answer.format(m='M')}) "
                       "if (M == 'met' or M == 'pending') else M)")
    if scope == "after":
        eff = "('met' if (M == 'waiting' and Q) else M)"
        return "waiting", f"({answer.format(m=eff)} if {eff} != 'waiting' else 'waiting')"
    eff = "('met' if (M == 'waiting' and Q and not R) else M)"
    return "waiting", (f"(((('violated' if {eff} == 'pending' else 'waiting') if R else {answer.format(m=eff)}) "
                       f"if ({eff} == 'met' or {eff} == 'pending') else {eff}))")


def obligation(pattern: str, scope: str) -> Monitor:
    """The monitor of a liveness pattern in `scope`; its `ok` is "the obligation is open once
    the monitor has read this state" (the name is the safety monitors': the expression the
    property is judged by). Before R and between Q and R only `violated` is open: a run that
    never reaches R owes nothing (Dwyer's `W` and `<>R ->`)."""
    init, update = (_existence if pattern == "existence" else _response)(scope)
    if scope in ("before", "between"):
        open_ = f"{update} == 'violated'"
    elif scope == "after_until":
        open_ = f"({update} == 'pending' or {update} == 'violated')"
    else:                               # R never closes these: nothing is ever `violated`
        open_ = f"{update} == 'pending'"
    return Monitor((MonitorVar("", "enum", init, update=update),), open_)
