"""Errors in a user's spec: each names the file, the line and the offending text."""

from __future__ import annotations

from dataclasses import dataclass

from .text import value_text


@dataclass(frozen=True)
class Problem:
    """One mistake in a spec, located in its source file."""

    file: str
    line: int | None
    message: str
    text: str | None = None

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        if self.text is not None and self.text != "":
            return f"{where}: {self.message}: {self.text!r}"
        return f"{where}: {self.message}"


class SpecError(Exception):
    """A spec is invalid; carries every problem found so the user can fix them in one go."""

    def __init__(self, problems: list[Problem]):
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))

    def __reduce__(self) -> tuple[type[SpecError], tuple[list[Problem]]]:
        """Pickled with its problems (a check in a worker process raises it in the parent)."""
        return SpecError, (self.problems,)


class Located:
    """Where a YAML value came from; passed down so errors can point at it."""

    __slots__ = ("file", "line")

    def __init__(self, file: str, line: int | None):
        self.file = file
        self.line = line

    def problem(self, message: str, text: object = None) -> Problem:
        """`text` as the spec spells it: a YAML value read as a bool is quoted `true`, not `True`."""
        return Problem(self.file, self.line, message, None if text is None else value_text(text))

    def error(self, message: str, text: object = None) -> SpecError:
        return SpecError([self.problem(message, text)])
