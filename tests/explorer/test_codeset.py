"""CodeIndex (explorer/codeset.py), the hashed index of visited state codes, against a
Python dict doing the same BFS discovery step one code at a time: which codes are new,
their first positions, the indices they get (in first-occurrence order, not sorted order),
and every candidate's index; plus the table's own invariants (every stored code reachable
from its home slot, load, memory) on growth and on codes built to collide."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from haltproof.explorer.codeset import EMPTY, MAX_LOAD, MIN_CAPACITY, Added, CodeIndex, _mix

TOP = 2 ** 62


class DictIndex:
    """The reference: a dict, one code at a time."""

    def __init__(self) -> None:
        self.d: dict[int, int] = {}

    def add_new(self, codes: list[int], first_index: int) -> tuple[list[int], list[int]]:
        first, k = [], first_index
        for pos, code in enumerate(codes):
            if code not in self.d:
                self.d[code] = k
                first.append(pos)
                k += 1
        return first, [self.d[code] for code in codes]

    def get(self, codes: list[int]) -> list[int]:
        return [self.d.get(code, -1) for code in codes]


def check_batch(ix: CodeIndex, ref: DictIndex, codes: list[int] | np.ndarray, first_index: int) -> Added:
    codes = [int(c) for c in codes]
    got = ix.add_new(np.array(codes, dtype=np.int64), first_index)
    first, index = ref.add_new(codes, first_index)
    assert got.first.dtype == np.int64 and got.index.dtype == np.int32
    assert got.first.tolist() == first
    assert got.index.tolist() == index
    assert len(ix) == len(ref.d)
    return got


def check_table(ix: CodeIndex, ref: DictIndex) -> None:
    """Every stored code is where a lookup finds it, load and memory are as documented."""
    keys = ix._keys
    used = np.flatnonzero(keys != EMPTY)
    assert len(used) == len(ix) == len(ref.d)
    assert sorted(keys[used].tolist()) == sorted(ref.d)
    mask = ix.capacity - 1
    dist = (used - ix._home(keys[used])) & mask
    # linear probing's invariant: the slots from a code's home to its own are all taken,
    # i.e. its home comes after the last free slot before it (cyclically)
    at = np.arange(ix.capacity)
    free = np.flatnonzero(keys == EMPTY)
    last_free = np.maximum.accumulate(np.where(keys == EMPTY, at, free[-1] - ix.capacity))
    assert (dist < (at - last_free)[used]).all()
    assert ix.capacity & mask == 0 and ix.capacity >= MIN_CAPACITY
    assert len(ix) <= MAX_LOAD * ix.capacity
    assert ix.nbytes == 12 * ix.capacity
    codes = list(ref.d)
    assert ix.get(np.array(codes, dtype=np.int64)).tolist() == ref.get(codes)


def displacement(ix: CodeIndex) -> np.ndarray:
    used = np.flatnonzero(ix._keys != EMPTY)
    return (used - ix._home(ix._keys[used])) & (ix.capacity - 1)


# -- the order of discovery ------------------------------------------------------------

@pytest.mark.verdict      # fast: in explorer/codeset.py's per-mutant selection
def test_indices_follow_first_occurrence_not_sorted_order():
    ix = CodeIndex()
    got = ix.add_new(np.array([90, 30, 90, 10, 30, 70]), 5)
    assert got.first.tolist() == [0, 1, 3, 5]
    assert got.index.tolist() == [5, 6, 5, 7, 6, 8]       # 90 -> 5, 30 -> 6, 10 -> 7, 70 -> 8
    assert ix.get(np.array([10, 30, 70, 90, 20])).tolist() == [7, 6, 8, 5, -1]


def test_known_codes_keep_their_index_and_only_new_ones_are_numbered():
    ix = CodeIndex()
    ix.add_new(np.array([4, 8]), 0)
    got = ix.add_new(np.array([8, 15, 4, 16, 15, 23, 8]), 2)
    assert got.first.tolist() == [1, 3, 5]
    assert got.index.tolist() == [1, 2, 0, 3, 2, 4, 1]
    assert len(ix) == 5


@pytest.mark.verdict      # fast: in explorer/codeset.py's per-mutant selection
def test_the_first_occurrence_wins_even_when_a_later_copy_collides_first():
    # many distinct codes share one home slot, each repeated: whichever copy wins the
    # write race, the index goes by the earliest position
    ix = CodeIndex()
    homes = ix._home(np.arange(200_000, dtype=np.int64))
    same = np.flatnonzero(homes == homes[0])[:7]
    assert len(same) == 7
    batch = np.concatenate([same[::-1], same, same[::2], same[::-1]])
    ref = DictIndex()
    check_batch(ix, ref, batch, 100)
    check_table(ix, ref)


# -- against a dict ---------------------------------------------------------------------

def run_bfs(batches: list[list[int]], offset: int = 0, ix: CodeIndex | None = None) -> CodeIndex:
    ix = ix if ix is not None else CodeIndex()
    ref = DictIndex()
    for batch in batches:
        check_batch(ix, ref, batch, len(ref.d) + offset)
        absent = [c + 1 for c in batch if c + 1 not in ref.d and c + 1 < 2 ** 63]
        assert ix.get(np.array(batch + absent, dtype=np.int64)).tolist() == ref.get(batch + absent)
    check_table(ix, ref)
    return ix


small_codes = st.integers(0, 300)
wide_codes = st.one_of(st.integers(0, 300), st.integers(0, TOP - 1),
                       st.integers(0, 2 ** 10).map(lambda k: k << 40),
                       st.integers(TOP - 500, TOP - 1))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(small_codes, max_size=120), max_size=12), st.integers(0, 1000))
def test_random_batches_with_repeats_match_a_dict(batches, offset):
    run_bfs(batches, offset)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(wide_codes, max_size=80), max_size=10))
def test_random_wide_codes_match_a_dict(batches):
    run_bfs(batches)


def test_growth_across_many_rehashes_matches_a_dict():
    rng = np.random.default_rng(7)
    ix, ref = CodeIndex(), DictIndex()
    capacities = [ix.capacity]
    while len(ref.d) < 150_000:
        size = int(rng.integers(1, 8 + len(ref.d) // 3))   # small next to the table: one doubling at a time
        batch = rng.integers(0, 600_000, size)              # repeats inside and across batches
        check_batch(ix, ref, batch, len(ref.d))
        if ix.capacity != capacities[-1]:
            capacities.append(ix.capacity)
    assert capacities == [MIN_CAPACITY << k for k in range(len(capacities))]
    assert len(capacities) >= 15                            # 16 -> 2^18 or more
    check_table(ix, ref)


@pytest.mark.verdict      # fast: in explorer/codeset.py's per-mutant selection
def test_one_batch_that_grows_the_table_many_times_keeps_earlier_codes():
    rng = np.random.default_rng(3)
    ix, ref = CodeIndex(), DictIndex()
    check_batch(ix, ref, rng.integers(0, 1000, 40), 0)
    cap = ix.capacity
    old = list(ref.d)
    batch = np.concatenate([old, rng.integers(0, 2 ** 40, 50_000), old[::-1]])
    rng.shuffle(batch)
    check_batch(ix, ref, batch, len(ref.d))
    assert ix.capacity >= cap * 2 ** 10
    check_table(ix, ref)


def test_a_batch_that_just_fits_does_not_grow():
    ix = CodeIndex(expected=1000)
    cap = ix.capacity
    assert cap == 2048
    ref = DictIndex()
    check_batch(ix, ref, np.arange(1024).repeat(3), 0)   # 3072 candidates, 1024 new: fits
    assert ix.capacity == cap
    check_batch(ix, ref, [5000], len(ref.d))             # one more does not
    assert ix.capacity == 2 * cap
    check_table(ix, ref)


@pytest.mark.verdict      # fast: in explorer/codeset.py's per-mutant selection
def test_presizing_avoids_rehashes():
    ix = CodeIndex(expected=100_000)
    cap = ix.capacity
    ix.add_new(np.arange(100_000) * 7919, 0)
    assert ix.capacity == cap and len(ix) == 100_000


# -- structured and extreme codes -------------------------------------------------------

STRUCTURED = {
    "sequential": np.arange(1 << 16),
    "multiples of 2^20": np.arange(1 << 16) << 20,
    "multiples of 2^40": np.arange(1 << 16) << 40,
    "multiples of 2^36": np.arange(1 << 16) << 36,
    "multiples of 2^46": np.arange(1 << 16) << 46,
    "mixed radix 7 x 41 x 41 x 9": (np.arange(7)[:, None, None, None] * (41 * 41 * 9)
                                    + np.arange(41)[None, :, None, None] * (41 * 9)
                                    + np.arange(41)[None, None, :, None] * 9
                                    + np.arange(9)[None, None, None, :]).ravel(),
    "digits at bit 10 and 40": ((np.arange(256)[:, None] << 40) + (np.arange(256)[None, :] << 10)).ravel(),
    "digits at bit 0, 21 and 42": ((np.arange(64)[:, None, None] << 42) + (np.arange(32)[None, :, None] << 21)
                                   + np.arange(32)[None, None, :]).ravel(),
    "just below 2^62": TOP - 1 - np.arange(1 << 16),
    "just below 2^63": np.int64(2 ** 63 - 1) - np.arange(1 << 12),
}


@pytest.mark.parametrize("name", list(STRUCTURED))
def test_structured_codes_spread_and_match_a_dict(name):
    codes = STRUCTURED[name].astype(np.int64)
    rng = np.random.default_rng(11)
    order = rng.permutation(len(codes))
    batches = [codes[order[i:i + 5000]] for i in range(0, len(codes), 5000)]
    ix, ref = CodeIndex(), DictIndex()
    for k, batch in enumerate(batches):
        # each batch twice, the second copy reversed: repeats inside and across batches
        check_batch(ix, ref, np.concatenate([batch, batch[::-1]]), len(ref.d))
        if k:
            check_batch(ix, ref, batches[k - 1], len(ref.d))
    check_table(ix, ref)
    # linear probing at load <= 1/2 with a good mix: about half a slot on average and a
    # short worst case; a weak mix (e.g. the low bits of the code) piles these codes up
    d = displacement(ix)
    assert d.mean() < 1.0, d.mean()
    assert d.max() < 100, d.max()


def test_codes_at_the_ends_of_the_range():
    ix, ref = CodeIndex(), DictIndex()
    check_batch(ix, ref, [0, TOP - 1, TOP - 2, 0, TOP - 1, 1, 2 ** 63 - 1], 0)
    check_batch(ix, ref, [2 ** 63 - 1, TOP - 3, 0, TOP - 2], len(ref.d))
    check_table(ix, ref)


def test_one_code_repeated_ten_thousand_times():
    ix = CodeIndex()
    code = TOP - 12345
    got = ix.add_new(np.full(10_000, code, dtype=np.int64), 42)
    assert got.first.tolist() == [0]
    assert (got.index == 42).all() and len(got.index) == 10_000
    assert len(ix) == 1 and ix.capacity == MIN_CAPACITY
    again = ix.add_new(np.full(10_000, code, dtype=np.int64), 43)
    assert again.first.tolist() == [] and (again.index == 42).all()
    assert ix.get(np.full(5, code)).tolist() == [42] * 5


def test_codes_crowding_the_end_of_the_table_wrap_around_on_growth():
    # codes whose mix has all top bits set have their home in the last slot at every
    # capacity: their run wraps past the end, in the table and in every rehash
    rng = np.random.default_rng(5)
    cand = rng.integers(0, TOP, 2_000_000)
    crowd = cand[(_mix(cand) >> np.uint64(64 - 12)) == 0xFFF][:30]
    assert len(crowd) == 30
    ix, ref = CodeIndex(), DictIndex()
    check_batch(ix, ref, crowd[:10], 0)
    assert ix._keys[0] != EMPTY                          # the run has wrapped
    check_table(ix, ref)
    for k in range(10, 30, 4):
        filler = rng.integers(0, TOP, 3 * k)
        check_batch(ix, ref, np.concatenate([crowd[k:k + 4], filler, crowd[:k]]), len(ref.d))
        check_table(ix, ref)
    assert ix.capacity >= 256


@pytest.mark.verdict      # fast: in explorer/codeset.py's per-mutant selection
def test_growth_with_runs_across_rehash_chunks(monkeypatch):
    # small rehash ranges, so that runs of codes straddle them when the table is moved
    import haltproof.explorer.codeset as codeset
    monkeypatch.setattr(codeset, "_REHASH_CHUNK", 64)

    def straddles(ix: CodeIndex) -> bool:
        used = np.flatnonzero(ix._keys != EMPTY)
        home = ix._home(ix._keys[used])
        return bool((home // 64 != used // 64).any())

    rng = np.random.default_rng(9)
    ix, ref = CodeIndex(), DictIndex()
    moved = 0
    for _ in range(80):
        before, crossing = ix.capacity, straddles(ix)
        check_batch(ix, ref, rng.integers(0, 20_000, 150), len(ref.d))
        moved += ix.capacity > before and crossing
    check_table(ix, ref)
    assert moved >= 3


# -- empty and invalid input ------------------------------------------------------------

def test_empty_batches():
    ix = CodeIndex()
    for empty in (np.zeros(0, dtype=np.int64), [], np.zeros(0, dtype=np.int32)):
        got = ix.add_new(empty, 0)
        assert got.first.dtype == np.int64 and got.first.shape == (0,)
        assert got.index.dtype == np.int32 and got.index.shape == (0,)
        assert ix.get(empty).dtype == np.int32 and ix.get(empty).shape == (0,)
    ix.add_new(np.array([3, 1, 3]), 0)
    assert ix.add_new([], 2).first.shape == (0,) and len(ix) == 2
    assert ix.get([]).shape == (0,)


def test_get_on_an_empty_index():
    assert CodeIndex().get(np.array([0, 5, 5, TOP - 1])).tolist() == [-1] * 4


def test_other_integer_dtypes_and_lists():
    ix = CodeIndex()
    assert ix.add_new(np.array([7, 3, 7], dtype=np.int32), 0).index.tolist() == [0, 1, 0]
    assert ix.add_new(np.array([3, 9], dtype=np.uint64), 2).index.tolist() == [1, 2]
    assert ix.add_new([9, 11], 3).index.tolist() == [2, 3]
    assert ix.get(np.array([11, 7], dtype=np.uint16)).tolist() == [3, 0]


def test_invalid_input_is_refused_and_leaves_the_index_unchanged():
    ix = CodeIndex()
    ix.add_new(np.array([1, 2]), 0)
    with pytest.raises(ValueError):
        ix.add_new(np.array([4, -1]), 2)                 # -1 would look like a free slot
    with pytest.raises(ValueError):
        ix.get(np.array([-5]))
    with pytest.raises(ValueError):
        ix.add_new(np.array([2 ** 63], dtype=np.uint64), 2)
    with pytest.raises(ValueError):
        ix.add_new(np.array([[1, 2]]), 2)
    with pytest.raises(TypeError):
        ix.add_new(np.array([1.0, 2.0]), 2)
    with pytest.raises(ValueError):
        ix.add_new(np.array([5]), -1)
    with pytest.raises(OverflowError):                   # 3 new codes from 2^31 - 2: the last overflows
        ix.add_new(np.array([5, 6, 5, 1, 7]), 2 ** 31 - 2)
    assert len(ix) == 2 and ix.get(np.array([1, 2, 4, 5, 6, 7])).tolist() == [0, 1, -1, -1, -1, -1]
    got = ix.add_new(np.array([5, 6, 5, 1]), 2 ** 31 - 2)  # exactly fits
    assert got.index.tolist() == [2 ** 31 - 2, 2 ** 31 - 1, 2 ** 31 - 2, 0]


# -- memory -----------------------------------------------------------------------------

@pytest.mark.verdict      # fast: in explorer/codeset.py's per-mutant selection
def test_memory_per_code_stays_within_the_documented_bound():
    ix = CodeIndex()
    rng = np.random.default_rng(2)
    worst = 0.0
    for _ in range(60):
        ix.add_new(rng.integers(0, TOP, 3000), len(ix))
        worst = max(worst, ix.nbytes / len(ix))
        assert len(ix) / ix.capacity > MAX_LOAD / 2      # grown by doubling, never further
    assert worst <= 2 * 12 / MAX_LOAD
    assert CodeIndex(expected=1_000_000).nbytes == 12 * 2 ** 21


# -- CodeBitmap and first_occurrences: the visited set once a forward graph's edges are dropped

def test_the_bitmap_holds_exactly_the_codes_added():
    from haltproof.explorer.codeset import CodeBitmap
    bm = CodeBitmap(1001)
    assert bm.nbytes == CodeBitmap.bytes_for(1001) == 126
    added = np.array([0, 7, 8, 9, 9, 9, 500, 999, 1000, 8], dtype=np.int32)     # repeats, one byte twice
    bm.add(added)
    everything = np.arange(1001)
    assert np.flatnonzero(bm.contains(everything)).tolist() == [0, 7, 8, 9, 500, 999, 1000]
    assert bm.contains(np.array([9, 10], dtype=np.int64)).tolist() == [True, False]
    with pytest.raises(ValueError, match="space must be positive, got 0"):
        CodeBitmap(0)


def _first_occurrences_reference(codes, keys):
    best: dict[int, int] = {}
    for c, k in zip(codes, keys):
        if c not in best or k < best[c]:
            best[c] = k
    pairs = sorted((k, c) for c, k in best.items())
    return [c for _, c in pairs], [k for k, _ in pairs]


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.lists(st.integers(0, 50), max_size=200), st.sampled_from([51, 2 ** 40, 2 ** 62]), st.randoms())
def test_first_occurrences_keep_each_code_once_with_its_smallest_key(codes, space, rnd):
    """Against a dict; keys shuffled (distinct), so the first occurrence is by key, not by
    position; the widest spaces take the lexsort fallback (code and key past 63 bits)."""
    from haltproof.explorer.codeset import first_occurrences
    keys = list(range(3 * len(codes)))
    rnd.shuffle(keys)
    keys = keys[:len(codes)]
    c, k = first_occurrences(np.array(codes, dtype=np.int64), np.array(keys, dtype=np.int64), space,
                             3 * len(codes) + 1)
    assert (c.tolist(), k.tolist()) == _first_occurrences_reference(codes, keys)
    assert c.dtype == k.dtype == np.int64
