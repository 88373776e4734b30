"""Compile a validated spec into plain Python step functions.

The checked expression ASTs are assembled into one Python module per spec, built as an
AST (machine/astgen.py; no code is written as text) and compiled once, then executed once
per parameter combination with the params bound as globals.
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

from . import astgen as A
from . import expr as E
from .errors import Problem, SpecError
from .fold import can_fail
from .spec import Action, ChoiceSet, DecideStage, SetStage, Spec, Unreachable, negative_bound, present, shown_path
from .specdata import line_file
from .inputs import value_count
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


class AbsentChoice(MissingChoice):
    """A conditional choice (`when:`) that a transition does not make: its combination's item.
    Reading it is the error of reading a choice the action does not make."""

    __slots__ = ()

    def __getitem__(self, _index: int) -> Any:
        raise EvalError(f"the expression reads choice {self.name}, which action {self.action} "
                        "does not make in this transition (its when: is false)")


def _absent(item: object) -> bool:
    return type(item) is AbsentChoice


def _made(spec: Spec) -> list[tuple[str, set[str]]]:
    """Each action with the choices every transition of it makes."""
    return [(a.name, a.always_made) for a in spec.actions]


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
    # conditional choices: (state, *combo) -> None when the combination is possible in the state,
    # else why not; None for an action without conditional choices (every combination always is)
    admit: Callable[..., str | None] | None = None

    def possible(self, s: State, ci: int) -> bool:
        """Whether combination ci is a transition from s (its `when:`s hold); may raise EVAL_ERRORS."""
        return self.admit is None or self.admit(s, *self.combos[ci]) is None


@dataclass
class Machine:
    """One spec instantiated for one parameter combination: everything the explorer calls."""

    spec: Spec
    params: dict[str, int]
    var_names: list[str]                       # the user's vars: what traces show and adapters read
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
    maxima: dict[str, tuple[Callable[[State], int], int | None]] = field(default_factory=dict)  # fn, at_most
    chances: dict[str, Callable[[State], bool]] = field(default_factory=dict)   # probability: its reach predicate
    obligations: dict[str, Callable[[State], bool]] = field(default_factory=dict)   # liveness: where it is open
    fair_when: list[Callable[..., bool] | None] = field(default_factory=list)   # per fairness assumption: a step fn
    replay_lines: list[tuple[str, Callable[..., Any], bool]] = field(default_factory=list)
    inactive: set[str] = field(default_factory=set)   # properties whose `when` is false here
    measures: dict[str, Callable[..., Any]] = field(default_factory=dict)   # name -> step fn (0/1 or int)
    rule_conditions: dict[int, Callable[..., tuple[bool, ...]]] = field(default_factory=dict)  # action -> each rule's `when`
    all_invariants: tuple[list[str], Callable[[State], int]] | None = None  # names, first failing or -1
    fallible: set[str] | None = None                  # properties that may fail to evaluate (None: any)
    bound_to: str | None = None                       # the adapter whose code the actions run
    binding: Callable[[], str] | None = None          # bound: how the code reaches a state (machine/live.py)
    drift: Callable[[], tuple[Any, ...] | None] | None = None   # bound: where code and stages first disagree
    determinism: Callable[[], dict[str, Any]] | None = None    # bound: how determinism was checked, its cost
    representatives: Callable[[], dict[str, dict[str, dict[str, int]]]] | None = None   # bound: values per class
    # the `unreachable_when` declarations that hold for these params, keyed as Spec.unreachables
    acknowledged: dict[tuple[Any, ...], Unreachable] = field(default_factory=dict)
    # the actions of copies of a recursive sub-agent past their depth bound for these params
    unentered: frozenset[int] = frozenset()
    source: Source | None = None                      # the generated module the functions come from
    sweep: GeneratedLoop | None = None                # the whole BFS loop, generated (machine/sweep.py)
    # the property monitors' hidden vars (machine/patterns.py, pasttime.py, liveness.py): they follow
    # the user's vars in every state tuple, and no trace, report or adapter sees them
    monitor_names: list[str] = field(default_factory=list)

    @property
    def all_names(self) -> list[str]:
        """Every var of a state tuple, in order: the user's, then the monitors'."""
        return self.var_names + self.monitor_names

    def state_dict(self, state: State) -> dict[str, Any]:
        """A state as users see it: their own vars (zip stops before the monitors' at the tail)."""
        return dict(zip(self.var_names, state))

    def full_state(self, shown: dict[str, Any]) -> State:
        """The state tuple of an initial state given by the user's vars (`state_dict` of it, or a
        trace's first row): the monitors start in their one initial value. A dict that also names
        the monitors (a trace written before they were hidden) gives them itself."""
        if all(n in shown for n in self.monitor_names):
            return tuple(shown[v] for v in self.all_names)
        start = self.inits[0][len(self.var_names):] if self.inits else ()
        return tuple(shown[v] for v in self.var_names) + tuple(start)

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
        self.code = compile(ast.fix_missing_locations(self.generated.module), self.generated.filename, "exec")
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
        at.checks()
        bounds = at.bounds()
        inits = at.inits(bounds)
        g: dict[str, Any] = {"__builtins__": {}, "min": min, "max": max, "abs": abs,
                             "_NoRule": _NoRule, "_len": len, "_enumerate": enumerate,
                             "_ERR": EVAL_ERRORS, "_STOP": (MemoryError, OutOfTime), "_absent": _absent,
                             **at.pns}
        for i, b in enumerate(bounds):
            if b is not None:
                g[f"dlo_{i}"], g[f"dhi_{i}"] = b
        exec(self.code, g)
        actions = [at.action(ai, a, g) for ai, a in enumerate(spec.actions)]
        m = Machine(spec, dict(params), [v.name for v in spec.vars if v.monitor is None], inits, actions,
                    g["is_terminal"], g.get("label"), g["domain_error"], bounds, sweep=GeneratedLoop(self, g),
                    source=self.generated, monitor_names=[v.name for v in spec.vars if v.monitor is not None])
        at.properties(m, g)
        m.acknowledged = {key: u for key, u in spec.unreachables() if at.value(u.when, u.line)}
        m.unentered = frozenset(k for k, a in enumerate(spec.actions)
                                if a.entered is not None and not at.value(a.entered, a.line))
        for k, ms in enumerate(spec.measures):
            m.measures[ms.name] = g[f"measure_{k}"]
        for ai, a in enumerate(spec.actions):
            if a.decide is not None:
                m.rule_conditions[ai] = g[f"conds_{ai}"]
        m.all_invariants = ([p.name for p in spec.properties if p.kind == "invariant"], g["all_invariants"])
        for k, (label, ex) in enumerate(spec.replay):
            m.replay_lines.append((label, g[f"replay_{k}"], _bare_choice(ex)))
        m.fair_when = [g[f"fair_{k}"] if f.when is not None else None for k, f in enumerate(spec.fairness)]
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

    def checks(self) -> None:
        """A tree's checks of these params (machine/compose.py): each names its own file and line."""
        for c in self.spec.param_checks:
            if c.entered is not None and not self.value(c.entered, c.line):
                continue        # a copy of a recursive sub-agent past its depth bound: never run here
            value = self.value(c.expr, c.line)
            if not c.accepts(value):
                text = c.message.format(*value) if isinstance(value, tuple) else c.message.format(value)
                raise SpecError([Problem(c.file, c.line, text + self.where)])

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
        items_per_choice: list[Sequence[tuple[Any, ...] | AbsentChoice]] = []
        for cname, cs in a.choices:
            items = _choice_items(cs, self.value)
            if _count(items) == 0:
                raise self.fail(cs.line, f"choice {cname} of action {a.name} is an empty set")
            items_per_choice.append(items)
        sizes = [_count(items) + (cs.when is not None) for items, (_, cs) in zip(items_per_choice, a.choices)]
        if math.prod(sizes) > MAX_PRODUCT:
            widest = max(range(len(sizes)), key=sizes.__getitem__)
            raise self.fail(a.choices[widest][1].line, f"action {a.name} makes {math.prod(sizes):,} "
                                                       f"choice combinations per step, more than the "
                                                       f"limit of {MAX_PRODUCT:,}")
        for k, (cname, cs) in enumerate(a.choices):
            if cs.when is not None:           # a conditional choice may be absent from a transition
                items_per_choice[k] = [*items_per_choice[k], AbsentChoice(cname, a.name)]
        combos = list(itertools.product(*items_per_choice))
        names = [c for c, _ in a.choices]
        labels = [{n: item[0] for n, item in zip(names, combo) if not _absent(item)} for combo in combos]
        step_args = []
        for combo in combos:
            mine = dict(zip(names, combo))
            step_args.append(tuple(mine.get(n, MissingChoice(n, a.name)) for n in self.spec.choice_names))
        fields = {c: [f for f, _ in sorted(cs.fields.items(), key=lambda kv: kv[1][1])]
                  for c, cs in a.choices if cs.kind == "records"}
        return CompiledAction(a.name, ai, g.get(f"guard_{ai}"), g[f"step_{ai}"], combos,
                              labels, step_args, names, fields, g.get(f"admit_{ai}"))

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
            elif p.kind == "probability":
                m.chances[p.name] = g[f"prop_{k}"]
            elif p.kind == "liveness":
                m.obligations[p.name] = g[f"prop_{k}"]
            elif p.kind == "maximum":
                m.maxima[p.name] = (g[f"prop_{k}"], None if p.bound is None
                                    else self.value(p.bound, p.bound_line or p.line))
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


def _count(items: Sequence[object]) -> int:
    return value_count(items.values) if isinstance(items, _Items) else len(items)


def _choice_items(cs: ChoiceSet, value: Callable[[E.Expr, int], Any]) -> Sequence[Combo]:
    if cs.kind == "range":
        lo, hi = value(present(cs.lo), cs.line), value(present(cs.hi), cs.line)
        return _Items(range(lo, hi + 1))
    return list(cs.items)


# ---------------------------------------------------------------- code generation

class Source:
    """A spec's generated module (an AST), and per line of it the spec line it came from,
    so an expression that fails to evaluate can be named by its file and line (`spec_line`).
    `modules` holds that map for every module generated from the spec (the BFS loop too)."""

    def __init__(self, path: str, module: ast.Module, origin: dict[int, int]):
        self.filename = f"<haltproof:{path}>"
        self.module = module
        self.origin = origin                  # generated line -> spec line
        self.modules: dict[str, dict[int, int]] = {self.filename: origin}


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
    return f" ({shown_path(line_file(line, m.spec.path))}:{line})" if line is not None else ""


def _generate(spec: Spec) -> Source:
    """The spec's functions (steps, guards, decide conditions, terminal, domains, every
    property, replay lines and measures) as one module, built as an AST."""
    builder = _ModuleBuilder(spec)
    module = ast.Module(builder.functions(), [])
    return Source(spec.path, module, A.number_lines(module, builder.lines))


class _ModuleBuilder:
    """Builds the functions of a spec's module; `lines` notes the spec line of each node
    that evaluates a spec expression."""

    def __init__(self, spec: Spec):
        self.spec = spec
        self.lines = A.Lines()
        self.at = self.lines.at
        self.step_params = ["b", "a", "action", "rule"] + [f"c_{c}" for c in spec.choice_names]

    def functions(self) -> list[ast.stmt]:
        spec = self.spec
        out: list[ast.stmt] = []
        for ai, a in enumerate(spec.actions):
            if a.guard is not None:
                out.append(self.returning(f"guard_{ai}", ["s"], a.guard, a.guard.line or a.line))
            out.append(self.step(ai, a))
            if a.conditional:
                out.append(self.admit(ai, a))
        out += [self.conds(ai, a) for ai, a in enumerate(spec.actions) if a.decide is not None]
        out += self.terminal()
        out.append(self.domain_error())
        for k, p in enumerate(spec.properties):
            if p.kind in ("invariant", "reachable", "variant", "step_invariant", "probability", "liveness", "maximum"):
                params = ["s"] if p.kind != "step_invariant" else self.step_params
                out.append(self.returning(f"prop_{k}", params, present(p.expr), present(p.expr).line or p.line))
            elif p.kind == "terminates_within" and p.count is not None:
                out.append(self.returning(f"count_{k}", self.step_params, p.count, p.count.line or p.line))
        out.append(self.all_invariants())
        out += [self.returning(f"fair_{k}", self.step_params, f.when, f.when.line or f.line)
                for k, f in enumerate(spec.fairness) if f.when is not None]
        out += [self.returning(f"replay_{k}", self.step_params, ex, ex.line) for k, (_, ex) in enumerate(spec.replay)]
        out += [self.returning(f"measure_{k}", self.step_params, ms.expr, ms.expr.line or ms.line)
                for k, ms in enumerate(spec.measures)]
        return out

    @staticmethod
    def function(name: str, params: list[str], body: list[ast.stmt]) -> ast.FunctionDef:
        args = ast.arguments([], [ast.arg(p) for p in params], None, [], [], None, [])
        return ast.FunctionDef(name, args, body, [], None, None)

    def returning(self, name: str, params: list[str], ex: E.Expr, line: int | None) -> ast.FunctionDef:
        """`def name(params): return ex`, the return noted as the spec's line `line`."""
        return self.function(name, params, [self.at(ast.Return(A.inline(ex)), line)])

    def unpack(self) -> ast.Assign:
        """`v_0, v_1, ... = s`."""
        return A.assign(A.names([f"v_{i}" for i in range(len(self.spec.vars))], ast.Store()), A.load("s"))

    def set_stage(self, st: SetStage) -> list[ast.stmt]:
        """A set stage as one simultaneous assignment (every right side sees the values
        before the stage); each right side is named by its own spec line."""
        if not st.assigns:
            return []
        lines = [x.value.line or x.line or st.line for x in st.assigns]
        values = [self.at(A.inline(x.value), line) for x, line in zip(st.assigns, lines)]
        if len(st.assigns) == 1:
            return [self.at(A.assign(f"v_{st.assigns[0].var}", values[0]), lines[0])]
        targets = A.names([f"v_{x.var}" for x in st.assigns], ast.Store())
        return [self.at(A.assign(targets, A.tuple_of(values)), st.line)]

    def decide(self, st: DecideStage, action: str, pos: int = 0) -> list[ast.stmt]:
        """Rules `pos`.. of a decide stage: the first that matches sets the var and `r`."""
        if pos == len(st.rules):
            no_rule = A.call(A.load("_NoRule"), A.const(action), A.const(self.spec.vars[st.var].name))
            return [self.at(ast.Raise(no_rule, None), st.line)]
        r = st.rules[pos]
        then = r.then.line or r.line
        body: list[ast.stmt] = [self.at(A.assign(f"v_{st.var}", A.inline(r.then)), then),
                                self.at(A.assign("r", A.const(r.name)), then)]
        if r.when is None:
            return body
        test = A.inline(r.when)
        return [self.at(ast.If(test, body, self.decide(st, action, pos + 1)), r.when.line or r.line)]

    def step(self, ai: int, a: Action) -> ast.FunctionDef:
        """`step_i(s, choices...)`: the successor of s and the rule that fired (or None)."""
        body: list[ast.stmt] = [self.unpack(), A.assign("r", A.const(None))]
        for st in a.stages:
            body += self.set_stage(st) if isinstance(st, SetStage) else self.decide(st, a.name)
        state = A.tuple_of([A.load(f"v_{i}") for i in range(len(self.spec.vars))])
        body.append(ast.Return(A.tuple_of([state, A.load("r")])))
        return self.function(f"step_{ai}", ["s"] + [f"c_{c}" for c, _ in a.choices], body)

    def admit(self, ai: int, a: Action) -> ast.FunctionDef:
        """`admit_i(s, choices...)`: None when the combination is a transition from s, else why
        not: a conditional choice is made exactly where its `when:` holds (absent elsewhere),
        and a value with a `when:` is possible only where it holds. Choices in declared order,
        so a `when:` reading an earlier, absent choice fails as any read of a missing choice."""
        body: list[ast.stmt] = [self.unpack()]
        for cname, cs in a.choices:
            if not cs.conditional:
                continue
            var = A.load(f"c_{cname}")
            made: list[ast.stmt] = []
            absent: list[ast.stmt] = []
            if cs.when is not None:
                when, line = A.inline(cs.when), cs.when.line or cs.line
                absent.append(self.at(ast.If(when, [ast.Return(A.const(
                    f"choice {cname} is made here ({cs.when.text} holds): give its value"))], []), line))
                made.append(self.at(ast.If(A.negate(A.inline(cs.when)), [ast.Return(A.const(
                    f"choice {cname} is not made here ({cs.when.text} is false)"))], []), line))
            for label, vw in cs.value_when.items():
                same = ast.Compare(ast.Subscript(var, A.const(0), ast.Load()), [ast.Eq()], [A.const(label)])
                refuse = ast.If(A.negate(A.inline(vw)), [ast.Return(A.const(
                    f"value {label} of choice {cname} is not possible here ({vw.text} is false)"))], [])
                made.append(ast.If(same, [self.at(refuse, vw.line or cs.line)], []))
            if cs.when is None:
                body += made
            else:
                body.append(ast.If(A.call(A.load("_absent"), A.load(f"c_{cname}")), absent, made))
        body.append(ast.Return(A.const(None)))
        return self.function(f"admit_{ai}", ["s"] + [f"c_{c}" for c, _ in a.choices], body)

    def conds(self, ai: int, a: Action) -> ast.FunctionDef:
        """`conds_i(s, choices...)`: each rule's `when` of the action's decide table, on the
        values the stages before it leave."""
        body: list[ast.stmt] = [self.unpack()]
        for st in a.stages:
            if isinstance(st, SetStage):
                body += self.set_stage(st)
                continue
            conds = [A.inline(r.when) if r.when is not None else A.const(True) for r in st.rules]
            body.append(self.at(ast.Return(A.tuple_of(conds)), st.line))
            break
        return self.function(f"conds_{ai}", ["s"] + [f"c_{c}" for c, _ in a.choices], body)

    def terminal(self) -> list[ast.stmt]:
        """`is_terminal(s)`, and `label(s)` for a terminal label."""
        t = self.spec.terminal
        if t is None:
            return [self.function("is_terminal", ["s"], [ast.Return(A.const(False))])]
        if t.when is not None:
            return [self.returning("is_terminal", ["s"], t.when, t.when.line or t.line)]
        label = present(t.label)
        line = label.line or t.line
        values = A.tuple_of([A.const(v) for v in t.values])
        ends = ast.Compare(A.inline(label), [ast.In()], [values])
        return [self.returning("label", ["s"], label, line),
                self.function("is_terminal", ["s"], [self.at(ast.Return(ends), line)])]

    def domain_error(self) -> ast.FunctionDef:
        """`domain_error(s)`: the first int var outside its domain, or -1."""
        body: list[ast.stmt] = []
        for i, v in enumerate(self.spec.vars):
            if v.kind == "int":
                read = ast.Subscript(A.load("s"), A.const(i), ast.Load())
                inside = ast.Compare(A.load(f"dlo_{i}"), [ast.LtE(), ast.LtE()], [read, A.load(f"dhi_{i}")])
                body.append(ast.If(A.negate(inside), [ast.Return(A.const(i))], []))
        body.append(ast.Return(A.const(-1)))
        return self.function("domain_error", ["s"], body)

    def all_invariants(self) -> ast.FunctionDef:
        """`all_invariants(s)`: the first invariant false in s, or -1 (one call per state
        checks them all: the fast path)."""
        body: list[ast.stmt] = []
        invariants = [p for p in self.spec.properties if p.kind == "invariant"]
        for k, p in enumerate(invariants):
            line = present(p.expr).line or p.line
            body.append(self.at(ast.If(A.negate(A.inline(present(p.expr))),
                                       [self.at(ast.Return(A.const(k)), line)], []), line))
        body.append(ast.Return(A.const(-1)))
        return self.function("all_invariants", ["s"], body)
