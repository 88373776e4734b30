"""The explored machine as a PRISM model (explicit states), for Storm or PRISM to cross-check.

One variable `s` numbers the explored states. Each choice of a policy in a state is one
command, labelled `[cK]` by its position K among the state's choices, so that a reward
structure can give it its expected reward for one step (the sum of the measure over its
edges, weighted). A state without choices (terminal, or a deadlock) gets a self-loop,
unlabelled and without reward: PRISM and Storm refuse deadlocks, and the loop changes no
probability of reaching a set and keeps a deadlock from ever reaching a terminal state.
Labels name sets of states: `terminal`, `deadlock`, each terminal value, each `probability`
property's target. Numbers are exact fractions (`3/10`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction

from haltproof.machine.text import fraction_json
from haltproof.properties.probability import MDP, Flags


def write_prism(mdp: MDP, name: str, labels: Mapping[str, Flags],
                rewards: Mapping[str, Callable[[int], Fraction]], header: str = "") -> str:
    """The PRISM text of `mdp`, with its labels (name -> which states) and reward structures
    (name -> each edge's reward)."""
    out: list[str] = []
    w = out.append
    for line in header.splitlines():
        w(f"// {line}")
    w("mdp")
    w("")
    w(f"module {ident(name)}")
    w(f"  s : [0..{max(mdp.n - 1, 0)}];")
    for s, choices in enumerate(mdp.choices):
        if not choices:
            w(f"  [] s={s} -> (s'={s});")
        for k, c in enumerate(choices):
            w(f"  [c{k}] s={s} -> " + " + ".join(f"{_num(p)} : (s'={t})" for t, p in c.dist) + ";")
    w("endmodule")
    w("")
    w("init " + _states(mdp.initial) + " endinit")
    w("")
    for label, members in labels.items():
        w(f'label "{label}" = {_states([s for s in range(mdp.n) if members[s]])};')
    for measure, reward in rewards.items():
        w("")
        w(f'rewards "{measure}"')
        items = [(s, k, sum((p * reward(e) for _, p, e in c.outcomes if p), Fraction(0)))
                 for s, choices in enumerate(mdp.choices) for k, c in enumerate(choices)]
        out += [f"  [c{k}] s={s} : {_num(total)};" for s, k, total in items if total]
        if not any(total for _, _, total in items):
            w("  true : 0;")               # PRISM and Storm refuse a reward structure with no item
        w("endrewards")
    return "\n".join(out) + "\n"


INT64_MAX = 2 ** 63 - 1      # Storm's PRISM parser reads no larger integer literal


def wide_numbers(mdp: MDP, rewards: Mapping[str, Callable[[int], Fraction]]) -> int:
    """How many of the probabilities and rewards `write_prism` writes have a numerator or a
    denominator past 64 bits (weights of more than 18 digits): exact in the model, but more than
    Storm's parser reads."""
    def wide(x: Fraction) -> bool:
        return max(abs(x.numerator), x.denominator) > INT64_MAX
    count = sum(wide(p) for choices in mdp.choices for c in choices for _, p in c.dist)
    for reward in rewards.values():
        count += sum(wide(sum((p * reward(e) for _, p, e in c.outcomes if p), Fraction(0)))
                     for choices in mdp.choices for c in choices)
    return count


def ident(text: str) -> str:
    """A PRISM identifier for a name (letters, digits, underscores; not starting with a digit)."""
    word = re.sub(r"\W", "_", text)
    return word if word and not word[0].isdigit() else f"m_{word}"


def _num(x: Fraction) -> str:
    return fraction_json(x)          # of any size: PRISM and Storm read long integers


def _states(members: Sequence[int]) -> str:
    """The states as one expression: a run of three or more consecutive states as a range
    (`(s>=4 & s<=9)`), so that a label has one term per run, not per state."""
    if not len(members):
        return "false"
    terms: list[str] = []
    start = prev = int(members[0])
    for s in [*map(int, members[1:]), None]:
        if s is not None and s == prev + 1:
            prev = s
            continue
        if prev - start >= 2:
            terms.append(f"(s>={start} & s<={prev})")
        else:
            terms += [f"s={k}" for k in range(start, prev + 1)]
        if s is not None:
            start = prev = s
    return " | ".join(terms)
