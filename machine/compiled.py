"""Compile a validated spec into plain Python step functions.

The checked expression ASTs are rendered into one Python module per spec (compiled
once), then executed once per parameter combination with the params bound as globals.
States are tuples of ints, bools and strings in var order; choices are tuples whose
item 0 is the label shown in traces. The explorer calls these functions in its inner
loop, so they do no checking the type system already did: only int ranges are checked
at run time (`domain_error`), because arithmetic, or a decide rule's constant, can leave
a range (a constant outside it is a `domains` violation only where its rule fires). For the scalar
engine the whole breadth-first loop is generated as well, with the expressions inline
(`_generate_sweep`), and compiled the first time it runs.
"""

from __future__ import annotations

import ast
import copy
import itertools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import CodeType
from typing import Any

from . import expr as E
from .errors import Problem, SpecError
from .spec import ChoiceSet, DecideStage, SetStage, Spec, negative_bound, present, shown_path, value_count
from .usercode import OutOfTime

MAX_PRODUCT = 1_000_000     # initial states, and choice combinations of one action per step


class EvalError(Exception):
    """A spec expression could not be evaluated on a reachable state (built-in `well_defined`)."""


# What evaluating a spec expression (or calling bound code, a CodeError) may raise on a state:
# anything else is a bug in haltproof.
EVAL_ERRORS = (EvalError, ZeroDivisionError)


class _NoRule(EvalError):
    def __init__(self, action: str, var: str):
        super().__init__(f"no rule of the decide table of action {action} (deciding {var}) matched")


class _MissingChoice:
    """Stands for a choice the current action does not make; reading it is an error."""

    __slots__ = ("name", "action")

    def __init__(self, name: str, action: str):
        self.name = name
        self.action = action

    def __getitem__(self, _index: int) -> Any:
        raise EvalError(f"the expression reads choice {self.name}, which action {self.action} "
                        "does not make (guard it with action == ...)")


def _src(ex: E.Expr) -> str:
    return ast.unparse(ex.py)


def can_fail(ex: E.Expr, actions: list[tuple[str, set[str]]]) -> bool:
    """Whether evaluating ex can raise: only `//` and `%` (by zero) can, and a step
    expression reading a choice that one of `actions` (name, the choices it makes) does
    not make, once `action == ...` is decided for that action. The type checker rules out
    every other failure."""
    for node in ast.walk(ex.py):
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.FloorDiv, ast.Mod)):
            return True
    if not _choices_read(ex.py):
        return False
    from .vectorize import folded        # vectorize imports this module
    return any(_choices_read(folded(ex.py, name)) - made for name, made in actions)


def _choices_read(node: ast.AST) -> set[str]:
    return {n.value.id[2:] for n in ast.walk(node)
            if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id.startswith("c_")}


def _made(spec: Spec) -> list[tuple[str, set[str]]]:
    """Each action with the choices it makes."""
    return [(a.name, {c for c, _ in a.choices}) for a in spec.actions]


@dataclass
class CompiledAction:
    name: str
    index: int
    guard: Callable[[tuple], bool] | None
    step: Callable[..., tuple[tuple, str | None]]
    combos: list[tuple]                       # one tuple of choice items per combination
    labels: list[dict[str, Any]]              # {choice name: label} per combination
    step_args: list[tuple]                    # per combination: every spec choice, missing ones as sentinels
    choice_names: list[str]
    record_fields: dict[str, list[str]] = field(default_factory=dict)   # record choices: field names


@dataclass
class Machine:
    """One spec instantiated for one parameter combination: everything the explorer calls."""

    spec: Spec
    params: dict[str, int]
    var_names: list[str]
    inits: list[tuple]
    actions: list[CompiledAction]
    is_terminal: Callable[[tuple], bool]
    label: Callable[[tuple], Any] | None
    domain_error: Callable[[tuple], int]
    bounds: list[tuple[int, int] | None]       # per var: (lo, hi) for ints
    invariants: dict[str, Callable[[tuple], bool]] = field(default_factory=dict)
    reachables: dict[str, Callable[[tuple], bool]] = field(default_factory=dict)
    step_invariants: dict[str, Callable[..., bool]] = field(default_factory=dict)
    counts: dict[str, Callable[..., bool]] = field(default_factory=dict)
    variants: dict[str, tuple[Callable[[tuple], int], int]] = field(default_factory=dict)
    within: dict[str, int] = field(default_factory=dict)
    replay_lines: list[tuple[str, Callable[..., Any], bool]] = field(default_factory=list)
    inactive: set[str] = field(default_factory=set)   # properties whose `when` is false here
    measures: dict[str, Callable[..., Any]] = field(default_factory=dict)   # name -> step fn (0/1 or int)
    rule_conditions: dict[int, Callable[..., tuple]] = field(default_factory=dict)  # action -> each rule's `when`
    all_invariants: tuple[list[str], Callable[[tuple], int]] | None = None  # names, first failing or -1
    fallible: set[str] | None = None                  # properties that may fail to evaluate (None: any)
    bound_to: str | None = None                       # the adapter whose code the actions run
    binding: Callable[[], str] | None = None          # bound: how the code reaches a state (machine/live.py)
    drift: Callable[[], tuple[Any, ...] | None] | None = None   # bound: where code and stages first disagree
    source: Source | None = None                      # the generated module the functions come from
    sweep: GeneratedLoop | None = None                # the whole BFS loop, generated (see _generate_sweep)

    def state_dict(self, state: tuple) -> dict[str, Any]:
        return dict(zip(self.var_names, state))

    def domain_text(self, i: int) -> str:
        """The declared domain of var i, as shown in messages."""
        var = self.spec.vars[i]
        if var.kind == "int":
            return "{}..{}".format(*present(self.bounds[i]))
        if var.kind == "bool":
            return "true/false"
        return "{" + ", ".join(var.values) + "}"


class CompiledSpec:
    """A spec's generated Python module, compiled once; `instantiate` binds the params."""

    def __init__(self, spec: Spec):
        self.spec = spec
        self.generated = _generate(spec)
        self.source = self.generated.text
        self.code = compile(self.source, self.generated.filename, "exec")
        self._sweep_code: CodeType | None = None

    @property
    def sweep_code(self) -> CodeType:
        """The generated BFS loop (see _generate_sweep), compiled the first time it is run."""
        if self._sweep_code is None:
            text, origin = _generate_sweep(self.spec)
            filename = f"<haltproof:{self.spec.path}:sweep>"
            self.generated.modules[filename] = origin      # its errors are named by spec line too
            self._sweep_code = compile(text, filename, "exec")
        return self._sweep_code

    def instantiate(self, params: dict[str, int]) -> Machine:
        spec = self.spec
        shown = ", ".join(f"{k}={v}" for k, v in params.items())
        where = f" (with {shown})" if shown else ""

        def fail(line: int | None, message: str, text: object = None) -> SpecError:
            return SpecError([Problem(spec.path, line, message + where,
                                      None if text is None else str(text))])

        pns = {"p_" + k: v for k, v in params.items()}

        def value(ex: E.Expr, line: int) -> Any:
            try:
                return eval(compile(ast.fix_missing_locations(ast.Expression(ex.py)), "<param>", "eval"),
                            {"__builtins__": {}, "min": min, "max": max, "abs": abs}, pns)
            except ZeroDivisionError:
                raise fail(line, "division by zero", ex.text) from None

        bounds: list[tuple[int, int] | None] = []
        for v in spec.vars:
            if v.kind == "int":
                lo, hi = value(present(v.lo), v.line), value(present(v.hi), v.line)
                if lo > hi:
                    raise fail(v.line, f"var {v.name} has an empty domain: min {lo} > max {hi}")
                bounds.append((lo, hi))
            else:
                bounds.append(None)
        init_options = []
        for i, v in enumerate(spec.vars):
            opts = []
            for ex in v.init:
                x = value(ex, v.line)
                bound = bounds[i]
                if bound is not None and not bound[0] <= x <= bound[1]:
                    raise fail(v.line, f"initial value {x} of {v.name} is outside its domain "
                                       f"{bound[0]}..{bound[1]}")
                opts.append(x)
            if len(set(opts)) != len(opts):
                raise fail(v.line, f"init of {v.name} lists a value twice")
            init_options.append(opts)
        if math.prod(map(len, init_options)) > MAX_PRODUCT:
            widest = max(range(len(spec.vars)), key=lambda i: len(init_options[i]))
            raise fail(spec.vars[widest].line, f"the vars' init values make "
                                               f"{math.prod(map(len, init_options)):,} initial states, "
                                               f"more than the limit of {MAX_PRODUCT:,}")
        inits = [tuple(c) for c in itertools.product(*init_options)]

        g: dict[str, Any] = {"__builtins__": {}, "min": min, "max": max, "abs": abs,
                             "_NoRule": _NoRule, "_len": len, "_enumerate": enumerate,
                             "_ERR": EVAL_ERRORS, "_STOP": (MemoryError, OutOfTime), **pns}
        for i, b in enumerate(bounds):
            if b is not None:
                g[f"dlo_{i}"], g[f"dhi_{i}"] = b
        exec(self.code, g)

        actions = []
        for ai, a in enumerate(spec.actions):
            items_per_choice = []
            for cname, cs in a.choices:
                items = _choice_items(cs, value)
                if _count(items) == 0:
                    raise fail(cs.line, f"choice {cname} of action {a.name} is an empty set")
                items_per_choice.append(items)
            sizes = [_count(items) for items in items_per_choice]
            if math.prod(sizes) > MAX_PRODUCT:
                widest = max(range(len(sizes)), key=sizes.__getitem__)
                raise fail(a.choices[widest][1].line, f"action {a.name} makes {math.prod(sizes):,} "
                                                      f"choice combinations per step, more than the "
                                                      f"limit of {MAX_PRODUCT:,}")
            combos = list(itertools.product(*items_per_choice))
            names = [c for c, _ in a.choices]
            labels = [{n: item[0] for n, item in zip(names, combo)} for combo in combos]
            step_args = []
            for combo in combos:
                mine = dict(zip(names, combo))
                step_args.append(tuple(mine.get(n, _MissingChoice(n, a.name)) for n in spec.choice_names))
            fields = {c: [f for f, _ in sorted(cs.fields.items(), key=lambda kv: kv[1][1])]
                      for c, cs in a.choices if cs.kind == "records"}
            actions.append(CompiledAction(a.name, ai, g.get(f"guard_{ai}"), g[f"step_{ai}"], combos,
                                          labels, step_args, names, fields))

        m = Machine(spec, dict(params), [v.name for v in spec.vars], inits, actions,
                    g["is_terminal"], g.get("label"), g["domain_error"], bounds, sweep=GeneratedLoop(self, g),
                    source=self.generated)
        m.fallible = {p.name for p in spec.properties if p.expr is not None and can_fail(p.expr, _made(spec))}
        for k, p in enumerate(spec.properties):
            if p.when is not None and not value(p.when, p.line):
                m.inactive.add(p.name)
                continue            # not judged here: its bound may not even be defined here
            if p.kind == "invariant":
                m.invariants[p.name] = g[f"prop_{k}"]
            elif p.kind == "reachable":
                m.reachables[p.name] = g[f"prop_{k}"]
            elif p.kind == "step_invariant":
                m.step_invariants[p.name] = g[f"prop_{k}"]
            elif p.kind == "variant":
                m.variants[p.name] = (g[f"prop_{k}"], value(present(p.bound), p.line))
            elif p.kind == "terminates_within":
                m.within[p.name] = value(present(p.bound), p.bound_line or p.line)
                if m.within[p.name] < 0:
                    raise fail(p.bound_line or p.line, negative_bound(p.name, m.within[p.name]))
                if p.count is not None:
                    m.counts[p.name] = g[f"count_{k}"]
        for k, ms in enumerate(spec.measures):
            m.measures[ms.name] = g[f"measure_{k}"]
        for ai, a in enumerate(spec.actions):
            if a.decide is not None:
                m.rule_conditions[ai] = g[f"conds_{ai}"]
        m.all_invariants = ([p.name for p in spec.properties if p.kind == "invariant"], g["all_invariants"])
        for k, (label, ex) in enumerate(spec.replay):
            bare_choice = isinstance(ex.py, ast.Subscript) and isinstance(ex.py.value, ast.Name) \
                and ex.py.value.id.startswith("c_") and isinstance(ex.py.slice, ast.Constant) and ex.py.slice.value == 0 and ex.text.isidentifier()
            m.replay_lines.append((label, g[f"replay_{k}"], bare_choice))
        return m


class GeneratedLoop:
    """A machine's generated BFS loop, compiled and bound to the machine's namespace the
    first time it runs: many machines never run it (bound code, the vector engine)."""

    def __init__(self, compiled: CompiledSpec, namespace: dict[str, Any]):
        self.compiled, self.namespace = compiled, namespace

    def __call__(self, x: Any) -> tuple:
        if "sweep" not in self.namespace:
            exec(self.compiled.sweep_code, self.namespace)
        return self.namespace["sweep"](x)


class _Items(Sequence):
    """The items `(x,)` of a range choice, built one at a time: its size is checked against
    MAX_PRODUCT before anything iterates it, so `{min: 0, max: 10**12}` costs nothing."""

    def __init__(self, values: range):
        self.values = values

    def __len__(self) -> int:
        return len(self.values)             # only once _count (no limit to its size) allowed it

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [(x,) for x in self.values[i]]
        return (self.values[i],)


def _count(items: Sequence[tuple]) -> int:
    return value_count(items.values) if isinstance(items, _Items) else len(items)


def _choice_items(cs: ChoiceSet, value: Callable[[E.Expr, int], Any]) -> Sequence[tuple]:
    if cs.kind == "range":
        lo, hi = value(present(cs.lo), cs.line), value(present(cs.hi), cs.line)
        return _Items(range(lo, hi + 1))
    return list(cs.items)


# ---------------------------------------------------------------- code generation

class Source:
    """A spec's generated module: its text, and per line of it the spec line it came from,
    so an expression that fails to evaluate can be named by its file and line (`spec_line`).
    `modules` holds that map for every module generated from the spec (the BFS loop too)."""

    def __init__(self, path: str):
        self.filename = f"<haltproof:{path}>"
        self.chunks: list[str] = []
        self.origin: dict[int, int] = {}      # generated line -> spec line
        self.modules: dict[str, dict[int, int]] = {self.filename: self.origin}
        self._next = 1

    def __call__(self, text: str, line: int | None = None) -> None:
        """Append `text` (one or more lines), written for the spec's line `line` if known."""
        count = text.count("\n") + 1
        if line:
            for k in range(count):
                self.origin[self._next + k] = line
        self.chunks.append(text)
        self._next += count

    @property
    def text(self) -> str:
        return "\n".join(self.chunks) + "\n"


def spec_line(m: Machine, exc: BaseException) -> int | None:
    """The spec line of the expression whose evaluation raised `exc`: the innermost frame of
    m's generated modules (its functions, or its BFS loop), mapped back. None when the error
    did not come from there (bound code, a Python model) or the line is not known."""
    if m.source is None:
        return None
    line = None
    tb = exc.__traceback__
    while tb is not None:
        origin = m.source.modules.get(tb.tb_frame.f_code.co_filename)
        if origin is not None:
            line = origin.get(tb.tb_lineno, line)
        tb = tb.tb_next
    return line


def spec_where(m: Machine, exc: BaseException) -> str:
    """` (file:line)` of the spec expression whose evaluation raised `exc`, for a message;
    empty when it is not known (see spec_line)."""
    line = spec_line(m, exc)
    return f" ({shown_path(m.spec.path)}:{line})" if line is not None else ""


def _generate(spec: Spec) -> Source:
    n = len(spec.vars)
    unpack = ", ".join(f"v_{i}" for i in range(n)) + ("," if n == 1 else "")
    pack = "(" + ", ".join(f"v_{i}" for i in range(n)) + ("," if n == 1 else "") + ")"
    step_params = ", ".join(["b", "a", "action", "rule"] + [f"c_{c}" for c in spec.choice_names])
    w = Source(spec.path)

    for ai, a in enumerate(spec.actions):
        if a.guard is not None:
            w(f"def guard_{ai}(s):\n    return {_src(a.guard)}\n", a.guard.line or a.line)
        args = ", ".join(["s"] + [f"c_{c}" for c, _ in a.choices])
        w(f"def step_{ai}({args}):")
        w(f"    {unpack} = s")
        w("    r = None")
        for st in a.stages:
            if isinstance(st, SetStage):
                for text, line in _set_code(st, "v_", _src):
                    w("    " + text, line)
            else:
                _decide(w, st, a.name, spec)
        w(f"    return {pack}, r\n")

    for ai, a in enumerate(spec.actions):
        if a.decide is None:
            continue
        args = ", ".join(["s"] + [f"c_{c}" for c, _ in a.choices])
        w(f"def conds_{ai}({args}):")
        w(f"    {unpack} = s")
        for st in a.stages:
            if isinstance(st, SetStage):
                for text, line in _set_code(st, "v_", _src):
                    w("    " + text, line)
            else:
                conds = ", ".join(_src(r.when) if r.when is not None else "True" for r in st.rules)
                w(f"    return ({conds},)", st.line)
                break
        w("")

    t = spec.terminal
    if t is None:
        w("def is_terminal(s):\n    return False\n")
    elif t.when is not None:
        w(f"def is_terminal(s):\n    return {_src(t.when)}\n", t.when.line or t.line)
    else:
        values = ", ".join(repr(v) for v in t.values) + ","
        label = present(t.label)
        w(f"def label(s):\n    return {_src(label)}\n", label.line or t.line)
        w(f"def is_terminal(s):\n    return ({_src(label)}) in ({values})\n", label.line or t.line)

    w("def domain_error(s):")
    for i, v in enumerate(spec.vars):
        if v.kind == "int":
            w(f"    if not (dlo_{i} <= s[{i}] <= dhi_{i}):\n        return {i}")
    w("    return -1\n")

    for k, p in enumerate(spec.properties):
        if p.kind in ("invariant", "reachable", "variant"):
            w(f"def prop_{k}(s):\n    return {_src(present(p.expr))}\n", present(p.expr).line or p.line)
        elif p.kind == "step_invariant":
            w(f"def prop_{k}({step_params}):\n    return {_src(present(p.expr))}\n", present(p.expr).line or p.line)
        elif p.kind == "terminates_within" and p.count is not None:
            w(f"def count_{k}({step_params}):\n    return {_src(p.count)}\n", p.count.line or p.line)
    invariants = [p for p in spec.properties if p.kind == "invariant"]
    w("def all_invariants(s):")          # one call per state checks them all (the fast path)
    for k, p in enumerate(invariants):
        w(f"    if not ({_src(present(p.expr))}):\n        return {k}", present(p.expr).line or p.line)
    w("    return -1\n")
    for k, (_, ex) in enumerate(spec.replay):
        w(f"def replay_{k}({step_params}):\n    return {_src(ex)}\n", ex.line)
    for k, ms in enumerate(spec.measures):
        w(f"def measure_{k}({step_params}):\n    return {_src(ms.expr)}\n", ms.expr.line or ms.line)
    return w


def emit_set(w: Callable[[str], None], st: SetStage, render: Callable[[E.Expr], str]) -> None:
    """A set stage as one simultaneous tuple assignment (every right side sees the old values)."""
    if st.assigns:
        lhs = ", ".join(f"v_{x.var}" for x in st.assigns)
        rhs = ", ".join(f"({render(x.value)})" for x in st.assigns)
        w(f"    {lhs} = {rhs}")


def _set_code(st: SetStage, target: str, render: Callable[[E.Expr], str]) -> list[tuple[str, int]]:
    """A set stage as one simultaneous assignment (every right side sees the values before
    the stage), as (line of code, spec line) pairs: with several assignments each right side
    has a generated line of its own, so the one that fails is named by its own spec line."""
    lines = [x.value.line or x.line or st.line for x in st.assigns]
    if not st.assigns:
        return []
    if len(st.assigns) == 1:
        return [(f"{target}{st.assigns[0].var} = ({render(st.assigns[0].value)})", lines[0])]
    out = [(", ".join(f"{target}{x.var}" for x in st.assigns) + " = (", st.line)]
    out += [(f"    ({render(x.value)}),", line) for x, line in zip(st.assigns, lines)]
    return out + [(")", st.line)]


def _decide(w: Source, st: DecideStage, action: str, spec: Spec) -> None:
    var = f"v_{st.var}"
    first = True
    for r in st.rules:
        then = r.then.line or r.line
        if r.when is None:
            if first:
                w(f"    {var} = {_src(r.then)}; r = {r.name!r}", then)
            else:
                w("    else:", r.line)
                w(f"        {var} = {_src(r.then)}; r = {r.name!r}", then)
            return
        kw = "if" if first else "elif"
        w(f"    {kw} {_src(r.when)}:", r.when.line or r.line)
        w(f"        {var} = {_src(r.then)}; r = {r.name!r}", then)
        first = False
    w(f"    else:\n        raise _NoRule({action!r}, {spec.vars[st.var].name!r})", st.line)


# ---------------------------------------------------------------- the generated BFS loop

SWEEP_KINDS = ("invariant", "reachable", "step_invariant", "variant")   # checked inside the loop


class _Template:
    """An expression's code with a numbered hole at every read of a state var (`s[i]`,
    `b[i]`, `a[i]`) and at every name (`v_i` included), so the generated loop can fill in
    its own locals or constants without rendering the expression again."""

    def __init__(self, ex: E.Expr):
        plain = ast.unparse(ex.py)
        mark = "__hp"
        while mark in plain:               # a marker no string in the expression contains
            mark += "x"
        self.keys: list[tuple[str, Any]] = []
        tree = _Holes(self.keys, mark).visit(copy.deepcopy(ex.py))
        self.parts = re.split(re.escape(mark) + r"(\d+)__", ast.unparse(tree))

    def render(self, states: dict[str, list[ast.expr]], names: dict[str, ast.expr]) -> str:
        """The code with `states[base][i]` for each state read, `names[n]` for name n, and
        the original text for the rest. Every substitute is a name or a literal."""
        out = []
        for n, part in enumerate(self.parts):
            if n % 2 == 0:
                out.append(part)
                continue
            kind, what = self.keys[int(part)]
            if kind == "name":
                out.append(_atom(names[what]) if what in names else what)
            elif kind in states:
                out.append(_atom(states[kind][what]))
            else:
                out.append(f"{kind}[{what}]")
        return "".join(out)


class _Holes(ast.NodeTransformer):
    def __init__(self, keys: list[tuple[str, Any]], mark: str):
        self.keys, self.mark = keys, mark

    def hole(self, key: tuple[str, Any]) -> ast.Name:
        self.keys.append(key)
        return ast.Name(f"{self.mark}{len(self.keys) - 1}__", ast.Load())

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        base = node.value
        if isinstance(base, ast.Name) and base.id in ("s", "b", "a") and isinstance(node.slice, ast.Constant):
            return self.hole((base.id, node.slice.value))
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.expr:
        return self.hole(("name", node.id))


def _atom(node: ast.expr) -> str:
    text = ast.unparse(node)
    return f"({text})" if text.startswith("-") else text


def _generate_sweep(spec: Spec) -> tuple[str, dict[int, int]]:
    """The breadth-first loop of explorer/engine.py for this spec, as one function `sweep(_x)`.

    Why: per state and per transition the loop then runs the spec's own expressions
    inline on local variables: no call, no unpacking per action, and nothing stored per
    edge but the successor's index. The contract with the engine (`_x` is its
    haltproof.explorer.engine._Sweep): the loop appends to `_x`'s states, index, parent, e_dst,
    edge_start, terminal and starts (the first state of each BFS level) and counts
    terminal labels; every unusual event goes to one of `_x`'s slow paths, which make the
    findings exactly as the engine's plain loop does: an expression that fails
    (terminal_error, guard_error, step_error), a new successor outside its domain
    (domain_fail), or a property that does not plainly hold or cannot be evaluated
    (check_state, check_step: the loop itself only sees that every property it still
    checks holds, or not). After a slow path `_x.live()` says again which properties are
    still judged, and which failed ones are still evaluated for evaluation errors. It returns the
    number of states expanded, whether every edge led exactly one level deeper, the first
    state of the level after the one it was expanding, and per (action, rule) the number
    of transitions that fired. Returned with the loop's text: per line of it that evaluates
    a spec expression whose error is a finding, the spec line (see Source).
    """
    n = len(spec.vars)
    V: list[ast.expr] = [ast.Name(f"v_{i}", ast.Load()) for i in range(n)]
    templates: dict[int, _Template] = {}

    def _inline(ex: E.Expr, states: dict[str, list[ast.expr]], names: dict[str, ast.expr] | None = None) -> str:
        if id(ex) not in templates:
            templates[id(ex)] = _Template(ex)
        return templates[id(ex)].render(states, names or {})

    checked = [(k, p) for k, p in enumerate(spec.properties) if p.kind in SWEEP_KINDS]
    # _f{k}: property k is still judged; _w{k}: it is only evaluated, for evaluation errors
    refresh = (", ".join([f"_f{k}" for k, _ in checked] + [f"_w{k}" for k, _ in checked])
               + " = _x.live()") if checked else None
    steps_checked = any(p.kind in ("step_invariant", "variant") for _, p in checked)
    body: list[str] = []
    origin: dict[int, int] = {}          # index in body -> spec line
    counters: list[tuple[int, str | None, str]] = []

    def w(depth: int, text: str, line: int | None = None) -> None:
        if line:
            origin[len(body)] = line
        body.append("    " * depth + text)

    def tup(mapping: list[ast.expr]) -> str:
        return "(" + ", ".join(ast.unparse(x) for x in mapping) + ("," if n == 1 else "") + ")"

    def watch(k: int, p: Any, codes: list[str], action: Any = None) -> list[str]:
        """For a property that may fail to evaluate (in `action`'s steps): evaluate the codes
        and ignore their values (a tuple is true, so the part is false); only an evaluation
        error, caught by `check`, takes the slow path. Nothing for one that cannot fail."""
        made = [] if action is None else [(action.name, {c for c, _ in action.choices})]
        return [f"(_w{k} and ({', '.join(codes)},) and False)"] if can_fail(p.expr, made) else []

    def state_check(mapping: list[ast.expr], depth: int) -> None:
        parts = []
        for k, p in checked:
            if p.kind in ("invariant", "reachable"):
                code = _inline(present(p.expr), {'s': mapping})
                parts.append(f"(_f{k} and not ({code}))" if p.kind == "invariant" else f"(_f{k} and ({code}))")
                parts += watch(k, p, [code])
        if parts:
            check(parts, "_x.check_state(_j, _t)", depth)

    def step_check(k: int, a: Any, mapping: list[ast.expr], rule: str | None, ci: str, depth: int) -> None:
        own = {c for c, _ in a.choices}
        names: dict[str, ast.expr] = {"action": ast.Constant(a.name), "rule": ast.Constant(rule)}
        names.update({f"c_{c}": ast.Name(f"_miss_{k}_{c}", ast.Load()) for c in spec.choice_names if c not in own})
        parts = []
        for pk, p in checked:
            if p.kind == "step_invariant":
                code = _inline(present(p.expr), {'b': V, 'a': mapping}, names)
                parts += [f"(_f{pk} and not ({code}))", *watch(pk, p, [code], a)]
            elif p.kind == "variant":      # holds when it strictly increases and stays within its bound
                before, after = _inline(present(p.expr), {'s': V}), _inline(present(p.expr), {'s': mapping})
                parts += [f"(_f{pk} and not (({before}) < ({after}) <= _vb{pk}))", *watch(pk, p, [before, after])]
        if parts:
            check(parts, f"_x.check_step(_i, {k}, {ci}, {rule!r}, _t)", depth)

    def check(parts: list[str], slow: str, depth: int) -> None:
        w(depth, "try:")
        w(depth + 1, f"_bad = {' or '.join(parts)}")
        w(depth, "except _ERR:")
        w(depth + 1, "_bad = True")
        w(depth, "if _bad:")
        w(depth + 1, slow)
        assert refresh is not None, "parts come from checked properties"
        w(depth + 1, refresh)

    def commit(k: int, a: Any, mapping: list[ast.expr], rule: str | None, ci: str, depth: int) -> None:
        """The successor is complete: find or add it, record the edge, count its rule."""
        counter = f"_c{len(counters)}"
        counters.append((k, rule, counter))
        # only an int var the action assigned can leave its domain; a decided constant may
        # lie outside it too (a `domains` violation when its rule fires)
        ranges = [f"dlo_{i} <= {ast.unparse(x)} <= dhi_{i}" for i, x in enumerate(mapping)
                  if spec.vars[i].kind == "int" and (isinstance(x, ast.Constant)
                                                     or isinstance(x, ast.Name) and x.id.startswith("u_"))]
        w(depth, f"_t = {tup(mapping)}")
        w(depth, "_j = _add(_t, _n)")        # one hash: a new state is added at once ...
        w(depth, "if _j == _n:")
        inner = depth + 1
        if ranges:
            w(depth + 1, f"if {' and '.join(ranges)}:")
            inner = depth + 2
        for line in ("_n += 1", "_st_add(_t)", "_par_add(_i)"):
            w(inner, line)
        state_check(mapping, inner)
        w(inner, "_e_add(_j)")
        w(inner, f"{counter} += 1")
        step_check(k, a, mapping, rule, ci, inner)
        if ranges:
            w(depth + 1, "else:")
            w(depth + 2, "del _index[_t]")          # ... and taken out again if it is no state
            w(depth + 2, f"_x.domain_fail(_i, {k}, {ci}, {rule!r}, _t)")
        w(depth, "else:")
        w(depth + 1, "if _j < _next:")
        w(depth + 2, "_fwd = False")
        w(depth + 1, "_e_add(_j)")
        w(depth + 1, f"{counter} += 1")
        step_check(k, a, mapping, rule, ci, depth + 1)

    def stages(k: int, a: Any, idx: int, mapping: list[ast.expr], rule: str | None, ci: str, depth: int) -> None:
        if idx == len(a.stages):
            commit(k, a, mapping, rule, ci, depth)
            return
        st = a.stages[idx]
        current = {f"v_{i}": x for i, x in enumerate(mapping)}
        if isinstance(st, SetStage):
            mapping = list(mapping)
            if st.assigns:           # simultaneous: every right side sees the values before the stage
                for text, line in _set_code(st, "u_", lambda ex: _inline(ex, {}, current)):
                    w(depth, text, line)
                for x in st.assigns:
                    mapping[x.var] = ast.Name(f"u_{x.var}", ast.Load())
            stages(k, a, idx + 1, mapping, rule, ci, depth)
            return
        for pos, r in enumerate(st.rules):     # first match wins; each rule goes on on its own
            if r.when is None:
                if pos:
                    w(depth, "else:")
                inner = depth + 1 if pos else depth
            else:
                w(depth, f"{'elif' if pos else 'if'} {_inline(r.when, {}, current)}:", r.when.line or r.line)
                inner = depth + 1
            decided = list(mapping)
            if isinstance(r.then.py, ast.Constant):
                decided[st.var] = ast.Constant(r.then.py.value)
            else:
                w(inner, f"u_{st.var} = {_inline(r.then, {}, current)}", r.then.line or r.line)
                decided[st.var] = ast.Name(f"u_{st.var}", ast.Load())
            stages(k, a, idx + 1, decided, r.name, ci, inner)
            if r.when is None:
                return
        w(depth, "else:")
        w(depth + 1, f"raise _NoRule({a.name!r}, {spec.vars[st.var].name!r})", st.line)

    unpack = ", ".join(f"v_{i}" for i in range(n)) + ("," if n == 1 else "")
    w(1, "while _i < _n:")
    w(2, "if _i == _next:")            # a new BFS level starts here
    w(3, "_d += 1")
    w(3, "_next = _n")
    w(3, "_starts_add(_i)")
    w(2, "if _n > _max:")
    w(3, "_x.stopped_by = 'max_states'")
    w(3, "break")
    w(2, "if _ticking and not _i & 255 and _x.tick(_i, _d):")
    w(3, "break")
    w(2, f"{unpack} = _states[_i]")
    w(2, "_es_add(_len(_e_dst))")
    t = spec.terminal
    if t is not None:
        w(2, "try:")
        if t.when is not None:
            w(3, f"_term = {_inline(t.when, {'s': V})}", t.when.line or t.line)
        else:
            w(3, f"_lab = {_inline(present(t.label), {'s': V})}", present(t.label).line or t.line)
            w(3, f"_term = _lab in ({', '.join(repr(v) for v in t.values)},)")
        w(2, "except _ERR as _exc:")
        w(3, "_x.terminal_error(_i, _exc)")     # not expanded: where runs end is unknown here
        w(3, "_term_add(0)")
        w(3, "_i += 1")
        w(3, "continue")
        w(2, "if _term:")
        w(3, "_term_add(1)")
        if t.when is None:
            w(3, "_labels[_lab] = _labels.get(_lab, 0) + 1")
        w(3, "_i += 1")
        w(3, "continue")
    w(2, "_term_add(0)")
    guards: dict[str, str] = {}          # a guard's code -> the local holding its value for this state
    for k, a in enumerate(spec.actions):
        depth = 2
        if a.guard is not None:
            code = _inline(a.guard, {'s': V})
            if code not in guards:
                # an action with the same guard reads its value: had it failed, the finding
                # (the first one wins) and the failed state would be the same again
                guards[code] = f"_g{k}"
                w(2, "try:")
                w(3, f"_g{k} = {code}", a.guard.line or a.line)
                w(2, "except _ERR as _exc:")
                w(3, f"_g{k} = _x.guard_error(_i, {k}, _exc)")
            w(2, f"if {guards[code]}:")
            depth = 3
        ci = "0"
        if a.choices:
            names = ", ".join(f"c_{c}" for c, _ in a.choices) + ("," if len(a.choices) == 1 else "")
            w(depth, f"for _ci, ({names}) in _enumerate(_combos_{k}):")
            depth += 1
            ci = "_ci"
        w(depth, "try:")
        stages(k, a, 0, list(V), None, ci, depth + 1)
        w(depth, "except _ERR as _exc:")
        w(depth + 1, f"_x.step_error(_i, {k}, {ci}, _exc)")
    w(2, "_i += 1")
    w(1, "return _i, _fwd, _next, (" + "".join(f"({k}, {r!r}, {c}), " for k, r, c in counters) + ")")

    defaults = [f"p_{p.name}=p_{p.name}" for p in spec.params]
    defaults += [f"dlo_{i}=dlo_{i}, dhi_{i}=dhi_{i}" for i, v in enumerate(spec.vars) if v.kind == "int"]
    defaults += ["_len=_len", "_enumerate=_enumerate", "_ERR=_ERR", "_STOP=_STOP", "_NoRule=_NoRule",
                 "min=min", "max=max", "abs=abs"]
    head = [f"def sweep(_x, {', '.join(defaults)}):"]

    def h(text: str) -> None:
        head.append("    " + text)
    for line in ("_states = _x.states", "_index = _x.index", "_add = _index.setdefault", "_st_add = _states.append",
                 "_par_add = _x.parent.append", "_e_dst = _x.e_dst", "_e_add = _e_dst.append",
                 "_es_add = _x.edge_start.append", "_term_add = _x.terminal.append",
                 "_starts_add = _x.starts.append", "_labels = _x.label_counts",
                 "_max = _x.max_states", "_ticking = _x.ticking"):
        h(line)
    for k, a in enumerate(spec.actions):
        if a.choices:
            h(f"_combos_{k} = _x.combos[{k}]")
        if steps_checked:
            own = {c for c, _ in a.choices}
            for c in spec.choice_names:
                if c not in own:
                    h(f"_miss_{k}_{c} = _x.missing({k}, {c!r})")
    for k, p in checked:
        if p.kind == "variant":
            h(f"_vb{k} = _x.bound({k})")
    if refresh:
        h(refresh)
    for line in ("_n = _len(_states)", "_i = 0", "_next = _n", "_d = 0", "_fwd = True"):
        h(line)
    if counters:
        h(" = ".join(c for _, _, c in counters) + " = 0")
    # running out of memory (or time) stops the loop where it is, as a bound does: the
    # engine is told, gets the counts so far and undoes the state left half expanded
    loop, ret = body[:-1], body[-1]
    body = ["    try:", *("    " + line for line in loop), "    except _STOP as _exc:",
            "        _x.interrupted(_exc)", ret]
    # the loop's lines moved one down (under `try:`), the return three (after the except)
    origin = {(k + 1 if k < len(loop) else k + 3): line for k, line in origin.items()}
    assert not any("\n" in line for line in body), "one generated line per entry: the origins count on it"
    return "\n".join(head + body) + "\n", {len(head) + k + 1: line for k, line in origin.items()}
