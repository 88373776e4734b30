"""Vacuity and coverage: the parts of a spec that a complete exploration never exercised.

A proof over a machine that never reaches a terminal, never fires a decide rule or
never takes an action may be true for the wrong reason. These notices say which parts
were dead, and why when it can be told: a rule whose condition is never true, a rule
shadowed by earlier rules that always match first, a choice value that never makes a
difference. They are warnings, not violations.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from haltproof.machine.spec import present, shown_path, where_text

from .budget import ticking
from .exploration import ExploredGraph, RuleFacts


@dataclass(frozen=True)
class Notice:
    """One vacuity warning, with what it is about and the spec line it points at."""

    kind: str             # rule | terminal | action | choice | expect | fairness | declaration
    name: str
    message: str          # the whole warning, with why when it can be told
    line: int | None = None
    action: str | None = None
    summary: str = ""     # what is dead, without why: the same across param combinations
    file: str | None = None   # the file `line` is in, when not the spec's (a Python model's base class)
    value: Any = None         # a choice value that is never possible: that value

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        if self.file is None:
            del out["file"]
        else:
            out["file"] = shown_path(self.file)
        if self.value is None:
            del out["value"]
        return out


def coverage(ex: ExploredGraph) -> dict[str, dict[str, int]]:
    """How often each decide rule fired and each terminal label was reached."""
    spec = ex.machine.spec
    terminals = {str(k): v for k, v in ex.label_counts.items()}
    if spec.terminal is not None and spec.terminal.label is None:
        terminals = {"terminal": ex.terminal_states}
    return {"rules": dict(ex.rule_counts), "terminals": terminals}


def notices(ex: ExploredGraph, cov: dict[str, dict[str, int]]) -> list[Notice]:
    """Every dead part of the spec in a complete exploration (call only when complete), but
    those the spec declares unreachable for these params (`unreachable_when`): expected, not news."""
    acknowledged = {key if key[0] != "terminal" else ("terminal", str(key[1])) for key in ex.machine.acknowledged}
    return [n for n in _all_notices(ex, cov) if _key(ex, n) not in acknowledged]


def _key(ex: ExploredGraph, n: Notice) -> tuple[Any, ...]:
    """A notice's key in `Machine.acknowledged` (its terminal values as text, as coverage has them)."""
    k = next((i for i, a in enumerate(ex.machine.spec.actions) if a.name == n.action), -1)
    if n.kind == "choice" and n.value is not None:
        return ("value", k, n.name, n.value)
    return {"action": ("action", k), "rule": ("rule", k, n.name), "terminal": ("terminal", n.name)}.get(
        n.kind, (n.kind, k, n.name))


def _all_notices(ex: ExploredGraph, cov: dict[str, dict[str, int]]) -> list[Notice]:
    """Every dead part of the spec in a complete exploration."""
    spec = ex.machine.spec
    out: list[Notice] = []
    fired = ex.fired_by_action                  # both engines count these while they sweep
    taken = set(fired)
    groups = ex.choice_groups([k for k in sorted(taken) if _single_choice(ex, k)])
    for k, act in enumerate(spec.actions):
        if k in ex.machine.unentered:      # past a depth bound: not run for these params, by declaration
            continue
        if k not in taken:
            out.append(Notice("action", act.name, f"vacuous: action {act.name} ({where_text(spec, act)}) "
                              "is never taken", act.line, act.name, file=act.file))
            continue
        if act.decide is not None:
            out.extend(_rule_notices(ex, k, fired.get(k, {})))
        out.extend(_choice_notices(ex, k, groups))
        if act.conditional:
            out.extend(_conditional_notices(ex, k))
    if spec.terminal is not None:
        for label, n in cov["terminals"].items():
            if n == 0:
                out.append(Notice("terminal", label, f"vacuous: terminal {label!r} is never reached",
                                  spec.terminal.line, file=spec.terminal.file))
    return out


def _rule_notices(ex: ExploredGraph, k: int, fired: Mapping[str, int]) -> list[Notice]:
    """Rules of action k that never fire, told apart: never true, or always shadowed."""
    m = ex.machine
    act = m.spec.actions[k]
    decide = act.decide
    assert decide is not None, "called for actions that decide"
    rules = decide.rules
    dead = [i for i, r in enumerate(rules) if fired.get(r.name, 0) == 0]
    if not dead:
        return []
    conds = m.rule_conditions.get(k)
    facts = ex.rule_facts(k, dead)
    out = []
    for d in dead:
        r = rules[d]
        where = f"decide rule {r.name!r} of action {act.name} ({where_text(m.spec, r)})"
        if conds is None:
            why = "never fires"
        elif d in facts.true_somewhere:
            why = ("never fires: it is shadowed, whenever its condition holds an earlier rule "
                   f"({', '.join(sorted(facts.shadowed_by.get(d, frozenset())))}) fires first")
        else:
            why = "never fires: its condition is never true in any reachable step"
        out.append(Notice("rule", r.name, f"vacuous: {where} {why}", r.line, act.name,
                          f"vacuous: {where} never fires", r.file))
    return out


def _single_choice(ex: ExploredGraph, k: int) -> bool:
    act = ex.machine.actions[k]
    return len(act.choice_names) == 1 and len(act.combos) >= 2


def rule_facts_from_edges(ex: ExploredGraph, k: int, dead: Sequence[int]) -> RuleFacts:
    """`ExploredGraph.rule_facts` by evaluating the rule conditions of action k on each of its
    explored transitions (for an engine that did not gather them while it swept)."""
    m = ex.machine
    conds = m.rule_conditions.get(k)
    if conds is None:
        return RuleFacts(frozenset(), {})
    rules = present(m.spec.actions[k].decide).rules
    true_somewhere: set[int] = set()
    shadowers: dict[int, set[str]] = {i: set() for i in dead}
    combos = m.actions[k].combos
    for i in ticking(range(ex.expanded)):
        for e in ex.edges_of(i):
            if ex.e_action[e] != k:
                continue
            try:
                values = conds(ex.states[i], *combos[ex.e_combo[e]])
            except Exception:          # an error here is already a well_defined finding
                continue
            first = next((j for j, v in enumerate(values) if v), None)
            for d in dead:
                if values[d]:
                    true_somewhere.add(d)
                    if first is not None and first < d:
                        shadowers[d].add(rules[first].name)
    return RuleFacts(frozenset(true_somewhere), {d: frozenset(names) for d, names in shadowers.items()})


def choice_groups_from_edges(ex: ExploredGraph, actions: Sequence[int]) -> dict[int, list[list[int]]]:
    """`ExploredGraph.choice_groups` in one pass over the explored edges: per action and
    choice combo, its transitions as (source, successor, rule), then the combos grouped by
    those lists (for an engine that did not count the groups while it swept)."""
    if not actions:
        return {}
    outs: dict[int, dict[int, list[tuple[int, int, str | None]]]] = {
        k: {ci: [] for ci in range(len(ex.machine.actions[k].combos))} for k in actions}
    for i in ticking(range(ex.expanded)):
        for e in ex.edges_of(i):
            per_combo = outs.get(ex.e_action[e])
            if per_combo is not None:
                per_combo[ex.e_combo[e]].append((i, ex.e_dst[e], ex.e_rule[e]))
    out: dict[int, list[list[int]]] = {}
    for k, per_combo in outs.items():
        groups: dict[tuple[tuple[int, int, str | None], ...], list[int]] = {}
        for ci, transitions in per_combo.items():
            if transitions:
                groups.setdefault(tuple(transitions), []).append(ci)
        out[k] = list(groups.values())
    return out


def _choice_notices(ex: ExploredGraph, k: int, groups: dict[int, list[list[int]]]) -> list[Notice]:
    """Values of a single-choice action that never make a difference: in every state where
    the action runs, they lead to the same successor and rule as another value."""
    m = ex.machine
    act = m.actions[k]
    if not _single_choice(ex, k):
        return []
    spec_action = m.spec.actions[k]
    decl = spec_action.choices[0][1] if spec_action.choices else spec_action
    name = act.choice_names[0]
    return [Notice("choice", name, f"vacuous: choice {name} of action {act.name} ({where_text(m.spec, decl)}): "
                                   f"the values {', '.join(str(act.labels[ci][name]) for ci in group)} always "
                                   "lead to the same step; they never make a difference", decl.line, act.name,
                   file=decl.file)
            for group in groups.get(k, []) if len(group) > 1]


def _conditional_notices(ex: ExploredGraph, k: int) -> list[Notice]:
    """Conditional choices of action k never made, and values with a `when:` never possible, in
    any explored transition. Read from the stored edges: only the scalar engine runs conditional
    choices (the vector engine declines them), and it keeps every edge."""
    m = ex.machine
    act, spec_action = m.actions[k], m.spec.actions[k]
    made: dict[str, set[object]] = {c: set() for c, _ in spec_action.choices}
    for i in ticking(range(ex.expanded)):
        for e in ex.edges_of(i):
            if ex.e_action[e] == k:
                for c, label in act.labels[ex.e_combo[e]].items():
                    made[c].add(label)
    out = []
    for cname, cs in spec_action.choices:
        where = f"of action {act.name}"
        if cs.when is not None and not made[cname]:
            out.append(Notice("choice", cname, f"vacuous: choice {cname} {where} ({where_text(m.spec, cs)}) is "
                              "never made: its when is never true in any reachable state", cs.line, act.name,
                              file=cs.file))
            continue
        for label, vw in cs.value_when.items():
            if label not in made[cname]:
                line = vw.line or cs.line
                out.append(Notice("choice", cname, f"vacuous: value {label} of choice {cname} {where} (line {line}) "
                                  "is never possible: its when is never true in any reachable step", line,
                                  act.name, file=cs.file, value=label))
    return out
