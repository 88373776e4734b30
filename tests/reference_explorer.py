"""A reference explorer for haltproof specs, written from docs/reference/spec-language.md alone.

It shares no code with haltproof: the YAML is read with `yaml.safe_load`, expressions are
evaluated by Python's own `eval` (the spec language is a subset of Python's expression
syntax, so `and`/`or` short-circuit and `//`/`%` floor exactly as the docs say), and every
number is an exact Python int. It is slow and plain on purpose: the differential tests
(tests/explorer/test_differential.py) run it next to both engines and compare what they report.

Properties about runs (patterns, past-time operators) are judged over pairs (state, history)
whose history is written plainly from the docs' tables (see `Pattern` and `Past`), and the
liveness checks under `fairness:` by its own search for fair cycles (`fair_sets`).

Where haltproof has a known defect, this explorer implements what the docs (or the issue)
say is right, and names the defect in `RefRun.defects` when a run meets it, so a test can
set the run aside until the fix is merged (see KNOWN_DEFECTS in tests/explorer/test_differential.py):

- `terminal_error`: a terminal predicate fails on a reachable state. Right: that is a
  `well_defined` violation; whether the state is terminal is unknown, so it is neither
  expanded nor counted terminal nor a deadlock (its successors would be invented).
- `masked_error`: a property's expression fails on a reachable state or transition where
  the property was already violated (or, for `reachable`, already reached). Right: every
  evaluation error on a reachable state is a `well_defined` violation, whatever else failed.
- `decide_const_domain`: a decide rule's constant `then` lies outside its int var's domain.
  Right: a `domains` violation when, and only when, the rule fires on a reachable state.
- `measure_overflow`: a sum measure with a value past 2^31 on one transition (the vector
  engine keeps per-transition values in int32) or totals that may pass 2^62 (int64 is
  not exact there); the reference's bounds are exact.
- `measure_error`: a measure's or a `count:` expression fails on a reachable transition.
  Right: a `well_defined` violation (the measure or count itself is then not computed);
  it changes nothing the exploration found, so the other properties keep their verdicts.
"""

from __future__ import annotations

import ast
import itertools
from collections import deque
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import yaml

BUILTINS = {"min": min, "max": max, "abs": abs}


class RefSpecError(Exception):
    """The spec (with these params) is invalid: haltproof must reject it with exit 2."""


class EvalFailure(Exception):
    """An expression could not be evaluated (division by zero, a missing choice, no rule)."""


class Rec(str):
    """A record choice: equal to its name, with its fields as attributes (`obs.ok`)."""


@dataclass
class RefProperty:
    name: str
    kind: str
    status: str                         # holds | violated | unknown
    length: int | None = None           # transitions in the counterexample (or witness)
    loop_start: int | None = None       # lassos: the state the cycle returns to
    trace_kind: str | None = None       # path | lasso
    longest: int | None = None          # terminates_within: the longest (counted) run
    lengths: set[int] | None = None     # well_defined: the trace lengths of the errors BFS meets first


@dataclass
class RefRun:
    params: dict[str, int]
    states: list[tuple]                 # in BFS order, as haltproof numbers them
    depth: list[int]
    transitions: int
    terminal_states: int
    properties: dict[str, RefProperty]
    bounds: dict[str, int | None]       # transitions and each measure; None: not computed
    rules: dict[str, int]               # transitions per decide rule
    labels: dict[str, int]              # terminal states per label value (label form only)
    defects: set[str] = field(default_factory=set)
    machine: Machine | None = None      # to check haltproof's traces against (is_run)
    combo: int = 0                      # which param combination, in sweep order

    @property
    def max_depth(self) -> int:
        return max(self.depth) if self.depth else 0


def _code(text: Any) -> Any:
    """A compiled expression; YAML ints and bools are constants."""
    if isinstance(text, bool) or isinstance(text, int):
        return text
    src = str(text).strip()
    try:
        return compile(src, "<ref>", "eval")
    except SyntaxError:
        return compile("(" + src + ")", "<ref>", "eval")      # a folded YAML block over lines


def _literal_int(raw: Any) -> int | None:
    """The int a YAML value or expression is when it is a bare literal (`3`, `'3'`), else None."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    try:
        node = ast.parse(str(raw).strip(), mode="eval").body
    except SyntaxError:
        return None
    return node.value if isinstance(node, ast.Constant) and type(node.value) is int else None


class Spec:
    """A spec read from YAML, as the docs describe it."""

    def __init__(self, text: str):
        doc = yaml.safe_load(text)
        self.doc = doc
        self.params = {name: self._param_values(v) for name, v in (doc.get("params") or {}).items()}
        self.sets = doc.get("sets") or {}
        self.vars = list(doc["vars"].items())          # (name, declaration) in order
        self.actions = list(doc["actions"].items())
        self.properties = list((doc.get("properties") or {}).items())
        self.measures = list((doc.get("measures") or {}).items())
        self.terminal = doc.get("terminal")
        self.literals = self._literals()

    @staticmethod
    def _param_values(v: Any) -> list[int]:
        if isinstance(v, list):
            return list(v)
        if isinstance(v, dict):
            return list(range(v["min"], v["max"] + 1))
        return [v]

    def _choice_sets(self, action: dict) -> list[tuple[str, Any]]:
        out = []
        for cname, raw in (action.get("choose") or {}).items():
            out.append((cname, self.sets[raw] if isinstance(raw, str) else raw))
        return out

    def _literals(self) -> dict[str, str]:
        """Every name usable unquoted as an enum value: var values, choice values and record
        fields, action names, rule names."""
        lits: set[str] = set()
        for _, d in self.vars:
            if d.get("type") == "enum":
                lits.update(str(v) for v in d["values"])
        for aname, a in self.actions:
            lits.add(aname)
            for _, raw in self._choice_sets(a):
                if isinstance(raw, list):
                    for item in raw:
                        if isinstance(item, dict):
                            lits.update(str(x) for x in item.values() if isinstance(x, str))
                        elif isinstance(item, str):
                            lits.add(item)
            for st in a.get("do") or []:
                for r in st.get("rules") or []:
                    lits.add(str(r["name"]))
        return {x: x for x in lits if x.isidentifier()}

    def combos(self) -> list[dict[str, int]]:
        """Every combination of param values, in haltproof's sweep order."""
        return [dict(zip(self.params, c)) for c in itertools.product(*self.params.values())]


class Machine:
    """One spec with one param combination: states, transitions and the checks on them."""

    def __init__(self, spec: Spec, params: dict[str, int]):
        self.spec = spec
        self.params = params
        self.defects: set[str] = set()
        self.globals = {"__builtins__": {}, **BUILTINS, "true": True, "false": False,
                        **spec.literals, **params}
        self.codes: dict[Any, Any] = {}
        self.names = [n for n, _ in spec.vars]
        self.kinds = [d["type"] for _, d in spec.vars]
        self.bounds: list[tuple[int, int] | None] = []
        for _, d in spec.vars:
            if d["type"] == "int":
                lo, hi = self.const(d["min"]), self.const(d["max"])
                if lo > hi:
                    raise RefSpecError(f"empty domain {lo}..{hi}")
                self.bounds.append((lo, hi))
            else:
                self.bounds.append(None)
        options = []
        for i, (name, d) in enumerate(spec.vars):
            init = d["init"]
            raw = init["one_of"] if isinstance(init, dict) else [init]
            values = [self.value(x, i, {}) for x in raw]
            if len(set(values)) != len(values):
                raise RefSpecError(f"init of {name} lists a value twice")
            if self.bounds[i] is not None and not all(self.bounds[i][0] <= v <= self.bounds[i][1] for v in values):
                raise RefSpecError(f"initial value of {name} outside its domain")
            options.append(values)
        self.inits = [tuple(c) for c in itertools.product(*options)]
        self.actions = []
        for aname, a in spec.actions:
            per_choice = []
            for cname, raw in spec._choice_sets(a):
                items = self.choice_items(raw)
                if not items:
                    raise RefSpecError(f"choice {cname} of {aname} is empty")
                per_choice.append([(cname, label, val) for label, val in items])
            combos = [tuple(c) for c in itertools.product(*per_choice)]
            self.actions.append((aname, a, combos))
            for st in a.get("do") or []:
                if "decide" in st:
                    k = self.names.index(st["decide"])
                    for r in st["rules"]:
                        then = _literal_int(r["then"])
                        if self.bounds[k] is not None and then is not None \
                                and not self.bounds[k][0] <= then <= self.bounds[k][1]:
                            self.defects.add("decide_const_domain")
        self.active = []
        for name, p in spec.properties:
            if "when" in p and not self.const(p["when"]):
                continue
            self.active.append((name, p))

    # -- evaluation
    def code(self, text: Any) -> Any:
        key = (type(text), text)
        if key not in self.codes:
            self.codes[key] = _code(text)
        return self.codes[key]

    def eval(self, text: Any, env: dict[str, Any]) -> Any:
        c = self.code(text)
        if not hasattr(c, "co_code"):
            return c
        try:
            return eval(c, self.globals, env)  # trusted text: generated and repository specs only
        except ZeroDivisionError as exc:
            raise EvalFailure(str(exc)) from None
        except NameError as exc:            # a choice the transition's action does not make
            raise EvalFailure(str(exc)) from None

    def const(self, text: Any) -> Any:
        """An expression over params only (bounds, `when` of a property)."""
        try:
            return self.eval(text, {})
        except EvalFailure as exc:
            raise RefSpecError(str(exc)) from None

    def value(self, raw: Any, var: int, env: dict[str, Any]) -> Any:
        """A value stored into var `var`: an enum value written as is, or an expression."""
        if self.kinds[var] == "enum" and isinstance(raw, str) and raw.strip() in self.spec.vars[var][1]["values"]:
            return raw.strip()
        if not env:
            try:
                return self.eval(raw, {})
            except EvalFailure as exc:
                raise RefSpecError(str(exc)) from None
        return self.eval(raw, env)

    def choice_items(self, raw: Any) -> list[tuple[Any, Any]]:
        """(label shown in traces, value seen by expressions) for each item of a choice set."""
        if isinstance(raw, dict):
            lo, hi = self.const(raw["min"]), self.const(raw["max"])
            return [(x, x) for x in range(lo, hi + 1)]
        out = []
        for item in raw:
            if isinstance(item, dict):
                rec = Rec(item["name"])
                for k, v in item.items():
                    setattr(rec, k, v)
                out.append((item["name"], rec))
            else:
                out.append((item, item))
        return out

    def state_env(self, s: tuple) -> dict[str, Any]:
        return dict(zip(self.names, s))

    def step_env(self, s: tuple, t: tuple, action: str, rule: str | None, combo: tuple) -> dict[str, Any]:
        env = {c: v for c, _, v in combo}
        env.update(before=SimpleNamespace(**self.state_env(s)), after=SimpleNamespace(**self.state_env(t)),
                   action=action, rule=rule)
        return env

    def in_domain(self, t: tuple) -> bool:
        return all(b is None or b[0] <= v <= b[1] for v, b in zip(t, self.bounds))

    def is_terminal(self, s: tuple) -> bool:
        t = self.spec.terminal
        if t is None:
            return False
        env = self.state_env(s)
        if isinstance(t, dict) and "label" in t:
            return self.eval(t["label"], env) in t["values"]
        return bool(self.eval(t["when"] if isinstance(t, dict) else t, env))

    def label(self, s: tuple) -> Any:
        return self.eval(self.spec.terminal["label"], self.state_env(s))

    def enabled(self, a: dict, s: tuple) -> bool:
        return "when" not in a or bool(self.eval(a["when"], self.state_env(s)))

    def step(self, a: dict, s: tuple, combo: tuple) -> tuple[tuple, str | None]:
        """Run an action's stages: set stages simultaneously, the decide table first match."""
        cur = list(s)
        rule = None
        choices = {c: v for c, _, v in combo}
        for st in a.get("do") or []:
            env = {**dict(zip(self.names, cur)), **choices}
            if "set" in st:
                new = {self.names.index(n): self.value(e, self.names.index(n), env) for n, e in st["set"].items()}
                for k, v in new.items():
                    cur[k] = v
            else:
                k = self.names.index(st["decide"])
                for r in st["rules"]:
                    if "when" not in r or self.eval(r["when"], env):
                        cur[k] = self.value(r["then"], k, env)
                        rule = r["name"]
                        break
                else:
                    raise EvalFailure(f"no rule of the table deciding {st['decide']} matched")
        return tuple(cur), rule

    def transitions(self, s: tuple) -> list[dict[str, Any]]:
        """Every transition from s in haltproof's order; failed ones carry `error`."""
        out = []
        for ai, (aname, a, combos) in enumerate(self.actions):
            try:
                if not self.enabled(a, s):
                    continue
            except EvalFailure as exc:
                out.append({"action": aname, "ai": ai, "guard_error": str(exc)})
                continue
            for ci, combo in enumerate(combos):
                tr = {"action": aname, "ai": ai, "ci": ci, "combo": combo,
                      "choices": {c: label for c, label, _ in combo}}
                try:
                    tr["succ"], tr["rule"] = self.step(a, s, combo)
                except EvalFailure as exc:
                    tr["error"] = str(exc)
                out.append(tr)
        return out


def explore(m: Machine) -> RefRun:
    """Breadth-first search in haltproof's order: initial states, then per state each action
    in spec order and each choice combination in declared order."""
    spec = m.spec
    states: list[tuple] = []
    index: dict[tuple, int] = {}
    depth: list[int] = []
    for s in m.inits:
        if s not in index:
            index[s] = len(states)
            states.append(s)
            depth.append(0)
    props = m.active
    invariants = [(n, p["always"]) for n, p in props if "always" in p and not has_past(p["always"])]
    reachables = [(n, p["reachable"]) for n, p in props if "reachable" in p and not has_past(p["reachable"])]
    steps = [(n, p["step"]) for n, p in props if "step" in p]
    variants = [(n, p["variant"], m.const(p["bound"])) for n, p in props if "variant" in p]
    indeps = [(n, [m.names.index(v) for v in (p["independent_of"] if isinstance(p["independent_of"], list)
                                              else [p["independent_of"]])]) for n, p in props if "independent_of" in p]
    weighted = [(n, "count", p["count"]) for n, p in props if "terminates_within" in p and "count" in p]
    weighted += [(n, "count" if "count" in ms else "sum", ms.get("count", ms.get("sum"))) for n, ms in spec.measures]

    first_bad: dict[str, int] = {}          # property -> shortest counterexample length
    # well_defined: per error, (the depth of the state BFS was expanding when it met the
    # error, the length of the trace that shows it); a state's own properties are checked
    # when the state is found, so from its parent (-1: an initial state)
    errors: list[tuple[int, int]] = []
    domain_fail: list[int] = []
    reached: dict[str, int] = {}
    failed_props: set[str] = set()          # properties whose expression failed somewhere
    edges: list[list[tuple[int, dict]]] = []
    errored: list[bool] = []
    terminal: list[bool] = []
    outcomes: list[dict] = [dict() for _ in indeps]
    indep_bad: set[str] = set()
    weight_failed: dict[str, int] = {}      # measure or count -> shortest trace to a failure
    rules: dict[str, int] = {}
    for _, a in spec.actions:
        for st in a.get("do") or []:
            for r in st.get("rules") or []:
                rules.setdefault(r["name"], 0)
    labels: dict[Any, int] = {}
    if isinstance(spec.terminal, dict) and "label" in spec.terminal:
        labels = {v: 0 for v in spec.terminal["values"]}

    def bad(name: str, length: int) -> None:
        if name not in first_bad or length < first_bad[name]:
            first_bad[name] = length

    def check_state(j: int) -> None:
        env = m.state_env(states[j])
        for name, e in invariants:
            try:
                if not m.eval(e, env):
                    bad(name, depth[j])
            except EvalFailure:
                errors.append((depth[j] - 1, depth[j]))
                failed_props.add(name)
        for name, e in reachables:
            try:
                if m.eval(e, env) and name not in reached:
                    reached[name] = depth[j]
            except EvalFailure:
                errors.append((depth[j] - 1, depth[j]))
                failed_props.add(name)

    def same(k: int, key: tuple, outcome: Any) -> None:
        first = outcomes[k].setdefault(key, outcome)
        if first != outcome:
            indep_bad.add(indeps[k][0])

    for j in range(len(states)):
        check_state(j)
    i = 0
    while i < len(states):
        s = states[i]
        d = depth[i]
        edges.append([])
        errored.append(False)
        try:
            term = m.is_terminal(s)
        except EvalFailure:
            m.defects.add("terminal_error")
            errors.append((d, d))
            errored[i] = True
            terminal.append(False)
            i += 1
            continue
        terminal.append(term)
        kept = [tuple(v for k, v in enumerate(s) if k not in ignored) for _, ignored in indeps]
        for k in range(len(indeps)):
            same(k, (kept[k], "terminal"), term)
        if term:
            if labels:
                lab = m.label(s)
                labels[lab] = labels.get(lab, 0) + 1
            i += 1
            continue
        for tr in m.transitions(s):
            if "guard_error" in tr:
                errors.append((d, d))
                errored[i] = True
                continue
            for k in range(len(indeps)):
                same(k, (kept[k], tr["ai"]), True)
            if "error" in tr:
                errors.append((d, d))
                errored[i] = True
                continue
            t = tr["succ"]
            if not m.in_domain(t):
                domain_fail.append(d + 1)
                errored[i] = True
                continue
            j = index.get(t)
            if j is None:
                j = index[t] = len(states)
                states.append(t)
                depth.append(d + 1)
                check_state(j)
            edges[i].append((j, tr))
            if tr["rule"] is not None:
                rules[tr["rule"]] = rules.get(tr["rule"], 0) + 1
            env = m.step_env(s, t, tr["action"], tr["rule"], tr["combo"])
            for name, e in steps:
                try:
                    if not m.eval(e, env):
                        bad(name, d + 1)
                except EvalFailure:
                    errors.append((d, d + 1))
                    failed_props.add(name)
            for name, e, bound in variants:
                try:
                    before, after = m.eval(e, m.state_env(s)), m.eval(e, m.state_env(t))
                except EvalFailure:
                    errors.append((d, d + 1))
                    failed_props.add(name)
                    continue
                if not before < after <= bound:
                    bad(name, d + 1)
            for name, _, e in weighted:
                try:
                    tr.setdefault("weights", {})[name] = int(m.eval(e, env))
                except EvalFailure:
                    weight_failed.setdefault(name, d + 1)
            for k, (_, ignored) in enumerate(indeps):
                projected = tuple(v for n, v in enumerate(t) if n not in ignored)
                same(k, (kept[k], tr["ai"], tr["ci"]), (projected, tr["rule"]))
        # the enabled check compares disabled actions too
        for k in range(len(indeps)):
            for ai, (_aname, a, _) in enumerate(m.actions):
                try:
                    if not m.enabled(a, s):
                        same(k, (kept[k], ai), False)
                except EvalFailure:
                    pass
        i += 1

    # a measure or count is evaluated on explored transitions only: its error breaks
    # well_defined and its own results, never what the exploration found
    exploring_errors = bool(errors)
    if weight_failed:
        m.defects.add("measure_error")
        errors.append((min(weight_failed.values()) - 1, min(weight_failed.values())))
    masked = failed_props & (set(first_bad) | set(reached))
    if masked:
        m.defects.add("masked_error")

    # -- verdicts
    why = exploring_errors or bool(domain_fail)
    out: dict[str, RefProperty] = {}
    out["domains"] = (RefProperty("domains", "builtin", "violated", min(domain_fail)) if domain_fail
                      else RefProperty("domains", "builtin", "unknown" if why else "holds"))
    first = min((at for at, _ in errors), default=None)
    out["well_defined"] = (RefProperty("well_defined", "builtin", "violated", min(n for _, n in errors),
                                       lengths={n for at, n in errors if at == first}) if errors
                           else RefProperty("well_defined", "builtin", "unknown" if why else "holds"))
    n = len(states)
    deadlock = next((k for k in range(n) if not terminal[k] and not edges[k] and not errored[k]), None)
    lasso = _lasso(edges, depth)
    order = _topological(edges)
    m.graph = (states, terminal)
    runs = _Runs(m, states, depth, edges, terminal, errored, why)
    for name, p in props:
        kind = _kind(p)
        if kind in SAFETY + LIVENESS or (kind in ("invariant", "reachable") and has_past(p[_KEYS[kind]])):
            out[name] = runs.judge(name, kind, p)
            continue
        if kind in ("invariant", "step_invariant", "variant", "independent"):
            if name in first_bad or name in indep_bad:
                out[name] = RefProperty(name, kind, "violated", first_bad.get(name))
            else:
                out[name] = RefProperty(name, kind, "unknown" if why else "holds")
        elif kind == "reachable":
            if name in reached:
                out[name] = RefProperty(name, kind, "holds", reached[name])
            else:
                out[name] = RefProperty(name, kind, "unknown" if why else "violated")
        else:
            out[name] = _termination(name, kind, p, m, deadlock, lasso, order, edges, depth, why, weight_failed)
    bounds: dict[str, int | None] = {}
    for name in ["transitions"] + [n for n, _ in spec.measures]:
        if order is None or name in weight_failed:
            bounds[name] = None
        else:
            bounds[name] = _longest(edges, order, depth, None if name == "transitions" else name)[0]
    for name, kind, _ in weighted:
        if kind == "sum" and name in bounds:
            widest = max((abs(tr.get("weights", {}).get(name, 0)) for es in edges for _, tr in es), default=0)
            if widest >= 1 << 31 or widest * sum(len(es) for es in edges) >= 1 << 62:
                m.defects.add("measure_overflow")
    return RefRun(dict(m.params), states, depth, sum(len(es) for es in edges), sum(terminal), out, bounds,
                  rules, {str(k): v for k, v in labels.items()}, set(m.defects), m)


_KEYS = {"invariant": "always", "reachable": "reachable"}


def _kind(p: dict) -> str:
    pattern = pattern_of(p)
    if pattern is not None:
        return pattern
    for key, kind in (("always", "invariant"), ("step", "step_invariant"), ("reachable", "reachable"),
                      ("terminates_within", "terminates_within"), ("terminates", "terminates"),
                      ("variant", "variant"), ("independent_of", "independent")):
        if key in p:
            return kind
    raise ValueError(p)


def _termination(name: str, kind: str, p: dict, m: Machine, deadlock: int | None, lasso: tuple | None,
                 order: list[int] | None, edges: list, depth: list[int], why: bool,
                 weight_failed: dict[str, int]) -> RefProperty:
    if deadlock is not None:
        return RefProperty(name, kind, "violated", depth[deadlock], trace_kind="path")
    if m.spec.doc.get("fairness") and kind == "terminates":
        # under fairness the engines may show any fair cycle: its trace is checked for that
        states, terminal = m.graph
        fair = fair_sets(m, edges, {k for k in range(len(edges)) if not terminal[k]}, lambda k: states[k])
        if fair:
            return RefProperty(name, kind, "violated", trace_kind="lasso")
        return RefProperty(name, kind, "unknown" if why else "holds")
    if lasso is not None:
        start, cycle = lasso
        return RefProperty(name, kind, "violated", depth[start] + cycle, depth[start], "lasso")
    if kind == "terminates":
        return RefProperty(name, kind, "unknown" if why else "holds")
    if name in weight_failed:
        return RefProperty(name, kind, "unknown")
    longest = _longest(edges, order, depth, name if "count" in p else None)[0]
    if longest > m.const(p["terminates_within"]):
        return RefProperty(name, kind, "violated", None if "count" in p else longest, trace_kind="path",
                           longest=longest)
    return RefProperty(name, kind, "unknown" if why else "holds", longest=longest)


def _lasso(edges: list[list[tuple[int, dict]]], depth: list[int]) -> tuple[int, int] | None:
    """(the shallowest, then first, state on a cycle; the length of the shortest cycle through it)."""
    n = len(edges)
    for v in sorted(range(n), key=lambda k: (depth[k], k)):
        length = _cycle_through(edges, v)
        if length is not None:
            return v, length
    return None


def _cycle_through(edges: list[list[tuple[int, dict]]], start: int) -> int | None:
    dist = {start: 0}
    queue = deque([start])
    while queue:
        v = queue.popleft()
        for d, _ in edges[v]:
            if d == start:
                return dist[v] + 1
            if d not in dist:
                dist[d] = dist[v] + 1
                queue.append(d)
    return None


def _topological(edges: list[list[tuple[int, dict]]]) -> list[int] | None:
    n = len(edges)
    indeg = [0] * n
    for es in edges:
        for d, _ in es:
            indeg[d] += 1
    queue = deque(k for k in range(n) if indeg[k] == 0)
    order = []
    while queue:
        v = queue.popleft()
        order.append(v)
        for d, _ in edges[v]:
            indeg[d] -= 1
            if indeg[d] == 0:
                queue.append(d)
    return order if len(order) == n else None


def _longest(edges: list, order: list[int], depth: list[int], measure: str | None) -> tuple[int, int]:
    """The most a run from an initial state can count (a run may stop anywhere: at least 0)."""
    best = [0] * len(edges)
    for v in reversed(order):
        top = 0
        for d, tr in edges[v]:
            w = 1 if measure is None else tr["weights"][measure]
            top = max(top, w + best[d])
        best[v] = top
    inits = [k for k in range(len(edges)) if depth[k] == 0]
    start = max(inits, key=lambda k: (best[k], -k))
    return best[start], start


def reference_runs(text: str, most: int | None = None) -> list[RefRun]:
    """Explore every param combination of the spec in `text` (at most `most` of them, evenly
    spread, each run noting its index in `combo`); raise RefSpecError if the spec is invalid."""
    spec = Spec(text)
    combos = spec.combos()
    picked = range(len(combos)) if most is None or len(combos) <= most else \
        sorted({k * (len(combos) - 1) // (most - 1) for k in range(most)})
    runs = []
    for k in picked:
        run = explore(Machine(spec, combos[k]))
        run.combo = k
        runs.append(run)
    return runs


def is_run(m: Machine, steps: list[dict], *, may_leave_domain: bool = False) -> list[dict]:
    """Check that a trace (steps as haltproof's JSON writes them) is a real run of `m`, and
    return the transition taken at each step. With `may_leave_domain`, the last step may
    go outside a domain (a `domains` counterexample)."""
    first = tuple(steps[0]["state"][n] for n in m.names)
    assert first in m.inits, f"the trace starts outside the initial states: {first}"
    taken = []
    for k, step in enumerate(steps[1:], start=1):
        prev = tuple(steps[k - 1]["state"][n] for n in m.names)
        cur = tuple(step["state"][n] for n in m.names)
        assert not m.is_terminal(prev), f"step {k} leaves a terminal state {prev}"
        matches = [tr for tr in m.transitions(prev)
                   if tr["action"] == step["action"] and tr["choices"] == (step.get("choices") or {})
                   and tr.get("succ") == cur and tr.get("rule") == step.get("rule")]
        assert matches, f"step {k} ({step}) is not a transition from {prev}"
        if not (may_leave_domain and k == len(steps) - 1):
            assert m.in_domain(cur), f"step {k} leaves the domain: {cur}"
        taken.append(matches[0])
    return taken


# ---------------------------------------------------------------- patterns, past time, fairness
#
# Judged over RUNS, from docs/reference/spec-language.md's tables, by a breadth-first search over pairs
# (state, history): the history holds what the semantics needs to know about the run so far
# (history flags, written plainly per scope below), never haltproof's monitors.

SAFETY = ("absence", "universality", "precedence", "bounded_existence")
LIVENESS = ("existence", "response")
PAST = ("once", "historically", "since", "previous")
BROKEN = "broken"


@dataclass(frozen=True)
class Hist:
    """What a pattern knows about the run so far. `inside`: within the scope's current
    stretch; `seen`: the scope has begun once (after Q) or ended (before R); `cause`: the
    precedence cause came in this stretch; `count`/`last_p`: P-blocks in this stretch and
    whether P held in the stretch's previous state; `owed`: an obligation (or a bad event a
    closing R would confirm) is open; `status`: BROKEN once the run so far breaks it for good."""

    inside: bool = False
    seen: bool = False
    cause: bool = False
    count: int = 0
    last_p: bool = False
    owed: bool = False
    status: str = ""


def pattern_of(p: dict) -> str | None:
    return next((k for k in SAFETY + LIVENESS if k in p), None)


def scope_of(p: dict) -> tuple[str, Any, Any]:
    """(scope name, Q, R) as the docs' `scope:` table reads it."""
    sc = p.get("scope") or {}
    if "between" in sc:
        return "between", sc["between"][0], sc["between"][1]
    if "after" in sc and "until" in sc:
        return "after_until", sc["after"], sc["until"]
    if "after" in sc:
        return "after", sc["after"], None
    if "before" in sc:
        return "before", None, sc["before"]
    return "global", None, None


class Pattern:
    """One pattern property, read from its declaration: `read` moves the history over one state."""

    def __init__(self, m: Machine, name: str, p: dict):
        self.m, self.name = m, name
        self.kind = pattern_of(p)
        self.scope, self.q, self.r = scope_of(p)
        body = p[self.kind]
        self.k = 0
        if self.kind in ("absence", "universality", "existence"):
            self.p, self.s = body, None
        elif self.kind == "precedence":
            self.p, self.s = body["effect"], body["cause"]
        elif self.kind == "bounded_existence":
            self.p, self.s, self.k = body["what"], None, int(body["at_most"])
        else:
            self.p, self.s = body["trigger"], body["response"]

    def truth(self, e: Any, env: dict) -> bool:
        return e is not None and bool(self.m.eval(e, env))

    def read(self, h: Hist | None, state: tuple) -> Hist:
        """The history once the run has also gone through `state` (None: before the run)."""
        if h is None:               # before the run: existence owes P from the start of a global scope
            h = Hist(inside=self.scope in ("global", "before"), owed=self.kind == "existence" and self.scope == "global")
        if h.status == BROKEN:
            return h
        env = self.m.state_env(state)
        P, S = self.truth(self.p, env), self.truth(self.s, env)
        Q, R = self.truth(self.q, env), self.truth(self.r, env)
        if self.kind in LIVENESS:
            return self._live(h, P, Q, R, S)
        return self._safety(h, P, Q, R, S)

    # -- safety: the prefix breaks the pattern for good
    def _bad(self, h: Hist, P: bool, S: bool) -> tuple[Hist, bool]:
        """Read one state inside the scope: the new history, and whether the state is a bad event."""
        if self.kind == "absence":
            return h, P
        if self.kind == "universality":
            return h, not P
        if self.kind == "precedence":
            cause = h.cause or S
            return Hist(h.inside, h.seen, cause, owed=h.owed), P and not cause
        count = h.count + (1 if P and not h.last_p else 0)
        return Hist(h.inside, h.seen, count=count, last_p=P, owed=h.owed), count > self.k

    def _safety(self, h: Hist, P: bool, Q: bool, R: bool, S: bool) -> Hist:
        sc = self.scope
        if sc == "global":
            h, bad = self._bad(h, P, S)
            return Hist(status=BROKEN) if bad else h
        if sc == "before":
            if h.seen:
                return h                                    # after the first R: out of scope
            if R:                                           # the first R: wrong if a bad event came
                return Hist(status=BROKEN) if h.owed else Hist(seen=True)
            h, bad = self._bad(h, P, S)
            return Hist(h.inside, h.seen, h.cause, h.count, h.last_p, h.owed or bad)
        if sc == "after":
            if not h.inside and Q and not h.seen:
                h = Hist(inside=True, seen=True)
            if not h.inside:
                return h
            h, bad = self._bad(h, P, S)
            return Hist(status=BROKEN) if bad else h
        # between / after_until: a stretch from a Q-state (not R) to the next R-state
        if h.inside and R:
            return Hist(status=BROKEN) if h.owed and sc == "between" else Hist()
        if Q and not R and (not h.inside or (self.kind == "precedence" and h.cause)):
            h = Hist(inside=True, owed=h.owed and h.inside)  # precedence: each Q needs its own cause
        if not h.inside:
            return h
        h, bad = self._bad(h, P, S)
        if bad and sc == "after_until":
            return Hist(status=BROKEN)
        return Hist(h.inside, h.seen, h.cause, h.count, h.last_p, h.owed or bad)

    # -- liveness: an obligation, open or not
    def _live(self, h: Hist, P: bool, Q: bool, R: bool, S: bool) -> Hist:
        sc = self.scope
        exist = self.kind == "existence"

        def answer(owed: bool) -> bool:         # the obligation after this in-scope state
            if exist:
                return owed and not P
            return False if S else (True if P else owed)

        if sc == "global":
            return Hist(inside=True, owed=answer(h.owed))
        if sc == "before":
            if h.seen:
                return h
            if R:
                owed = (not h.cause) if exist else h.owed       # existence: `cause` = P came
                return Hist(status=BROKEN) if owed else Hist(seen=True)
            if exist:
                return Hist(inside=True, cause=h.cause or P)
            return Hist(inside=True, owed=answer(h.owed))
        if sc == "after":
            if not h.seen and Q:
                h = Hist(inside=True, seen=True, owed=exist)
            if not h.inside:
                return h
            return Hist(inside=True, seen=True, owed=answer(h.owed))
        # between / after_until
        if h.inside and R:
            return Hist(status=BROKEN) if h.owed else Hist()
        if exist:
            if Q and not R and not h.owed:
                h = Hist(inside=True, owed=True)            # every Q outside an open obligation
        elif Q and not R and not h.inside:
            h = Hist(inside=True)
        if not h.inside:
            return h
        return Hist(inside=True, owed=answer(h.owed))

    def broken(self, h: Hist) -> bool:
        return h.status == BROKEN

    def open(self, h: Hist) -> bool:
        """Liveness: whether a run that ends here, or stays in such states forever, is bad."""
        if h.status == BROKEN:
            return True
        if self.scope in ("before", "between"):
            return False                        # only a closing R makes them owe anything
        return h.owed


class Past:
    """An `always` or `reachable` expression that looks back along the run (docs' past-time
    table): each operator call, innermost first, is a slot of the history, holding its value
    in the current state (and, for `previous`, its argument's value there, for the next state)."""

    def __init__(self, m: Machine, text: Any):
        self.m = m
        tree = ast.parse(str(text).strip(), mode="eval")
        self.calls: list[tuple[str, list[Any]]] = []       # (operator, compiled args reading __new)

        class Slots(ast.NodeTransformer):
            def visit_Call(inner, node: ast.Call) -> Any:    # `inner`: the transformer; `self`: the Past
                inner.generic_visit(node)
                if isinstance(node.func, ast.Name) and node.func.id in PAST:
                    args = [compile(ast.fix_missing_locations(ast.Expression(a)), "<ref>", "eval")
                            for a in node.args]
                    self.calls.append((node.func.id, args))
                    return ast.Subscript(ast.Name("__new", ast.Load()), ast.Constant(len(self.calls) - 1),
                                         ast.Load())
                return node

        top = ast.fix_missing_locations(Slots().visit(tree))
        self.top = compile(top, "<ref>", "eval")

    def read(self, h: tuple | None, state: tuple) -> tuple:
        """(values, previous' argument values) once the run has also gone through `state`."""
        env = self.m.state_env(state)
        new: list[Any] = []
        args_now: list[Any] = []
        env["__new"] = new
        for k, (op, args) in enumerate(self.calls):
            vals = [self._eval(a, env) for a in args]
            args_now.append(vals[0])
            if h is None:                       # the initial state: the table's last column
                value = vals[1] if op == "since" else vals[0]
            else:
                before, before_arg = h[0][k], h[1][k]
                if op == "once":
                    value = before or vals[0]
                elif op == "historically":
                    value = before and vals[0]
                elif op == "since":
                    value = vals[1] or (vals[0] and before)
                else:
                    value = before_arg
            new.append(value)
        return tuple(new), tuple(args_now)

    def _eval(self, code: Any, env: dict) -> Any:
        try:
            return eval(code, self.m.globals, env)      # trusted text: generated specs only
        except ZeroDivisionError as exc:
            raise EvalFailure(str(exc)) from None

    def holds(self, h: tuple, state: tuple) -> bool:
        env = self.m.state_env(state)
        env["__new"] = list(h[0])
        return bool(self._eval(self.top, env))


def has_past(text: Any) -> bool:
    return isinstance(text, str) and any(f"{op}(" in text for op in PAST)


def _product(m: Machine, starts: list[int], edges: list, reader: Any) -> tuple[list, dict, list]:
    """BFS over (state, history) pairs from the initial states: the pairs in BFS order, each
    pair's depth, and per pair its successors [(pair index, transition)]."""
    nodes: list[tuple[int, Any]] = []
    index: dict[tuple[int, Any], int] = {}
    depth: list[int] = []
    succ: list[list[tuple[int, dict]]] = []
    for i in starts:
        node = (i, reader(None, i))
        if node not in index:
            index[node] = len(nodes)
            nodes.append(node)
            depth.append(0)
    k = 0
    while k < len(nodes):
        i, h = nodes[k]
        succ.append([])
        for j, tr in edges[i]:
            node = (j, reader(h, j))
            if node not in index:
                index[node] = len(nodes)
                nodes.append(node)
                depth.append(depth[k] + 1)
            succ[k].append((index[node], tr))
        k += 1
    return nodes, depth, succ


def _reach_within(succ: list, nodes: set[int], frm: int) -> set[int]:
    seen, todo = {frm}, [frm]
    while todo:
        v = todo.pop()
        for d, _ in succ[v]:
            if d in nodes and d not in seen:
                seen.add(d)
                todo.append(d)
    return seen


def _components(succ: list, nodes: set[int]) -> list[set[int]]:
    """The strongly connected sets of `nodes` that hold a cycle (plainly: forward meets backward)."""
    pred: dict[int, list[int]] = {v: [] for v in nodes}
    for v in nodes:
        for d, _ in succ[v]:
            if d in nodes:
                pred[d].append(v)
    left, out = set(nodes), []
    while left:
        v = min(left)
        fwd = _reach_within(succ, left, v)
        bwd, todo = {v}, [v]
        while todo:
            x = todo.pop()
            for y in pred[x]:
                if y in left and y not in bwd:
                    bwd.add(y)
                    todo.append(y)
        comp = fwd & bwd
        left -= comp
        if len(comp) > 1 or any(d == v for d, _ in succ[v]):
            out.append(comp)
    return out


def fair_sets(m: Machine, succ: list, nodes: set[int], state_of: Any) -> list[set[int]]:
    """The strongly connected sets of `nodes` that hold a fair cycle, under the spec's fairness
    (docs' table): weak, the action is taken inside or disabled in one of its states; strong, it
    is taken inside or enabled in none (Emerson-Lei: a set failing a strong one loses the states
    where it is enabled, and is split again)."""
    fair = [(("strong" if "strong" in f else "weak"), f.get("strong", f.get("weak")), f.get("when"))
            for f in m.spec.doc.get("fairness") or []]

    def counts(action: str, when: Any, v: int, tr: dict) -> bool:
        if tr["action"] != action:
            return False
        if when is None:
            return True
        env = m.state_env(state_of(v))
        env.update({c: val for c, _, val in tr["combo"]})
        return bool(m.eval(when, env))

    def enabled(action: str, when: Any, v: int) -> bool:
        return any(counts(action, when, v, tr) for _, tr in succ[v])

    out, work = [], _components(succ, nodes)
    while work:
        comp = work.pop()
        verdict = True
        for strength, action, when in fair:
            taken = any(counts(action, when, v, tr) for v in comp for d, tr in succ[v] if d in comp)
            if taken:
                continue
            on = {v for v in comp if enabled(action, when, v)}
            if strength == "weak" and on == comp:
                verdict = False
                break
            if strength == "strong" and on:
                verdict = False
                work.extend(_components(succ, comp - on))
                break
        if verdict:
            out.append(comp)
    return out


def cycle_is_fair(m: Machine, cycle_states: list[tuple], cycle_trs: list[dict]) -> bool:
    """Whether going round a cycle (its states, and the transitions taken between them) forever
    is a fair run under the spec's fairness."""
    def counts(f: dict, s: tuple, tr: dict) -> bool:
        if tr["action"] != f.get("strong", f.get("weak")):
            return False
        env = m.state_env(s)
        env.update({c: val for c, _, val in tr["combo"]})
        return "when" not in f or bool(m.eval(f["when"], env))

    for f in m.spec.doc.get("fairness") or []:
        if any(counts(f, s, tr) for s, tr in zip(cycle_states, cycle_trs)):
            continue
        on = [any(counts(f, s, tr) for tr in m.transitions(s) if "succ" in tr and m.in_domain(tr["succ"]))
              for s in cycle_states]
        if ("strong" in f and any(on)) or ("weak" in f and all(on)):
            return False
    return True


class _Runs:
    """Judges the properties that speak about runs (patterns, past-time operators) on the
    explored graph, each over its own (state, history) pairs."""

    def __init__(self, m: Machine, states: list[tuple], depth: list[int], edges: list, terminal: list[bool],
                 errored: list[bool], why: bool):
        self.m, self.states, self.edges, self.why = m, states, edges, why
        self.starts = [k for k in range(len(states)) if depth[k] == 0]
        self.ends = [k < len(edges) and (terminal[k] or (not errored[k] and not edges[k])) for k in range(len(states))]
        self.expanded = len(edges)

    def _pairs(self, reader: Any) -> tuple[list, list, list]:
        edges = self.edges + [[] for _ in range(len(self.states) - len(self.edges))]
        return _product(self.m, self.starts, edges, lambda h, i: reader(h, self.states[i]))

    def judge(self, name: str, kind: str, p: dict) -> RefProperty:
        m = self.m
        if kind in ("invariant", "reachable"):
            past = Past(m, p[_KEYS[kind]])
            nodes, depth, _ = self._pairs(past.read)
            hits = [depth[k] for k, (i, h) in enumerate(nodes)
                    if past.holds(h, self.states[i]) == (kind == "reachable")]
            if kind == "reachable":
                return RefProperty(name, kind, "holds", min(hits)) if hits else \
                    RefProperty(name, kind, "unknown" if self.why else "violated")
            return RefProperty(name, kind, "violated", min(hits)) if hits else \
                RefProperty(name, kind, "unknown" if self.why else "holds")
        pat = Pattern(m, name, p)
        nodes, depth, succ = self._pairs(pat.read)
        if kind in SAFETY:
            hits = [depth[k] for k, (_, h) in enumerate(nodes) if pat.broken(h)]
            return RefProperty(name, kind, "violated", min(hits)) if hits else \
                RefProperty(name, kind, "unknown" if self.why else "holds")
        ends = [depth[k] for k, (i, h) in enumerate(nodes) if self.ends[i] and pat.open(h)]
        if ends:
            return RefProperty(name, kind, "violated", min(ends), trace_kind="path")
        cand = {k for k, (i, h) in enumerate(nodes) if i < self.expanded and not self.ends[i] and pat.open(h)}
        if fair_sets(m, succ, cand, lambda k: self.states[nodes[k][0]]):
            return RefProperty(name, kind, "violated", trace_kind="lasso")
        return RefProperty(name, kind, "unknown" if self.why else "holds")

    def history(self, name: str, p: dict, states: list[tuple]) -> list[Any]:
        """The pattern's history after each state of a run."""
        pat = Pattern(self.m, name, p)
        out, h = [], None
        for s in states:
            h = pat.read(h, s)
            out.append(h)
        return out
