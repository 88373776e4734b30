"""`--max-memory`: sizes as people write them, and how much memory this process holds.

Running out of memory is a bound, like --max-states: the engines look at the process's
resident memory every few thousand states (scalar) or once per BFS level (vector) and
stop cleanly, `incomplete`, before the operating system stops them.
"""

from __future__ import annotations

import os
import re
import sys

UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"(?i)\s*([-+]?\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*")


class SizeError(ValueError):
    """A size that is not a positive number of bytes."""


def parse_size(text: str) -> int:
    """`4G`, `512M`, `1.5G`, `64k`, `512MiB` or plain bytes (`1000000`), in binary units
    (K = 1024), as a positive number of bytes."""
    m = _SIZE.fullmatch(text) if isinstance(text, str) else None
    if m is None:
        raise SizeError(f"{text!r} is not a size: write bytes or a number with K, M, G or T, "
                        "e.g. 512M or 4G")
    number, unit = m.group(1), m.group(2).upper()
    if unit == "" and "." in number:
        raise SizeError(f"{text!r}: a number of bytes is a whole number")
    size = int(float(number) * UNITS[unit]) if "." in number else int(number) * UNITS[unit]
    if size <= 0:
        raise SizeError(f"{text!r}: the size must be positive")
    return size


def size_text(size: int) -> str:
    """A size as `parse_size` reads it back: the largest unit that divides it (4G, 512M)."""
    for unit in ("T", "G", "M", "K"):
        if size % UNITS[unit] == 0:
            return f"{size // UNITS[unit]}{unit}"
    return str(size)


try:
    _PAGE = os.sysconf("SC_PAGE_SIZE")
except (AttributeError, ValueError, OSError):
    _PAGE = 4096


def current_rss() -> int:
    """This process's resident memory in bytes (cheap: one small read of /proc on Linux;
    elsewhere the peak so far, which is never less)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        pass
    import resource
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024
