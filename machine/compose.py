"""Agent trees: a spec that runs other specs as sub-agents (`agents:` and an action's `run:`).

A tree is checked as one machine. Each sub-agent is loaded on its own (its problems named
in its own file), then inlined into its parent: its vars become the parent's (prefixed
`researcher.turn`, fresh for each call unless `shared:` makes one the parent's own var), its
actions become the parent's (`researcher.search`), enabled only while a call to it is
running, and an action that runs it becomes two transitions: the call (`research`) and, once
the sub-agent reached a terminal state, the return (`research.return`) that runs the action's
`do:` on the sub-agent's end. A var `calling` says which call is running. Every engine,
property and report then works on the tree unchanged; docs/reference/spec-language.md,
"agents: sub-agents", states the semantics this gives.

A sub-agent that runs its own spec again (recursion) declares `depth:`: the copies are
unrolled, each loaded inside the one that calls it, up to the most the bound can allow for any
param value; a call is enabled only where the bound allows it for the params of the run, and
the copy one level past the most possible is a stub (the spec's own vars, no actions), whose
call is never enabled.
"""

from __future__ import annotations

import ast
import contextvars
import copy
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from . import expr as E
from .errors import Problem, SpecError
from .specdata import (Action, Assign, ChoiceSet, DecideStage, Fairness, FileLine, Measure, Param, ParamCheck,
                       Rule, SetStage, Spec, Terminal, Unreachable, Var, present, shown_path)

FRAME = "calling"          # the var saying which call of the spec's own actions is running
TOP = "top"                # its value while none is
RETURN = ".return"         # the suffix of an action's return transition


@dataclass(frozen=True)
class Loading:
    """A spec file being loaded, with what a stub of it needs (its params and own vars)."""

    path: str
    params: tuple[Param, ...]
    vars: tuple[Var, ...]
    copies: list[int]       # copies of recursive sub-agents made so far, shared by the whole stack


# The most copies of recursive sub-agents the load of one spec may unroll into. Each
# copy is part of the machine, so two sub-agents of itself double them per level: depth 5 (127
# copies of the solver with left and right halves) takes 17 s and 470 MB to load and check, 6 takes
# 51 s and 1.5 GB; one sub-agent run twice needs one copy per level (64 levels: under 2 s).
MAX_COPIES = 64


# the spec files being loaded, outermost first: a sub-agent among them closes a cycle
_LOADING: contextvars.ContextVar[tuple[Loading, ...]] = contextvars.ContextVar("haltproof_agents", default=())


@dataclass
class AgentUse:
    """One sub-agent a spec declares under `agents:`, laid out in the parent's state."""

    name: str
    spec: Spec                             # the sub-agent, itself already a flat machine
    line: int
    params: dict[str, E.Expr]              # the sub-agent's param -> an expression over the parent's params
    slots: list[int]                       # the sub-agent's var i -> its index in the parent's state
    fresh: list[int]                       # the sub-agent's vars that are its own (reset at each return)
    callers: list[str] = field(default_factory=list)    # the parent's actions that run it
    depth: E.Expr | None = None            # `depth:`: the most copies of its spec a call may nest (params only)
    level: int = 0                         # the copies of its spec that enclose a call of it, the caller's included

    @property
    def file(self) -> str:
        return self.spec.path

    @property
    def entered(self) -> E.Expr | None:
        """Where a call of it is within its depth bound (params only; None: everywhere)."""
        if self.depth is None:
            return None
        py = ast.Compare(ast.Constant(self.level), [ast.LtE()], [copy.deepcopy(self.depth.py)])
        return E.Expr(f"{self.level} <= {self.depth.text}", E.BOOL, py, line=self.line)


def copy_counter() -> list[int]:
    """The count of copies made in the load of the spec checked: a new one in that spec's loader."""
    stack = _LOADING.get()
    return stack[0].copies if stack else [0]


def loading(path: str, params: list[Param], vars_: list[Var],
            made: list[int]) -> contextvars.Token[tuple[Loading, ...]]:
    """Note that `path` is being loaded, with its params and own vars (for a stub of it) and the
    count of copies its load shares (done_loading resets the token)."""
    return _LOADING.set(_LOADING.get() + (Loading(str(Path(path).resolve()), tuple(params), tuple(vars_), made),))


def done_loading(token: contextvars.Token[tuple[Loading, ...]]) -> None:
    _LOADING.reset(token)


def cycle_through(path: Path) -> list[str] | None:
    """The chain of spec files that leads back to `path`, if it is being loaded already."""
    stack = [entry.path for entry in _LOADING.get()]
    key = str(path.resolve())
    if key not in stack:
        return None
    return [shown_path(p) for p in stack[stack.index(key):]] + [shown_path(key)]


def copies(path: Path) -> int:
    """How many copies of the spec at `path` are being loaded: those enclosing a call of it."""
    key = str(path.resolve())
    return sum(entry.path == key for entry in _LOADING.get())


def one_more_copy() -> bool:
    """Count a copy of a recursive sub-agent; False once there are more than MAX_COPIES."""
    made = _LOADING.get()[0].copies
    made[0] += 1
    return made[0] <= MAX_COPIES


def stub(path: Path) -> Spec:
    """A copy of a spec being loaded, past its depth bound: its params and own vars, which the
    caller's `do:` and the tree's layout read, and no actions (it is never entered)."""
    key = str(path.resolve())
    entry = next(e for e in _LOADING.get() if e.path == key)
    return Spec(path=str(path), name=Path(path).stem, description="", params=list(entry.params),
                vars=list(entry.vars), actions=[], terminal=None, properties=[], scenarios=[],
                expect_violated=None, replay=[], choice_names=[])


# ---------------------------------------------------------------- rewriting a sub-agent's expressions

class _Inline(ast.NodeTransformer):
    """A sub-agent's expression as the parent's: its vars at their slots, its params replaced
    by the parent's expressions bound to them, its action and rule names prefixed."""

    def __init__(self, use: AgentUse, actions: set[str], rules: set[str]):
        self.use, self.actions, self.rules = use, actions, rules

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        if isinstance(node.value, ast.Name) and node.value.id in ("s", "b", "a") \
                and isinstance(node.slice, ast.Constant) and type(node.slice.value) is int:
            return ast.Subscript(ast.Name(node.value.id, ast.Load()), ast.Constant(self.use.slots[node.slice.value]),
                                 ast.Load())
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id.startswith("v_") and node.id[2:].isdigit():
            return ast.Name(f"v_{self.use.slots[int(node.id[2:])]}", node.ctx)
        if node.id.startswith("p_") and node.id[2:] in self.use.params:
            return copy.deepcopy(self.use.params[node.id[2:]].py)
        return node

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        operands = [node.left, *node.comparators]
        for name, known in (("action", self.actions), ("rule", self.rules)):
            if any(isinstance(o, ast.Name) and o.id == name for o in operands):
                operands = [self._prefixed(o, known) for o in operands]
        node = ast.Compare(operands[0], node.ops, operands[1:])
        return self.generic_visit(node)

    def _prefixed(self, node: ast.expr, known: set[str]) -> ast.expr:
        if isinstance(node, ast.Constant) and node.value in known:
            return ast.Constant(f"{self.use.name}.{node.value}")
        if isinstance(node, ast.Tuple):
            return ast.Tuple([self._prefixed(e, known) for e in node.elts], ast.Load())
        return node


def _expr(ex: E.Expr, t: _Inline) -> E.Expr:
    return replace(ex, py=t.visit(copy.deepcopy(ex.py)), line=_at(ex.line, t.use) if ex.line else None)


def _at(line: int, use: AgentUse) -> int:
    """A sub-agent's line, kept with its file (a deeper sub-agent's lines already are)."""
    return line if isinstance(line, FileLine) or not line else FileLine(line, use.file)


def _opt(ex: E.Expr | None, t: _Inline) -> E.Expr | None:
    return None if ex is None else _expr(ex, t)


def _made(py: ast.expr, text: str, type_: E.Type = E.BOOL) -> E.Expr:
    return E.Expr(text, type_, py)


def _frame_is(frame: int, values: list[str], scope: str = "s") -> ast.expr:
    read = ast.Subscript(ast.Name(scope, ast.Load()), ast.Constant(frame), ast.Load())
    if len(values) == 1:
        return ast.Compare(read, [ast.Eq()], [ast.Constant(values[0])])
    return ast.Compare(read, [ast.In()], [ast.Tuple([ast.Constant(v) for v in values], ast.Load())])


def _and(*parts: E.Expr | None) -> E.Expr:
    given = [p for p in parts if p is not None]
    if len(given) == 1:
        return given[0]
    return E.Expr(" and ".join(f"({p.text})" for p in given), E.BOOL, ast.BoolOp(ast.And(), [p.py for p in given]))


def terminal_expr(t: Terminal | None) -> E.Expr | None:
    """A spec's terminal predicate as one boolean expression (None: no state is terminal)."""
    if t is None:
        return None
    if t.when is not None:
        return t.when
    label = present(t.label)
    py = ast.Compare(label.py, [ast.In()], [ast.Tuple([ast.Constant(v) for v in t.values], ast.Load())])
    return E.Expr(f"{label.text} in ({', '.join(map(str, t.values))})", E.BOOL, py)


def reads(py: ast.AST, indices: set[int]) -> bool:
    """Whether a state expression reads one of the vars at `indices`."""
    return any(isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id == "s"
               and isinstance(n.slice, ast.Constant) and n.slice.value in indices for n in ast.walk(py))


# ---------------------------------------------------------------- the layout of a tree's state

def layout(uses: list[AgentUse], parent_vars: list[Var], line: int) -> list[Var]:
    """The vars the sub-agents add after the parent's own: each one's fresh vars, then
    `calling` (its values: `top` and the parent's actions that run a sub-agent)."""
    out: list[Var] = []
    slot = len(parent_vars)
    for use in uses:
        for j in use.fresh:
            use.slots[j] = slot
            slot += 1
    for use in uses:
        t = _Inline(use, set(), set())
        for j in use.fresh:
            v = use.spec.vars[j]
            out.append(replace(v, name=f"{use.name}.{v.name}", lo=_opt(v.lo, t), hi=_opt(v.hi, t),
                               init=[_expr(x, t) for x in v.init], file=v.file or use.file, line=_at(v.line, use)))
    callers = [a for use in uses for a in use.callers]
    out.append(Var(FRAME, "enum", E.EnumT(frozenset([TOP, *callers]), FRAME), None, None,
                   values=(TOP, *callers), init=[E.literal_expr(TOP, TOP)], line=line, ghost=True))
    return out


# ---------------------------------------------------------------- inlining

def inline(uses: list[AgentUse], actions: list[Action], terminal: Terminal | None, frame: int,
           shared: set[int], file: str) -> tuple[list[Action], Terminal | None, dict[str, int]]:
    """The parent's actions with each call split in two and every sub-agent's actions added."""
    top = _made(_frame_is(frame, [TOP]), f"{FRAME} == {TOP}")
    out: list[Action] = []
    depths: dict[str, int] = {}
    by_name = {u.name: u for u in uses}
    for a in actions:
        guard = _and(top, a.guard)
        if a.runs is None:
            out.append(replace(a, guard=guard))
            continue
        use = by_name[a.runs]
        entered = _both(a.entered, use.entered)
        start = SetStage([Assign(frame, E.literal_expr(a.name, a.name), a.line)], a.line)
        out.append(replace(a, guard=_and(guard, use.entered), stages=[start], entered=entered))
        ended = _and(_made(_frame_is(frame, [a.name]), f"{FRAME} == {a.name}"), _sub_terminal(use))
        back = [Assign(frame, E.literal_expr(TOP, TOP), a.line)]
        reset = [Assign(use.slots[j], _init(use, j), a.line) for j in use.fresh]
        stages = [SetStage(back, a.line), *a.stages] + ([SetStage(reset, a.line)] if reset else [])
        out.append(Action(a.name + RETURN, ended, [], stages, a.line, a.file, entered=entered))
    for use in uses:
        actions_in, deeper = _sub_actions(use, frame)
        out += actions_in
        depths.update(deeper)
    if terminal is not None and reads(present(terminal_expr(terminal)).py, shared):
        if terminal.when is None:
            raise SpecError([Problem(file, terminal.line, "a terminal label that reads a var shared with a "
                                     "sub-agent is not supported yet: write terminal: {when: ...}")])
        terminal = replace(terminal, when=_and(top, terminal.when))
    return out, terminal, depths


def _both(a: E.Expr | None, b: E.Expr | None) -> E.Expr | None:
    """Two conditions that may each be absent, both."""
    return None if a is None and b is None else _and(a, b)


def _init(use: AgentUse, j: int) -> E.Expr:
    return _expr(use.spec.vars[j].init[0], _Inline(use, set(), set()))


def _sub_terminal(use: AgentUse) -> E.Expr | None:
    t = terminal_expr(use.spec.terminal)
    if t is None:       # a sub-agent that never ends: its call never returns
        return _made(ast.Constant(False), "false")
    return _expr(t, _names(use))


def _names(use: AgentUse) -> _Inline:
    spec = use.spec
    rules = {r.name for a in spec.actions if a.decide is not None for r in a.decide.rules}
    return _Inline(use, {a.name for a in spec.actions}, rules)


def _sub_actions(use: AgentUse, frame: int) -> tuple[list[Action], dict[str, int]]:
    """The sub-agent's actions as the parent's: enabled while a call to it runs and it has not ended."""
    t = _names(use)
    running = _made(_frame_is(frame, use.callers), f"{FRAME} in ({', '.join(use.callers)})")
    end = _sub_terminal(use)
    not_ended = _made(ast.UnaryOp(ast.Not(), present(end).py), f"not ({present(end).text})")
    out = []
    depths = {}
    for a in use.spec.actions:
        name = f"{use.name}.{a.name}"
        depths[name] = use.spec.depths.get(a.name, 0) + 1
        stages: list[SetStage | DecideStage] = []
        for st in a.stages:
            if isinstance(st, SetStage):
                if not st.monitor:
                    stages.append(SetStage([Assign(use.slots[x.var], _expr(x.value, t), _at(x.line, use))
                                            for x in st.assigns], _at(st.line, use)))
            else:
                stages.append(DecideStage(use.slots[st.var], [_rule(r, use, t) for r in st.rules],
                                          _at(st.line, use)))
        choices = [(c, _choice(cs, use, t)) for c, cs in a.choices]
        out.append(Action(name, _and(running, not_ended, _opt(a.guard, t)), choices, stages, _at(a.line, use),
                          a.file or use.file, unreachable=_unreachable(a.unreachable, t),
                          runs=f"{use.name}.{a.runs}" if a.runs else None,
                          entered=_both(use.entered, _opt(a.entered, t))))
    return out, depths


def _rule(r: Rule, use: AgentUse, t: _Inline) -> Rule:
    return Rule(f"{use.name}.{r.name}", _opt(r.when, t), _expr(r.then, t), _at(r.line, use), r.file or use.file,
                _unreachable(r.unreachable, t))


def _unreachable(u: Unreachable | None, t: _Inline) -> Unreachable | None:
    return None if u is None else replace(u, when=_expr(u.when, t))


def _choice(cs: ChoiceSet, use: AgentUse, t: _Inline) -> ChoiceSet:
    return replace(cs, lo=_opt(cs.lo, t), hi=_opt(cs.hi, t), when=_opt(cs.when, t), file=cs.file or use.file,
                   line=_at(cs.line, use),
                   value_when={k: _expr(v, t) for k, v in cs.value_when.items()},
                   value_unreachable={k: present(_unreachable(u, t)) for k, u in cs.value_unreachable.items()})


def tree_fairness(uses: list[AgentUse]) -> list[Fairness]:
    """Each sub-agent's fairness assumptions, about its actions in the tree."""
    out = []
    for use in uses:
        t = _names(use)
        out += [replace(f, action=f"{use.name}.{f.action}", when=_opt(f.when, t), line=_at(f.line, use))
                for f in use.spec.fairness]
    return out


def tree_measures(uses: list[AgentUse], own: list[Measure], own_actions: list[str], file: str) -> list[Measure]:
    """Measures over the whole tree: each counted on the transitions of the agent that declares
    it; a sub-agent's measure adds to the parent's of the same name, or is reported as
    `researcher.NAME` when the parent declares none."""
    terms: dict[str, list[tuple[list[str], E.Expr, Measure]]] = {}
    order: list[str] = []
    for ms in own:
        terms.setdefault(ms.name, []).append((own_actions, ms.expr, ms))
        order.append(ms.name)
    for use in uses:
        t = _names(use)
        names = [f"{use.name}.{a.name}" for a in use.spec.actions]
        for ms in use.spec.measures:
            key = ms.name if ms.name in terms and not ms.name.startswith(tuple(u.name + "." for u in uses)) \
                else f"{use.name}.{ms.name}"
            if key in terms and terms[key][0][2].kind != ms.kind:
                first = terms[key][0][2]
                raise SpecError([Problem(use.file, ms.line, f"measure {ms.name} is a {ms.kind} here but a "
                                         f"{first.kind} in {shown_path(file)} (line {first.line}): a measure "
                                         "adds up across the tree only with one kind")])
            if key not in terms:
                order.append(key)
            terms.setdefault(key, []).append((names, _expr(ms.expr, t), ms))
    out = []
    for key in order:
        first = terms[key][0][2]
        zero: ast.expr = ast.Constant(False if first.kind == "count" else 0)
        py = zero
        for names, ex, _ in reversed(terms[key]):
            test = ast.Compare(ast.Name("action", ast.Load()), [ast.In()],
                               [ast.Tuple([ast.Constant(n) for n in names], ast.Load())])
            py = ast.IfExp(test, ex.py, py)
        text = " + ".join(ex.text for _, ex, _ in terms[key])
        out.append(Measure(key, first.kind, E.Expr(text, first.expr.type, py, line=first.expr.line),
                           first.line, first.description))
    return out


def param_checks(use: AgentUse, parent: list[Var], shared: dict[int, int], file: str) -> list[ParamCheck]:
    """What can be judged only for a combination of the parent's params: each bound param within
    the sub-agent's declared values, each shared var of the same range on both sides."""
    entered = use.entered
    out = []
    for p in use.spec.params:
        ex = use.params[p.name]
        out.append(ParamCheck(ex, file, use.line, f"param {p.name} of sub-agent {use.name} is bound to {ex.text} = "
                              f"{{}}, which {shown_path(use.file)} does not allow ({p.allowed_text()})", p, entered))
    t = _Inline(use, set(), set())
    for c in use.spec.param_checks:       # its own sub-agents', judged on the params this tree gives it
        out.append(replace(c, expr=_expr(c.expr, t), entered=_both(entered, _opt(c.entered, t))))
    for j, pi in shared.items():
        v, pv = use.spec.vars[j], parent[pi]
        if v.kind != "int":
            continue
        pair = ast.Tuple([present(_opt(v.lo, t)).py, present(_opt(v.hi, t)).py,
                          present(pv.lo).py, present(pv.hi).py], ast.Load())
        out.append(ParamCheck(E.Expr("range", E.INT, pair), file, use.line, f"shared var {v.name} of sub-agent {use.name} has the range {{0}}..{{1}} "
                              f"there but {pv.name} has {{2}}..{{3}} here: a shared var has one range",
                              entered=entered))
    return out


def running_call(spec: Spec, state: dict[str, Any]) -> str | None:
    """The innermost call running in a state of a tree, as findings name it (`sub-agent
    mid.helper, run by mid.delegate`), or None where no call runs."""
    prefix, found = "", None
    while state.get(prefix + FRAME, TOP) != TOP:
        caller = prefix + str(state[prefix + FRAME])
        action = spec.action(caller)
        if action is None or action.runs is None:
            break
        found = f"sub-agent {action.runs}, run by {caller}"
        prefix = action.runs + "."
    return found
