"""Mutants of explorer/codeset.py that the rest of the verdict selection let through (issue 18):
codes a rehash must move (a home in slot 0, a run wrapping past the table's end), the
doubling at exactly half full, indices that would overflow int32, unsigned codes past 2^63,
the bitmap's size, and `first_occurrences` split into pieces. Each test was seen failing with
its mutation applied (docs/explanation/mutation-testing.md)."""

from __future__ import annotations

import numpy as np
import pytest

from haltproof.explorer.codeset import INDEX_LIMIT, MIN_CAPACITY, CodeBitmap, CodeIndex, _mix, first_occurrences
from test_codeset import DictIndex, _first_occurrences_reference, check_batch, check_table

pytestmark = pytest.mark.verdict


def homed(top_bits: int, value: int, count: int) -> list[int]:
    """The first `count` codes whose mix has `value` in its top `top_bits` bits: their home slot is
    `value` in a table of 2^top_bits slots."""
    cand = np.arange(200_000, dtype=np.int64)
    return cand[(_mix(cand) >> np.uint64(64 - top_bits)) == value][:count].tolist()


def test_a_rehash_moves_the_codes_whose_home_is_the_first_slot():
    ix, ref = CodeIndex(), DictIndex()
    check_batch(ix, ref, homed(4, 0, 4) + homed(4, 9, 4), 0)      # 8 codes: the 16 slots half full
    assert ix.capacity == MIN_CAPACITY
    check_batch(ix, ref, homed(4, 5, 1), 8)                        # one more: doubled, every code moved
    assert ix.capacity == 2 * MIN_CAPACITY
    check_table(ix, ref)


def test_a_rehash_moves_a_run_that_wraps_past_the_end_of_the_table():
    """Codes homed in the last slot at 16 and at 32 slots: in the doubled table all but one of
    them are pushed past its end and wrap into its first free slots."""
    ix, ref = CodeIndex(), DictIndex()
    crowd = homed(5, 31, 8)
    check_batch(ix, ref, crowd, 0)
    check_batch(ix, ref, homed(5, 3, 1), 8)
    assert ix.capacity == 32
    assert sorted(ix._keys[:7].tolist() + [int(ix._keys[31])]) == sorted(crowd)
    check_table(ix, ref)


def test_the_table_doubles_only_past_half_full():
    ix = CodeIndex()
    ix.add_new(np.arange(16), 0)        # 16 codes: 32 slots are exactly half full
    assert (len(ix), ix.capacity) == (16, 32)
    assert CodeIndex(expected=16).capacity == 32


def test_indices_past_int32_are_refused_not_wrapped():
    ix = CodeIndex()
    with pytest.raises(OverflowError) as err:
        ix.add_new(np.array([5, 6, 7]), INDEX_LIMIT - 1)
    assert str(err.value) == "indices 2147483646..2147483648 do not fit in int32"
    assert len(ix) == 0


def test_unsigned_codes_from_2_63_are_refused():
    with pytest.raises(ValueError) as err:
        CodeIndex().add_new(np.array([1, 2 ** 63], dtype=np.uint64), 0)
    assert str(err.value) == "codes must be below 2^63"


def test_a_lookup_in_an_empty_index_gives_int32_misses():
    got = CodeIndex().get(np.array([5, 0]))
    assert got.dtype == np.int32 and got.tolist() == [-1, -1]


def test_the_bitmap_takes_one_bit_per_code_from_a_space_of_one():
    bm = CodeBitmap(1)
    bm.add(np.array([0]))
    assert bm.contains(np.array([0])).tolist() == [True]
    assert [CodeBitmap(n).nbytes for n in (1, 8, 9, 16, 17)] == [1, 1, 2, 2, 3]


@pytest.mark.parametrize("pieces", [1, 2, 3])
def test_first_occurrences_in_pieces_are_those_of_one_piece(pieces):
    """Space 5: the largest code, 4, takes all three code bits (space - 1 = 4 is a power of two)."""
    codes = [4, 3, 4, 0, 2, 3, 1, 4, 0, 2, 3]
    keys = [9, 4, 2, 17, 12, 1, 20, 6, 3, 8, 14]
    c, k = first_occurrences(np.array(codes, dtype=np.int64), np.array(keys, dtype=np.int64), 5, 21,
                             pieces, lambda f, xs: [f(x) for x in xs])
    assert (c.tolist(), k.tolist()) == _first_occurrences_reference(codes, keys) == ([3, 4, 0, 2, 1],
                                                                                     [1, 2, 3, 8, 20])


def test_first_occurrences_of_codes_and_keys_too_wide_for_one_int64():
    """space 2^62 and 4 keys need 62 + 2 bits: the lexsort fallback. Each code once, with its
    smallest key, ordered by that key."""
    codes = np.array([5, 3, 5, 3, 7, 2**62 - 1], dtype=np.int64)
    keys = np.array([4, 1, 0, 3, 2, 5], dtype=np.int64)
    c, k = first_occurrences(codes, keys, 2**62, 6)
    assert (c.tolist(), k.tolist()) == ([5, 3, 7, 2**62 - 1], [0, 1, 2, 5])
    assert (c.dtype, k.dtype) == (np.int64, np.int64)


@pytest.mark.parametrize("space", [5, 2**62])
def test_first_occurrences_of_a_single_candidate_is_that_candidate(space):
    """A level of one candidate (the run's first level): the first code after the sort is
    always a head, also where the array has no second entry; space 2^62 with 6 keys takes the
    lexsort fallback, space 5 the packed sort."""
    c, k = first_occurrences(np.array([3], dtype=np.int64), np.array([4], dtype=np.int64), space, 6)
    assert (c.tolist(), k.tolist()) == ([3], [4])
    assert (c.dtype, k.dtype) == (np.int64, np.int64)


def test_the_bitmap_holds_exactly_the_codes_added_each_in_its_own_byte_and_bit():
    """Codes in several bytes (8 codes a byte), first and last bits of a byte, a repeat."""
    bm = CodeBitmap(64)
    bm.add(np.array([8, 20, 63, 7, 20], dtype=np.int64))
    assert np.flatnonzero(bm.contains(np.arange(64))).tolist() == [7, 8, 20, 63]


@pytest.mark.parametrize("pieces", [2, 3])
def test_first_occurrences_of_a_level_past_4096_candidates_in_pieces_are_those_of_one_piece(pieces):
    """Past 4096 candidates the piece boundaries come from every (len // 4096)-th value."""
    rng = np.random.default_rng(7)
    codes = rng.integers(0, 3000, size=9000).astype(np.int64)
    keys = rng.permutation(9000).astype(np.int64)
    one = first_occurrences(codes, keys, 3000, 9000)
    split = first_occurrences(codes, keys, 3000, 9000, pieces, lambda f, xs: [f(x) for x in xs])
    assert [a.tolist() for a in split] == [a.tolist() for a in one] == list(
        _first_occurrences_reference(codes.tolist(), keys.tolist()))


def test_an_empty_batch_adds_nothing_and_gives_integer_positions_and_indices():
    """`first` indexes the batch (codes[first], parent[first]): int64 even when empty."""
    added = CodeIndex().add_new(np.zeros(0, dtype=np.int64), 3)
    assert (added.first.dtype, added.index.dtype) == (np.int64, np.int32)
    assert (added.first.tolist(), added.index.tolist()) == ([], [])
