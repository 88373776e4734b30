"""Loading a spec's actions: the names every expression may read (scopes), each action's
guard, choices, `set` and `decide` stages and raised outcomes, and the `terminal` block.
"""

from __future__ import annotations

import ast
import keyword
from collections.abc import Callable
from functools import partial
from typing import Any

from . import expr as E
from .outcomes import Outcome, VarShape, parse_raises
from .yamlpos import YList, YMap
from .specdata import (Param, present, Var, Unreachable, ChoiceSet, Assign, SetStage, Rule, DecideStage, Action,
                       Terminal)
from .load_choices import ChoicesLoader


class ActionsLoader(ChoicesLoader):
    """Loading a spec's actions: the names every expression may read (scopes), each action's"""

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
            names[v.name] = E.Binding(v.type, partial(subscript, "s", i), what=f"var {v.name}")
        return E.Scope(names, self.literals)
    def action_scope(self, choices: list[tuple[str, ChoiceSet]]) -> E.Scope:
        names = {p: b for p, b in self.param_scope.names.items()}
        for i, v in enumerate(self.vars_list):
            names[v.name] = E.Binding(v.type, partial(ast.Name, f"v_{i}", ast.Load()),
                                      what=f"var {v.name}")
        for cname, cs in choices:
            names[cname] = choice_binding(cname, cs)
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
            fields: dict[str, tuple[E.Type, Callable[[], ast.expr]]] = {v.name: (v.type, partial(subscript, prefix, i))
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
            b = choice_binding(cname, cs)
            if cname in clash:
                b.refuse = f"choice {cname} has different shapes in different actions"
            names[cname] = b
        names["action"] = E.Binding(E.EnumT(frozenset(self.all_actions), "action"),
                                    lambda: ast.Name("action", ast.Load()), what="action")
        names["rule"] = E.Binding(E.EnumT(self.rule_names, "rule"),
                                  lambda: ast.Name("rule", ast.Load()), what="rule")
        return E.Scope(names, self.literals)
    def run_target(self, aname: str, raw: YMap, scope: E.Scope, choices: list[tuple[str, ChoiceSet]]) -> str:
        """The sub-agent an action runs (machine/load_agents.py)."""
        raise self.at(raw.line_of("run")).error(f"action {aname} runs a sub-agent, but the spec has no agents:")
    # -- actions
    def action(self, name: str, raw: YMap, line: int) -> Action:
        choices = self.action_choices[name]
        scope = self.action_scope(choices)
        guard = None
        if "when" in raw:
            guard = self.bool_expr(raw["when"], self.state_scope, raw.line_of("when"), f"guard of {name}")
        for j in range(len(choices)):
            self.choice_whens(name, choices, j)
        runs = self.run_target(name, raw, scope, choices) if "run" in raw else None
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
                      unreachable=self.unreachable(raw, f"action {name}"), runs=runs)
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


def subscript(name: str, i: int) -> ast.expr:
    return ast.Subscript(ast.Name(name, ast.Load()), ast.Constant(i), ast.Load())


def choice_binding(cname: str, cs: ChoiceSet) -> E.Binding:
    var = "c_" + cname
    if cs.kind == "records":
        fields: dict[str, tuple[E.Type, Callable[[], ast.expr]]] = {
            f: (t, partial(subscript, var, k)) for f, (t, k) in cs.fields.items()}
        fields["name"] = (cs.type, lambda: subscript(var, 0))
        return E.Binding(cs.type, lambda: subscript(var, 0), fields, what=f"choice {cname}")
    return E.Binding(cs.type, lambda: subscript(var, 0), what=f"choice {cname}")
