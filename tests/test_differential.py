"""Differential test: haltproof's explorer against a tiny, independent interpreter.

Hypothesis draws small random machines (a few int vars with small ranges, maybe an enum
var, a few guarded actions with simultaneous assignments, maybe a choice, a terminal
predicate, one or two invariants and a termination property). Each machine is rendered
as YAML text for haltproof and, from the same description, explored here by a naive
breadth-first search that evaluates the very same expression strings with Python's
`eval` on a dict of values. Nothing of haltproof is reused on the naive side.

Both sides must agree on: the reachable states, the number of transitions, which
invariants hold, the length of the shortest counterexample, the built-in `domains`
property (a successor outside a declared range is never a state; it is a violation
with a shortest trace), and termination (deadlock or cycle among reachable states).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from haltproof.explorer.check import Options, check_machine
from haltproof.explorer.engine import explore
from haltproof.machine.compiled import CompiledSpec
from haltproof.machine.spec import parse_spec

ENUM_POOL = ["red", "green", "blue"]
INT_NAMES = ["x", "y", "z"]
CHOICE = "d"

# ---------------------------------------------------------------- the model drawn


@dataclass
class Model:
    ints: list[tuple[str, int, list[int]]]              # (name, hi, init options); lo is 0
    enum: tuple[str, list[str], list[str]] | None       # (name, values, init options)
    actions: list[dict]                                 # name, guard|None, choice|None, stages
    terminal: str | None
    invariants: dict[str, str] = field(default_factory=dict)

    @property
    def var_names(self) -> list[str]:
        return [n for n, _, _ in self.ints] + ([self.enum[0]] if self.enum else [])


def _int_atom(draw, ints, consts=True):
    names = [n for n, _, _ in ints]
    a = draw(st.sampled_from(names))
    op = draw(st.sampled_from(["<", "<=", ">", ">=", "==", "!="]))
    if consts or len(names) == 1 or draw(st.booleans()):
        return f"{a} {op} {draw(st.integers(0, 3))}"
    b = draw(st.sampled_from([n for n in names if n != a]))
    return f"{a} {op} {b}"


@st.composite
def _atom(draw, ints, enum):
    kinds = ["int", "int2"] + (["enum", "enum_in"] if enum else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "int":
        return _int_atom(draw, ints)
    if kind == "int2":
        return _int_atom(draw, ints, consts=False)
    name, values, _ = enum
    if kind == "enum":
        op = draw(st.sampled_from(["==", "!="]))
        return f"{name} {op} {draw(st.sampled_from(values))}"
    some = draw(st.lists(st.sampled_from(values), min_size=1, max_size=2, unique=True))
    neg = draw(st.sampled_from(["in", "not in"]))
    return f"{name} {neg} ({', '.join(some)},)" if len(some) == 1 else f"{name} {neg} ({', '.join(some)})"


@st.composite
def _pred(draw, ints, enum, joins=("and", "or")):
    """A boolean expression: one to three atoms joined by and/or, maybe negated."""
    atoms = draw(st.lists(_atom(ints, enum), min_size=1, max_size=3))
    out = atoms[0]
    for a in atoms[1:]:
        out = f"{out} {draw(st.sampled_from(joins))} {a}"
    if draw(st.integers(0, 5)) == 0:
        out = f"not ({out})"
    return out


@st.composite
def _int_value(draw, target, ints, has_choice):
    """A new value for int var `target`; some forms may leave its range (a `domains` error)."""
    names = [n for n, _, _ in ints]
    hi = next(h for n, h, _ in ints if n == target)
    other = draw(st.sampled_from(names))
    k = draw(st.integers(1, 2))
    # Mostly values that stay inside 0..hi, so that runs go on for a while ...
    safe = [f"min({target} + 1, {hi})", f"max({target} - {k}, 0)", f"min({target} + {other}, {hi})",
            f"({target} + 1) % {hi + 1}", f"{draw(st.integers(0, hi))}", f"abs({target} - {hi})",
            f"{other} if {other} <= {hi} else {target}", f"max({target}, {other}) % {hi + 1}",
            f"{target} + 1 if {target} < {hi} else 0"]
    # ... and some that may leave it.
    risky = [f"{target} + 1", f"{target} - 1", f"{target} + {k}", f"{other} - {target}",
             f"{target} + {other}", f"min({target} + {other}, 3)", f"{target} * 2", f"{other}",
             f"abs({other} - 2)", f"{draw(st.integers(0, 4))}"]
    if has_choice:
        safe += [f"min({target} + {CHOICE}, {hi})", f"max({target} - {CHOICE}, 0)",
                 f"{CHOICE} % {hi + 1}"]
        risky += [f"{target} + {CHOICE}", f"{target} - {CHOICE}", f"{CHOICE}"]
    return draw(st.sampled_from(safe if draw(st.integers(0, 3)) else risky))


@st.composite
def _enum_value(draw, enum, ints):
    name, values, _ = enum
    a, b = draw(st.sampled_from(values)), draw(st.sampled_from(values))
    forms = [a, b, name, f"{a} if {_int_atom(draw, ints)} else {b}"]
    return draw(st.sampled_from(forms))


@st.composite
def _stage(draw, ints, enum, has_choice):
    targets = [n for n, _, _ in ints] + ([enum[0]] if enum else [])
    chosen = draw(st.lists(st.sampled_from(targets), min_size=1, max_size=len(targets), unique=True))
    out = {}
    for t in chosen:
        if enum and t == enum[0]:
            out[t] = draw(_enum_value(enum, ints))
        else:
            out[t] = draw(_int_value(t, ints, has_choice))
    return out


@st.composite
def models(draw) -> Model:
    n_ints = draw(st.integers(1, 3))
    ints = []
    for name in INT_NAMES[:n_ints]:
        hi = draw(st.integers(1, 3))
        inits = draw(st.lists(st.integers(0, hi), min_size=1, max_size=2, unique=True))
        ints.append((name, hi, inits))
    enum = None
    if draw(st.booleans()):
        values = ENUM_POOL[:draw(st.integers(2, 3))]
        inits = draw(st.lists(st.sampled_from(values), min_size=1, max_size=2, unique=True))
        enum = ("e", values, inits)
    actions = []
    for k in range(draw(st.integers(1, 3))):
        guard = draw(st.none() | _pred(ints, enum))
        choice = draw(st.sampled_from([None, None, [0, 1], [1, 2], [0, 1, 2]]))
        stages = [draw(_stage(ints, enum, choice is not None))
                  for _ in range(draw(st.sampled_from([1, 1, 1, 2])))]
        actions.append({"name": f"a{k}", "guard": guard, "choice": choice, "stages": stages})
    terminal = draw(st.none() | _pred(ints, enum, joins=("and",)))
    invariants = {f"inv{k}": draw(_pred(ints, enum)) for k in range(draw(st.integers(1, 2)))}
    return Model(ints, enum, actions, terminal, invariants)


def render(m: Model) -> str:
    """The model as a haltproof YAML spec."""
    vars_ = {}
    for name, hi, inits in m.ints:
        vars_[name] = {"type": "int", "min": 0, "max": hi,
                       "init": inits[0] if len(inits) == 1 else {"one_of": inits}}
    if m.enum:
        name, values, inits = m.enum
        vars_[name] = {"type": "enum", "values": values,
                       "init": inits[0] if len(inits) == 1 else {"one_of": inits}}
    actions = {}
    for a in m.actions:
        body = {}
        if a["guard"] is not None:
            body["when"] = a["guard"]
        if a["choice"] is not None:
            body["choose"] = {CHOICE: a["choice"]}
        body["do"] = [{"set": dict(s)} for s in a["stages"]]
        actions[a["name"]] = body
    doc = {"machine": "random_machine", "vars": vars_, "actions": actions}
    if m.terminal is not None:
        doc["terminal"] = m.terminal
    props = {name: {"always": e} for name, e in m.invariants.items()}
    props["term"] = {"terminates": True}
    doc["properties"] = props
    return yaml.safe_dump(doc, sort_keys=False)


# ---------------------------------------------------------------- the naive interpreter

_FUNCS = {"__builtins__": {}, "min": min, "max": max, "abs": abs}


def _eval(expr: str, env: dict):
    return eval(expr, dict(_FUNCS), env)  # noqa: S307 - the test's own expressions only


class Naive:
    """Explores a Model by plain BFS: states are dicts, expressions are evaluated by eval."""

    def __init__(self, m: Model):
        self.m = m
        self.literals = {v: v for v in (m.enum[1] if m.enum else [])}
        self.bounds = {name: (0, hi) for name, hi, _ in m.ints}

    def env(self, state: dict, choice=None) -> dict:
        env = {**self.literals, **state}
        if choice is not None:
            env[CHOICE] = choice
        return env

    def inits(self) -> list[dict]:
        out = [{}]
        for name, _, opts in self.m.ints:
            out = [{**s, name: o} for s in out for o in opts]
        if self.m.enum:
            name, _, opts = self.m.enum
            out = [{**s, name: o} for s in out for o in opts]
        return out

    def terminal(self, s: dict) -> bool:
        return self.m.terminal is not None and bool(_eval(self.m.terminal, self.env(s)))

    def moves(self, s: dict):
        """Every (action, choices, successor) from s; successors may be out of domain."""
        if self.terminal(s):
            return
        for a in self.m.actions:
            if a["guard"] is not None and not _eval(a["guard"], self.env(s)):
                continue
            for c in (a["choice"] if a["choice"] is not None else [None]):
                t = dict(s)
                for stage in a["stages"]:
                    env = self.env(t, c)
                    new = {var: _eval(e, env) for var, e in stage.items()}   # simultaneous
                    t.update(new)
                yield a["name"], ({CHOICE: c} if c is not None else {}), t

    def in_domain(self, s: dict) -> bool:
        return all(lo <= s[n] <= hi for n, (lo, hi) in self.bounds.items())

    def explore(self):
        """BFS from all initial states at depth 0: depth, edges, out-of-domain sources."""
        depth: dict[tuple, int] = {}
        queue = deque()
        for s in self.inits():
            k = key(s)
            if k not in depth:
                depth[k] = 0
                queue.append(s)
        edges: dict[tuple, list[tuple]] = {}
        domain_fail: dict[tuple, int] = {}     # state -> depth, for states with a bad successor
        transitions = 0
        while queue:
            s = queue.popleft()
            k = key(s)
            edges[k] = []
            for _, _, t in self.moves(s):
                if not self.in_domain(t):
                    domain_fail[k] = depth[k]
                    continue
                transitions += 1
                tk = key(t)
                edges[k].append(tk)
                if tk not in depth:
                    depth[tk] = depth[k] + 1
                    queue.append(t)
        return depth, edges, domain_fail, transitions


def key(s: dict) -> tuple:
    return tuple(sorted(s.items()))


def _has_cycle_states(edges: dict[tuple, list[tuple]]) -> set[tuple]:
    """States that lie on a cycle (Tarjan-free: a state is on a cycle iff it reaches itself)."""
    on = set()
    for start in edges:
        seen, stack = set(), list(edges[start])
        while stack:
            v = stack.pop()
            if v == start:
                on.add(start)
                break
            if v in seen:
                continue
            seen.add(v)
            stack.extend(edges.get(v, []))
    return on


def _check_trace_is_a_run(naive: Naive, steps, *, last_may_leave_domain: bool) -> None:
    """Every step of a haltproof trace must be a real transition of the naive machine."""
    inits = {key(s) for s in naive.inits()}
    assert key(steps[0].state) in inits, f"trace starts outside the initial states: {steps[0].state}"
    assert steps[0].action is None
    for n, (prev, cur) in enumerate(zip(steps, steps[1:]), start=1):
        succs = [(a, c, t) for a, c, t in naive.moves(prev.state)]
        assert (cur.action, cur.choices, cur.state) in succs, (
            f"step {n} ({cur.action} {cur.choices} -> {cur.state}) is not a transition from "
            f"{prev.state}; the naive successors are {succs}")
        if n < len(steps) - 1 or not last_may_leave_domain:
            assert naive.in_domain(cur.state), f"step {n} leaves the domain: {cur.state}"


# ---------------------------------------------------------------- the test


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(models())
def test_explorer_agrees_with_naive_interpreter(m: Model):
    text = render(m)
    spec = parse_spec(text, "random_machine.yaml")
    machine = CompiledSpec(spec).instantiate({})
    ex = explore(machine)
    run = check_machine(CompiledSpec(spec).instantiate({}), Options())
    results = {p.name: p for p in run.properties}

    naive = Naive(m)
    depth, edges, domain_fail, transitions = naive.explore()

    # -- the reachable states, exactly
    got = {key(dict(zip(machine.var_names, s))) for s in ex.states}
    assert got == set(depth), (
        f"reachable states differ\nonly haltproof: {sorted(got - set(depth))}\n"
        f"only naive: {sorted(set(depth) - got)}\nspec:\n{text}")
    assert ex.complete
    assert run.stats["states"] == len(depth)
    assert run.stats["transitions"] == transitions, text
    assert run.stats["terminal_states"] == sum(naive.terminal(dict(k)) for k in depth), text
    assert run.stats["max_depth"] == max(depth.values()), text

    # -- the built-in domains property
    dom = results["domains"]
    if domain_fail:
        assert dom.status == "violated", text
        shortest = min(domain_fail.values()) + 1
        assert len(dom.trace) == shortest, f"domains trace not shortest\n{text}"
        _check_trace_is_a_run(naive, dom.trace.steps, last_may_leave_domain=True)
        assert not naive.in_domain(dom.trace.steps[-1].state), text
    else:
        assert dom.status == "holds", text
    assert results["well_defined"].status == ("unknown" if domain_fail else "holds"), text
    cut_short = bool(domain_fail)

    # -- each invariant
    for name, pred in m.invariants.items():
        bad = [d for k, d in depth.items() if not _eval(pred, naive.env(dict(k)))]
        r = results[name]
        if bad:
            assert r.status == "violated", f"{name}: {pred}\n{text}"
            assert len(r.trace) == min(bad), f"{name} trace not shortest\n{text}"
            last = r.trace.steps[-1].state
            assert not _eval(pred, naive.env(last)), f"{name}: trace ends in a good state\n{text}"
            _check_trace_is_a_run(naive, r.trace.steps, last_may_leave_domain=False)
        else:
            assert r.status == ("unknown" if cut_short else "holds"), f"{name}: {pred}\n{text}"
            assert r.trace is None

    # -- termination: a deadlock or a cycle among reachable states
    term = results["term"]
    deadlocks = {k: d for k, d in depth.items()
                 if not naive.terminal(dict(k)) and not edges[k] and k not in domain_fail}
    cyclic = _has_cycle_states(edges)
    if deadlocks or cyclic:
        assert term.status == "violated", text
        tr = term.trace
        _check_trace_is_a_run(naive, tr.steps, last_may_leave_domain=False)
        if tr.kind == "path":
            assert deadlocks, f"a path trace but no deadlock\n{text}"
            assert tr.loop_start is None
            assert key(tr.steps[-1].state) in deadlocks
            assert len(tr) == min(deadlocks.values()), f"deadlock trace not shortest\n{text}"
        else:
            assert tr.kind == "lasso"
            assert cyclic, f"a lasso but no cycle\n{text}"
            ls = tr.loop_start
            assert 0 <= ls < len(tr.steps) - 1
            assert tr.steps[-1].state == tr.steps[ls].state
            assert key(tr.steps[ls].state) in cyclic
            assert ls == min(depth[k] for k in cyclic), f"lasso prefix not shortest\n{text}"
            assert not any(naive.terminal(s.state) for s in tr.steps[ls:])
        if not deadlocks:
            assert tr.kind == "lasso"
        if not cyclic:
            assert tr.kind == "path"
    else:
        assert term.status == ("unknown" if cut_short else "holds"), text
