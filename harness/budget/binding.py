"""The adapter between specs/budget_runner.yaml and the runner's pure code.

Live binding (docs/how-to/binding.md): `start` makes a fresh run with the runner's own `new_run`;
for every reachable abstract state and every choice `step` runs
haltproof.harness.budget.transitions (consult -> validate_action / authorize / check_budget /
finalize, begin_attempt, record_attempt, recover) - the very functions the SQLite runner
calls - on the run that first reached that state. A run and its ledger are JSON data, so `snapshot`
and `restore` copy them with the runner's own `json_copy` (cheaper than a deepcopy):
haltproof keeps a snapshot per reachable state and steps restored copies
(`runs[].binding` is `snapshot`); no run is rebuilt from its abstraction. The environment
around that code is played here:

- the adversarial policy: each abstract move is a `Move`, a policy for one decision
  that reads the view it is given (e.g. `reserve` proposes the unique hit with the
  observed stock version; `misdirected` a tool action whose target, quantity or version
  the observations do not support - a reserve with a stale version, by default);
- the tools: each abstract outcome is an `Env`, the result a real tool would return
  (a search with zero, one or several hits, a stock reading with enough or too little,
  a receipt, a failure) or a crash of the process before or after the call;
- the effect ledger: `{idempotency key: receipt}`, as the shop's ledger table holds it.

`strategy` gives Hypothesis every concrete value of a class (any hit ids, texts, versions,
malformed JSON of many shapes, exceptions of any type), for `haltproof conform`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from haltproof.machine.live import LiveAdapter

from . import transitions as T
from .gate import GATE, TOOLS, Gate, facts_of

TASKS: dict[str, dict[str, Any]] = {
    "reserve": {"goal": "reserve", "query": "camera", "quantity": 1},
    "info": {"goal": "info", "query": "camera"},
}
HIT = "cam-100"
OTHER = "cam-101"
VERSION = 7
RUN_ID = "run-1"


# ------------------------------------------------------------------ the adversarial policy

def _view_facts(view: dict[str, Any]) -> tuple[list[str], str | None, int | None]:
    """What an adversary reads from its view: the first search's hits, a target, a version."""
    hits: list[str] = []
    for o in view["observations"]:
        if o["ok"] and o["tool"] == "search":
            hits = list(o["result"]["hits"])
            break
    target = hits[0] if hits else None
    version = None
    for o in view["observations"]:
        if o["ok"] and o["tool"] == "stock" and o["result"]["item"] == target:
            version = o["result"]["version"]
    return hits, target, version


@dataclass(frozen=True)
class Move:
    """One decision of an adversarial policy. `kind` is the abstract move; `variant` picks
    among concrete proposals of the same class (conform draws them)."""

    kind: str
    variant: tuple[Any, ...] = ()

    def __call__(self, view: dict[str, Any]) -> Any:
        task = view["task"]
        hits, target, version = _view_facts(view)
        item = target if target is not None else task["query"]
        quantity = task.get("quantity", 1)
        k, v = self.kind, self.variant
        if k == "search":
            return {"type": "tool", "tool": "search", "args": {"query": task["query"]}}
        if k in ("document", "stock"):
            return {"type": "tool", "tool": k, "args": {"item": item}}
        if k == "reserve":
            return {"type": "tool", "tool": "reserve",
                    "args": {"item": item, "quantity": quantity, "version": version or 0}}
        if k == "misdirected":
            how, delta = v or ("version", 1)
            if how == "search":
                return {"type": "tool", "tool": "search", "args": {"query": f"{task['query']}-{delta}"}}
            if how in ("document", "stock"):
                return {"type": "tool", "tool": how, "args": {"item": f"not-{item}-{delta}"}}
            args = {"item": item, "quantity": quantity, "version": (version or 0)}
            if how == "version":
                args["version"] = (version or 0) + delta
            elif how == "quantity":
                args["quantity"] = quantity + delta
            else:
                args["item"] = f"{item}-{delta}"
            return {"type": "tool", "tool": "reserve", "args": args}
        if k == "unknown_tool":
            name, args = v or ("delete_inventory", {"item": item})
            return {"type": "tool", "tool": name, "args": dict(args)}
        if k == "malformed":
            return copy.deepcopy(v[0]) if v else {"type": "tool", "tool": "search"}
        if k == "raises":
            kind, message = v or ("RuntimeError", "the policy crashed")
            raise {"ValueError": ValueError, "KeyError": KeyError, "TimeoutError": TimeoutError,
                   "OSError": OSError}.get(kind, RuntimeError)(message)
        if k == "finish_reserved":
            return {"type": "finish", "status": "reserved"}
        if k == "finish_info":
            return {"type": "finish", "status": "info"}
        if k == "abstain":
            return {"type": "abstain", "reason": v[0]} if v else {"type": "abstain"}
        raise ValueError(f"no move {k!r}")

    def __str__(self) -> str:
        return f"{self.kind}{list(self.variant) if self.variant else ''}"

    def __deepcopy__(self, memo: dict[int, Any]) -> Move:
        return self                     # immutable: it copies what it hands out


# ------------------------------------------------------------------ the tools' answers

@dataclass(frozen=True)
class Env:
    """What a tool call does. kind: fail | ok | zero | one | many | enough | short | crash |
    crash_before | crash_after; data: the concrete payload (hits, text, numbers)."""

    kind: str
    data: tuple[Any, ...] = ()

    def result(self, run: dict[str, Any]) -> dict[str, Any]:
        """The outcome a real tool returns for the pending action."""
        pending = run["pending"]
        args = pending["action"]["args"]
        k, d = self.kind, self.data
        if k == "fail":
            return {"ok": False, "error": d[0] if d else "injected fault: the tool is unavailable"}
        if k in ("zero", "one", "many"):
            hits = list(d) if d else {"zero": [], "one": [HIT], "many": [HIT, OTHER]}[k]
            return {"ok": True, "result": {"query": args["query"], "hits": hits}}
        tool = pending["action"]["tool"]
        if tool == "document":
            return {"ok": True, "result": {"item": args["item"], "title": "Compact camera",
                                           "text": d[0] if d else "a 20 MP compact camera"}}
        if tool == "stock":
            need = run["task"].get("quantity", 1)
            extra, version = d if d else (2, VERSION)
            available = need + extra if k == "enough" else max(0, need - 1 - extra)
            return {"ok": True, "result": {"item": args["item"], "available": available, "version": version}}
        return {"ok": True, "result": _receipt(args, pending["key"])}

    def __str__(self) -> str:
        return f"{self.kind}{list(self.data) if self.data else ''}"

    def __deepcopy__(self, memo: dict[int, Any]) -> Env:
        return self                     # immutable: result() builds a new outcome each time


def _receipt(args: dict[str, Any], key: str) -> dict[str, Any]:
    return {"item": args["item"], "quantity": args["quantity"], "receipt": f"rsv:{key}",
            "idempotency_key": key}


# ------------------------------------------------------------------ the concrete state

def abstract_state(concrete: dict[str, Any]) -> dict[str, Any]:
    """The abstract state of a run and its ledger (the spec's vars)."""
    run, ledger = concrete["run"], concrete["ledger"]
    facts = facts_of(run)
    task = run["task"]
    if facts.hits is None:
        hits = "none"
    else:
        hits = {0: "zero", 1: "one"}.get(len(facts.hits), "many")
    if facts.stock is None:
        stock = "none"
    else:
        stock = "enough" if facts.stock.available >= task.get("quantity", 1) else "short"
    pending = run["pending"]
    terminal = run["terminal"]
    if terminal is None:
        status = "running"
    elif terminal["status"] == "finished":
        status = f"finished_{terminal['final']}"
    else:
        status = terminal["status"]
    return {"task": task["goal"], "c": run["calls"], "hits": hits, "doc": facts.document, "supply": stock,
            "receipt": facts.receipt is not None, "written": len(ledger),
            "pending": pending["action"]["tool"] if pending else "none",
            "attempts": pending["attempts"] if pending else 0,
            "started": bool(pending and pending["started"]), "recorded": len(run["observations"]),
            "status": status}


# ------------------------------------------------------------------ the adapter

MOVES = ("search", "document", "stock", "reserve", "misdirected", "unknown_tool",
         "malformed", "raises", "finish_reserved", "finish_info", "abstain")


class BudgetRunnerAdapter(LiveAdapter):
    """Runs haltproof.harness.budget.transitions for each transition of specs/budget_runner.yaml.

    Subclasses (tests/broken_runners.py) swap `gate` or one of the transition functions
    to put a mutant of the runner under the same proof."""

    gate: Gate = GATE
    consult = staticmethod(T.consult)
    begin_attempt = staticmethod(T.begin_attempt)
    record_attempt = staticmethod(T.record_attempt)
    recover = staticmethod(T.recover)

    def start(self, params: dict[str, Any], init: dict[str, Any]) -> dict[str, Any]:
        """A fresh run of the initial state's task, and an empty effect ledger."""
        return {"run": T.new_run(RUN_ID, dict(TASKS[init["task"]]), params["K"], params["R"]), "ledger": {}}

    def abstract(self, concrete: dict[str, Any]) -> dict[str, Any]:
        return abstract_state(concrete)

    def snapshot(self, concrete: dict[str, Any]) -> Any:
        return T.json_copy(concrete)

    def restore(self, snap: Any) -> Any:
        return T.json_copy(snap)

    def representative(self, action: str, choice: str, label: Any) -> Any:
        return Move(label) if choice == "move" else Env(label)

    def strategy(self, action: str, choice: str, label: Any) -> st.SearchStrategy:
        return move_strategy(label) if choice == "move" else env_strategy(action, label)

    def step(self, concrete: dict[str, Any], action: str, choices: dict[str, Any]) -> str:
        run, ledger = concrete["run"], concrete["ledger"]
        if action == "propose":
            return type(self).consult(run, choices["move"], self.gate)
        if action == "resume":
            pending = run["pending"]
            receipt = ledger.get(pending["key"]) if pending["action"]["tool"] == "reserve" else None
            return type(self).recover(run, T.json_copy(receipt))
        rule = type(self).begin_attempt(run, self.gate)
        if rule is not None:
            return rule
        (env,) = choices.values()                       # the one result choice of a call_* action
        pending = run["pending"]
        if env.kind in ("crash", "crash_before", "crash_after"):
            if env.kind == "crash_after":               # the reservation landed, then the process died
                ledger.setdefault(pending["key"], _receipt(pending["action"]["args"], pending["key"]))
            return "interrupted"
        outcome = env.result(run)
        if pending["action"]["tool"] == "reserve" and outcome["ok"]:
            outcome = {"ok": True, "result": ledger.setdefault(pending["key"], outcome["result"])}
        return type(self).record_attempt(run, T.json_copy(outcome))


# ------------------------------------------------------------------ Hypothesis strategies (conform)

# item ids as a catalogue has them: 1..12 visible characters (an id the gate cannot accept as
# a target - blank, or over 200 characters - is not in any class of the abstraction)
_ids = st.text(st.characters(min_codepoint=33, max_codepoint=0x2FF, blacklist_categories=("Zs", "Zl", "Zp", "Cc",
                                                                                          "Cf")),
               min_size=1, max_size=12).filter(lambda s: s.strip() == s and s != "")
_texts = st.text(max_size=60)
_reason = st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF), min_size=1, max_size=40).filter(
    lambda s: s.strip() != "")

_json_scalar = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=8))
_MALFORMED = st.one_of(
    _json_scalar,                                                             # not an object
    st.lists(_json_scalar, max_size=3),
    st.just({}),                                                              # no type
    st.fixed_dictionaries({"type": st.sampled_from(["tools", "Tool", "finished", "", "call"])}),
    st.fixed_dictionaries({"type": st.just("tool"), "tool": st.sampled_from(TOOLS)}),        # no args
    st.fixed_dictionaries({"type": st.just("tool"), "tool": st.sampled_from(TOOLS),
                           "args": st.one_of(_json_scalar, st.lists(_json_scalar, max_size=2))}),
    st.fixed_dictionaries({"type": st.just("tool"), "tool": st.just("search"),
                           "args": st.fixed_dictionaries({"query": st.one_of(st.none(), st.integers(),
                                                                             st.just(""), st.just("   "))})}),
    st.fixed_dictionaries({"type": st.just("tool"), "tool": st.just("search"),
                           "args": st.fixed_dictionaries({"query": st.just("camera"),
                                                          "limit": st.integers(0, 9)})}),
    st.fixed_dictionaries({"type": st.just("tool"), "tool": st.just("reserve"),
                           "args": st.fixed_dictionaries({
                               "item": st.just(HIT),
                               "quantity": st.one_of(st.booleans(), st.just("1"), st.integers(-3, 0),
                                                     st.just(1.0)),
                               "version": st.integers(0, 9)})}),
    st.fixed_dictionaries({"type": st.just("tool"), "tool": st.just("reserve"),
                           "args": st.fixed_dictionaries({"item": st.just(HIT), "quantity": st.just(1),
                                                          "version": st.one_of(st.just(-1), st.just(True),
                                                                               st.just("7"))})}),
    st.fixed_dictionaries({"type": st.just("tool"), "tool": st.one_of(st.none(), st.integers()),
                           "args": st.just({})}),
    st.fixed_dictionaries({"type": st.just("finish"),
                           "status": st.one_of(st.sampled_from(["done", "Reserved", "", "success"]),
                                               st.none(), st.integers())}),
    st.fixed_dictionaries({"type": st.just("finish"), "status": st.sampled_from(["reserved", "info"]),
                           "receipt": st.text(max_size=8)}),
    st.fixed_dictionaries({"type": st.just("abstain"), "reason": st.one_of(st.none(), st.integers(),
                                                                           st.just(""))}),
    st.fixed_dictionaries({"type": st.just("tool"), "tool": st.just("search"),
                           "args": st.just({"query": "camera"}), "allow_write": st.just(True)}),
)

_unknown_names = st.text(min_size=1, max_size=16).filter(lambda s: s not in TOOLS)


def move_strategy(label: str) -> st.SearchStrategy:
    if label == "misdirected":
        return st.builds(lambda how, d: Move(label, (how, d)),
                         st.sampled_from(["search", "document", "stock", "version", "quantity", "item"]),
                         st.integers(1, 50))
    if label == "unknown_tool":
        return st.builds(lambda n, a: Move(label, (n, a)), _unknown_names,
                         st.dictionaries(st.text(max_size=6), _json_scalar, max_size=3))
    if label == "malformed":
        return _MALFORMED.map(lambda raw: Move(label, (raw,)))
    if label == "raises":
        return st.builds(lambda k, m: Move(label, (k, m)),
                         st.sampled_from(["ValueError", "KeyError", "TimeoutError", "OSError", "RuntimeError"]),
                         _texts)
    if label == "abstain":
        return st.one_of(st.just(Move(label)), _reason.map(lambda r: Move(label, (r,))))
    return st.just(Move(label))


def env_strategy(action: str, label: str) -> st.SearchStrategy:
    if label == "fail":
        return _texts.map(lambda e: Env("fail", (e,)))
    if label == "zero":
        return st.just(Env("zero"))
    if label == "one":
        return _ids.map(lambda i: Env("one", (i,)))
    if label == "many":
        return st.lists(_ids, min_size=2, max_size=5, unique=True).map(lambda hs: Env("many", tuple(hs)))
    if label in ("enough", "short"):
        return st.builds(lambda e, v: Env(label, (e, v)), st.integers(0, 50), st.integers(0, 10_000))
    if label == "ok" and action == "call_document":
        return _texts.map(lambda t: Env("ok", (t,)))
    return st.just(Env(label))
