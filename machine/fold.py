"""Deciding `action == ...` for one action, and simplifying what that settles.

A step expression shared by several actions often guards a choice read with the action's
name (`action == 'retry' and c_attempt > 1`). Folded for one action, the guard becomes a
constant and the and/or/not/if around it simplify, so what is left reads only the choices
that action makes. Both the scalar compiler (which asks whether an expression can fail)
and the vector compiler (which generates code per action) fold; neither depends on the other.
"""

from __future__ import annotations

import ast
import copy
from typing import cast


def folded(node: ast.expr, action: str | None) -> ast.expr:
    """`node` with `action == 'x'` decided for this action and and/or/not/if simplified
    (anywhere in the tree), so a step expression guarded by the action name never reads
    another action's choices."""
    return _Fold(action).visit(copy.deepcopy(node))


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
        kept = []
        for v in n.values:
            if isinstance(v, ast.Constant) and isinstance(v.value, bool):
                if v.value != is_and:            # False in and / True in or decides it
                    return ast.Constant(v.value)
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
            return self.visit(n.body if test.value else n.orelse)
        n.test = test
        n.body = self.visit(n.body)
        n.orelse = self.visit(n.orelse)
        return n
