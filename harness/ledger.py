"""The observation ledger (seed S3): every token the model has been shown, by turn and tool.

Each dispatched tool call writes one row `(turn, tool, tokens, cumulative)`. The ledger
answers the two questions the budget gates ask: how much has the model seen in total
(`cumulative()`, read by BudgetGate) and how much of it came from one tool
(`per_tool(name)`, read by PerToolBudgetGate).

Tokens are counted by a replaceable counter. The default is the seed's deliberately
crude heuristic `len(text) // 4`; pass any `Callable[[str], int]` (a real tokenizer)
as `counter=` instead. The harness relies on two properties of a counter, which the
default has: it is deterministic, and it is monotone in the prefix (a prefix of a text
never counts more than the text). `clip_to_tokens` uses the second to cut an output
down to a token reservation whatever the counter is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

TokenCounter = Callable[[str], int]


def heuristic_tokens(text: str) -> int:
    """The seed's token count: `len(text) // 4`. Replace it with a real tokenizer in production."""
    return len(text) // 4


def clip_to_tokens(text: str, max_tokens: int, counter: TokenCounter = heuristic_tokens) -> str:
    """The longest prefix of `text` that counts at most `max_tokens` tokens.

    Binary search over the prefix length, so it works for any counter that is monotone
    in the prefix; for the default counter that is the first `4 * max_tokens + 3`
    characters. `max_tokens` must be >= 0.
    """
    if max_tokens < 0:
        raise ValueError(f"max_tokens must be >= 0, got {max_tokens}")
    if counter(text) <= max_tokens:
        return text
    lo, hi = 0, len(text)           # counter(text[:lo]) <= max_tokens < counter(text[:hi])
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if counter(text[:mid]) <= max_tokens:
            lo = mid
        else:
            hi = mid
    return text[:lo]


@dataclass(frozen=True)
class LedgerRow:
    """One observation: at `turn`, tool `tool` showed the model `tokens` tokens;
    `cumulative` is the ledger's total including this row."""

    turn: int
    tool: str
    tokens: int
    cumulative: int


class ObservationLedger:
    """An append-only list of LedgerRow, with running totals (both queries are O(1))."""

    def __init__(self, counter: TokenCounter = heuristic_tokens) -> None:
        self.counter = counter
        self._rows: list[LedgerRow] = []
        self._total = 0
        self._by_tool: dict[str, int] = {}

    def count(self, text: str) -> int:
        """Tokens in `text` according to this ledger's counter."""
        n = self.counter(text)
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"the token counter must return an int >= 0, got {n!r}")
        return n

    def record(self, turn: int, tool: str, text: str) -> LedgerRow:
        """Count `text` and append its row."""
        return self.record_tokens(turn, tool, self.count(text))

    def record_tokens(self, turn: int, tool: str, tokens: int) -> LedgerRow:
        """Append a row for an observation already counted (`tokens` >= 0)."""
        if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
            raise ValueError(f"tokens must be an int >= 0, got {tokens!r}")
        if self._rows and turn < self._rows[-1].turn:
            raise ValueError(f"ledger rows are appended in turn order: turn {turn} after "
                             f"turn {self._rows[-1].turn}")
        self._total += tokens
        self._by_tool[tool] = self._by_tool.get(tool, 0) + tokens
        row = LedgerRow(turn, tool, tokens, self._total)
        self._rows.append(row)
        return row

    def cumulative(self) -> int:
        """Every token the model has been shown so far."""
        return self._total

    def per_tool(self, name: str) -> int:
        """The tokens the model has been shown from tool `name` (0 if it never ran)."""
        return self._by_tool.get(name, 0)

    @property
    def rows(self) -> tuple[LedgerRow, ...]:
        return tuple(self._rows)

    def __iter__(self) -> Iterator[LedgerRow]:
        return iter(tuple(self._rows))

    def __len__(self) -> int:
        return len(self._rows)

    def __repr__(self) -> str:
        return f"ObservationLedger({len(self._rows)} rows, cumulative={self._total})"
