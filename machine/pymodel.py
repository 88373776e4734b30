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
compiles to, so the engine, the properties, the reports, `haltproof.api.check` and the
command line (`haltproof check module:RetryLoop`) treat both alike. States are dicts
in your code; a value outside its domain is a `domains` violation, an exception a
`bound_code` finding, as for bound YAML specs. A value is in a domain when it equals
one of the domain's values *of the same type*: True and 1.0 are not in range(3), 1 is
not in [False, True]. Properties, guards and `terminal` must return a real bool
(`type(x) is bool`; not 1, None, "yes" or numpy.bool_): anything else is a
`well_defined` finding, never taken for its truth value.

Subclasses inherit: the actions and properties of every class in the MRO are checked
(see `_declarations` for the order and how an override by name replaces its base's
entry); params, domains(), init() and terminal() are looked up as Python does, so the
most derived definition wins whole (a subclass's `params` replace the base's dict).
"""

from __future__ import annotations

import importlib
import inspect
import itertools
import os
import sys
from collections.abc import Callable, Iterable
from typing import Any, TypedDict, TypeVar

from . import expr as E
from . import usercode
from .binding import CodeError, checked_hashable, user_traceback
from .compiled import CompiledAction, EvalError, Machine, MissingChoice
from .errors import Problem, SpecError
from .spec import (Action, DeclKind, ChoiceSet, DecideStage, Param, PropertyDecl, Rule, Spec, Terminal, Var,
                   SetStage, negative_bound, present)
from .inputs import value_count
from .text import exception_text
from .usercode import running


# ---------------------------------------------------------------- declarations

# A function of the user's model (a property, guard, bound, rank or action). The docstrings
# give each one's arguments; its results are checked when it runs (`_truth`, `_integer`,
# `_bound`, `as_tuple`), so its static type promises nothing about them.
UserFn = Callable[..., Any]
State = tuple[Any, ...]             # the engine's state: the vars' values in the spec's order
Params = dict[str, int]
_Method = TypeVar("_Method", bound=UserFn)
_MARK = "_haltproof_action"         # the attribute @action sets on a method


class _ActionMeta(TypedDict):
    """What @action records on a method."""

    when: UserFn | None
    rules: list[str]
    choices: dict[str, list[Any]]


def _meta(method: object) -> _ActionMeta:
    """The record @action left on `method`."""
    meta: _ActionMeta = getattr(method, _MARK)
    return meta


class _Prop:
    """A property declared on a Model class."""

    def __init__(self, kind: DeclKind, fn: UserFn | None = None, *, bound: UserFn | None = None,
                 count: UserFn | None = None, vars: Iterable[str] = ()):
        self.kind, self.fn, self.bound, self.count = kind, fn, bound, count
        self.vars = tuple(vars)
        self.name: str = getattr(fn, "__name__", "")    # __set_name__ sets it when the class is made
        self.at = _where(fn) if fn is not None else _class_body_line()

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name


def always(fn: UserFn) -> _Prop:
    """Invariant: `fn(self, state, params)` is true in every reachable state."""
    return _Prop("invariant", fn)


def step_invariant(fn: UserFn) -> _Prop:
    """`fn(self, before, after, params, action, choices, rule)` is true for every transition."""
    return _Prop("step_invariant", fn)


def reachable(fn: UserFn) -> _Prop:
    """Some reachable state satisfies `fn(self, state, params)`."""
    return _Prop("reachable", fn)


def terminates() -> _Prop:
    return _Prop("terminates")


def terminates_within(bound: Callable[[Params], int], count: UserFn | None = None) -> _Prop:
    """Every run ends within `bound(params)` transitions (those `count(before, after, params,
    action, choices, rule)` selects, when given)."""
    return _Prop("terminates_within", bound=bound, count=count)


def variant(rank: UserFn, bound: Callable[[Params], int]) -> _Prop:
    """`rank(state, params)` strictly increases on every non-terminal transition, within `bound`."""
    return _Prop("variant", rank, bound=bound)


def independent_of(*names: str) -> _Prop:
    return _Prop("independent", vars=names)


def action(*, when: UserFn | None = None, rules: Iterable[str] = (),
           **choices: Iterable[Any]) -> Callable[[_Method], _Method]:
    """Mark a method `fn(self, state, params, **choices) -> new_state | (new_state, rule)`."""
    def mark(fn: _Method) -> _Method:
        # setattr: a function object takes the mark, but its static type (Callable) has no such attribute
        meta: _ActionMeta = {"when": when, "rules": list(rules),
                             "choices": {k: list(v) for k, v in choices.items()}}
        setattr(fn, _MARK, meta)
        return fn
    return mark


class Model:
    """Base class of a machine declared in Python (see the module docstring)."""

    params: dict[str, Iterable[int]] = {}

    def domains(self, p: dict[str, int]) -> dict[str, Iterable[Any]]:
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
    except usercode.FAILURES as exc:
        raise SpecError([Problem(ref, None, f"cannot load the model: {exception_text(exc)}")]) from None
    if not (isinstance(target, type) and issubclass(target, Model)):
        raise SpecError([Problem(ref, None, "not a subclass of haltproof.machine.pymodel.Model")])
    return target


Place = tuple[str, int | None]      # (file, line) of a declaration


def _where(obj: Any) -> Place:
    try:
        fn = inspect.unwrap(obj)
        return inspect.getsourcefile(fn) or "<model>", inspect.getsourcelines(fn)[1]
    except (TypeError, OSError):
        return "<model>", None


def _class_body_line() -> Place:
    """Where a property without a function of its own is declared (`stops = terminates()`):
    the class-body line that called the public constructor, which called _Prop(): the first
    frame outside this module (not a fixed depth: a wrapper such as a mutation-testing
    trampoline may stand between them)."""
    frame = sys._getframe(1)
    while frame.f_back is not None and (frame.f_code.co_filename == __file__
                                        or frame.f_globals.get("__name__", "").startswith("mutmut.")):
        frame = frame.f_back
    return frame.f_code.co_filename, frame.f_lineno


def _defined_at(cls: type, name: str) -> Place:
    """Where the `name` that `cls` uses is defined: in the class of the MRO that defines it
    (a base, maybe in another module), at its def when it is a function, else at that class.
    Model's own defaults count as the model class's (haltproof's file is not the user's)."""
    owner = next((k for k in cls.__mro__ if name in vars(k)), Model)
    if owner is Model:
        return _where(cls)
    value = vars(owner)[name]
    file, line = _where(value) if callable(value) else ("<model>", None)
    return (file, line) if line is not None else _where(owner)


def _decl_place(place: Place, spec_file: str) -> tuple[str | None, int]:
    """A declaration's `file` and `line` (see haltproof.machine.spec.declared_at): file None when it is
    the spec's own, or when the source is unknown (line 0: no line)."""
    file, line = place
    if line is None:
        return None, 0
    same = os.path.normcase(os.path.abspath(file)) == os.path.normcase(os.path.abspath(spec_file))
    return (None if same else file), line


def _declarations(cls: type) -> dict[str, Any]:
    """Every attribute `cls` and its bases declare, by name, as Python looks them up: a
    property or action a base declares is checked in every subclass. Order: the most basic
    class's declarations first (each class in the order it declares them), then each
    subclass's new ones; a subclass's declaration under an existing name replaces the
    base's entry in place (so an override keeps the base's position, and overriding with
    something that is neither an action nor a property removes it)."""
    out: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        for name, value in vars(klass).items():
            out[name] = value           # an existing key keeps its place: the override stays there
    return out


def _call(file: str, line: int | None, what: str, fn: UserFn, *args: Any) -> Any:
    """Call the user's code while the model is being built: what it raises is the model's
    mistake, a spec error (exit 2) naming `what` with the user's traceback, not a crash."""
    try:
        return fn(*args)
    except usercode.FAILURES as exc:
        raise SpecError([Problem(file, line, f"{what} raised {exception_text(exc)}\n"
                                             f"{user_traceback(exc)}")]) from None


def python_model(cls: type[Model]) -> tuple[Spec, Callable[[dict[str, int]], Machine]]:
    """A Spec describing the model, and a function making its Machine for given params."""
    file, cls_line = _where(cls)
    model = _call(file, cls_line, f"{cls.__name__}()", cls)
    # every message about a declaration points at the file and line it is written in (a
    # base class's module, maybe), never at a base's line in the subclass's file
    places = {name: _defined_at(cls, name) for name in ("params", "domains", "init", "terminal")}
    problems: list[Problem] = []
    params = []
    params_at, params_line = _decl_place(places["params"], file)
    for name, values in (cls.params or {}).items():
        vals = values if isinstance(values, range) else list(values)    # a range stays one
        if not value_count(vals) or (not isinstance(vals, range)
                                     and any(isinstance(v, bool) or not isinstance(v, int) for v in vals)):
            problems.append(Problem(*places["params"], f"param {name} needs a non-empty list of integers"))
        params.append(Param(name, vals, params_line, params_at))
    declared = _declarations(cls)
    methods: list[tuple[str, UserFn]] = [(n, v) for n, v in declared.items() if hasattr(v, _MARK)]
    if not methods:
        problems.append(Problem(file, cls_line, f"model {cls.__name__} has no @action method"))
    props = [v for v in declared.values() if isinstance(v, _Prop)]
    for p in props:
        if p.kind == "independent" and not p.vars:
            problems.append(Problem(*p.at, f"{p.name}: independent_of needs var names"))
    if problems:
        raise SpecError(problems)
    first = {p.name: p.values[0] for p in params}
    sample = _domains(model, first, places["domains"])
    spec_vars = []
    for name, values in sample.items():
        kind = _kind(values)
        if kind == "bool":
            spec_vars.append(Var(name, "bool", E.BOOL, None, None, line=cls_line or 0))
        elif kind == "int":
            spec_vars.append(Var(name, "int", E.INT, None, None, line=cls_line or 0))
        else:
            spec_vars.append(Var(name, "enum", E.EnumT(frozenset(map(str, values)), name), None, None,
                                 tuple(map(str, values)), line=cls_line or 0))
    actions = []
    for name, fn in methods:
        meta = _meta(fn)
        at, line = _decl_place(_where(fn), file)
        choices = [(c, ChoiceSet(c, "scalars", E.INT, items=[(v,) for v in vals], line=line, file=at))
                   for c, vals in meta["choices"].items()]
        stages: list[SetStage | DecideStage] = []
        if meta["rules"]:
            stages = [DecideStage(0, [Rule(r, None, E.literal_expr(True, "true"), line, at)
                                      for r in meta["rules"]], line)]
        actions.append(Action(name, None, choices, stages, line, at))
    decls = []
    for p in props:
        at, line = _decl_place(p.at, file)
        decl = PropertyDecl(p.name, p.kind, line or cls_line or 0,
                            description=(inspect.getdoc(p.fn) or "") if p.fn else "", file=at)
        unknown = [v for v in p.vars if v not in sample]
        if unknown:
            raise SpecError([Problem(*p.at, f"{p.name}: independent_of names {', '.join(unknown)}, which "
                                            f"domains() does not declare (its vars: {', '.join(sample)})")])
        decl.vars = [list(sample).index(v) for v in p.vars]
        decls.append(decl)
    at, line = _decl_place(places["terminal"], file)
    terminal = Terminal(E.literal_expr(True, "terminal"), None, [], line, at)
    choice_names = sorted({c for _, fn in methods for c in _meta(fn)["choices"]})
    spec = Spec(path=file, name=cls.__name__, description=inspect.getdoc(cls) or "", params=params,
                vars=spec_vars, actions=actions, terminal=terminal, properties=decls, scenarios=[],
                expect_violated=None, replay=[], choice_names=choice_names, bind=None, python=True)

    def instantiate(values: dict[str, int]) -> Machine:
        return _machine(model, spec, props, methods, dict(values), places, first)
    return spec, instantiate


def _kind(values: list[Any]) -> str:
    """A var's kind from its domain: bool, int (never a bool), else enum."""
    if all(type(v) is bool for v in values):
        return "bool"
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return "int"
    return "enum"


def _same_vars(model: Model, spec: Spec, doms: dict[str, list[Any]], p: dict[str, int], first: dict[str, int],
               place: Place) -> dict[str, list[Any]]:
    """This combination's domains in the spec's var order, when they declare the spec's vars
    with the same kinds as the first combination (which the spec was made from): states are
    tuples read by position (independence ignores vars by index), and the reports, traces
    and ITF types are the spec's, so a var cannot come, go or change kind with the params."""
    names = [v.name for v in spec.vars]
    gone = [n for n in names if n not in doms]
    new = [n for n in doms if n not in names]
    if gone or new:
        parts = ([f"var{'s' if len(gone) > 1 else ''} {', '.join(gone)} with {first} but not with {p}"]
                 if gone else []) + \
                ([f"var{'s' if len(new) > 1 else ''} {', '.join(new)} with {p} but not with {first}"]
                 if new else [])
        raise SpecError([Problem(*place, f"{type(model).__name__}.domains() declares {', and '.join(parts)}: "
                                         "every param combination has the same vars")])
    for v in spec.vars:
        kind = _kind(doms[v.name])
        if kind != v.kind:
            raise SpecError([Problem(*place, f"var {v.name} is {v.kind} with {first} but {kind} with {p}: "
                                             "a var keeps one kind (int, bool or enum) in every param "
                                             "combination")])
    return {n: doms[n] for n in names}


def _domains(model: Model, p: dict[str, int], place: Place) -> dict[str, list[Any]]:
    file, line = place
    what = f"{type(model).__name__}.domains() with {p}"
    raw = _call(file, line, what, model.domains, dict(p))
    try:
        doms = {k: list(v) for k, v in raw.items()}
        for v in doms.values():
            frozenset(v)
    except (AttributeError, TypeError) as exc:
        raise SpecError([Problem(file, line, f"{what} must return a dict of var name to a list of "
                                             f"hashable values ({exception_text(exc)})")]) from None
    for k, v in doms.items():
        if not v:
            raise SpecError([Problem(file, line, f"var {k} has an empty domain with {p}")])
    return doms


def _type_name(value: Any) -> str:
    """A value's type as a message shows it: numpy's bool is `numpy.bool`, not `bool`."""
    t = type(value)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _truth(value: Any, fn: UserFn) -> bool:
    """What a property, guard or terminal returned, when it is a real bool. Anything else
    ("yes", 1, None, numpy.bool_) is the code's mistake, a `well_defined` finding: taken
    for its truth value, a predicate returning None would hold everywhere."""
    if type(value) is bool:
        return value
    raise EvalError(f"{getattr(fn, '__qualname__', fn)} returned {value!r} ({_type_name(value)}), "
                    "not a bool: it must return True or False")


def _integer(value: Any, fn: UserFn) -> int:
    """A variant's rank must be an int (not a bool) to be compared and bounded."""
    if type(value) is int:
        return value
    raise EvalError(f"{getattr(fn, '__qualname__', fn)} returned {value!r} ({_type_name(value)}), "
                    "not an int")


def _bound(prop: _Prop, p: dict[str, int]) -> int:
    """The bound of a variant or terminates_within for these params: an int, or a spec error."""
    file, line = prop.at
    what = f"the bound of {prop.name} with {p}"
    value = _call(file, line, what, present(prop.bound), dict(p))
    if type(value) is not int:
        raise SpecError([Problem(file, line, f"{what} is {value!r} ({_type_name(value)}), not an int")])
    return value


def _machine(model: Model, spec: Spec, props: list[_Prop], methods: list[tuple[str, UserFn]], p: dict[str, int],
             places: dict[str, Place], first: dict[str, int]) -> Machine:
    doms = _same_vars(model, spec, _domains(model, p, places["domains"]), p, first, places["domains"])
    names = list(doms)
    # (type, value) pairs: True == 1 == 1.0, and a plain membership test would let a bool or a
    # float into an int domain (or 1 into a bool one); the type must match a declared value's
    allowed = [frozenset((type(v), v) for v in d) for d in doms.values()]

    def as_dict(s: State) -> dict[str, Any]:
        return dict(zip(names, s))

    def as_tuple(d: Any, what: str) -> State:
        if not isinstance(d, dict) or set(d) != set(names):
            got = sorted(d) if isinstance(d, dict) else type(d).__name__
            raise CodeError(f"{what} must return a dict with exactly the vars {sorted(names)}, got {got}")
        return checked_hashable(tuple(d[n] for n in names), names, what)

    def user(fn: UserFn, *args: Any, **kwargs: Any) -> Any:
        def doing() -> str:
            state = next((a for a in args if isinstance(a, dict)), {})
            return running(getattr(fn, "__qualname__", repr(fn)), kwargs, state)
        try:
            return usercode.run_as(doing, lambda: fn(*args, **kwargs))
        except CodeError:
            raise
        except usercode.FAILURES as exc:
            raise CodeError(f"{getattr(fn, '__qualname__', fn)} raised {exception_text(exc)}\n"
                            f"{user_traceback(exc)}") from None

    def domain_error(t: State) -> int:
        for i, (v, ok) in enumerate(zip(t, allowed)):
            if (type(v), v) not in ok:
                return i
        return -1

    def domain_text(i: int) -> str:
        return "{" + ", ".join(map(str, doms[names[i]])) + "}"

    file, line = places["init"]
    raw = _call(file, line, f"{type(model).__name__}.init() with {p}", lambda: list(model.init(dict(p))))
    try:
        inits = [as_tuple(s, "init()") for s in raw]
    except CodeError as exc:
        raise SpecError([Problem(file, line, f"{exc} (with {p})")]) from None
    for s in inits:
        bad = domain_error(s)
        if bad >= 0:
            raise SpecError([Problem(file, line, f"initial state {as_dict(s)} has {names[bad]} = {s[bad]!r} "
                                                 f"outside its domain {domain_text(bad)}")])

    actions = []
    for index, (name, fn) in enumerate(methods):
        meta = _meta(fn)
        cnames = list(meta["choices"])
        combos = [tuple((v,) for v in c) for c in itertools.product(*meta["choices"].values())]
        labels = [{c: item[0] for c, item in zip(cnames, combo)} for combo in combos]
        rules = set(meta["rules"])
        when = meta["when"]

        def guard(s: State, when: UserFn | None = when) -> bool:
            return True if when is None else _truth(user(when, as_dict(s), dict(p)), when)

        def step(s: State, *combo: tuple[Any, ...], fn: UserFn = fn, cnames: list[str] = cnames,
                 rules: set[str] = rules, aname: str = name) -> tuple[State, str | None]:
            kwargs = {c: item[0] for c, item in zip(cnames, combo)}
            first = user(fn, model, as_dict(s), dict(p), **kwargs)
            new, rule = first if isinstance(first, tuple) else (first, None)
            t = as_tuple(new, f"action {aname}")      # a NaN is said as such, before NaN != NaN is compared
            second = user(fn, model, as_dict(s), dict(p), **kwargs)
            if first != second:
                raise CodeError(f"action {aname} is nondeterministic: {first} then {second}")
            if rule is not None and rule not in rules:
                raise CodeError(f"action {aname} reports rule {rule!r}, not one of its rules "
                                f"({', '.join(sorted(rules)) or 'none declared'})")
            return t, rule
        step_args = [tuple(dict(zip(cnames, combo)).get(c, MissingChoice(c, name)) for c in spec.choice_names)
                     for combo in combos]
        actions.append(CompiledAction(name, index, guard, step, combos, labels, step_args, cnames))

    terminal = model.terminal
    m = Machine(spec, dict(p), names, inits, actions,
                lambda s: _truth(user(terminal, as_dict(s), dict(p)), terminal),
                None, domain_error, [(min(d), max(d)) if all(type(x) is int for x in d) else None
                                     for d in doms.values()])
    m.bound_to = f"{type(model).__module__}:{type(model).__name__}"
    m.domain_text = domain_text   # type: ignore[method-assign]
    _add_properties(m, model, props, as_dict, user)
    return m


def _add_properties(m: Machine, model: Model, props: list[_Prop], as_dict: Callable[[State], dict[str, Any]],
                    user: UserFn) -> None:
    """Give the machine each property's check, calling the user's functions through `user`."""
    p, choice_names = m.params, m.spec.choice_names
    for prop in props:
        if prop.kind == "invariant":
            m.invariants[prop.name] = _state_check(present(prop.fn), model, as_dict, p, user)
        elif prop.kind == "reachable":
            m.reachables[prop.name] = _state_check(present(prop.fn), model, as_dict, p, user)
        elif prop.kind == "step_invariant":
            m.step_invariants[prop.name] = _step_fn(present(prop.fn), model, as_dict, p, choice_names, user)
        elif prop.kind == "variant":
            m.variants[prop.name] = (_rank(present(prop.fn), as_dict, p, user), _bound(prop, p))
        elif prop.kind == "terminates_within":
            m.within[prop.name] = _bound(prop, p)
            if m.within[prop.name] < 0:
                raise SpecError([Problem(*prop.at, negative_bound(prop.name, m.within[prop.name])
                                         + f" (with {', '.join(f'{k}={v}' for k, v in p.items())})")])
            if prop.count is not None:
                m.counts[prop.name] = _step_fn(prop.count, None, as_dict, p, choice_names, user)


def _state_check(f: UserFn, model: Model, as_dict: Callable[[State], dict[str, Any]], p: dict[str, int],
                 user: UserFn) -> Callable[[State], bool]:
    """An invariant's or reachable's `f(self, state, params)` as the engine calls it: f(state)."""
    return lambda s: _truth(user(f, model, as_dict(s), dict(p)), f)


def _rank(f: UserFn, as_dict: Callable[[State], dict[str, Any]], p: dict[str, int],
          user: UserFn) -> Callable[[State], int]:
    """A variant's `rank(state, params)` as the engine calls it: rank(state)."""
    return lambda s: _integer(user(f, as_dict(s), dict(p)), f)


def _step_fn(fn: UserFn, model: Model | None, as_dict: Callable[[State], dict[str, Any]], p: dict[str, int],
             choice_names: list[str], user: UserFn) -> Callable[..., bool]:
    """Adapt a Python step predicate to the engine's (before, after, action, rule, *choices) call."""
    def call(b: State, a: State, action: str, rule: str | None, *choices: Any) -> bool:
        chosen = {n: c[0] for n, c in zip(choice_names, choices) if not isinstance(c, MissingChoice)}
        args = (as_dict(b), as_dict(a), dict(p), action, chosen, rule)
        return _truth(user(fn, model, *args) if model is not None else user(fn, *args), fn)
    return call
