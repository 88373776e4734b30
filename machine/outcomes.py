"""Exceptions that are outcomes: what a bound action's code may raise on purpose.

Real agent code signals limits with exceptions (a step limit, a usage limit). A spec
says, per action, which of them are outcomes and what each stands for:

    raises:
      - class: mypkg.errors.StepLimitExceeded    # dotted path (a bare name is a builtin)
        match: 'limit of \\d+ steps'               # optional: re.search on str(exc)
        rule: limit                               # optional: the decide rule it stands for
        set: {status: limit}                      # optional: values it gives vars

The first declaration whose class the exception is an instance of (and whose pattern
matches its message) decides: the transition fires its `rule`, and the new abstract
state is what the adapter reads from the run it was left in, with `set` on top. An
exception no declaration matches stays a `bound_code` finding with the traceback.

Loading checks the shape, the regex, the rule and the values (`parse_raises`); binding
imports the classes (`resolve`), which runs the user's modules, so it happens where the
adapter is imported, under the check's deadline.
"""

from __future__ import annotations

import builtins
import importlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from . import usercode
from .errors import Problem, SpecError
from .text import exception_message, exception_text
from .yamlpos import YList, YMap

KEYS = frozenset({"class", "match", "rule", "set"})


@dataclass(frozen=True)
class Outcome:
    """One declared exception of one action, as written in the spec."""

    path: str                              # the exception class, dotted
    match: re.Pattern[str] | None
    rule: str | None
    sets: dict[str, Any] = field(default_factory=dict)
    line: int = 0

    def describe(self) -> str:
        """`StepLimitExceeded (rule limit, status=limit)`: the outcome as the report names it."""
        said = ([f"rule {self.rule}"] if self.rule else []) + [f"{k}={_text(v)}" for k, v in self.sets.items()]
        return f"{self.path} ({', '.join(said)})"


@dataclass(frozen=True)
class VarShape:
    """What a `set:` value may be for one var: its kind and, for an enum, its values."""

    kind: str                 # "int" | "bool" | "enum"
    values: tuple[Any, ...] = ()


def parse_raises(raw: Any, line: int, file: str, action: str, rules: Sequence[str],
                 shapes: dict[str, VarShape]) -> list[Outcome]:
    """The `raises:` list of one action, every mistake a Problem naming file and line."""
    if not isinstance(raw, YList) or not raw:
        raise SpecError([Problem(file, line, f"raises of action {action} must be a non-empty list "
                                             "of {class, match, rule, set} mappings")])
    out: list[Outcome] = []
    for i, item in enumerate(raw):
        out.append(_one(item, raw.line_of(i), file, action, rules, shapes))
    return out


def _one(item: Any, line: int, file: str, action: str, rules: Sequence[str],
         shapes: dict[str, VarShape]) -> Outcome:
    def fail(message: str, text: object = None, at: int = line) -> SpecError:
        return SpecError([Problem(file, at, message, None if text is None else str(text))])
    if not isinstance(item, YMap):
        raise fail(f"each entry of raises of action {action} must be a mapping with a class")
    for key in item:
        if key not in KEYS:
            raise fail(f"unknown key in raises of action {action} (allowed: {', '.join(sorted(KEYS))})",
                       key, item.line_of(key))
    path = item.get("class")
    if not isinstance(path, str) or not _DOTTED.fullmatch(path):
        raise fail("class must be the exception's dotted path, e.g. mypkg.errors.LimitExceeded",
                   path, item.line_of("class"))
    match = None
    if "match" in item:
        pattern = item["match"]
        if not isinstance(pattern, str):
            raise fail("match must be a regular expression (a string)", pattern, item.line_of("match"))
        try:
            match = re.compile(pattern)
        except re.error as exc:
            raise fail(f"match is not a valid regular expression ({exc})", pattern,
                       item.line_of("match")) from None
    rule = item.get("rule")
    if rule is not None and (not isinstance(rule, str) or rule not in rules):
        raise fail(f"rule must name a decide rule of action {action} "
                   f"({', '.join(rules) or 'it has none'})", rule, item.line_of("rule"))
    sets = _sets(item.get("set"), item.line_of("set"), fail, shapes) if "set" in item else {}
    if rule is None and not sets:
        raise fail(f"an exception of action {action} must stand for something: give a rule, "
                   "a set of var values, or both", path)
    return Outcome(str(path), match, None if rule is None else str(rule), sets, line)


def _sets(raw: Any, line: int, fail: Any, shapes: dict[str, VarShape]) -> dict[str, Any]:
    if not isinstance(raw, YMap) or not raw:
        raise fail("set must be a mapping of var names to values", raw, line)
    out: dict[str, Any] = {}
    for name, value in raw.items():
        at = raw.line_of(name)
        shape = shapes.get(name)
        if shape is None:
            raise fail(f"set names no var of the spec (it has: {', '.join(shapes)})", name, at)
        if not _fits(value, shape):
            want = {"int": "an integer", "bool": "true or false"}.get(
                shape.kind, f"one of {', '.join(map(str, shape.values))}")
            raise fail(f"set gives {name} a value that is not {want}", value, at)
        out[str(name)] = str(value) if shape.kind == "enum" else value
    return out


def _fits(value: Any, shape: VarShape) -> bool:
    if shape.kind == "int":
        return type(value) is int
    if shape.kind == "bool":
        return type(value) is bool
    return isinstance(value, str) and value in shape.values


_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


def _text(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


Resolved = list[tuple[type[BaseException], Outcome]]


def resolve(outcomes: Sequence[Outcome], file: str) -> Resolved:
    """Each declaration with its class, imported (the user's modules: under the deadline).
    An unknown path or a class that is no Exception is a spec error at the declaration."""
    return [(_load_class(o, file), o) for o in outcomes]


def _load_class(o: Outcome, file: str) -> type[BaseException]:
    parts = o.path.split(".")
    found: Any = None
    if len(parts) == 1:
        found = getattr(builtins, parts[0], None)
    for cut in range(len(parts) - 1, 0, -1):
        if found is not None:
            break
        found = _attribute(_import(".".join(parts[:cut]), o, file), parts[cut:])
    if found is None:
        raise SpecError([Problem(file, o.line, "raises names a class that cannot be found "
                                               "(no importable module defines it)", o.path)])
    if not isinstance(found, type) or not issubclass(found, Exception):
        raise SpecError([Problem(file, o.line, "raises must name an exception class "
                                               "(a subclass of Exception)", o.path)])
    return found


def _import(module: str, o: Outcome, file: str) -> Any:
    """The module, or None when there is no such module; an error while importing one that
    exists is the user's to see, as a spec error at the declaration."""
    try:
        return usercode.load_as(lambda: f"importing {module} (raises of the spec, line {o.line})",
                               lambda: importlib.import_module(module))
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module == exc.name or module.startswith(exc.name + ".")):
            return None
        raise SpecError([Problem(file, o.line, f"cannot import {module}: {exception_message(exc)}", o.path)]) from None
    except usercode.FAILURES as exc:
        raise SpecError([Problem(file, o.line, f"cannot import {module}: {exception_text(exc)}",
                                 o.path)]) from None


def _attribute(target: Any, names: Sequence[str]) -> Any:
    if target is None:
        return None
    for name in names:
        if not hasattr(target, name):
            return None
        target = getattr(target, name)
    return target


def outcome_of(exc: Exception, resolved: Resolved) -> Outcome | None:
    """The first declaration `exc` matches (its class, then its message), None if none does.
    An exception whose `__str__` raises has no message: no `match` finds anything in it."""
    message: list[str | None] = []      # str(exc), made once, when a declaration needs it
    for cls, o in resolved:
        if not isinstance(exc, cls):
            continue
        if o.match is None:
            return o
        if not message:
            message.append(_message(exc))
        if message[0] is not None and o.match.search(message[0]) is not None:
            return o
    return None


def _message(exc: Exception) -> str | None:
    try:
        return str(exc)
    except Exception:
        return None
