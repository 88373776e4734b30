"""Acknowledged vacuity: parts of a spec declared unreachable for some params (`unreachable_when`).

A declaration silences the part's vacuity warning for those params (properties/vacuity.py),
and in exchange it is checked: reaching the part there is a finding of the built-in property
`declared_unreachable`, with a shortest trace to it. It is judged after the exploration, on
the explored graph, and cuts nothing short, so every other verdict stands.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from haltproof.machine.compiled import Machine
from haltproof.machine.spec import DECLARED_BUILTIN, Unreachable, shown_path, where_text
from haltproof.properties.budget import ticking

from .engine import Exploration, Finding, State, action_subject, trace_length, transitions_from
from .vengine import VExploration

Match = Callable[[int, int, str | None], bool]      # (action, combo, rule) -> is it the declared part


def note_reached(ex: Exploration, m: Machine) -> None:
    """Add the `declared_unreachable` finding when a declared part is reached for these params:
    the one with the shortest trace, naming how many others are reached too."""
    found = [f for key, u in m.acknowledged.items() if (f := _reached(ex, m, key, u)) is not None]
    if not found:
        return
    found.sort(key=lambda f: trace_length(f, int(ex.depth[f.state])))
    first = found[0]
    if len(found) > 1:
        more = len(found) - 1
        first.message += (f" (and {more} more part{'s' if more > 1 else ''} declared unreachable here "
                          f"{'are' if more > 1 else 'is'} reached)")
    ex.findings[DECLARED_BUILTIN] = first


def _reached(ex: Exploration, m: Machine, key: tuple[Any, ...], u: Unreachable) -> Finding | None:
    spec = m.spec
    why = (f", but it is declared unreachable when {u.when.text} ({shown_path(spec.path)}:{u.line}): "
           f"{u.because}")
    if key[0] == "terminal":
        return _first_terminal(ex, m, key[1], f"terminal {key[1]!r} is reached{why}")
    k = key[1]
    act = spec.actions[k]
    if k not in ex.fired_by_action:           # never enabled with a transition that ran
        return None
    if key[0] == "action":
        return _first_edge(ex, m, lambda a, c, r: a == k,
                           f"action {act.name} ({where_text(spec, act)}) is taken{why}")
    if key[0] == "rule":
        name = key[2]
        if ex.fired_by_action[k].get(name, 0) == 0:
            return None
        rule = next(r for r in act.decide.rules if r.name == name) if act.decide is not None else act
        return _first_edge(ex, m, lambda a, c, r: a == k and r == name,
                           f"decide rule {name!r} of action {act.name} ({where_text(spec, rule)}) fires{why}")
    choice, label = key[2], key[3]
    labels = m.actions[k].labels
    return _first_edge(ex, m, lambda a, c, r: a == k and labels[c].get(choice) == label,
                       f"value {label} of choice {choice} of action {act.name} is drawn{why}")


def _first_terminal(ex: Exploration, m: Machine, value: Any, message: str) -> Finding | None:
    """The first (so a shallowest) terminal state whose label is `value`."""
    if m.label is None or not ex.label_counts.get(value, 0):
        return None
    for j in ticking(range(len(ex.terminal))):
        if ex.terminal[j] and m.label(ex.states[j]) == value:
            return Finding(j, message)
    return None


def _first_edge(ex: Exploration, m: Machine, match: Match, message: str) -> Finding | None:
    """The first explored transition (sources in BFS order: a shortest trace) that `match`es.
    The vector engine may have dropped its edges: they are recomputed from each state there."""
    for i in ticking(range(ex.expanded)):
        for a, c, r, t in _transitions(ex, m, i):
            if match(a, c, r):
                return Finding(i, message, (a, c, r, t), subject=action_subject(m, a, c))
    return None


def _transitions(ex: Exploration, m: Machine, i: int) -> list[tuple[int, int, str | None, State]]:
    if isinstance(ex, VExploration):
        return transitions_from(m, ex.states[i])
    return [(int(ex.e_action[e]), int(ex.e_combo[e]), ex.e_rule[e], ex.states[int(ex.e_dst[e])])
            for e in ex.edges_of(i)]
