"""The vectorized engine: level-synchronous BFS over mixed-radix state codes with numpy.

A whole BFS level is expanded at once: decode the frontier into one array per var, run
each action's guard and step over the rows where they apply, encode the successors,
and keep the new ones in first-discovery order — sorted by (source position, action,
choice combination), exactly the order the scalar engine visits them. States therefore
get the same indices, counts and shortest traces on both engines.

Memory is what limits exhaustive checking, so per state only its code and its parent
are kept, and per transition only its destination. Everything else the checks need is
counted during the sweep (rule and action coverage, rule conditions, choice effects,
edge weights of measures), and what a trace shows (the action, choices and rule of a
step) is recomputed for the few steps of that trace with the scalar step functions.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from haltproof.machine.vectorize import DENSE_LIMIT, VMachine

from .codeset import CodeIndex
from haltproof.machine.compiled import EVAL_ERRORS
from haltproof.properties import termination
from haltproof.properties.exploration import RuleFacts
from haltproof.properties.kinds import Subject

from .engine import Exploration, Finding, ProgressFn, StepFinder, action_subject, action_text, failure
from .memory import current_rss

_MIX = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F), np.uint64(0x165667B19E3779F9))


class LazyStates:
    """`ex.states[i]` as a tuple, decoded from the state's code when asked."""

    def __init__(self, vm: VMachine, codes: np.ndarray):
        self.vm, self.codes = vm, codes

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, i: int) -> tuple:
        arrays = self.vm.decode(self.codes[i:i + 1].astype(np.int64))
        return tuple(self.vm.to_python(k, a[0]) for k, a in enumerate(arrays))

    def __iter__(self):
        for i in range(len(self.codes)):
            yield self[i]


class VExploration(Exploration):
    """An Exploration whose states and edges are numpy arrays. `via_*` (how each state was
    first reached) and `e_action`/`e_combo`/`e_rule` (what each edge is) are recomputed with
    the scalar step functions when a trace asks for them (engine.Exploration.attach_lazy)."""

    first_stuck: int | None = None   # the first expanded state with no way on (found while sweeping)
    # set by _explore (annotations only: VExploration is not itself a dataclass)
    codes: np.ndarray                # each state's code, in BFS order
    levels: list[tuple[int, int]]    # per BFS level: its first and one-past-last state
    weights: dict[str, np.ndarray]   # per measure: each edge's weight
    precomputed: dict[str, Any]      # per-action facts the vacuity analyses read
    vm: VMachine

    @property
    def max_depth(self) -> int:
        return self.depth.max()

    def edges_of(self, i: int) -> range:
        return range(int(self.edge_start[i]), int(self.edge_start[i + 1]))

    @property
    def terminal_states(self) -> int:
        return int(np.count_nonzero(self.terminal))

    # What the property analyses ask of an explored graph (properties/exploration.py,
    # ExploredGraph): this engine answers from what it noted while sweeping, and from whole
    # numpy arrays, since a large graph's edges may not even be kept.

    def first_deadlock(self) -> int | None:
        """Noted while sweeping: the edges of a forward graph may not be kept."""
        return self.first_stuck

    def first_deepest(self) -> int:
        return int(self.depth.first_deepest())

    def topological_order(self) -> Sequence[int] | None:
        """The BFS levels of a forward graph, else sources peeled off level by level."""
        return termination.peeled_order(self.expanded, self.levels, self.forward, self.edge_start, self.e_dst,
                                        self.parent)

    def cyclic_candidates(self) -> list[int]:
        """The states left after peeling sources and sinks: usually few."""
        return termination.unpeeled_states(self.expanded, self.edge_start, self.e_dst)

    def rule_facts(self, action: int, dead: Sequence[int]) -> RuleFacts:
        """From the rule conditions evaluated level by level while sweeping."""
        pre = self.precomputed
        rules = self.machine.spec.actions[action].decide
        names = [r.name for r in rules.rules] if rules is not None else []
        shadowed = pre["shadowed_by"].get(action, {})
        return RuleFacts(frozenset(j for j in pre["cond_true"].get(action, set()) if j in dead),
                         {d: frozenset(names[j] for j in shadowed.get(d, set())) for d in dead})

    def choice_groups(self, actions: Sequence[int]) -> dict[int, list[list[int]]]:
        """From the per-combination signatures of the transitions, counted while sweeping."""
        return {k: self.precomputed["choice_groups"].get(k, []) for k in actions}


class VectorStepFinder(StepFinder):
    """`StepFinder` over numpy arrays: an edge's source by one searchsorted."""

    def source(self, e: int) -> int:
        # the scalar must have the array's dtype, or numpy converts the whole array per call
        return int(np.searchsorted(self.edge_start, self.edge_start.dtype.type(e), side="right")) - 1


class LevelDepth:
    """`ex.depth[i]` read off the BFS level boundaries: states are numbered level by level,
    so a per-state array (4 bytes a state) would repeat what the boundaries say."""

    def __init__(self, offsets: list[int]):
        self.ends = np.asarray(offsets[1:], dtype=np.int64)

    def __len__(self) -> int:
        return int(self.ends[-1]) if len(self.ends) else 0

    def __getitem__(self, i: int) -> int:
        return int(np.searchsorted(self.ends, i, side="right"))

    def max(self) -> int:
        filled = np.flatnonzero(np.diff(np.concatenate([[0], self.ends])) > 0)
        return int(filled[-1]) if len(filled) else 0

    def first_deepest(self) -> int:
        """The first state of the deepest level."""
        depth = self.max()
        return int(self.ends[depth - 1]) if depth else 0


def _full(a: Any, n: int, dtype: Any = None) -> np.ndarray:
    """`a` as an array of n rows (a generated function returns a scalar for a constant)."""
    if type(a) is np.ndarray and a.shape == (n,) and (dtype is None or a.dtype == dtype):
        return a                            # the common case; broadcast_to costs microseconds
    return np.broadcast_to(np.asarray(a, dtype=dtype), (n,))


KEEP_EDGES_BELOW = 1_000_000      # transitions; past this a forward graph's edges are not kept


class _Block:
    """The successful transitions of one (action, choice combination) from one level:
    frontier positions of their sources (ascending), successor vars, rule ids, source
    vars and successor codes, row for row."""

    __slots__ = ("pos", "k", "ai", "ci", "T", "rule", "G", "codes", "forward")

    def __init__(self, pos: np.ndarray, k: int, ai: int, ci: int, T: list, rule: np.ndarray, G: list,
                 codes: np.ndarray):
        self.pos, self.k, self.ai, self.ci, self.T, self.rule, self.G, self.codes = pos, k, ai, ci, T, rule, G, codes
        self.forward = True


class _NeedEdges(Exception):
    """Edges were dropped as the graph looked forward, and then it was not."""


def explore_vector(vm: VMachine, *, max_states: int | None = None, timeout: float | None = None,
                   max_memory: int | None = None, properties: set[str] | None = None,
                   progress: ProgressFn | None = None) -> VExploration:
    """Explore `vm` level by level; same states, order, verdict inputs as `engine.explore`.

    While every edge leads one level deeper, the termination analyses need no stored
    edges, so past KEEP_EDGES_BELOW transitions they are dropped; if a later edge breaks
    that, the exploration starts again keeping them (weighted measures keep them always)."""
    bounds: dict[str, Any] = dict(max_states=max_states, timeout=timeout, max_memory=max_memory, properties=properties,
                  progress=progress)
    try:
        return _explore(vm, keep_edges=bool(vm.edge_weights), **bounds)
    except _NeedEdges:
        return _explore(vm, keep_edges=True, **bounds)


def _explore(vm: VMachine, *, keep_edges: bool, max_states: int | None, timeout: float | None,
             max_memory: int | None, properties: set[str] | None, progress: ProgressFn | None) -> VExploration:
    m = vm.machine
    spec = m.spec
    def wanted(name: str) -> bool:
        return properties is None or name in properties
    started = time.monotonic()
    deadline = started + timeout if timeout is not None else None
    ex = VExploration(m)
    invariants = [(n, f) for n, f in vm.invariants.items() if wanted(n)]
    reachables = {n: f for n, f in vm.reachables.items() if wanted(n)}
    step_props = {n: fs for n, fs in vm.step_props.items() if wanted(n)}
    variants = {n: v for n, v in vm.variants.items() if wanted(n)}
    nvars = len(vm.sizes)
    code_t = np.int32 if vm.space < 2 ** 31 else np.int64
    for a in spec.actions:
        for r in (a.decide.rules if a.decide else []):
            ex.rule_counts.setdefault(r.name, 0)
    if spec.terminal is not None and spec.terminal.label is not None:
        for v in spec.terminal.values:
            ex.label_counts.setdefault(v, 0)
    indep = [(p.name, p.vars) for p in spec.properties
             if p.kind == "independent" and p.name not in m.inactive and wanted(p.name)]
    slots, nslots = _slots(vm)
    events: dict[str, list[tuple]] = {name: [] for name, _ in indep}   # (state, slot, group, outcome, step)
    fired: dict[int, dict[str, int]] = {}
    cond_true: dict[int, set[int]] = {}
    shadowed_by: dict[int, dict[int, set[str]]] = {}
    choice_sig: dict[int, dict[int, list]] = {}
    weights: dict[str, list[np.ndarray]] = {n: [] for n in vm.edge_weights}

    def check_states(arrays: list, offset: int) -> None:
        n = len(arrays[0]) if arrays else 0
        for name, f in invariants:
            if name not in ex.findings:
                bad = np.nonzero(np.logical_not(_full(f(arrays), n, bool)))[0]
                if len(bad):
                    ex.findings[name] = Finding(offset + int(bad[0]), "false in this state")
        for name, f in reachables.items():
            if name not in ex.reached:
                hit = np.nonzero(_full(f(arrays), n, bool))[0]
                if len(hit):
                    ex.reached[name] = offset + int(hit[0])

    # the visited set: a dense index over the whole product space while it is small enough
    # (one gather per lookup), a compact hash index of the visited codes beyond
    hashed = vm.space > DENSE_LIMIT
    index_of = None if hashed else np.full(vm.space, UNSEEN, dtype=np.int32)
    visited = CodeIndex() if hashed else None
    scratch = _Scratch()
    init_codes = vm.encode([np.array([vm.gid[s[i]] if vm.kinds[i] == "enum" else s[i] for s in m.inits])
                            for i in range(nvars)])
    _, first = np.unique(init_codes, return_index=True)
    init_codes = init_codes[np.sort(first)].astype(code_t)
    levels = [init_codes]
    parents = [np.full(len(init_codes), -1, dtype=np.int32)]
    if hashed:
        assert visited is not None
        visited.add_new(init_codes, 0)
    else:
        assert index_of is not None
        index_of[init_codes] = np.arange(len(init_codes), dtype=np.int32)
    offsets = [0, len(init_codes)]
    S = vm.decode(init_codes)                  # the frontier's vars, decoded once per state
    check_states(S, 0)
    nkeys = sum(len(a.combos) for a in vm.actions)
    e_dst: list[np.ndarray] = []
    e_counts: list[np.ndarray] = []
    terminal_flags: list[np.ndarray] = []
    errored_flags: list[np.ndarray] = []
    transitions = 0
    forward = True
    dropped = False
    stopped = None
    # per built-in property, the level's first finding in the scalar engine's order: shortest
    # trace first (a failing step ends its trace at its source; a successor is one step
    # further), then source position and action-combo
    pending: dict[str, tuple[tuple[int, int, int], Finding]] = {}

    def candidate(name: str, order: tuple[int, int, int], finding: Finding) -> None:
        if name not in ex.findings and (name not in pending or order < pending[name][0]):
            pending[name] = (order, finding)

    mark = None
    try:
        while True:
            mark = _LevelMark(ex, levels, parents, offsets, e_dst, e_counts, terminal_flags, errored_flags,
                              weights, events, fired, transitions, forward)
            for name, (_, finding) in pending.items():    # the earliest of the level just swept
                ex.findings.setdefault(name, finding)
            pending.clear()
            base, total = offsets[-2], offsets[-1]
            frontier = levels[-1]
            n = len(frontier)
            if n == 0:
                break
            if max_states is not None and total > max_states:
                stopped = "max_states"
                break
            if deadline is not None and time.monotonic() > deadline:
                stopped = "timeout"
                break
            if max_memory is not None and current_rss() > max_memory:
                stopped = "max_memory"
                break
            term = _full(vm.is_terminal(S), n, bool)
            terminal_flags.append(term.astype(np.uint8))
            if vm.label is not None and term.any():
                labels, counts = np.unique(_full(vm.label(S), n)[term], return_counts=True)
                for lab, c in zip(labels, counts):
                    key = _label_value(vm, spec, lab)
                    ex.label_counts[key] = ex.label_counts.get(key, 0) + int(c)
            if term.any():
                live = np.flatnonzero(~term)
                L = [a[live] for a in S]
            else:
                live, L = np.arange(n), S
            errored = np.zeros(n, dtype=np.uint8)
            blocks = []
            key = 0
            projected = {name: _project(vm, frontier, xs) for name, xs in indep}
            for name, proj in projected.items():
                events[name].append((base + np.arange(n), np.zeros(n, np.int64), proj * nslots, term.astype(np.int64),
                                     None))
            for act in vm.actions:
                if act.guard is not None and len(live):
                    g = _full(act.guard(L), len(live), bool)
                    if g.all():
                        pos, G = live, L
                    else:
                        pos, G = live[g], [a[g] for a in L]
                else:
                    g = np.ones(len(live), dtype=bool)
                    pos, G = live, L
                gslot = slots[act.index][0]
                for name, proj in projected.items():
                    events[name].append((base + live, np.full(len(live), gslot, np.int64),
                                         proj[live] * nslots + gslot, g.astype(np.int64), None))
                for ci, combo in enumerate(act.combos):
                    k, key = key, key + 1
                    if len(pos) == 0:
                        continue
                    size = len(pos)
                    T, rule, unmatched = act.step(G, *combo)
                    rule = _full(rule, size)
                    ok = None
                    if np.any(unmatched):
                        ok = ~_full(unmatched, size, bool)
                        r0 = int(np.flatnonzero(~ok)[0])
                        candidate("well_defined", (0, int(pos[r0]), k),
                                  Finding(base + int(pos[r0]), _scalar_step_error(vm, act.index, ci, _succ(vm, G, r0)),
                                          (act.index, ci, None, None), subject=action_subject(m, act.index, ci)))
                        errored[pos[~ok]] = 1
                    # a var the step did not assign is the very array it was given: nothing to check
                    # or encode; the successor's code is the source's plus each changed var's shift
                    codes = frontier[pos]
                    T = [t if t is G[i] else _full(t, size) for i, t in enumerate(T)]
                    for i, t in enumerate(T):
                        if t is G[i]:
                            continue
                        if vm.kinds[i] != "int":            # typed: enums and bools cannot leave their domain
                            codes = codes + vm.shift(i, t, G[i])
                            continue
                        out = ~vm.in_domain(i, t)
                        if ok is not None:
                            out &= ok
                        if out.any():
                            r0 = int(np.flatnonzero(out)[0])
                            value = _raw(vm, i, t[r0])
                            candidate("domains", (1, int(pos[r0]), k),
                                      Finding(base + int(pos[r0]), f"{m.var_names[i]} = {value!r} is outside its "
                                              f"domain {m.domain_text(i)}",
                                              (act.index, ci, _rule(vm, rule[r0]), _succ(vm, T, r0))))
                            errored[pos[out]] = 1
                            ok = ~out if ok is None else ok & ~out
                        codes = codes + vm.shift(i, t, G[i])
                    bpos, bG = pos, G
                    if ok is not None:
                        sel = np.flatnonzero(ok)
                        if not len(sel):
                            continue
                        bpos, codes, rule = pos[sel], codes[sel], rule[sel]
                        T, bG = [t[sel] for t in T], [a[sel] for a in G]
                    blocks.append(_Block(bpos, k, act.index, ci, T, rule, bG, codes.astype(code_t, copy=False)))
            errored_flags.append(errored)
            counts = np.zeros(n, dtype=np.int32)
            for b in blocks:
                counts[b.pos] += 1                  # a source appears at most once per block
            if ex.first_stuck is None:
                stuck = np.flatnonzero((counts == 0) & ~term & (errored == 0))
                if len(stuck):
                    ex.first_stuck = base + int(stuck[0])
            if not dropped:
                e_counts.append(counts)
            if not blocks:
                levels.append(np.zeros(0, dtype=code_t))
                offsets.append(total)
                continue
            if indep:
                _transition_events(vm, blocks, base, indep, projected, slots, nslots, events)
            ranks = dst = None
            if hashed:              # the hash index numbers new codes in edge order itself
                src_o, succ_o, ranks = _edge_order(blocks, n, nkeys, code_t, scratch)
                assert visited is not None
                added = visited.add_new(succ_o, total)
                new_codes, new_parents = succ_o[added.first], src_o[added.first]
                dst = added.index
                level_forward = bool((dst >= total).all())
            else:
                assert index_of is not None
                new_codes, new_parents = _discover(blocks, index_of, n, nkeys, total, scratch)
                level_forward = all(b.forward for b in blocks)
            forward = forward and level_forward      # every edge leads one level deeper
            if not forward and dropped:
                raise _NeedEdges()
            levels.append(new_codes)
            parents.append((base + new_parents).astype(np.int32))
            offsets.append(total + len(new_codes))
            nedges = sum(len(b.pos) for b in blocks)
            if forward and not keep_edges and transitions + nedges > KEEP_EDGES_BELOW:
                dropped = True
                e_dst.clear()
                e_counts.clear()
            if not dropped:
                if dst is None:
                    _, succ_o, ranks = _edge_order(blocks, n, nkeys, code_t, scratch)
                    assert index_of is not None
                    dst = index_of[succ_o]
                e_dst.append(dst)
            transitions += nedges
            _sweep_facts(vm, blocks, base, fired, cond_true, shadowed_by, choice_sig)
            _transition_checks(vm, ex, blocks, ranks, nkeys, base, step_props, variants, weights, spec, nedges,
                               candidate)
            S = vm.decode(new_codes)
            check_states(S, total)
            if progress is not None:
                progress(offsets[-1], transitions, len(offsets) - 2, offsets[-1] - total, time.monotonic() - started)
    except MemoryError:
        # a bound, not a bug: drop this level's big arrays first, so there is room to
        # report, and leave the exploration as if it had stopped before the level
        blocks = projected = S = L = G = T = codes = new_codes = dst = None  # type: ignore[assignment]  # freed
        if mark is None:
            raise
        transitions, forward = mark.undo(ex, levels, parents, offsets, e_dst, e_counts, terminal_flags,
                                         errored_flags, weights, events, fired)
        base = offsets[-2]
        stopped, ex.out_of_memory = "max_memory", True
    for name, (_, finding) in pending.items():
        ex.findings.setdefault(name, finding)
    ex.expanded = offsets[-2] if stopped is None else base
    del index_of, visited
    ex.codes = _flat(levels, code_t)           # each list is joined and dropped in turn, so
    ex.states = LazyStates(vm, ex.codes)  # type: ignore[assignment]  # a read-only list of states, decoded on demand
    ex.parent = _flat(parents, np.int32)
    ex.depth = LevelDepth(offsets)
    ex.levels = [(offsets[k], offsets[k + 1]) for k in range(len(offsets) - 1)]
    ex.forward = forward        # of every edge seen; a partial graph keeps it for its explored part
    if dropped:                 # nothing reads edges then; deadlocks were found while sweeping
        ex.edge_start = ex.e_dst = None
    else:
        counts = _flat(e_counts, np.int32)
        edge_t = np.int32 if transitions < 2 ** 31 else np.int64
        ex.edge_start = np.zeros(len(counts) + 1, dtype=edge_t)
        np.cumsum(counts, out=ex.edge_start[1:])
        del counts
        ex.e_dst = _flat(e_dst, np.int32)
    ex.terminal = _flat(terminal_flags, np.uint8)
    ex.errored = _flat(errored_flags, np.uint8)
    ex.weights = {name: np.concatenate(ws) if ws else np.zeros(0, np.int64) for name, ws in weights.items()}
    for per_action in fired.values():
        for name, c in per_action.items():
            ex.rule_counts[name] = ex.rule_counts.get(name, 0) + c
    ex.fired_by_action = fired
    ex.precomputed = {
                      "cond_true": cond_true, "shadowed_by": shadowed_by,
                      "choice_groups": {a: _groups(sigs) for a, sigs in choice_sig.items()}}
    for name, _ in indep:
        disagreement = _first_disagreement(vm, events[name])
        if disagreement is not None:
            ex.findings.setdefault(name, disagreement)
    ex.transitions = transitions
    ex.stopped_by = stopped
    ex.complete = stopped is None
    ex.seconds = time.monotonic() - started
    ex.vm = vm
    ex.attach_lazy(VectorStepFinder)
    return ex


class _LevelMark:
    """What the level loop has built before a level, to undo that level when memory runs
    out in the middle of it (the lists are cut back, the small counters copied)."""

    def __init__(self, ex: VExploration, *lists_and_counters: Any):
        (levels, parents, offsets, e_dst, e_counts, terminal_flags, errored_flags, weights, events,
         fired, self.transitions, self.forward) = lists_and_counters
        self.lengths = [len(a) for a in (levels, parents, offsets, e_dst, e_counts, terminal_flags, errored_flags)]
        self.weights = {name: len(ws) for name, ws in weights.items()}
        self.events = {name: len(es) for name, es in events.items()}
        self.fired = {a: dict(per_rule) for a, per_rule in fired.items()}
        self.label_counts = dict(ex.label_counts)
        self.first_stuck = ex.first_stuck

    def undo(self, ex: VExploration, levels: list, parents: list, offsets: list, e_dst: list, e_counts: list,
             terminal_flags: list, errored_flags: list, weights: dict, events: dict,
             fired: dict) -> tuple[int, bool]:
        """Cut everything back to the mark; returns the transitions and forward flag then."""
        for a, n in zip((levels, parents, offsets, e_dst, e_counts, terminal_flags, errored_flags), self.lengths):
            del a[n:]               # a list emptied meanwhile (edges dropped) stays empty
        for name, n in self.weights.items():
            del weights[name][n:]
        for name, n in self.events.items():
            del events[name][n:]
        fired.clear()
        fired.update(self.fired)
        ex.label_counts.clear()
        ex.label_counts.update(self.label_counts)
        ex.first_stuck = self.first_stuck
        known = offsets[-1]         # states past the mark's levels are gone: so are findings on them
        for found in (ex.findings, ex.reached):
            for name in [n for n, v in found.items() if (v.state if isinstance(v, Finding) else v) >= known]:
                del found[name]
        return self.transitions, self.forward


def _slots(vm: VMachine) -> tuple[list[tuple[int, list[int]]], int]:
    """Where each check of a state falls in the scalar engine's order: the terminal check
    (slot 0), then per action its guard, then each of its choice combinations."""
    out, k = [], 1
    for act in vm.actions:
        out.append((k, list(range(k + 1, k + 1 + len(act.combos)))))
        k += 1 + len(act.combos)
    return out, k


def _project(vm: VMachine, codes: np.ndarray, ignored: list[int]) -> np.ndarray:
    """State codes with the ignored vars set to their first value."""
    c = codes.astype(np.int64)
    for i in ignored:
        c = c - ((c // vm.strides[i]) % vm.sizes[i]) * vm.strides[i]
    return c


def _transition_events(vm: VMachine, blocks: list[_Block], base: int, indep: list,
                       projected: dict, slots: list, nslots: int, events: dict) -> None:
    width = len(vm.lits) + 1
    for b in blocks:
        size = len(b.pos)
        slot = slots[b.ai][1][b.ci]
        for name, xs in indep:
            outcome = _project(vm, b.codes, xs) * width + (b.rule + 1)
            events[name].append((base + b.pos, np.full(size, slot, np.int64),
                                 projected[name][b.pos] * nslots + slot, outcome, (b.ai, b.ci, b.rule, b.T)))


def _first_disagreement(vm: VMachine, parts: list[tuple]) -> Finding | None:
    """The scalar engine's independence finding: the earliest check (in state, slot order)
    whose outcome differs from the first outcome seen for the same projected check."""
    if not parts:
        return None
    state = np.concatenate([p[0] for p in parts])
    slot = np.concatenate([p[1] for p in parts])
    group = np.concatenate([p[2] for p in parts])
    outcome = np.concatenate([p[3] for p in parts])
    order = np.lexsort((slot, state))                    # the scalar engine's visiting order
    g_sorted = group[order]
    first_of = np.lexsort((np.arange(len(order)), g_sorted))
    g2 = g_sorted[first_of]
    starts = np.concatenate([[True], g2[1:] != g2[:-1]])
    head = np.maximum.accumulate(np.where(starts, np.arange(len(g2)), 0))
    reference = np.empty(len(order), dtype=np.int64)
    reference[first_of] = first_of[head]                 # per event (in visiting order): its group's first
    differs = outcome[order] != outcome[order][reference]
    bad = np.nonzero(differs)[0]
    if not len(bad):
        return None
    later = int(bad[0])
    first = int(reference[later])
    return _indep_finding(vm, parts, order[first], order[later], int(slot[order[later]]))


def _indep_finding(vm: VMachine, parts: list[tuple], first: int, later: int, slot: int) -> Finding:
    def locate(k: int) -> tuple[int, tuple | None]:
        for p in parts:
            if k < len(p[0]):
                step = None
                if p[4] is not None:
                    ai, ci, rule, T = p[4]
                    step = (ai, ci, _rule(vm, rule[k]), _succ(vm, T, k))
                return int(p[0][k]), step
            k -= len(p[0])
        raise AssertionError("event out of range")
    s1, step1 = locate(first)
    s2, step2 = locate(later)
    m = vm.machine
    if slot == 0:
        msg = "two states equal up to the ignored vars differ in being terminal"
        subject = Subject("terminal")
    elif step2 is None:
        one, other = ("enabled", "disabled") if _enabled_first(parts, first) else ("disabled", "enabled")
        msg = f"two states equal up to the ignored vars: the action is {one} in one and {other} in the other"
        subject = Subject("guard", m.actions[next(a for a, (g, _) in enumerate(_slots(vm)[0]) if g == slot)].name)
    else:
        msg = "the same transition up to the ignored vars has different outcomes"
        subject = action_subject(m, step2[0], step2[1])
    return Finding(s1, msg, step1, Finding(s2, msg, step2), subject)


def _enabled_first(parts: list[tuple], k: int) -> bool:
    for p in parts:
        if k < len(p[0]):
            return bool(p[3][k])
        k -= len(p[0])
    raise AssertionError("event out of range")


DENSE_SLOTS = 1 << 24
UNSEEN = np.iinfo(np.int32).max     # the index of a code not reached yet
RANK_LIMIT = UNSEEN                 # edge keys at or past this are ranked before they meet the index


class _Scratch:
    """One table of a slot per (source, action-combo) reused level after level: a fresh
    array per level would cost its page faults every time."""

    def __init__(self) -> None:
        self.table = np.zeros(0, dtype=np.int64)

    def slots(self, n: int) -> np.ndarray:
        """The first n slots, all -1."""
        if len(self.table) < n:
            self.table = np.empty(max(n, 2 * len(self.table)), dtype=np.int64)
        view = self.table[:n]
        view.fill(-1)
        return view


def _discover(blocks: list[_Block], index_of: np.ndarray, n: int, nkeys: int, total: int,
              scratch: _Scratch) -> tuple[np.ndarray, np.ndarray]:
    """Index the states this level reaches first, in the scalar engine's order (by source,
    then action and choice combination): their codes and the frontier position of the
    source that found each. Notes per block whether every edge leads to a new state."""
    found_codes, found_keys = [], []
    for b in blocks:
        fresh = index_of[b.codes] == UNSEEN
        b.forward = bool(fresh.all())
        if b.forward:
            found_codes.append(b.codes)
            found_keys.append(b.pos * nkeys + b.k)
        elif fresh.any():
            found_codes.append(b.codes[fresh])
            found_keys.append(b.pos[fresh] * nkeys + b.k)
    if not found_codes:
        return np.zeros(0, dtype=index_of.dtype), np.zeros(0, dtype=np.int64)
    codes = np.concatenate(found_codes)
    keys = np.concatenate(found_keys)
    slots = n * nkeys
    if slots < RANK_LIMIT:
        order_known, rank = False, keys.astype(np.int32)
    else:                                   # keys too wide for the int32 index: rank them first
        order = np.argsort(keys, kind="stable")
        codes, keys = codes[order], keys[order]
        order_known, rank = True, np.arange(len(keys), dtype=np.int32)
    # the unseen codes' index entries serve as scratch: each keeps its smallest (first) key
    np.minimum.at(index_of, codes, rank)
    first = index_of[codes] == rank
    codes, keys = codes[first], keys[first]
    if not order_known:
        if slots <= DENSE_SLOTS:            # sort by scattering into one slot per key
            table = scratch.slots(slots)
            table[keys] = codes
            keys = np.flatnonzero(table >= 0)
            codes = table[keys].astype(codes.dtype)
        else:
            order = np.argsort(keys)
            codes, keys = codes[order], keys[order]
    index_of[codes] = np.arange(total, total + len(codes), dtype=np.int32)
    return codes, keys // nkeys


def _edge_order(blocks: list[_Block], n: int, nkeys: int, code_t: Any,
                scratch: _Scratch) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """This level's transitions in the scalar engine's edge order (source, action, combo):
    their sources' frontier positions and successor codes, and for each block where its
    rows landed."""
    slots = [b.pos * nkeys + b.k for b in blocks]
    if n * nkeys <= DENSE_SLOTS:          # scatter into one slot per (source, action-combo)
        table = scratch.slots(n * nkeys)
        for sl, b in zip(slots, blocks):
            table[sl] = b.codes
        used = table >= 0
        valid = np.flatnonzero(used)
        rank_of = np.cumsum(used, dtype=np.int32) - 1      # a used slot's position among the used ones
        return valid // nkeys, table[valid].astype(code_t), [rank_of[sl] for sl in slots]
    flat = np.concatenate(slots)
    order = np.argsort(flat, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    cuts = np.cumsum([len(sl) for sl in slots])[:-1]
    return flat[order] // nkeys, np.concatenate([b.codes for b in blocks])[order], np.split(rank, cuts)


def _flat(parts: list, dtype: Any) -> np.ndarray:
    """Join a list of arrays and empty the list, freeing the parts."""
    out = np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)
    parts.clear()
    return out


def _sweep_facts(vm: VMachine, blocks: list[_Block], base: int, fired: dict, cond_true: dict,
                 shadowed_by: dict, choice_sig: dict) -> None:
    """Coverage facts the vacuity analysis needs, gathered while the blocks are at hand."""
    for b in blocks:
        pos, ai, ci, rule, G = b.pos, b.ai, b.ci, b.rule, b.G
        size = len(pos)
        counts = fired.setdefault(ai, {})
        act = vm.actions[ai]
        decide = vm.machine.spec.actions[ai].decide
        rules = decide.rules if act.conds is not None and decide is not None else []    # conds: it decides
        for r in rules:                                # a few compares beat one bincount
            hits = int(np.count_nonzero(rule == vm.gid[r.name]))
            if hits:
                counts[r.name] = counts.get(r.name, 0) + hits
        if act.conds is not None and not all(counts.get(r.name) for r in rules):
            # only rules that have not fired yet can end up dead; their conditions are what
            # tells "never true" from "shadowed"
            conds = [_full(x, size, bool) for x in act.conds(G, *act.combos[ci])]
            first = np.full(size, len(conds), dtype=np.int64)
            for j in range(len(conds) - 1, -1, -1):
                first[conds[j]] = j
            seen = cond_true.setdefault(ai, set())
            shadows = shadowed_by.setdefault(ai, {})
            for j, cj in enumerate(conds):
                if cj.any():
                    seen.add(j)
                    earlier = np.unique(first[cj & (first < j)])
                    if len(earlier):
                        shadows.setdefault(j, set()).update(int(x) for x in earlier)
        if len(vm.machine.actions[ai].choice_names) == 1:
            # a successor's code names it as well as its index does
            src = (base + pos).astype(np.uint64)
            h = (src * _MIX[0]) ^ (b.codes.astype(np.uint64) * _MIX[1]) ^ ((rule + 2).astype(np.uint64) * _MIX[2])
            h ^= h >> np.uint64(29)
            sig = choice_sig.setdefault(ai, {}).setdefault(ci, [0, np.uint64(0)])
            sig[0] += size
            with np.errstate(over="ignore"):
                sig[1] = np.uint64(sig[1] + np.add.reduce(h * _MIX[0], dtype=np.uint64))


def _groups(sigs: dict[int, list]) -> list[list[int]]:
    """Choice combos whose transitions were the same multiset of (source, successor, rule)."""
    by: dict[tuple, list[int]] = {}
    for ci, (count, h) in sorted(sigs.items()):
        by.setdefault((count, int(h)), []).append(ci)
    return list(by.values())


def _transition_checks(vm: VMachine, ex: VExploration, blocks: list[_Block], ranks: list | None, nkeys: int,
                       base: int, step_props: dict, variants: dict, weights: dict, spec: Any, nedges: int,
                       candidate: Callable[[str, tuple[int, int, int], Finding], None]) -> None:
    """Step invariants, variants and edge weights over this level's transitions; a
    violation found is the first in edge order (the scalar engine's order). `ranks`
    (where each block's rows fall in the level's stored edges) is there when edges are kept.
    A step property that would read a choice its action does not make is a `well_defined`
    failure, even where the property has already failed (as on the scalar engine, a failed
    property is evaluated until `well_defined` has a finding)."""
    if not (step_props or variants or weights):
        return
    chosen: dict[str, tuple[int, Finding]] = {}
    unreadable: dict[str, tuple[int, tuple[int, int, int], Finding]] = {}
    watching = "well_defined" not in ex.findings
    # int64: each term fits (vectorize bounded every expression below 2^62); their sums
    # along a run are computed exactly later (properties/termination.py, _total_type)
    level_weights = {name: np.zeros(nedges, dtype=np.int64) for name in weights}
    for bi, b in enumerate(blocks):
        pos, ai, ci, A, rule, B = b.pos, b.ai, b.ci, b.T, b.rule, b.G
        size = len(pos)
        combo = vm.actions[ai].combos[ci]
        names = vm.machine.actions[ai].choice_names
        cargs = [combo[names.index(c)] if c in names else None for c in spec.choice_names]

        # step and found read this block's variables (noqa: B023): both are called in this iteration only.
        def step(r: int) -> tuple:
            return (ai, ci, _rule(vm, rule[r]), _succ(vm, A, r))  # noqa: B023

        def found(name: str, r: int, message: str) -> None:
            e = int(pos[r]) * nkeys + b.k        # noqa: B023  (the edge's place in the scalar engine's order)
            if name not in chosen or e < chosen[name][0]:
                chosen[name] = (e, Finding(base + int(pos[r]), message, step(r)))  # noqa: B023
        for name, fs in step_props.items():
            judged = name not in ex.findings
            need_of = vm.step_needs[name].get(ai)
            need = None
            if need_of is not None and (judged or watching):
                need = _full(need_of(B, A, rule, *cargs), size, bool)
                if watching and need.any():
                    r = int(np.flatnonzero(need)[0])
                    e = int(pos[r]) * nkeys + b.k
                    if name not in unreadable or e < unreadable[name][0]:
                        message = _scalar_error(vm, name, ai, ci, B, A, rule, r)
                        unreadable[name] = (e, (1, int(pos[r]), b.k), Finding(base + int(pos[r]), message, step(r),
                                                                              subject=Subject("property", name)))
            if judged:
                holds = _full(fs[ai](B, A, rule, *cargs), size, bool)
                if need is not None:
                    holds = holds | need                 # not judged there
                bad = np.flatnonzero(~holds)
                if len(bad):
                    found(name, int(bad[0]), "false for this transition")
        for name, (f, bound) in variants.items():
            if name not in ex.findings:
                before, after = _full(f(B), size, np.int64), _full(f(A), size, np.int64)
                bad = np.flatnonzero((after <= before) | (after > bound) | (before > bound))
                if len(bad):
                    r = int(bad[0])
                    b0, a0 = int(before[r]), int(after[r])
                    found(name, r, f"the variant goes from {b0} to {a0}: it must strictly increase" if a0 <= b0
                          else f"the variant reaches {max(b0, a0)}, above its bound {bound}")
        for name in weights:
            assert ranks is not None, "weighted measures keep every edge"
            level_weights[name][ranks[bi]] = _full(vm.edge_weights[name][ai](B, A, rule, *cargs), size, np.int64)
    spec_order = list(step_props)
    for _name, (_e, order, finding) in sorted(unreadable.items(), key=lambda kv: (kv[1][0], spec_order.index(kv[0]))):
        candidate("well_defined", order, finding)      # the first, in the scalar engine's order
    for name, (_, finding) in chosen.items():
        ex.findings.setdefault(name, finding)
    for name, w in level_weights.items():
        weights[name].append(w)


def _scalar_error(vm: VMachine, name: str, ai: int, ci: int, B: list, A: list, rule: np.ndarray, r: int) -> str:
    """The message of the scalar engine for a step property it cannot evaluate on this
    transition: its own evaluation, so both engines say exactly the same."""
    m = vm.machine
    act = m.actions[ai]
    try:
        m.step_invariants[name](_succ(vm, B, r), _succ(vm, A, r), act.name, _rule(vm, rule[r]), *act.step_args[ci])
    except EVAL_ERRORS as exc:
        return failure(m, f"property {name}", exc)
    raise AssertionError(f"the vector engine expected property {name} to read a missing choice here")


def _scalar_step_error(vm: VMachine, ai: int, ci: int, source: tuple) -> str:
    """The message of the scalar engine for a transition that matched no decide rule: the
    scalar step function's own error, so both engines say exactly the same."""
    m = vm.machine
    try:
        m.actions[ai].step(source, *m.actions[ai].combos[ci])
    except EVAL_ERRORS as exc:
        return failure(m, action_text(m, ai, ci), exc)
    raise AssertionError(f"the vector engine expected {action_text(m, ai, ci)} to match no rule here")


def _label_value(vm: VMachine, spec: Any, lab: Any) -> Any:
    """A terminal label as the scalar engine counts it (enum ids back to strings)."""
    from haltproof.machine.expr import BoolT, EnumT
    t = spec.terminal.label.type
    if isinstance(t, EnumT):
        return vm.lits[int(lab)]
    return bool(lab) if isinstance(t, BoolT) else int(lab)


def _raw(vm: VMachine, i: int, value: Any) -> Any:
    """A successor's value for a trace, even when it lies outside the domain."""
    if vm.kinds[i] == "enum":
        return vm.lits[int(value)]
    return bool(value) if vm.kinds[i] == "bool" else int(value)


def _rule(vm: VMachine, r: Any) -> str | None:
    return None if int(r) < 0 else vm.lits[int(r)]


def _succ(vm: VMachine, A: list, r: int) -> tuple:
    return tuple(_raw(vm, j, A[j][r]) for j in range(len(A)))
