"""Compile a validated spec into plain Python step functions.

The checked expression ASTs are rendered into one Python module per spec (compiled
once), then executed once per parameter combination with the params bound as globals.
States are tuples of ints, bools and strings in var order; choices are tuples whose
item 0 is the label shown in traces. The explorer calls these functions in its inner
loop, so they do no checking the type system already did: only int ranges are checked
at run time (`domain_error`), because arithmetic can leave a range.
"""

from __future__ import annotations

import ast
import itertools
from dataclasses import dataclass, field
from typing import Any, Callable

from . import expr as E
from .errors import Problem, SpecError
from .spec import ChoiceSet, DecideStage, SetStage, Spec


class EvalError(Exception):
    """A spec expression could not be evaluated on a reachable state (built-in `well_defined`)."""


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
    bound_to: str | None = None                       # the adapter whose code the actions run

    def state_dict(self, state: tuple) -> dict[str, Any]:
        return dict(zip(self.var_names, state))

    def domain_text(self, i: int) -> str:
        """The declared domain of var i, as shown in messages."""
        var = self.spec.vars[i]
        if var.kind == "int":
            return "{}..{}".format(*self.bounds[i])
        if var.kind == "bool":
            return "true/false"
        return "{" + ", ".join(var.values) + "}"


class CompiledSpec:
    """A spec's generated Python module, compiled once; `instantiate` binds the params."""

    def __init__(self, spec: Spec):
        self.spec = spec
        self.source = _generate(spec)
        self.code = compile(self.source, f"<haltproof:{spec.path}>", "exec")

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
                lo, hi = value(v.lo, v.line), value(v.hi, v.line)
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
                if bounds[i] is not None and not bounds[i][0] <= x <= bounds[i][1]:
                    raise fail(v.line, f"initial value {x} of {v.name} is outside its domain "
                                       f"{bounds[i][0]}..{bounds[i][1]}")
                opts.append(x)
            if len(set(opts)) != len(opts):
                raise fail(v.line, f"init of {v.name} lists a value twice")
            init_options.append(opts)
        inits = [tuple(c) for c in itertools.product(*init_options)]

        for a in spec.actions:
            d = a.decide
            if d is not None and bounds[d.var] is not None:
                lo, hi = bounds[d.var]
                for r in d.rules:
                    if isinstance(r.then.py, ast.Constant) and not lo <= r.then.py.value <= hi:
                        raise fail(r.line, f"rule {r.name} sets {spec.vars[d.var].name} to "
                                           f"{r.then.py.value}, outside its domain {lo}..{hi}")

        g: dict[str, Any] = {"__builtins__": {}, "min": min, "max": max, "abs": abs,
                             "_NoRule": _NoRule, **pns}
        for i, b in enumerate(bounds):
            if b is not None:
                g[f"dlo_{i}"], g[f"dhi_{i}"] = b
        exec(self.code, g)

        actions = []
        for ai, a in enumerate(spec.actions):
            items_per_choice = []
            for cname, cs in a.choices:
                items = _choice_items(cs, value)
                if not items:
                    raise fail(cs.line, f"choice {cname} of action {a.name} is an empty set")
                items_per_choice.append(items)
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
                    g["is_terminal"], g.get("label"), g["domain_error"], bounds)
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
                m.variants[p.name] = (g[f"prop_{k}"], value(p.bound, p.line))
            elif p.kind == "terminates_within":
                m.within[p.name] = value(p.bound, p.line)
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
                and ex.py.value.id.startswith("c_") and ex.py.slice.value == 0 and ex.text.isidentifier()
            m.replay_lines.append((label, g[f"replay_{k}"], bare_choice))
        return m


def _choice_items(cs: ChoiceSet, value: Callable[[E.Expr, int], Any]) -> list[tuple]:
    if cs.kind == "range":
        lo, hi = value(cs.lo, cs.line), value(cs.hi, cs.line)
        return [(x,) for x in range(lo, hi + 1)]
    return list(cs.items)


# ---------------------------------------------------------------- code generation

def _generate(spec: Spec) -> str:
    n = len(spec.vars)
    unpack = ", ".join(f"v_{i}" for i in range(n)) + ("," if n == 1 else "")
    pack = "(" + ", ".join(f"v_{i}" for i in range(n)) + ("," if n == 1 else "") + ")"
    step_params = ", ".join(["b", "a", "action", "rule"] + [f"c_{c}" for c in spec.choice_names])
    out: list[str] = []
    w = out.append

    for ai, a in enumerate(spec.actions):
        if a.guard is not None:
            w(f"def guard_{ai}(s):\n    return {_src(a.guard)}\n")
        args = ", ".join(["s"] + [f"c_{c}" for c, _ in a.choices])
        w(f"def step_{ai}({args}):")
        w(f"    {unpack} = s")
        w("    r = None")
        for st in a.stages:
            if isinstance(st, SetStage):
                emit_set(w, st, _src)
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
                emit_set(w, st, _src)
            else:
                conds = ", ".join(_src(r.when) if r.when is not None else "True" for r in st.rules)
                w(f"    return ({conds},)")
                break
        w("")

    t = spec.terminal
    if t is None:
        w("def is_terminal(s):\n    return False\n")
    elif t.when is not None:
        w(f"def is_terminal(s):\n    return {_src(t.when)}\n")
    else:
        values = ", ".join(repr(v) for v in t.values) + ","
        w(f"def label(s):\n    return {_src(t.label)}\n")
        w(f"def is_terminal(s):\n    return ({_src(t.label)}) in ({values})\n")

    w("def domain_error(s):")
    for i, v in enumerate(spec.vars):
        if v.kind == "int":
            w(f"    if not (dlo_{i} <= s[{i}] <= dhi_{i}):\n        return {i}")
    w("    return -1\n")

    for k, p in enumerate(spec.properties):
        if p.kind in ("invariant", "reachable", "variant"):
            w(f"def prop_{k}(s):\n    return {_src(p.expr)}\n")
        elif p.kind == "step_invariant":
            w(f"def prop_{k}({step_params}):\n    return {_src(p.expr)}\n")
        elif p.kind == "terminates_within" and p.count is not None:
            w(f"def count_{k}({step_params}):\n    return {_src(p.count)}\n")
    invariants = [p for p in spec.properties if p.kind == "invariant"]
    w("def all_invariants(s):")          # one call per state checks them all (the fast path)
    for k, p in enumerate(invariants):
        w(f"    if not ({_src(p.expr)}):\n        return {k}")
    w("    return -1\n")
    for k, (_, ex) in enumerate(spec.replay):
        w(f"def replay_{k}({step_params}):\n    return {_src(ex)}\n")
    for k, ms in enumerate(spec.measures):
        w(f"def measure_{k}({step_params}):\n    return {_src(ms.expr)}\n")
    return "\n".join(out) + "\n"


def emit_set(w: Callable[[str], None], st: SetStage, render: Callable[[E.Expr], str]) -> None:
    """A set stage as one simultaneous tuple assignment (every right side sees the old values)."""
    if st.assigns:
        lhs = ", ".join(f"v_{x.var}" for x in st.assigns)
        rhs = ", ".join(f"({render(x.value)})" for x in st.assigns)
        w(f"    {lhs} = {rhs}")


def _decide(w: Callable[[str], None], st: DecideStage, action: str, spec: Spec) -> None:
    var = f"v_{st.var}"
    first = True
    for r in st.rules:
        if r.when is None:
            if first:
                w(f"    {var} = {_src(r.then)}; r = {r.name!r}")
            else:
                w(f"    else:\n        {var} = {_src(r.then)}; r = {r.name!r}")
            return
        kw = "if" if first else "elif"
        w(f"    {kw} {_src(r.when)}:\n        {var} = {_src(r.then)}; r = {r.name!r}")
        first = False
    w(f"    else:\n        raise _NoRule({action!r}, {spec.vars[st.var].name!r})")
