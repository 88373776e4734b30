"""How values, value lists and traces read as text: the one formatter of every layer.

Error messages (machine/, explorer/), replays, the report formats and the graph writers
all show a state value, a param's declared values or a counterexample. They do it here,
in the lowest layer that needs it, so a value reads the same everywhere (`true`, not
`True`) and no module imports upward to borrow another's formatter. A trace is taken in
its JSON form (`Trace.to_json()`, as the report holds it): plain data, no engine types.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .inputs import value_count

TEXT_LIMIT = 10_000     # characters: a longer text in a report is cut (`shortened`)


def value_text(value: Any) -> str:
    """A value as specs and the JSON report spell it: true/false, null, else str()."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value)


def encodable(text: str) -> str:
    """`text` with each lone surrogate written as its escape: `\\udc80` (six characters). Such
    code points come from a YAML `"\\udc80"`, a file name's undecodable byte or an exception
    message of the user's code, and no UTF-8 writer takes them: every report writes them so."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def shortened(text: str, limit: int = TEXT_LIMIT) -> str:
    """`text` cut to at most `limit` characters, ending `… (N more characters)`: a 50 MB error
    message from the user's code does not make a 100 MB report. Cutting twice changes nothing."""
    if len(text) <= limit:
        return text
    kept = limit
    while True:
        tail = f"… ({len(text) - kept:,} more characters)"
        if kept + len(tail) <= limit:
            return text[:kept] + tail
        kept = limit - len(tail)


def report_text(text: str) -> str:
    """A text as every report writes it: encodable, and cut at TEXT_LIMIT characters."""
    return shortened(encodable(text))


def exception_message(exc: BaseException) -> str:
    """`str(exc)` of an exception of the user's code, whatever its `__str__` does: one that
    raises (or returns no string) reads `<str() raised RuntimeError>`."""
    try:
        message = str(exc)
    except Exception as failed:
        return f"<str() raised {type(failed).__name__}>"
    return message


def exception_text(exc: BaseException) -> str:
    """`ValueError: the message`: how every message shows an exception of the user's code."""
    return f"{type(exc).__name__}: {exception_message(exc)}"


def counted(count: int, noun: str) -> str:
    """`1 transition`, `2 transitions`: a count with its noun in the number it needs."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def assignments_text(values: Mapping[str, Any], sep: str = " ") -> str:
    """`K=2 R=1`: names and values, in their order (empty when there are none)."""
    return sep.join(f"{k}={value_text(v)}" for k, v in values.items())


def values_text(values: Sequence[Any]) -> str:
    """A param's declared values: `1..5` for a run of consecutive ints, else the list (an
    enum's names, `false, true`); never materializes a range (a Python model may declare
    range(0, 10**12, 2))."""
    count = value_count(values)
    consecutive = (values.step == 1 if isinstance(values, range)
                   else all(type(a) is int and type(b) is int and b == a + 1 for a, b in zip(values, values[1:])))
    if consecutive and count > 2:
        return f"{values[0]}..{values[-1]}"
    if count > 10:
        return f"{value_text(values[0])}, {value_text(values[1])}, ..., {value_text(values[-1])} ({count:,} values)"
    return ", ".join(map(value_text, values))


# ---------------------------------------------------------------- traces (their JSON form)

def changes(steps: Sequence[Mapping[str, Any]], n: int) -> str:
    """The state of step n: every var at step 0, afterwards only the vars that changed."""
    state: Mapping[str, Any] = steps[n]["state"]
    if n == 0:
        return assignments_text(state)
    prev: Mapping[str, Any] = steps[n - 1]["state"]
    return assignments_text({k: v for k, v in state.items() if prev.get(k) != v}) or "(no change)"


def loop_mark(trace: Mapping[str, Any], n: int) -> str:
    """Where a lasso's loop starts and where it goes back ("" for other steps and paths)."""
    if trace.get("kind") != "lasso":
        return ""
    start = trace.get("loop_start")
    if n == start:
        return "<- loop starts"
    if n == len(trace["steps"]) - 1:
        return f"-> back to step {start}"
    return ""


def step_rows(trace: Mapping[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """(step, action, choices, rule, state changes + loop mark) for each step of a trace."""
    rows = []
    steps = trace["steps"]
    for n, st in enumerate(steps):
        mark = loop_mark(trace, n)
        rows.append((str(n), st.get("action") or "(initial)", assignments_text(st.get("choices") or {}),
                     st.get("rule") or "", changes(steps, n) + ("  " + mark if mark else "")))
    return rows


TRACE_HEAD = ("step", "action", "choices", "rule", "state (changes)")


def trace_table(trace: Mapping[str, Any]) -> list[str]:
    """A counterexample as aligned rows: step, action, choices, rule fired, the vars that changed."""
    rows = [TRACE_HEAD, *step_rows(trace)]
    widths = [max(len(row[c]) for row in rows) for c in range(4)]
    return ["  ".join(row[c].ljust(widths[c]) for c in range(4)) + "  " + row[4] for row in rows]
