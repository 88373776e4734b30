"""A spec as data: what a YAML machine declares, once the loader (machine/spec.py) has
validated and type-checked it. Nothing here reads YAML.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from . import expr as E
from .inputs import shown_value, value_count
from .outcomes import Outcome
from .spanmap import SpanRule
from .text import values_text
from .weights import Chance, ChoiceWeights


RESERVED = {"action", "rule", "before", "after", "min", "max", "abs", "true", "false"}
BUILTIN_PROPERTIES = ("domains", "well_defined")
DECLARED_BUILTIN = "declared_unreachable"    # of specs with `unreachable_when` declarations
CODE_BUILTINS = ("bound_code", "code_matches_spec")      # built-ins of specs bound to code


# ---------------------------------------------------------------- the model

PARAM_KINDS = ("int", "bool", "enum")


ParamValue = int | bool | str          # an int, bool or enum param's value
# Params pinned for a check: NAME -> a value, or the values swept in this order
Pins = Mapping[str, ParamValue | list[ParamValue] | tuple[ParamValue, ...] | range]
"""`check`'s `params`: NAME -> one value, or the values swept in this order."""


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
            raise ValueError(f"-p {self.name}={param_value_text(value)}: not a declared value of {self.name} "
                             f"({self.allowed_text()})")
        return value


def param_value_text(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


T = TypeVar("T")


class FileLine(int):
    """A line of another file than the spec's: a sub-agent's declaration inlined into its
    parent (machine/compose.py). It is the line number everywhere; `file` names its file."""

    file: str

    def __new__(cls, line: int, file: str) -> FileLine:
        out = super().__new__(cls, line)
        out.file = file
        return out

    def __getnewargs__(self) -> tuple[int, str]:      # type: ignore[override]  # pickled with its file
        return int(self), self.file


def line_file(line: int | None, default: str) -> str:
    """The file of a line: its own for a FileLine, else `default` (the spec's)."""
    return getattr(line, "file", default)


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
    file: str | None = None        # where declared, when not the spec's file (a sub-agent's var)


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
    runs: str | None = None        # `run:`: the sub-agent it runs to its end (machine/compose.py)
    # over params: where a copy of a recursive sub-agent can run this action at all (past its depth
    # bound it cannot, and its vacuity there is the bound's, not news); None: everywhere
    entered: E.Expr | None = None

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


# What a declared property is (a pattern is declared `invariant` or `liveness`, its name in `pattern`).
DeclKind = Literal["invariant", "step_invariant", "reachable", "terminates", "terminates_within", "variant",
                   "independent", "liveness", "maximum", "probability", "expected"]
PatternName = Literal["absence", "universality", "precedence", "bounded_existence", "existence", "response"]


@dataclass
class PropertyDecl:
    name: str
    kind: DeclKind  # invariant | step_invariant | reachable | terminates | terminates_within | variant | independent
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
    pattern: PatternName | None = None     # absence | universality | precedence | bounded_existence (kind: invariant
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
class ParamCheck:
    """What a tree (machine/compose.py) can judge only for one combination of the params: the
    value of `expr` is a value `param` accepts (a param bound to a sub-agent's), or else a pair of
    equal halves (the ranges of a shared var on both sides); if not, the spec error `message`,
    formatted with that value, at `file`:`line`."""

    expr: E.Expr
    file: str
    line: int
    message: str
    param: Param | None = None
    entered: E.Expr | None = None      # over params: judged only where this holds (a copy within its depth bound)

    def accepts(self, value: Any) -> bool:
        if self.param is not None:
            return self.param.accepts(value)
        half = len(value) // 2
        return bool(value[:half] == value[half:])


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
    load_warnings: list[tuple[int, str]] = field(default_factory=list)   # a declaration's: (line, message)
    expect_line: int | None = None
    agents: list[str] = field(default_factory=list)          # the sub-agents it runs (machine/compose.py)
    depths: dict[str, int] = field(default_factory=dict)     # a sub-agent's action -> how deep it is nested
    param_checks: list[ParamCheck] = field(default_factory=list)   # judged per combination of the params
    span_map: list[SpanRule] = field(default_factory=list)     # `spans:`, for `haltproof traces`

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



def n_what(n: str, pattern: str = "") -> str:
    """How an error names a pattern's predicate."""
    if pattern == "response" and n in ("P", "S"):
        return {"P": "the trigger", "S": "the response"}[n]
    return {"P": "the predicate", "S": "the cause", "Q": "the scope's start", "R": "the scope's end"}[n]


def negative_bound(name: str, value: int) -> str:
    """terminates_within N counts transitions: a negative N is a mistake, not a violation."""
    return (f"the bound of {name} is {value}: a run takes at least 0 transitions, so "
            "terminates_within needs a bound of 0 or more")
