"""The table of a runtime guard (haltproof.guard), built from one explored param combination.

The explored graph is the product of the spec with its property monitors (patterns and
past-time operators are hidden vars of every state), so a state-indexed table is enough for
their verdicts. For each safety property (invariants, the patterns and past-time properties
compiled into invariants, step invariants, variants) the table keeps the states and the
transitions that break it, and from which states a violation is reachable (some continuation
breaks it) or certain (every continuation does: the attractor of the bad transitions). For
each `terminates_within` bound it keeps, per state, the fewest and the most counted transitions
left to a terminal state, so the guard can tell, with the steps already used, whether the run
can still stop in time. The runtime (src/haltproof/guard.py) reads nothing else.
"""

from __future__ import annotations

import inspect
import json
from collections import deque
from collections.abc import Sequence
from typing import Any

import numpy as np

from haltproof import guard as runtime
from haltproof.machine.compiled import EVAL_ERRORS, Machine
from haltproof.machine.spec import shown_path
from haltproof.properties import probability as P
from haltproof.properties import sparse as S
from haltproof.properties.kinds import VIOLATED

from .options import Options
from .results import RunResult
from .check import check_machine, stop_reason
from .engine import Exploration, explore
from .chances import NotAnalysable, build_mdp
from haltproof.machine import usercode


class GuardRefused(Exception):
    """The run is not proved, and no guard of a known violation was asked for."""


class GuardIncomplete(Exception):
    """The exploration stopped at a bound (or broke on the spec's own errors): no whole graph."""


def guarded_run(m: Machine, options: Options, *, allow_violated: bool) -> tuple[RunResult, Exploration]:
    """Check the machine, refuse a run that is not proved (unless `allow_violated`), and explore
    it again for the graph the guard keeps (the check keeps only small graphs)."""
    run = check_machine(m, options)
    if run.result == "incomplete":
        raise GuardIncomplete(run.stop_reason or "the check is incomplete")
    builtin = [p.name for p in run.properties if p.kind == "builtin" and p.status == VIOLATED]
    if builtin:
        raise GuardIncomplete(f"{', '.join(builtin)} violated: the explored graph stops at the spec's own errors")
    failing = [p.name for p in run.properties if p.status == VIOLATED]
    if (failing or run.result != "proved") and not allow_violated:
        raise GuardRefused(f"the run is not proved: {', '.join(failing) or run.result} "
                           f"{'is' if len(failing) == 1 else 'are'} violated; a guard is written from a "
                           "proved run (--allow-violated guards a known violation)")
    ex = explore(m, timeout=usercode.remaining())
    if not ex.complete:
        raise GuardIncomplete(stop_reason(ex, options) or "the exploration stopped early")
    return run, ex


def guard_table(m: Machine, run: RunResult, ex: Exploration, version: str) -> dict[str, Any]:
    """The guard's table (format haltproof-guard/1) of one explored param combination."""
    spec = m.spec
    safety = _safety_names(m)
    budgets = sorted(m.within)
    rows, bad_states = _edges(m, ex, safety, budgets)
    reach, certain = _attractors(rows, bad_states, len(safety))
    n = len(ex.states)
    table: dict[str, Any] = {
        "format": runtime.FORMAT,
        "tool": {"name": "haltproof", "version": version},
        "spec": {"name": spec.name, "path": shown_path(spec.path), "sha256": runtime.spec_digest(spec.text),
                 "params": dict(m.params), "result": run.result,
                 "violated": [p.name for p in run.properties if p.status == VIOLATED]},
        "vars": [_var(m, i) for i in range(len(m.var_names))],
        "monitors": list(m.monitor_names),
        "actions": [{"name": a.name, "choices": list(a.choice_names), "combos": [dict(c) for c in a.labels]}
                    for a in m.actions],
        "properties": [{"name": name, "kind": kind} for name, kind in safety],
        "budgets": [_budget(m, ex, rows, name, k) for k, name in enumerate(budgets)],
        "states": [list(s) for s in ex.states],
        "initial": [i for i in range(n) if ex.parent[i] < 0],
        "terminal": [int(ex.terminal[i]) for i in range(n)],
        "end_labels": _end_labels(m, ex),
        "edges": rows,
        "bad_states": {str(i): v for i, v in sorted(bad_states.items())},
        "reach": {str(i): v for i, v in enumerate(reach) if v},
        "certain": {str(i): v for i, v in enumerate(certain) if v},
        "open": _obligations(m, ex),
    }
    risk = _risk(m, ex, rows, bad_states)
    if risk is not None:
        table["risk"] = risk
    table["checksum"] = runtime.table_checksum(table)
    return table


def guard_module(table: dict[str, Any]) -> str:
    """A standalone Python module: the runtime's source with the table embedded, and `load()`."""
    source = inspect.getsource(runtime)
    return (source.rstrip() + "\n\n\n# The table written by `haltproof guard` (do not edit: its checksum is checked).\n"
            f"TABLE: dict[str, Any] = json.loads({json.dumps(json.dumps(table, separators=(',', ':')))})\n\n\n"
            "def load(*, on_escape: str = \"deny\") -> Guard:\n"
            "    \"\"\"The guard of the embedded table.\"\"\"\n"
            "    return Guard.from_table(TABLE, on_escape=on_escape)\n")


def _safety_names(m: Machine) -> list[tuple[str, str]]:
    """The safety properties a guard monitors, in the spec's order, with their kinds."""
    kinds = {p.name: (p.pattern or p.kind) for p in m.spec.properties}
    names = [n for n in kinds if n in m.invariants or n in m.step_invariants or n in m.variants]
    return [(n, kinds[n]) for n in names]


def _var(m: Machine, i: int) -> dict[str, Any]:
    var = m.spec.vars[i]
    out: dict[str, Any] = {"name": var.name, "kind": var.kind}
    if var.kind == "int":
        out["min"], out["max"] = m.bounds[i] or (None, None)
    elif var.kind == "enum":
        out["values"] = list(var.values)
    return out


def _edges(m: Machine, ex: Exploration, safety: list[tuple[str, str]], budgets: list[str]
           ) -> tuple[list[list[list[Any]]], dict[int, list[int]]]:
    """Per state its transitions [action, combo, successor, rule, broken properties, budget
    weights], and the states that break a property."""
    index = {name: k for k, (name, _) in enumerate(safety)}
    invariants = [(index[n], f) for n, f in m.invariants.items() if n in index]
    steps = [(index[n], f) for n, f in m.step_invariants.items() if n in index]
    variants = [(index[n], f, bound) for n, (f, bound) in m.variants.items() if n in index]
    bad_states: dict[int, list[int]] = {}
    for i, s in enumerate(ex.states):
        broken = [k for k, f in invariants if not f(s)]
        if broken:
            bad_states[i] = sorted(broken)
    rows: list[list[list[Any]]] = []
    for i in range(len(ex.states)):
        s = ex.states[i]
        row: list[list[Any]] = []
        for e in (ex.edges_of(i) if i < ex.expanded else ()):
            a, c, r, j = int(ex.e_action[e]), int(ex.e_combo[e]), ex.e_rule[e], int(ex.e_dst[e])
            act, t = m.actions[a], ex.states[j]
            args = act.step_args[c]
            broken = [k for k, f in steps if not f(s, t, act.name, r, *args)]
            broken += [k for k, f, bound in variants if not _variant_ok(f(s), f(t), bound)]
            weights = [_counted(m, name, s, t, act.name, r, args) for name in budgets]
            row.append([a, c, j, r, sorted(broken), weights])
        rows.append(row)
    return rows, bad_states


def _variant_ok(before: int, after: int, bound: int) -> bool:
    """As the engine judges a variant on a transition (explorer/engine.py, check_step)."""
    return before < after and max(before, after) <= bound


def _counted(m: Machine, name: str, s: Any, t: Any, action: str, rule: str | None, args: Sequence[Any]) -> int:
    fn = m.counts.get(name)
    return 1 if fn is None else (1 if fn(s, t, action, rule, *args) else 0)


def _attractors(rows: list[list[list[Any]]], bad_states: dict[int, list[int]],
                count: int) -> tuple[list[list[int]], list[list[int]]]:
    """Per state, the properties whose violation some continuation reaches, and those every
    maximal continuation reaches (a run that stops in a terminal, a deadlock or a cycle first
    keeps it). Both are fixpoints computed backwards over the edges, once per property."""
    n = len(rows)
    preds: list[list[int]] = [[] for _ in range(n)]
    for i, row in enumerate(rows):
        for edge in row:
            preds[edge[2]].append(i)
    reach: list[list[int]] = [[] for _ in range(n)]
    certain: list[list[int]] = [[] for _ in range(n)]
    for k in range(count):
        hit = [any(k in edge[4] or k in bad_states.get(edge[2], ()) for edge in row) for row in rows]
        _backward_any(hit, preds, reach, k)
        _backward_all(rows, preds, bad_states, certain, k)
    return reach, certain


def _backward_any(hit: list[bool], preds: list[list[int]], reach: list[list[int]], k: int) -> None:
    """States from which some path takes a transition breaking property k."""
    seen = [False] * len(hit)
    queue = deque(i for i, h in enumerate(hit) if h)
    for i in queue:
        seen[i] = True
    while queue:
        i = queue.popleft()
        reach[i].append(k)
        for p in preds[i]:
            if not seen[p]:
                seen[p] = True
                queue.append(p)


def _backward_all(rows: list[list[list[Any]]], preds: list[list[int]], bad_states: dict[int, list[int]],
                  certain: list[list[int]], k: int) -> None:
    """States with successors, every one of whose transitions breaks property k or leads to
    such a state (the least fixpoint: a cycle that never breaks it keeps it)."""
    n = len(rows)
    left = [len(row) for row in rows]      # transitions not yet known to force a violation
    done = [False] * n
    queue: deque[int] = deque()
    for i, row in enumerate(rows):
        forced = sum(1 for edge in row if k in edge[4] or k in bad_states.get(edge[2], ()))
        left[i] -= forced
        if row and left[i] == 0:
            done[i] = True
            queue.append(i)
    while queue:
        j = queue.popleft()
        certain[j].append(k)
        for p in preds[j]:
            if done[p]:
                continue
            # each edge p -> j not already counted as forced now forces too
            left[p] -= sum(1 for edge in rows[p] if edge[2] == j
                           and not (k in edge[4] or k in bad_states.get(j, ())))
            if left[p] <= 0:
                done[p] = True
                queue.append(p)


def _budget(m: Machine, ex: Exploration, rows: list[list[list[Any]]], name: str, k: int) -> dict[str, Any]:
    """One terminates_within bound: per state the fewest and the most counted transitions left
    to a terminal state (None: no terminal is reachable / a run can avoid one forever)."""
    n = len(rows)
    terminal = [bool(ex.terminal[i]) for i in range(n)]
    return {"name": name, "bound": m.within[name], "counted": name in m.counts,
            "shortest": _fewest(rows, terminal, k), "longest": _most(rows, terminal, k)}


def _fewest(rows: list[list[list[Any]]], terminal: list[bool], k: int) -> list[int | None]:
    """0-1 BFS backwards from the terminal states."""
    n = len(rows)
    back: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for i, row in enumerate(rows):
        for edge in row:
            back[edge[2]].append((i, edge[5][k]))
    dist: list[int | None] = [0 if terminal[i] else None for i in range(n)]
    queue = deque(i for i in range(n) if terminal[i])
    while queue:
        j = queue.popleft()
        dj = dist[j]
        assert dj is not None
        for i, w in back[j]:
            di = dist[i]
            if di is None or dj + w < di:
                dist[i] = dj + w
                if w == 0:
                    queue.appendleft(i)
                else:
                    queue.append(i)
    return dist


def _most(rows: list[list[list[Any]]], terminal: list[bool], k: int) -> list[int | None]:
    """Peeled from the sinks: a state is settled once all its successors are; a state that never
    settles can reach a cycle, and a non-terminal sink never ends (both None)."""
    n = len(rows)
    preds: list[list[int]] = [[] for _ in range(n)]
    for i, row in enumerate(rows):
        for edge in row:
            preds[edge[2]].append(i)
    left = [len(row) for row in rows]
    most: list[int | None] = [None] * n
    settled = [False] * n
    queue = deque(i for i in range(n) if not rows[i])
    for i in queue:
        settled[i] = True
        most[i] = 0 if terminal[i] else None
    while queue:
        j = queue.popleft()
        for p in preds[j]:
            left[p] -= 1
            if left[p] == 0 and not settled[p]:
                settled[p] = True
                lengths = [None if most[e[2]] is None else e[5][k] + most[e[2]] for e in rows[p]]
                most[p] = None if any(v is None for v in lengths) else max(v for v in lengths if v is not None)
                queue.append(p)
    return most


def _risk(m: Machine, ex: Exploration, rows: list[list[list[Any]]],
          bad_states: dict[int, list[int]]) -> dict[str, Any] | None:
    """The risk shield's table of a spec with `probabilities:`: per transition its probability
    (the product of its weighted choices' weights), and per state the worst probability, over
    every policy of the unweighted choices, that a run from there breaks some safety property.
    The explored graph read as an MDP (explorer/chances.py), every transition breaking a property
    sent to one extra target state; exact fractions, or where the exact solver gives up the upper
    end of the interval (a risk is never understated). None: no weights, no risk table; a graph
    that is no MDP (explorer/chances.py says why) keeps only the reason."""
    if not m.spec.probabilities:
        return None
    try:
        mdp = build_mdp(ex, m)
    except NotAnalysable as exc:        # the rest of the guard stands; only a risk bound is refused
        return {"unavailable": str(exc)}
    n = len(ex.states)
    where: dict[int, tuple[int, int]] = {}
    for i in range(min(n, ex.expanded)):
        for k, e in enumerate(ex.edges_of(i)):
            where[int(e)] = (i, k)
    bad = n                 # the one target: every transition that breaks a property leads here

    def broken(e: int) -> bool:
        i, k = where[e]
        return bool(rows[i][k][4]) or rows[i][k][2] in bad_states
    choices = [[P.Choice(c.label, [(bad if broken(e) else t, p, e) for t, p, e in c.outcomes]) for c in row]
               for row in mdp.choices]
    augmented = P.MDP(choices + [[]], mdp.terminal + [True], mdp.initial)
    target = [i in bad_states for i in range(n)] + [True]
    try:
        values, _ = P.reach_values(augmented, target, "max")
        worst = [str(values.get(i, 0)) for i in range(n)]
    except P.TooLarge:
        high = S.reach_intervals(P.from_mdp(augmented), np.array(target, dtype=bool), "max").hi
        worst = [repr(float(high[i])) for i in range(n)]
    chance = {e: p for row in mdp.choices for c in row for _, p, e in c.outcomes}
    weighted: dict[str, list[str]] = {}
    for w in m.spec.probabilities:
        weighted.setdefault(w.action, []).append(w.choice)
    return {"weighted": weighted, "worst": worst,
            "p": [[str(chance.get(int(e), 0)) for e in (ex.edges_of(i) if i < ex.expanded else ())]
                  for i in range(n)]}


def _end_labels(m: Machine, ex: Exploration) -> dict[str, Any]:
    """The terminal label of every terminal state (when the spec's terminal has one)."""
    if m.label is None:
        return {}
    return {str(i): m.label(s) for i, s in enumerate(ex.states) if ex.terminal[i]}


def _obligations(m: Machine, ex: Exploration) -> dict[str, list[str]]:
    """Per state, the liveness properties whose obligation is open there."""
    out: dict[str, list[str]] = {}
    for name, f in m.obligations.items():
        for i, s in enumerate(ex.states):
            try:
                if f(s):
                    out.setdefault(str(i), []).append(name)
            except EVAL_ERRORS:
                continue
    return out
