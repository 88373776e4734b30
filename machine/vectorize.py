"""Compile a spec into numpy functions that expand a whole BFS level at once.

The same checked expressions as `compiled.py`, rendered over arrays: a var is an int64
array (enum values as global string ids, so any two enum values compare as ints) or a
bool array; `and`/`or`/`not` become element-wise logic, `x if c else y` a `where`, a
decide table a `select` whose unmatched rows are reported. States are encoded as one
integer in a mixed-radix encoding of the declared domains.

Only specs whose semantics survive element-wise evaluation are vectorized: no `//` or
`%` (division by zero must be reported per transition), a step property may read a
choice its action does not make only behind `and`/`or`/`if` (the rows that would read
it are computed alongside and reported as the scalar engine does), counts and measures
not at all, and no expression may leave the 64-bit integers (Python's ints do
not wrap, numpy's do: a wrapped value could turn a violation into a false "proved").
An interval analysis of every expression over the declared domains, params and choice
values decides this before anything runs; when every value fits in 32 bits the arrays
are int32, which halves the memory traffic. Anything else runs on the scalar engine.
"""

from __future__ import annotations

import ast
import copy
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from .compiled import Machine, emit_set
from .ranges import widest_value
from .spec import DecideStage, SetStage, Spec, present

DENSE_LIMIT = 1 << 25        # largest product space indexed by a dense array (4 bytes a slot)
CODE_LIMIT = 1 << 62         # state codes stay below this (the hash index of explorer/codeset.py)
WIDE_LIMIT = 1 << 62         # no intermediate value may reach this: int64 arithmetic stays exact
NARROW_LIMIT = 1 << 31       # below this everywhere, int32 arithmetic is exact too


class NotVectorizable(Exception):
    """Why a spec runs on the scalar engine instead."""


@dataclass
class VAction:
    name: str
    index: int
    guard: Callable[[list], Any] | None
    step: Callable[..., tuple[list, Any, Any]]          # (vars, *choice tuples) -> (vars, rule ids, unmatched)
    conds: Callable[..., list] | None                    # each decide rule's condition
    combos: list[tuple]                                  # choice tuples with string fields as ids


@dataclass
class VMachine:
    """A Machine's vectorized twin: numpy functions and the state encoding."""

    machine: Machine
    lits: list[str]
    gid: dict[str, int]
    sizes: list[int]
    strides: list[int]
    lows: list[int]
    kinds: list[str]
    local: list[np.ndarray | None]        # enum: global id -> local index (-1 if not a value)
    values_of: list[np.ndarray | None]    # enum: local index -> global id
    space: int
    int_t: Any                            # np.int32 or np.int64: wide enough for every expression
    actions: list[VAction]
    is_terminal: Callable[[list], Any]
    label: Callable[[list], Any] | None
    invariants: dict[str, Callable[[list], Any]] = field(default_factory=dict)
    reachables: dict[str, Callable[[list], Any]] = field(default_factory=dict)
    step_props: dict[str, dict[int, Callable[..., Any]]] = field(default_factory=dict)   # name -> action -> fn
    step_needs: dict[str, dict[int, Callable[..., Any]]] = field(default_factory=dict)   # rows reading a missing choice
    variants: dict[str, tuple[Callable[[list], Any], int]] = field(default_factory=dict)
    edge_weights: dict[str, dict[int, Callable[..., Any]]] = field(default_factory=dict)  # measures + counts

    # -- the encoding
    def encode(self, arrays: list) -> np.ndarray:
        code = np.zeros(len(arrays[0]) if len(arrays) else 0, dtype=np.int64)
        for i, a in enumerate(arrays):
            code += self.local_index(i, a) * self.strides[i]
        return code

    def local_index(self, i: int, a: Any) -> np.ndarray:
        local = self.local[i]
        if local is not None:
            return local[np.asarray(a, dtype=np.int64)]
        if self.kinds[i] == "bool":
            return np.asarray(a, dtype=np.int64)
        return np.asarray(a, dtype=np.int64) - self.lows[i]     # ints, and enums whose ids are a run

    def in_domain(self, i: int, a: np.ndarray) -> np.ndarray:
        """Which values of int var i (as a step computed them) lie inside its declared range;
        enums and bools cannot leave their domain (their values are checked statically)."""
        return (a >= self.lows[i]) & (a <= self.lows[i] + self.sizes[i] - 1)

    def shift(self, i: int, new: np.ndarray, old: np.ndarray) -> np.ndarray:
        """How much a state's code moves when var i goes from `old` to `new` (both in domain)."""
        local = self.local[i]
        if local is not None:
            return (local[new] - local[old]) * self.strides[i]
        if self.kinds[i] == "bool":
            return (new.astype(self.int_t) - old.astype(self.int_t)) * self.strides[i]
        return (new - old) * self.strides[i]

    def decode(self, codes: np.ndarray) -> list[np.ndarray]:
        """One array per var (ints and enum ids as `int_t`, bools as bool). Digits are
        peeled from the most significant var down with `//` and a multiply: numpy divides
        by a scalar quickly but computes `%` slowly."""
        rest = codes.astype(self.int_t if self.space < 2 ** 31 else np.int64, copy=False)
        out = []
        for i in range(len(self.sizes)):
            idx = rest // self.strides[i] if self.strides[i] != 1 else rest
            if i + 1 < len(self.sizes):
                rest = rest - idx * self.strides[i]
            if idx.dtype != self.int_t:
                idx = idx.astype(self.int_t)
            if self.kinds[i] == "bool":
                out.append(idx.astype(bool))
            elif self.local[i] is not None:
                out.append(present(self.values_of[i])[idx])
            else:
                out.append(idx + self.lows[i])
        return out

    def to_python(self, i: int, value: Any) -> Any:
        kind = self.kinds[i]
        if kind == "int":
            return int(value)
        if kind == "bool":
            return bool(value)
        return self.lits[int(value)]



def vectorize(m: Machine) -> VMachine:
    """Build the numpy twin of a compiled (not bound, not Python) machine, or raise NotVectorizable."""
    spec = m.spec
    if m.bound_to or spec.python:
        raise NotVectorizable("the spec runs real code (bound or Python); the vector engine runs YAML stages")
    lits = _literals(spec, m)
    gid = {s: i for i, s in enumerate(lits)}
    sizes: list[int] = []
    lows: list[int] = []
    kinds: list[str] = []
    local: list[np.ndarray | None] = []
    for v, b in zip(spec.vars, m.bounds):
        kinds.append(v.kind)
        if v.kind == "int":
            b = present(b)
            lows.append(b[0])
            sizes.append(b[1] - b[0] + 1)
            local.append(None)
        elif v.kind == "bool":
            lows.append(0)
            sizes.append(2)
            local.append(None)
        else:
            ids = [gid[value] for value in v.values]
            sizes.append(len(v.values))
            if ids == list(range(ids[0], ids[0] + len(ids))):
                lows.append(ids[0])             # the usual case: its ids are a run, so arithmetic maps them
                local.append(None)
            else:
                lows.append(0)
                table = np.full(len(lits), -1, dtype=np.int64)
                for k, value in enumerate(v.values):
                    table[gid[value]] = k
                local.append(table)
    space = 1
    strides = []
    for size in reversed(sizes):
        strides.append(space)
        space *= size
    strides.reverse()
    if space >= CODE_LIMIT:
        raise NotVectorizable(f"the product of the domains ({space:,} states) does not fit a "
                              f"state code (below 2^62)")
    widest = widest_value(spec, m, len(lits))
    if widest >= WIDE_LIMIT:
        raise NotVectorizable(f"an expression can reach {widest:,}, beyond exact 64-bit arithmetic")
    int_t = np.int32 if widest < NARROW_LIMIT and space < NARROW_LIMIT else np.int64
    gen = _Gen(spec, m, gid, int_t)
    try:
        g = gen.compile()
    except RecursionError:      # `a or b or ...` thousands long is flat for Python, a deep `|` chain here
        raise NotVectorizable("an expression is too long for the generated array code (Python's "
                              "compiler nests too deeply)") from None
    actions = []
    for ai, a in enumerate(m.actions):
        combos = [tuple(tuple(gid[x] if isinstance(x, str) else x for x in item) for item in combo)
                  for combo in a.combos]
        actions.append(VAction(a.name, ai, g.get(f"vguard_{ai}"), g[f"vstep_{ai}"], g.get(f"vconds_{ai}"),
                               combos))
    values_of = [np.array([gid[x] for x in v.values], dtype=int_t) if v.kind == "enum" else None
                 for v in spec.vars]
    vm = VMachine(m, lits, gid, sizes, strides, lows, kinds, local, values_of, space, int_t, actions,
                  g["vterminal"], g.get("vlabel"))
    for k, p in enumerate(spec.properties):
        if p.name in m.inactive:
            continue
        if p.kind == "invariant":
            vm.invariants[p.name] = g[f"vprop_{k}"]
        elif p.kind == "reachable":
            vm.reachables[p.name] = g[f"vprop_{k}"]
        elif p.kind == "variant":
            vm.variants[p.name] = (g[f"vprop_{k}"], m.variants[p.name][1])
        elif p.kind == "step_invariant":
            vm.step_props[p.name] = {ai: g[f"vprop_{k}_{ai}"] for ai in range(len(m.actions))}
            vm.step_needs[p.name] = {ai: g[f"vneed_{k}_{ai}"] for ai in range(len(m.actions))
                                     if f"vneed_{k}_{ai}" in g}
        elif p.kind == "terminates_within" and p.count is not None:
            vm.edge_weights[p.name] = {ai: g[f"vcount_{k}_{ai}"] for ai in range(len(m.actions))}
    for k, ms in enumerate(spec.measures):
        vm.edge_weights[ms.name] = {ai: g[f"vmeasure_{k}_{ai}"] for ai in range(len(m.actions))}
    return vm


def _literals(spec: Spec, m: Machine) -> list[str]:
    seen: dict[str, None] = {}
    for v in spec.vars:
        for x in v.values:
            seen.setdefault(x)
    for a in m.actions:
        seen.setdefault(a.name)
        for combo in a.combos:
            for item in combo:
                for x in item:
                    if isinstance(x, str):
                        seen.setdefault(x)
    for act in spec.actions:
        if act.decide is not None:
            for r in act.decide.rules:
                seen.setdefault(r.name)
    for node in _all_exprs(spec):
        for sub in ast.walk(node):
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                seen.setdefault(sub.value)
    if spec.terminal is not None:
        for value in spec.terminal.values:
            if isinstance(value, str):
                seen.setdefault(value)
    return list(seen)


def _all_exprs(spec: Spec) -> list[ast.expr]:
    out = []
    for a in spec.actions:
        if a.guard is not None:
            out.append(a.guard.py)
        for st in a.stages:
            if isinstance(st, SetStage):
                out += [x.value.py for x in st.assigns]
            else:
                out += [r.then.py for r in st.rules] + [r.when.py for r in st.rules if r.when is not None]
    for p in spec.properties:
        for ex in (p.expr, p.count):
            if ex is not None:
                out.append(ex.py)
    out += [ms.expr.py for ms in spec.measures]
    if spec.terminal is not None:
        out += [x.py for x in (spec.terminal.when, spec.terminal.label) if x is not None]
    return out


def _where(c: Any, x: Any, y: Any) -> Any:
    return np.where(c, x, y)


def _isin(x: Any, values: tuple) -> Any:
    out = np.zeros(np.shape(x), dtype=bool)
    for v in values:
        out = out | (x == v)
    return out


def _minimum(*args: Any) -> Any:
    out = args[0]
    for a in args[1:]:
        out = np.minimum(out, a)
    return out


def _maximum(*args: Any) -> Any:
    out = args[0]
    for a in args[1:]:
        out = np.maximum(out, a)
    return out


_COMPOUND = (ast.BinOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.UnaryOp, ast.Call)


class _Gen:
    """Renders the spec's checked expression ASTs as numpy source, then compiles it once."""

    def __init__(self, spec: Spec, m: Machine, gid: dict[str, int], int_t: Any):
        self.spec, self.m, self.gid, self.int_t = spec, m, gid, int_t
        self.shared: dict[str, str] = {}        # ast.dump of a sub-expression -> its temporary
        self.missing_ok = False                 # render a choice the action does not make as 0

    def need(self, node: ast.AST, action: int) -> str | None:
        """Code for the rows where evaluating `node` as Python does (`and`, `or` and `if`
        stop early) reads a choice `action` does not make: there the scalar engine reports
        `well_defined`. None when no row can."""
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id.startswith("c_"):
            return "True" if node.value.id[2:] not in self.m.actions[action].choice_names else None
        if isinstance(node, ast.BoolOp):
            acc = self.need(node.values[-1], action)
            for v in reversed(node.values[:-1]):
                if acc is not None:         # the rest is evaluated only where v does not decide
                    go_on = self.src(v, action)
                    go_on = (f"np.asarray({go_on}, dtype=bool)" if isinstance(node.op, ast.And)
                             else f"np.logical_not({go_on})")
                    acc = f"({go_on} & {acc})"
                own = self.need(v, action)
                if own is not None:
                    acc = own if acc is None else f"({own} | {acc})"
            return acc
        if isinstance(node, ast.IfExp):
            parts = []
            test = self.src(node.test, action)
            for branch, guard in ((node.body, f"np.asarray({test}, dtype=bool)"),
                                  (node.orelse, f"np.logical_not({test})")):
                inner = self.need(branch, action)
                if inner is not None:
                    parts.append(f"({guard} & {inner})")
            own = self.need(node.test, action)
            parts = ([own] if own is not None else []) + parts
            return "(" + " | ".join(parts) + ")" if parts else None
        if isinstance(node, ast.Compare) and len(node.ops) > 1 and \
                any(self.need(c, action) is not None for c in node.comparators[1:]):
            raise NotVectorizable("a chained comparison reads a choice the action does not make")
        parts = [x for x in (self.need(c, action) for c in ast.iter_child_nodes(node)) if x is not None]
        return "(" + " | ".join(parts) + ")" if parts else None

    def share(self, w: Callable[[str], None], exprs: list[ast.expr]) -> None:
        """Compute once, into a temporary, each compound sub-expression that occurs more than
        once in one stage (a guard test repeated in every assignment is typical): each
        numpy operation is a pass over the whole level. Temporaries hold for this stage only."""
        self.shared = {}
        counts = Counter(ast.dump(n) for e in exprs for n in ast.walk(e) if isinstance(n, _COMPOUND))

        def visit(node: ast.AST) -> None:
            if isinstance(node, _COMPOUND) and counts[ast.dump(node)] > 1:
                key = ast.dump(node)
                if key not in self.shared:
                    text = self.src(node)
                    self.shared[key] = f"_t{len(self.shared)}"
                    w(f"    {self.shared[key]} = {text}")
                return
            for child in ast.iter_child_nodes(node):
                visit(child)
        for e in exprs:
            visit(e)

    # -- expressions
    def src(self, node: ast.AST, action: int | None = None) -> str:
        if self.shared and isinstance(node, _COMPOUND) and ast.dump(node) in self.shared:
            return self.shared[ast.dump(node)]
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                return f"_I({self.gid[node.value]})"
            if isinstance(node.value, bool):
                return repr(node.value)
            return f"_I({node.value!r})"        # typed, so `x if c else 0` stays int_t
        if isinstance(node, ast.Name):
            if node.id == "action":
                if action is None:
                    raise NotVectorizable("`action` outside a step expression")
                return f"_I({self.gid[self.m.actions[action].name]})"
            return node.id                          # v_i, p_x, rule, min/max/abs handled in Call
        if isinstance(node, ast.Subscript):
            base = cast(ast.Name, node.value).id           # compiled subscripts: s[k], c_x[k]
            k = cast(int, cast(ast.Constant, node.slice).value)
            if base in ("s", "a", "b"):
                return f"{base.upper()}[{k}]"
            if base.startswith("c_"):
                name = base[2:]
                if action is not None and name not in self.m.actions[action].choice_names:
                    if self.missing_ok:
                        return "0"          # a stand-in: `need` marks the rows that would read it
                    raise NotVectorizable(f"a step expression reads choice {name}, which action "
                                          f"{self.m.actions[action].name} does not make")
                return f"{base}[{k}]"
            raise NotVectorizable(f"unexpected subscript of {base}")
        if isinstance(node, ast.BoolOp):
            joiner = " & " if isinstance(node.op, ast.And) else " | "
            return "(" + joiner.join(f"np.asarray({self.src(v, action)}, dtype=bool)" for v in node.values) + ")"
        if isinstance(node, ast.UnaryOp):
            inner = self.src(node.operand, action)
            if isinstance(node.op, ast.Not):
                return f"np.logical_not({inner})"
            return f"({'-' if isinstance(node.op, ast.USub) else '+'}({inner}))"
        if isinstance(node, ast.BinOp):
            if not isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
                raise NotVectorizable("// and % need a per-transition division-by-zero check")
            sym = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*"}[type(node.op)]
            return f"({self.src(node.left, action)} {sym} {self.src(node.right, action)})"
        if isinstance(node, ast.Compare):
            parts = []
            left = node.left
            for op, right in zip(node.ops, node.comparators):
                if isinstance(op, (ast.In, ast.NotIn)):
                    values = "(" + "".join(self.src(e, action) + ", " for e in cast(ast.Tuple, right).elts) + ")"
                    part = f"_isin({self.src(left, action)}, {values})"
                    parts.append(part if isinstance(op, ast.In) else f"np.logical_not({part})")
                else:
                    cmp = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">",
                           ast.GtE: ">="}[type(op)]
                    parts.append(f"({self.src(left, action)} {cmp} {self.src(right, action)})")
                left = right
            return parts[0] if len(parts) == 1 else "(" + " & ".join(parts) + ")"
        if isinstance(node, ast.IfExp):
            return (f"_where({self.src(node.test, action)}, {self.src(node.body, action)}, "
                    f"{self.src(node.orelse, action)})")
        if isinstance(node, ast.Call):
            fn = {"min": "_minimum", "max": "_maximum", "abs": "np.abs"}[cast(ast.Name, node.func).id]
            return f"{fn}(" + ", ".join(self.src(a, action) for a in node.args) + ")"
        if isinstance(node, ast.Tuple):
            return "(" + "".join(self.src(e, action) + ", " for e in node.elts) + ")"
        raise NotVectorizable(f"no vector form for {type(node).__name__}")

    # -- functions
    def compile(self) -> dict[str, Any]:
        spec, m = self.spec, self.m
        n = len(spec.vars)
        unpack = ", ".join(f"v_{i}" for i in range(n)) + ("," if n == 1 else "")
        pack = "[" + ", ".join(f"v_{i}" for i in range(n)) + "]"
        out: list[str] = []
        w = out.append
        for ai, a in enumerate(spec.actions):
            if a.guard is not None:
                w(f"def vguard_{ai}(S):\n    return {self.src(folded(a.guard.py, None))}\n")
            args = ", ".join(["V"] + [f"c_{c}" for c, _ in a.choices])
            w(f"def vstep_{ai}({args}):")
            w(f"    {unpack} = V")
            w("    rule = -1\n    unmatched = False")
            decide_done = False
            for st in a.stages:
                if isinstance(st, SetStage):
                    self.share(w, [x.value.py for x in st.assigns])
                    emit_set(w, st, lambda ex: self.src(ex.py))
                else:
                    self.share(w, [r.then.py for r in st.rules] + [r.when.py for r in st.rules if r.when])
                    self._decide(w, st, a.name)
                    decide_done = True
                self.shared = {}
            w(f"    return {pack}, rule, unmatched\n")
            if decide_done:
                w(f"def vconds_{ai}({args}):")
                w(f"    {unpack} = V")
                for st in a.stages:
                    if isinstance(st, SetStage):
                        self.share(w, [x.value.py for x in st.assigns])
                        emit_set(w, st, lambda ex: self.src(ex.py))
                        self.shared = {}
                    else:
                        conds = ", ".join(self.src(r.when.py) if r.when is not None else "True"
                                          for r in st.rules)
                        w(f"    return [{conds}]")
                        break
                w("")
        t = spec.terminal
        if t is None:
            w("def vterminal(S):\n    return False\n")
        elif t.when is not None:
            w(f"def vterminal(S):\n    return {self.src(t.when.py)}\n")
        else:
            values = tuple(self.gid[x] if isinstance(x, str) else x for x in t.values)
            label = present(t.label)
            w(f"def vlabel(S):\n    return {self.src(label.py)}\n")
            w(f"def vterminal(S):\n    return _isin({self.src(label.py)}, {values!r})\n")
        step_args = ", ".join(["B", "A", "rule"] + [f"c_{c}" for c in spec.choice_names])
        for k, p in enumerate(spec.properties):
            if p.name in m.inactive:
                continue
            if p.kind in ("invariant", "reachable", "variant"):
                w(f"def vprop_{k}(S):\n    return {self.src(present(p.expr).py)}\n")
            elif p.kind == "step_invariant":
                for ai in range(len(m.actions)):
                    expr = folded(present(p.expr).py, m.actions[ai].name)
                    self.missing_ok = True
                    w(f"def vprop_{k}_{ai}({step_args}):\n    return {self.src(expr, ai)}\n")
                    need = self.need(expr, ai)
                    self.missing_ok = False
                    if need is not None:
                        w(f"def vneed_{k}_{ai}({step_args}):\n    return {need}\n")
            elif p.kind == "terminates_within" and p.count is not None:
                for ai in range(len(m.actions)):
                    w(f"def vcount_{k}_{ai}({step_args}):\n    return {self.src(folded(p.count.py, m.actions[ai].name), ai)}\n")
        for k, ms in enumerate(spec.measures):
            for ai in range(len(m.actions)):
                w(f"def vmeasure_{k}_{ai}({step_args}):\n    return {self.src(folded(ms.expr.py, m.actions[ai].name), ai)}\n")
        source = "\n".join(out) + "\n"
        g: dict[str, Any] = {"__builtins__": {}, "np": np, "bool": bool, "_where": _where, "_isin": _isin,
                             "_minimum": _minimum, "_maximum": _maximum,
                             "_I": self.int_t, **{"p_" + k: self._param(v) for k, v in m.params.items()}}
        exec(compile(source, f"<haltproof-vector:{spec.path}>", "exec"), g)
        g["__source__"] = source
        return g

    def _param(self, value: int) -> Any:
        """A param as a typed scalar where it fits (a param no expression reads may not)."""
        info = np.iinfo(self.int_t)
        return self.int_t(value) if info.min <= value <= info.max else value

    def _decide(self, w: Callable[[str], None], st: DecideStage, action: str) -> None:
        """The table as nested `where`s from the last rule up, so the first matching rule
        wins; only a table whose last rule has a condition can leave rows unmatched."""
        var = f"v_{st.var}"
        rules = st.rules
        last = rules[-1]
        if last.when is None:
            value, rid, open_end = self.src(last.then.py), f"_I({self.gid[last.name]})", False
            rules = rules[:-1]                  # the catch-all is the innermost value
        else:
            value, rid, open_end = var, "_I(-1)", True
        for r in reversed(rules):
            w(f"    _c = {self.src(present(r.when).py)}")     # only the last rule may go without `when`
            w(f"    _v, _r = _where(_c, {self.src(r.then.py)}, {value}), _where(_c, _I({self.gid[r.name]}), {rid})")
            value, rid = "_v", "_r"
        w(f"    {var}, rule = {value}, {rid}")
        w(f"    unmatched = {'rule < 0' if open_end else 'False'}")


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
