"""A spec as data: what a YAML machine declares, validated and type-checked.

`load_spec(path)` reads the YAML, checks every key, name, type and expression, and
returns a `Spec`. Nothing is explored here; every mistake found is raised together as
one `SpecError` whose problems name the file, the line and the offending text.
"""

from __future__ import annotations

import ast
import copy
import difflib
import errno
import keyword
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from . import expr as E
from .errors import Located, Problem, SpecError
from .inputs import TooLarge, read_bounded, shown_value, too_large, value_count
from .outcomes import Outcome, VarShape, parse_raises
from .liveness import LIVENESS, obligation
from .pasttime import PastTimeMonitors, PastVar
from .patterns import PATTERNS, PHASES, MonitorVar, monitor
from .text import values_text
from .weights import BOUND_KEYS, Chance, ChoiceWeights, decimal_allowed, exact_number, parse_probabilities
from .declarations import expand, is_declaration, stages_needed
from .trust import NO_CODE
from .yamlpos import YList, YMap, YStr, load_yaml

RESERVED = {"action", "rule", "before", "after", "min", "max", "abs", "true", "false"}
BUILTIN_PROPERTIES = ("domains", "well_defined")
DECLARED_BUILTIN = "declared_unreachable"    # of specs with `unreachable_when` declarations
CODE_BUILTINS = ("bound_code", "code_matches_spec")      # built-ins of specs bound to code


# ---------------------------------------------------------------- the model

PARAM_KINDS = ("int", "bool", "enum")


@dataclass
class Param:
    name: str
    values: Sequence[Any]      # the default sweep: a list, or a range for `{min, max}`: never materialized
    line: int
    file: str | None = None        # where declared, when not the spec's file (see `declared_at`)
    kind: str = "int"              # int | bool | enum (its values are strings)
    within: range | None = None    # an int param's declared bounds, when `-p` may go past its sweep

    @property
    def count(self) -> int:
        """How many values: `len` of a range fails past sys.maxsize, arithmetic does not."""
        return value_count(self.values)

    @property
    def type(self) -> E.Type:
        """What an expression reading the param sees."""
        if self.kind == "bool":
            return E.BOOL
        if self.kind == "enum":
            return E.EnumT(frozenset(self.values), f"param {self.name}")
        return E.INT

    def accepts(self, value: Any) -> bool:
        """Whether `value` is one `-p` may pin: of the param's type (True is not an int
        here), in its sweep or, for an int param declared with bounds, within them."""
        if self.kind == "bool":
            return type(value) is bool
        if self.kind == "enum":
            return type(value) is str and value in self.values
        return type(value) is int and (value in self.values or (self.within is not None and value in self.within))

    def allowed_text(self) -> str:
        """What `-p` may give this param, for errors (`1..5`, `true or false`, `fast, safe`)."""
        if self.kind == "bool":
            return "true or false"
        if self.kind == "enum":
            return ", ".join(self.values)
        text = values_text(self.values)
        if self.within is not None and self.within != self.values:
            text = f"any int {self.within[0]}..{self.within[-1]}; swept by default: {text}"
        return text

    def pinned(self, value: Any) -> Any:
        """A pin's value as the param's type: the command line gives text for bool and enum
        params (`-p fast=true`), the Python API the value itself. TypeError for a value of
        another type, ValueError for one the param does not allow: both name the param."""
        if self.kind == "int" and type(value) is not int:       # True is not 1 here
            raise TypeError(f"-p {self.name} must be an integer, got {shown_value(value)}")
        if self.kind == "bool" and value in ("true", "false") and type(value) is str:
            value = value == "true"
        elif self.kind == "bool" and type(value) is not bool:
            raise TypeError(f"-p {self.name} must be true or false, got {shown_value(value)}")
        elif self.kind == "enum" and type(value) is not str:
            raise TypeError(f"-p {self.name} must be one of {self.allowed_text()}, got {shown_value(value)}")
        if not self.accepts(value):
            raise ValueError(f"-p {self.name}={_param_value_text(value)}: not a declared value of {self.name} "
                             f"({self.allowed_text()})")
        return value


def _param_value_text(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


T = TypeVar("T")


def present(value: T | None) -> T:
    """A field the loader always fills for its kind of entry (an int var's bounds, a property's
    expression, a range set's ends): None there is a bug in the loader, never the user's."""
    assert value is not None, "the loader fills this field for this kind"
    return value


@dataclass
class Var:
    name: str
    kind: str                      # "int" | "enum" | "bool"
    type: E.Type
    lo: E.Expr | None              # int bounds, expressions over params
    hi: E.Expr | None
    values: tuple[str, ...] = ()   # enum values, in declared order
    init: list[E.Expr] = field(default_factory=list)   # one or more initial values
    line: int = 0
    ghost: bool = False            # computed by the spec's stages alone, not read from bound code
    monitor: str | None = None     # a pattern property's monitor var (machine/patterns.py): that property


@dataclass
class Unreachable:
    """`unreachable_when: PARAM_EXPR` + `because: TEXT` on a rule, action, terminal value or
    choice value: for the params where it holds, that part is expected never to be reached, so
    its vacuity warning is silenced, and reaching it is a finding (`declared_unreachable`)."""

    when: E.Expr                   # over params
    because: str
    line: int


@dataclass
class ChoiceSet:
    """A finite set the environment (or an adversary) picks from at each step."""

    name: str
    kind: str                      # "records" | "scalars" | "range"
    type: E.Type                   # type of the bare choice name
    items: list[tuple[Any, ...]] = field(default_factory=list)   # records: (name, *fields); scalars: (value,)
    fields: dict[str, tuple[E.Type, int]] = field(default_factory=dict)
    lo: E.Expr | None = None
    hi: E.Expr | None = None
    line: int = 0
    file: str | None = None
    when: E.Expr | None = None     # a conditional choice: made only where this holds (else absent)
    value_when: dict[Any, E.Expr] = field(default_factory=dict)   # label -> where that value is possible
    # the loader's: the `when:` texts and lines (key None: the choice's own) before they are checked
    raw_when: dict[Any, tuple[Any, int]] = field(default_factory=dict, compare=False, repr=False)
    value_unreachable: dict[Any, Unreachable] = field(default_factory=dict, compare=False)   # label -> declaration

    @property
    def conditional(self) -> bool:
        """Whether the choice or one of its values carries a `when:` (the set of transitions
        then depends on the state: machine/compiled.py's `admit`)."""
        return self.when is not None or bool(self.value_when)

    def labels(self) -> list[Any]:
        """The names that traces and scenarios use for the items."""
        return [item[0] for item in self.items]


@dataclass
class Assign:
    var: int
    value: E.Expr
    line: int


@dataclass
class SetStage:
    assigns: list[Assign]
    line: int
    monitor: bool = False          # the property monitors' stage the loader puts first (no stage of the user's)


@dataclass
class Rule:
    name: str
    when: E.Expr | None
    then: E.Expr
    line: int
    file: str | None = None
    unreachable: Unreachable | None = None


@dataclass
class DecideStage:
    var: int
    rules: list[Rule]
    line: int


@dataclass
class Action:
    name: str
    guard: E.Expr | None
    choices: list[tuple[str, ChoiceSet]]     # (local name, set), in declared order
    stages: list[SetStage | DecideStage]
    line: int
    file: str | None = None
    raises: list[Outcome] = field(default_factory=list)   # the bound code's exceptions that are outcomes
    unreachable: Unreachable | None = None

    @property
    def decide(self) -> DecideStage | None:
        return next((s for s in self.stages if isinstance(s, DecideStage)), None)

    @property
    def always_made(self) -> set[str]:
        """The choices every transition of the action makes (a conditional one may be absent)."""
        return {c for c, cs in self.choices if cs.when is None}

    @property
    def conditional(self) -> bool:
        return any(cs.conditional for _, cs in self.choices)

    @property
    def own_stages(self) -> bool:
        """Whether the spec says what the action does (a stage of the user's; the property
        monitors' stage is not one): only then is bound code compared with it."""
        return any(not (isinstance(st, SetStage) and st.monitor) for st in self.stages)


@dataclass
class Terminal:
    when: E.Expr | None            # terminal iff this holds ...
    label: E.Expr | None           # ... or iff this value is one of `values`
    values: list[E.Value] = field(default_factory=list)
    line: int = 0
    file: str | None = None
    value_unreachable: dict[Any, Unreachable] = field(default_factory=dict)   # label value -> declaration


@dataclass
class PropertyDecl:
    name: str
    kind: str     # invariant | step_invariant | reachable | terminates | terminates_within | variant | independent
    #               | liveness (existence, response: `expr` says where the obligation is open, machine/liveness.py)
    #               | maximum (the exact maximum of an int expression over the reachable states)
    line: int
    expr: E.Expr | None = None     # the predicate, the ranking, ...
    bound: E.Expr | None = None    # N for terminates_within, the upper bound of a variant, at_most of a maximum
    bound_line: int | None = None  # where the bound is written
    count: E.Expr | None = None    # which transitions terminates_within counts (None: all)
    vars: list[int] = field(default_factory=list)   # independent_of
    description: str = ""
    when: E.Expr | None = None     # a condition on params: the property applies only where it holds
    file: str | None = None
    chance: Chance | None = None   # probability / expected: the bound and what it bounds
    smallest_safe: str | None = None   # an int param: a sweep reports the smallest value from which it is safe
    limit: str | None = None       # maximum: the int param it is measured against (a sweep says what each value allows)
    measure: str = ""              # maximum: its expression as written (what the limit's line says it allows)
    possible: bool = False         # `possible:` (kind reachable): an answer, never a violation
    pattern: str | None = None     # absence | universality | precedence | bounded_existence (kind: invariant
    scope: str = "global"          # over its monitor vars, machine/patterns.py), existence | response; its scope
    past: int = 0                  # always / reachable: the monitor vars its past-time operators added


@dataclass
class Fairness:
    """One fairness assumption: a run that could take `action` (with `when`, if given, true of
    the transition) continuously (weak) or infinitely often (strong) eventually takes it.
    Every liveness check (`terminates`, `existence`, `response`) counts only the runs that
    honour every assumption (properties/liveness.py)."""

    strength: str                  # weak | strong
    action: str
    when: E.Expr | None            # over the state the transition leaves, the params, the action's choices
    line: int

    @property
    def text(self) -> str:
        """The assumption as reports name it: `strong call_tool when outcome == ok`."""
        return f"{self.strength} {self.action}" + (f" when {self.when.text}" if self.when is not None else "")


def declared_at(spec: Spec, decl: Any) -> tuple[str, int | None]:
    """Where a declaration (param, action, rule, choice, terminal, property) is written:
    (file, line). A YAML spec's are all in its file; a Python model's may be in a base
    class's module (its `file`), while the spec's path is the subclass's file."""
    return decl.file or spec.path, decl.line or None


def where_text(spec: Spec, decl: Any) -> str:
    """A declaration's place as messages show it: `line 12` in the spec's own file, else
    `base.py:12`, so no message pairs a line with the wrong file."""
    file, line = declared_at(spec, decl)
    if file == spec.path:
        return f"line {decl.line}"
    return f"{shown_path(file)}:{line}" if line else shown_path(file)


def shown_path(path: str) -> str:
    """A path as users see it: relative to the working directory when it is below it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


@dataclass
class Measure:
    """A quantity counted along a run (tool calls, tokens), whose worst case is reported."""

    name: str
    kind: str            # "count": transitions where the step expression holds; "sum": its int value
    expr: E.Expr
    line: int
    description: str = ""


@dataclass
class ScenarioStep:
    action: str
    choices: dict[str, Any]
    line: int


@dataclass
class Scenario:
    name: str
    params: dict[str, int]
    init: dict[str, Any]
    steps: list[ScenarioStep]
    expect: dict[str, Any]
    description: str
    line: int


@dataclass
class Spec:
    path: str
    name: str
    description: str
    params: list[Param]
    vars: list[Var]
    actions: list[Action]
    terminal: Terminal | None
    properties: list[PropertyDecl]
    scenarios: list[Scenario]
    expect_violated: list[str] | None
    replay: list[tuple[str, E.Expr]]
    choice_names: list[str]                  # every choice name used by any action, sorted
    text: str = ""
    bind: str | None = None                  # module:Name of the adapter to real code
    bind_line: int | None = None
    measures: list[Measure] = field(default_factory=list)
    python: bool = False                     # declared in Python (haltproof.machine.pymodel): all code
    probabilities: list[ChoiceWeights] = field(default_factory=list)   # weighted choices (machine/weights.py)
    fairness: list[Fairness] = field(default_factory=list)             # assumptions of every liveness check
    adapter: Callable[[], Any] | None = None   # a declaration's live adapter factory (machine/declarations.py)
    framework: str | None = None             # a declaration's framework
    expect_line: int | None = None

    @property
    def builtins(self) -> tuple[str, ...]:
        """The built-in properties checked on this spec."""
        declared = (DECLARED_BUILTIN,) if self.unreachables() else ()
        if self.python:
            return BUILTIN_PROPERTIES + ("bound_code",)
        if self.bind:       # the code is compared with the spec's stages where an action has some
            compared = any(a.own_stages for a in self.actions)
            return BUILTIN_PROPERTIES + CODE_BUILTINS[:2 if compared else 1] + declared
        return BUILTIN_PROPERTIES + declared

    def unreachables(self) -> list[tuple[tuple[Any, ...], Unreachable]]:
        """Every `unreachable_when` declaration, keyed as vacuity notices name what they are
        about: ("action", k), ("rule", k, name), ("terminal", value), ("value", k, choice, label)."""
        out: list[tuple[tuple[Any, ...], Unreachable]] = []
        for k, a in enumerate(self.actions):
            if a.unreachable is not None:
                out.append((("action", k), a.unreachable))
            if a.decide is not None:
                out += [(("rule", k, r.name), r.unreachable) for r in a.decide.rules if r.unreachable is not None]
            for cname, cs in a.choices:
                out += [(("value", k, cname, label), u) for label, u in cs.value_unreachable.items()]
        if self.terminal is not None:
            out += [(("terminal", v), u) for v, u in self.terminal.value_unreachable.items()]
        return out

    def action(self, name: str) -> Action | None:
        return next((a for a in self.actions if a.name == name), None)

    def property(self, name: str) -> PropertyDecl | None:
        return next((p for p in self.properties if p.name == name), None)


# ---------------------------------------------------------------- loading

# The largest bundled spec is 23 KB. Checking costs grow with the text (a 1 MiB expression takes
# about 25 s and 900 MB to parse, type-check and compile), so 1 MiB refuses only abuse.
MAX_SPEC_BYTES = 1024 * 1024       # docs/spec-language.md, "Limits on the input"


def load_spec(path: str | Path, run_code: bool = True, *, mode: str = NO_CODE) -> Spec:
    """Read and validate a YAML spec; raise SpecError listing every problem found.

    run_code=False imports none of the user's code (machine/trust.py): a framework
    declaration, which becomes a spec only by importing its target, is refused, naming
    `mode` (the option that asked: --no-code, or --model) as the reason."""
    path = Path(path)
    shown = str(path)
    try:
        text = read_bounded(path, MAX_SPEC_BYTES, "a spec").replace("\r\n", "\n").replace("\r", "\n")
    except TooLarge as exc:
        raise SpecError([Problem(shown, None, str(exc))]) from None
    except OSError as exc:
        why = symlink_problem(path, exc) or ("no such file" if isinstance(exc, FileNotFoundError)
                                             else f"cannot read the file: {exc}")
        raise SpecError([Problem(shown, None, why)]) from None
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[:exc.start].count(b"\n") + 1
        raise SpecError([Problem(shown, line, f"not UTF-8 text: byte {exc.object[exc.start]:#04x} "
                                              f"cannot be decoded ({exc.reason})")]) from None
    return parse_spec(text, shown, run_code, mode=mode)


def symlink_problem(path: Path, exc: OSError) -> str | None:
    """What is wrong when a symlink makes a path unreadable ("no such file" would mislead)."""
    if exc.errno == errno.ELOOP:
        return "symlink loop (resolving it leads back to itself)"
    if exc.errno == errno.ENOENT and path.is_symlink():
        return f"broken symlink (to {os.readlink(path)}, which does not exist)"
    return None


def parse_spec(text: str, file: str, run_code: bool = True, *, mode: str = NO_CODE) -> Spec:
    """Validate a spec's YAML text; `file` is the name its problems are reported under.
    run_code=False: as for `load_spec`."""
    if len(text) > MAX_SPEC_BYTES // 4 and len(text.encode("utf-8")) > MAX_SPEC_BYTES:
        raise SpecError([Problem(file, None, too_large(len(text.encode("utf-8")), MAX_SPEC_BYTES, "a spec"))])
    data = load_yaml(text, file, decimal_allowed)
    if is_declaration(data):        # `framework: NAME`: its integration writes the spec
        if not run_code:
            raise stages_needed(data, file, mode)
        declared = expand(data, file)
        spec = _Loader(file).load(declared.spec, text)
        spec.adapter, spec.framework = declared.adapter, str(data["framework"])
        return spec
    return _Loader(file).load(data, text)


class _Loader:
    def __init__(self, file: str):
        self.file = file
        self.problems: list[Problem] = []

    # -- small helpers
    def at(self, line: int | None) -> Located:
        return Located(self.file, line)

    def add(self, line: int | None, message: str, text: object = None) -> None:
        self.problems.append(Problem(self.file, line, message, None if text is None else str(text)))

    def attempt(self, fn: Callable[..., T], *args: Any) -> T | None:
        """Run one part of the validation; keep its problems and go on with the next part."""
        try:
            return fn(*args)
        except SpecError as exc:
            self.problems.extend(exc.problems)
            return None

    def mapping(self, value: Any, line: int, what: str) -> YMap:
        if not isinstance(value, YMap):
            raise self.at(line).error(f"{what} must be a mapping", _short(value))
        return value

    def keys(self, m: YMap, what: str, allowed: set[str], required: set[str] | frozenset[str] = frozenset()) -> None:
        for key in m:
            if key not in allowed:
                raise self.at(m.line_of(key)).error(
                    f"unknown key in {what} (allowed: {', '.join(sorted(allowed))})", key)
        for key in sorted(required):
            if key not in m:
                raise self.at(m.line).error(f"{what} needs the key {key!r}")

    def ident(self, name: str, line: int, what: str) -> None:
        if not name.isidentifier() or keyword.iskeyword(name):
            raise self.at(line).error(f"{what} must be a plain identifier", name)
        if name in RESERVED:
            raise self.at(line).error(f"{what} uses a reserved name", name)

    def plain(self, value: Any, line: int, what: str) -> Any:
        """A plain value (an integer, true/false or a string), not a list, mapping or null."""
        if value is None or isinstance(value, (YMap, YList)):
            raise self.at(line).error(f"{what} must be an integer, true/false or a string",
                                      "null" if value is None else _short(value))
        return value

    def integer(self, value: Any, line: int, what: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.at(line).error(f"{what} must be an integer", _short(value))
        return value

    # -- top level
    def load(self, data: Any, text: str) -> Spec:
        top = self.mapping(data, 1, "a spec")
        self.keys(top, "the spec", {"machine", "description", "params", "vars", "sets", "actions",
                                     "terminal", "properties", "scenarios", "expect", "replay", "bind",
                                     "measures", "probabilities", "fairness"},
                  {"machine", "vars", "actions"})
        name = top["machine"]
        if not isinstance(name, str) or not name.strip():
            raise self.at(top.line_of("machine")).error("machine must be a non-empty name", name)
        description = top.get("description", "")
        if not isinstance(description, str):
            self.add(top.line_of("description"), "description must be text")

        params = self.attempt(self.params, top.get("params", YMap()), top.line_of("params")) or []
        if self.problems:      # everything below uses the params: stop before false follow-on errors
            raise SpecError(self.problems)
        self.param_scope = E.Scope({p.name: self.param_binding(p) for p in params},   # an enum param's
                                   frozenset(v for p in params if p.kind == "enum" for v in p.values))   # values too
        self.params_by_name = {p.name: p for p in params}
        self.bound_spec = top.get("bind") is not None
        vars_ = self.attempt(self.vars, top["vars"], top.line_of("vars")) or []
        sets = self.attempt(self.sets, top.get("sets", YMap()), top.line_of("sets")) or {}
        if self.problems:
            raise SpecError(self.problems)
        self.vars_list = vars_
        self.sets_by_name = sets      # not `self.sets`: that is the method that parsed them

        actions_raw = self.mapping(top["actions"], top.line_of("actions"), "actions")
        if not actions_raw:
            raise self.at(top.line_of("actions")).error("a machine needs at least one action")
        # Choices first: their values become enum literals usable by every expression.
        self.action_choices: dict[str, list[tuple[str, ChoiceSet]]] = {}
        for aname, araw in actions_raw.items():
            self.attempt(self.action_choice_sets, aname, araw, actions_raw.line_of(aname))
        if self.problems:
            raise SpecError(self.problems)
        self.literals = self.collect_literals(actions_raw, top)
        self.param_scope = E.Scope(self.param_scope.names, self.literals)    # what every expression may name
        self.attempt(self.check_collisions, params, vars_)
        if self.problems:
            raise SpecError(self.problems)
        self.state_scope = self.make_state_scope()
        self.all_actions = list(actions_raw)
        self.rule_names = self.collect_rule_names(actions_raw)
        self.step_scope = self.make_step_scope()

        actions = []
        for aname, araw in actions_raw.items():
            act = self.attempt(self.action, aname, araw, actions_raw.line_of(aname))
            if act is not None:
                actions.append(act)
        terminal = None
        if "terminal" in top:
            terminal = self.attempt(self.terminal, top["terminal"], top.line_of("terminal"))
        self.monitor_vars: list[Var] = []
        self.monitor_assigns: list[Assign] = []
        props = self.attempt(self.properties, top.get("properties", YMap()),
                             top.line_of("properties")) or []
        monitors = list(range(len(vars_), len(vars_) + len(self.monitor_vars)))
        for p in props:     # a monitor reads the vars a property ignores; the machine's behaviour does not
            if p.kind == "independent":
                p.vars += monitors
        vars_ = vars_ + self.monitor_vars
        if self.monitor_assigns:      # first, so the monitor reads the state the transition leaves
            for act in actions:
                act.stages.insert(0, SetStage(list(self.monitor_assigns), act.line, monitor=True))
        expect = None
        if "expect" in top:
            expect = self.attempt(self.expect, top["expect"], top.line_of("expect"), props)
        replay = self.attempt(self.replay, top.get("replay", YMap()), top.line_of("replay")) or []
        measures = self.attempt(self.measures, top.get("measures", YMap()), top.line_of("measures")) or []
        scenarios = self.attempt(self.scenarios, top.get("scenarios", YMap()),
                                 top.line_of("scenarios"), params, vars_) or []
        weights: list[ChoiceWeights] = []
        if "probabilities" in top:
            weights = self.attempt(parse_probabilities, top["probabilities"], top.line_of("probabilities"),
                                   self.file, self.choice_labels()) or []
        self.attempt(self.check_chance_measures, props, measures)
        for w in weights:
            cs = dict(self.action_choices.get(w.action, [])).get(w.choice)
            if cs is not None and cs.conditional:
                self.add(w.line, f"choice {w.choice} of action {w.action} has a when: weights on a conditional "
                         "choice are not supported yet (the weights of the values possible in a state would "
                         "not sum to 1)")
        fairness = self.attempt(self.fairness, top.get("fairness", YList()), top.line_of("fairness")) or []
        bind = top.get("bind")
        if bind is not None and (not isinstance(bind, str) or ":" not in bind):
            self.add(top.line_of("bind"), "bind must name the adapter as module:Name", bind)
        if self.problems:
            raise SpecError(self.problems)
        return Spec(path=self.file, name=str(name), description=str(description or ""),
                    params=params, vars=vars_, actions=actions, terminal=terminal,
                    properties=props, scenarios=scenarios, expect_violated=expect,
                    replay=replay, choice_names=sorted(self.step_choices), text=text,
                    bind=str(bind) if bind else None, bind_line=top.line_of("bind") if bind else None,
                    measures=measures, probabilities=weights, fairness=fairness,
                    expect_line=top.line_of("expect") if expect is not None else None)

    def choice_labels(self) -> dict[str, dict[str, tuple[str, list[Any]]]]:
        """Each action's choices as machine/weights.py checks weights against them."""
        return {a: {c: (cs.kind, cs.labels()) for c, cs in chs} for a, chs in self.action_choices.items()}

    def check_chance_measures(self, props: list[PropertyDecl], measures: list[Measure]) -> None:
        """An `expected` property names `transitions` or a declared measure."""
        known = ["transitions"] + [ms.name for ms in measures]
        for p in props:
            if p.chance is not None and p.chance.measure is not None and p.chance.measure not in known:
                raise self.at(p.chance.measure_line).error(
                    f"property {p.name} names a measure the spec does not declare "
                    f"(measures: {', '.join(known)})", p.chance.measure)

    # -- params
    def params(self, raw: Any, line: int) -> list[Param]:
        m = self.mapping(raw, line, "params")
        return [self.param(name, value, m.line_of(name)) for name, value in m.items()]

    def param(self, name: str, value: Any, pline: int) -> Param:
        """One param: a list of values (ints, strings or true/false: its kind follows), a
        single int, `{min, max}` (every int between, swept), `{min, max, values}` (`-p`
        may give any int between, `values` is the default sweep), `{values: [...]}`, or
        `{type: bool}`."""
        self.ident(name, pline, "a param name")
        if isinstance(value, YMap):
            return self.param_map(name, value, pline)
        if not isinstance(value, YList):       # one value: a constant int
            return Param(name, [self.integer(value, pline, f"param {name}")], pline)
        return self.param_list(name, list(value), [value.line_of(i) for i in range(len(value))], pline)

    def param_list(self, name: str, items: list[Any], lines: list[int], pline: int) -> Param:
        if not items:
            raise self.at(pline).error("a param needs at least one value", name)
        kind = "bool" if isinstance(items[0], bool) else "enum" if isinstance(items[0], str) else "int"
        for item, at in zip(items, lines):
            ok = (isinstance(item, bool) if kind == "bool" else isinstance(item, str) if kind == "enum"
                  else isinstance(item, int) and not isinstance(item, bool))
            if not ok:
                raise self.at(at).error(f"the values of param {name} must all be of one kind: "
                                        f"ints, strings, or true/false", _short(item))
        if len(set(items)) != len(items):
            raise self.at(pline).error(f"param {name} lists a value twice", items)
        if kind == "enum":
            for item, at in zip(items, lines):
                if not (item.isidentifier() and not keyword.iskeyword(item)):
                    raise self.at(at).error(f"a value of enum param {name} must be a name "
                                            "(letters, digits, _), usable in expressions", item)
        return Param(name, [str(i) for i in items] if kind == "enum" else items, pline, kind=kind)

    def param_map(self, name: str, value: YMap, pline: int) -> Param:
        if "type" in value:
            self.keys(value, f"param {name}", {"type"}, {"type"})
            if value["type"] != "bool":
                raise self.at(value.line_of("type")).error(
                    f"param {name}: type may only be bool (ints and enums are told by their values)",
                    value["type"])
            return Param(name, [False, True], pline, kind="bool")
        if "min" not in value and "max" not in value:
            self.keys(value, f"param {name}", {"values"}, {"values"})
            raw = value["values"]
            if not isinstance(raw, YList):
                raise self.at(value.line_of("values")).error(f"values of param {name} must be a list")
            return self.param_list(name, list(raw), [raw.line_of(i) for i in range(len(raw))], pline)
        self.keys(value, f"param {name}", {"min", "max", "values"}, {"min", "max"})
        lo = self.integer(value["min"], value.line_of("min"), f"min of param {name}")
        hi = self.integer(value["max"], value.line_of("max"), f"max of param {name}")
        if lo > hi:
            raise self.at(pline).error(f"param {name} has min {lo} > max {hi}: no values")
        if "values" not in value:
            return Param(name, range(lo, hi + 1), pline)
        raw = value["values"]
        if not isinstance(raw, YList):
            raise self.at(value.line_of("values")).error(f"values of param {name} must be a list")
        swept = self.param_list(name, list(raw), [raw.line_of(i) for i in range(len(raw))], pline)
        if swept.kind != "int":
            raise self.at(value.line_of("values")).error(f"param {name} has min and max: its values "
                                                         "must be ints")
        outside = [v for v in swept.values if not lo <= v <= hi]
        if outside:
            raise self.at(value.line_of("values")).error(f"param {name}: value {outside[0]} is outside "
                                                         f"min {lo} .. max {hi}")
        return Param(name, swept.values, pline, within=range(lo, hi + 1))

    def param_binding(self, p: Param) -> E.Binding:
        return E.Binding(p.type, partial(ast.Name, "p_" + p.name, ast.Load()), what="param")

    # -- vars
    def vars(self, raw: Any, line: int) -> list[Var]:
        m = self.mapping(raw, line, "vars")
        if not m:
            raise self.at(line).error("a machine needs at least one var")
        out = []
        for name, decl in m.items():
            v = self.attempt(self.var, name, decl, m.line_of(name))
            if v is not None:
                out.append(v)
        return out

    def var(self, name: str, raw: Any, line: int) -> Var:
        self.ident(name, line, "a var name")
        d = self.mapping(raw, line, f"var {name}")
        kind = d.get("type")
        if kind == "int":
            self.keys(d, f"int var {name}", {"type", "min", "max", "init", "description", "ghost"},
                      {"min", "max", "init"})
            lo = self.int_expr(d["min"], self.param_scope, d.line_of("min"), f"min of {name}")
            hi = self.int_expr(d["max"], self.param_scope, d.line_of("max"), f"max of {name}")
            var = Var(name, "int", E.INT, lo, hi, line=line)
        elif kind == "enum":
            self.keys(d, f"enum var {name}", {"type", "values", "init", "description", "ghost"},
                      {"values", "init"})
            vals = d["values"]
            if not isinstance(vals, YList) or not vals:
                raise self.at(d.line_of("values")).error(f"values of {name} must be a non-empty list")
            for i, v in enumerate(vals):
                if not isinstance(v, str):
                    raise self.at(vals.line_of(i)).error(f"enum values of {name} must be strings", v)
            if len(set(vals)) != len(vals):
                raise self.at(d.line_of("values")).error(f"values of {name} list a value twice")
            var = Var(name, "enum", E.EnumT(frozenset(str(v) for v in vals), name), None, None,
                      tuple(str(v) for v in vals), line=line)
        elif kind == "bool":
            self.keys(d, f"bool var {name}", {"type", "init", "description", "ghost"}, {"init"})
            var = Var(name, "bool", E.BOOL, None, None, line=line)
        else:
            raise self.at(d.line_of("type") if "type" in d else line).error(
                f"var {name} needs a type: int, enum or bool", kind)
        init = d["init"]
        iline = d.line_of("init")
        if isinstance(init, YMap):
            self.keys(init, f"init of {name}", {"one_of"}, {"one_of"})
            opts = init["one_of"]
            if not isinstance(opts, YList) or not opts:
                raise self.at(iline).error(f"init one_of of {name} must be a non-empty list")
            var.init = [self.value_expr(o, var, self.param_scope, opts.line_of(i), f"init of {name}")
                        for i, o in enumerate(opts)]
        else:
            var.init = [self.value_expr(init, var, self.param_scope, iline, f"init of {name}")]
        if "ghost" in d:
            var.ghost = self.ghost(d["ghost"], d.line_of("ghost"), name)
        return var

    def ghost(self, raw: Any, line: int, name: str) -> bool:
        """`ghost: true`: the spec's stages alone compute the var (machine/binding.py), so the
        bound code need not have it; without bound code there is nothing it could be missing from."""
        if type(raw) is not bool:
            raise self.at(line).error(f"ghost of {name} must be true or false", raw)
        if raw and not self.bound_spec:
            raise self.at(line).error(f"ghost var {name} is one the bound code does not have, "
                                      "but the spec has no bind:")
        return raw

    def value_expr(self, raw: Any, var: Var, scope: E.Scope, line: int, what: str) -> E.Expr:
        """An expression whose value is stored into `var`: checked against its domain."""
        word = str(raw).strip() if isinstance(raw, str) else None
        if var.kind == "enum" and word in var.values:
            ex = E.literal_expr(word, str(raw))
        elif (var.kind == "enum" and word is not None and word.isidentifier()
              and word not in scope.names and word not in scope.literals):
            close = difflib.get_close_matches(word, list(var.values), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise self.at(line).error(f"{what}: {word!r} is not a value of {var.name} "
                                      f"({', '.join(var.values)}){hint}", word)
        else:
            block = isinstance(raw, YStr) and raw.block
            ex = E.check(raw, scope, self.at(line), line_offset_block=block, what=what)
        if type(ex.type) is not type(var.type):
            raise self.at(line).error(f"{what} must be {var.kind}, but this is {ex.type}", ex.text)
        if isinstance(ex.type, E.EnumT) and isinstance(var.type, E.EnumT):    # same kind: checked above
            outside = sorted(ex.type.values - var.type.values)
            if outside:
                raise self.at(line).error(
                    f"{what} can be {', '.join(map(repr, outside))}, which is not a value of "
                    f"{var.name} ({', '.join(var.values)})", ex.text)
        return ex

    # -- choice sets
    def sets(self, raw: Any, line: int) -> dict[str, tuple[Any, int]]:
        m = self.mapping(raw, line, "sets")
        for name in m:
            self.ident(name, m.line_of(name), "a set name")
        return {name: (m[name], m.line_of(name)) for name in m}

    def action_choice_sets(self, aname: str, raw: Any, line: int) -> None:
        self.ident(aname, line, "an action name")
        a = self.mapping(raw, line, f"action {aname}")
        self.keys(a, f"action {aname}", {"when", "choose", "do", "description", "raises", "unreachable_when",
                                          "because"})
        out = []
        if "choose" in a:
            ch = self.mapping(a["choose"], a.line_of("choose"), f"choose of action {aname}")
            for cname, craw in ch.items():
                cline = ch.line_of(cname)
                self.ident(cname, cline, "a choice name")
                when = None
                if isinstance(craw, YMap) and "values" in craw:     # {values: SET, when: COND}
                    self.keys(craw, f"choice {cname}", {"values", "when"}, {"values"})
                    when = (craw["when"], craw.line_of("when")) if "when" in craw else None
                    craw, cline = craw["values"], craw.line_of("values")
                elif isinstance(craw, YMap) and "when" in craw:      # {min, max, when}
                    when = (craw["when"], craw.line_of("when"))
                if isinstance(craw, str):
                    if craw not in self.sets_by_name:
                        raise self.at(cline).error(f"no set named {craw!r} under sets", craw)
                    craw, cline = self.sets_by_name[craw]
                cs = self.choice_set(cname, craw, cline)
                if when is not None:
                    cs.raw_when[None] = when
                out.append((cname, cs))
        self.action_choices[aname] = out

    def choice_set(self, name: str, raw: Any, line: int) -> ChoiceSet:
        if isinstance(raw, YMap):
            self.keys(raw, f"choice {name}", {"min", "max", "when"}, {"min", "max"})
            lo = self.int_expr(raw["min"], self.param_scope, raw.line_of("min"), f"min of choice {name}")
            hi = self.int_expr(raw["max"], self.param_scope, raw.line_of("max"), f"max of choice {name}")
            return ChoiceSet(name, "range", E.INT, lo=lo, hi=hi, line=line)
        if not isinstance(raw, YList):
            raise self.at(line).error(f"choice {name} must be a list of values or records, "
                                      "or a {min, max} range", _short(raw))
        if not raw:
            raise self.at(line).error(f"choice {name} is an empty set: the action could never happen")
        if all(isinstance(r, YMap) and not _conditional_value(r) for r in raw):
            return self.record_set(name, raw, line)
        whens: dict[Any, tuple[Any, int]] = {}
        declared: dict[Any, Unreachable] = {}
        raw = self.conditional_values(name, raw, whens, declared)
        if any(isinstance(r, (YMap, YList)) for r in raw):
            raise self.at(line).error(f"choice {name} mixes records and plain values")
        for i, v in enumerate(raw):
            self.plain(v, raw.line_of(i), f"a value of choice {name}")
        kinds = {type(E.type_of_value(v)) for v in raw}
        if len(kinds) != 1:
            raise self.at(line).error(f"choice {name} mixes values of different types")
        if len(set(raw)) != len(raw):
            raise self.at(line).error(f"choice {name} lists a value twice")
        vals = [str(v) if isinstance(v, str) else v for v in raw]
        typ = E.type_of_value(vals[0])
        if isinstance(typ, E.EnumT):
            typ = E.EnumT(frozenset(vals), f"choice {name}")
        return ChoiceSet(name, "scalars", typ, items=[(v,) for v in vals], line=line,
                         raw_when={str(k) if isinstance(k, str) else k: w for k, w in whens.items()},
                         value_unreachable={str(k) if isinstance(k, str) else k: u for k, u in declared.items()})

    def conditional_values(self, name: str, raw: YList, whens: dict[Any, tuple[Any, int]],
                           declared: dict[Any, Unreachable]) -> YList:
        """A plain value list with `{value: V, when: COND}` items replaced by V, their
        conditions noted in `whens` (checked once the action's scope exists) and their
        `unreachable_when` declarations in `declared`."""
        out = YList()
        out.line = raw.line
        out.lines = []
        for i, item in enumerate(raw):
            at = raw.line_of(i)
            if _conditional_value(item):
                what = f"a value of choice {name}"
                self.keys(item, what, {"value", "when", "unreachable_when", "because"}, {"value"})
                if "when" not in item and "unreachable_when" not in item:
                    raise self.at(at).error(f"{what} written as a mapping needs a when or an unreachable_when")
                value = self.plain(item["value"], item.line_of("value"), what)
                if "when" in item:
                    whens[value] = (item["when"], item.line_of("when"))
                unreachable = self.unreachable(item, f"value {value} of choice {name}")
                if unreachable is not None:
                    declared[value] = unreachable
                item = value
            out.append(item)
            out.lines.append(at)
        return out

    def record_set(self, name: str, raw: YList, line: int) -> ChoiceSet:
        field_names: list[str] | None = None
        field_types: dict[str, E.Type] = {}
        items: list[tuple[Any, ...]] = []
        seen: dict[str, int] = {}
        whens: dict[Any, tuple[Any, int]] = {}
        declared: dict[Any, Unreachable] = {}
        for i, rec in enumerate(raw):
            rline = raw.line_of(i)
            if "name" not in rec or not isinstance(rec["name"], str):
                raise self.at(rline).error(f"each record of choice {name} needs a string 'name'")
            rname = str(rec["name"])
            if rname in seen:
                raise self.at(rline).error(f"choice {name} has two records named {rname!r} "
                                           f"(first at line {seen[rname]})")
            seen[rname] = rline
            if "when" in rec:            # where this record is a possible value (a record has no field `when`)
                whens[rname] = (rec["when"], rec.line_of("when"))
            unreachable = self.unreachable(rec, f"record {rname} of choice {name}")
            if unreachable is not None:
                declared[rname] = unreachable
            fields = sorted(k for k in rec if k not in ("name", "when", "unreachable_when", "because"))
            if field_names is None:
                field_names = fields
            elif fields != field_names:
                raise self.at(rline).error(f"record {rname!r} of choice {name} has fields "
                                           f"{fields}, the first record has {field_names}")
            for f in fields:
                self.ident(f, rec.line_of(f), "a record field name")
                value = rec[f]
                if isinstance(value, (YMap, YList)) or value is None:
                    raise self.at(rec.line_of(f)).error("a record field must be an integer, "
                                                        "true/false or a string", f)
                t = E.type_of_value(str(value) if isinstance(value, str) else value)
                prev = field_types.get(f)
                if prev is not None and type(prev) is not type(t):
                    raise self.at(rec.line_of(f)).error(
                        f"field {f} of choice {name} is {t} here but {prev} in an earlier record")
                both = E.unify(prev, t) if prev is not None else t
                assert both is not None, "two types of one kind unify"
                field_types[f] = both
            items.append(tuple([rname] + [str(rec[f]) if isinstance(rec[f], str) else rec[f]
                                          for f in field_names or []]))
        fields_idx = {f: (field_types[f], i + 1) for i, f in enumerate(field_names or [])}
        for f, (t, i) in fields_idx.items():
            if isinstance(t, E.EnumT):
                fields_idx[f] = (E.EnumT(t.values, f"{name}.{f}"), i)
        return ChoiceSet(name, "records", E.EnumT(frozenset(seen), f"choice {name}"),
                         items=items, fields=fields_idx, line=line, raw_when=whens, value_unreachable=declared)

    # -- names
    def collect_literals(self, actions_raw: YMap, top: YMap) -> frozenset[str]:
        lits: set[str] = set()
        for v in self.vars_list:
            lits.update(v.values)
        for p in self.params_by_name.values():
            if p.kind == "enum":
                lits.update(p.values)
        for chs in self.action_choices.values():
            for _, cs in chs:
                if isinstance(cs.type, E.EnumT):
                    lits.update(cs.type.values)
                for t, _ in cs.fields.values():
                    if isinstance(t, E.EnumT):
                        lits.update(t.values)
        lits.update(a for a in actions_raw)
        for a in actions_raw.values():
            if isinstance(a, YMap) and isinstance(a.get("do"), YList):
                for st in a["do"]:
                    if isinstance(st, YMap) and isinstance(st.get("rules"), YList):
                        for r in st["rules"]:
                            if isinstance(r, YMap) and isinstance(r.get("name"), str):
                                lits.add(str(r["name"]))
        return frozenset(x for x in lits if x.isidentifier() and not keyword.iskeyword(x))

    def check_collisions(self, params: list[Param], vars_: list[Var]) -> None:
        names: dict[str, str] = {}
        for p in params:
            names[p.name] = "param"
        for v in vars_:
            if v.name in names:
                raise self.at(v.line).error(f"var {v.name} has the same name as a {names[v.name]}")
            names[v.name] = "var"
        for chs in self.action_choices.values():
            for cname, cs in chs:
                if cname in names and names[cname] != "choice":
                    raise self.at(cs.line).error(f"choice {cname} has the same name as a {names[cname]}")
                names[cname] = "choice"
        for v in vars_:
            for value in v.values:
                if value in names:
                    raise self.at(v.line).error(
                        f"enum value {value!r} of {v.name} has the same name as a {names[value]}; "
                        "rename one of them so unquoted names stay unambiguous")

    def make_state_scope(self) -> E.Scope:
        names = {p: b for p, b in self.param_scope.names.items()}
        for chs in self.action_choices.values():
            for cname, _ in chs:
                names[cname] = E.Binding(None, None, refuse=(
                    f"choice {cname} is made during its action, so it does not exist in a state: "
                    "a guard is evaluated before the choices are made (test the choice in the "
                    "action's decide rules, or in a step expression)"))
        for i, v in enumerate(self.vars_list):
            names[v.name] = E.Binding(v.type, partial(_sub, "s", i), what=f"var {v.name}")
        return E.Scope(names, self.literals)

    def action_scope(self, choices: list[tuple[str, ChoiceSet]]) -> E.Scope:
        names = {p: b for p, b in self.param_scope.names.items()}
        for i, v in enumerate(self.vars_list):
            names[v.name] = E.Binding(v.type, partial(ast.Name, f"v_{i}", ast.Load()),
                                      what=f"var {v.name}")
        for cname, cs in choices:
            names[cname] = _choice_binding(cname, cs)
        return E.Scope(names, self.literals)

    def collect_rule_names(self, actions_raw: YMap) -> frozenset[str]:
        out: set[str] = set()
        for a in actions_raw.values():
            if isinstance(a, YMap) and isinstance(a.get("do"), YList):
                for st in a["do"]:
                    if isinstance(st, YMap) and isinstance(st.get("rules"), YList):
                        out.update(str(r["name"]) for r in st["rules"]
                                   if isinstance(r, YMap) and isinstance(r.get("name"), str))
        return frozenset(out)

    def make_step_scope(self) -> E.Scope:
        """Names of a step expression: before.x, after.x, choices, action, rule, params."""
        names = {p: b for p, b in self.param_scope.names.items()}
        for side, prefix in (("before", "b"), ("after", "a")):
            fields: dict[str, tuple[E.Type, Callable[[], ast.expr]]] = {v.name: (v.type, partial(_sub, prefix, i))
                      for i, v in enumerate(self.vars_list)}
            names[side] = E.Binding(None, None, fields, what=f"state {side}")
        for v in self.vars_list:
            names[v.name] = E.Binding(v.type, None, refuse=(
                f"a step expression sees two states: write before.{v.name} or after.{v.name}"))
        self.step_choices: dict[str, ChoiceSet] = {}
        clash: set[str] = set()
        for chs in self.action_choices.values():
            for cname, cs in chs:
                prev = self.step_choices.get(cname)
                if prev is not None and (prev.type != cs.type or prev.fields != cs.fields):
                    clash.add(cname)
                self.step_choices[cname] = cs
        for cname, cs in self.step_choices.items():
            b = _choice_binding(cname, cs)
            if cname in clash:
                b.refuse = f"choice {cname} has different shapes in different actions"
            names[cname] = b
        names["action"] = E.Binding(E.EnumT(frozenset(self.all_actions), "action"),
                                    lambda: ast.Name("action", ast.Load()), what="action")
        names["rule"] = E.Binding(E.EnumT(self.rule_names, "rule"),
                                  lambda: ast.Name("rule", ast.Load()), what="rule")
        return E.Scope(names, self.literals)

    # -- actions
    def action(self, name: str, raw: YMap, line: int) -> Action:
        choices = self.action_choices[name]
        scope = self.action_scope(choices)
        guard = None
        if "when" in raw:
            guard = self.bool_expr(raw["when"], self.state_scope, raw.line_of("when"), f"guard of {name}")
        for j in range(len(choices)):
            self.choice_whens(name, choices, j)
        stages: list[SetStage | DecideStage] = []
        do = raw.get("do", YList())
        if not isinstance(do, YList):
            raise self.at(raw.line_of("do")).error(f"do of action {name} must be a list of stages")
        for i, st in enumerate(do):
            sline = do.line_of(i)
            st = self.mapping(st, sline, f"a stage of action {name}")
            if "set" in st:
                self.keys(st, "a set stage", {"set"})
                stages.append(self.set_stage(st["set"], st.line_of("set"), scope, name))
            elif "decide" in st:
                self.keys(st, "a decide stage", {"decide", "rules"}, {"rules"})
                if any(isinstance(s, DecideStage) for s in stages):
                    raise self.at(sline).error(
                        f"action {name} has a second decide stage; one action makes one decision "
                        "(merge the tables: rules are tried in order)")
                stages.append(self.decide_stage(st, sline, scope, name))
            else:
                raise self.at(sline).error("a stage is either {set: {...}} or {decide: VAR, rules: [...]}")
        raises = self.action_raises(name, raw, stages) if "raises" in raw else []
        return Action(name, guard, choices, stages, line, raises=raises,
                      unreachable=self.unreachable(raw, f"action {name}"))

    def unreachable(self, m: YMap, what: str) -> Unreachable | None:
        """`unreachable_when: PARAM_EXPR` with `because: TEXT` in mapping m, if it has them."""
        has = [k for k in ("unreachable_when", "because") if k in m]
        if not has:
            return None
        if len(has) == 1:
            missing = "because" if has[0] == "unreachable_when" else "unreachable_when"
            raise self.at(m.line_of(has[0])).error(f"{what} has {has[0]} without {missing}: an "
                                                   "acknowledged vacuity says both when and why")
        because = m["because"]
        if not isinstance(because, str) or not because.strip():
            raise self.at(m.line_of("because")).error(f"because of {what} must be a non-empty text",
                                                      _short(because))
        line = m.line_of("unreachable_when")
        when = self.bool_expr(m["unreachable_when"], self.param_scope, line, f"unreachable_when of {what}")
        return Unreachable(when, " ".join(because.split()), line)

    def choice_whens(self, aname: str, choices: list[tuple[str, ChoiceSet]], j: int) -> None:
        """Check the `when:` of choice j of action `aname` and of its values: over the state the
        action leaves, the params and the choices declared before it in the same action."""
        cname, cs = choices[j]
        if not cs.raw_when:
            return
        scope = self.action_scope(choices[:j])
        for other in self.step_choices:
            if other not in scope.names:
                if other == cname:
                    why = f"the when of choice {cname} cannot read the choice itself"
                elif other in dict(choices):
                    why = (f"choice {other} is made after choice {cname} in action {aname}: a choice's when "
                           "may read only the choices declared before it")
                else:
                    why = f"action {aname} makes no choice {other}"
                scope.names[other] = E.Binding(None, None, refuse=why)
        labels = cs.labels()
        for key, (raw, line) in cs.raw_when.items():
            if key is None:
                cs.when = self.bool_expr(raw, scope, line, f"when of choice {cname}")
                continue
            if key not in labels:      # a value written twice is reported by the set's own checks
                continue
            cs.value_when[key] = self.bool_expr(raw, scope, line, f"when of value {key} of choice {cname}")

    def action_raises(self, name: str, raw: YMap, stages: list[SetStage | DecideStage]) -> list[Outcome]:
        """An action's `raises:` (machine/outcomes.py): it describes the bound code, so it needs `bind:`."""
        line = raw.line_of("raises")
        if not self.bound_spec:
            raise self.at(line).error(f"raises of action {name} describes the exceptions of bound code, "
                                      "but the spec has no bind:")
        decide = next((s for s in stages if isinstance(s, DecideStage)), None)
        rules = [r.name for r in decide.rules] if decide else []
        shapes = {v.name: VarShape(v.kind, tuple(v.values)) for v in self.vars_list}
        return parse_raises(raw["raises"], line, self.file, name, rules, shapes)

    def var_by_name(self, name: Any, line: int) -> tuple[int, Var]:
        for i, v in enumerate(self.vars_list):
            if v.name == name:
                return i, v
        raise self.at(line).error("not a declared var", name)

    def set_stage(self, raw: Any, line: int, scope: E.Scope, aname: str) -> SetStage:
        m = self.mapping(raw, line, f"set of action {aname}")
        assigns = []
        for vname, value in m.items():
            vline = m.line_of(vname)
            idx, var = self.var_by_name(vname, vline)
            assigns.append(Assign(idx, self.value_expr(value, var, scope, vline, f"new value of {vname}"),
                                  vline))
        return SetStage(assigns, line)

    def decide_stage(self, st: YMap, line: int, scope: E.Scope, aname: str) -> DecideStage:
        idx, var = self.var_by_name(st["decide"], st.line_of("decide"))
        rules_raw = st["rules"]
        if not isinstance(rules_raw, YList) or not rules_raw:
            raise self.at(st.line_of("rules")).error("rules must be a non-empty list")
        rules: list[Rule] = []
        seen: dict[str, int] = {}
        for i, r in enumerate(rules_raw):
            rline = rules_raw.line_of(i)
            r = self.mapping(r, rline, "a decide rule")
            self.keys(r, "a decide rule", {"name", "when", "then", "description", "unreachable_when", "because"},
                      {"name", "then"})
            rname = r["name"]
            if not isinstance(rname, str) or not rname.strip():
                raise self.at(rline).error("a rule needs a name", rname)
            if rname in seen:
                raise self.at(rline).error(f"two rules named {rname!r} in one table "
                                           f"(first at line {seen[rname]})")
            seen[rname] = rline
            when = None
            if "when" in r:
                when = self.bool_expr(r["when"], scope, r.line_of("when"), f"condition of rule {rname}")
            then = self.value_expr(r["then"], var, scope, r.line_of("then"), f"result of rule {rname}")
            rules.append(Rule(str(rname), when, then, rline, unreachable=self.unreachable(r, f"rule {rname}")))
        for r in rules[:-1]:
            if r.when is None:
                later = rules[rules.index(r) + 1]
                raise self.at(later.line).error(
                    f"rule {later.name!r} can never fire: rule {r.name!r} before it has no condition")
        return DecideStage(idx, rules, line)

    def bool_expr(self, raw: Any, scope: E.Scope, line: int, what: str) -> E.Expr:
        block = isinstance(raw, YStr) and raw.block
        ex = E.check(raw, scope, self.at(line), line_offset_block=block, what=what)
        if ex.type != E.BOOL:
            raise self.at(line).error(f"{what} must be true/false, but this is {ex.type}", ex.text)
        return ex

    def int_expr(self, raw: Any, scope: E.Scope, line: int, what: str) -> E.Expr:
        block = isinstance(raw, YStr) and raw.block
        ex = E.check(raw, scope, self.at(line), line_offset_block=block, what=what)
        if ex.type != E.INT:
            raise self.at(line).error(f"{what} must be an int, but this is {ex.type}", ex.text)
        return ex

    # -- terminal
    def terminal(self, raw: Any, line: int) -> Terminal:
        if isinstance(raw, str):
            return Terminal(self.bool_expr(raw, self.state_scope, line, "terminal"), None, [], line)
        m = self.mapping(raw, line, "terminal")
        if "when" in m:
            self.keys(m, "terminal", {"when"})
            return Terminal(self.bool_expr(m["when"], self.state_scope, m.line_of("when"), "terminal"),
                            None, [], line)
        self.keys(m, "terminal", {"label", "values"}, {"label", "values"})
        label = E.check(m["label"], self.state_scope, self.at(m.line_of("label")), what="terminal label")
        vals = m["values"]
        if not isinstance(vals, YList) or not vals:
            raise self.at(m.line_of("values")).error("terminal values must be a non-empty list")
        out = []
        declared: dict[Any, Unreachable] = {}
        for i, v in enumerate(vals):
            if isinstance(v, YMap):          # {value: V, unreachable_when: PARAM_EXPR, because: TEXT}
                self.keys(v, "a terminal value", {"value", "unreachable_when", "because"},
                          {"value", "unreachable_when", "because"})
                entry = v
                v = self.plain(entry["value"], entry.line_of("value"), "a terminal value")
                declared[str(v) if isinstance(v, str) else v] = present(self.unreachable(entry, f"terminal {v}"))
            v = self.plain(v, vals.line_of(i), "a terminal value")
            t = E.type_of_value(str(v) if isinstance(v, str) else v)
            if not E.compatible(label.type, t):
                raise self.at(vals.line_of(i)).error(
                    f"terminal value can never equal the label ({label.type})", v)
            out.append(str(v) if isinstance(v, str) else v)
        return Terminal(None, label, out, line, value_unreachable=declared)

    # -- properties
    KINDS = {"always": "invariant", "step": "step_invariant", "reachable": "reachable",
             "terminates": "terminates", "terminates_within": "terminates_within",
             "variant": "variant", "independent_of": "independent",
             "probability": "probability", "expected": "expected", "maximum": "maximum",
             "possible": "reachable"}

    def properties(self, raw: Any, line: int) -> list[PropertyDecl]:
        m = self.mapping(raw, line, "properties")
        out = []
        for name, body in m.items():
            p = self.attempt(self.property, name, body, m.line_of(name))
            if p is not None:
                out.append(p)
        return out

    def property(self, name: str, raw: Any, line: int) -> PropertyDecl:
        self.ident(name, line, "a property name")
        if name in BUILTIN_PROPERTIES or name in CODE_BUILTINS or name == DECLARED_BUILTIN:
            raise self.at(line).error(f"{name} is a built-in property and always checked")
        m = self.mapping(raw, line, f"property {name}")
        kinds = [k for k in m if k in self.KINDS or k in PATTERNS or k in LIVENESS]
        if len(kinds) != 1:
            raise self.at(line).error(f"property {name} needs exactly one of: "
                                      f"{', '.join([*self.KINDS, *PATTERNS, *LIVENESS])}", ", ".join(kinds) or None)
        key = kinds[0]
        if key in PATTERNS or key in LIVENESS:
            return self.pattern(name, key, m, line)
        kind = self.KINDS[key]
        extra = {"terminates_within": {"count"}, "variant": {"bound"}, "maximum": {"at_most", "limit"}}.get(key, set())
        self.keys(m, f"property {name}", {key, "description", "when", "smallest_safe"} | extra,
                  {"bound"} if key == "variant" else set())
        p = PropertyDecl(name, kind, line, description=str(m.get("description", "")), possible=key == "possible")
        if "when" in m:
            p.when = self.bool_expr(m["when"], self.param_scope, m.line_of("when"), f"when of {name}")
        self.smallest_safe(p, m)
        kline = m.line_of(key)
        value = m[key]
        if key in ("always", "reachable", "possible"):
            past = PastTimeMonitors(name, len(self.vars_list), partial(self.past_var, name, kline))
            scope = E.Scope(self.state_scope.names, self.state_scope.literals, past)
            p.expr = self.bool_expr(value, scope, kline, f"property {name}")
            p.past = past.count
        elif key == "step":
            p.expr = self.bool_expr(value, self.step_scope, kline, f"property {name}")
        elif key == "terminates":
            if value is not True:
                raise self.at(kline).error("terminates takes the value true", value)
        elif key == "terminates_within":
            p.bound, p.bound_line = self.int_expr(value, self.param_scope, kline, f"the bound of {name}"), kline
            fixed = _constant(p.bound)
            if fixed is not None and fixed < 0:     # else checked per param combination
                raise self.at(kline).error(negative_bound(name, fixed))
            if "count" in m:
                p.count = self.bool_expr(m["count"], self.step_scope, m.line_of("count"),
                                         f"count of {name}")
        elif key == "variant":
            p.expr = self.int_expr(value, self.state_scope, kline, f"the variant of {name}")
            p.bound = self.int_expr(m["bound"], self.param_scope, m.line_of("bound"), f"bound of {name}")
            p.bound_line = m.line_of("bound")
        elif key == "maximum":
            p.expr = self.int_expr(value, self.state_scope, kline, f"the maximum of {name}")
            p.measure = str(value)
            p.limit = self.int_param(p, m, "limit")
            if "at_most" in m:
                p.bound_line = m.line_of("at_most")
                p.bound = self.int_expr(m["at_most"], self.param_scope, p.bound_line, f"at_most of {name}")
        elif key in ("probability", "expected"):
            p.expr, p.chance = self.chance(name, key, value, kline)
        elif key == "independent_of":
            names = value if isinstance(value, YList) else [value]
            for n in names:
                idx, _ = self.var_by_name(n, kline)
                p.vars.append(idx)
        return p

    def smallest_safe(self, p: PropertyDecl, m: YMap) -> None:
        """`smallest_safe: PARAM`: an int param the spec declares, whose sweep the report
        summarizes as the smallest value from which the property is safe (report.py)."""
        p.smallest_safe = self.int_param(p, m, "smallest_safe")

    def int_param(self, p: PropertyDecl, m: YMap, key: str) -> str | None:
        """The int param a property's `key` names (`smallest_safe`, a maximum's `limit`): what a
        sweep orders by; None when the key is absent, a problem at its line when it names no int param."""
        if key not in m:
            return None
        line = m.line_of(key)
        name = m[key]
        param = self.params_by_name.get(name) if isinstance(name, str) else None
        if param is None:
            raise self.at(line).error(f"{key} of {p.name} must name a param (the spec has: "
                                      f"{', '.join(self.params_by_name) or 'none'})", name)
        if param.kind != "int":
            raise self.at(line).error(f"{key} of {p.name} needs an int param to order; {name} is "
                                      f"a {param.kind} param", name)
        return str(name)

    SCOPE_KEYS = {frozenset({"before"}): "before", frozenset({"after"}): "after",
                  frozenset({"between"}): "between", frozenset({"after", "until"}): "after_until"}

    def pattern(self, name: str, key: str, m: YMap, line: int) -> PropertyDecl:
        """A pattern property (machine/patterns.py): an invariant over its own monitor vars,
        which every action's first stage advances."""
        self.keys(m, f"property {name}", {key, "description", "when", "scope", "smallest_safe"})
        p = PropertyDecl(name, "invariant", line, description=str(m.get("description", "")), pattern=key)
        if "when" in m:
            p.when = self.bool_expr(m["when"], self.param_scope, m.line_of("when"), f"when of {name}")
        self.smallest_safe(p, m)
        raw: dict[str, tuple[Any, int]] = {}
        kline = m.line_of(key)
        value = m[key]
        at_most = 0
        if key == "precedence":
            body = self.mapping(value, kline, f"precedence of {name}")
            self.keys(body, f"precedence of {name}", {"cause", "effect"}, {"cause", "effect"})
            raw["S"], raw["P"] = (body["cause"], body.line_of("cause")), (body["effect"], body.line_of("effect"))
        elif key == "response":
            body = self.mapping(value, kline, f"response of {name}")
            self.keys(body, f"response of {name}", {"trigger", "response"}, {"trigger", "response"})
            raw["P"], raw["S"] = (body["trigger"], body.line_of("trigger")), (body["response"], body.line_of("response"))
        elif key == "bounded_existence":
            body = self.mapping(value, kline, f"bounded_existence of {name}")
            self.keys(body, f"bounded_existence of {name}", {"what", "at_most"}, {"what", "at_most"})
            raw["P"] = (body["what"], body.line_of("what"))
            at_most = self.integer(body["at_most"], body.line_of("at_most"), f"at_most of {name}")
            if at_most < 0:
                raise self.at(body.line_of("at_most")).error(f"at_most of {name} must be 0 or more", at_most)
        else:
            raw["P"] = (value, kline)
        if "scope" in m:
            p.scope = self.pattern_scope(name, m["scope"], m.line_of("scope"), raw)
        if key in LIVENESS:     # judged over maximal runs: properties/liveness.py
            p.kind, plan = "liveness", obligation(key, p.scope)
        else:
            plan = monitor(key, p.scope, at_most)
        base = len(self.vars_list) + len(self.monitor_vars)
        mvars = [self.monitor_var(name, mv, base + i) for i, mv in enumerate(plan.vars)]
        state_names = {n: self.bool_expr(r, self.state_scope, ln, f"{n_what(n, key)} of {name}")
                       for n, (r, ln) in raw.items()}
        act_scope = self.action_scope([])
        act_names = {n: self.bool_expr(r, act_scope, ln, f"{n_what(n, key)} of {name}")
                     for n, (r, ln) in raw.items()}
        p.expr = self.monitor_expr(plan.ok, state_names, mvars, base, "s", line)
        for i, mv in enumerate(plan.vars):
            self.monitor_assigns.append(Assign(base + i, self.monitor_expr(mv.update, act_names, mvars, base,
                                                                            None, line), line))
        self.monitor_vars += mvars
        return p

    FAIRNESS = ("weak", "strong")

    def fairness(self, raw: Any, line: int) -> list[Fairness]:
        """`fairness:` a list of `{weak: ACTION}` or `{strong: ACTION, when: EXPR}` (`when` optional
        on either, over the state the action leaves, the params and the action's own choices)."""
        if not isinstance(raw, YList):
            raise self.at(line).error("fairness must be a list of assumptions such as {weak: ACTION} "
                                      "or {strong: ACTION, when: EXPR}", _short(raw))
        out = []
        for k, item in enumerate(raw):
            found = self.attempt(self.assumption, item, raw.line_of(k))
            if found is not None:
                out.append(found)
        return out

    def assumption(self, raw: Any, line: int) -> Fairness:
        m = self.mapping(raw, line, "a fairness assumption")
        strengths = [k for k in self.FAIRNESS if k in m]
        if len(strengths) != 1:
            raise self.at(line).error("a fairness assumption needs exactly one of: weak, strong (naming an action)",
                                      ", ".join(map(str, m)) or None)
        strength = strengths[0]
        self.keys(m, "a fairness assumption", {strength, "when"})
        action, aline = m[strength], m.line_of(strength)
        if not isinstance(action, str) or action not in self.action_choices:
            raise self.at(aline).error(f"fairness names an action the spec does not declare "
                                       f"(actions: {', '.join(self.action_choices)})", _short(action))
        when = None
        if "when" in m:
            when = self.bool_expr(m["when"], self.fairness_scope(action), m.line_of("when"),
                                  f"the when of fairness for {action}")
        return Fairness(strength, action, when, line)

    def fairness_scope(self, action: str) -> E.Scope:
        """A fairness `when`: the action's own scope, its vars read from the state a transition
        leaves (`b`, as a step expression's are), so it compiles as a step function."""
        names = {p: b for p, b in self.param_scope.names.items()}
        for i, v in enumerate(self.vars_list):
            names[v.name] = E.Binding(v.type, partial(_sub, "b", i), what=f"var {v.name}")
        for cname, cs in self.action_choices[action]:
            names[cname] = _choice_binding(cname, cs)
        return E.Scope(names, self.literals)

    def pattern_scope(self, name: str, raw: Any, line: int, out: dict[str, tuple[Any, int]]) -> str:
        """`scope: {before: R}`, `{after: Q}`, `{between: [Q, R]}` or `{after: Q, until: R}`."""
        m = self.mapping(raw, line, f"scope of {name}")
        scope = self.SCOPE_KEYS.get(frozenset(m))
        if scope is None:
            raise self.at(line).error(f"scope of {name} must be one of {{before: R}}, {{after: Q}}, "
                                      "{between: [Q, R]}, {after: Q, until: R}", ", ".join(m) or None)
        if scope == "between":
            pair = m["between"]
            if not isinstance(pair, YList) or len(pair) != 2:
                raise self.at(m.line_of("between")).error(f"between of {name} must be a list [Q, R]")
            out["Q"], out["R"] = (pair[0], pair.line_of(0)), (pair[1], pair.line_of(1))
        else:
            if "after" in m:
                out["Q"] = (m["after"], m.line_of("after"))
            end = "until" if "until" in m else "before"
            if end in m:
                out["R"] = (m[end], m.line_of(end))
        return scope

    def past_var(self, prop: str, line: int, declared: Callable[[int], PastVar]) -> int:
        """Add a past-time monitor var of property `prop` (machine/pasttime.py) and its update
        to the monitors' first stage; its index in the state."""
        index = len(self.vars_list) + len(self.monitor_vars)
        pv = declared(index)
        if pv.kind == "int":
            like = self.vars_list[present(pv.like)]
            var = Var(pv.name, "int", E.INT, like.lo, like.hi, init=[present(like.lo)])
        elif pv.kind == "enum" and pv.like is not None:
            like = self.vars_list[pv.like]
            var = Var(pv.name, "enum", pv.type, None, None, like.values, [E.literal_expr(like.values[0], like.values[0])])
        else:
            var = Var(pv.name, pv.kind, pv.type, None, None, pv.values, [E.literal_expr(pv.init, str(pv.init))])
        var.line, var.ghost, var.monitor = line, True, prop
        self.monitor_vars.append(var)
        update = E.Expr(ast.unparse(pv.update), pv.type, pv.update, frozenset(), line)
        self.monitor_assigns.append(Assign(index, update, line))
        return index

    def monitor_var(self, prop: str, mv: MonitorVar, index: int) -> Var:
        """A hidden var of property `prop`'s monitor, named so no user expression can read it."""
        name = f"{prop}:monitor" + (f":{mv.suffix}" if mv.suffix else "")
        init = E.literal_expr(mv.init, str(mv.init))
        if mv.kind == "enum":
            return Var(name, "enum", E.EnumT(frozenset(PHASES), name), None, None, PHASES, [init],
                       ghost=True, monitor=prop)
        if mv.kind == "int":
            return Var(name, "int", E.INT, E.literal_expr(0, "0"), E.literal_expr(mv.hi, str(mv.hi)),
                       init=[init], ghost=True, monitor=prop)
        return Var(name, "bool", E.BOOL, None, None, init=[init], ghost=True, monitor=prop)

    def monitor_expr(self, text: str, preds: dict[str, E.Expr], mvars: list[Var], base: int,
                     state: str | None, line: int) -> E.Expr:
        """A monitor's expression text, its names bound to the predicates and the monitor vars
        (read from `state`, or from the action's v_i when None)."""
        def node(ex: E.Expr) -> Callable[[], ast.expr]:
            return lambda: copy.deepcopy(ex.py)

        def slot(i: int) -> Callable[[], ast.expr]:
            return partial(_sub, state, i) if state is not None else partial(ast.Name, f"v_{i}", ast.Load())
        names = {n: E.Binding(E.BOOL, lambda: ast.Constant(False)) for n in ("P", "Q", "R", "S", "B")}
        names["C"] = E.Binding(E.INT, lambda: ast.Constant(0))
        names.update({n: E.Binding(E.BOOL, node(ex)) for n, ex in preds.items()})
        for i, v in enumerate(mvars):
            names[{"enum": "M", "int": "C", "bool": "B"}[v.kind]] = E.Binding(v.type, slot(base + i))
        ex = E.check(text, E.Scope(names), self.at(line), what="a pattern monitor")
        return E.Expr(ex.text, ex.type, ex.py, frozenset().union(*(p.choices_used for p in preds.values())), line)

    def chance(self, name: str, key: str, raw: Any, line: int) -> tuple[E.Expr | None, Chance]:
        """`probability: {reach: EXPR, at_least|at_most: P}` or `expected: {measure: M, at_least|at_most: X}`."""
        what = "reach" if key == "probability" else "measure"
        m = self.mapping(raw, line, f"{key} of property {name}")
        self.keys(m, f"{key} of property {name}", {what, *BOUND_KEYS}, {what})
        senses = [k for k in BOUND_KEYS if k in m]
        if len(senses) != 1:
            raise self.at(line).error(f"{key} of property {name} needs exactly one of: at_least, at_most")
        sense = senses[0]
        bound = exact_number(m[sense], self.at(m.line_of(sense)), f"the bound of {name}")
        if bound < 0 or (key == "probability" and bound > 1):
            limits = "between 0 and 1" if key == "probability" else "0 or more"
            raise self.at(m.line_of(sense)).error(f"the bound of {name} must be {limits}", m[sense])
        if key == "probability":
            reach = self.bool_expr(m["reach"], self.state_scope, m.line_of("reach"), f"property {name}")
            return reach, Chance(sense, bound)
        measure = m["measure"]
        if not isinstance(measure, str):
            raise self.at(m.line_of("measure")).error("measure must name a measure", measure)
        return None, Chance(sense, bound, str(measure), m.line_of("measure"))

    def expect(self, raw: Any, line: int, props: list[PropertyDecl]) -> list[str]:
        m = self.mapping(raw, line, "expect")
        self.keys(m, "expect", {"violated"}, {"violated"})
        names = m["violated"]
        if not isinstance(names, YList) or not names:
            raise self.at(m.line_of("violated")).error("expect violated must be a non-empty list of properties")
        known = {p.name for p in props} | set(BUILTIN_PROPERTIES) | set(CODE_BUILTINS) | {DECLARED_BUILTIN}
        for i, n in enumerate(names):
            if not isinstance(n, str) or n not in known:
                raise self.at(names.line_of(i)).error("expect names a property the spec does not have", n)
        return [str(n) for n in names]

    def replay(self, raw: Any, line: int) -> list[tuple[str, E.Expr]]:
        m = self.mapping(raw, line, "replay")
        return [(label, E.check(v, self.step_scope, self.at(m.line_of(label)), what=f"replay line {label}"))
                for label, v in m.items()]

    def measures(self, raw: Any, line: int) -> list[Measure]:
        m = self.mapping(raw, line, "measures")
        out = []
        for name, body in m.items():
            mline = m.line_of(name)
            self.ident(name, mline, "a measure name")
            if name == "transitions":
                raise self.at(mline).error("'transitions' is always measured; pick another name")
            b = self.mapping(body, mline, f"measure {name}")
            kinds = [k for k in ("count", "sum") if k in b]
            if len(kinds) != 1:
                raise self.at(mline).error(f"measure {name} needs exactly one of: count, sum")
            self.keys(b, f"measure {name}", {kinds[0], "description"})
            kline = b.line_of(kinds[0])
            if kinds[0] == "count":
                ex = self.bool_expr(b["count"], self.step_scope, kline, f"count of measure {name}")
            else:
                ex = self.int_expr(b["sum"], self.step_scope, kline, f"sum of measure {name}")
            out.append(Measure(name, kinds[0], ex, mline, str(b.get("description", ""))))
        return out

    # -- scenarios
    def scenarios(self, raw: Any, line: int, params: list[Param], vars_: list[Var]) -> list[Scenario]:
        m = self.mapping(raw, line, "scenarios")
        out = []
        for name, body in m.items():
            s = self.attempt(self.scenario, name, body, m.line_of(name), params, vars_)
            if s is not None:
                out.append(s)
        return out

    def scenario(self, name: str, raw: Any, line: int, params: list[Param], vars_: list[Var]) -> Scenario:
        m = self.mapping(raw, line, f"scenario {name}")
        self.keys(m, f"scenario {name}", {"description", "params", "init", "steps", "expect"},
                  {"steps", "expect"})
        pvals: dict[str, Any] = {}
        praw = m.get("params", YMap())
        praw = self.mapping(praw, m.line_of("params"), f"params of scenario {name}")
        for pname, value in praw.items():
            pl = praw.line_of(pname)
            if pname not in self.params_by_name:
                raise self.at(pl).error("not a declared param", pname)
            declared = self.params_by_name[pname]
            value = str(value) if isinstance(value, str) else value     # YAML's positioned string: a str
            if not declared.accepts(value):
                raise self.at(pl).error(f"{pname}={_param_value_text(value)} is not a declared value of "
                                        f"{pname} ({declared.allowed_text()})")
            pvals[pname] = value
        for p in params:
            if p.name not in pvals:
                if p.count != 1:
                    raise self.at(line).error(f"scenario {name} must set param {p.name} "
                                              f"(it has several values)")
                pvals[p.name] = p.values[0]
        init = self.state_values(m.get("init", YMap()), m.line_of("init"), f"init of scenario {name}")
        for v in vars_:
            if len(v.init) > 1 and v.name not in init:
                raise self.at(line).error(f"scenario {name} must choose the initial value of "
                                          f"{v.name} (it has several)")
        steps_raw = m["steps"]
        if not isinstance(steps_raw, YList):
            raise self.at(m.line_of("steps")).error("steps must be a list")
        steps = []
        for i, st in enumerate(steps_raw):
            sl = steps_raw.line_of(i)
            st = self.mapping(st, sl, "a scenario step")
            self.keys(st, "a scenario step", {"action", "choices"}, {"action"})
            act = st["action"]
            if not isinstance(act, str) or act not in self.action_choices:
                raise self.at(sl).error("not an action of this machine", act)
            chs = dict(self.action_choices[act])
            given = self.mapping(st.get("choices", YMap()), st.line_of("choices"), "choices")
            for cname, cs in chs.items():
                if cname not in given and cs.when is None:      # a conditional choice may be absent
                    raise self.at(sl).error(f"action {act} needs a value for choice {cname}")
            for cname, value in given.items():
                cl = given.line_of(cname)
                if cname not in chs:
                    raise self.at(cl).error(f"action {act} has no choice named {cname!r}")
                cs = chs[cname]
                if cs.kind != "range" and value not in cs.labels():
                    raise self.at(cl).error(f"not a value of choice {cname} "
                                            f"({', '.join(map(str, cs.labels()))})", value)
                if cs.kind == "range":
                    self.integer(value, cl, f"choice {cname}")
            steps.append(ScenarioStep(str(act), {k: (str(v) if isinstance(v, str) else v)
                                                 for k, v in given.items()}, sl))
        expect = self.state_values(m["expect"], m.line_of("expect"), f"expect of scenario {name}")
        return Scenario(name, pvals, init, steps, expect, str(m.get("description", "")), line)

    def state_values(self, raw: Any, line: int, what: str) -> dict[str, Any]:
        m = self.mapping(raw, line, what)
        out = {}
        for vname, value in m.items():
            vl = m.line_of(vname)
            _, var = self.var_by_name(vname, vl)
            ok = ((var.kind == "int" and isinstance(value, int) and not isinstance(value, bool))
                  or (var.kind == "bool" and isinstance(value, bool))
                  or (var.kind == "enum" and isinstance(value, str) and value in var.values))
            if not ok:
                raise self.at(vl).error(f"not a value of {var.kind} var {vname}", value)
            out[vname] = str(value) if isinstance(value, str) else value
        return out


def _conditional_value(item: Any) -> bool:
    """`{value: V, when: COND}` in a list of plain values (a record has a `name`)."""
    return isinstance(item, YMap) and "value" in item and "name" not in item


def n_what(n: str, pattern: str = "") -> str:
    """How an error names a pattern's predicate."""
    if pattern == "response" and n in ("P", "S"):
        return {"P": "the trigger", "S": "the response"}[n]
    return {"P": "the predicate", "S": "the cause", "Q": "the scope's start", "R": "the scope's end"}[n]


def negative_bound(name: str, value: int) -> str:
    """terminates_within N counts transitions: a negative N is a mistake, not a violation."""
    return (f"the bound of {name} is {value}: a run takes at least 0 transitions, so "
            "terminates_within needs a bound of 0 or more")


def _constant(ex: E.Expr) -> int | None:
    """The value of an expression that reads no param (`-1`, `2 - 3`), else None."""
    if any(isinstance(n, ast.Name) and n.id not in ("min", "max", "abs") for n in ast.walk(ex.py)):
        return None
    try:
        value: int = eval(compile(ast.fix_missing_locations(ast.Expression(ex.py)), "<bound>", "eval"),
                          {"__builtins__": {}, "min": min, "max": max, "abs": abs})     # an INT expression
        return value
    except ZeroDivisionError:
        return None                # reported with the params, like any other division by zero


def _sub(name: str, i: int) -> ast.expr:
    return ast.Subscript(ast.Name(name, ast.Load()), ast.Constant(i), ast.Load())


def _choice_binding(cname: str, cs: ChoiceSet) -> E.Binding:
    var = "c_" + cname
    if cs.kind == "records":
        fields: dict[str, tuple[E.Type, Callable[[], ast.expr]]] = {
            f: (t, partial(_sub, var, k)) for f, (t, k) in cs.fields.items()}
        fields["name"] = (cs.type, lambda: _sub(var, 0))
        return E.Binding(cs.type, lambda: _sub(var, 0), fields, what=f"choice {cname}")
    return E.Binding(cs.type, lambda: _sub(var, 0), what=f"choice {cname}")


def _short(value: Any) -> str:
    text = repr(value) if not isinstance(value, str) else value
    return text if len(text) <= 60 else text[:57] + "..."
