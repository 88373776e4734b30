"""The exhaustive engine: breadth-first search over every reachable state.

BFS visits states in order of depth, so the first violation of a state or step
property that it meets is a shortest one. Every state keeps its parent and the
transition that reached it; every transition is stored (compressed: the edges of state
i are contiguous because states are expanded in index order), so termination, lassos
and longest runs can be computed on the explored graph afterwards.
"""

from __future__ import annotations

import time
from array import array
from dataclasses import dataclass, field
from typing import Any, Callable

from machine.compiled import EvalError, Machine

ProgressFn = Callable[[int, int, int, int, float], None]   # states, transitions, depth, frontier, seconds


@dataclass
class Finding:
    """The first (shallowest) place a safety-style property failed."""

    state: int                      # index of the state the trace ends in (or starts the failing step from)
    message: str
    step: tuple | None = None       # (action index, combo index, rule, successor state) for a failing transition
    other: "Finding | None" = None  # independence: the transition it disagrees with


@dataclass
class Exploration:
    machine: Machine
    states: list[tuple] = field(default_factory=list)
    index: dict = field(default_factory=dict)
    parent: array = field(default_factory=lambda: array("q"))
    via_action: array = field(default_factory=lambda: array("i"))
    via_combo: array = field(default_factory=lambda: array("q"))
    via_rule: list = field(default_factory=list)
    depth: array = field(default_factory=lambda: array("i"))
    edge_start: array = field(default_factory=lambda: array("q"))    # len = expanded + 1
    e_dst: array = field(default_factory=lambda: array("q"))
    e_action: array = field(default_factory=lambda: array("i"))
    e_combo: array = field(default_factory=lambda: array("q"))
    e_rule: list = field(default_factory=list)
    terminal: bytearray = field(default_factory=bytearray)
    errored: bytearray = field(default_factory=bytearray)             # some transition of it failed to evaluate
    expanded: int = 0
    transitions: int = 0
    complete: bool = False
    stopped_by: str | None = None   # "max_states" | "timeout"
    seconds: float = 0.0
    findings: dict[str, Finding] = field(default_factory=dict)
    reached: dict[str, int] = field(default_factory=dict)           # reachable property -> first state
    rule_counts: dict[str, int] = field(default_factory=dict)
    label_counts: dict[Any, int] = field(default_factory=dict)
    forward: bool = False            # every edge leads exactly one BFS level deeper
    fired_by_action: dict[int, dict[str, int]] = field(default_factory=dict)   # action -> rule -> count

    @property
    def max_depth(self) -> int:
        return max(self.depth) if len(self.depth) else 0

    def edges_of(self, i: int) -> range:
        return range(self.edge_start[i], self.edge_start[i + 1])

    @property
    def terminal_states(self) -> int:
        return sum(self.terminal)


def explore(m: Machine, *, max_states: int | None = None, timeout: float | None = None,
            properties: set[str] | None = None, progress: ProgressFn | None = None) -> Exploration:
    """Explore every state reachable in `m`, checking the online properties on the way."""
    wanted = (lambda name: properties is None or name in properties)
    spec = m.spec
    ex = Exploration(m)
    started = time.monotonic()
    deadline = started + timeout if timeout is not None else None
    invariants = [(n, f) for n, f in m.invariants.items() if wanted(n)]
    reachables = {n: f for n, f in m.reachables.items() if wanted(n)}
    step_invs = [(n, f) for n, f in m.step_invariants.items() if wanted(n)]
    variants = [(n, f, b) for n, (f, b) in m.variants.items() if wanted(n)]
    independents = [(p.name, tuple(i for i in range(len(m.var_names)) if i not in p.vars))
                    for p in spec.properties if p.kind == "independent" and wanted(p.name)]
    seen_outcomes: list[dict] = [dict() for _ in independents]
    findings = ex.findings
    for a in spec.actions:
        d = a.decide
        if d is not None:
            for r in d.rules:
                ex.rule_counts.setdefault(r.name, 0)
    if spec.terminal is not None and spec.terminal.label is not None:
        for v in spec.terminal.values:
            ex.label_counts.setdefault(v, 0)

    def fail(name: str, finding: Finding) -> None:
        if name not in findings:
            findings[name] = finding

    # All invariants in one generated call per state, when exactly those are checked here;
    # a state where one fails (or one cannot be evaluated) takes the slow path below.
    combined = m.all_invariants
    fast = combined[1] if combined is not None and combined[0] == [n for n, _ in invariants] else None

    def check_state(j: int, t: tuple) -> None:
        if fast is not None:
            try:
                clean = fast(t) < 0
            except (EvalError, ZeroDivisionError):
                clean = False
            if clean:
                if reachables:
                    check_reachables(j, t)
                return
        for name, f in invariants:
            if name in findings:
                continue
            try:
                ok = f(t)
            except (EvalError, ZeroDivisionError) as exc:
                fail("well_defined", Finding(j, f"property {name}: {exc}"))
                continue
            if not ok:
                fail(name, Finding(j, "false in this state"))
        check_reachables(j, t)

    def check_reachables(j: int, t: tuple) -> None:
        for name, f in reachables.items():
            if name not in ex.reached:
                try:
                    if f(t):
                        ex.reached[name] = j
                except (EvalError, ZeroDivisionError) as exc:
                    fail("well_defined", Finding(j, f"property {name}: {exc}"))

    states, index, parent, depth = ex.states, ex.index, ex.parent, ex.depth
    for s in m.inits:
        if s in index:
            continue
        index[s] = len(states)
        states.append(s)
        parent.append(-1)
        ex.via_action.append(-1)
        ex.via_combo.append(-1)
        ex.via_rule.append(None)
        depth.append(0)
        check_state(len(states) - 1, s)

    is_terminal, label, domain_error = m.is_terminal, m.label, m.domain_error
    actions = m.actions
    e_dst, e_action, e_combo, e_rule = ex.e_dst, ex.e_action, ex.e_combo, ex.e_rule
    rule_counts = ex.rule_counts
    fired: dict[int, dict] = {}       # every action that fired, with its rules (None: no decide)
    forward = True
    i = 0
    while i < len(states):
        if max_states is not None and len(states) > max_states:
            ex.stopped_by = "max_states"
            break
        if deadline is not None and (i & 255) == 0 and time.monotonic() > deadline:
            ex.stopped_by = "timeout"
            break
        if progress is not None and (i & 4095) == 0:
            progress(len(states), len(e_dst), depth[i], len(states) - i, time.monotonic() - started)
        s = states[i]
        ex.edge_start.append(len(e_dst))
        err = 0
        try:
            term = is_terminal(s)
        except (EvalError, ZeroDivisionError) as exc:
            fail("well_defined", Finding(i, f"terminal: {exc}"))
            term, err = False, 1
        ex.terminal.append(1 if term else 0)
        # this state up to each independence property's ignored vars, projected once
        kept = [tuple(s[x] for x in keep) for _, keep in independents]
        for k, (name, _) in enumerate(independents):
            _same(seen_outcomes[k], (kept[k], "terminal"), term, i, None, name, fail)
        if term:
            if label is not None:
                lab = label(s)
                ex.label_counts[lab] = ex.label_counts.get(lab, 0) + 1
            ex.errored.append(0)
            i += 1
            continue
        d_next = depth[i] + 1
        for act in actions:
            try:
                enabled = act.guard is None or act.guard(s)
            except (EvalError, ZeroDivisionError) as exc:
                fail("well_defined", Finding(i, f"guard of {act.name}: {exc}"))
                err = 1
                continue
            for k, (name, _) in enumerate(independents):
                _same(seen_outcomes[k], (kept[k], act.index), enabled, i, None, name, fail)
            if not enabled:
                continue
            fired_here = fired.setdefault(act.index, {})
            step = act.step
            for ci, combo in enumerate(act.combos):
                try:
                    t, r = step(s, *combo)
                except (EvalError, ZeroDivisionError) as exc:
                    fail(getattr(exc, "builtin", "well_defined"),
                         Finding(i, f"action {act.name} with {_fmt_choices(act.labels[ci])}: {exc}",
                                 (act.index, ci, None, None)))
                    err = 1
                    continue
                j = index.get(t)
                if j is None:
                    bad = domain_error(t)
                    if bad >= 0:
                        fail("domains", Finding(i, f"{m.var_names[bad]} = {t[bad]!r} is outside its "
                                                   f"domain {m.domain_text(bad)}", (act.index, ci, r, t)))
                        err = 1
                        continue
                    j = len(states)
                    index[t] = j
                    states.append(t)
                    parent.append(i)
                    ex.via_action.append(act.index)
                    ex.via_combo.append(ci)
                    ex.via_rule.append(r)
                    depth.append(d_next)
                    check_state(j, t)
                elif forward and depth[j] != d_next:
                    forward = False
                e_dst.append(j)
                e_action.append(act.index)
                e_combo.append(ci)
                e_rule.append(r)
                fired_here[r] = fired_here.get(r, 0) + 1
                if step_invs:
                    args = act.step_args[ci]
                    for name, f in step_invs:
                        if name in findings:
                            continue
                        try:
                            ok = f(s, t, act.name, r, *args)
                        except (EvalError, ZeroDivisionError) as exc:
                            fail("well_defined", Finding(i, f"property {name}: {exc}", (act.index, ci, r, t)))
                            continue
                        if not ok:
                            fail(name, Finding(i, "false for this transition", (act.index, ci, r, t)))
                for name, f, bound in variants:
                    if name in findings:
                        continue
                    try:
                        before, after = f(s), f(t)
                    except (EvalError, ZeroDivisionError) as exc:
                        fail("well_defined", Finding(i, f"property {name}: {exc}", (act.index, ci, r, t)))
                        continue
                    if after <= before:
                        fail(name, Finding(i, f"the variant goes from {before} to {after}: it must "
                                              "strictly increase", (act.index, ci, r, t)))
                    elif after > bound or before > bound:
                        fail(name, Finding(i, f"the variant reaches {max(before, after)}, above its "
                                              f"bound {bound}", (act.index, ci, r, t)))
                for k, (name, keep) in enumerate(independents):
                    outcome = (tuple(t[x] for x in keep), r)
                    _same(seen_outcomes[k], (kept[k], act.index, ci), outcome, i,
                          (act.index, ci, r, t), name, fail)
        ex.errored.append(err)
        i += 1
    ex.expanded = i
    ex.forward = forward
    ex.transitions = len(e_dst)
    ex.fired_by_action = {a: {r: c for r, c in counts.items() if r is not None} for a, counts in fired.items()}
    for counts in ex.fired_by_action.values():
        for r, c in counts.items():
            rule_counts[r] += c
    ex.edge_start.append(len(e_dst))
    ex.complete = ex.stopped_by is None
    ex.seconds = time.monotonic() - started
    if progress is not None:
        progress(len(states), ex.transitions, ex.max_depth, len(states) - ex.expanded, ex.seconds)
    return ex


def _same(seen: dict, key: tuple, outcome: Any, state: int, step: tuple | None, name: str,
          fail: Callable[[str, Finding], None]) -> None:
    """Independence: the first outcome seen for `key` must be the outcome every time."""
    first = seen.get(key)
    if first is None:
        seen[key] = (outcome, state, step)
        return
    if first[0] != outcome:
        if key[-1] == "terminal":
            msg = "two states equal up to the ignored vars differ in being terminal"
        elif isinstance(outcome, bool):
            what = {True: "enabled", False: "disabled"}
            msg = (f"two states equal up to the ignored vars: the action is {what[first[0]]} in one "
                   f"and {what[outcome]} in the other")
        else:
            msg = "the same transition up to the ignored vars has different outcomes"
        fail(name, Finding(first[1], msg, first[2], Finding(state, msg, step)))


def _fmt_choices(labels: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in labels.items()) or "no choices"
