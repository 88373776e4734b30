"""Numbers and files that come from outside (command lines, API calls, JSON files), checked
the same way wherever they enter.

A number out of its range is refused with a message naming it, never clamped, wrapped or
ignored (`nan` compares false with everything, so a bound alone would let it in). A file
is refused past its size limit before a byte of it is parsed: a trace, a baseline or an
action list built to exhaust memory ends in a message naming the file and its size.
"""

from __future__ import annotations

import argparse
import math
import numbers
import os
import stat
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar, overload

Bound = int | float | None


Number = TypeVar("Number", int, float)   # the two kinds of number a check can ask for


@overload
def check_number(value: object, what: str, *, least: Bound = None, above: Bound = None,
                 most: Bound = None, shown: str | None = None) -> int: ...
@overload
def check_number(value: object, what: str, kind: type[Number], *, least: Bound = None,
                 above: Bound = None, most: Bound = None, shown: str | None = None) -> Number: ...
def check_number(value: Any, what: str, kind: type[int] | type[float] = int, *, least: Bound = None,
                 above: Bound = None, most: Bound = None, shown: str | None = None) -> int | float:
    """`value` as a `kind` (int: an integer; float: any finite real number; never a bool)
    with `least <= value`, `above < value` and `value <= most`; else ValueError naming
    `what` and the range. `shown` is how the message quotes the value (the text typed,
    for an option)."""
    shown = shown_value(value) if shown is None else shown
    wanted = numbers.Integral if kind is int else numbers.Real
    if isinstance(value, bool) or not isinstance(value, wanted):
        raise ValueError(f"{what} must be {_kind_text(kind, least, above, most)}, got {shown}")
    if kind is not int:
        try:
            value = float(value)
        except OverflowError:       # an int past the largest float
            value = math.inf
        if not math.isfinite(value):
            raise ValueError(f"{what} must be a finite number, got {shown}")
    number = kind(value)
    if ((least is not None and number < least) or (above is not None and number <= above)
            or (most is not None and number > most)):
        raise ValueError(f"{what} must be {_range_text(least, above, most)}, got {shown}")
    return number


def shown_value(value: Any) -> str:
    """The value's repr, cut short: a message never writes out a 10,000-digit number."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}... ({len(text):,} characters)"


def _range_text(least: Bound, above: Bound, most: Bound) -> str:
    """`positive`, `in 1..5`, `in (0, 60]`, `at least 0`, `at most 7`."""
    if above is not None:
        low = "positive" if above == 0 and most is None else f"more than {above:g}"
        return low if most is None else f"in ({above:g}, {most:g}]"
    if least is not None and most is not None:
        return f"in {least}..{most}"
    return f"at least {least}" if least is not None else f"at most {most}"


def _kind_text(kind: type[int] | type[float], least: Bound, above: Bound, most: Bound) -> str:
    """`an integer in 1..5`, `a positive number`: what a value of the wrong type should be."""
    noun = "integer" if kind is int else "number"
    if least is None and above is None and most is None:
        return f"an {noun}" if kind is int else f"a {noun}"
    bounds = _range_text(least, above, most)
    if bounds == "positive":
        return f"a positive {noun}"
    return f"{'an' if kind is int else 'a'} {noun} {bounds}"


def number_option(kind: type[Number], what: str, **bounds: Bound) -> Callable[[str], Number]:
    """An argparse `type=` for a number option, checked by `check_number` (same bounds)."""
    def parse(text: str) -> Number:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be a number, got {text!r}") from None
        try:
            return check_number(value, what, kind, shown=repr(text), **bounds)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return parse


def positive(kind: type[Number], what: str) -> Callable[[str], Number]:
    """An argparse `type=` for a positive count or number of seconds."""
    return number_option(kind, what, above=0)


class TooLarge(Exception):
    """A file past its size limit. Not a ValueError: a handler for bad JSON must not
    report it as a parse error."""


def read_bounded(path: str | Path, limit: int, what: str) -> str:
    """The UTF-8 text of a file, or TooLarge when it holds more than `limit` bytes; `what`
    names the kind of file with its article ("a trace"). The size is asked before reading;
    a device or a pipe has none, so the read itself stops one byte past the limit.
    OSError and UnicodeDecodeError propagate: each caller words them its own way."""
    with Path(path).open("rb") as fh:
        info = os.fstat(fh.fileno())
        if stat.S_ISREG(info.st_mode) and info.st_size > limit:
            raise TooLarge(too_large(info.st_size, limit, what))
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(too_large(None, limit, what))
    return data.decode("utf-8")


def too_large(size: int | None, limit: int, what: str) -> str:
    """The message for a file (or text) of `size` bytes past `limit`; None: size unknown."""
    bound = f"the limit of {limit:,} bytes for {what}"
    return f"the file is {size:,} bytes, more than {bound}" if size is not None else f"the file is larger than {bound}"


def value_count(values: Sequence[int]) -> int:
    """The number of values in a list or a range of any size."""
    if isinstance(values, range):
        step = values.step
        return max(0, (values.stop - values.start + step - (1 if step > 0 else -1)) // step)
    return len(values)
