"""Static facts about checked expressions, shared by the compilers (compiled.py, sweep.py,
vectorize.py): `folded` decides `action == ...` for one action, and `can_fail` says
whether evaluating an expression can raise. It imports nothing from the compilers, so
each of them can use it without importing another.
"""

from __future__ import annotations

import ast
import copy
from typing import cast

from . import expr as E


def can_fail(ex: E.Expr, actions: list[tuple[str, set[str]]]) -> bool:
    """Whether evaluating ex can raise: only `//` and `%` (by zero) can, and a step
    expression reading a choice that one of `actions` (name, the choices it makes) does
    not make, once `action == ...` is decided for that action. The type checker rules out
    every other failure."""
    for node in ast.walk(ex.py):
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.FloorDiv, ast.Mod)):
            return True
    if not choices_read(ex.py):
        return False
    return any(choices_read(folded(ex.py, name)) - made for name, made in actions)


def choices_read(node: ast.AST) -> set[str]:
    """The names of the choices `node` reads (the loader writes choice x as `c_x[...]`)."""
    return {n.value.id[2:] for n in ast.walk(node)
            if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id.startswith("c_")}


def folded(node: ast.expr, action: str | None) -> ast.expr:
    """`node` with `action == 'x'` decided for this action and and/or/not/if simplified
    (anywhere in the tree), so a step expression guarded by the action name never reads
    another action's choices."""
    out = _Fold(action).visit(copy.deepcopy(node))
    assert isinstance(out, ast.expr), "folding keeps an expression an expression"
    return out


class _Fold(ast.NodeTransformer):
    def __init__(self, action: str | None):
        self.action = action

    def visit_Compare(self, n: ast.Compare) -> ast.AST:
        self.generic_visit(n)
        if self.action is None or len(n.ops) != 1:
            return n
        left, right, op = n.left, n.comparators[0], n.ops[0]
        if not (isinstance(left, ast.Name) and left.id == "action"):
            return n
        if isinstance(right, ast.Constant) and isinstance(op, (ast.Eq, ast.NotEq)):
            return ast.Constant((self.action == right.value) == isinstance(op, ast.Eq))
        if isinstance(right, ast.Tuple) and all(isinstance(e, ast.Constant) for e in right.elts) \
                and isinstance(op, (ast.In, ast.NotIn)):
            hit = self.action in [cast(ast.Constant, e).value for e in right.elts]
            return ast.Constant(hit == isinstance(op, ast.In))
        return n

    def visit_BoolOp(self, n: ast.BoolOp) -> ast.AST:
        self.generic_visit(n)
        is_and = isinstance(n.op, ast.And)
        kept: list[ast.expr] = []
        for v in n.values:
            if isinstance(v, ast.Constant) and isinstance(v.value, bool):
                if v.value != is_and:            # False in and / True in or decides it, but the
                    if not kept:                 # operands before it are still evaluated (and
                        return ast.Constant(v.value)   # may fail: a choice this action lacks)
                    return ast.BoolOp(op=n.op, values=[*kept, v])
                continue
            kept.append(v)
        if not kept:
            return ast.Constant(is_and)
        return kept[0] if len(kept) == 1 else ast.BoolOp(op=n.op, values=kept)

    def visit_UnaryOp(self, n: ast.UnaryOp) -> ast.AST:
        self.generic_visit(n)
        if isinstance(n.op, ast.Not) and isinstance(n.operand, ast.Constant) and isinstance(n.operand.value, bool):
            return ast.Constant(not n.operand.value)
        return n

    def visit_IfExp(self, n: ast.IfExp) -> ast.AST:
        test = self.visit(n.test)
        if isinstance(test, ast.Constant) and isinstance(test.value, bool):
            chosen: ast.AST = self.visit(n.body if test.value else n.orelse)
            return chosen
        n.test = test
        n.body = self.visit(n.body)
        n.orelse = self.visit(n.orelse)
        return n
