"""How values, value lists and traces read as text: the one formatter of every layer.

Error messages (machine/, explorer/), replays, the report formats and the graph writers
all show a state value, a param's declared values or a counterexample. They do it here,
in the lowest layer that needs it, so a value reads the same everywhere (`true`, not
`True`) and no module imports upward to borrow another's formatter. A trace is taken in
its JSON form (`Trace.to_json()`, as the report holds it): plain data, no engine types.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
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
    """A text as every report writes it: encodable, and cut at TEXT_LIMIT characters (an
    exact number's digits, `Exact`, are written whole)."""
    if isinstance(text, Exact):
        return text
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


# ---------------------------------------------------------------- exact numbers of any size

# Python refuses to turn an int of more than 4,300 digits into text or back (by default;
# sys.set_int_max_str_digits, a guard against quadratic-time parsing). Exact probabilities
# reach that easily: 9,500 steps of odds 1/3 make a denominator of 4,533 digits. The report
# keeps them exact (`int_text`, by halves), and text for people shows their value instead.
EXACT_DIGITS = 40      # a fraction of more digits (numerator and denominator) reads as its value
_LOG10_2 = (30102999566398, 10 ** 14)      # log10(2), rounded down: a lower bound on the digits


def digits(n: int) -> int:
    """How many decimal digits |n| has, without writing it out."""
    n = abs(n)
    k = (max(n.bit_length() - 1, 0) * _LOG10_2[0]) // _LOG10_2[1] + 1
    while n >= 10 ** k:
        k += 1
    return k


def int_text(n: int) -> str:
    """`str(n)` for an int of any size (written by halves past Python's limit)."""
    try:
        return str(n)
    except ValueError:
        pass
    if n < 0:
        return "-" + int_text(-n)
    half = digits(n) // 2
    high, low = divmod(n, 10 ** half)
    return int_text(high) + int_text(low).zfill(half)


def int_from_text(text: str) -> int:
    """`int(text)` for digits of any length (read by halves past Python's limit); ValueError
    when it is not an integer."""
    try:
        return int(text)
    except ValueError:
        body = text.strip().lstrip("+-")
        if len(body) < 1000 or not body.isdigit():
            raise
    sign = -1 if text.strip().startswith("-") else 1
    half = len(body) // 2
    scale: int = 10 ** half
    return sign * (int_from_text(body[:-half]) * scale + int_from_text(body[-half:]))


class Exact(str):
    """An exact number's text in a report (`fraction_json`): its every digit is the point, so a
    report writes it whole, however long (a text is cut at TEXT_LIMIT characters)."""

    __slots__ = ()


def fraction_json(x: Fraction) -> Exact:
    """An exact fraction as the JSON report writes it: `3`, `171/200`, of any size."""
    if x.denominator == 1:
        return Exact(int_text(x.numerator))
    return Exact(f"{int_text(x.numerator)}/{int_text(x.denominator)}")


def fraction_from_json(text: str) -> Fraction:
    """`fraction_json` read back."""
    top, _, bottom = text.partition("/")
    return Fraction(int_from_text(top), int_from_text(bottom) if bottom else 1)


def decimal_text(x: Fraction) -> str:
    """x to 6 significant digits (`0.855`, `2.21938e-1673`), however many digits it has: a
    float where it holds one, else from the numbers' logarithms; a probability just under 1
    is `1 - 2.2e-1673`, never a bare `1`."""
    if x == 0:
        return "0"
    if 0 < x < 1 and f"{float(x):.6g}" == "1":
        return f"1 - {decimal_text(1 - x)}"
    try:
        f = float(x)
    except OverflowError:
        f = math.inf
    if f != 0 and math.isfinite(f) and abs(f) >= 1e-300:
        return f"{f:.6g}"
    n, d = abs(x.numerator), x.denominator
    shift = n.bit_length() - d.bit_length() - 64          # n / d = (n / d / 2^shift) * 2^shift
    scaled = (n >> shift) // d if shift >= 0 else (n << -shift) // d
    log = math.log10(scaled) + shift * math.log10(2)
    exponent = math.floor(log)
    mantissa = round(10 ** (log - exponent), 5)
    if mantissa >= 10:
        mantissa, exponent = mantissa / 10, exponent + 1
    return f"{'-' if x < 0 else ''}{mantissa:.6g}e{exponent:+d}"


def fraction_text(x: Fraction, where: str = "") -> str:
    """An exact number for people: `2`, `171/200 (0.855)`; past EXACT_DIGITS digits its value
    and size, `about 0.333333 (an exact fraction of 4,512 digits WHERE)` (`where` says where
    the exact number can be read, e.g. " in the JSON report")."""
    whole = x.denominator == 1
    size = digits(x.numerator) + (0 if whole else digits(x.denominator))
    if size > EXACT_DIGITS:
        return f"about {decimal_text(x)} (an exact {'integer' if whole else 'fraction'} of {size:,} digits{where})"
    if x.denominator == 1:
        return str(x.numerator)
    return f"{x} ({decimal_text(x)})"


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
        rows.append((str(n), "  " * st.get("depth", 0) + (st.get("action") or "(initial)"), assignments_text(st.get("choices") or {}),
                     st.get("rule") or "", changes(steps, n) + ("  " + mark if mark else "")))
    return rows


TRACE_HEAD = ("step", "action", "choices", "rule", "state (changes)")


def trace_table(trace: Mapping[str, Any], odds: Sequence[str] | None = None) -> list[str]:
    """A counterexample as aligned rows: step, action, choices, rule fired, the vars that
    changed; with `odds` (each step's probability, after the initial state) a column of them."""
    rows: list[tuple[str, ...]] = [TRACE_HEAD, *step_rows(trace)]
    if odds is not None:
        shown = ["probability", "", *odds]
        rows = [(*row[:4], shown[n], row[4]) for n, row in enumerate(rows)]
    cols = len(rows[0]) - 1
    widths = [max(len(row[c]) for row in rows) for c in range(cols)]
    return ["  ".join(row[c].ljust(widths[c]) for c in range(cols)) + "  " + row[cols] for row in rows]
