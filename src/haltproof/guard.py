"""A runtime guard exported from an explored spec: pure Python, standard library only.

`haltproof guard SPEC -p ... -o guard.json` writes the table this module reads: the explored
graph of one param combination (every state, with the monitors' hidden vars, and every
transition), which safety properties each state and transition breaks, and from which states a
violation is reachable or certain. `-o guard.py` writes a standalone module: this file with the
table embedded, importing nothing outside the standard library.

    guard = Guard.load("guard.json", spec="specs/loop_demo.yaml")
    guard.start({"scenario": "one_match"})      # which initial state (when the spec has several)
    d = guard.before("read_task_cards", {"obs": "one_match"})
    if d.verdict == "allow": ...run the action...
    guard.after(state)                          # the user's vars after it
    guard.end("success")

Decisions (docs/how-to/guard.md): for `before(action, choices)` the transitions of the graph from the
current state that match the action and the given choices (choices left out are the
environment's, so every value of them counts):
- deny: none matches (not a transition of the model here), or every matching transition breaks
  a property now or leads where its violation is certain (every continuation breaks it);
- approval_required: some matching transition can lead to a violation (now or later), but not
  every one makes it certain;
- allow: no matching transition can lead to a violation.
A state `after` reports that is not a successor of the current one is a model escape: the run
has left what was explored, so nothing proved holds for it; it is denied unless the guard was
made with `on_escape="approval_required"` or `"allow"` (monitoring only).
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

FORMAT = "haltproof-guard/1"
VERDICTS = ("allow", "deny", "approval_required")
ESCAPE_MODES = VERDICTS
# The four values of a property's monitor at the current state of the run.
HOLDS, VIOLATED, OPEN, CANNOT = "holds", "violated", "open", "cannot_be_met"
# How one transition stands against the properties, worst last.
_SAFE, _ENDANGERED, _DOOMED, _VIOLATES = 0, 1, 2, 3


class GuardError(ValueError):
    """Bad input to the guard: a table that is not a guard, a guard of another spec, an unknown
    action, choice or var. Never answered with a decision: a guard does not guess."""


@dataclass(frozen=True)
class Decision:
    """What the guard says about one event: its verdict and why, as a frozen record."""

    verdict: str                        # allow | deny | approval_required
    event: str                          # start | before | after | end
    step: int                           # the transition it is about (1 the first; 0 start)
    reason: str
    action: str | None = None
    choices: dict[str, Any] = field(default_factory=dict)
    violated: tuple[str, ...] = ()      # properties this event breaks now
    doomed: tuple[str, ...] = ()        # properties no continuation can keep any more
    endangered: tuple[str, ...] = ()    # properties some continuation breaks
    continuation: tuple[dict[str, Any], ...] = ()   # shortest steps from here to the violation
    allowed: tuple[dict[str, Any], ...] = ()        # what would be allowed here instead
    escape: bool = False                # the run left the explored graph
    risk: str | None = None             # with a risk shield: the step's worst probability of a violation

    @property
    def allowed_now(self) -> bool:
        return self.verdict == "allow"

    def to_dict(self) -> dict[str, Any]:
        """The decision packet, as JSON-ready data."""
        return {"verdict": self.verdict, "event": self.event, "step": self.step, "reason": self.reason,
                "action": self.action, "choices": dict(self.choices), "violated": list(self.violated),
                "doomed": list(self.doomed), "endangered": list(self.endangered),
                "continuation": [dict(s) for s in self.continuation],
                "allowed": [dict(a) for a in self.allowed], "escape": self.escape,
                **({} if self.risk is None else {"risk": self.risk})}


def table_checksum(table: dict[str, Any]) -> str:
    """sha256 of the table's canonical JSON, its own `checksum` left out."""
    body = {k: v for k, v in table.items() if k != "checksum"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def spec_digest(text: str) -> str:
    """The hash a guard keeps of its spec's text (line ends normalized, as the loader reads it)."""
    return hashlib.sha256(text.replace("\r\n", "\n").replace("\r", "\n").encode("utf-8")).hexdigest()


class _Edge:
    """One transition of the graph, with how it stands against the safety properties."""

    __slots__ = ("action", "combo", "labels", "dst", "rule", "bad", "weights", "rank", "props", "p")

    def __init__(self, action: str, combo: int, labels: dict[str, Any], dst: int, rule: str | None,
                 bad: tuple[str, ...], weights: tuple[int, ...], p: Fraction | None):
        self.action, self.combo, self.labels, self.dst, self.rule = action, combo, labels, dst, rule
        self.bad, self.weights, self.p = bad, weights, p
        self.rank: int = _SAFE
        self.props: tuple[str, ...] = ()


class Guard:
    """The runtime guard of one explored param combination; one instance follows one run."""

    def __init__(self, table: dict[str, Any], *, on_escape: str = "deny", risk: Any = None):
        if on_escape not in ESCAPE_MODES:
            raise GuardError(f"on_escape must be one of {', '.join(ESCAPE_MODES)}, got {on_escape!r}")
        _check_table(table)
        self.table = table
        self.on_escape = on_escape
        self.delta = _delta(risk, table)
        shield = table.get("risk") if "worst" in table.get("risk", {}) else None
        self._worst: list[Fraction] = [Fraction(v) for v in shield["worst"]] if shield else []
        self._p: list[list[str]] = shield["p"] if shield else []
        self._weighted: dict[str, list[str]] = shield["weighted"] if shield else {}
        self.spec_name: str = table["spec"]["name"]
        self.params: dict[str, Any] = dict(table["spec"]["params"])
        self.var_names: list[str] = [v["name"] for v in table["vars"]]
        self.nvars = len(self.var_names)
        self.states: list[tuple[Any, ...]] = [tuple(s) for s in table["states"]]
        self.terminal: list[int] = table["terminal"]
        self.labels: dict[int, Any] = {int(k): v for k, v in table.get("end_labels", {}).items()}
        self.safety: list[str] = [p["name"] for p in table["properties"]]
        self.budgets: list[dict[str, Any]] = table["budgets"]
        self.obligations: dict[int, list[str]] = {int(k): v for k, v in table.get("open", {}).items()}
        named = self._named
        self._bad_state = {int(k): named(v) for k, v in table["bad_states"].items()}
        self._reach = {int(k): named(v) for k, v in table["reach"].items()}
        self._certain = {int(k): named(v) for k, v in table["certain"].items()}
        self._actions: dict[str, list[str]] = {a["name"]: a["choices"] for a in table["actions"]}
        self._values: dict[str, dict[str, list[Any]]] = {
            a["name"]: {c: list(dict.fromkeys(combo[c] for combo in a["combos"] if c in combo))
                        for c in a["choices"]} for a in table["actions"]}
        self._edges: list[dict[str, list[_Edge]]] = [self._edges_of(i, row) for i, row in enumerate(table["edges"])]
        self._by_user: dict[tuple[Any, ...], list[int]] = {}
        for i, s in enumerate(self.states):
            self._by_user.setdefault(s[:self.nvars], []).append(i)
        self.reset()

    # ------------------------------------------------------------------------------ loading

    @classmethod
    def load(cls, path: str | Path, *, spec: str | Path | None = None, params: dict[str, Any] | None = None,
             on_escape: str = "deny", risk: Any = None) -> Guard:
        """The guard written to `path` by `haltproof guard`. With `spec`, that spec file's text must
        be the one the guard was made from; with `params`, they must be its params. With `risk`
        (a probability δ; a spec with `probabilities:` only), the risk shield decides the steps
        some continuation of which breaks a property: allowed when their worst probability of a
        violation is at most δ, denied otherwise."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise GuardError(f"{path}: cannot read the guard: {exc}") from None
        try:
            table = json.loads(text)
        except ValueError as exc:
            raise GuardError(f"{path}: not a guard: not JSON ({exc})") from None
        if not isinstance(table, dict):
            raise GuardError(f"{path}: not a guard: the JSON is not an object")
        try:
            return cls.from_table(table, spec=spec, params=params, on_escape=on_escape, risk=risk)
        except GuardError as exc:
            raise GuardError(f"{path}: {exc}") from None

    @classmethod
    def from_table(cls, table: dict[str, Any], *, spec: str | Path | None = None,
                   params: dict[str, Any] | None = None, on_escape: str = "deny", risk: Any = None) -> Guard:
        """The guard of a table already read (the standalone module embeds one)."""
        _check_table(table)
        if spec is not None:
            try:
                digest = spec_digest(Path(spec).read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError) as exc:
                raise GuardError(f"cannot read the spec {spec}: {exc}") from None
            if digest != table["spec"]["sha256"]:
                raise GuardError(f"the guard was made from another version of the spec: {spec} has sha256 "
                                 f"{digest[:12]}, the guard's ({table['spec']['path']}) {table['spec']['sha256'][:12]}; "
                                 "write the guard again with `haltproof guard`")
        if params is not None and dict(params) != table["spec"]["params"]:
            raise GuardError(f"the guard was made for params {_show(table['spec']['params'])}, "
                             f"not {_show(dict(params))}")
        return cls(table, on_escape=on_escape, risk=risk)

    def _named(self, indices: list[int]) -> tuple[str, ...]:
        return tuple(self.safety[k] for k in indices)

    def _edges_of(self, i: int, row: list[list[Any]]) -> dict[str, list[_Edge]]:
        actions = self.table["actions"]
        out: dict[str, list[_Edge]] = {}
        for j, (a, c, dst, rule, bad, weights) in enumerate(row):
            act = actions[a]
            e = _Edge(act["name"], c, act["combos"][c], dst, rule, tuple(self.safety[k] for k in bad),
                      tuple(weights), Fraction(self._p[i][j]) if self._p else None)
            e.rank, e.props = self._rank(e)
            out.setdefault(act["name"], []).append(e)
        return out

    def _rank(self, e: _Edge) -> tuple[int, tuple[str, ...]]:
        """How one transition stands against the safety properties (budgets are judged live)."""
        now = e.bad + self._bad_state.get(e.dst, ())
        if now:
            return _VIOLATES, _unique(now)
        if e.dst in self._certain:
            return _DOOMED, self._certain[e.dst]
        if e.dst in self._reach:
            return _ENDANGERED, self._reach[e.dst]
        return _SAFE, ()

    # --------------------------------------------------------------------------- the run

    def reset(self) -> None:
        """Forget the run: the next event starts a new one."""
        self.current: int | None = None
        self.taken = 0
        self.used = [0] * len(self.budgets)
        self.broken: list[str] = []       # properties this run has violated
        self.escaped = False
        self.ended = False
        self._pending: tuple[str, dict[str, Any], list[_Edge]] | None = None

    def start(self, state: dict[str, Any] | None = None) -> Decision:
        """Begin a run in the initial state `state` (the user's vars; some of them are enough when
        they pick one initial state). Without it, the spec must have exactly one initial state."""
        self.reset()
        inits = self.table["initial"]
        if state is not None:
            self._check_vars(state, partial=True)
            inits = [i for i in inits if all(self.states[i][self.var_names.index(k)] == v for k, v in state.items())]
        if len(inits) > 1:
            raise GuardError(f"{len(inits)} initial states match: give start() the vars that pick one "
                             f"(e.g. {_show(self._user(inits[0]))})")
        if not inits:
            return self._escape("start", f"{_show(state or {})} is not an initial state of the model")
        self.current = inits[0]
        now = self._bad_state.get(self.current, ())
        if now:
            self.broken.extend(now)
            return Decision("deny", "start", 0, f"the initial state violates {', '.join(now)}", violated=now)
        return Decision("allow", "start", 0, "an initial state of the model")

    def before(self, action: str, choices: dict[str, Any] | None = None) -> Decision:
        """May the run take `action` with `choices` now? (See the module's docstring.)"""
        choices = dict(choices or {})
        self._check_action(action, choices)
        cur = self._here()
        step = self.taken + 1
        if self.escaped or cur is None:
            return self._escaped_again("before", step, action, choices)
        if self.ended:
            return Decision("deny", "before", step, "the run has ended", action, choices)
        edges = [e for e in self._edges[cur].get(action, ()) if _matches(e.labels, choices)]
        self._pending = (action, choices, edges)
        if not edges:
            return Decision("deny", "before", step, self._not_here(cur, action, choices), action, choices,
                            allowed=self._allowed(cur))
        judged = [self._judge(e) for e in edges]
        worst = max(r for r, _, _ in judged)
        if worst == _SAFE:
            return Decision("allow", "before", step, "no continuation of it breaks a property", action, choices)
        violated = _unique(p for r, props, _ in judged if r == _VIOLATES for p in props)
        doomed = _unique(p for r, props, _ in judged if r == _DOOMED for p in props if p not in violated)
        endangered = _unique(p for r, props, _ in judged if r == _ENDANGERED for p in props
                             if p not in violated and p not in doomed)
        k = next(k for k, (r, _, _) in enumerate(judged) if r == worst)
        path = self._continuation(edges[k], judged[k])
        risk = None
        if min(r for r, _, _ in judged) >= _DOOMED:
            why = ("it breaks " + ", ".join(violated) if violated
                   else "after it no continuation keeps " + ", ".join(doomed))
            verdict = "deny"
        else:
            why = "some continuation of it breaks " + ", ".join(_unique(violated + doomed + endangered))
            verdict = "approval_required"
            if self.delta is not None and all(p in self.safety for p in violated + doomed + endangered):
                chance = self._risk(action, edges)
                verdict = "allow" if chance <= self.delta else "deny"
                risk = str(chance)
                why += (f", with a worst probability of {chance} ({float(chance):.4g}): "
                        f"{'at most' if chance <= self.delta else 'more than'} the risk bound {self.delta}")
        return Decision(verdict, "before", step, why, action, choices, violated, doomed, endangered, path,
                        self._allowed(cur), risk=risk)

    def _risk(self, action: str, edges: list[_Edge]) -> Fraction:
        """The worst probability that taking one of `edges` leads to a violation: per decision
        (the values of the unweighted choices, the rest the environment's by their weights, as
        far as the given choices leave them open), each transition counting 1 if it breaks a
        property, else its successor's worst probability; the worst decision."""
        weighted = set(self._weighted.get(action, ()))
        groups: dict[tuple[tuple[str, Any], ...], list[_Edge]] = {}
        for e in edges:
            groups.setdefault(tuple((c, v) for c, v in e.labels.items() if c not in weighted), []).append(e)
        worst = Fraction(0)
        for group in groups.values():
            total = sum((e.p or Fraction(0) for e in group), Fraction(0))
            risks = [Fraction(1) if e.bad or e.dst in self._bad_state else self._worst[e.dst] for e in group]
            if not total:       # given values the weights call impossible: the run is not the model's, assume the worst
                worst = max(worst, *risks)
                continue
            worst = max(worst, sum(((e.p or Fraction(0)) * r for e, r in zip(group, risks)), Fraction(0)) / total)
        return worst

    def after(self, state: dict[str, Any] | None = None) -> Decision:
        """The run took a step and is now in `state` (the user's vars, all of them). Without
        `state`, the step announced by `before` must lead to one state only."""
        cur = self._here()
        step = self.taken + 1
        pending, self._pending = self._pending, None
        if self.escaped or cur is None:
            return self._escaped_again("after", step, None, {})
        action, choices = (pending[0], pending[1]) if pending else (None, {})
        if state is None:
            if pending is None:
                raise GuardError("after() without a state needs a before() first")
            dsts = {e.dst for e in pending[2]}
            if len(dsts) != 1:
                raise GuardError(f"{action} with {_show(choices)} leads to {len(dsts)} states here: "
                                 "give after() the state")
            key = self.states[dsts.pop()][:self.nvars]
        else:
            self._check_vars(state, partial=False)
            key = tuple(state[v] for v in self.var_names)
        pool = pending[2] if pending else [e for es in self._edges[cur].values() for e in es]
        hits = [e for e in pool if self.states[e.dst][:self.nvars] == key]
        if not hits:
            what = f"after {action} with {_show(choices)}" if pending else "after one step"
            return self._escape("after", f"{_show(dict(zip(self.var_names, key)))} is not a state the model reaches "
                                f"from {_show(self._user(cur))} {what}", action, choices, key)
        e = min(hits, key=lambda h: self._judge(h)[0])
        rank, props, over = self._judge(e)
        self.current, self.taken = e.dst, step
        self.used = [u + w for u, w in zip(self.used, e.weights)]
        if rank == _VIOLATES:
            now = _unique(p for p in props if p not in self.broken)
            self.broken.extend(now)
            return Decision("deny", "after", step, "the step broke " + ", ".join(props), e.action,
                            dict(e.labels), violated=props, continuation=(), allowed=self._allowed(e.dst))
        if rank == _DOOMED:
            return Decision("deny", "after", step, "from here no continuation keeps " + ", ".join(props),
                            e.action, dict(e.labels), doomed=props,
                            continuation=self._from_here(e.dst, props, over))
        return Decision("allow", "after", step, "a state of the model", e.action, dict(e.labels))

    def end(self, reason: Any = None) -> Decision:
        """May the run end here, as `reason` (the spec's terminal label, when it has one)?"""
        cur = self._here()
        step = self.taken
        if self.escaped or cur is None:
            return self._escaped_again("end", step, None, {})
        if not self.terminal[cur]:
            opened = self.obligations.get(cur, [])
            why = "the spec does not end in this state: it is not terminal"
            if opened:
                why += "; open obligations: " + ", ".join(opened)
            return Decision("deny", "end", step, why, choices={}, allowed=self._allowed(cur),
                            endangered=tuple(opened))
        label = self.labels.get(cur)
        if reason is not None and cur in self.labels and reason != label:
            return Decision("deny", "end", step, f"the spec ends this run as {label!r}, not {reason!r}")
        self.ended = True
        return Decision("allow", "end", step, "a terminal state" + (f" ({label!r})" if cur in self.labels else ""))

    def verdicts(self) -> dict[str, str]:
        """Each safety property's and budget's monitor at the current state: holds, violated,
        open (some continuation breaks it), cannot_be_met (every continuation does)."""
        cur = self._here()
        out: dict[str, str] = {}
        for name in self.safety:
            if name in self.broken:
                out[name] = VIOLATED
            elif cur is not None and name in self._certain.get(cur, ()):
                out[name] = CANNOT
            elif cur is not None and name in self._reach.get(cur, ()):
                out[name] = OPEN
            else:
                out[name] = HOLDS
        for k, b in enumerate(self.budgets):
            out[b["name"]] = self._budget_verdict(k, cur)
        return out

    @property
    def state(self) -> dict[str, Any] | None:
        """The current state (the user's vars), None before the run started or after an escape."""
        cur = None if self.escaped else self.current
        return None if cur is None else self._user(cur)

    # ------------------------------------------------------------------------- helpers

    def _here(self) -> int | None:
        if self.current is None and not self.escaped:
            inits = self.table["initial"]
            if len(inits) != 1:
                raise GuardError(f"the model has {len(inits)} initial states: call start(state) first")
            self.start()
        return self.current

    def _judge(self, e: _Edge) -> tuple[int, tuple[str, ...], int]:
        """The transition's rank with the budgets added: (rank, properties, budget index or -1)."""
        rank, over = e.rank, -1
        props: tuple[str, ...] = e.props
        for k, b in enumerate(self.budgets):
            after = self.used[k] + e.weights[k]
            short, long_ = b["shortest"][e.dst], b["longest"][e.dst]
            if after > b["bound"]:
                r = _VIOLATES
            elif short is None or after + short > b["bound"]:
                r = _DOOMED
            elif long_ is None or after + long_ > b["bound"]:
                r = _ENDANGERED
            else:
                continue
            if r > rank:
                rank, props, over = r, (b["name"],), k
            elif r == rank:
                props, over = props + (b["name"],), (over if over >= 0 else k)
        return rank, props, over

    def _budget_verdict(self, k: int, cur: int | None) -> str:
        b = self.budgets[k]
        if self.used[k] > b["bound"]:
            return VIOLATED
        if cur is None:
            return HOLDS
        short, long_ = b["shortest"][cur], b["longest"][cur]
        if short is None or self.used[k] + short > b["bound"]:
            return CANNOT
        if long_ is None or self.used[k] + long_ > b["bound"]:
            return OPEN
        return HOLDS

    def _user(self, i: int) -> dict[str, Any]:
        return dict(zip(self.var_names, self.states[i][:self.nvars]))

    def _step(self, e: _Edge) -> dict[str, Any]:
        return {"action": e.action, "choices": dict(e.labels), "rule": e.rule, "state": self._user(e.dst)}

    def _allowed(self, cur: int) -> tuple[dict[str, Any], ...]:
        """The transitions from here the guard would allow, each as {action, choices}."""
        return tuple({"action": e.action, "choices": dict(e.labels)}
                     for es in self._edges[cur].values() for e in es if self._judge(e)[0] == _SAFE)

    def _continuation(self, first: _Edge, judged: tuple[int, tuple[str, ...], int]) -> tuple[dict[str, Any], ...]:
        """The shortest steps from the current state, through `first`, to the violation: to the
        nearest transition breaking a safety property, or for a budget the longest run on."""
        rank, props, over = judged
        head = (self._step(first),)
        safety = tuple(p for p in props if p in self.safety)
        if safety:
            if set(safety) & set(first.bad + self._bad_state.get(first.dst, ())):
                return head
            return head + self._nearest(first.dst, safety)
        return head if rank == _VIOLATES else head + self._longest_from(first.dst, over)

    def _from_here(self, i: int, props: tuple[str, ...], over: int) -> tuple[dict[str, Any], ...]:
        safety = tuple(p for p in props if p in self.safety)
        return self._nearest(i, safety) if safety else self._longest_from(i, over)

    def _nearest(self, start: int, props: tuple[str, ...]) -> tuple[dict[str, Any], ...]:
        """BFS over the graph from `start` to the nearest transition breaking one of `props`."""
        wanted = set(props)
        parent: dict[int, tuple[int, _Edge] | None] = {start: None}
        queue = deque([start])
        while queue:
            i = queue.popleft()
            for es in self._edges[i].values():
                for e in es:
                    if wanted & set(e.bad + self._bad_state.get(e.dst, ())):
                        return self._path(parent, i) + (self._step(e),)
                    if e.dst not in parent:
                        parent[e.dst] = (i, e)
                        queue.append(e.dst)
        return ()

    def _path(self, parent: dict[int, tuple[int, _Edge] | None], i: int) -> tuple[dict[str, Any], ...]:
        out: list[dict[str, Any]] = []
        link = parent[i]
        while link is not None:
            i, e = link
            out.append(self._step(e))
            link = parent[i]
        return tuple(reversed(out))

    def _longest_from(self, i: int, k: int) -> tuple[dict[str, Any], ...]:
        """A longest run (counted by budget k) from state i to its end, along the exported lengths."""
        longest = self.budgets[k]["longest"]
        out: list[dict[str, Any]] = []
        while longest[i] is not None and not self.terminal[i] and len(out) <= len(self.states):
            nxt = next((e for es in self._edges[i].values() for e in es
                        if longest[e.dst] is not None and e.weights[k] + longest[e.dst] == longest[i]), None)
            if nxt is None:
                break
            out.append(self._step(nxt))
            i = nxt.dst
        return tuple(out)

    def _not_here(self, cur: int, action: str, choices: dict[str, Any]) -> str:
        if self.terminal[cur]:
            return f"the run is in a terminal state: {action} is not a transition of the model here"
        if not self._edges[cur].get(action):
            return f"{action} is not enabled in this state of the model"
        return f"{action} with {_show(choices)} is not a transition of the model here"

    def _escape(self, event: str, why: str, action: str | None = None, choices: dict[str, Any] | None = None,
                key: tuple[Any, ...] | None = None) -> Decision:
        """The run left the explored graph: fail closed unless configured otherwise. Outside deny
        mode the guard picks the run up again where its vars name exactly one explored state."""
        step = self.taken + (1 if event == "after" else 0)
        again = self._by_user.get(key, []) if key is not None else []
        self.taken = step
        if self.on_escape != "deny" and len(again) == 1:
            self.current = again[0]
        else:
            self.escaped, self.current = True, None
        return Decision(self.on_escape, event, step, f"model escape at step {step}: {why}", action,
                        dict(choices or {}), escape=True)

    def _escaped_again(self, event: str, step: int, action: str | None, choices: dict[str, Any]) -> Decision:
        return Decision(self.on_escape, event, step, "the run left the model earlier: nothing proved covers it",
                        action, choices, escape=True)

    def _check_action(self, action: str, choices: dict[str, Any]) -> None:
        if action not in self._actions:
            raise GuardError(f"unknown action {action!r} of {self.spec_name}; its actions: {', '.join(self._actions)}")
        names = self._actions[action]
        for c, v in choices.items():
            if c not in names:
                raise GuardError(f"action {action} has no choice {c!r}; its choices: {', '.join(names) or 'none'}")
            known = self._values[action][c]
            if not any(v == k and type(v) is type(k) for k in known):
                raise GuardError(f"choice {c} of action {action} has no value {v!r}; its values: "
                                 f"{', '.join(map(str, known))}")

    def _check_vars(self, state: Any, *, partial: bool) -> None:
        if not isinstance(state, dict):
            raise GuardError(f"a state is a dict of the spec's vars, got {type(state).__name__}")
        unknown = [k for k in state if k not in self.var_names]
        if unknown:
            raise GuardError(f"unknown var {unknown[0]!r} of {self.spec_name}; its vars: {', '.join(self.var_names)}")
        missing = [v for v in self.var_names if v not in state]
        if missing and not partial:
            raise GuardError(f"the state lacks the var(s) {', '.join(missing)}")


class GuardStopped(RuntimeError):
    """A run stopped by its guard at this event: `decision` is the packet (`decision.to_dict()`)."""

    def __init__(self, decision: Decision):
        self.decision = decision
        super().__init__(f"haltproof guard: {decision.verdict} at step {decision.step} ({decision.event}"
                         f"{' ' + decision.action if decision.action else ''}): {decision.reason}")


class Follower:
    """One run followed through a guard, as a hook does: every decision kept in order; one that
    does not allow raises GuardStopped, unless it is approval_required and `approve(decision)`
    says yes (no approver: stopped, fail-closed)."""

    def __init__(self, guard: Guard, approve: Callable[[Decision], bool] | None = None):
        self.guard = guard
        self.approve = approve
        self.decisions: list[Decision] = []

    def start(self, state: dict[str, Any] | None = None) -> Decision:
        return self.check(self.guard.start(state))

    def before(self, action: str, choices: dict[str, Any] | None = None) -> Decision:
        return self.check(self.guard.before(action, choices))

    def after(self, state: dict[str, Any] | None = None) -> Decision:
        return self.check(self.guard.after(state))

    def end(self, reason: Any = None) -> Decision:
        return self.check(self.guard.end(reason))

    def check(self, decision: Decision) -> Decision:
        """Keep the decision; raise GuardStopped unless it allows (or the approver approves)."""
        self.decisions.append(decision)
        if decision.verdict == "allow":
            return decision
        if decision.verdict == "approval_required" and self.approve is not None and self.approve(decision):
            return decision
        raise GuardStopped(decision)


def _delta(risk: Any, table: dict[str, Any]) -> Fraction | None:
    """The risk bound δ, a probability; only for a guard with a risk table."""
    if risk is None:
        return None
    if "risk" not in table:
        raise GuardError("this guard has no risk shield: its spec has no `probabilities:` block")
    if "unavailable" in table["risk"]:
        raise GuardError(f"this guard has no risk shield: {table['risk']['unavailable']}")
    try:
        delta = Fraction(str(risk))
    except (ValueError, ZeroDivisionError):
        raise GuardError(f"risk must be a probability, got {risk!r}") from None
    if not 0 <= delta <= 1:
        raise GuardError(f"risk must be a probability between 0 and 1, got {risk!r}")
    return delta


def _matches(labels: dict[str, Any], choices: dict[str, Any]) -> bool:
    return all(c in labels and labels[c] == v for c, v in choices.items())


def _unique(items: Any) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def _show(d: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in d.items()) + "}"


_KEYS = ("format", "spec", "vars", "monitors", "actions", "properties", "budgets", "states", "initial",
         "terminal", "edges", "bad_states", "reach", "certain", "checksum")


def _check_table(table: dict[str, Any]) -> None:
    """Refuse what is not an intact guard of this format: a guard never guesses."""
    if table.get("format") != FORMAT:
        raise GuardError(f"not a guard of format {FORMAT} (its format: {table.get('format')!r})")
    missing = [k for k in _KEYS if k not in table]
    if missing:
        raise GuardError(f"not a guard: it lacks {', '.join(missing)}")
    if table["checksum"] != table_checksum(table):
        raise GuardError("the guard's table was changed after it was written (its checksum does not match)")
