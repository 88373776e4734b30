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

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np

from haltproof.machine.vectorize import DENSE_LIMIT, Arrays, VAction, VMachine

from . import messages
from .codeset import CodeBitmap, CodeIndex, Mapper, first_occurrences
from haltproof.machine.compiled import EVAL_ERRORS
from haltproof.properties import liveness, termination
from haltproof.properties.exploration import RuleFacts
from haltproof.properties.kinds import Subject

from .engine import CHOICE_KEY, Exploration, Finding, ProgressFn, StepFinder, action_subject, action_text, failure
from .memory import address_space_left, available_memory, current_rss, memory_headroom, rough_size

# independence: per check of a level, (states, slots, groups, outcomes, steps or None), row for row
Event: TypeAlias = tuple[Any, ...]
Fired: TypeAlias = dict[int, dict[str, int]]     # per action that fired, per rule its transitions

_MIX = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F), np.uint64(0x165667B19E3779F9))


class LazyStates:
    """`ex.states[i]` as a tuple, decoded from the state's code when asked."""

    def __init__(self, vm: VMachine, codes: np.ndarray):
        self.vm, self.codes = vm, codes

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, i: int) -> tuple[Any, ...]:
        arrays = self.vm.decode(self.codes[i:i + 1].astype(np.int64))
        return tuple(self.vm.to_python(k, a[0]) for k, a in enumerate(arrays))

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        for i in range(len(self.codes)):
            yield self[i]


class VExploration(Exploration):
    """An Exploration whose states and edges are numpy arrays. `via_*` (how each state was
    first reached) and `e_action`/`e_combo`/`e_rule` (what each edge is) are recomputed with
    the scalar step functions when a trace asks for them (engine.Exploration.attach_lazy)."""

    first_stuck: int | None = None   # the first expanded state with no way on (found while sweeping)
    visited_set = "dense index"      # what held the visited codes at the end: "dense index", "hash index", "bitmap"
    # set by _explore (annotations only: VExploration is not itself a dataclass)
    codes: np.ndarray                # each state's code, in BFS order
    levels: list[tuple[int, int]]    # per BFS level: its first and one-past-last state
    weights: dict[str, np.ndarray]   # per measure: each edge's weight
    precomputed: dict[str, Any]      # per-action facts the vacuity analyses read
    vm: VMachine

    @property
    def max_depth(self) -> int:
        deepest: int = self.depth.max()
        return deepest

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

    def run_ends(self) -> np.ndarray:
        """From the stored edges (a liveness check keeps them) and the flags noted per level."""
        assert self.edge_start is not None, "a liveness check explores with keep_edges"
        return liveness.end_states(self.expanded, self.terminal, self.errored, self.edge_start)

    def open_states(self, name: str) -> np.ndarray:
        """The property's array expression over every state, decoded once."""
        arrays = self.vm.decode(self.codes.astype(np.int64))
        return _full(self.vm.obligations[name](arrays), len(self.codes), bool)

    def chance_states(self, name: str) -> np.ndarray:
        """Where a `probability` property's reach predicate holds, over every state at once."""
        arrays = self.vm.decode(self.codes.astype(np.int64))
        return _full(self.vm.chances[name](arrays), len(self.codes), bool)

    def end_labels(self, values: Sequence[Any]) -> dict[str, np.ndarray]:
        """Per terminal label value, the terminal states that end with it, over every state at once."""
        vm, n = self.vm, len(self.codes)
        term = np.asarray(self.terminal[:n], dtype=bool)
        assert vm.label is not None, "a terminal label"
        raw = _full(vm.label(vm.decode(self.codes.astype(np.int64))), n)
        out = {}
        for value in values:
            hits = [lab for lab in np.unique(raw[term]) if _label_value(vm, vm.machine.spec, lab) == value]
            out[str(value)] = term & np.isin(raw, hits)
        return out

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

    def __init__(self, pos: np.ndarray, k: int, ai: int, ci: int, T: Arrays, rule: np.ndarray, G: Arrays,
                 codes: np.ndarray):
        self.pos, self.k, self.ai, self.ci, self.T, self.rule, self.G, self.codes = pos, k, ai, ci, T, rule, G, codes
        self.forward = True


class _NeedEdges(Exception):
    """Edges were dropped as the graph looked forward, and then it was not."""


def explore_vector(vm: VMachine, *, max_states: int | None = None, timeout: float | None = None,
                   max_memory: int | None = None, properties: set[str] | None = None,
                   progress: ProgressFn | None = None, keep_edges: bool = False, workers: int = 1) -> VExploration:
    """Explore `vm` level by level; same states, order, verdict inputs as `engine.explore`.

    While every edge leads one level deeper, the termination analyses need no stored
    edges, so past KEEP_EDGES_BELOW transitions they are dropped; if a later edge breaks
    that, the exploration starts again keeping them (weighted measures keep them always,
    and so does `keep_edges`: the probability analyses read every edge).

    `workers` threads share each large level (numpy releases the GIL in its loops): the
    frontier is expanded in contiguous chunks and the new states are sorted out in ranges
    of codes, then joined in order, so every figure is the same as with one worker."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    bounds: dict[str, Any] = dict(max_states=max_states, timeout=timeout, max_memory=max_memory, properties=properties,
                  progress=progress)
    with ThreadPoolExecutor(workers) if workers > 1 else nullcontext() as pool:
        run: Mapper = (lambda f, items: list(pool.map(f, items))) if pool is not None else _serial
        try:
            return _explore(vm, keep_edges=keep_edges or bool(vm.edge_weights), workers=(workers, run), **bounds)
        except _NeedEdges:
            return _explore(vm, keep_edges=True, workers=(workers, run), **bounds)


def _serial(f: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
    return [f(x) for x in items]


PARALLEL_ROWS = 8192       # a level shared by workers has at least this many rows per worker


def _explore(vm: VMachine, *, keep_edges: bool, max_states: int | None, timeout: float | None,
             max_memory: int | None, properties: set[str] | None, progress: ProgressFn | None,
             workers: tuple[int, Mapper]) -> VExploration:
    """One exploration of `vm`, in three phases: the initial states, the BFS levels, and
    the result assembled from what the levels built (see _VSweep)."""
    sweep = _VSweep(vm, keep_edges, max_states, timeout, max_memory, properties, progress, workers)
    sweep.add_inits()
    sweep.run()
    return sweep.result()


class _VSweep:
    """One vector exploration in progress: what it checks, the levels and edges built so
    far, the counts the analyses read, and the findings of the level being swept."""

    def __init__(self, vm: VMachine, keep_edges: bool, max_states: int | None, timeout: float | None,
                 max_memory: int | None, properties: set[str] | None, progress: ProgressFn | None,
                 workers: tuple[int, Mapper] = (1, _serial)):
        def wanted(name: str) -> bool:
            return properties is None or name in properties
        self.workers, self.run_all = workers
        self.lock = threading.Lock()            # candidate findings come from every worker
        self.vm, self.m, self.spec = vm, vm.machine, vm.machine.spec
        self.keep_edges, self.max_states, self.max_memory, self.progress = keep_edges, max_states, max_memory, progress
        self.started = time.monotonic()
        self.deadline = self.started + timeout if timeout is not None else None
        self.ex = ex = VExploration(self.m)
        self.invariants = [(n, f) for n, f in vm.invariants.items() if wanted(n)]
        self.reachables = {n: f for n, f in vm.reachables.items() if wanted(n)}
        self.step_props = {n: fs for n, fs in vm.step_props.items() if wanted(n)}
        self.variants = {n: v for n, v in vm.variants.items() if wanted(n)}
        self.code_t: Any = np.int32 if vm.space < 2 ** 31 else np.int64
        for a in self.spec.actions:
            for r in (a.decide.rules if a.decide else []):
                ex.rule_counts.setdefault(r.name, 0)
        if self.spec.terminal is not None and self.spec.terminal.label is not None:
            for v in self.spec.terminal.values:
                ex.label_counts.setdefault(v, 0)
        self.indep: list[tuple[str, list[int]]] = [
            (p.name, p.vars) for p in self.spec.properties
            if p.kind == "independent" and p.name not in self.m.inactive and wanted(p.name)]
        self.slots, self.nslots = _slots(vm)
        self.events: dict[str, list[Event]] = {name: [] for name, _ in self.indep}
        self.fired: Fired = {}
        self.cond_true: dict[int, set[int]] = {}
        self.shadowed_by: dict[int, dict[int, set[int]]] = {}
        self.choice_sig: dict[int, dict[int, list[Any]]] = {}
        self.weights: dict[str, list[np.ndarray]] = {n: [] for n in vm.edge_weights}
        if vm.machine.spec.probabilities:
            self.weights[CHOICE_KEY] = []
        # the visited set: a dense index over the whole product space while it is small enough
        # (one gather per lookup), a compact hash index of the visited codes beyond
        self.index_of = None if vm.space > DENSE_LIMIT else _dense_index(vm.space)
        self.hashed = self.index_of is None
        self.visited = CodeIndex() if self.hashed else None
        self.bitmap: CodeBitmap | None = None      # replaces both once edges are dropped (to_bitmap)
        self.scratch = _Scratch()
        self.nkeys = sum(len(a.combos) for a in vm.actions)     # (action, combination) pairs, numbered
        self.first_keys = [sum(len(a.combos) for a in vm.actions[:k]) for k in range(len(vm.actions))]
        # per state 14 bytes or less, end to end in arrays reserved up front (see _Parts)
        reserve = _reserve(vm.space, self.code_t, max_memory, max_states)
        self.levels = _Parts(self.code_t, reserve)              # per level its states' codes
        self.parents = _Parts(np.int32, reserve)
        self.offsets = [0]                          # per level its first state, then one past the last
        self.S: list[np.ndarray] | None = None      # the frontier's vars, decoded once per state
        self.e_dst: list[np.ndarray] = []
        self.e_counts: list[np.ndarray] = []
        self.terminal_flags = _Parts(np.uint8, reserve)
        self.errored_flags = _Parts(np.uint8, reserve)
        self.transitions = 0
        self.forward = True
        self.dropped = False
        self.stopped: str | None = None
        # per built-in property, the level's first finding in the scalar engine's order: shortest
        # trace first (a failing step ends its trace at its source; a successor is one step
        # further), then source position and action-combo
        self.pending: dict[str, tuple[tuple[int, int, int], Finding]] = {}
        self.mark: _LevelMark | None = None

    def check_states(self, arrays: list[np.ndarray], offset: int) -> None:
        """The invariants and reachable properties on the states from `offset` on."""
        self.note_states(self.state_checks(arrays, offset))

    def state_checks(self, arrays: list[np.ndarray], offset: int) -> tuple[dict[str, int], dict[str, int]]:
        """Per invariant not yet violated its first state (from `offset`) that breaks it,
        per reachable property not yet reached its first state that reaches it."""
        ex = self.ex
        n = len(arrays[0]) if arrays else 0
        bad_at, hit_at = {}, {}
        for name, f in self.invariants:
            if name not in ex.findings:
                bad = np.flatnonzero(np.logical_not(_full(f(arrays), n, bool)))
                if len(bad):
                    bad_at[name] = offset + int(bad[0])
        for name, f in self.reachables.items():
            if name not in ex.reached:
                hit = np.flatnonzero(_full(f(arrays), n, bool))
                if len(hit):
                    hit_at[name] = offset + int(hit[0])
        return bad_at, hit_at

    def note_states(self, found: tuple[dict[str, int], dict[str, int]]) -> None:
        """What state_checks found, where nothing earlier was noted."""
        bad_at, hit_at = found
        for name, at in bad_at.items():
            self.ex.findings.setdefault(name, Finding(at, messages.FALSE_IN_STATE))
        for name, at in hit_at.items():
            self.ex.reached.setdefault(name, at)

    def decode_and_check(self, codes: np.ndarray, offset: int) -> Arrays:
        """The new level's vars, and its states checked; by the workers in contiguous pieces
        (the first piece with a finding has the first state with it), then joined."""
        pieces = self.pieces(len(codes))
        if pieces == 1:
            S = self.vm.decode(codes)
            self.check_states(S, offset)
            return S
        cuts = [len(codes) * i // pieces for i in range(pieces + 1)]

        def piece(lo: int, hi: int) -> tuple[Arrays, tuple[dict[str, int], dict[str, int]]]:
            part = self.vm.decode(codes[lo:hi])
            return part, self.state_checks(part, offset + lo)
        done = self.run_all(lambda r: piece(*r), list(zip(cuts, cuts[1:])))
        for _, found in done:
            self.note_states(found)
        return [np.concatenate([part[j] for part, _ in done]) for j in range(len(self.vm.sizes))]

    def candidate(self, name: str, order: tuple[int, int, int], finding: Finding) -> None:
        """A finding of built-in property `name` in this level; the earliest in order is kept
        (whichever worker finds it first: the order decides, not the timing)."""
        with self.lock:
            if name not in self.ex.findings and (name not in self.pending or order < self.pending[name][0]):
                self.pending[name] = (order, finding)

    def pieces(self, rows: int) -> int:
        """Into how many pieces a level's work of `rows` rows is split: one per worker when
        each gets PARALLEL_ROWS or more. Independence properties keep one piece: their
        events are gathered per level in one order."""
        if self.workers == 1 or self.indep:
            return 1
        return max(1, min(self.workers, rows // PARALLEL_ROWS))

    def flush_pending(self) -> None:
        """The earliest finding of each built-in property in the level just swept."""
        for name, (_, finding) in self.pending.items():
            self.ex.findings.setdefault(name, finding)
        self.pending.clear()

    def add_inits(self) -> None:
        """Level 0: the distinct initial states, in the spec's order."""
        vm, m = self.vm, self.m
        init_codes = vm.encode([np.array([vm.gid[s[i]] if vm.kinds[i] == "enum" else s[i] for s in m.inits])
                                for i in range(len(vm.sizes))])
        _, first = np.unique(init_codes, return_index=True)
        init_codes = init_codes[np.sort(first)].astype(self.code_t)
        self.levels.append(init_codes)
        self.parents.append(np.full(len(init_codes), -1, dtype=np.int32))
        if self.visited is not None:
            self.visited.add_new(init_codes, 0)
        else:
            assert self.index_of is not None
            self.index_of[init_codes] = np.arange(len(init_codes), dtype=np.int32)
        self.offsets.append(len(init_codes))
        self.S = vm.decode(init_codes)
        self.check_states(self.S, 0)

    def run(self) -> None:
        """Sweep level after level until none is left or a bound stops it. Running out of
        memory is a bound, not a bug: the level it struck in is undone (after the handler,
        so the traceback no longer holds the level's big arrays)."""
        try:
            while self.sweep_level():
                pass
            out_of_memory = False
        except MemoryError:
            if self.mark is None:
                raise
            out_of_memory = True
        if out_of_memory:
            assert self.mark is not None
            self.S = None
            self.transitions, self.forward = self.mark.undo(
                self.ex, self.levels, self.parents, self.offsets, self.e_dst, self.e_counts, self.terminal_flags,
                self.errored_flags, self.weights, self.events, self.fired)
            self.stopped, self.ex.out_of_memory = "max_memory", True
        self.flush_pending()

    def bound_reached(self, total: int, n: int) -> str | None:
        """Which bound stops the exploration before the next level (of `n` states), if any.
        Memory is judged before the level allocates anything: what the process holds, plus
        what the level may take (level_bytes), against --max-memory and what the system
        has available, so a level that cannot fit stops cleanly rather than being killed."""
        if self.max_states is not None and total > self.max_states:
            return "max_states"
        if self.deadline is not None and time.monotonic() > self.deadline:
            return "timeout"
        need = self.level_bytes(n)
        if self.max_memory is not None:
            rss = current_rss()
            if rss > self.max_memory:
                return "max_memory"
            if need > self.max_memory - rss:
                self.ex.stopped_in = (f"the next BFS level, from {n:,} states, may take about {rough_size(need)} "
                                      f"more; {rough_size(self.max_memory - rss)} left")
                return "max_memory"
        for room, what in ((available_memory(), "the system has {} available"),
                           (address_space_left(), "the address-space limit (ulimit -v) leaves {}")):
            if room is not None and need > room:
                self.ex.out_of_memory = True
                self.ex.stopped_in = (f"the next BFS level, from {n:,} states, may take about {rough_size(need)}; "
                                      + what.format(rough_size(room)))
                return "max_memory"
        return None

    def level_bytes(self, n: int) -> int:
        """A generous bound on what expanding a frontier of `n` states allocates: per
        possible transition (every action-combination enabled) its source and successor
        vars, position, rule, code and order keys, and the new state's code, parent, flags
        and decoded vars; the edges too while they are kept."""
        rows = n * self.nkeys
        nvars = len(self.vm.sizes)
        code = int(np.dtype(self.code_t).itemsize)
        per_row = 8 * (2 * nvars + 6) + (code + 4 + 2 + 8 * nvars)
        if not self.dropped:
            per_row += 4
        return rows * per_row

    def sweep_level(self) -> bool:
        """Expand the last level; False when there is nothing more to expand."""
        self.mark = _LevelMark(self.ex, self.levels, self.parents, self.offsets, self.e_dst, self.e_counts,
                               self.terminal_flags, self.errored_flags, self.weights, self.events, self.fired,
                               self.transitions, self.forward)
        self.flush_pending()
        base, total = self.offsets[-2], self.offsets[-1]
        frontier = self.levels[-1]
        n = len(frontier)
        if n == 0:
            return False
        self.stopped = self.bound_reached(total, n)
        if self.stopped is not None:
            return False
        S = self.S
        assert S is not None
        errored = np.zeros(n, dtype=np.uint8)
        projected: dict[str, np.ndarray] = {}
        pieces = self.pieces(n)
        if pieces == 1:
            term = self.terminals(S, n)
            projected = {name: _project(self.vm, frontier, xs) for name, xs in self.indep}
            for name, proj in projected.items():
                self.events[name].append((base + np.arange(n), np.zeros(n, np.int64), proj * self.nslots,
                                          term.astype(np.int64), None))
            blocks = self.expand(_Level.of(base, frontier, S, 0, n, term, errored, projected))
        else:       # contiguous chunks of the frontier: every block's positions stay ascending
            cuts = [n * i // pieces for i in range(pieces + 1)]
            flags = np.empty(n, dtype=bool)

            def chunk(lo: int, hi: int) -> list[_Block]:
                part = [a[lo:hi] for a in S]
                flags[lo:hi] = _full(self.vm.is_terminal(part), hi - lo, bool)
                return self.expand(_Level.of(base, frontier, part, lo, hi, flags[lo:hi], errored, {}))
            blocks = [b for bs in self.run_all(lambda r: chunk(*r), list(zip(cuts, cuts[1:]))) for b in bs]
            term = self.terminals(S, n, flags)
        self.errored_flags.append(errored)
        self.count_edges(blocks, n, term, errored, base)
        if not blocks:
            self.levels.append(np.zeros(0, dtype=self.code_t))
            self.offsets.append(total)
            return True
        self.next_level(blocks, projected, base, total, n)
        return True

    def expand(self, level: _Level) -> list[_Block]:
        """Every action's blocks from the live states of `level` (or of one chunk of it).
        Nothing downstream depends on the order of blocks, only on their rows."""
        blocks: list[_Block] = []
        for act, key in zip(self.vm.actions, self.first_keys):
            blocks += self.action_blocks(act, key, level)
        return blocks

    def terminals(self, S: list[np.ndarray], n: int, term: np.ndarray | None = None) -> np.ndarray:
        """Which frontier states are terminal (kept as the level's flags; `term` when the
        workers have evaluated it already); their labels counted."""
        vm, ex = self.vm, self.ex
        if term is None:
            term = _full(vm.is_terminal(S), n, bool)
        self.terminal_flags.append(term.astype(np.uint8))
        if vm.label is not None and term.any():
            labels, counts = np.unique(_full(vm.label(S), n)[term], return_counts=True)
            for lab, c in zip(labels, counts):
                key = _label_value(vm, self.spec, lab)
                ex.label_counts[key] = ex.label_counts.get(key, 0) + int(c)
        return term

    def action_blocks(self, act: VAction, key: int, level: _Level) -> list[_Block]:
        """The transitions of one action from the level's live states, one block per
        choice combination; `key` numbers its first combination among all actions'."""
        live, L = level.live, level.L
        if act.guard is not None and len(live):
            g = _full(act.guard(L), len(live), bool)
            if g.all():
                pos, G = live, L
            else:
                pos, G = live[g], [a[g] for a in L]
        else:
            g = np.ones(len(live), dtype=bool)
            pos, G = live, L
        gslot = self.slots[act.index][0]
        for name, proj in level.projected.items():
            self.events[name].append((level.base + live, np.full(len(live), gslot, np.int64),
                                      proj[live] * self.nslots + gslot, g.astype(np.int64), None))
        blocks = []
        if len(pos):
            for ci, combo in enumerate(act.combos):
                block = self.combo_block(act, ci, combo, key + ci, pos, G, level)
                if block is not None:
                    blocks.append(block)
        return blocks

    def combo_block(self, act: VAction, ci: int, combo: tuple[Any, ...], k: int, pos: np.ndarray,
                    G: list[np.ndarray], level: _Level) -> _Block | None:
        """One combination's successful transitions from the enabled rows `pos` (vars G);
        a row whose step fails or leaves a domain is a candidate finding, and errored."""
        vm, m, base, errored = self.vm, self.m, level.base, level.errored
        size = len(pos)
        T, rule, unmatched = act.step(G, *combo)
        rule = _full(rule, size)
        ok = None
        if np.any(unmatched):
            ok = ~_full(unmatched, size, bool)
            r0 = int(np.flatnonzero(~ok)[0])
            self.candidate("well_defined", (0, int(pos[r0]), k),
                           Finding(base + int(pos[r0]), _scalar_step_error(vm, act.index, ci, _succ(vm, G, r0)),
                                   (act.index, ci, None, None), subject=action_subject(m, act.index, ci)))
            errored[pos[~ok]] = 1
        # a var the step did not assign is the very array it was given: nothing to check
        # or encode; the successor's code is the source's plus each changed var's shift
        codes = level.frontier[pos]
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
                self.candidate("domains", (1, int(pos[r0]), k),
                               Finding(base + int(pos[r0]), messages.outside_domain(m, i, value),
                                       (act.index, ci, _rule(vm, rule[r0]), _succ(vm, T, r0))))
                errored[pos[out]] = 1
                ok = ~out if ok is None else ok & ~out
            codes = codes + vm.shift(i, t, G[i])
        bpos, bG = pos, G
        if ok is not None:
            sel = np.flatnonzero(ok)
            if not len(sel):
                return None
            bpos, codes, rule = pos[sel], codes[sel], rule[sel]
            T, bG = [t[sel] for t in T], [a[sel] for a in G]
        return _Block(bpos, k, act.index, ci, T, rule, bG, codes.astype(self.code_t, copy=False))

    def count_edges(self, blocks: list[_Block], n: int, term: np.ndarray, errored: np.ndarray, base: int) -> None:
        """Each frontier state's number of edges; the first state with no way on is noted."""
        counts = np.zeros(n, dtype=np.int32)
        for b in blocks:
            counts[b.pos] += 1                  # a source appears at most once per block
        if self.ex.first_stuck is None:
            stuck = np.flatnonzero((counts == 0) & ~term & (errored == 0))
            if len(stuck):
                self.ex.first_stuck = base + int(stuck[0])
        if not self.dropped:
            self.e_counts.append(counts)

    def next_level(self, blocks: list[_Block], projected: dict[str, np.ndarray], base: int, total: int,
                   n: int) -> None:
        """The level's successors: the new states (the next level), the edges (unless
        dropped), the counts the analyses read and the checks of transitions and new states."""
        vm = self.vm
        if self.indep:
            _transition_events(vm, blocks, base, self.indep, projected, self.slots, self.nslots, self.events)
        ranks = dst = None
        if self.bitmap is not None:               # edges dropped: only membership is asked
            new_codes, new_parents = self.discover_fresh(blocks, n)
            level_forward = True
        elif self.visited is not None:              # the hash index numbers new codes in edge order itself
            src_o, succ_o, ranks = _edge_order(blocks, n, self.nkeys, self.code_t, self.scratch)
            added = self.visited.add_new(succ_o, total)
            new_codes, new_parents = succ_o[added.first], src_o[added.first]
            dst = added.index
            level_forward = bool((dst >= total).all())
        else:
            assert self.index_of is not None
            new_codes, new_parents = _discover(blocks, self.index_of, n, self.nkeys, total, self.scratch)
            level_forward = all(b.forward for b in blocks)
        self.forward = self.forward and level_forward      # every edge leads one level deeper
        if not self.forward and self.dropped:
            raise _NeedEdges()
        self.levels.append(new_codes)
        self.parents.append((base + new_parents).astype(np.int32))
        self.offsets.append(total + len(new_codes))
        nedges = sum(len(b.pos) for b in blocks)
        if not self.dropped and self.forward and not self.keep_edges and self.transitions + nedges > KEEP_EDGES_BELOW:
            self.dropped = True
            self.e_dst.clear()
            self.e_counts.clear()
            self.to_bitmap()
        if not self.dropped:
            if dst is None:
                _, succ_o, ranks = _edge_order(blocks, n, self.nkeys, self.code_t, self.scratch)
                assert self.index_of is not None
                dst = self.index_of[succ_o]
            self.e_dst.append(dst)
        self.transitions += nedges
        _sweep_facts(vm, blocks, base, self.fired, self.cond_true, self.shadowed_by, self.choice_sig)
        _transition_checks(vm, self.ex, blocks, ranks, self.nkeys, base, self.step_props, self.variants,
                           self.weights, self.spec, nedges, self.candidate)
        self.S = self.decode_and_check(new_codes, total)
        if self.progress is not None:
            self.progress(self.offsets[-1], self.transitions, len(self.offsets) - 2, self.offsets[-1] - total,
                          time.monotonic() - self.started)

    def discover_fresh(self, blocks: list[_Block], n: int) -> tuple[np.ndarray, np.ndarray]:
        """The level's new states in the scalar engine's order and their sources' frontier
        positions, from the visited bitmap. Edges are dropped, so every edge must lead to a
        state not seen before this level; one that does not ends this exploration (_NeedEdges)."""
        bitmap = self.bitmap
        assert bitmap is not None
        if any(self.run_all(lambda b: bool(bitmap.contains(b.codes).any()), blocks)):
            raise _NeedEdges()
        nkeys = self.nkeys
        codes = np.concatenate([b.codes for b in blocks])
        keys = np.concatenate([b.pos * nkeys + b.k for b in blocks])
        new_codes, new_keys = first_occurrences(codes, keys, self.vm.space, n * nkeys, self.pieces(len(codes)),
                                                self.run_all)
        del codes, keys
        bitmap.add(new_codes)
        return new_codes.astype(self.code_t), new_keys // nkeys

    def to_bitmap(self) -> None:
        """Once edges are dropped no index of a visited state is asked again: the visited set
        becomes one bit per possible code, where that fits in half the memory left."""
        need = CodeBitmap.bytes_for(self.vm.space)
        if need > memory_headroom(self.max_memory) // 2:
            return
        try:
            bitmap = CodeBitmap(self.vm.space)
        except MemoryError:             # refused after all: the index it would replace stays
            return
        bitmap.add(self.levels.joined())
        self.bitmap = bitmap
        self.index_of = self.visited = None

    def result(self) -> VExploration:
        """The exploration, assembled from the levels: each list is joined and dropped in turn."""
        ex, offsets = self.ex, self.offsets
        ex.expanded = offsets[-2]
        ex.visited_set = "bitmap" if self.bitmap is not None else "hash index" if self.hashed else "dense index"
        self.index_of = self.visited = self.bitmap = None
        ex.codes = self.levels.joined()
        ex.states = LazyStates(self.vm, ex.codes)  # type: ignore[assignment]  # read-only, decoded on demand
        ex.parent = self.parents.joined()
        ex.depth = LevelDepth(offsets)
        ex.levels = [(offsets[k], offsets[k + 1]) for k in range(len(offsets) - 1)]
        ex.forward = self.forward   # of every edge seen; a partial graph keeps it for its explored part
        self.edges()
        ex.terminal = self.terminal_flags.joined()
        ex.errored = self.errored_flags.joined()
        ex.weights = {name: np.concatenate(ws) if ws else np.zeros(0, np.int64) for name, ws in self.weights.items()}
        for per_action in self.fired.values():
            for name, c in per_action.items():
                ex.rule_counts[name] = ex.rule_counts.get(name, 0) + c
        ex.fired_by_action = self.fired
        ex.precomputed = {"cond_true": self.cond_true, "shadowed_by": self.shadowed_by,
                          "choice_groups": {a: _groups(sigs) for a, sigs in self.choice_sig.items()}}
        for name, _ in self.indep:
            disagreement = _first_disagreement(self.vm, self.events[name])
            if disagreement is not None:
                ex.findings.setdefault(name, disagreement)
        ex.transitions = self.transitions
        ex.stopped_by = self.stopped
        ex.complete = self.stopped is None
        ex.seconds = time.monotonic() - self.started
        ex.vm = self.vm
        ex.attach_lazy(VectorStepFinder)
        return ex

    def edges(self) -> None:
        """The stored edges: per state its first edge, per edge its destination."""
        ex = self.ex
        if self.dropped:            # nothing reads edges then; deadlocks were found while sweeping
            ex.edge_start = ex.e_dst = None
            return
        counts = _flat(self.e_counts, np.int32)
        edge_t = np.int32 if self.transitions < 2 ** 31 else np.int64
        ex.edge_start = np.zeros(len(counts) + 1, dtype=edge_t)
        np.cumsum(counts, out=ex.edge_start[1:])
        del counts
        ex.e_dst = _flat(self.e_dst, np.int32)


@dataclass
class _Level:
    """The frontier being expanded: its first state's number, its codes, the positions and
    vars of its live (non-terminal) states, its errored flags (set while expanding) and,
    per independence property, its codes projected."""

    base: int
    frontier: np.ndarray
    live: np.ndarray
    L: list[np.ndarray]
    errored: np.ndarray
    projected: dict[str, np.ndarray]

    @staticmethod
    def of(base: int, frontier: np.ndarray, S: Arrays, lo: int, hi: int, term: np.ndarray, errored: np.ndarray,
           projected: dict[str, np.ndarray]) -> _Level:
        """The frontier's states lo..hi-1 (vars S, terminal flags term) to expand."""
        if term.any():
            keep = np.flatnonzero(~term)
            return _Level(base, frontier, keep + lo if lo else keep, [a[keep] for a in S], errored, projected)
        return _Level(base, frontier, np.arange(lo, hi), S, errored, projected)


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

    def undo(self, ex: VExploration, levels: _Parts, parents: _Parts, offsets: list[int],
             e_dst: list[np.ndarray], e_counts: list[np.ndarray], terminal_flags: _Parts,
             errored_flags: _Parts, weights: dict[str, list[np.ndarray]], events: dict[str, list[Event]],
             fired: Fired) -> tuple[int, bool]:
        """Cut everything back to the mark; returns the transitions and forward flag then."""
        lists: tuple[list[Any] | _Parts, ...] = (levels, parents, offsets, e_dst, e_counts, terminal_flags, errored_flags)
        for a, n in zip(lists, self.lengths):
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


def _transition_events(vm: VMachine, blocks: list[_Block], base: int, indep: list[tuple[str, list[int]]],
                       projected: dict[str, np.ndarray], slots: list[tuple[int, list[int]]], nslots: int,
                       events: dict[str, list[Event]]) -> None:
    width = len(vm.lits) + 1
    for b in blocks:
        size = len(b.pos)
        slot = slots[b.ai][1][b.ci]
        for name, xs in indep:
            outcome = _project(vm, b.codes, xs) * width + (b.rule + 1)
            events[name].append((base + b.pos, np.full(size, slot, np.int64),
                                 projected[name][b.pos] * nslots + slot, outcome, (b.ai, b.ci, b.rule, b.T)))


def _first_disagreement(vm: VMachine, parts: list[Event]) -> Finding | None:
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


def _indep_finding(vm: VMachine, parts: list[Event], first: int, later: int, slot: int) -> Finding:
    def locate(k: int) -> tuple[int, tuple[Any, ...] | None]:
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
        msg = messages.TERMINAL_DIFFERS
        subject = Subject("terminal")
    elif step2 is None:
        msg = messages.guard_differs(_enabled_first(parts, first))
        subject = Subject("guard", m.actions[next(a for a, (g, _) in enumerate(_slots(vm)[0]) if g == slot)].name)
    else:
        msg = messages.OUTCOMES_DIFFER
        subject = action_subject(m, step2[0], step2[1])
    return Finding(s1, msg, step1, Finding(s2, msg, step2), subject)


def _enabled_first(parts: list[Event], k: int) -> bool:
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


class _Parts:
    """A list of arrays (one per BFS level) kept end to end in one array: what the level
    loop appends per state (code, parent, flags) costs its own bytes and nothing more, and
    the whole is there at the end without joining (no second copy at the peak).

    The array is reserved up front (`np.empty`: address space only, the operating system
    gives pages as they are written), so it seldom moves; past the reservation it doubles.
    The reservation is a hint: one the system refuses (it judges the size, not what is
    written) is halved until it is granted."""

    def __init__(self, dtype: Any, reserve: int):
        size = max(reserve, 16)
        while True:
            try:
                self.data = np.empty(size, dtype=dtype)
                break
            except MemoryError:
                if size <= 16:
                    raise
                size = max(16, size // 2)
        self.ends: list[int] = []

    def __len__(self) -> int:
        return len(self.ends)

    def size(self) -> int:
        return self.ends[-1] if self.ends else 0

    def append(self, values: np.ndarray) -> None:
        start = self.size()
        end = start + len(values)
        if end > len(self.data):
            bigger = np.empty(max(end, 2 * len(self.data)), dtype=self.data.dtype)
            bigger[:start] = self.data[:start]
            self.data = bigger
        self.data[start:end] = values
        self.ends.append(end)

    def __getitem__(self, k: int) -> np.ndarray:
        """Part k (a view)."""
        k = k % len(self.ends)
        return self.data[self.ends[k - 1] if k else 0:self.ends[k]]

    def __iter__(self) -> Iterator[np.ndarray]:
        return (self[k] for k in range(len(self.ends)))

    def __delitem__(self, cut: slice) -> None:
        """`del parts[n:]`: drop the parts from n on (as the level mark's undo does to lists)."""
        assert cut.step is None and cut.stop is None, "only whole tails are cut"
        del self.ends[cut]

    def joined(self) -> np.ndarray:
        """Every part, in order, as one array (a view of the reservation)."""
        return self.data[:self.size()]


def _reserve(space: int, code_t: Any, max_memory: int | None, max_states: int | None) -> int:
    """How many states the per-state arrays reserve room for: as many as there can be (the
    declared space, or about --max-states: the exploration stops at the first level past
    it), but no more than memory could hold at the floor of about 10 bytes a state (a code,
    a parent and two flags), nor more than half the address space an address-space limit
    leaves (the reservation counts against it in full, and the levels need the rest)."""
    per_state = np.dtype(code_t).itemsize + 4 + 2
    states = min(space, memory_headroom(max_memory) // per_state, 1 << 40)
    if max_states is not None:
        states = min(states, max_states + 1)
    mappable = address_space_left()
    if mappable is not None:
        states = min(states, mappable // 2 // per_state)
    return int(states)


def _dense_index(space: int) -> np.ndarray | None:
    """The dense visited index over a declared space of `space` codes (4 bytes each, all
    written), or None where the system cannot give it: the hash index then holds the
    visited codes, with the same states, order and verdicts."""
    try:
        return np.full(space, UNSEEN, dtype=np.int32)
    except MemoryError:
        return None


def _flat(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
    """Join a list of arrays and empty the list, freeing each part as soon as it is copied:
    the joined array never coexists with all of its parts (codes and parents are most of
    what a large exploration holds, and a plain concatenate would hold them twice)."""
    out = np.empty(sum(len(p) for p in parts), dtype=dtype)
    parts.reverse()
    at = 0
    while parts:
        part = parts.pop()
        out[at:at + len(part)] = part
        at += len(part)
        del part
    return out


def _sweep_facts(vm: VMachine, blocks: list[_Block], base: int, fired: Fired, cond_true: dict[int, set[int]],
                 shadowed_by: dict[int, dict[int, set[int]]], choice_sig: dict[int, dict[int, list[Any]]]) -> None:
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


def _groups(sigs: dict[int, list[Any]]) -> list[list[int]]:
    """Choice combos whose transitions were the same multiset of (source, successor, rule)."""
    by: dict[tuple[Any, ...], list[int]] = {}
    for ci, (count, h) in sorted(sigs.items()):
        by.setdefault((count, int(h)), []).append(ci)
    return list(by.values())


def _transition_checks(vm: VMachine, ex: VExploration, blocks: list[_Block], ranks: list[np.ndarray] | None,
                       nkeys: int, base: int, step_props: dict[str, dict[int, Callable[..., Any]]],
                       variants: dict[str, tuple[Callable[[Arrays], Any], int]], weights: dict[str, list[np.ndarray]],
                       spec: Any, nedges: int,
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
        def step(r: int) -> tuple[Any, ...]:
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
                    found(name, int(bad[0]), messages.FALSE_FOR_TRANSITION)
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
            if name == CHOICE_KEY:          # noted only where the edges are kept (nothing reads it else)
                if ranks is not None:
                    level_weights[name][ranks[bi]] = sum(len(a.labels) for a in vm.machine.actions[:ai]) + ci
                continue
            assert ranks is not None, "weighted measures keep every edge"
            level_weights[name][ranks[bi]] = _full(vm.edge_weights[name][ai](B, A, rule, *cargs), size, np.int64)
    spec_order = list(step_props)
    for _name, (_e, order, finding) in sorted(unreadable.items(), key=lambda kv: (kv[1][0], spec_order.index(kv[0]))):
        candidate("well_defined", order, finding)      # the first, in the scalar engine's order
    for name, (_, finding) in chosen.items():
        ex.findings.setdefault(name, finding)
    for name, w in level_weights.items():
        weights[name].append(w)


def _scalar_error(vm: VMachine, name: str, ai: int, ci: int, B: Arrays, A: Arrays, rule: np.ndarray, r: int) -> str:
    """The message of the scalar engine for a step property it cannot evaluate on this
    transition: its own evaluation, so both engines say exactly the same."""
    m = vm.machine
    act = m.actions[ai]
    try:
        m.step_invariants[name](_succ(vm, B, r), _succ(vm, A, r), act.name, _rule(vm, rule[r]), *act.step_args[ci])
    except EVAL_ERRORS as exc:
        return failure(m, f"property {name}", exc)
    raise AssertionError(f"the vector engine expected property {name} to read a missing choice here")


def _scalar_step_error(vm: VMachine, ai: int, ci: int, source: tuple[Any, ...]) -> str:
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


def _succ(vm: VMachine, A: Arrays, r: int) -> tuple[Any, ...]:
    return tuple(_raw(vm, j, A[j][r]) for j in range(len(A)))
