"""The scalar engine's breadth-first loop, generated for one spec as a Python AST.

Why: per state and per transition the loop then runs the spec's own expressions inline on
local variables: no call, no unpacking per action, and nothing stored per edge but the
successor's index. The loop is one function `sweep(_x)` built from `ast` nodes (never from
text), compiled by machine/compiled.py the first time it runs, and run by the engine on a
`SweepTarget`: the public interface, defined here, through which the loop stores what it
finds and hands every unusual event to the engine's slow paths, which make the findings.

Each statement gets a line number of its own; those that evaluate a spec expression whose
error is a finding map back to that expression's spec line (`generate_sweep`'s origin map,
used by compiled.spec_line).
"""

from __future__ import annotations

import ast
import copy
from collections.abc import MutableSequence, Sequence
from typing import Any, Protocol, TypeAlias

from . import astgen as A
from .fold import can_fail
from .spec import Action, DecideStage, PropertyDecl, Rule, SetStage, Spec, present

SWEEP_KINDS = ("invariant", "reachable", "step_invariant", "variant")   # checked inside the loop

# What the loop returns: the number of states expanded, whether every edge led exactly one
# level deeper, the first state of the level after the one it was expanding, and per
# (action, rule) the number of transitions that fired.
SweepResult: TypeAlias = tuple[int, bool, int, tuple[tuple[int, str | None, int], ...]]


class SweepTarget(Protocol):
    """What the generated loop runs against (explorer/engine.py implements it).

    The loop appends to `states`, `index` (state -> number), `parent`, `e_dst`, `edge_start`,
    `terminal` and `starts` (the first state of each BFS level) and counts terminal labels
    in `label_counts`. Every unusual event goes to a slow path, which makes the findings:
    an expression that fails (`terminal_error`, `guard_error`, `step_error`), a new
    successor outside its domain (`domain_fail`), or a property that does not plainly hold
    or cannot be evaluated (`check_state`, `check_step`). After a slow path `live()` says
    again which properties are still judged and which failed ones are still evaluated."""

    stopped_by: str | None            # set to "max_states" when the loop stops at that bound

    @property
    def states(self) -> list[tuple[Any, ...]]: ...
    @property
    def index(self) -> dict[tuple[Any, ...], int]: ...
    @property
    def parent(self) -> MutableSequence[int]: ...
    @property
    def e_dst(self) -> MutableSequence[int]: ...
    @property
    def edge_start(self) -> MutableSequence[int]: ...
    @property
    def terminal(self) -> MutableSequence[int]: ...
    @property
    def starts(self) -> list[int]: ...
    @property
    def label_counts(self) -> dict[Any, int]: ...
    @property
    def combos(self) -> Sequence[Sequence[tuple[Any, ...]]]: ...
    @property
    def max_states(self) -> int: ...
    @property
    def ticking(self) -> bool: ...

    def live(self) -> tuple[bool, ...]:
        """Per property of SWEEP_KINDS (spec order) whether it is still judged, then per
        property whether it is still evaluated only for its evaluation errors."""
    def tick(self, i: int, depth: int) -> bool:
        """Called every 256 states when `ticking`: True stops the loop."""
    def missing(self, action: int, choice: str) -> object:
        """What a step property reads for a choice action `action` does not make."""
    def bound(self, k: int) -> int:
        """The bound of variant property k (spec order)."""
    def interrupted(self, exc: BaseException) -> None:
        """Memory or the user's deadline ran out in the middle of a state."""
    def terminal_error(self, i: int, exc: Exception) -> None: ...
    def guard_error(self, i: int, action: int, exc: Exception) -> bool: ...
    def step_error(self, i: int, action: int, ci: int, exc: Exception) -> None: ...
    def domain_fail(self, i: int, action: int, ci: int, rule: str | None, t: tuple[Any, ...]) -> None: ...
    def check_state(self, j: int, t: tuple[Any, ...]) -> None: ...
    def check_step(self, i: int, action: int, ci: int, rule: str | None, t: tuple[Any, ...]) -> None: ...


def generate_sweep(spec: Spec) -> tuple[ast.Module, dict[int, int]]:
    """The loop for `spec` as a module defining `sweep(_x)` (run in the namespace of the
    spec's compiled module, whose globals its defaults bind), and per line of it that
    evaluates a spec expression whose error is a finding, the spec line."""
    builder = _SweepBuilder(spec)
    fn = builder.function()
    module = ast.Module(body=[fn], type_ignores=[])
    return module, A.number_lines(module, builder.lines)


def _made(action: Action) -> set[str]:
    return {c for c, _ in action.choices}


# ---------------------------------------------------------------- the loop

class _SweepBuilder:
    """Builds `sweep(_x)` for one spec; `lines` notes the spec line of each node that
    evaluates a spec expression."""

    def __init__(self, spec: Spec):
        self.spec = spec
        self.n = len(spec.vars)
        self.V: list[ast.expr] = [A.load(f"v_{i}") for i in range(self.n)]
        self.checked = [(k, p) for k, p in enumerate(spec.properties) if p.kind in SWEEP_KINDS]
        self.steps_checked = any(p.kind in ("step_invariant", "variant") for _, p in self.checked)
        self.counters: list[tuple[int, str | None, str]] = []
        self.lines = A.Lines()
        self.at = self.lines.at

    def refresh(self) -> ast.Assign:
        """`_f{k}, ..., _w{k}, ... = _x.live()`: _f{k}, property k is still judged; _w{k}, it
        is only evaluated, for evaluation errors."""
        names = [f"_f{k}" for k, _ in self.checked] + [f"_w{k}" for k, _ in self.checked]
        return A.assign(A.names(names, ast.Store()), A.call(A.attr("_x", "live")))

    # ------------------------------------------------------------ property checks

    def watch(self, k: int, p: PropertyDecl, codes: list[ast.expr], action: Action | None = None) -> list[ast.expr]:
        """For a property that may fail to evaluate (in `action`'s steps): evaluate the codes
        and ignore their values (a tuple is true, so the part is false); only an evaluation
        error, caught by `check`, takes the slow path. Nothing for one that cannot fail."""
        made = [] if action is None else [(action.name, action.always_made)]
        if not can_fail(present(p.expr), made):
            return []
        return [A.all_of(A.load(f"_w{k}"), A.tuple_of([copy.deepcopy(c) for c in codes]), A.const(False))]

    def check(self, parts: list[ast.expr], slow: ast.stmt) -> list[ast.stmt]:
        """`_bad = any part` (an evaluation error counts as bad); if bad, the slow path."""
        bad = parts[0] if len(parts) == 1 else ast.BoolOp(ast.Or(), parts)
        return [A.try_except([A.assign("_bad", bad)], "_ERR", [A.assign("_bad", A.const(True))]),
                ast.If(A.load("_bad"), [slow, self.refresh()], [])]

    def state_check(self, mapping: list[ast.expr]) -> list[ast.stmt]:
        parts: list[ast.expr] = []
        for k, p in self.checked:
            if p.kind in ("invariant", "reachable"):
                code = A.inline(present(p.expr), {"s": mapping})
                parts.append(A.all_of(A.load(f"_f{k}"), A.negate(code) if p.kind == "invariant" else code))
                parts += self.watch(k, p, [code])
        if not parts:
            return []
        return self.check(parts, A.method("_x", "check_state", A.load("_j"), A.load("_t")))

    def step_check(self, k: int, a: Action, mapping: list[ast.expr], rule: str | None,
                   ci: ast.expr) -> list[ast.stmt]:
        own = _made(a)
        names: dict[str, ast.expr] = {"action": A.const(a.name), "rule": A.const(rule)}
        names.update({f"c_{c}": A.load(f"_miss_{k}_{c}") for c in self.spec.choice_names if c not in own})
        parts: list[ast.expr] = []
        for pk, p in self.checked:
            if p.kind == "step_invariant":
                code = A.inline(present(p.expr), {"b": self.V, "a": mapping}, names)
                parts += [A.all_of(A.load(f"_f{pk}"), A.negate(code)), *self.watch(pk, p, [code], a)]
            elif p.kind == "variant":      # holds when it strictly increases and stays within its bound
                before = A.inline(present(p.expr), {"s": self.V})
                after = A.inline(present(p.expr), {"s": mapping})
                rises = ast.Compare(before, [ast.Lt(), ast.LtE()], [after, A.load(f"_vb{pk}")])
                parts += [A.all_of(A.load(f"_f{pk}"), A.negate(rises)), *self.watch(pk, p, [before, after])]
        if not parts:
            return []
        slow = A.method("_x", "check_step", A.load("_i"), A.const(k), copy.deepcopy(ci), A.const(rule), A.load("_t"))
        return self.check(parts, slow)

    # ------------------------------------------------------------ one transition

    def counted_edge(self, counter: str) -> list[ast.stmt]:
        return [ast.Expr(A.call(A.load("_e_add"), A.load("_j"))), A.incr(counter)]

    def commit(self, k: int, a: Action, mapping: list[ast.expr], rule: str | None, ci: ast.expr) -> list[ast.stmt]:
        """The successor is complete: find or add it, record the edge, count its rule."""
        counter = f"_c{len(self.counters)}"
        self.counters.append((k, rule, counter))
        # only an int var the action assigned can leave its domain; a decided constant may
        # lie outside it too (a `domains` violation when its rule fires)
        ranges: list[ast.expr] = [
            ast.Compare(A.load(f"dlo_{i}"), [ast.LtE(), ast.LtE()], [copy.deepcopy(x), A.load(f"dhi_{i}")])
            for i, x in enumerate(mapping)
            if self.spec.vars[i].kind == "int"
            and (isinstance(x, ast.Constant) or isinstance(x, ast.Name) and x.id.startswith("u_"))]
        new: list[ast.stmt] = [A.incr("_n"), ast.Expr(A.call(A.load("_st_add"), A.load("_t"))),
                               ast.Expr(A.call(A.load("_par_add"), A.load("_i"))),
                               *self.state_check(mapping), *self.counted_edge(counter),
                               *self.step_check(k, a, mapping, rule, ci)]
        if ranges:
            outside: list[ast.stmt] = [
                ast.Delete([ast.Subscript(A.load("_index"), A.load("_t"), ast.Del())]),   # it is no state
                A.method("_x", "domain_fail", A.load("_i"), A.const(k), copy.deepcopy(ci), A.const(rule), A.load("_t"))]
            inside = ranges[0] if len(ranges) == 1 else A.all_of(*ranges)
            new = [ast.If(inside, new, outside)]
        known: list[ast.stmt] = [
            ast.If(ast.Compare(A.load("_j"), [ast.Lt()], [A.load("_next")]), [A.assign("_fwd", A.const(False))], []),
            *self.counted_edge(counter), *self.step_check(k, a, mapping, rule, ci)]
        return [A.assign("_t", A.tuple_of([copy.deepcopy(x) for x in mapping])),
                A.assign("_j", A.call(A.load("_add"), A.load("_t"), A.load("_n"))),   # one hash: a new state is added at once
                ast.If(ast.Compare(A.load("_j"), [ast.Eq()], [A.load("_n")]), new, known)]

    def stages(self, k: int, a: Action, idx: int, mapping: list[ast.expr], rule: str | None,
               ci: ast.expr) -> list[ast.stmt]:
        """The stages of action `a` from `idx` on, then the commit of the successor."""
        if idx == len(a.stages):
            return self.commit(k, a, mapping, rule, ci)
        st = a.stages[idx]
        current = {f"v_{i}": x for i, x in enumerate(mapping)}
        if isinstance(st, SetStage):
            if not st.assigns:
                return self.stages(k, a, idx + 1, mapping, rule, ci)
            mapping = list(mapping)
            code = self.set_stage(st, current)
            for x in st.assigns:
                mapping[x.var] = A.load(f"u_{x.var}")
            return [code, *self.stages(k, a, idx + 1, mapping, rule, ci)]
        return self.rules(k, a, idx, st, 0, mapping, ci, current)

    def set_stage(self, st: SetStage, current: dict[str, ast.expr]) -> ast.stmt:
        """A set stage as one simultaneous assignment (every right side sees the values
        before the stage); each right side is named by its own spec line."""
        lines = [x.value.line or x.line or st.line for x in st.assigns]
        values = [self.at(A.inline(x.value, {}, current), line) for x, line in zip(st.assigns, lines)]
        if len(st.assigns) == 1:
            return self.at(A.assign(f"u_{st.assigns[0].var}", values[0]), lines[0])
        targets = A.names([f"u_{x.var}" for x in st.assigns], ast.Store())
        return self.at(A.assign(targets, A.tuple_of(values)), st.line)

    def rules(self, k: int, a: Action, idx: int, st: DecideStage, pos: int, mapping: list[ast.expr],
              ci: ast.expr, current: dict[str, ast.expr]) -> list[ast.stmt]:
        """Rules `pos`.. of a decide stage: the first that matches wins; each goes on on its own."""
        if pos == len(st.rules):
            no_rule = A.call(A.load("_NoRule"), A.const(a.name), A.const(self.spec.vars[st.var].name))
            return [self.at(ast.Raise(no_rule, None), st.line)]
        r = st.rules[pos]
        body = self.rule_body(k, a, idx, st, r, mapping, ci, current)
        if r.when is None:
            return body
        test = A.inline(r.when, {}, current)
        rest = self.rules(k, a, idx, st, pos + 1, mapping, ci, current)
        return [self.at(ast.If(test, body, rest), r.when.line or r.line)]

    def rule_body(self, k: int, a: Action, idx: int, st: DecideStage, r: Rule, mapping: list[ast.expr],
                  ci: ast.expr, current: dict[str, ast.expr]) -> list[ast.stmt]:
        decided = list(mapping)
        code: list[ast.stmt] = []
        if isinstance(r.then.py, ast.Constant):
            decided[st.var] = A.const(r.then.py.value)
        else:
            code.append(self.at(A.assign(f"u_{st.var}", A.inline(r.then, {}, current)), r.then.line or r.line))
            decided[st.var] = A.load(f"u_{st.var}")
        return code + self.stages(k, a, idx + 1, decided, r.name, ci)

    # ------------------------------------------------------------ one state

    def terminal(self) -> list[ast.stmt]:
        """Whether the state is terminal; a terminal state is counted and not expanded."""
        t = self.spec.terminal
        if t is None:
            return []
        if t.when is not None:
            test: list[ast.stmt] = [self.at(A.assign("_term", A.inline(t.when, {"s": self.V})), t.when.line or t.line)]
        else:
            label = present(t.label)
            values = A.tuple_of([A.const(v) for v in t.values])
            test = [self.at(A.assign("_lab", A.inline(label, {"s": self.V})), label.line or t.line),
                    A.assign("_term", ast.Compare(A.load("_lab"), [ast.In()], [values]))]
        failed: list[ast.stmt] = [   # not expanded: where runs end is unknown here
            A.method("_x", "terminal_error", A.load("_i"), A.load("_exc")),
            ast.Expr(A.call(A.load("_term_add"), A.const(0))), A.incr("_i"), ast.Continue()]
        ends: list[ast.stmt] = [ast.Expr(A.call(A.load("_term_add"), A.const(1)))]
        if t.when is None:
            count = A.call(ast.Attribute(A.load("_labels"), "get", ast.Load()), A.load("_lab"), A.const(0))
            ends.append(A.assign(ast.Subscript(A.load("_labels"), A.load("_lab"), ast.Store()),
                                ast.BinOp(count, ast.Add(), A.const(1))))
        ends += [A.incr("_i"), ast.Continue()]
        return [A.try_except(test, "_ERR", failed, "_exc"), ast.If(A.load("_term"), ends, [])]

    def actions(self) -> list[ast.stmt]:
        """Every action's transitions from the state, behind its guard."""
        out: list[ast.stmt] = []
        guards: dict[str, str] = {}          # a guard's code -> the local holding its value for this state
        for k, a in enumerate(self.spec.actions):
            body = self.action(k, a)
            if a.guard is None:
                out += body
                continue
            code = A.inline(a.guard, {"s": self.V})
            key = ast.dump(code)
            if key not in guards:
                # an action with the same guard reads its value: had it failed, the finding
                # (the first one wins) and the failed state would be the same again
                guards[key] = f"_g{k}"
                error = A.call(A.attr("_x", "guard_error"), A.load("_i"), A.const(k), A.load("_exc"))
                out.append(A.try_except([self.at(A.assign(f"_g{k}", code), a.guard.line or a.line)],
                                "_ERR", [A.assign(f"_g{k}", error)], "_exc"))
            out.append(ast.If(A.load(guards[key]), body, []))
        return out

    def action(self, k: int, a: Action) -> list[ast.stmt]:
        """One action's transitions from the state, for each combination of its choices."""
        ci: ast.expr = A.const(0)
        if a.choices:
            ci = A.load("_ci")
        failed: list[ast.stmt] = [A.method("_x", "step_error", A.load("_i"), A.const(k), copy.deepcopy(ci), A.load("_exc"))]
        stages = self.stages(k, a, 0, list(self.V), None, ci)
        if a.conditional:       # only the combinations whose `when:`s hold here (machine/compiled.py, admit)
            state = ast.Subscript(A.load("_states"), A.load("_i"), ast.Load())
            why = A.call(A.load(f"admit_{k}"), state, *(A.load(f"c_{c}") for c, _ in a.choices))
            stages = [ast.If(ast.Compare(why, [ast.Is()], [A.const(None)]), stages, [])]
        body: list[ast.stmt] = [A.try_except(stages, "_ERR", failed, "_exc")]
        if not a.choices:
            return body
        target = A.tuple_of([A.store("_ci"), A.names([f"c_{c}" for c, _ in a.choices], ast.Store())], ast.Store())
        combos = A.call(A.load("_enumerate"), A.load(f"_combos_{k}"))
        return [ast.For(target, combos, body, [])]

    def loop(self) -> ast.While:
        """`while _i < _n:` expand state _i."""
        level: list[ast.stmt] = [A.incr("_d"), A.assign("_next", A.load("_n")),      # a new BFS level starts here
                                 ast.Expr(A.call(A.load("_starts_add"), A.load("_i")))]
        stop = ast.Attribute(A.load("_x"), "stopped_by", ast.Store())
        full: list[ast.stmt] = [A.assign(stop, A.const("max_states")), ast.Break()]
        tick = A.all_of(A.load("_ticking"), A.negate(ast.BinOp(A.load("_i"), ast.BitAnd(), A.const(255))),
                    A.call(A.attr("_x", "tick"), A.load("_i"), A.load("_d")))
        body: list[ast.stmt] = [
            ast.If(ast.Compare(A.load("_i"), [ast.Eq()], [A.load("_next")]), level, []),
            ast.If(ast.Compare(A.load("_n"), [ast.Gt()], [A.load("_max")]), full, []),
            ast.If(tick, [ast.Break()], []),
            A.assign(A.names([f"v_{i}" for i in range(self.n)], ast.Store()),
                    ast.Subscript(A.load("_states"), A.load("_i"), ast.Load())),
            ast.Expr(A.call(A.load("_es_add"), A.call(A.load("_len"), A.load("_e_dst")))),
            *self.terminal(),
            ast.Expr(A.call(A.load("_term_add"), A.const(0))),
            *self.actions(),
            A.incr("_i")]
        return ast.While(ast.Compare(A.load("_i"), [ast.Lt()], [A.load("_n")]), body, [])

    # ------------------------------------------------------------ the function

    def head(self) -> list[ast.stmt]:
        """The locals the loop runs on: the target's containers and their bound methods,
        the choices' combinations, the stand-ins for missing choices, the variants' bounds,
        which properties are live, and the counters (set by building the loop first)."""
        def path(*names: str) -> ast.expr:
            node: ast.expr = A.load(names[0])
            for name in names[1:]:
                node = ast.Attribute(node, name, ast.Load())
            return node
        aliases = {"_states": ("_x", "states"), "_index": ("_x", "index"), "_add": ("_index", "setdefault"),
                   "_st_add": ("_states", "append"), "_par_add": ("_x", "parent", "append"),
                   "_e_dst": ("_x", "e_dst"), "_e_add": ("_e_dst", "append"),
                   "_es_add": ("_x", "edge_start", "append"), "_term_add": ("_x", "terminal", "append"),
                   "_starts_add": ("_x", "starts", "append"), "_labels": ("_x", "label_counts"),
                   "_max": ("_x", "max_states"), "_ticking": ("_x", "ticking")}
        out: list[ast.stmt] = [A.assign(local, path(*where)) for local, where in aliases.items()]
        for k, a in enumerate(self.spec.actions):
            if a.choices:
                out.append(A.assign(f"_combos_{k}", ast.Subscript(A.attr("_x", "combos"), A.const(k), ast.Load())))
            if self.steps_checked:
                own = _made(a)
                out += [A.assign(f"_miss_{k}_{c}", A.call(A.attr("_x", "missing"), A.const(k), A.const(c)))
                        for c in self.spec.choice_names if c not in own]
        out += [A.assign(f"_vb{k}", A.call(A.attr("_x", "bound"), A.const(k)))
                for k, p in self.checked if p.kind == "variant"]
        if self.checked:
            out.append(self.refresh())
        out += [A.assign("_n", A.call(A.load("_len"), A.load("_states"))), A.assign("_i", A.const(0)),
                A.assign("_next", A.load("_n")), A.assign("_d", A.const(0)), A.assign("_fwd", A.const(True))]
        if self.counters:
            out.append(ast.Assign([A.store(c) for _, _, c in self.counters], A.const(0)))
        return out

    def function(self) -> ast.FunctionDef:
        """`def sweep(_x, <the globals it reads, bound as defaults>)`. Running out of memory
        (or time) stops the loop where it is, as a bound does: the engine is told, gets the
        counts so far and undoes the state left half expanded."""
        loop = self.loop()
        bound = [f"p_{p.name}" for p in self.spec.params]
        for i, v in enumerate(self.spec.vars):
            if v.kind == "int":
                bound += [f"dlo_{i}", f"dhi_{i}"]
        bound += ["_len", "_enumerate", "_ERR", "_STOP", "_NoRule", "min", "max", "abs"]
        args = ast.arguments([], [ast.arg("_x"), *(ast.arg(b) for b in bound)], None, [], [], None,
                             [A.load(b) for b in bound])
        counts = A.tuple_of([A.tuple_of([A.const(k), A.const(r), A.load(c)]) for k, r, c in self.counters])
        body: list[ast.stmt] = [
            *self.head(),
            A.try_except([loop], "_STOP", [A.method("_x", "interrupted", A.load("_exc"))], "_exc"),
            ast.Return(A.tuple_of([A.load("_i"), A.load("_fwd"), A.load("_next"), counts]))]
        return ast.FunctionDef("sweep", args, body, [], None, None)
