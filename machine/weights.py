"""Weights on choices (`probabilities:`) and the bounds of probability properties, read exactly.

A weight is a rational number: `0.1` is read from its text as 1/10 (never through a float),
`'1/3'` as 1/3. These and the bounds of `probability` / `expected` properties are the only
places a spec may hold a decimal number (`decimal_allowed`); everywhere else YAML's floats
stay refused. Every mistake is a SpecError naming the file and line.

The spec loader hands over each action's choices as `Choices`: action -> choice -> (kind of
set, its labels), so this module needs nothing from the loader (which imports it).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from .errors import Located, Problem, SpecError
from .text import fraction_text
from .yamlpos import Path, YDecimal, YMap

BOUND_KEYS = ("at_least", "at_most")
Choices = dict[str, dict[str, tuple[str, list[Any]]]]


def decimal_allowed(path: Path) -> bool:
    """Where a spec may write a decimal: a weight, or the bound of a probability property."""
    if len(path) == 4 and path[0] == "probabilities":
        return True
    return (len(path) == 4 and path[0] == "properties" and path[2] in ("probability", "expected")
            and path[3] in BOUND_KEYS)


def exact_number(value: Any, at: Located, what: str) -> Fraction:
    """An integer, a decimal (`0.85`) or a fraction as text (`'1/3'`), as an exact Fraction."""
    if isinstance(value, bool):
        raise at.error(f"{what} must be a number, not true/false", value)
    if isinstance(value, int):
        return Fraction(value)
    text = value.text if isinstance(value, YDecimal) else value if isinstance(value, str) else None
    if text is None:
        raise at.error(f"{what} must be a number: a decimal (0.25), an integer or a fraction ('1/3')",
                       _short(value))
    size = _digits_needed(text)
    if size > MAX_DIGITS:
        raise at.error(f"{what} has {size:,} digits written out (its exponent included), more than the "
                       f"{MAX_DIGITS:,} an exact number may have", _short(text))
    try:
        number = Fraction(text.strip().replace("_", ""))
    except (ValueError, ZeroDivisionError):
        raise at.error(f"{what} must be a finite number: a decimal (0.25), an integer or a "
                       "fraction ('1/3')", text) from None
    return number


MAX_DIGITS = 4300     # Python's own limit on reading an integer; `1e-99999999` would take minutes
_EXPONENT = re.compile(r"[eE]([-+]?\d+)\s*$")


def _digits_needed(text: str) -> int:
    """How many digits a number's text takes written out: a decimal's digits and its exponent's
    size; a fraction's longer part (each is read as one integer)."""
    if "/" in text:
        return max(sum(c.isdigit() for c in part) for part in text.split("/"))
    exp = _EXPONENT.search(text)
    written = sum(c.isdigit() for c in (text if exp is None else text[:exp.start()]))
    if exp is None:
        return written
    power = exp.group(1).lstrip("+-")
    return written + (int(power) if len(power) <= 9 else 10 ** 9)


@dataclass
class ChoiceWeights:
    """How likely each value of one choice of one action is: the environment's odds."""

    action: str
    choice: str
    weights: dict[Any, Fraction]     # the choice's label (as traces show it) -> its probability
    line: int


@dataclass
class Chance:
    """What a `probability` or `expected` property bounds: the probability of reaching its
    `reach` predicate (measure None) or the expected total of `measure` until a terminal state."""

    sense: str                       # "at_least" | "at_most"
    bound: Fraction
    measure: str | None = None       # expected: "transitions" or a declared measure
    measure_line: int = 0


def parse_probabilities(raw: Any, line: int, file: str,
                        choices: Choices) -> list[ChoiceWeights]:
    """`probabilities: {ACTION: {CHOICE: {VALUE: WEIGHT, ...}}}`, checked against the actions:
    every value of a weighted choice has a weight of 0 or more, and they sum to exactly 1."""
    top = _mapping(raw, Located(file, line), "probabilities")
    out: list[ChoiceWeights] = []
    problems: list[Problem] = []
    for action, body in top.items():
        try:
            out.extend(_action_weights(action, body, top.line_of(action), file, choices))
        except SpecError as exc:
            problems.extend(exc.problems)
    if problems:
        raise SpecError(problems)
    return out


def _action_weights(action: str, raw: Any, line: int, file: str,
                    choices: Choices) -> list[ChoiceWeights]:
    at = Located(file, line)
    if action not in choices:
        raise at.error(f"probabilities name an action the spec does not have{_hint(action, choices)}", action)
    made = choices[action]
    body = _mapping(raw, at, f"probabilities of action {action}")
    out = []
    for choice, weights in body.items():
        cat = Located(file, body.line_of(choice))
        if choice not in made:
            hint = _hint(choice, made) if made else " (it makes none)"
            raise cat.error(f"action {action} has no choice named {choice!r}{hint}", choice)
        kind, labels = made[choice]
        if kind == "range":
            raise cat.error(f"weights on the range choice {choice} are not supported yet: "
                            "list its values instead")
        out.append(ChoiceWeights(action, choice, _weights(action, choice, labels, weights, cat, file), cat.line or 0))
    return out


def _weights(action: str, choice: str, labels: list[Any], raw: Any, at: Located, file: str) -> dict[Any, Fraction]:
    """One choice's weights, keyed by its labels (a YAML key is text: `'0'` names the value 0)."""
    m = _mapping(raw, at, f"weights of choice {choice} of action {action}")
    by_text = {_label_text(label): label for label in labels}
    out: dict[Any, Fraction] = {}
    for key, value in m.items():
        vat = Located(file, m.line_of(key))
        if key not in by_text:
            raise vat.error(f"not a value of choice {choice} ({', '.join(by_text)})", key)
        w = exact_number(value, vat, f"the weight of {choice} = {key}")
        if w < 0:
            raise vat.error(f"the weight of {choice} = {key} is negative", value)
        out[by_text[key]] = w
    missing = [text for text in by_text if by_text[text] not in out]
    if missing:
        raise at.error(f"choice {choice} of action {action} has no weight for "
                       f"{', '.join(missing)}: give every value one (0 is allowed)")
    total = sum(out.values(), Fraction(0))
    if total != 1:
        raise at.error(f"the weights of choice {choice} of action {action} sum to {fraction_text(total)}, not 1")
    return out


def _label_text(label: Any) -> str:
    if isinstance(label, bool):
        return "true" if label else "false"
    return str(label)




def _hint(name: str, known: Any) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _mapping(raw: Any, at: Located, what: str) -> YMap:
    if not isinstance(raw, YMap) or not raw:
        raise at.error(f"{what} must be a non-empty mapping", _short(raw))
    return raw


def _short(value: Any) -> str:
    text = repr(value) if not isinstance(value, str) else value
    return text if len(text) <= 60 else text[:57] + "..."
