"""Loading a spec's `agents:` (its sub-agents, each another spec file) and its actions' `run:`.

What a tree means, and how it becomes one machine, is machine/compose.py's; here each entry
is checked: the file exists and loads (its own problems named in it), no cycle of sub-agents
without a `depth:` bound (with one, the copies are loaded one inside the other up to it), every
param of the sub-agent bound to an expression over the parent's params, every shared var of the
same type on both sides, every sub-agent run by some action.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from . import expr as E
from .compose import (FRAME, MAX_COPIES, AgentUse, copies, copy_counter, cycle_through, done_loading, loading,
                      one_more_copy, stub)
from .errors import Problem, SpecError
from .load_scenarios import ScenariosLoader
from .specdata import ChoiceSet, ParamCheck, Spec, Var, shown_path
from .yamlpos import YMap


class AgentsLoader(ScenariosLoader):
    """The `agents:` section and the `run:` of actions."""

    uses_by_name: dict[str, AgentUse] = {}       # set by `agents`; empty in a spec without
    load_file: Callable[[Path], Spec]            # reads a sub-agent's file as the parent's was (machine/spec.py)

    def agents(self, raw: Any, line: int, own: list[Var], actions_raw: YMap) -> list[AgentUse]:
        m = self.mapping(raw, line, "agents")
        if not m:
            raise self.at(line).error("agents must name at least one sub-agent")
        if any(v.name == FRAME for v in own):
            v = next(v for v in own if v.name == FRAME)
            raise self.at(v.line).error(f"var {FRAME} is the name of the var that says which sub-agent call is "
                                        "running in a spec with agents: rename it")
        callers: dict[str, list[str]] = {}
        for aname, a in actions_raw.items():
            if isinstance(a, YMap) and "run" in a:
                callers.setdefault(str(a["run"]), []).append(str(aname))
        uses = []
        self.shared_by_agent: dict[str, dict[int, int]] = {}
        self.copies_made = copy_counter()
        for name, entry in m.items():
            use = self.attempt(self.agent, str(name), entry, m.line_of(name), own, callers.get(str(name), []))
            if use is not None:
                uses.append(use)
            if self.copies_made[0] > MAX_COPIES:      # said once: every later copy would say it again
                break
        self.uses_by_name = {u.name: u for u in uses}
        return uses

    def agent(self, name: str, entry: Any, line: int, own: list[Var], callers: list[str]) -> AgentUse:
        self.ident(name, line, "a sub-agent name")
        if name in self.params_by_name or any(v.name == name for v in own):
            raise self.at(line).error(f"sub-agent {name} has the name of a param or var of this spec")
        if isinstance(entry, str):
            entry = _short(entry, line)
        e = self.mapping(entry, line, f"sub-agent {name}")
        self.keys(e, f"sub-agent {name}", {"spec", "params", "shared", "description", "depth"}, {"spec"})
        depth = self.depth_bound(name, e["depth"], e.line_of("depth")) if "depth" in e else None
        child, level = self.child_spec(name, e["spec"], e.line_of("spec"), own, depth)
        for v in child.vars:
            if v.monitor is None and len(v.init) != 1:
                raise self.at(line).error(f"var {v.name} of sub-agent {name} ({shown_path(child.path)}:{v.line}) "
                                          "has several initial values: a sub-agent's vars start in one")
        params = self.bound_params(name, child, e.get("params", YMap()), e.line_of("params") if "params" in e
                                   else line)
        user = [j for j, v in enumerate(child.vars) if v.monitor is None]
        use = AgentUse(name, child, line, params, [-1] * len(child.vars), [], list(callers),
                       None if depth is None else depth[0], level)
        shared = self.shared(use, e.get("shared", YMap()), e.line_of("shared") if "shared" in e else line, own)
        for j, pi in shared.items():
            use.slots[j] = pi
        use.fresh = [j for j in user if j not in shared]
        if not callers:
            raise self.at(line).error(f"sub-agent {name} is declared but no action runs it (run: {name})")
        self.shared_by_agent[name] = shared
        return use

    def depth_bound(self, name: str, raw: Any, line: int) -> tuple[E.Expr, int]:
        """`depth:` of a sub-agent: an int >= 0 or an int param of this spec (never below 0), as an
        expression over the params and the most it can be."""
        if type(raw) is int and raw >= 0:
            return E.literal_expr(raw, str(raw)), raw
        p = self.params_by_name.get(raw) if isinstance(raw, str) else None
        if p is None or p.kind != "int":
            raise self.at(line).error(f"depth of sub-agent {name} must be an int >= 0 or the name of an int param "
                                      f"of this spec (params: {', '.join(self.params_by_name) or 'none'})", raw)
        lo, hi = _extremes(p.values)
        if p.within is not None:      # `-p` may give any int within
            lo, hi = min(lo, p.within[0]), max(hi, p.within[-1])
        if lo < 0:
            raise self.at(line).error(f"depth of sub-agent {name} is param {p.name}, which may be {lo} "
                                      f"({p.allowed_text()}): a depth bound is 0 or more", raw)
        return E.Expr(p.name, E.INT, ast.Name("p_" + p.name, ast.Load()), line=line), hi

    def child_spec(self, name: str, raw: Any, line: int, own: list[Var],
                   depth: tuple[E.Expr, int] | None) -> tuple[Spec, int]:
        """The sub-agent's spec, loaded inside this one, and how many copies of it enclose its call;
        past the most its depth bound allows, a stub of it (machine/compose.py)."""
        if not isinstance(raw, str) or not raw.strip():
            raise self.at(line).error(f"spec of sub-agent {name} must name a spec file", raw)
        path = Path(self.file).parent / raw
        if not path.is_file():
            raise self.at(line).error(f"sub-agent {name}: no spec file {shown_path(str(path))}", raw)
        token = loading(self.file, list(self.params_by_name.values()), own, self.copies_made)
        try:
            chain = cycle_through(path)
            if chain is not None and depth is None:
                raise self.at(line).error(
                    f"sub-agent {name} makes a cycle of sub-agents ({' -> '.join(chain)}): an agent that runs "
                    f"itself needs a depth bound: give sub-agent {name} depth: N (an int, or an int param of this "
                    f"spec), the most copies of {chain[-1]} that may run nested inside its outermost run", raw)
            level = copies(path)
            if level and not one_more_copy():
                raise self.at(line).error(
                    f"sub-agent {name}: its depth bound makes more than {MAX_COPIES} copies of the specs that run "
                    f"themselves, each part of the machine (two sub-agents of itself double them at each level): "
                    "lower the most the depth can be, or run one sub-agent twice (its calls run one after the "
                    "other, so one copy per level is enough)")
            child = stub(path) if depth is not None and level > depth[1] else self.load_file(path)
        finally:
            done_loading(token)
        why = ("is bound to code (bind:)" if child.bind else "is a framework declaration" if child.framework
               else "declares probabilities" if child.probabilities else None)
        if why:
            raise self.at(line).error(f"sub-agent {name} {why}: only a spec's own actions can run inside "
                                      "another yet", raw)
        return child, level

    def bound_params(self, name: str, child: Spec, raw: Any, line: int) -> dict[str, E.Expr]:
        m = self.mapping(raw, line, f"params of sub-agent {name}")
        declared = {p.name: p for p in child.params}
        for key in m:
            if key not in declared:
                raise self.at(m.line_of(key)).error(
                    f"sub-agent {name} has no param {key} (its params: {', '.join(declared) or 'none'})", key)
        out = {}
        enums = frozenset(v for p in child.params if p.kind == "enum" for v in p.values)
        scope = E.Scope(self.param_scope.names, self.param_scope.literals | enums)
        for p in child.params:
            if p.name not in m:
                raise self.at(line).error(
                    f"param {p.name} of sub-agent {name} ({shown_path(child.path)}:{p.line}) is not bound: give "
                    f"it under params: of sub-agent {name}, as an expression over this spec's params")
            pline = m.line_of(p.name)
            ex = E.check(m[p.name], scope, self.at(pline), what=f"param {p.name} of sub-agent {name}")
            same = ex.type == p.type if p.kind != "enum" else E.compatible(ex.type, p.type)
            if not same:
                raise self.at(pline).error(f"param {p.name} of sub-agent {name} is {p.type}, but this is {ex.type}",
                                           ex.text)
            out[p.name] = ex
        return out

    def shared(self, use: AgentUse, raw: Any, line: int, own: list[Var]) -> dict[int, int]:
        m = self.mapping(raw, line, f"shared of sub-agent {use.name}")
        child = use.spec
        out: dict[int, int] = {}
        for cname, pname in m.items():
            sline = m.line_of(cname)
            j = next((j for j, v in enumerate(child.vars) if v.name == cname and v.monitor is None), None)
            if j is None or cname == FRAME:
                raise self.at(sline).error(f"sub-agent {use.name} has no var {cname} to share", cname)
            pi = next((i for i, v in enumerate(own) if v.name == pname), None)
            if pi is None:
                raise self.at(sline).error(f"shared var {cname} of sub-agent {use.name} names no var of this spec",
                                           pname)
            if pi in out.values():
                raise self.at(sline).error(f"two vars of sub-agent {use.name} are shared as {pname}", pname)
            cv, pv = child.vars[j], own[pi]
            if cv.kind != pv.kind or (cv.kind == "enum" and set(cv.values) != set(pv.values)):
                raise self.at(sline).error(
                    f"shared var {cname} of sub-agent {use.name} is {_shape(cv)} ({shown_path(child.path)}:"
                    f"{cv.line}) but {pname} is {_shape(pv)} here: a shared var has one type", pname)
            out[j] = pi
        return out

    def run_target(self, aname: str, raw: YMap, scope: E.Scope, choices: list[tuple[str, ChoiceSet]]) -> str:
        """The sub-agent an action runs; the action's `do:` reads its vars as `NAME.var`."""
        target, line = raw["run"], raw.line_of("run")
        uses = self.uses_by_name
        if target not in uses:
            known = ", ".join(uses) or "none: declare it under agents:"
            raise self.at(line).error(f"action {aname} runs no declared sub-agent (agents: {known})", target)
        if choices:
            raise self.at(raw.line_of("choose")).error(
                f"action {aname} runs sub-agent {target} and makes choices: its do: runs when the sub-agent has "
                "ended, so make the choices in an action of their own")
        use = uses[target]
        fields: dict[str, tuple[E.Type, Callable[[], ast.expr]]] = {
            v.name: (v.type, partial(ast.Name, f"v_{use.slots[j]}", ast.Load()))
            for j, v in enumerate(use.spec.vars) if v.monitor is None}
        scope.names[str(target)] = E.Binding(None, None, fields, what=f"sub-agent {target}")
        return str(target)

    def tree_choices(self, uses: list[AgentUse]) -> None:
        """Every choice of the tree under one name: a step expression reads a choice by its name, so
        two agents may use one name only for choices of one shape."""
        for use in uses:
            for a in use.spec.actions:
                for cname, cs in a.choices:
                    prev = self.step_choices.get(cname)
                    if prev is not None and (prev.type != cs.type or prev.fields != cs.fields):
                        raise SpecError([Problem(use.file, cs.line, f"choice {cname} of sub-agent {use.name} has "
                                                 f"another shape than the choice {cname} of {shown_path(self.file)}: "
                                                 "rename one of them")])
                    self.step_choices[cname] = cs

    def agent_checks(self, uses: list[AgentUse], own: list[Var]) -> list[ParamCheck]:
        from .compose import param_checks
        out = []
        for use in uses:
            out += param_checks(use, own, self.shared_by_agent[use.name], self.file)
        return out


def _extremes(values: Sequence[int]) -> tuple[int, int]:
    """The least and the most of an int param's values (a range is never listed out)."""
    if isinstance(values, range):
        return values[0], values[-1]
    return min(values), max(values)


def _shape(v: Var) -> str:
    if v.kind == "enum":
        return "an enum {" + ", ".join(v.values) + "}"
    return "an int" if v.kind == "int" else "a bool"


def refused_with_agents(top: YMap) -> list[str]:
    """The sections a spec with agents cannot have yet."""
    return [k for k in ("bind", "scenarios", "probabilities") if k in top]



def _short(path: str, line: int) -> YMap:
    """`researcher: researcher.yaml`, as `researcher: {spec: researcher.yaml}` on the same line."""
    m = YMap({"spec": path})
    m.line, m.lines = line, {"spec": line}
    return m
