"""Compile a validated spec into plain Python step functions.

The checked expression ASTs are rendered into one Python module per spec (compiled
once), then executed once per parameter combination with the params bound as globals.
States are tuples of ints, bools and strings in var order; choices are tuples whose
item 0 is the label shown in traces. The explorer calls these functions in its inner
loop, so they do no checking the type system already did: only int ranges are checked
at run time (`domain_error`), because arithmetic, or a decide rule's constant, can leave
a range (a constant outside it is a `domains` violation only where its rule fires). For the scalar
engine the whole breadth-first loop is generated as well, with the expressions inline
(machine/sweep.py, built as an AST), and compiled the first time it runs.
"""

from __future__ import annotations

import ast
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import CodeType
from typing import Any, TypeAlias

from . import expr as E
from .errors import Problem, SpecError
from .fold import can_fail
from .spec import Action, ChoiceSet, DecideStage, SetStage, Spec, negative_bound, present, shown_path, value_count
from .sweep import SweepResult, SweepTarget, generate_sweep
from .usercode import OutOfTime

State: TypeAlias = tuple[Any, ...]    # a state: one value per var, in var order
Combo: TypeAlias = tuple[Any, ...]    # one item per choice (item 0 of each is its label)

MAX_PRODUCT = 1_000_000     # initial states, and choice combinations of one action per step


class EvalError(Exception):
    """A spec expression could not be evaluated on a reachable state (built-in `well_defined`)."""


# What evaluating a spec expression (or calling bound code, a CodeError) may raise on a state:
# anything else is a bug in haltproof.
EVAL_ERRORS = (EvalError, ZeroDivisionError)


class _NoRule(EvalError):
    def __init__(self, action: str, var: str):
        super().__init__(f"no rule of the decide table of action {action} (deciding {var}) matched")


class MissingChoice:
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


def _made(spec: Spec) -> list[tuple[str, set[str]]]:
    """Each action with the choices it makes."""
    return [(a.name, {c for c, _ in a.choices}) for a in spec.actions]


@dataclass
class CompiledAction:
    name: str
    index: int
    guard: Callable[[State], bool] | None
    step: Callable[..., tuple[State, str | None]]
    combos: list[Combo]                       # one tuple of choice items per combination
    labels: list[dict[str, Any]]              # {choice name: label} per combination
    step_args: list[tuple[Any, ...]]                    # per combination: every spec choice, missing ones as sentinels
    choice_names: list[str]
    record_fields: dict[str, list[str]] = field(default_factory=dict)   # record choices: field names


@dataclass
class Machine:
    """One spec instantiated for one parameter combination: everything the explorer calls."""

    spec: Spec
    params: dict[str, int]
    var_names: list[str]
    inits: list[State]
    actions: list[CompiledAction]
    is_terminal: Callable[[State], bool]
    label: Callable[[State], Any] | None
    domain_error: Callable[[State], int]
    bounds: list[tuple[int, int] | None]       # per var: (lo, hi) for ints
    invariants: dict[str, Callable[[State], bool]] = field(default_factory=dict)
    reachables: dict[str, Callable[[State], bool]] = field(default_factory=dict)
    step_invariants: dict[str, Callable[..., bool]] = field(default_factory=dict)
    counts: dict[str, Callable[..., bool]] = field(default_factory=dict)
    variants: dict[str, tuple[Callable[[State], int], int]] = field(default_factory=dict)
    within: dict[str, int] = field(default_factory=dict)
    replay_lines: list[tuple[str, Callable[..., Any], bool]] = field(default_factory=list)
    inactive: set[str] = field(default_factory=set)   # properties whose `when` is false here
    measures: dict[str, Callable[..., Any]] = field(default_factory=dict)   # name -> step fn (0/1 or int)
    rule_conditions: dict[int, Callable[..., tuple[bool, ...]]] = field(default_factory=dict)  # action -> each rule's `when`
    all_invariants: tuple[list[str], Callable[[State], int]] | None = None  # names, first failing or -1
    fallible: set[str] | None = None                  # properties that may fail to evaluate (None: any)
    bound_to: str | None = None                       # the adapter whose code the actions run
    source: Source | None = None                      # the generated module the functions come from
    sweep: GeneratedLoop | None = None                # the whole BFS loop, generated (machine/sweep.py)

    def state_dict(self, state: State) -> dict[str, Any]:
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
        """The generated BFS loop (machine/sweep.py), compiled the first time it is run."""
        if self._sweep_code is None:
            module, origin = generate_sweep(self.spec)
            filename = f"<haltproof:{self.spec.path}:sweep>"
            self.generated.modules[filename] = origin      # its errors are named by spec line too
            self._sweep_code = compile(ast.fix_missing_locations(module), filename, "exec")
        return self._sweep_code

    def instantiate(self, params: dict[str, int]) -> Machine:
        """The spec for one parameter combination: its domains, initial states and choices
        evaluated and checked, the generated module run with the params bound as globals,
        and every function the explorer calls picked out of it."""
        spec = self.spec
        at = _Params(spec, params)
        bounds = at.bounds()
        inits = at.inits(bounds)
        g: dict[str, Any] = {"__builtins__": {}, "min": min, "max": max, "abs": abs,
                             "_NoRule": _NoRule, "_len": len, "_enumerate": enumerate,
                             "_ERR": EVAL_ERRORS, "_STOP": (MemoryError, OutOfTime), **at.pns}
        for i, b in enumerate(bounds):
            if b is not None:
                g[f"dlo_{i}"], g[f"dhi_{i}"] = b
        exec(self.code, g)
        actions = [at.action(ai, a, g) for ai, a in enumerate(spec.actions)]
        m = Machine(spec, dict(params), [v.name for v in spec.vars], inits, actions,
                    g["is_terminal"], g.get("label"), g["domain_error"], bounds, sweep=GeneratedLoop(self, g),
                    source=self.generated)
        at.properties(m, g)
        for k, ms in enumerate(spec.measures):
            m.measures[ms.name] = g[f"measure_{k}"]
        for ai, a in enumerate(spec.actions):
            if a.decide is not None:
                m.rule_conditions[ai] = g[f"conds_{ai}"]
        m.all_invariants = ([p.name for p in spec.properties if p.kind == "invariant"], g["all_invariants"])
        for k, (label, ex) in enumerate(spec.replay):
            m.replay_lines.append((label, g[f"replay_{k}"], _bare_choice(ex)))
        return m


def _bare_choice(ex: E.Expr) -> bool:
    """Whether a replay line shows just a choice's label (`c_x[0]` written as `x`)."""
    py = ex.py
    return isinstance(py, ast.Subscript) and isinstance(py.value, ast.Name) and py.value.id.startswith("c_") \
        and isinstance(py.slice, ast.Constant) and py.slice.value == 0 and ex.text.isidentifier()


class _Params:
    """One parameter combination of a spec: evaluates the spec's parameter expressions
    (bounds, init values, choice sets, `when` and bounds of properties) and refuses, as a
    SpecError naming the combination, what makes no machine."""

    def __init__(self, spec: Spec, params: dict[str, int]):
        self.spec = spec
        shown = ", ".join(f"{k}={v}" for k, v in params.items())
        self.where = f" (with {shown})" if shown else ""
        self.pns = {"p_" + k: v for k, v in params.items()}

    def fail(self, line: int | None, message: str, text: object = None) -> SpecError:
        return SpecError([Problem(self.spec.path, line, message + self.where,
                                  None if text is None else str(text))])

    def value(self, ex: E.Expr, line: int) -> Any:
        try:
            return eval(compile(ast.fix_missing_locations(ast.Expression(ex.py)), "<param>", "eval"),
                        {"__builtins__": {}, "min": min, "max": max, "abs": abs}, self.pns)
        except ZeroDivisionError:
            raise self.fail(line, "division by zero", ex.text) from None

    def bounds(self) -> list[tuple[int, int] | None]:
        """Per var, (lo, hi) for an int, None for the others."""
        bounds: list[tuple[int, int] | None] = []
        for v in self.spec.vars:
            if v.kind == "int":
                lo, hi = self.value(present(v.lo), v.line), self.value(present(v.hi), v.line)
                if lo > hi:
                    raise self.fail(v.line, f"var {v.name} has an empty domain: min {lo} > max {hi}")
                bounds.append((lo, hi))
            else:
                bounds.append(None)
        return bounds

    def inits(self, bounds: list[tuple[int, int] | None]) -> list[State]:
        """Every initial state: the product of the vars' init values, each in its domain."""
        spec = self.spec
        init_options = []
        for i, v in enumerate(spec.vars):
            opts = []
            for ex in v.init:
                x = self.value(ex, v.line)
                bound = bounds[i]
                if bound is not None and not bound[0] <= x <= bound[1]:
                    raise self.fail(v.line, f"initial value {x} of {v.name} is outside its domain "
                                            f"{bound[0]}..{bound[1]}")
                opts.append(x)
            if len(set(opts)) != len(opts):
                raise self.fail(v.line, f"init of {v.name} lists a value twice")
            init_options.append(opts)
        if math.prod(map(len, init_options)) > MAX_PRODUCT:
            widest = max(range(len(spec.vars)), key=lambda i: len(init_options[i]))
            raise self.fail(spec.vars[widest].line, f"the vars' init values make "
                                                    f"{math.prod(map(len, init_options)):,} initial states, "
                                                    f"more than the limit of {MAX_PRODUCT:,}")
        return [tuple(c) for c in itertools.product(*init_options)]

    def action(self, ai: int, a: Action, g: dict[str, Any]) -> CompiledAction:
        """Action `a` with its choice combinations (at most MAX_PRODUCT) and functions."""
        items_per_choice = []
        for cname, cs in a.choices:
            items = _choice_items(cs, self.value)
            if _count(items) == 0:
                raise self.fail(cs.line, f"choice {cname} of action {a.name} is an empty set")
            items_per_choice.append(items)
        sizes = [_count(items) for items in items_per_choice]
        if math.prod(sizes) > MAX_PRODUCT:
            widest = max(range(len(sizes)), key=sizes.__getitem__)
            raise self.fail(a.choices[widest][1].line, f"action {a.name} makes {math.prod(sizes):,} "
                                                       f"choice combinations per step, more than the "
                                                       f"limit of {MAX_PRODUCT:,}")
        combos = list(itertools.product(*items_per_choice))
        names = [c for c, _ in a.choices]
        labels = [{n: item[0] for n, item in zip(names, combo)} for combo in combos]
        step_args = []
        for combo in combos:
            mine = dict(zip(names, combo))
            step_args.append(tuple(mine.get(n, MissingChoice(n, a.name)) for n in self.spec.choice_names))
        fields = {c: [f for f, _ in sorted(cs.fields.items(), key=lambda kv: kv[1][1])]
                  for c, cs in a.choices if cs.kind == "records"}
        return CompiledAction(a.name, ai, g.get(f"guard_{ai}"), g[f"step_{ai}"], combos,
                              labels, step_args, names, fields)

    def properties(self, m: Machine, g: dict[str, Any]) -> None:
        """Each property active for these params, with its function and evaluated bound."""
        spec = self.spec
        m.fallible = {p.name for p in spec.properties if p.expr is not None and can_fail(p.expr, _made(spec))}
        for k, p in enumerate(spec.properties):
            if p.when is not None and not self.value(p.when, p.line):
                m.inactive.add(p.name)
                continue            # not judged here: its bound may not even be defined here
            if p.kind == "invariant":
                m.invariants[p.name] = g[f"prop_{k}"]
            elif p.kind == "reachable":
                m.reachables[p.name] = g[f"prop_{k}"]
            elif p.kind == "step_invariant":
                m.step_invariants[p.name] = g[f"prop_{k}"]
            elif p.kind == "variant":
                m.variants[p.name] = (g[f"prop_{k}"], self.value(present(p.bound), p.line))
            elif p.kind == "terminates_within":
                m.within[p.name] = self.value(present(p.bound), p.bound_line or p.line)
                if m.within[p.name] < 0:
                    raise self.fail(p.bound_line or p.line, negative_bound(p.name, m.within[p.name]))
                if p.count is not None:
                    m.counts[p.name] = g[f"count_{k}"]


class GeneratedLoop:
    """A machine's generated BFS loop, compiled and bound to the machine's namespace the
    first time it runs: many machines never run it (bound code, the vector engine)."""

    def __init__(self, compiled: CompiledSpec, namespace: dict[str, Any]):
        self.compiled, self.namespace = compiled, namespace

    def __call__(self, x: SweepTarget) -> SweepResult:
        if "sweep" not in self.namespace:
            exec(self.compiled.sweep_code, self.namespace)
        result: SweepResult = self.namespace["sweep"](x)
        return result


class _Items(Sequence[Combo]):
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


def _count(items: Sequence[Combo]) -> int:
    return value_count(items.values) if isinstance(items, _Items) else len(items)


def _choice_items(cs: ChoiceSet, value: Callable[[E.Expr, int], Any]) -> Sequence[Combo]:
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
