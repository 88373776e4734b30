"""The analyses after an exploration, under the check's bounds (issue 26).

`--timeout` and `--max-memory` bound the whole check, not only the exploration: each analysis
that reads the explored graph afterwards (probabilities, cycles, longest runs, vacuity, the
expressions of counts and maxima on every state) runs named, under properties/budget.py. One
that a bound stops leaves undecided what it was for (`unknown`, saying which bound and which
analysis); what was decided before keeps its verdict. So does a violation: the run is then
`violated` (exit 1), else `incomplete` (exit 3), its `stopped_by` the bound and its
`stop_reason` where it was reached and what was left undone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from haltproof.machine.usercode import OutOfTime, Stuck
from haltproof.properties import budget

from .memory import size_text

T = TypeVar("T")

OUT_OF_MEMORY_HINT = " (a bound, not a bug: try --max-memory, more memory, or smaller params)"


class Analyses:
    """One run's analyses after its exploration: each run by `run`, and in `late` every one a
    bound stopped, with what stopped it (a budget.Stopped, or OutOfTime where the deadline
    passed in the user's own code, a Python model's count say: Stuck where one call of it ran
    past the call deadline), in order."""

    def __init__(self, timeout: float | None, max_memory: int | None):
        self.timeout, self.max_memory = timeout, max_memory
        self.late: list[tuple[str, BaseException]] = []

    def run(self, doing: str, fn: Callable[[], T], undecided: Callable[[str], T]) -> T:
        """`fn()`, the analysis `doing` names ("solving the probability of p"); when a bound
        stops it, `undecided(why)` instead, `why` saying so ("the --timeout 5 s was reached
        while ...")."""
        try:
            with budget.analysis(doing):
                return fn()
        except budget.Stopped as stop:
            self.late.append((doing, stop))
            return undecided(self.why(stop))

    def out_of_time(self, doing: str, stop: OutOfTime) -> None:
        """The deadline passed in the user's code while `doing`: noted, and every analysis
        after stops at once."""
        self.late.append((doing, stop))
        budget.expire(doing)

    def bound_text(self, stop: budget.Stopped) -> str:
        """`the --timeout 5 s`, `the memory limit 512M`, or `memory` (it ran out)."""
        if stop.out_of_memory:
            return "memory"
        if stop.bound == budget.TIMEOUT:
            return "the --timeout" + (f" {self.timeout:g} s" if self.timeout is not None else "")
        assert self.max_memory is not None, "only a memory limit stops an analysis at max_memory"
        return f"the memory limit {size_text(self.max_memory)}"

    def why(self, stop: budget.Stopped) -> str:
        """Why what `stop` stopped is undecided, after "not decided: "."""
        head = f"{self.bound_text(stop)} {'ran out' if stop.out_of_memory else 'was reached'}"
        if stop.first == stop.doing:
            return f"{head} while {stop.doing}"
        return f"{head} while {stop.first}, before {stop.doing}"

    def stopped(self) -> tuple[str, str] | None:
        """The run's `stopped_by` and `stop_reason` when something was stopped (None otherwise):
        where the first bound was reached, and what else was left undone."""
        if not self.late:
            return None
        what, first = self.late[0]
        if isinstance(first, budget.Stopped):
            bound = first.bound
            head = ("out of memory" if first.out_of_memory
                    else f"{self.bound_text(first).removeprefix('the ')} reached")
            reason = f"{head} after the exploration, while {first.first}"
        elif isinstance(first, Stuck):      # one call into the user's code did not return in time
            bound = "call_timeout"
            reason = (f"a call into the user's code did not return within --call-timeout {first.limit:g} s after "
                      f"the exploration, while {what}" + (f": {first.doing}" if first.doing else ""))
        else:
            assert isinstance(first, OutOfTime), "the deadline passed in the user's code"
            bound = budget.TIMEOUT
            reason = (f"--timeout{f' {self.timeout:g} s' if self.timeout is not None else ''} reached after the "
                      f"exploration, while {what}" + (f": {first.doing}" if first.doing else ""))
        rest = list(dict.fromkeys(w for w, _ in self.late[1:] if w != what))
        if rest:
            reason += f"; not done: {', '.join(rest)}"
        if isinstance(first, budget.Stopped) and first.out_of_memory:
            reason += OUT_OF_MEMORY_HINT
        return bound, reason
