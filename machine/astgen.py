"""Small builders of Python AST nodes, for the code machine/ generates (compiled.py's
per-spec module, sweep.py's BFS loop): code is built as nodes, never as text, and each
statement that evaluates a spec expression gets a line of its own mapped to its spec
line (`Lines`, `number_lines`), so an expression that fails is named by file and line.
"""

from __future__ import annotations

import ast
import copy
import itertools
from collections.abc import Sequence
from typing import Any, TypeVar

from . import expr as E

Node = TypeVar("Node", bound=ast.AST)


class Lines:
    """Per generated node that evaluates a spec expression, the spec line it came from.
    The nodes are kept alive here, so their ids stay unique while the map is used."""

    def __init__(self) -> None:
        self.marks: dict[int, int] = {}
        self.marked: list[ast.AST] = []

    def at(self, node: Node, line: int | None) -> Node:
        """`node`, noted as evaluating the spec's line `line` (when known)."""
        if line:
            self.marks[id(node)] = line
            self.marked.append(node)
        return node


def load(name: str) -> ast.Name:
    return ast.Name(name, ast.Load())


def store(name: str) -> ast.Name:
    return ast.Name(name, ast.Store())


def const(value: Any) -> ast.Constant:
    return ast.Constant(value)


def attr(obj: str, name: str) -> ast.Attribute:
    return ast.Attribute(load(obj), name, ast.Load())


def call(func: ast.expr, *args: ast.expr) -> ast.Call:
    return ast.Call(func, list(args), [])


def method(obj: str, name: str, *args: ast.expr) -> ast.Expr:
    """`obj.name(args)` as a statement."""
    return ast.Expr(call(attr(obj, name), *args))


def assign(target: str | ast.expr, value: ast.expr) -> ast.Assign:
    return ast.Assign([store(target) if isinstance(target, str) else target], value)


def tuple_of(items: Sequence[ast.expr], ctx: ast.expr_context | None = None) -> ast.Tuple:
    return ast.Tuple(list(items), ctx or ast.Load())


def names(ids: Sequence[str], ctx: ast.expr_context) -> ast.Tuple:
    """`a, b, c` (as a target with ast.Store())."""
    return tuple_of([ast.Name(n, ctx) for n in ids], ctx)


def all_of(*values: ast.expr) -> ast.expr:
    return ast.BoolOp(ast.And(), list(values))


def negate(value: ast.expr) -> ast.UnaryOp:
    return ast.UnaryOp(ast.Not(), value)


def incr(name: str) -> ast.AugAssign:
    return ast.AugAssign(store(name), ast.Add(), const(1))


def try_except(body: list[ast.stmt], errors: str, handler: list[ast.stmt], bind: str | None = None) -> ast.Try:
    """`try: body` / `except errors [as bind]: handler`."""
    return ast.Try(body, [ast.ExceptHandler(load(errors), bind, handler)], [], [])


class Inline(ast.NodeTransformer):
    """A spec expression with each read of a state var (`s[i]`, `b[i]`, `a[i]`) whose base is
    in `states` replaced by the generated code's own local or constant, and each name found
    in `names` replaced."""

    def __init__(self, states: dict[str, list[ast.expr]], names: dict[str, ast.expr]):
        self.states, self.names = states, names

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        base = node.value
        at = node.slice
        if isinstance(base, ast.Name) and base.id in self.states and isinstance(at, ast.Constant) \
                and isinstance(at.value, int):
            return copy.deepcopy(self.states[base.id][at.value])
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return copy.deepcopy(self.names[node.id]) if node.id in self.names else node


def inline(ex: E.Expr, states: dict[str, list[ast.expr]] | None = None,
           names: dict[str, ast.expr] | None = None) -> ast.expr:
    """A copy of `ex`'s tree with the substitutions of `Inline` (none by default)."""
    tree = Inline(states or {}, names or {}).visit(copy.deepcopy(ex.py))
    assert isinstance(tree, ast.expr), "an expression stays an expression"
    return tree


def number_lines(module: ast.Module, lines_of: Lines) -> dict[int, int]:
    """Give every statement, and every expression noted in `lines_of`, a line of its own (its
    other expressions share it), so a traceback names it; returns generated line -> spec line."""
    origin: dict[int, int] = {}
    lines = itertools.count(1)

    def place(node: ast.AST, line: int) -> int:
        spec_line = lines_of.marks.get(id(node))
        if isinstance(node, (ast.stmt, ast.excepthandler)) or spec_line is not None:
            line = next(lines)
            if spec_line is not None:
                origin[line] = spec_line
        last = line
        for child in ast.iter_child_nodes(node):
            last = max(last, place(child, line))
        if isinstance(node, (ast.stmt, ast.expr, ast.excepthandler, ast.arg)):
            node.lineno, node.end_lineno = line, last
            node.col_offset = node.end_col_offset = 0
        return last

    for node in module.body:
        place(node, 0)
    return origin
