"""A spec as data: what a YAML machine declares, validated and type-checked.

`load_spec(path)` reads the YAML, checks every key, name, type and expression, and
returns a `Spec`. Nothing is explored here; every mistake found is raised together as
one `SpecError` whose problems name the file, the line and the offending text.

The data model lives in machine/specdata.py (its names are re-exported here); each spec
section has its own loader (machine/load_*.py), chained into `_Loader`.
"""

from __future__ import annotations

import errno
from functools import partial
import os
from pathlib import Path
from typing import Any

from . import expr as E
from .errors import Problem, SpecError
from .inputs import TooLarge, read_bounded, too_large
from .weights import ChoiceWeights, decimal_allowed, parse_probabilities
from .declarations import expand, is_declaration, stages_needed
from .trust import NO_CODE
from .spanmap import SpanMapError, SpanRule, span_rule
from .load_base import shortened
from .yamlpos import YList, YMap, load_yaml
from .specdata import (DECLARED_BUILTIN, CODE_BUILTINS, ParamValue, Pins,
                       Param, present, Var, Unreachable, ChoiceSet, Assign, SetStage, Rule,
                       DecideStage, Action, Terminal, DeclKind, PatternName, PropertyDecl, declared_at,
                       where_text, shown_path, Scenario, Spec, negative_bound)
from .load_agents import AgentsLoader, refused_with_agents
from .compose import FRAME, inline, layout, tree_fairness, tree_measures

__all__ = [    # what the rest of haltproof imports from here
    "Action", "CODE_BUILTINS", "ChoiceSet", "DECLARED_BUILTIN", "DecideStage", "DeclKind", "MAX_SPEC_BYTES",
    "Param", "ParamValue", "PatternName", "Pins", "PropertyDecl", "Rule", "Scenario", "SetStage", "Spec",
    "SpecError", "Terminal", "Unreachable", "Var", "declared_at", "load_spec", "negative_bound", "parse_spec",
    "present", "shown_path", "symlink_problem", "where_text"
]


# The largest bundled spec is 23 KB. Checking costs grow with the text (a 1 MiB expression takes
# about 25 s and 900 MB to parse, type-check and compile), so 1 MiB refuses only abuse.
MAX_SPEC_BYTES = 1024 * 1024       # docs/reference/spec-language.md, "Limits on the input"


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
        spec = _Loader(file, run_code, mode).load(declared.spec, text)
        spec.adapter, spec.framework = declared.adapter, str(data["framework"])
        spec.load_warnings = list(declared.warnings)
        return spec
    return _Loader(file, run_code, mode).load(data, text)


class _Loader(AgentsLoader):
    """The whole spec, section by section, stopping before follow-on errors."""

    def __init__(self, file: str, run_code: bool = True, mode: str = NO_CODE):
        super().__init__(file)
        self.load_file = partial(load_spec, run_code=run_code, mode=mode)   # a sub-agent: trusted as this spec

    # -- top level
    def load(self, data: Any, text: str) -> Spec:
        top = self.mapping(data, 1, "a spec")
        self.keys(top, "the spec", {"machine", "description", "params", "vars", "sets", "actions",
                                     "terminal", "properties", "scenarios", "expect", "replay", "bind",
                                     "measures", "probabilities", "fairness", "agents", "spans"},
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
        own_vars, uses = vars_, []
        if "agents" in top:       # the sub-agents' vars follow the spec's own (machine/compose.py)
            for key in refused_with_agents(top):
                self.add(top.line_of(key), f"{key} in a spec with agents: is not supported yet")
            uses = self.attempt(self.agents, top["agents"], top.line_of("agents"), vars_, actions_raw) or []
            if self.problems:
                raise SpecError(self.problems)
            vars_ = vars_ + layout(uses, vars_, top.line_of("agents"))
            self.vars_list = vars_
        # Choices first: their values become enum literals usable by every expression.
        self.action_choices: dict[str, list[tuple[str, ChoiceSet]]] = {}
        for aname, araw in actions_raw.items():
            self.attempt(self.action_choice_sets, aname, araw, actions_raw.line_of(aname))
        if self.problems:
            raise SpecError(self.problems)
        self.literals = self.collect_literals(actions_raw, top)
        self.param_scope = E.Scope(self.param_scope.names, self.literals)    # what every expression may name
        self.attempt(self.check_collisions, params, own_vars)
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
        depths: dict[str, int] = {}
        if uses and not self.problems:     # each call split in two, the sub-agents' actions added
            shared = {pi for u in uses for pi in self.shared_by_agent[u.name].values()}
            tree = self.attempt(inline, uses, actions, terminal, vars_.index(next(v for v in vars_ if v.name == FRAME)),
                                shared, self.file)
            if tree is not None:
                actions, terminal, depths = tree
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
            for cname, other in self.action_choices.get(w.action, []):
                reads = [c for c in (other.when, *other.value_when.values())
                         if c is not None and w.choice in c.choices_used]
                if cname != w.choice and reads:
                    self.add(reads[0].line or other.line, f"choice {cname} of action {w.action} is made only where its when: holds, "
                             f"which reads the weighted choice {w.choice}: a policy that decides after the draw "
                             "is not supported yet (make the condition read the state only, or weight "
                             f"{cname} too)")
        fairness = self.attempt(self.fairness, top.get("fairness", YList()), top.line_of("fairness")) or []
        checks = []
        if uses:
            fairness += tree_fairness(uses)
            own_actions = [a.name for a in actions if a.name not in depths]
            measures = self.attempt(tree_measures, uses, measures, own_actions, self.file) or []
            checks = self.attempt(self.agent_checks, uses, own_vars) or []
            self.attempt(self.tree_choices, uses)
        span_map = self.attempt(self.span_map, top["spans"], top.line_of("spans"), actions) if "spans" in top else []
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
                    expect_line=top.line_of("expect") if expect is not None else None,
                    agents=[u.name for u in uses], depths=depths, param_checks=checks, span_map=span_map or [])

    def span_map(self, raw: Any, line: int, actions: list[Action]) -> list[SpanRule]:
        """`spans:`, the span map `haltproof traces` reads plain GenAI spans through: each rule's
        action, choices and values checked against the spec here, not first met in a recording."""
        if not isinstance(raw, YList) or not raw:
            raise self.at(line).error("spans must be a list of rules ({when: {...}, action: A, choices: {...}})",
                                      shortened(raw))
        by_name = {a.name: a for a in actions}
        rules = []
        for k, item in enumerate(raw):
            at, where = raw.line_of(k), f"rule {k + 1} of spans"
            try:
                rule = span_rule(item, where)
            except SpanMapError as exc:
                self.add(at, str(exc))
                continue
            act = by_name.get(rule.action)
            if act is None:
                self.add(at, f"{where}: not an action of the spec (its actions: {', '.join(by_name)})", rule.action)
                continue
            sets = dict(act.choices)
            for name, value in rule.choices.items():
                cs = sets.get(name)
                if cs is None:
                    self.add(at, f"{where}: {name} is not a choice of action {act.name}"
                             f" (its choices: {', '.join(sets) or 'none'})")
                elif not _takes(cs, value):
                    self.add(at, f"{where}: not a value of choice {name} of action {act.name}", shortened(value))
            for name in sorted(act.always_made - set(rule.choices)):
                self.add(at, f"{where}: action {act.name} always makes choice {name}: the rule must give its value")
            rules.append(rule)
        return rules


def _takes(cs: ChoiceSet, value: Any) -> bool:
    """Whether `value` may be a value of the choice set (a range's bounds are over params: any
    int then; they are checked when a recorded event is followed)."""
    if cs.kind == "range":
        return isinstance(value, int) and not isinstance(value, bool)
    return any(value == label and isinstance(value, bool) == isinstance(label, bool) for label in cs.labels())
