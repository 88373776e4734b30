"""Compile a spec into numpy functions that expand a whole BFS level at once.

The same checked expressions as `compiled.py`, built (as an AST) over arrays: a var is an int64
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
import functools
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeAlias, cast

import numpy as np

from . import astgen as A
from .compiled import Machine
from .fold import folded
from .ranges import widest_value
from .spec import Action, DecideStage, PropertyDecl, SetStage, Spec, present

DENSE_LIMIT = 1 << 25        # largest product space indexed by a dense array (4 bytes a slot)
CODE_LIMIT = 1 << 62         # state codes stay below this (the hash index of explorer/codeset.py)
WIDE_LIMIT = 1 << 62         # no intermediate value may reach this: int64 arithmetic stays exact
NARROW_LIMIT = 1 << 31       # below this everywhere, int32 arithmetic is exact too

Arrays: TypeAlias = list[np.ndarray]    # one array per var, row k of each together making a state


class NotVectorizable(Exception):
    """Why a spec runs on the scalar engine instead."""


@dataclass
class VAction:
    name: str
    index: int
    guard: Callable[[Arrays], Any] | None
    step: Callable[..., tuple[Arrays, Any, Any]]          # (vars, *choice tuples) -> (vars, rule ids, unmatched)
    conds: Callable[..., list[Any]] | None                    # each decide rule's condition
    combos: list[tuple[Any, ...]]                                  # choice tuples with string fields as ids


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
    is_terminal: Callable[[Arrays], Any]
    label: Callable[[Arrays], Any] | None
    invariants: dict[str, Callable[[Arrays], Any]] = field(default_factory=dict)
    reachables: dict[str, Callable[[Arrays], Any]] = field(default_factory=dict)
    obligations: dict[str, Callable[[Arrays], Any]] = field(default_factory=dict)   # liveness: where it is open
    step_props: dict[str, dict[int, Callable[..., Any]]] = field(default_factory=dict)   # name -> action -> fn
    step_needs: dict[str, dict[int, Callable[..., Any]]] = field(default_factory=dict)   # rows reading a missing choice
    variants: dict[str, tuple[Callable[[Arrays], Any], int]] = field(default_factory=dict)
    maxima: dict[str, Callable[[Arrays], Any]] = field(default_factory=dict)     # maximum: its expression
    chances: dict[str, Callable[[Arrays], Any]] = field(default_factory=dict)    # probability: its reach predicate
    edge_weights: dict[str, dict[int, Callable[..., Any]]] = field(default_factory=dict)  # measures + counts

    # -- the encoding
    def encode(self, arrays: list[Any]) -> np.ndarray:
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
        delta: np.ndarray
        if local is not None:
            delta = local[new] - local[old]
        elif self.kinds[i] == "bool":
            delta = new.astype(self.int_t) - old.astype(self.int_t)
        else:
            delta = new - old
        return delta * self.strides[i]

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
    if any(a.conditional for a in spec.actions):
        raise NotVectorizable("a conditional choice (when:): the vector engine expands every combination "
                              "of an action's choices in every state")
    if any(p.kind != "int" for p in spec.params):
        raise NotVectorizable("a bool or enum param: the vector engine binds params as ints")
    lits = _literals(spec, m)
    gid = {s: i for i, s in enumerate(lits)}
    sizes, lows, kinds, local = _digits(spec, m, lits, gid)
    strides, space = _strides(sizes)
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
    _attach(vm, g)
    return vm


def _digits(spec: Spec, m: Machine, lits: list[str],
            gid: dict[str, int]) -> tuple[list[int], list[int], list[str], list[np.ndarray | None]]:
    """Per var, its digit in a state's code: the number of values, the value of digit 0,
    the kind and, for an enum whose ids are not a run, the table from id to digit."""
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
    return sizes, lows, kinds, local


def _strides(sizes: list[int]) -> tuple[list[int], int]:
    """Each var's stride in the mixed-radix code (the last var varies fastest), and the
    size of the whole product space."""
    space = 1
    strides = []
    for size in reversed(sizes):
        strides.append(space)
        space *= size
    strides.reverse()
    return strides, space


def _attach(vm: VMachine, g: dict[str, Any]) -> None:
    """The generated functions of each active property and measure, by name."""
    m, spec = vm.machine, vm.machine.spec
    for k, p in enumerate(spec.properties):
        if p.name in m.inactive:
            continue
        if p.kind == "invariant":
            vm.invariants[p.name] = g[f"vprop_{k}"]
        elif p.kind == "reachable":
            vm.reachables[p.name] = g[f"vprop_{k}"]
        elif p.kind == "liveness":
            vm.obligations[p.name] = g[f"vprop_{k}"]
        elif p.kind == "variant":
            vm.variants[p.name] = (g[f"vprop_{k}"], m.variants[p.name][1])
        elif p.kind == "maximum":
            vm.maxima[p.name] = g[f"vprop_{k}"]
        elif p.kind == "probability" and f"vprop_{k}" in g:
            vm.chances[p.name] = g[f"vprop_{k}"]
        elif p.kind == "step_invariant":
            vm.step_props[p.name] = {ai: g[f"vprop_{k}_{ai}"] for ai in range(len(m.actions))}
            vm.step_needs[p.name] = {ai: g[f"vneed_{k}_{ai}"] for ai in range(len(m.actions))
                                     if f"vneed_{k}_{ai}" in g}
        elif p.kind == "terminates_within" and p.count is not None:
            vm.edge_weights[p.name] = {ai: g[f"vcount_{k}_{ai}"] for ai in range(len(m.actions))}
    for k, ms in enumerate(spec.measures):
        vm.edge_weights[ms.name] = {ai: g[f"vmeasure_{k}_{ai}"] for ai in range(len(m.actions))}


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


def _isin(x: Any, values: tuple[Any, ...]) -> Any:
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
    """Renders the spec's checked expression ASTs as numpy code (an AST), then compiles it once."""

    def __init__(self, spec: Spec, m: Machine, gid: dict[str, int], int_t: Any):
        self.spec, self.m, self.gid, self.int_t = spec, m, gid, int_t
        self.shared: dict[str, str] = {}        # ast.dump of a sub-expression -> its temporary
        self.missing_ok = False                 # render a choice the action does not make as 0

    def need(self, node: ast.AST, action: int) -> ast.expr | None:
        """Code for the rows where evaluating `node` as Python does (`and`, `or` and `if`
        stop early) reads a choice `action` does not make: there the scalar engine reports
        `well_defined`. None when no row can."""
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id.startswith("c_"):
            return A.const(True) if node.value.id[2:] not in self.m.actions[action].choice_names else None
        if isinstance(node, ast.BoolOp):
            acc = self.need(node.values[-1], action)
            for v in reversed(node.values[:-1]):
                if acc is not None:         # the rest is evaluated only where v does not decide
                    go_on = self.src(v, action)
                    go_on = _as_bool(go_on) if isinstance(node.op, ast.And) else _np("logical_not", go_on)
                    acc = ast.BinOp(go_on, ast.BitAnd(), acc)
                own = self.need(v, action)
                if own is not None:
                    acc = own if acc is None else ast.BinOp(own, ast.BitOr(), acc)
            return acc
        if isinstance(node, ast.IfExp):
            parts: list[ast.expr] = []
            test = self.src(node.test, action)
            for branch, guard in ((node.body, _as_bool(test)), (node.orelse, _np("logical_not", copy.deepcopy(test)))):
                inner = self.need(branch, action)
                if inner is not None:
                    parts.append(ast.BinOp(guard, ast.BitAnd(), inner))
            own = self.need(node.test, action)
            parts = ([own] if own is not None else []) + parts
            return _joined(parts, ast.BitOr) if parts else None
        if isinstance(node, ast.Compare) and len(node.ops) > 1 and \
                any(self.need(c, action) is not None for c in node.comparators[1:]):
            raise NotVectorizable("a chained comparison reads a choice the action does not make")
        parts = [x for x in (self.need(c, action) for c in ast.iter_child_nodes(node)) if x is not None]
        return _joined(parts, ast.BitOr) if parts else None

    def share(self, body: list[ast.stmt], exprs: list[ast.expr]) -> None:
        """Compute once, into a temporary, each compound sub-expression that occurs more than
        once in one stage (a guard test repeated in every assignment is typical): each
        numpy operation is a pass over the whole level. Temporaries hold for this stage only."""
        self.shared = {}
        counts = Counter(ast.dump(n) for e in exprs for n in ast.walk(e) if isinstance(n, _COMPOUND))

        def visit(node: ast.AST) -> None:
            if isinstance(node, _COMPOUND) and counts[ast.dump(node)] > 1:
                key = ast.dump(node)
                if key not in self.shared:
                    code = self.src(node)
                    self.shared[key] = f"_t{len(self.shared)}"
                    body.append(A.assign(self.shared[key], code))
                return
            for child in ast.iter_child_nodes(node):
                visit(child)
        for e in exprs:
            visit(e)

    # -- expressions
    def src(self, node: ast.AST, action: int | None = None) -> ast.expr:
        """`node` over arrays: constants typed, `and`/`or`/`not` element-wise, `if` a `where`."""
        if self.shared and isinstance(node, _COMPOUND) and ast.dump(node) in self.shared:
            return A.load(self.shared[ast.dump(node)])
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                return _typed(self.gid[node.value])
            if isinstance(node.value, bool):
                return A.const(node.value)
            return _typed(node.value)        # typed, so `x if c else 0` stays int_t
        if isinstance(node, ast.Name):
            if node.id == "action":
                if action is None:
                    raise NotVectorizable("`action` outside a step expression")
                return _typed(self.gid[self.m.actions[action].name])
            return A.load(node.id)                  # v_i, p_x, rule, min/max/abs handled in Call
        if isinstance(node, ast.Subscript):
            return self.subscript(node, action)
        if isinstance(node, ast.BoolOp):
            op = ast.BitAnd if isinstance(node.op, ast.And) else ast.BitOr
            return _joined([_as_bool(self.src(v, action)) for v in node.values], op)
        if isinstance(node, ast.UnaryOp):
            inner = self.src(node.operand, action)
            if isinstance(node.op, ast.Not):
                return _np("logical_not", inner)
            return ast.UnaryOp(ast.USub() if isinstance(node.op, ast.USub) else ast.UAdd(), inner)
        if isinstance(node, ast.BinOp):
            if not isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
                raise NotVectorizable("// and % need a per-transition division-by-zero check")
            return ast.BinOp(self.src(node.left, action), type(node.op)(), self.src(node.right, action))
        if isinstance(node, ast.Compare):
            return self.compare(node, action)
        if isinstance(node, ast.IfExp):
            return A.call(A.load("_where"), self.src(node.test, action), self.src(node.body, action),
                          self.src(node.orelse, action))
        if isinstance(node, ast.Call):
            fn = {"min": A.load("_minimum"), "max": A.load("_maximum"),
                  "abs": A.attr("np", "abs")}[cast(ast.Name, node.func).id]
            return A.call(fn, *(self.src(a, action) for a in node.args))
        if isinstance(node, ast.Tuple):
            return A.tuple_of([self.src(e, action) for e in node.elts])
        raise NotVectorizable(f"no vector form for {type(node).__name__}")

    def subscript(self, node: ast.Subscript, action: int | None) -> ast.expr:
        """A compiled subscript: `s[k]`, `a[k]`, `b[k]` (a var) or `c_x[k]` (a choice's field)."""
        base = cast(ast.Name, node.value).id
        k = cast(int, cast(ast.Constant, node.slice).value)
        if base in ("s", "a", "b"):
            return ast.Subscript(A.load(base.upper()), A.const(k), ast.Load())
        if base.startswith("c_"):
            name = base[2:]
            if action is not None and name not in self.m.actions[action].choice_names:
                if self.missing_ok:
                    return A.const(0)       # a stand-in: `need` marks the rows that would read it
                raise NotVectorizable(f"a step expression reads choice {name}, which action "
                                      f"{self.m.actions[action].name} does not make")
            return ast.Subscript(A.load(base), A.const(k), ast.Load())
        raise NotVectorizable(f"unexpected subscript of {base}")

    def compare(self, node: ast.Compare, action: int | None) -> ast.expr:
        """A comparison, a chained one as the `&` of its links; `in` as `_isin`."""
        parts: list[ast.expr] = []
        left = node.left
        for op, right in zip(node.ops, node.comparators):
            if isinstance(op, (ast.In, ast.NotIn)):
                values = A.tuple_of([self.src(e, action) for e in cast(ast.Tuple, right).elts])
                part: ast.expr = A.call(A.load("_isin"), self.src(left, action), values)
                parts.append(part if isinstance(op, ast.In) else _np("logical_not", part))
            else:
                parts.append(ast.Compare(self.src(left, action), [type(op)()], [self.src(right, action)]))
            left = right
        return parts[0] if len(parts) == 1 else _joined(parts, ast.BitAnd)

    # -- functions
    def compile(self) -> dict[str, Any]:
        """The module's functions, run once with the params bound (typed) as globals."""
        m = self.m
        g: dict[str, Any] = {"__builtins__": {}, "np": np, "bool": bool, "_where": _where, "_isin": _isin,
                             "_minimum": _minimum, "_maximum": _maximum,
                             "_I": self.int_t, **{"p_" + k: self._param(v) for k, v in m.params.items()}}
        module = ast.fix_missing_locations(self.module())
        exec(compile(module, f"<haltproof-vector:{self.spec.path}>", "exec"), g)
        return g

    def module(self) -> ast.Module:
        spec, m = self.spec, self.m
        out: list[ast.stmt] = []
        for ai, a in enumerate(spec.actions):
            if a.guard is not None:
                out.append(_returning(f"vguard_{ai}", ["S"], self.src(folded(a.guard.py, None))))
            out += self.step(ai, a)
        out += self.terminal()
        step_args = ["B", "A", "rule"] + [f"c_{c}" for c in spec.choice_names]
        for k, p in enumerate(spec.properties):
            if p.name in m.inactive:
                continue
            if p.kind in ("invariant", "reachable", "variant", "liveness", "maximum"):
                out.append(_returning(f"vprop_{k}", ["S"], self.src(present(p.expr).py)))
            elif p.kind == "probability":       # read after the exploration only: the scalar one will do
                try:
                    out.append(_returning(f"vprop_{k}", ["S"], self.src(present(p.expr).py)))
                except NotVectorizable:
                    pass
            elif p.kind == "step_invariant":
                out += self.step_property(k, p, step_args)
            elif p.kind == "terminates_within" and p.count is not None:
                out += [_returning(f"vcount_{k}_{ai}", step_args, self.src(folded(p.count.py, ma.name), ai))
                        for ai, ma in enumerate(m.actions)]
        for k, ms in enumerate(spec.measures):
            out += [_returning(f"vmeasure_{k}_{ai}", step_args, self.src(folded(ms.expr.py, ma.name), ai))
                    for ai, ma in enumerate(m.actions)]
        return ast.Module(out, [])

    def step_property(self, k: int, p: PropertyDecl, step_args: list[str]) -> list[ast.stmt]:
        """Per action, the step property over its transitions, and the rows where it would
        read a choice the action does not make (`vneed`), if any can."""
        out: list[ast.stmt] = []
        for ai in range(len(self.m.actions)):
            expr = folded(present(p.expr).py, self.m.actions[ai].name)
            self.missing_ok = True
            out.append(_returning(f"vprop_{k}_{ai}", step_args, self.src(expr, ai)))
            need = self.need(expr, ai)
            self.missing_ok = False
            if need is not None:
                out.append(_returning(f"vneed_{k}_{ai}", step_args, need))
        return out

    def unpack(self) -> ast.Assign:
        return A.assign(A.names([f"v_{i}" for i in range(len(self.spec.vars))], ast.Store()), A.load("V"))

    def set_stage(self, body: list[ast.stmt], st: SetStage) -> None:
        """A set stage as one simultaneous assignment (every right side sees the old values)."""
        self.share(body, [x.value.py for x in st.assigns])
        if len(st.assigns) == 1:
            body.append(A.assign(f"v_{st.assigns[0].var}", self.src(st.assigns[0].value.py)))
        elif st.assigns:
            targets = A.names([f"v_{x.var}" for x in st.assigns], ast.Store())
            body.append(A.assign(targets, A.tuple_of([self.src(x.value.py) for x in st.assigns])))
        self.shared = {}

    def step(self, ai: int, a: Action) -> list[ast.stmt]:
        """`vstep_i(V, choices...)` -> (vars, rule ids, unmatched rows), and `vconds_i` for
        an action with a decide table."""
        args = ["V"] + [f"c_{c}" for c, _ in a.choices]
        body: list[ast.stmt] = [self.unpack(), A.assign("rule", A.const(-1)),
                                A.assign("unmatched", A.const(False))]
        decide_done = False
        for st in a.stages:
            if isinstance(st, SetStage):
                self.set_stage(body, st)
                continue
            self.share(body, [r.then.py for r in st.rules] + [r.when.py for r in st.rules if r.when])
            self._decide(body, st)
            decide_done = True
            self.shared = {}
        state = ast.List([A.load(f"v_{i}") for i in range(len(self.spec.vars))], ast.Load())
        body.append(ast.Return(A.tuple_of([state, A.load("rule"), A.load("unmatched")])))
        out: list[ast.stmt] = [_function(f"vstep_{ai}", args, body)]
        if decide_done:
            conds: list[ast.stmt] = [self.unpack()]
            for st in a.stages:
                if isinstance(st, SetStage):
                    self.set_stage(conds, st)
                    continue
                values = [self.src(r.when.py) if r.when is not None else A.const(True) for r in st.rules]
                conds.append(ast.Return(ast.List(values, ast.Load())))
                break
            out.append(_function(f"vconds_{ai}", args, conds))
        return out

    def terminal(self) -> list[ast.stmt]:
        """`vterminal(S)`, and `vlabel(S)` for a terminal label."""
        t = self.spec.terminal
        if t is None:
            return [_returning("vterminal", ["S"], A.const(False))]
        if t.when is not None:
            return [_returning("vterminal", ["S"], self.src(t.when.py))]
        values = A.tuple_of([A.const(self.gid[x] if isinstance(x, str) else x) for x in t.values])
        label = present(t.label)
        return [_returning("vlabel", ["S"], self.src(label.py)),
                _returning("vterminal", ["S"], A.call(A.load("_isin"), self.src(label.py), values))]

    def _param(self, value: int) -> Any:
        """A param as a typed scalar where it fits (a param no expression reads may not)."""
        info = np.iinfo(self.int_t)
        return self.int_t(value) if info.min <= value <= info.max else value

    def _decide(self, body: list[ast.stmt], st: DecideStage) -> None:
        """The table as nested `where`s from the last rule up, so the first matching rule
        wins; only a table whose last rule has a condition can leave rows unmatched."""
        var = f"v_{st.var}"
        rules = st.rules
        last = rules[-1]
        value: ast.expr
        rid: ast.expr
        if last.when is None:
            value, rid, open_end = self.src(last.then.py), _typed(self.gid[last.name]), False
            rules = rules[:-1]                  # the catch-all is the innermost value
        else:
            value, rid, open_end = A.load(var), _typed(-1), True
        for r in reversed(rules):
            body.append(A.assign("_c", self.src(present(r.when).py)))  # only the last rule may go without `when`
            new = A.call(A.load("_where"), A.load("_c"), self.src(r.then.py), value)
            new_rid = A.call(A.load("_where"), A.load("_c"), _typed(self.gid[r.name]), rid)
            body.append(A.assign(A.names(["_v", "_r"], ast.Store()), A.tuple_of([new, new_rid])))
            value, rid = A.load("_v"), A.load("_r")
        body.append(A.assign(A.names([var, "rule"], ast.Store()), A.tuple_of([value, rid])))
        unmatched = ast.Compare(A.load("rule"), [ast.Lt()], [A.const(0)]) if open_end else A.const(False)
        body.append(A.assign("unmatched", unmatched))


def _typed(value: Any) -> ast.expr:
    """`_I(value)`: a constant of the arrays' int type."""
    return A.call(A.load("_I"), A.const(value))


def _np(name: str, *args: ast.expr) -> ast.expr:
    return A.call(A.attr("np", name), *args)


def _as_bool(value: ast.expr) -> ast.expr:
    """`np.asarray(value, dtype=bool)`."""
    return ast.Call(A.attr("np", "asarray"), [value], [ast.keyword("dtype", A.load("bool"))])


def _joined(parts: list[ast.expr], op: type[ast.operator]) -> ast.expr:
    """`a op b op c`, grouped from the left as Python reads it."""
    return functools.reduce(lambda x, y: ast.BinOp(x, op(), y), parts)


def _function(name: str, params: list[str], body: list[ast.stmt]) -> ast.FunctionDef:
    args = ast.arguments([], [ast.arg(p) for p in params], None, [], [], None, [])
    return ast.FunctionDef(name, args, body, [], None, None)


def _returning(name: str, params: list[str], value: ast.expr) -> ast.FunctionDef:
    return _function(name, params, [ast.Return(value)])
