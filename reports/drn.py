"""The explored machine in Storm's explicit format (DRN), which Storm reads in linear time at
any size (the PRISM export's labels are one expression per label, which Storm's expression
evaluator cannot take past a few thousand states).

One `state` per explored state with its labels (`init` on the initial states), one `action`
per choice of a policy in it, named `cK` by its position K, with its expected reward for one
step per measure (`[r1, r2]`), then its successors with their exact probabilities (`3/10`).
A state without choices (terminal, or a deadlock) gets a self-loop without reward, as in the
PRISM export: Storm refuses a state with no action, and the loop changes no probability of
reaching a set and keeps a deadlock from ever reaching a terminal state.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from fractions import Fraction

import numpy as np

from haltproof.machine.text import fraction_json
from haltproof.properties.budget import ticking
from haltproof.properties.probability import Flags
from haltproof.properties.sparse import Sparse


def drn_lines(m: Sparse, labels: Mapping[str, Flags], rewards: Mapping[str, np.ndarray],
              header: str = "") -> Iterator[str]:
    """The DRN text of `m`, line by line: its labels (name -> which states) and, per measure,
    each explored edge's integer reward (`rewards`: name -> per-edge array)."""
    for line in header.splitlines():
        yield f"// {line}"
    yield "@type: MDP"
    yield "@parameters"
    yield ""
    names = list(rewards)
    yield "@reward_models"
    yield " ".join(names)
    yield "@nr_states"
    yield str(m.n)
    yield "@nr_choices"
    yield str(int(np.count_nonzero(~m.has_rows)) + m.rows)
    yield "@model"
    odds = [fraction_json(p) for p in m.kind_prob]
    per_row = [_row_rewards(m, rewards[name]) for name in names]
    zero = "[" + ", ".join("0" for _ in names) + "]" if names else ""
    marks = {name: np.asarray(members, dtype=bool) for name, members in labels.items()}
    init = np.zeros(m.n, dtype=bool)
    init[m.initial] = True
    row_start, edge_start = m.row_start, m.edge_start
    for s in ticking(range(m.n)):
        tags = (["init"] if init[s] else []) + [name for name, members in marks.items() if members[s]]
        yield f"state {s} " + " ".join(tags) if tags else f"state {s}"
        first, last = int(row_start[s]), int(row_start[s + 1])
        if first == last:
            yield f"\taction 0 {zero}".rstrip()
            yield f"\t\t{s} : 1"
        for r in range(first, last):
            reward = "[" + ", ".join(column[r] for column in per_row) + "]" if names else ""
            yield f"\taction c{r - first} {reward}".rstrip()
            lo, hi = int(edge_start[r]), int(edge_start[r + 1])
            dst = m.dst[lo:hi].tolist()
            if len(set(dst)) == len(dst):
                for t, k in zip(dst, m.edge_kind[lo:hi].tolist()):
                    yield f"\t\t{t} : {odds[k]}"
                continue
            merged: dict[int, Fraction] = {}       # two draws that lead to one state: one transition
            for t, k in zip(dst, m.edge_kind[lo:hi].tolist()):
                merged[t] = merged.get(t, Fraction(0)) + m.kind_prob[k]
            for t, p in merged.items():
                yield f"\t\t{t} : {fraction_json(p)}"


def _row_rewards(m: Sparse, per_edge: np.ndarray) -> list[str]:
    """Per row its exact expected reward for one step: the edges' common reward when they
    agree (the usual case, computed over arrays), else the weighted sum as a fraction."""
    w = np.asarray(per_edge, dtype=np.int64)[m.edge]
    starts = m.edge_start[:-1]
    if not len(w):
        return []
    low = np.minimum.reduceat(w, starts)
    high = np.maximum.reduceat(w, starts)
    out = [str(int(x)) for x in low]
    for r in np.flatnonzero(low != high):
        lo, hi = int(m.edge_start[r]), int(m.edge_start[r + 1])
        total = sum((m.kind_prob[int(m.edge_kind[e])] * int(w[e]) for e in range(lo, hi)), Fraction(0))
        out[r] = fraction_json(total)
    return out
