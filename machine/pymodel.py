"""Declaring a machine in plain Python, for users who want everything in code.

In the style of stateright's Model: subclass `Model`, say the params, the finite
domain of each var, the initial states and when a state is terminal, write each action
as a method decorated with `@action`, and each property as a decorated method.

    class RetryLoop(Model):
        params = {"K": [1, 2, 3], "R": [0, 1]}

        def domains(self, p):
            return {"calls": range(0, p["K"] + 1), "status": ["running", "done", "failed"]}

        def init(self, p):
            return [{"calls": 0, "status": "running"}]

        def terminal(self, s, p):
            return s["status"] != "running"

        @action(when=lambda s, p: s["status"] == "running", outcome=["ok", "error"],
                rules=["finished", "gave_up", "retry"])
        def call_tool(self, s, p, outcome):
            calls = s["calls"] + 1
            if outcome == "ok":
                return {"calls": calls, "status": "done"}, "finished"
            ...

        @always
        def budget_respected(self, s, p):
            return s["calls"] <= p["K"]

        bounded = terminates_within(lambda p: p["K"])

`python_model(RetryLoop)` turns it into the same `Spec`/`Machine` objects a YAML spec
compiles to, so the engine, the properties, the reports, `explorer.api.check` and the
command line (`haltproof check module:RetryLoop`) treat both alike. States are dicts
in your code; a value outside its domain is a `domains` violation, an exception a
`bound_code` finding, as for bound YAML specs.
"""

from __future__ import annotations

import importlib
import inspect
import itertools
import os
import sys
from typing import Any, Callable, Iterable

from . import expr as E
from .binding import CodeError, _hashable, _user_traceback
from .compiled import CompiledAction, Machine, _MissingChoice
from .errors import Problem, SpecError
from .spec import (Action, ChoiceSet, DecideStage, Param, PropertyDecl, Rule, Spec, Terminal, Var,
                   negative_bound, value_count)


# ---------------------------------------------------------------- declarations

class _Prop:
    """A property declared on a Model class."""

    def __init__(self, kind: str, fn: Callable | None = None, *, bound: Callable | None = None,
                 count: Callable | None = None, vars: Iterable[str] = (), when: Callable | None = None):
        self.kind, self.fn, self.bound, self.count = kind, fn, bound, count
        self.vars = tuple(vars)
        self.when = when
        self.name = getattr(fn, "__name__", None)

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name


def always(fn: Callable) -> _Prop:
    """Invariant: `fn(self, state, params)` is true in every reachable state."""
    return _Prop("invariant", fn)


def step_invariant(fn: Callable) -> _Prop:
    """`fn(self, before, after, params, action, choices, rule)` is true for every transition."""
    return _Prop("step_invariant", fn)


def reachable(fn: Callable) -> _Prop:
    """Some reachable state satisfies `fn(self, state, params)`."""
    return _Prop("reachable", fn)


def terminates() -> _Prop:
    return _Prop("terminates")


def terminates_within(bound: Callable[[dict], int], count: Callable | None = None) -> _Prop:
    """Every run ends within `bound(params)` transitions (those `count(before, after, params,
    action, choices, rule)` selects, when given)."""
    return _Prop("terminates_within", bound=bound, count=count)


def variant(rank: Callable, bound: Callable[[dict], int]) -> _Prop:
    """`rank(state, params)` strictly increases on every non-terminal transition, within `bound`."""
    return _Prop("variant", rank, bound=bound)


def independent_of(*names: str) -> _Prop:
    return _Prop("independent", vars=names)


def action(*, when: Callable | None = None, rules: Iterable[str] = (), **choices: Iterable) -> Callable:
    """Mark a method `fn(self, state, params, **choices) -> new_state | (new_state, rule)`."""
    def mark(fn: Callable) -> Callable:
        fn._haltproof_action = {"when": when, "rules": list(rules),
                                "choices": {k: list(v) for k, v in choices.items()}}
        return fn
    return mark


class Model:
    """Base class of a machine declared in Python (see the module docstring)."""

    params: dict[str, Iterable[int]] = {}

    def domains(self, p: dict[str, int]) -> dict[str, Iterable]:
        raise NotImplementedError

    def init(self, p: dict[str, int]) -> Iterable[dict[str, Any]]:
        raise NotImplementedError

    def terminal(self, s: dict[str, Any], p: dict[str, int]) -> bool:
        return False


# ---------------------------------------------------------------- turning it into a Spec

def load_model_ref(ref: str) -> type[Model]:
    """`module:Class` (importable from the working directory) to a Model subclass."""
    module_name, _, attr = ref.partition(":")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        target = getattr(importlib.import_module(module_name), attr)
    except Exception as exc:
        raise SpecError([Problem(ref, None, f"cannot load the model: {type(exc).__name__}: {exc}")]) from None
    if not (isinstance(target, type) and issubclass(target, Model)):
        raise SpecError([Problem(ref, None, "not a subclass of machine.pymodel.Model")])
    return target


def _where(obj: Any) -> tuple[str, int | None]:
    try:
        fn = inspect.unwrap(obj)
        return inspect.getsourcefile(fn) or "<model>", inspect.getsourcelines(fn)[1]
    except (TypeError, OSError):
        return "<model>", None


def python_model(cls: type[Model]) -> tuple[Spec, Callable[[dict[str, int]], Machine]]:
    """A Spec describing the model, and a function making its Machine for given params."""
    file, cls_line = _where(cls)
    model = cls()
    problems: list[Problem] = []
    params = []
    for name, values in (cls.params or {}).items():
        vals = values if isinstance(values, range) else list(values)    # a range stays one
        if not value_count(vals) or (not isinstance(vals, range)
                                     and any(isinstance(v, bool) or not isinstance(v, int) for v in vals)):
            problems.append(Problem(file, cls_line, f"param {name} needs a non-empty list of integers"))
        params.append(Param(name, vals, cls_line or 0))
    methods = [(n, getattr(cls, n)) for n in dir(cls) if hasattr(getattr(cls, n), "_haltproof_action")]
    methods.sort(key=lambda nm: _where(nm[1])[1] or 0)
    if not methods:
        problems.append(Problem(file, cls_line, f"model {cls.__name__} has no @action method"))
    props = [v for v in vars(cls).values() if isinstance(v, _Prop)]
    for p in props:
        if p.kind == "independent" and not p.vars:
            problems.append(Problem(file, cls_line, f"{p.name}: independent_of needs var names"))
    if problems:
        raise SpecError(problems)
    first = {p.name: p.values[0] for p in params}
    sample = _domains(model, first, file, cls_line)
    spec_vars = []
    for name, values in sample.items():
        if all(isinstance(v, bool) for v in values):
            spec_vars.append(Var(name, "bool", E.BOOL, None, None, line=cls_line or 0))
        elif all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            spec_vars.append(Var(name, "int", E.INT, None, None, line=cls_line or 0))
        else:
            spec_vars.append(Var(name, "enum", E.EnumT(frozenset(map(str, values)), name), None, None,
                                 tuple(map(str, values)), line=cls_line or 0))
    actions = []
    for name, fn in methods:
        meta = fn._haltproof_action
        _, line = _where(fn)
        choices = [(c, ChoiceSet(c, "scalars", E.INT, items=[(v,) for v in vals], line=line or 0))
                   for c, vals in meta["choices"].items()]
        stages = []
        if meta["rules"]:
            stages = [DecideStage(0, [Rule(r, None, E.literal_expr(True, "true"), line or 0)
                                      for r in meta["rules"]], line or 0)]
        actions.append(Action(name, None, choices, stages, line or 0))
    decls = []
    for p in props:
        _, line = _where(p.fn) if p.fn is not None else (file, cls_line)
        decl = PropertyDecl(p.name, p.kind, line or cls_line or 0,
                            description=(inspect.getdoc(p.fn) or "") if p.fn else "")
        decl.vars = [[v.name for v in spec_vars].index(v) for v in p.vars if v in sample]
        decls.append(decl)
    terminal = Terminal(E.literal_expr(True, "terminal"), None, [], cls_line or 0)
    choice_names = sorted({c for _, fn in methods for c in fn._haltproof_action["choices"]})
    spec = Spec(path=file, name=cls.__name__, description=inspect.getdoc(cls) or "", params=params,
                vars=spec_vars, actions=actions, terminal=terminal, properties=decls, scenarios=[],
                expect_violated=None, replay=[], choice_names=choice_names, bind=None, python=True)

    def instantiate(values: dict[str, int]) -> Machine:
        return _machine(model, spec, props, methods, dict(values), file, cls_line)
    return spec, instantiate


def _domains(model: Model, p: dict[str, int], file: str, line: int | None) -> dict[str, list]:
    try:
        doms = {k: list(v) for k, v in model.domains(dict(p)).items()}
    except Exception as exc:
        raise SpecError([Problem(file, line, f"domains() raised {type(exc).__name__}: {exc}")]) from None
    for k, v in doms.items():
        if not v:
            raise SpecError([Problem(file, line, f"var {k} has an empty domain with {p}")])
    return doms


def _machine(model: Model, spec: Spec, props: list[_Prop], methods: list, p: dict[str, int],
             file: str, line: int | None) -> Machine:
    doms = _domains(model, p, file, line)
    names = list(doms)
    allowed = [frozenset(v) for v in doms.values()]

    def as_dict(s: tuple) -> dict[str, Any]:
        return dict(zip(names, s))

    def as_tuple(d: Any, what: str) -> tuple:
        if not isinstance(d, dict) or set(d) != set(names):
            got = sorted(d) if isinstance(d, dict) else type(d).__name__
            raise CodeError(f"{what} must return a dict with exactly the vars {sorted(names)}, got {got}")
        return _hashable(tuple(d[n] for n in names), names, what)

    def user(fn: Callable, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except CodeError:
            raise
        except Exception as exc:
            raise CodeError(f"{getattr(fn, '__qualname__', fn)} raised {type(exc).__name__}: {exc}\n"
                            f"{_user_traceback(exc)}") from None

    try:
        inits = [as_tuple(s, "init()") for s in model.init(dict(p))]
    except Exception as exc:
        raise SpecError([Problem(file, line, f"init() failed with {p}: {exc}")]) from None
    for s in inits:
        bad = [n for n, v, ok in zip(names, s, allowed) if v not in ok]
        if bad:
            raise SpecError([Problem(file, line, f"initial state {as_dict(s)} has {bad[0]} outside its domain")])

    actions = []
    for index, (name, fn) in enumerate(methods):
        meta = fn._haltproof_action
        cnames = list(meta["choices"])
        combos = [tuple((v,) for v in c) for c in itertools.product(*meta["choices"].values())]
        labels = [{c: item[0] for c, item in zip(cnames, combo)} for combo in combos]
        rules = set(meta["rules"])
        when = meta["when"]

        def guard(s: tuple, when: Callable | None = when) -> bool:
            return True if when is None else bool(user(when, as_dict(s), dict(p)))

        def step(s: tuple, *combo: tuple, fn: Callable = fn, cnames: list = cnames, rules: set = rules,
                 aname: str = name) -> tuple[tuple, str | None]:
            kwargs = {c: item[0] for c, item in zip(cnames, combo)}
            first = user(fn, model, as_dict(s), dict(p), **kwargs)
            second = user(fn, model, as_dict(s), dict(p), **kwargs)
            if first != second:
                raise CodeError(f"action {aname} is nondeterministic: {first} then {second}")
            new, rule = first if isinstance(first, tuple) else (first, None)
            if rule is not None and rule not in rules:
                raise CodeError(f"action {aname} reports rule {rule!r}, not one of its rules "
                                f"({', '.join(sorted(rules)) or 'none declared'})")
            return as_tuple(new, f"action {aname}"), rule
        step_args = [tuple(dict(zip(cnames, combo)).get(c, _MissingChoice(c, name)) for c in spec.choice_names)
                     for combo in combos]
        actions.append(CompiledAction(name, index, guard, step, combos, labels, step_args, cnames))

    def domain_error(t: tuple) -> int:
        for i, (v, ok) in enumerate(zip(t, allowed)):
            if v not in ok or type(v) is bool and not all(type(x) is bool for x in ok):
                return i
        return -1

    m = Machine(spec, dict(p), names, inits, actions,
                lambda s: bool(user(model.terminal, as_dict(s), dict(p))),
                None, domain_error, [(min(d), max(d)) if all(type(x) is int for x in d) else None
                                     for d in doms.values()])
    m.bound_to = f"{type(model).__module__}:{type(model).__name__}"
    m.domain_text = lambda i: "{" + ", ".join(map(str, doms[names[i]])) + "}"   # type: ignore[method-assign]
    for prop in props:
        if prop.when is not None and not prop.when(dict(p)):
            m.inactive.add(prop.name)
        if prop.kind == "invariant":
            m.invariants[prop.name] = lambda s, f=prop.fn: bool(user(f, model, as_dict(s), dict(p)))
        elif prop.kind == "reachable":
            m.reachables[prop.name] = lambda s, f=prop.fn: bool(user(f, model, as_dict(s), dict(p)))
        elif prop.kind == "step_invariant":
            m.step_invariants[prop.name] = _step_fn(prop.fn, model, as_dict, p, spec.choice_names, user)
        elif prop.kind == "variant":
            m.variants[prop.name] = (lambda s, f=prop.fn: user(f, as_dict(s), dict(p)), prop.bound(dict(p)))
        elif prop.kind == "terminates_within":
            m.within[prop.name] = prop.bound(dict(p))
            if isinstance(m.within[prop.name], int) and m.within[prop.name] < 0:
                decl = spec.property(prop.name)
                raise SpecError([Problem(spec.path, decl.line if decl else None,
                                         negative_bound(prop.name, m.within[prop.name])
                                         + f" (with {', '.join(f'{k}={v}' for k, v in p.items())})")])
            if prop.count is not None:
                m.counts[prop.name] = _step_fn(prop.count, None, as_dict, p, spec.choice_names, user)
    return m


def _step_fn(fn: Callable, model: Model | None, as_dict: Callable, p: dict[str, int],
             choice_names: list[str], user: Callable) -> Callable[..., bool]:
    """Adapt a Python step predicate to the engine's (before, after, action, rule, *choices) call."""
    def call(b: tuple, a: tuple, action: str, rule: str | None, *choices: Any) -> bool:
        chosen = {n: c[0] for n, c in zip(choice_names, choices) if not isinstance(c, _MissingChoice)}
        args = (as_dict(b), as_dict(a), dict(p), action, chosen, rule)
        return bool(user(fn, model, *args) if model is not None else user(fn, *args))
    return call
