"""Safety-shaped property patterns (Dwyer, Avrunin and Corbett) as small monitors.

A pattern property is compiled into hidden monitor vars carried in the product state: each
transition first advances the monitor over the state it leaves (a set stage placed before the
action's own stages, so it reads that state), and the property is an invariant over the monitor
and the current state: "advancing the monitor over this state would not reach `violated`".
Both engines explore the monitor like any var, so their shortest-trace search gives the
shortest run prefix that violates the pattern. Exact semantics: docs/reference/spec-language.md.

Everything here is expression *text* over the names P, Q, R, S (the user's predicates, bound
by the caller), M (the phase), C (the count) and B (whether P held in the previous state of
the scope); the caller type-checks it like any spec expression.
"""

from __future__ import annotations

from dataclasses import dataclass

PATTERNS = ("absence", "universality", "precedence", "bounded_existence")
SCOPES = ("global", "before", "after", "between", "after_until")
PHASES = ("waiting", "open", "met", "pending", "closed", "violated")   # the phase var's values


@dataclass(frozen=True)
class MonitorVar:
    suffix: str            # "" for the phase, "count", "prev"
    kind: str              # "enum" | "int" | "bool"
    init: object
    hi: int = 0            # int: 0..hi
    update: str = ""       # its next value, read over the state a transition leaves


@dataclass(frozen=True)
class Monitor:
    vars: tuple[MonitorVar, ...]
    ok: str                # the invariant: the monitor does not reach `violated` on this state


def _q(phase: str) -> str:
    return repr(phase)


def monitor(pattern: str, scope: str, at_most: int = 0) -> Monitor:
    """The monitor of `pattern` within `scope` (bounded_existence: at most `at_most` P-blocks)."""
    end = "R" if scope in ("before", "between", "after_until") else "False"
    opens = {"global": "False", "before": "False", "after": "Q"}.get(scope, "(Q and not R)")
    closed = _q("closed") if scope == "before" else _q("waiting")
    # On a bad event inside the scope: globally, after Q and after Q until R the run is already
    # wrong; before R and between Q and R it is wrong only if R comes (Dwyer's `<>R ->`).
    on_bad = _q("violated") if scope in ("global", "after", "after_until") else _q("pending")
    restart = pattern == "precedence" and scope in ("between", "after_until")   # each Q starts anew
    reopen = f"(M == 'waiting' or M == 'met') and {opens}" if restart else f"M == 'waiting' and {opens}"
    eff = f"('open' if ({reopen}) else M)"
    bad = {"absence": "P", "universality": "not P", "precedence": "(P and not S)",
           "bounded_existence": f"(C + (1 if (P and not B) else 0) > {at_most})"}[pattern]
    in_open = f"({closed} if {end} else ({on_bad} if {bad} else "
    in_open += "('met' if S else 'open')))" if pattern == "precedence" else "'open'))"
    phase = f"({in_open} if {eff} == 'open' else "
    if pattern == "precedence":
        phase += f"(({closed} if {end} else 'met') if {eff} == 'met' else "
    phase += "(('violated' if R else 'pending') if M == 'pending' else M))"
    if pattern == "precedence":
        phase += ")"
    init = "open" if scope in ("global", "before") else "waiting"
    mvars = [MonitorVar("", "enum", init, update=phase)]
    if pattern == "bounded_existence":
        counting = f"({eff} == 'open' and not {end} and not {bad})"
        mvars.append(MonitorVar("count", "int", 0, at_most, f"((C + (1 if (P and not B) else 0)) if {counting} else 0)"))
        mvars.append(MonitorVar("prev", "bool", False, update=f"(P if {counting} else False)"))
    return Monitor(tuple(mvars), f"{phase} != 'violated'")
