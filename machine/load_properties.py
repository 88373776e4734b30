"""Loading a spec's `properties` (patterns, past-time, liveness, probabilities and expected
values), `fairness`, `expect`, `replay` and `measures`.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable
from functools import partial
from typing import Any, cast

from . import expr as E
from .liveness import LIVENESS, obligation
from .pasttime import PastTimeMonitors, PastVar
from .patterns import PATTERNS, PHASES, MonitorVar, monitor
from .weights import BOUND_KEYS, Chance, exact_number
from .yamlpos import YList, YMap
from .specdata import (BUILTIN_PROPERTIES, DECLARED_BUILTIN, CODE_BUILTINS, present, Var, Assign, DeclKind,
                       PatternName, PropertyDecl, Fairness, Measure, n_what, negative_bound)
from .load_base import shortened
from .load_actions import ActionsLoader, choice_binding, subscript


class PropertiesLoader(ActionsLoader):
    """Loading a spec's `properties` (patterns, past-time, liveness, probabilities and expected"""

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
    # -- properties
    KINDS: dict[str, DeclKind] = {"always": "invariant", "step": "step_invariant", "reachable": "reachable",
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
        p = PropertyDecl(name, "invariant", line, description=str(m.get("description", "")),
                         pattern=cast(PatternName, key))     # key is one of PATTERNS or LIVENESS
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
                                      "or {strong: ACTION, when: EXPR}", shortened(raw))
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
                                       f"(actions: {', '.join(self.action_choices)})", shortened(action))
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
            names[v.name] = E.Binding(v.type, partial(subscript, "b", i), what=f"var {v.name}")
        for cname, cs in self.action_choices[action]:
            names[cname] = choice_binding(cname, cs)
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
            return partial(subscript, state, i) if state is not None else partial(ast.Name, f"v_{i}", ast.Load())
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
