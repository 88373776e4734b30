"""Interval bounds of a spec's expressions, for the vector engine's fixed-width integers.

The scalar engine computes with Python ints, which never wrap; numpy's int32 and int64
do, silently. A wrapped intermediate could turn a violated property into a false
"proved", so before a spec is vectorized every expression is bounded over the declared
domains, the params and the choice values, through the stages of each action (a set
stage may leave a var outside its domain before a later stage reads it). The widest
bound decides the array width: int32 below 2^31, int64 below 2^62, otherwise the
scalar engine.
"""

from __future__ import annotations

import ast
from typing import Any, cast

from .spec import DecideStage, SetStage, Spec

Bound = tuple[int, int]


def widest_value(spec: Spec, m: Any, nlits: int) -> int:
    """The largest absolute value any expression of `spec` (instantiated as `m`) can take,
    any sub-expression included; enum values count as their ids (below `nlits`)."""
    r = _Ranges(spec, m, nlits)
    for lo, hi in r.domains:                  # decoding adds the low end; checks compare both
        r.widest = max(r.widest, abs(lo), abs(hi))
    for a in spec.actions:
        if a.guard is not None:
            r.of(a.guard.py, {})
        env: dict[int, Bound] = {}
        for st in a.stages:
            if isinstance(st, SetStage):
                after = dict(env)
                for x in st.assigns:
                    after[x.var] = r.of(x.value.py, env)
                env = after
            else:
                assert isinstance(st, DecideStage)
                out = r.var_bound(st.var, env)
                for rule in st.rules:
                    if rule.when is not None:
                        r.of(rule.when.py, env)
                    out = _union(out, r.of(rule.then.py, env))
                env = {**env, st.var: out}
    for p in spec.properties:
        for ex in (p.expr, p.count):
            if ex is not None:
                r.of(ex.py, {})
    for ms in spec.measures:
        r.of(ms.expr.py, {})
    if spec.terminal is not None:
        for ex in (spec.terminal.when, spec.terminal.label):
            if ex is not None:
                r.of(ex.py, {})
    return r.widest


def _union(a: Bound, b: Bound) -> Bound:
    return (min(a[0], b[0]), max(a[1], b[1]))


class _Ranges:
    def __init__(self, spec: Spec, m: Any, nlits: int):
        self.params = m.params
        self.nlits = nlits
        self.domains: list[Bound] = []
        for v, b in zip(spec.vars, m.bounds):
            self.domains.append(b if v.kind == "int" else (0, 1) if v.kind == "bool" else (0, nlits))
        self.choices: dict[str, dict[int, Bound]] = {}
        for a in m.actions:
            for combo in a.combos:
                for name, item in zip(a.choice_names, combo):
                    per_item = self.choices.setdefault(name, {})
                    for k, x in enumerate(item):
                        b = self.constant(x)
                        per_item[k] = _union(per_item[k], b) if k in per_item else b
        self.widest = 0

    def constant(self, x: Any) -> Bound:
        if isinstance(x, str):
            return (0, self.nlits)
        return (int(x), int(x))

    def var_bound(self, i: int, env: dict[int, Bound]) -> Bound:
        return env.get(i, self.domains[i])

    def of(self, node: ast.AST, env: dict[int, Bound]) -> Bound:
        """The bound of `node` with the step's vars in `env` (absent: their domain)."""
        b = self._of(node, env)
        self.widest = max(self.widest, abs(b[0]), abs(b[1]))
        return b

    def _of(self, node: ast.AST, env: dict[int, Bound]) -> Bound:
        if isinstance(node, ast.Constant):
            return self.constant(node.value)
        if isinstance(node, ast.Name):
            if node.id.startswith("v_"):
                return self.var_bound(int(node.id[2:]), env)
            if node.id.startswith("p_"):
                return self.constant(self.params[node.id[2:]])
            return (-1, self.nlits)                       # rule, action: ids (-1: no rule)
        if isinstance(node, ast.Subscript):
            base, k = cast(ast.Name, node.value).id, cast(int, cast(ast.Constant, node.slice).value)  # compiled: s[k]
            if base in ("s", "a", "b"):
                return self.domains[k]                     # reached states lie in their domains
            return self.choices.get(base[2:], {}).get(k, (0, 0))
        if isinstance(node, ast.BoolOp):
            for v in node.values:
                self.of(v, env)
            return (0, 1)
        if isinstance(node, ast.UnaryOp):
            lo, hi = self.of(node.operand, env)
            if isinstance(node.op, ast.Not):
                return (0, 1)
            return (-hi, -lo) if isinstance(node.op, ast.USub) else (lo, hi)
        if isinstance(node, ast.BinOp):
            (a, b), (c, d) = self.of(node.left, env), self.of(node.right, env)
            if isinstance(node.op, ast.Add):
                return (a + c, b + d)
            if isinstance(node.op, ast.Sub):
                return (a - d, b - c)
            if isinstance(node.op, ast.Mult):
                products = (a * c, a * d, b * c, b * d)
                return (min(products), max(products))
            widest = max(abs(a), abs(b), abs(c), abs(d))      # // and %: never beyond an operand
            return (-widest, widest)
        if isinstance(node, ast.Compare):
            self.of(node.left, env)
            for right in node.comparators:
                for part in (right.elts if isinstance(right, ast.Tuple) else [right]):
                    self.of(part, env)
            return (0, 1)
        if isinstance(node, ast.IfExp):
            self.of(node.test, env)
            return _union(self.of(node.body, env), self.of(node.orelse, env))
        if isinstance(node, ast.Call):
            bounds = [self.of(x, env) for x in node.args]
            func = cast(ast.Name, node.func).id                # compiled calls: min, max, abs
            if func == "min":
                return (min(b[0] for b in bounds), min(b[1] for b in bounds))
            if func == "max":
                return (max(b[0] for b in bounds), max(b[1] for b in bounds))
            lo, hi = bounds[0]                               # abs
            if lo >= 0:
                return (lo, hi)
            return (-hi, -lo) if hi <= 0 else (0, max(-lo, hi))
        if isinstance(node, ast.Tuple):
            out: tuple[int, int] | None = None
            for e in node.elts:
                bound = self.of(e, env)
                out = bound if out is None else _union(out, bound)
            return out or (0, 0)
        raise TypeError(f"no bound for {type(node).__name__}")
