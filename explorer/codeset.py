"""Compact sets of visited state codes, for product spaces too large for a dense array.

The vectorized engine names each visited state by its position in BFS order and must map
a successor's mixed-radix code back to that position. A dense `int32` array over the whole
product space does it with one gather, but costs 4 bytes per *possible* state, so it is only
usable up to about 2^25 codes. `CodeIndex` costs a fixed amount per *visited* state instead,
whatever the size of the space, and keeps the engine's batch-at-a-time style: every operation
works on a whole array of codes, with a Python loop only per probe round.

Once the engine stops keeping edges (a forward graph: every edge leads one level deeper) it
no longer asks a visited state's index, only whether a code was visited: `CodeBitmap` answers
that at one bit per *possible* code (16 MB for 2^27 codes), and `first_occurrences` picks a
level's new states in discovery order without any index at all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np

__all__ = ["Added", "CodeBitmap", "CodeIndex", "first_occurrences"]

EMPTY = -1                      # the key of a free slot: codes are non-negative
INDEX_LIMIT = 2 ** 31 - 1       # indices are int32

# Under linear probing a miss probes about (1 + 1/(1-load)^2)/2 slots (2.5 at load 0.5, 3.6
# at 0.6, 8.5 at 0.75) and every slot probed is one more gather over the codes still
# searching, with clusters (long runs) growing fast past 0.5. Memory per code is 12/load
# bytes and right after a doubling the load is just above MAX_LOAD/2: at 0.5 that is 48
# bytes per code at worst (40 at 0.6), still half of what a Python dict takes (~100). So the
# table doubles as soon as it would pass half full.
MAX_LOAD = 0.5
MIN_CAPACITY = 16

# The mix is a xorshift-multiply finalizer (as in splitmix64) read from the top bits, as
# in Fibonacci hashing. The first xorshift folds the high digits of a mixed-radix code
# into the low bits, the first product carries every low bit upward, the second xorshift
# brings the result down again and the top bits of the second product depend on all 64.
# Without the first step, codes differing only above bit 40 (k << 40) clustered to three
# times the probe length of random codes (tests/explorer/test_codeset.py checks such families).
_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xD6E8FEB86659FD93)
_S1 = np.uint64(31)
_S2 = np.uint64(29)

_REHASH_CHUNK = 1 << 16         # old slots moved per step: temporaries stay in L2 (fastest)
_SCAN_BUDGET = 4096             # slots read per probe round once few codes are left (see _scan)
_MAX_WINDOW = 64
_STEPS = np.arange(_MAX_WINDOW, dtype=np.int64)
_RANKS = np.arange(_MAX_WINDOW, 0, -1, dtype=np.uint8)


@dataclass(frozen=True)
class Added:
    """What `CodeIndex.add_new` found in a batch of candidate codes."""

    first: np.ndarray
    """int64 positions in the batch of the first occurrence of each code that was new,
    increasing; the k-th of them got index first_index + k. `codes[first]` are the new
    codes in discovery order and `parent[first]` (of the same batch) their BFS parents."""
    index: np.ndarray
    """int32 index of every candidate after the insertion (what `get` would now return),
    so the caller needs no second lookup for its edges."""


class CodeIndex:
    """A hash map from state codes (int64, 0 <= code < 2^63) to state indices (int32).

    Open addressing with linear probing over two parallel numpy arrays, keys (int64,
    EMPTY = -1 for a free slot) and values (int32), of a power-of-two capacity that doubles
    whenever the load would pass MAX_LOAD = 0.5. A slot is 12 bytes and the load stays in
    (0.25, 0.5], so a stored code costs 24 to 48 bytes, i.e. at most 2 x (8 + 4) / 0.5; a
    rehash briefly holds the old table too (72 bytes per code at that moment). Codes are
    never removed. Every operation takes a whole batch of codes.
    """

    def __init__(self, expected: int = 0) -> None:
        """An empty index sized so that `expected` codes fit without a rehash."""
        capacity = MIN_CAPACITY
        while expected > MAX_LOAD * capacity:
            capacity *= 2
        self._alloc(capacity)
        self._n = 0

    def _alloc(self, capacity: int) -> None:
        self._keys = np.full(capacity, EMPTY, dtype=np.int64)
        self._vals = np.empty(capacity, dtype=np.int32)     # read only where a key is stored
        self._mask = capacity - 1
        self._shift = np.uint64(64 - (capacity.bit_length() - 1))

    def __len__(self) -> int:
        return self._n

    @property
    def capacity(self) -> int:
        """Number of slots (a power of two)."""
        return len(self._keys)

    @property
    def nbytes(self) -> int:
        """Bytes held by the table's arrays."""
        return self._keys.nbytes + self._vals.nbytes

    def get(self, codes: np.ndarray) -> np.ndarray:
        """The int32 index of each code, -1 where the code is absent. Codes may repeat."""
        c = _as_codes(codes)
        if self._n == 0 or not len(c):
            return np.full(len(c), -1, dtype=np.int32)
        slot, found = self._probe(c)
        return np.where(found, self._vals.take(slot), np.int32(-1))

    def add_new(self, codes: np.ndarray, first_index: int) -> Added:
        """Insert the codes of a batch that are not yet present, numbering them from
        `first_index` in the order of their first occurrence in the batch.

        This is one BFS level's discovery step: `codes` are the successors in edge order,
        with repeats, some already known. The result says where each new code first occurs
        (hence its parent) and every candidate's index (hence every edge's destination).
        """
        c = _as_codes(codes)
        if first_index < 0:
            raise ValueError(f"first_index must be non-negative, got {first_index}")
        if len(c) > INDEX_LIMIT:
            raise ValueError(f"a batch holds at most {INDEX_LIMIT} codes, got {len(c)}")
        if not len(c):
            return Added(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int32))
        slot, found = self._probe(c)
        absent = np.flatnonzero(~found)            # increasing batch positions
        if len(absent):
            ac = c[absent]
            start = slot[absent]                   # the first free slot on each one's probe path
            # count the distinct new codes only when the cheap bound (every absent
            # candidate distinct) would need a rehash or overflow the int32 indices
            fresh = len(absent)
            if self._n + fresh > MAX_LOAD * self.capacity or first_index + fresh - 1 > INDEX_LIMIT:
                fresh = len(np.unique(ac))
                if first_index + fresh - 1 > INDEX_LIMIT:
                    raise OverflowError(f"indices {first_index}..{first_index + fresh - 1} "
                                        f"do not fit in int32")
                if self._n + fresh > MAX_LOAD * self.capacity:
                    self._grow(self._n + fresh)
                    slot, found = self._probe(c)        # every slot moved
                    start = slot[absent]
            aslot = self._claim(ac, start)
            slot[absent] = aslot
            # equal codes share one slot: its smallest batch position is the first occurrence
            vals, pos = self._vals, absent.astype(np.int32)
            vals[aslot] = INDEX_LIMIT
            np.minimum.at(vals, aslot, pos)
            lead = np.flatnonzero(vals.take(aslot) == pos)
            first = absent.take(lead)
            vals[aslot.take(lead)] = np.arange(first_index, first_index + len(first), dtype=np.int32)
            self._n += len(first)
        else:
            first = absent
        return Added(first.astype(np.int64, copy=False), self._vals.take(slot))

    def _home(self, c: np.ndarray) -> np.ndarray:
        """Each code's home slot: the top bits of its mix."""
        h = _mix(c)
        h >>= self._shift
        return h.view(np.int64)

    def _probe(self, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each code, the slot holding it (found) or else the first free slot on its
        probe path (not found), where it would be inserted."""
        keys, mask = self._keys, self._mask
        slot = self._home(c)
        k = keys.take(slot)
        found = k == c
        stop = k == EMPTY
        stop |= found
        go = np.flatnonzero(~stop)                  # most codes are settled at home
        if len(go):
            pc, p = c.take(go), slot.take(go)
            while True:
                p += 1
                p &= mask
                at, ended, hit = self._scan(p, pc)
                slot[go] = at                       # final for the ended, overwritten for the rest
                found[go] = hit
                more = np.flatnonzero(~ended)
                if not len(more):
                    break
                go, pc, p = go.take(more), pc.take(more), at.take(more)
        return slot, found

    def _scan(self, p: np.ndarray, pc: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Look at a window of slots from each p for the first one that holds its code or is
        free. Returns that slot where there is one (else the window's last slot, to go on
        from the next), whether there is one, and whether it holds the code.

        The codes still probing after the first rounds are what make clusters costly: a
        round costs a dozen numpy calls however few codes are left, so the window widens
        as they get fewer (about _SCAN_BUDGET slots read per round, at most _MAX_WINDOW),
        and the longest probe path takes a handful of rounds rather than one per slot.
        """
        w = min(_MAX_WINDOW, max(1, _SCAN_BUDGET // len(p)))
        if w == 1:
            k = self._keys.take(p)
            hit = k == pc
            ended = k == EMPTY
            ended |= hit
            return p, ended, hit
        win = _STEPS[:w, None] + p                  # (w, m): the long axis innermost
        win &= self._mask
        k = self._keys.take(win)
        stop = k == pc
        stop |= k == EMPTY
        rank = stop.view(np.uint8) * _RANKS[-w:, None]  # w - offset at a stop, else 0
        best = rank.max(axis=0)
        ended = best > 0
        np.maximum(best, 1, out=best)
        at = p + (w - best)
        at &= self._mask
        hit = self._keys.take(at) == pc
        hit &= ended
        return at, ended, hit

    def _claim(self, c: np.ndarray, start: np.ndarray) -> np.ndarray:
        """Insert codes known to be absent (repeats allowed), each starting from the first
        free slot on its probe path; return each one's slot. Values are left to the caller.

        Colliding writers to one free slot are settled by writing them all and reading the
        slot back: whoever's code is there won, and so did every copy of the same code;
        the others lost to a different code and probe on from the next slot. Copies of one
        code probe in lockstep (same path, same table, same outcomes), so they all end on
        the same slot.
        """
        keys, mask = self._keys, self._mask
        out = start.copy()
        keys[start] = c                              # the start slots are free: no need to look
        go = np.flatnonzero(keys.take(start) != c)
        pc, p = c.take(go), start.take(go)
        while len(go):
            p += 1
            p &= mask
            at, ended, hit = self._scan(p, pc)
            free = np.flatnonzero(ended ^ hit)       # ended on a free slot: try to take it
            if len(free):
                t, ct = at.take(free), pc.take(free)
                keys[t] = ct
                hit[free] = keys.take(t) == ct
            out[go] = at                             # final for the settled, overwritten for the rest
            more = np.flatnonzero(~hit)
            go, pc, p = go.take(more), pc.take(more), at.take(more)
        return out

    def _grow(self, need: int) -> None:
        """Double the capacity until `need` codes fit under MAX_LOAD, and move every code.

        No probing: a home slot is the top bits of a code's mix, so one more bit of capacity
        splits each old home in two and the order of homes is kept. The old table is taken a
        range of homes at a time, its codes sorted by new home (they are nearly sorted
        already: a code sits just after its home), and each is put where inserting them in
        that order would: at max(its home, the previous code's slot + 1). The codes pushed
        past the end wrap into the first free slots. Memory: both tables, plus temporaries
        for one range of _REHASH_CHUNK old slots.
        """
        capacity = self.capacity * 2
        while need > MAX_LOAD * capacity:
            capacity *= 2
        old_keys, old_vals, old_shift = self._keys, self._vals, self._shift
        old_cap = len(old_keys)
        self._alloc(capacity)
        keys, vals = self._keys, self._vals
        nxt = 0                                       # the first slot the next range may use
        spill_k, spill_v = [], []
        for lo in range(0, old_cap, _REHASH_CHUNK):
            hi = min(lo + _REHASH_CHUNK, old_cap)
            # the codes with a home in [lo, hi) lie between lo and the first free slot from hi
            tail = min(_run_length(old_keys, hi % old_cap), old_cap - (hi - lo))
            k = old_keys[lo:hi + tail]
            if hi + tail > old_cap:                   # the last run wraps to the start
                k = np.concatenate([k, old_keys[:hi + tail - old_cap]])
            at = np.flatnonzero(k != EMPTY)
            k = k.take(at)
            at += lo
            mix = _mix(k)
            old_home = mix >> old_shift
            mine = np.flatnonzero((old_home >= np.uint64(lo)) & (old_home < np.uint64(hi)))
            if not len(mine):
                continue
            home = mix.take(mine)
            home >>= self._shift
            order = np.argsort(home, kind="stable")
            mine = mine.take(order)
            home, k, at = home.take(order).view(np.int64), k.take(mine), at.take(mine)
            at &= old_cap - 1
            i = np.arange(len(home))
            slot = home - i
            np.maximum.accumulate(slot, out=slot)
            np.maximum(slot, nxt, out=slot)
            slot += i                                 # = max(home, previous slot + 1)
            nxt = int(slot[-1]) + 1
            fits = int(np.searchsorted(slot, capacity))
            keys[slot[:fits]] = k[:fits]
            vals[slot[:fits]] = old_vals.take(at[:fits])
            if fits < len(slot):
                spill_k.append(k[fits:])
                spill_v.append(old_vals.take(at[fits:]))
        if spill_k:
            k, v = np.concatenate(spill_k), np.concatenate(spill_v)
            span = 2 * len(k)
            while True:
                free = np.flatnonzero(keys[:span] == EMPTY)
                if len(free) >= len(k):
                    break
                span *= 2
            keys[free[:len(k)]] = k
            vals[free[:len(k)]] = v


def _mix(c: np.ndarray) -> np.ndarray:
    """The codes' 64-bit mix (see _M1): a fresh uint64 array."""
    x = c.view(np.uint64)
    h = x >> _S1
    h ^= x
    with np.errstate(over="ignore"):
        h *= _M1
        h ^= h >> _S2
        h *= _M2
    return h


def _run_length(keys: np.ndarray, start: int) -> int:
    """How many slots from `start` on (cyclically) are taken before the first free one."""
    n, width = len(keys), 64
    while True:
        at = np.arange(start, start + width)
        at &= n - 1
        free = np.flatnonzero(keys[at] == EMPTY)
        if len(free):
            return int(free[0])
        width *= 2


def _as_codes(codes: np.ndarray) -> np.ndarray:
    """The codes as a 1-D int64 array, refusing what could collide with EMPTY."""
    a = np.asarray(codes)
    if a.ndim != 1:
        raise ValueError(f"codes must be 1-D, got shape {a.shape}")
    if not len(a):
        return np.zeros(0, dtype=np.int64)
    if a.dtype.kind not in "iu":
        raise TypeError(f"codes must be integers, got {a.dtype}")
    if a.dtype.kind == "u" and int(a.max()) > np.iinfo(np.int64).max:
        raise ValueError("codes must be below 2^63")
    c = a.astype(np.int64, copy=False)
    if a.dtype.kind == "i" and int(c.min()) < 0:
        raise ValueError("codes must be non-negative")
    return c


class CodeBitmap:
    """The set of visited codes in [0, space) as one bit per code: membership without the
    states' indices, for the levels where nothing asks them (edges not kept)."""

    def __init__(self, space: int) -> None:
        if space <= 0:
            raise ValueError(f"space must be positive, got {space}")
        self.space = space
        self._bits = np.zeros((space + 7) >> 3, dtype=np.uint8)

    @staticmethod
    def bytes_for(space: int) -> int:
        """What a bitmap over `space` codes holds: checked against the memory limit first."""
        return (space + 7) >> 3

    @property
    def nbytes(self) -> int:
        return self._bits.nbytes

    def contains(self, codes: np.ndarray) -> np.ndarray:
        """Whether each code (0 <= code < space) is in the set, as a bool array."""
        c = np.asarray(codes)
        byte = self._bits.take(c >> 3)
        byte >>= (c & 7).astype(np.uint8)
        byte &= 1
        return byte.view(bool)

    def add(self, codes: np.ndarray) -> None:
        """Put the codes in the set (repeats allowed)."""
        c = np.asarray(codes)
        np.bitwise_or.at(self._bits, c >> 3, np.left_shift(np.uint8(1), (c & 7).astype(np.uint8)))


Mapper: TypeAlias = Callable[[Callable[[Any], Any], Sequence[Any]], list[Any]]
"""Runs a function over items, in order (`ThreadPoolExecutor.map` made a list): the workers."""


def first_occurrences(codes: np.ndarray, keys: np.ndarray, space: int, key_bound: int,
                      pieces: int = 1, run: Mapper | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each distinct code of `codes` (0 <= code < space) once, with the smallest of its
    `keys` (distinct ints, 0 <= key < key_bound), ordered by that key: a BFS level's new
    states in discovery order, when a key says where a candidate comes in that order.

    Two plain sorts of int64, code * 2^b + key and then key * 2^c + code: an order of
    magnitude faster than the stable argsort that `np.unique(return_index=True)` needs,
    which is the fallback when a code and a key do not fit 63 bits together.

    With `pieces` > 1 and `run` (threads: numpy sorts without the GIL) the first sort is
    split by ranges of codes (all copies of a code fall in one piece) and the second by
    ranges of keys; joining the pieces in range order gives exactly the one-piece result."""
    c, k = np.asarray(codes), np.asarray(keys)
    if len(c) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    kb, cb = max(1, (key_bound - 1).bit_length()), max(1, (space - 1).bit_length())
    if kb + cb > 63:
        return _first_occurrences_wide(c, k)
    v = c.astype(np.int64) << kb
    v |= k
    if pieces <= 1 or run is None:
        w = _heads(v, kb, cb, None, None)
        w.sort()
    else:
        sample = np.sort(v[::max(1, len(v) // 4096)])
        cuts = [int(sample[len(sample) * i // pieces]) >> kb << kb for i in range(1, pieces)]
        ranges = list(zip([None, *cuts], [*cuts, None]))
        w = np.concatenate(run(lambda r: _heads(v, kb, cb, *r), ranges))
        del v
        kcuts = [(key_bound * i // pieces) << cb for i in range(1, pieces)]
        ranges = list(zip([None, *kcuts], [*kcuts, None]))
        w = np.concatenate(run(lambda r: _sorted_range(w, *r), ranges))
    return w & ((1 << cb) - 1), w >> cb


def _within(v: np.ndarray, lo: int | None, hi: int | None) -> np.ndarray:
    """The values of v in [lo, hi) (None: unbounded), a copy."""
    if lo is None and hi is None:
        return v.copy()
    keep = v >= lo if lo is not None else v < hi
    if lo is not None and hi is not None:
        keep &= v < hi
    return v[keep]


def _heads(v: np.ndarray, kb: int, cb: int, lo: int | None, hi: int | None) -> np.ndarray:
    """Of the packed code * 2^kb + key values in [lo, hi): per code its smallest key,
    repacked as key * 2^cb + code (unsorted)."""
    v = _within(v, lo, hi)
    if not len(v):
        return v
    v.sort()
    code = v >> kb
    head = np.empty(len(v), dtype=bool)
    head[0] = True
    np.not_equal(code[1:], code[:-1], out=head[1:])
    del code
    v = v[head]
    w = v & ((1 << kb) - 1)
    w <<= cb
    v >>= kb
    w |= v
    return w


def _sorted_range(w: np.ndarray, lo: int | None, hi: int | None) -> np.ndarray:
    part = _within(w, lo, hi)
    part.sort()
    return part


def _first_occurrences_wide(c: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """first_occurrences for codes and keys too wide to pack into one int64."""
    order = np.lexsort((k, c))
    c, k = c[order], k[order]
    head = np.empty(len(c), dtype=bool)
    head[0] = True
    np.not_equal(c[1:], c[:-1], out=head[1:])
    c, k = c[head], k[head]
    order = np.argsort(k)
    return c[order].astype(np.int64), k[order].astype(np.int64)
