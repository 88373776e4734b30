"""Past-time operators in state properties: once(e), historically(e), previous(e), since(a, b).

Each call becomes hidden monitor vars in the product state, as the pattern monitors do
(machine/patterns.py): every transition first advances them over the state it leaves (a set
stage placed before the action's own stages), and the property reads them together with the
current state. A monitor var holds the operator's value one state back, so its value *now* is
a small expression over the monitor and the argument now:

| operator | monitor (initially) | value in state i |
|---|---|---|
| once(e) | once(e) at i-1 (false) | monitor or e |
| historically(e) | historically(e) at i-1 (true) | monitor and e |
| since(a, b) | since(a, b) at i-1 (false) | b or (a and monitor) |
| previous(e) | e at i-1 (a placeholder: false, the var's first value), and `started` (false) | monitor if started else e |

So previous(e) in an initial state is e's value there (as if the run had stood still before
it began). Nesting works: an argument's value now is built from its own monitors, and every
update reads the state the transition leaves, before any monitor moves (one simultaneous
stage). Both engines explore the monitors like any var, so a violation has a shortest trace.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable
from dataclasses import dataclass

from . import expr as E


@dataclass(frozen=True)
class PastVar:
    """A monitor var to add: how it is declared, and its next value over the state left."""

    name: str
    kind: str                      # bool | int | enum
    type: E.Type
    init: object
    update: ast.expr               # over the state a transition leaves: var i is `v_i`
    values: tuple[str, ...] = ()   # enum
    like: int | None = None        # the user var whose domain (and first value) it takes: int (always), enum


def _slot(i: int) -> ast.expr:
    return ast.Subscript(ast.Name("s", ast.Load()), ast.Constant(i), ast.Load())


class _ToUpdate(ast.NodeTransformer):
    """`s[i]` (a var in the current state) -> `v_i` (the var in the state a transition leaves)."""

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        i = _var_index(node)
        if i is not None:
            return ast.Name(f"v_{i}", ast.Load())
        self.generic_visit(node)
        return node


def over_state_left(node: ast.expr) -> ast.expr:
    """An expression over the current state, rewritten over the state a transition leaves."""
    out = _ToUpdate().visit(copy.deepcopy(node))
    assert isinstance(out, ast.expr), "rewriting keeps an expression an expression"
    return out


def _var_index(node: ast.expr) -> int | None:
    if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "s"
            and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int)):
        return node.slice.value
    return None


class PastTimeMonitors:
    """Compiles the past-time calls of one property (its `E.Scope.past`). `allocate` adds a
    monitor var to the spec (declared by a function of the index it gets) and returns that index."""

    def __init__(self, prop: str, user_vars: int, allocate: Callable[[Callable[[int], PastVar]], int]):
        self.prop = prop
        self.user_vars = user_vars                  # the spec's own vars are 0 .. user_vars - 1
        self.allocate = allocate
        self.count = 0                              # monitor vars added
        self.started: int | None = None             # the `started` var, once previous() needs it
        self.known: dict[str, tuple[E.Type, ast.expr]] = {}    # the same call twice: one monitor

    def _add(self, declared: Callable[[int], PastVar]) -> int:
        self.count += 1
        return self.allocate(declared)

    def __call__(self, name: str, args: list[tuple[E.Type, ast.expr]], text: str) -> tuple[E.Type, ast.expr]:
        key = name + "".join(ast.dump(py) for _, py in args)
        if key not in self.known:
            self.known[key] = self._compile(name, args, " ".join(text.split()))
        typ, now = self.known[key]
        return typ, copy.deepcopy(now)

    def _compile(self, name: str, args: list[tuple[E.Type, ast.expr]], text: str) -> tuple[E.Type, ast.expr]:
        label = f"{self.prop}:{text}"
        if name == "previous":
            return self._previous(args[0], label)
        pys = [py for _, py in args]

        def declared(m: int) -> PastVar:       # its update reads its own index
            return PastVar(label, "bool", E.BOOL, name == "historically", over_state_left(self._now(name, pys, _slot(m))))
        m = self._add(declared)
        return E.BOOL, self._now(name, pys, _slot(m))

    @staticmethod
    def _now(name: str, args: list[ast.expr], monitor: ast.expr) -> ast.expr:
        if name == "once":
            return ast.BoolOp(ast.Or(), [monitor, args[0]])
        if name == "historically":
            return ast.BoolOp(ast.And(), [monitor, args[0]])
        return ast.BoolOp(ast.Or(), [args[1], ast.BoolOp(ast.And(), [args[0], monitor])])   # since(a, b)

    def _previous(self, arg: tuple[E.Type, ast.expr], label: str) -> tuple[E.Type, ast.expr]:
        typ, py = arg
        if self.started is None:
            started = PastVar(f"{self.prop}:started", "bool", E.BOOL, False, ast.Constant(True))
            self.started = self._add(lambda _: started)
        update = over_state_left(py)
        if isinstance(typ, E.BoolT):
            pv = PastVar(label, "bool", E.BOOL, False, update)
        elif isinstance(typ, E.EnumT):
            i = _var_index(py)
            like = i if i is not None and i < self.user_vars else None     # a var: its values, in its order
            values = tuple(sorted(typ.values))
            pv = PastVar(label, "enum", E.EnumT(typ.values, label), values[0], update, values, like)
        else:
            i = _var_index(py)
            if i is None or i >= self.user_vars:
                raise ValueError("previous() of an int takes a var (previous(x)), not an expression: "
                                 "write previous(x) + 1 for previous(x + 1)")
            pv = PastVar(label, "int", E.INT, None, update, like=i)
        m = self._add(lambda _: pv)
        now = ast.IfExp(_slot(self.started), _slot(m), py)
        return typ, now
