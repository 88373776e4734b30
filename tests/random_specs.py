"""Random, valid haltproof specs for the differential tests (Hypothesis strategies).

`specs()` draws a whole spec as a YAML document: params, int/enum/bool vars (bounds over
params, several initial values), actions with guards, choices of every kind (plain values,
int ranges `{min, max}` over params, records, named `sets:`), set stages and decide tables
of several rules, a terminal (predicate, `{when}` or label), and properties of every kind
(invariants, step invariants over before/after, choices, `action` and `rule`, reachable,
terminates, terminates_within with and without `count`, variants, independent_of, `when`
over params) and measures (`count` and `sum`). Expressions are typed trees over the whole
language: arithmetic with `//` and `%`, min/max/abs, chained comparisons, `in` tuples,
`x if c else y`, record fields, and products with constants near 2^31 and 2^62 (where
numpy's fixed-width integers would wrap).

Some shapes reach defects of haltproof that are being fixed (see tests/reference_explorer.py
for what is right); the reference explorer names them per run, so a test can set aside
exactly the examples that meet a known defect. `allow` switches on generator paths that
meet them on purpose (the dedicated tests of tests/explorer/test_differential.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml
from hypothesis import strategies as st

ENUM_VALUES = ["red", "green", "blue"]
KINDS = ["fast", "slow"]                 # an enum field of the record choices
WORDS = ["up", "down", "left"]           # plain enum choice values
HUGE = [1073741824, -1073741824, 2147483647, -2147483648, 2147483648, 4294967296,
        4611686018427387903, -4611686018427387904, 4611686018427387904, 9223372036854775807]
CMP = ["<", "<=", ">", ">=", "==", "!="]


@dataclass
class RandomSpec:
    doc: dict
    text: str
    allow: frozenset = frozenset()

    def __repr__(self) -> str:            # Hypothesis prints the falsifying example: the YAML
        return "RandomSpec(text=\n" + self.text + ")"


@dataclass
class Ctx:
    """The names an expression may use, by type."""

    ints: list[str] = field(default_factory=list)
    bools: list[str] = field(default_factory=list)
    enums: list[tuple[str, list[str]]] = field(default_factory=list)   # (name, its values)
    params: list[str] = field(default_factory=list)
    errors: bool = False           # may divide by an expression that can be zero
    huge: bool = True              # may multiply by constants near the int widths
    divs: bool = True              # may use // and % (the vector engine leaves such specs to the scalar one)


def _leaf_int(draw, ctx: Ctx) -> str:
    pool = ["const"] + (["name"] * 4 if ctx.ints else []) + (["param"] if ctx.params else [])
    kind = draw(st.sampled_from(pool))
    if kind == "name":
        return draw(st.sampled_from(ctx.ints))
    if kind == "param":
        return draw(st.sampled_from(ctx.params))
    return str(draw(st.integers(-3, 4)))


@st.composite
def int_expr(draw, ctx: Ctx, depth: int = 2) -> str:
    if depth <= 0 or draw(st.integers(0, 2)) == 0:
        return _leaf_int(draw, ctx)
    form = draw(st.sampled_from(["+", "-", "*", "min", "max", "abs", "neg", "if", "div", "huge"]))
    a = draw(int_expr(ctx, depth - 1))
    if form in ("+", "-", "*"):
        return f"({a} {form} {draw(int_expr(ctx, depth - 1))})"
    if form in ("min", "max"):
        rest = draw(st.lists(int_expr(ctx, depth - 1), min_size=1, max_size=2))
        return f"{form}({', '.join([a, *rest])})"
    if form == "abs":
        return f"abs({a})"
    if form == "neg":
        return f"-({a})"
    if form == "if":
        return f"({a} if {draw(bool_expr(ctx, depth - 1))} else {draw(int_expr(ctx, depth - 1))})"
    if form == "div" and ctx.divs:
        op = draw(st.sampled_from(["//", "%"]))
        if ctx.errors and draw(st.booleans()):
            return f"({a} {op} {draw(int_expr(ctx, depth - 1))})"
        return f"({a} {op} {draw(st.sampled_from(['2', '3', '-2', '(-3)']))})"
    if form == "div" or not ctx.huge:
        return a
    return f"({a} * {draw(st.sampled_from(HUGE))} * {draw(st.sampled_from(['1', '2', '4', '-1']))})"


@st.composite
def bool_expr(draw, ctx: Ctx, depth: int = 2) -> str:
    pool = ["cmp", "cmp", "chain", "const"] + (["bool"] * 2 if ctx.bools else []) \
        + (["enum", "enum_in"] if ctx.enums else []) + (["int_in"] if ctx.ints else [])
    if depth > 0:
        pool += ["and", "or", "not", "if"]
    kind = draw(st.sampled_from(pool))
    sub = max(depth - 1, 0)
    if kind == "cmp":
        return f"{draw(int_expr(ctx, sub))} {draw(st.sampled_from(CMP))} {draw(int_expr(ctx, sub))}"
    if kind == "chain":
        lo, hi = draw(st.integers(-1, 2)), draw(st.integers(1, 4))
        return f"{lo} <= {draw(int_expr(ctx, sub))} < {hi}"
    if kind == "const":
        return draw(st.sampled_from(["true", "false"]))
    if kind == "bool":
        name = draw(st.sampled_from(ctx.bools))
        return name if draw(st.booleans()) else f"not {name}"
    if kind == "enum":
        name, values = draw(st.sampled_from(ctx.enums))
        return f"{name} {draw(st.sampled_from(['==', '!=']))} {draw(st.sampled_from(values))}"
    if kind == "enum_in":
        name, values = draw(st.sampled_from(ctx.enums))
        some = draw(st.lists(st.sampled_from(values), min_size=1, max_size=len(values), unique=True))
        return f"{name} {draw(st.sampled_from(['in', 'not in']))} ({', '.join(some)},)"
    if kind == "int_in":
        name = draw(st.sampled_from(ctx.ints))
        some = draw(st.lists(st.sampled_from([str(k) for k in range(-1, 4)] + ctx.params), min_size=1, max_size=3,
                             unique=True))
        return f"{name} in ({', '.join(some)},)"
    if kind in ("and", "or"):
        parts = draw(st.lists(bool_expr(ctx, sub), min_size=2, max_size=3))
        return "(" + f" {kind} ".join(parts) + ")"
    if kind == "not":
        return f"not ({draw(bool_expr(ctx, sub))})"
    return f"({draw(bool_expr(ctx, sub))} if {draw(bool_expr(ctx, sub))} else {draw(bool_expr(ctx, sub))})"


# ---------------------------------------------------------------- the parts of a spec

@dataclass
class Var:
    name: str
    kind: str                    # int | enum | bool
    lo: int = 0
    hi: str = "1"                # an int or a param expression
    hi_min: int = 1              # the least value hi takes over the params
    values: list[str] = field(default_factory=list)


@dataclass
class Choice:
    name: str
    kind: str                    # ints | range | words | records
    raw: Any                     # as the spec writes it (a list, a range, or a set's name)
    values: list = field(default_factory=list)    # words: the words; records: their names
    kinds: list = field(default_factory=list)     # records: the values of their `kind` field


def _params(draw) -> dict[str, Any]:
    out = {}
    for name in draw(st.sampled_from([[], ["P"], ["P"], ["P", "Q"]])):
        form = draw(st.sampled_from(["list", "range", "one"]))
        if form == "list":
            out[name] = draw(st.lists(st.integers(1, 3), min_size=1, max_size=2, unique=True))
        elif form == "range":
            lo = draw(st.integers(1, 2))
            out[name] = {"min": lo, "max": lo + 1}
        else:
            out[name] = draw(st.integers(1, 3))
    return out


def _least(raw: Any) -> int:
    if isinstance(raw, list):
        return min(raw)
    if isinstance(raw, dict):
        return raw["min"]
    return raw


def _vars(draw, params: dict[str, Any], ghost: bool) -> list[Var]:
    out = []
    for name in ["x", "y", "z"][:draw(st.sampled_from([1, 2, 2, 3, 3]))]:
        lo = draw(st.sampled_from([0, 0, 0, -1]))
        if params and draw(st.booleans()):
            p = draw(st.sampled_from(list(params)))
            extra = draw(st.integers(0, 1))
            hi, hi_min = (f"{p} + {extra}" if extra else p), _least(params[p]) + extra
        else:
            hi_min = draw(st.integers(1, 3))
            hi = str(hi_min)
        out.append(Var(name, "int", lo, hi, hi_min))
    if draw(st.booleans()):
        out.append(Var("e", "enum", values=ENUM_VALUES[:draw(st.integers(2, 3))]))
    if draw(st.integers(0, 2)) == 0:
        out.append(Var("b", "bool"))
    if ghost:
        out.append(Var("g", "int", 0, "2", 2))
    return out


def _init(draw, v: Var) -> Any:
    if v.kind == "int":
        pool = list(range(v.lo, v.hi_min + 1))
    elif v.kind == "enum":
        pool = list(v.values)
    else:
        pool = [False, True]
    some = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=2, unique=True))
    return some[0] if len(some) == 1 else {"one_of": some}


def _choice(draw, name: str, params: dict[str, Any], sets: dict[str, Any]) -> Choice:
    kind = draw(st.sampled_from(["ints", "range", "words", "records"]))
    if kind == "ints":
        raw = draw(st.sampled_from([[0, 1], [1, 2], [0, 1, 2], [-1, 1]]))
    elif kind == "range":
        hi = draw(st.sampled_from(list(params) + ["1", "2"])) if params else draw(st.sampled_from(["1", "2"]))
        raw = {"min": draw(st.sampled_from([0, 1])), "max": hi}
        if params and hi in params and _least(params[hi]) < raw["min"]:
            raw["min"] = 0
    elif kind == "words":
        raw = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3, unique=True))
    else:
        recs = [{"name": "rec_ok", "ok": True, "n": 1, "kind": "fast"},
                {"name": "rec_bad", "ok": False, "n": 0, "kind": "slow"},
                {"name": "rec_big", "ok": True, "n": 2, "kind": "slow"}]
        raw = draw(st.lists(st.sampled_from(recs), min_size=1, max_size=3, unique_by=lambda r: r["name"]))
    values = [r["name"] for r in raw] if kind == "records" else list(raw) if kind == "words" else []
    kinds = sorted({r["kind"] for r in raw}) if kind == "records" else []
    if kind in ("words", "records") and draw(st.integers(0, 3)) == 0:
        set_name = f"set_{name}"
        sets[set_name] = raw
        return Choice(name, kind, set_name, values, kinds)
    return Choice(name, kind, raw, values, kinds)


def _stage_ctx(base: Ctx, choices: list[Choice]) -> Ctx:
    """What set and decide stages see: the state's names plus the action's own choices."""
    ctx = Ctx(list(base.ints), list(base.bools), list(base.enums), list(base.params), base.errors, base.huge,
              base.divs)
    for c in choices:
        if c.kind in ("ints", "range"):
            ctx.ints.append(c.name)
        elif c.kind == "words":
            ctx.enums.append((c.name, c.values))
        else:
            ctx.ints.append(f"{c.name}.n")
            ctx.bools.append(f"{c.name}.ok")
            ctx.enums.append((f"{c.name}.kind", c.kinds))
            ctx.enums.append((c.name, c.values))
    return ctx


def _value(draw, v: Var, ctx: Ctx) -> Any:
    """A new value for var v: mostly one that stays in its domain, sometimes any."""
    if v.kind == "bool":
        return draw(st.sampled_from([True, False, f"not {v.name}", "PRED"])) if ctx else True
    if v.kind == "enum":
        a, b = draw(st.sampled_from(v.values)), draw(st.sampled_from(v.values))
        return draw(st.sampled_from([a, v.name, f"{a} if {draw(bool_expr(ctx, 1))} else {b}"]))
    e = draw(int_expr(ctx, 1))
    other = draw(st.sampled_from(ctx.ints))
    safe = [f"min(max({e}, {v.lo}), {v.hi})", f"min({v.name} + 1, {v.hi})", f"max({v.name} - 1, {v.lo})",
            f"min({v.name} + 1, {v.hi})", f"max({v.name} - 1, {v.lo})", f"min(max({v.name} + {other}, {v.lo}), {v.hi})",
            f"({v.name} + 1) % ({v.hi} + 1)" if v.lo == 0 else f"min({v.name} + 1, {v.hi})",
            str(draw(st.integers(v.lo, v.hi_min)))]
    risky = [e, f"{v.name} + 1", f"{v.name} - 1", f"{v.name} * 2"]
    return draw(st.sampled_from(safe if draw(st.integers(0, 7)) else risky))


def _set_stage(draw, vars_: list[Var], ctx: Ctx) -> dict:
    targets = draw(st.lists(st.sampled_from(vars_), min_size=1, max_size=min(3, len(vars_)), unique_by=lambda v: v.name))
    out = {}
    for v in targets:
        if v.name == "g":
            out["g"] = draw(st.sampled_from(["(g + 1) % 3", "0", "2", "min(g + 1, 2)"]))
            continue
        value = _value(draw, v, ctx)
        if value == "PRED":
            value = draw(bool_expr(ctx, 1))
        out[v.name] = value
    return out


def _decide(draw, vars_: list[Var], ctx: Ctx, names: list[str], allow: frozenset) -> dict:
    v = draw(st.sampled_from([v for v in vars_ if v.name != "g"] or vars_))
    rules = []
    n = draw(st.integers(1, 4))
    for k in range(n):
        rname = f"r{len(names)}"
        names.append(rname)
        rule: dict[str, Any] = {"name": rname}
        if k < n - 1 or draw(st.integers(0, 3)):
            rule["when"] = draw(bool_expr(ctx, 1))
        if v.kind == "int":
            if "decide_const_domain" in allow and draw(st.booleans()):
                rule["then"] = draw(st.sampled_from([v.hi_min + 1, v.lo - 1, 1 << 31]))
            elif draw(st.booleans()):
                rule["then"] = draw(st.integers(v.lo, v.hi_min))
            else:
                rule["then"] = _value(draw, v, ctx)
                literal = str(rule["then"]).lstrip("-")
                if literal.isdigit() and not v.lo <= int(rule["then"]) <= v.hi_min:
                    rule["then"] = v.lo       # an int literal outside the domain: decide_const_domain
        elif v.kind == "enum":
            rule["then"] = draw(st.sampled_from(v.values))
        else:
            rule["then"] = draw(st.sampled_from([True, False, "PRED"]))
            if rule["then"] == "PRED":
                rule["then"] = draw(bool_expr(ctx, 1))
        rules.append(rule)
    return {"decide": v.name, "rules": rules}


def _step_ctx(vars_: list[Var], params: list[str], errors: bool, divs: bool = False) -> Ctx:
    ctx = Ctx(params=list(params), errors=errors, divs=divs)
    for v in vars_:
        for side in ("before", "after"):
            if v.kind == "int":
                ctx.ints.append(f"{side}.{v.name}")
            elif v.kind == "bool":
                ctx.bools.append(f"{side}.{v.name}")
            else:
                ctx.enums.append((f"{side}.{v.name}", v.values))
    return ctx


@st.composite
def step_expr(draw, base: Ctx, actions: list[tuple[str, list[Choice]]], rules: list[str],
              unguarded: bool) -> str:
    """A step expression: before/after, `action`, `rule`, and choices guarded by their action
    (unguarded, a choice read by a transition of another action violates well_defined)."""
    e = draw(bool_expr(base, 2))
    extra = draw(st.integers(0, 4))
    if extra == 0 and actions:
        return f"(action != {draw(st.sampled_from([a for a, _ in actions]))} or {e})"
    if extra == 1 and rules:
        return f"(rule == {draw(st.sampled_from(rules))} or {e})"
    with_choices = [(a, cs) for a, cs in actions if cs]
    if extra == 2 and with_choices:
        a, cs = draw(st.sampled_from(with_choices))
        inner = draw(bool_expr(_stage_ctx(Ctx(params=base.params, errors=base.errors, divs=base.divs), cs), 1))
        if unguarded and draw(st.integers(0, 3)) == 0:
            return inner
        return f"(action != {a} or {inner})" if draw(st.booleans()) else f"(action == {a} and {inner})"
    return e


SAFETY = ["absence", "universality", "precedence", "bounded_existence"]
LIVENESS = ["existence", "response"]
SCOPES = ["global", "before", "after", "between", "after_until"]


def _pattern(draw, kind: str, ctx: Ctx) -> dict[str, Any]:
    """A pattern property of `kind` over random predicates, in a random scope."""
    def pred() -> str:                  # mostly one var against a value: true on some states only
        if draw(st.integers(0, 3)) == 0 or not (ctx.ints or ctx.enums or ctx.bools):
            return draw(bool_expr(ctx, 1))
        return draw(atom(ctx))
    if kind in ("absence", "universality", "existence"):
        prop: dict[str, Any] = {kind: pred()}
    elif kind == "precedence":
        prop = {kind: {"cause": pred(), "effect": pred()}}
    elif kind == "bounded_existence":
        prop = {kind: {"what": pred(), "at_most": draw(st.integers(0, 2))}}
    else:
        prop = {kind: {"trigger": pred(), "response": pred()}}
    scope = draw(st.sampled_from(SCOPES))
    if scope == "before":
        prop["scope"] = {"before": pred()}
    elif scope == "after":
        prop["scope"] = {"after": pred()}
    elif scope == "between":
        prop["scope"] = {"between": [pred(), pred()]}
    elif scope == "after_until":
        prop["scope"] = {"after": pred(), "until": pred()}
    return prop


@st.composite
def atom(draw, ctx: Ctx) -> str:
    """One var against a value (`x >= 1`, `e == red`, `not b`)."""
    pool = (["int"] * 3 if ctx.ints else []) + (["enum"] if ctx.enums else []) + (["bool"] if ctx.bools else [])
    kind = draw(st.sampled_from(pool))
    if kind == "int":
        return f"{draw(st.sampled_from(ctx.ints))} {draw(st.sampled_from(CMP))} {draw(st.integers(0, 2))}"
    if kind == "enum":
        name, values = draw(st.sampled_from(ctx.enums))
        return f"{name} {draw(st.sampled_from(['==', '!=']))} {draw(st.sampled_from(values))}"
    name = draw(st.sampled_from(ctx.bools))
    return name if draw(st.booleans()) else f"not {name}"


@st.composite
def past_expr(draw, ctx: Ctx, vars_: list[Var], depth: int = 2) -> str:
    """A bool expression with past-time operators (docs: `previous` of an int takes a var)."""
    op = draw(st.sampled_from(["once", "historically", "since", "previous", "plain"] if depth > 0 else ["plain"]))
    sub = (lambda: draw(past_expr(ctx, vars_, depth - 1))) if draw(st.booleans()) else (lambda: draw(bool_expr(ctx, 1)))
    if op == "plain":
        return draw(atom(ctx)) if ctx.ints or ctx.enums or ctx.bools else draw(bool_expr(ctx, 1))
    if op in ("once", "historically"):
        return f"{op}({sub()})"
    if op == "since":
        return f"since({sub()}, {sub()})"
    v = draw(st.sampled_from([v for v in vars_ if v.name != "g"]))
    if v.kind == "int":
        return f"previous({v.name}) {draw(st.sampled_from(CMP))} {draw(int_expr(ctx, 1))}"
    if v.kind == "enum":
        return f"previous({v.name}) {draw(st.sampled_from(['==', '!=']))} {draw(st.sampled_from(v.values))}"
    return f"previous({sub()})"


def _run_properties(draw, ctx: Ctx, vars_: list[Var]) -> dict[str, Any]:
    """Properties about runs: patterns (safety and liveness, every scope) and past-time
    operators in `always`/`reachable`."""
    out: dict[str, Any] = {}
    for k in range(draw(st.integers(0, 2))):
        out[f"pat{k}"] = _pattern(draw, draw(st.sampled_from(SAFETY)), ctx)
    for k in range(draw(st.integers(0 if out else 1, 2))):
        out[f"live{k}"] = _pattern(draw, draw(st.sampled_from(LIVENESS)), ctx)
    if draw(st.booleans()):
        key = draw(st.sampled_from(["always", "reachable"]))
        expr = draw(past_expr(ctx, vars_))
        if "(" in expr and any(f"{op}(" in expr for op in ("once", "historically", "since", "previous")):
            out["past"] = {key: expr}
    return out


def _fairness(draw, state: Ctx, actions: list[tuple[str, list[Choice]]]) -> list[dict[str, Any]]:
    """Weak and strong assumptions on the actions, some with a `when` over the state and the
    action's own choices."""
    out = []
    for _ in range(draw(st.integers(1, 2))):
        name, choices = draw(st.sampled_from(actions))
        f: dict[str, Any] = {draw(st.sampled_from(["weak", "strong"])): name}
        if draw(st.booleans()):
            f["when"] = draw(bool_expr(_stage_ctx(state, choices), 1))
        out.append(f)
    return out


@st.composite
def specs(draw, params: bool = True, allow: frozenset = frozenset(), runs: bool = False) -> RandomSpec:
    """A random valid spec. `allow` turns on paths that meet known defects on purpose:
    terminal_error, masked_error, decide_const_domain, measure_overflow, measure_error.
    `runs` adds properties about runs (patterns, past-time operators) and, in two specs of
    three, `fairness:` assumptions (compiling monitors is costly: a test of their own)."""
    p = _params(draw) if params else {}
    ghost = draw(st.integers(0, 3)) == 0
    vars_ = _vars(draw, p, ghost)
    divs = draw(st.integers(0, 3)) == 0            # // and % (the vector engine has no form for them)
    errors = divs and draw(st.booleans())          # and divisors that may be zero
    state = Ctx(params=list(p), errors=errors, divs=divs)
    for v in vars_:
        if v.name == "g":
            continue                            # the ghost is read by properties only (and maybe the terminal)
        if v.kind == "int":
            state.ints.append(v.name)
        elif v.kind == "bool":
            state.bools.append(v.name)
        else:
            state.enums.append((v.name, v.values))
    safe_state = Ctx(state.ints, state.bools, state.enums, state.params, False, state.huge, divs)
    doc: dict[str, Any] = {"machine": "random_machine"}
    if p:
        doc["params"] = p
    var_doc = {}
    for v in vars_:
        if v.kind == "int":
            var_doc[v.name] = {"type": "int", "min": v.lo, "max": int(v.hi) if v.hi.isdigit() else v.hi,
                               "init": _init(draw, v)}
        elif v.kind == "enum":
            var_doc[v.name] = {"type": "enum", "values": v.values, "init": _init(draw, v)}
        else:
            var_doc[v.name] = {"type": "bool", "init": _init(draw, v)}
    doc["vars"] = var_doc
    sets: dict[str, Any] = {}
    actions_doc = {}
    actions: list[tuple[str, list[Choice]]] = []
    rule_names: list[str] = []
    for k in range(draw(st.integers(1, 3))):
        name = f"a{k}"
        body: dict[str, Any] = {}
        if draw(st.integers(0, 3)):
            body["when"] = draw(bool_expr(state, 1))
        choices = [_choice(draw, f"c{k}{j}", p, sets) for j in range(draw(st.sampled_from([0, 1, 1, 2])))]
        if choices:
            body["choose"] = {c.name: c.raw for c in choices}
        ctx = _stage_ctx(state, choices)
        stages: list[dict] = [{"set": _set_stage(draw, vars_, ctx)}
                              for _ in range(draw(st.integers(1, 2)))]
        if draw(st.booleans()):
            stages.insert(draw(st.integers(0, len(stages))), _decide(draw, vars_, ctx, rule_names, allow))
        body["do"] = stages
        actions_doc[name] = body
        actions.append((name, choices))
    if draw(st.booleans()):             # a counter that moves on: longer runs, as real loops have
        v = draw(st.sampled_from([v for v in vars_ if v.kind == "int" and v.name != "g"]))
        body = {"when": f"{v.name} < {v.hi}", "do": [{"set": {v.name: f"{v.name} + 1"}}]}
        others = [w for w in vars_ if w.name != v.name]
        if others and draw(st.booleans()):
            w = draw(st.sampled_from(others))
            body["do"][0]["set"].update(_set_stage(draw, [w], state))
        name = f"a{len(actions)}"
        actions_doc[name] = body
        actions.append((name, []))
    flaky = None
    if runs and draw(st.booleans()):    # a call that may fail forever unless fairness says it does not
        v = draw(st.sampled_from([v for v in vars_ if v.kind == "int" and v.name != "g"]))
        flaky = f"a{len(actions)}"
        actions_doc[flaky] = {"when": f"{v.name} < {v.hi}", "choose": {"res": ["succeed", "fail"]},
                              "do": [{"set": {v.name: f"{v.name} + 1 if res == succeed else {v.name}"}}]}
        actions.append((flaky, [Choice("res", "words", ["succeed", "fail"], ["succeed", "fail"])]))
    if sets:
        doc["sets"] = sets
    doc["actions"] = actions_doc

    term_ctx = state          # with `errors`, it may fail (the reference names terminal_error)
    if ghost and draw(st.booleans()):              # issue 18: a terminal reading an ignored var
        term_ctx = Ctx(term_ctx.ints + ["g"], term_ctx.bools, term_ctx.enums, term_ctx.params, term_ctx.errors,
                       term_ctx.huge, divs)
    form = draw(st.sampled_from(["none", "pred", "when", "label", "progress", "progress"]))
    if allow & {"measure_overflow", "measure_error"}:
        form = "progress"               # measures are only added up over a graph without cycles
    enum_vars = [v for v in vars_ if v.kind == "enum"]
    if form == "progress":              # a counter reaching its top: runs that end, as real loops do
        v = draw(st.sampled_from([v for v in vars_ if v.kind == "int" and v.name != "g"]))
        extra = draw(st.sampled_from(["", f" or {draw(bool_expr(term_ctx, 1))}", f" and {draw(bool_expr(term_ctx, 1))}"]))
        doc["terminal"] = f"{v.name} >= {v.hi}{extra}"
    elif form == "pred":
        doc["terminal"] = draw(bool_expr(term_ctx, 2))
    elif form == "when":
        doc["terminal"] = {"when": draw(bool_expr(term_ctx, 1))}
    elif form == "label" and enum_vars:
        v = enum_vars[0]
        doc["terminal"] = {"label": v.name,
                           "values": draw(st.lists(st.sampled_from(v.values), min_size=1, max_size=2, unique=True))}

    counter = draw(st.sampled_from([v for v in vars_ if v.kind == "int" and v.name != "g"]))
    k = draw(st.integers(counter.lo, counter.hi_min))
    if "terminal_error" in allow:       # fails where the counter is k
        doc["terminal"] = f"7 // ({counter.name} - {k}) < -100 or ({doc.get('terminal', 'false')})" \
            if isinstance(doc.get("terminal", "false"), str) else f"7 // ({counter.name} - {k}) < -100"

    # With `errors`, a property may fail to evaluate (where it also fails: masked_error).
    prop_state = state
    props: dict[str, Any] = {}
    for k in range(draw(st.integers(0, 2))):
        props[f"inv{k}"] = {"always": draw(bool_expr(prop_state, 2))}
    step = _step_ctx(vars_, list(p), prop_state.errors, divs)
    for k in range(draw(st.integers(0, 2))):
        props[f"st{k}"] = {"step": draw(step_expr(step, actions, rule_names, True))}
    if draw(st.booleans()):
        props["reach"] = {"reachable": draw(bool_expr(prop_state, 1))}
    if draw(st.integers(0, 2)):
        props["term"] = {"terminates": True}
    if draw(st.booleans()):
        bound = draw(st.sampled_from(["0", "1", "2", "3", "5"] + [f"{q} + 1" for q in p]))
        props["within"] = {"terminates_within": int(bound) if bound.isdigit() else bound}
        if draw(st.booleans()):
            props["within"]["count"] = draw(step_expr(_step_ctx(vars_, list(p), errors, divs),
                                                      actions, rule_names, False))
    if draw(st.integers(0, 3)) == 0:
        props["rank"] = {"variant": draw(int_expr(Ctx(safe_state.ints, params=list(p), huge=False, divs=divs), 1)),
                         "bound": draw(st.sampled_from([2, 4, 8]))}
    if draw(st.integers(0, 2)) == 0 or ghost:
        ignored = "g" if ghost else draw(st.sampled_from([v.name for v in vars_]))
        props["indep"] = {"independent_of": ignored}
    if runs:
        props.update(_run_properties(draw, Ctx(safe_state.ints, safe_state.bools, safe_state.enums, list(p),
                                               divs=divs), vars_))
        if draw(st.integers(0, 2)):
            doc["fairness"] = _fairness(draw, safe_state, actions)
            if flaky and draw(st.booleans()):
                doc["fairness"].insert(0, {draw(st.sampled_from(["weak", "strong"])): flaky, "when": "res == succeed"})
    if p and props and draw(st.integers(0, 3)) == 0:
        name = draw(st.sampled_from(sorted(props)))
        q = draw(st.sampled_from(list(p)))
        props[name]["when"] = f"{q} >= {draw(st.integers(1, 3))}"
    if "masked_error" in allow:         # false where the counter passes j, fails where it is k
        j = draw(st.integers(counter.lo, k))
        props["masked"] = {"always": f"7 // ({counter.name} - {k}) > -100 and {counter.name} < {j}"}
    if props:
        doc["properties"] = props

    measures: dict[str, Any] = {}
    mctx = _step_ctx(vars_, list(p), errors, divs)
    if draw(st.booleans()):
        measures["m_count"] = {"count": draw(step_expr(mctx, actions, rule_names, False))}
    if draw(st.booleans()):
        measures["m_sum"] = {"sum": draw(int_expr(mctx, 1))}
    if "measure_error" in allow:        # fails on a transition into counter == k
        measures["m_fails"] = {"count": f"7 // (after.{counter.name} - {k}) > 0"}
    if "measure_overflow" in allow:     # 2^61 a transition: past 3 transitions an int64 total wraps
        measures["m_huge"] = {"sum": "2305843009213693951"}
    if measures:
        doc["measures"] = measures
    return RandomSpec(doc, yaml.safe_dump(doc, sort_keys=False, width=1000), allow)
