"""`--max-memory`: sizes as people write them, and how much memory this process holds.

Running out of memory is a bound, like --max-states: the engines look at the process's
resident memory every few thousand states (scalar) or once per BFS level (vector) and
stop cleanly, `incomplete`, before the operating system stops them.
"""

from __future__ import annotations

import os
import re
import sys

from haltproof.machine.inputs import check_number, shown_value

UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"(?i)\s*([-+]?\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*")


def parse_size(text: str, what: str = "--max-memory") -> int:
    """`4G`, `512M`, `1.5G`, `64k`, `512MiB` or plain bytes (`1000000`), in binary units
    (K = 1024), as a positive number of bytes; else ValueError naming `what`. The number's
    range goes through the one number checker, `haltproof.machine.inputs.check_number`."""
    shown = shown_value(text)
    m = _SIZE.fullmatch(text) if isinstance(text, str) else None
    if m is None:
        raise ValueError(f"{what} must be a size: bytes or a number with K, M, G or T, e.g. 512M "
                         f"or 4G, got {shown}")
    number, unit = m.group(1), m.group(2).upper()
    if unit == "" and "." in number:
        raise ValueError(f"{what} must be a whole number of bytes, got {shown}")
    # finite and positive first (a size of 400 digits is no size), then whole bytes: 0.0001K is 0
    scaled = check_number(float(number) * UNITS[unit], what, float, above=0, shown=shown)
    size = int(scaled) if "." in number else int(number) * UNITS[unit]
    return check_number(size, what, int, above=0, shown=shown)


def size_text(size: int) -> str:
    """A size as `parse_size` reads it back: the largest unit that divides it (4G, 512M)."""
    for unit in ("T", "G", "M", "K"):
        if size % UNITS[unit] == 0:
            return f"{size // UNITS[unit]}{unit}"
    return str(size)


def rough_size(size: int) -> str:
    """An estimate in words: 310M, 2.1G (two significant digits, binary units)."""
    for unit in ("T", "G", "M", "K"):
        if size >= UNITS[unit]:
            value = size / UNITS[unit]
            return f"{value:.1f}{unit}" if value < 10 else f"{value:.0f}{unit}"
    return f"{size}B"


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


def available_memory() -> int | None:
    """What the system can still give this process without swapping or an OOM kill
    (MemAvailable on Linux), or None where that cannot be read."""
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        pass
    return None


def address_space_left() -> int | None:
    """How many more bytes of address space this process may map under its address-space
    limit (RLIMIT_AS, `ulimit -v`), or None where it has none. Unlike resident memory, an
    array reserved and never written counts against it in full the moment it is made."""
    try:
        import resource
    except ImportError:              # not a POSIX system: no such limit
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    try:
        with open("/proc/self/statm", "rb") as f:
            mapped = int(f.read().split()[0]) * _PAGE
    except (OSError, IndexError, ValueError):
        return soft                  # what is mapped already is unknown: at most the whole limit
    return max(0, soft - mapped)


def memory_headroom(max_memory: int | None) -> int:
    """How many more bytes this process may take: up to `max_memory` (resident memory), no
    more than the system has available and no more than its address-space limit leaves;
    unbounded (2^62) where none is known."""
    room = [max_memory - current_rss()] if max_memory is not None else []
    for known in (available_memory(), address_space_left()):
        if known is not None:
            room.append(known)
    return max(0, min(room)) if room else 1 << 62
