"""The spec loader's common ground: where problems are gathered (every one as
file:line:text, raised together as one SpecError) and the small checks every section uses.
"""

from __future__ import annotations

import keyword
from collections.abc import Callable
from typing import Any

from . import expr as E
from .errors import Located, Problem, SpecError
from .yamlpos import YList, YMap, YStr
from .specdata import RESERVED, Param, Var, Unreachable, ChoiceSet, Assign
from .specdata import T


class LoaderBase:
    """The sections' common state and checks; each section's loader builds on the one before."""

    # What the sections share, set by `load` (machine/spec.py) as it goes through the spec
    file: str
    problems: list[Problem]
    param_scope: E.Scope
    params_by_name: dict[str, Param]
    bound_spec: bool
    vars_list: list[Var]
    sets_by_name: dict[str, tuple[Any, int]]
    action_choices: dict[str, list[tuple[str, ChoiceSet]]]
    literals: frozenset[str]
    state_scope: E.Scope
    all_actions: list[str]
    rule_names: frozenset[str]
    step_scope: E.Scope
    step_choices: dict[str, ChoiceSet]
    monitor_vars: list[Var]
    monitor_assigns: list[Assign]

    def __init__(self, file: str):
        self.file = file
        self.problems: list[Problem] = []
    # -- small helpers
    def at(self, line: int | None) -> Located:
        return Located(self.file, line)
    def add(self, line: int | None, message: str, text: object = None) -> None:
        self.problems.append(Problem(self.file, line, message, None if text is None else str(text)))
    def attempt(self, fn: Callable[..., T], *args: Any) -> T | None:
        """Run one part of the validation; keep its problems and go on with the next part."""
        try:
            return fn(*args)
        except SpecError as exc:
            self.problems.extend(exc.problems)
            return None
    def mapping(self, value: Any, line: int, what: str) -> YMap:
        if not isinstance(value, YMap):
            raise self.at(line).error(f"{what} must be a mapping", shortened(value))
        return value
    def keys(self, m: YMap, what: str, allowed: set[str], required: set[str] | frozenset[str] = frozenset()) -> None:
        for key in m:
            if key not in allowed:
                raise self.at(m.line_of(key)).error(
                    f"unknown key in {what} (allowed: {', '.join(sorted(allowed))})", key)
        for key in sorted(required):
            if key not in m:
                raise self.at(m.line).error(f"{what} needs the key {key!r}")
    def ident(self, name: str, line: int, what: str) -> None:
        if not name.isidentifier() or keyword.iskeyword(name):
            raise self.at(line).error(f"{what} must be a plain identifier", name)
        if name in RESERVED:
            raise self.at(line).error(f"{what} uses a reserved name", name)
    def plain(self, value: Any, line: int, what: str) -> Any:
        """A plain value (an integer, true/false or a string), not a list, mapping or null."""
        if value is None or isinstance(value, (YMap, YList)):
            raise self.at(line).error(f"{what} must be an integer, true/false or a string",
                                      "null" if value is None else shortened(value))
        return value
    def integer(self, value: Any, line: int, what: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.at(line).error(f"{what} must be an integer", shortened(value))
        return value
    def unreachable(self, m: YMap, what: str) -> Unreachable | None:
        """`unreachable_when: PARAM_EXPR` with `because: TEXT` in mapping m, if it has them."""
        has = [k for k in ("unreachable_when", "because") if k in m]
        if not has:
            return None
        if len(has) == 1:
            missing = "because" if has[0] == "unreachable_when" else "unreachable_when"
            raise self.at(m.line_of(has[0])).error(f"{what} has {has[0]} without {missing}: an "
                                                   "acknowledged vacuity says both when and why")
        because = m["because"]
        if not isinstance(because, str) or not because.strip():
            raise self.at(m.line_of("because")).error(f"because of {what} must be a non-empty text",
                                                      shortened(because))
        line = m.line_of("unreachable_when")
        when = self.bool_expr(m["unreachable_when"], self.param_scope, line, f"unreachable_when of {what}")
        return Unreachable(when, " ".join(because.split()), line)
    def var_by_name(self, name: Any, line: int) -> tuple[int, Var]:
        for i, v in enumerate(self.vars_list):
            if v.name == name:
                return i, v
        raise self.at(line).error("not a declared var", name)
    def bool_expr(self, raw: Any, scope: E.Scope, line: int, what: str) -> E.Expr:
        block = isinstance(raw, YStr) and raw.block
        ex = E.check(raw, scope, self.at(line), line_offset_block=block, what=what)
        if ex.type != E.BOOL:
            raise self.at(line).error(f"{what} must be true/false, but this is {ex.type}", ex.text)
        return ex
    def int_expr(self, raw: Any, scope: E.Scope, line: int, what: str) -> E.Expr:
        block = isinstance(raw, YStr) and raw.block
        ex = E.check(raw, scope, self.at(line), line_offset_block=block, what=what)
        if ex.type != E.INT:
            raise self.at(line).error(f"{what} must be an int, but this is {ex.type}", ex.text)
        return ex


def shortened(value: Any) -> str:
    text = repr(value) if not isinstance(value, str) else value
    return text if len(text) <= 60 else text[:57] + "..."
