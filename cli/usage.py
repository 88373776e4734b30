"""Usage errors and the `-p NAME=VALUE` options, shared by every subcommand module.

One UsageError class for the whole command line: every subcommand raises it and
cli/main.py turns it into exit 2 with the message, never a traceback.
"""

from __future__ import annotations

from collections.abc import Sequence


class UsageError(Exception):
    """A mistake on the command line (exit 2)."""


def parse_pins(pins: Sequence[str]) -> dict[str, list[int | str]]:
    """`-p NAME=VALUE` options as NAME -> its values in the order given: `-p K=1 -p K=2`
    sweeps K over 1 and 2. An integer is an int, anything else stays text (`true`, `fast`):
    each spec checks the values against its param's kind and range (explorer.check.check_pins).
    The same value twice is refused (a typo for another one?)."""
    out: dict[str, list[int | str]] = {}
    for item in pins:
        name, sep, text = item.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"-p {item}: write -p NAME=VALUE")
        if not text.strip():
            raise UsageError(f"-p {item}: no value after '='")
        value: int | str
        try:
            value = int(text)
        except ValueError:
            value = text
        values = out.setdefault(name.strip(), [])
        if value in values:
            raise UsageError(f"-p {name.strip()}={value} is given twice")
        values.append(value)
    return out


def one_value_each(pins: dict[str, list[int | str]], command: str) -> dict[str, int | str]:
    """The pins of a command that runs one combination: each param pinned once."""
    for name, values in pins.items():
        if len(values) > 1:
            raise UsageError(f"-p {name}: {command} runs one param combination, and {name} is given "
                             f"{len(values)} values ({', '.join(map(str, values))})")
    return {name: values[0] for name, values in pins.items()}
