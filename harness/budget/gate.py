"""The one gate every policy goes through: validate, authorize, budget, finalize.

These are pure functions of a proposed action and the run state (a plain dict, see
`transitions.new_run`). They never touch SQLite, the network or a policy object, so
`specs/budget_runner.yaml` can run them on every reachable state in milliseconds, and
the SQLite runner calls exactly these functions, so the proof covers what runs.

A check that fails raises a `Stop` carrying the terminal it leads to and the name of
the rule (the same names as the spec's decide rules):

| check            | raises                                         | rule |
|------------------|------------------------------------------------|------|
| validate_action  | PolicyViolation: not an action object          | malformed |
|                  | PolicyViolation: a tool that does not exist    | unknown_tool |
| authorize        | PolicyViolation: permission, target or version | unauthorized |
| check_budget     | BudgetExhausted: c < K does not hold           | budget_exhausted |
| finalize         | PolicyViolation: no supporting observation     | unsupported_finish |
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

TOOLS = ("search", "document", "stock", "reserve")
WRITE_TOOLS = ("reserve",)
FINAL_STATUSES = ("reserved", "info")
GOALS = ("reserve", "info")

MAX_TEXT = 200            # longest query, item id or reason a policy may send
MAX_QUANTITY = 1000
MAX_VERSION = 2**31 - 1

# the argument each tool takes: name -> (type, description)
ARGS: dict[str, dict[str, type]] = {
    "search": {"query": str},
    "document": {"item": str},
    "stock": {"item": str},
    "reserve": {"item": str, "quantity": int, "version": int},
}

Run = dict[str, Any]
Action = dict[str, Any]


class Stop(Exception):
    """A check failed: the run ends in `status`; `rule` names the check that decided it."""

    status = "policy_error"
    rule = "malformed"

    def __init__(self, reason: str, rule: str | None = None):
        super().__init__(reason)
        self.reason = reason
        if rule is not None:
            self.rule = rule


class PolicyViolation(Stop):
    """The policy proposed something the executor refuses: the run ends in policy_error."""

    status = "policy_error"


class BudgetExhausted(Stop):
    """The pre-call check c < K failed: the run ends in budget_exhausted."""

    status = "budget_exhausted"
    rule = "budget_exhausted"


# ------------------------------------------------------------------ what the observations support

@dataclass(frozen=True)
class Stock:
    available: int
    version: int


@dataclass(frozen=True)
class Facts:
    """What the recorded observations establish (failed attempts establish nothing).

    - hits: the item ids of the FIRST successful search (None: no search succeeded). The
      catalogue is read-only during a run and the query is the task's, so the first
      successful search fixes the target; later searches are allowed but change nothing.
    - hit: the unique hit, when that search found exactly one item.
    - document: the hit's document was read.
    - stock: the LATEST successful stock reading of the hit.
    - receipt: the receipt of a successful reservation of the hit.
    """

    hits: tuple[str, ...] | None
    hit: str | None
    document: bool
    stock: Stock | None
    receipt: str | None


def facts_of(run: Run) -> Facts:
    """The facts of a run (or of a policy's view: both have task and observations)."""
    observations = run["observations"]
    hits: tuple[str, ...] | None = None
    for o in observations:
        if o["ok"] and o["tool"] == "search":
            hits = tuple(o["result"]["hits"])
            break
    hit = hits[0] if hits is not None and len(hits) == 1 else None
    document = False
    stock = None
    receipt = None
    if hit is not None:
        for o in observations:
            if not o["ok"]:
                continue
            tool, result = o["tool"], o["result"]
            if tool == "document" and result["item"] == hit:
                document = True
            elif tool == "stock" and result["item"] == hit:
                stock = Stock(result["available"], result["version"])
            elif tool == "reserve" and result["item"] == hit and receipt is None:
                receipt = result["receipt"]
    return Facts(hits, hit, document, stock, receipt)


# ------------------------------------------------------------------ validate_action

def _malformed(reason: str) -> PolicyViolation:
    return PolicyViolation(f"malformed action: {reason}", "malformed")


def checked_text(value: Any, what: str) -> str:
    """`value` if it is a non-empty string of at most MAX_TEXT characters; a malformed action otherwise."""
    if not isinstance(value, str) or not value.strip():
        raise _malformed(f"{what} must be a non-empty string, got {_show(value)}")
    if len(value) > MAX_TEXT:
        raise _malformed(f"{what} is longer than {MAX_TEXT} characters")
    return value


def _int(value: Any, what: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _malformed(f"{what} must be an integer, got {_show(value)}")
    if not lo <= value <= hi:
        raise _malformed(f"{what} must be in {lo}..{hi}, got {value}")
    return value


def _keys(raw: dict[str, Any], allowed: set[str], required: set[str], what: str) -> None:
    extra = sorted(k for k in raw if k not in allowed)
    if extra:
        raise _malformed(f"{what} has the unexpected field {_show(extra[0])} "
                         f"(allowed: {', '.join(sorted(allowed))})")
    missing = sorted(required - set(raw))
    if missing:
        raise _malformed(f"{what} lacks the field {missing[0]!r}")


def validate_action(raw: Any) -> Action:
    """Check one proposal's shape and return it normalized (a new dict the policy cannot touch).

    {"type": "tool", "tool": NAME, "args": {...}}   NAME one of TOOLS, args exactly ARGS[NAME]
    {"type": "finish", "status": "reserved" | "info"}
    {"type": "abstain", "reason": TEXT}             reason optional
    """
    if not isinstance(raw, dict):
        raise _malformed(f"an action is a JSON object, got {_kind(raw)}")
    kind = raw.get("type")
    if kind == "tool":
        _keys(raw, {"type", "tool", "args"}, {"type", "tool", "args"}, "a tool action")
        tool = raw["tool"]
        if not isinstance(tool, str):
            raise _malformed(f"tool must be a string, got {_show(tool)}")
        if tool not in TOOLS:
            raise PolicyViolation(f"unknown tool {_show(tool)}: it never runs "
                                  f"(tools: {', '.join(TOOLS)})", "unknown_tool")
        args = raw["args"]
        if not isinstance(args, dict):
            raise _malformed(f"args of {tool} must be an object, got {_kind(args)}")
        schema = ARGS[tool]
        _keys(args, set(schema), set(schema), f"args of {tool}")
        clean: dict[str, Any] = {}
        for name, typ in schema.items():
            if typ is str:
                clean[name] = checked_text(args[name], f"{tool}.{name}")
            elif name == "quantity":
                clean[name] = _int(args[name], f"{tool}.{name}", 1, MAX_QUANTITY)
            else:
                clean[name] = _int(args[name], f"{tool}.{name}", 0, MAX_VERSION)
        return {"type": "tool", "tool": tool, "args": clean}
    if kind == "finish":
        _keys(raw, {"type", "status"}, {"type", "status"}, "a finish action")
        status = raw["status"]
        if status not in FINAL_STATUSES:
            raise _malformed(f"finish status must be one of {', '.join(FINAL_STATUSES)}, "
                             f"got {_show(status)}")
        return {"type": "finish", "status": status}
    if kind == "abstain":
        _keys(raw, {"type", "reason"}, {"type"}, "an abstain action")
        reason = checked_text(raw["reason"], "abstain.reason") if "reason" in raw else "the policy abstained"
        return {"type": "abstain", "reason": reason}
    if "type" not in raw:
        raise _malformed("the field 'type' is missing (tool, finish or abstain)")
    raise _malformed(f"type must be tool, finish or abstain, got {_show(kind)}")


# ------------------------------------------------------------------ authorize

def _refuse(reason: str) -> PolicyViolation:
    return PolicyViolation(f"unauthorized: {reason}", "unauthorized")


def authorize(action: Action, run: Run) -> None:
    """Permission, target and version of a validated tool action, against the run's facts.

    - search: only the task's own query (a policy cannot redirect the run);
    - document, stock: only the unique hit of the search;
    - reserve (the only write): the task must be a reserve task; nothing reserved yet;
      the unique hit, its document read, its stock read with enough available; the
      task's quantity; and the version of that stock reading (optimistic concurrency).
    """
    task = run["task"]
    tool, args = action["tool"], action["args"]
    if tool == "search":
        if args["query"] != task["query"]:
            raise _refuse(f"search for {_show(args['query'])}, but the task asks for "
                          f"{_show(task['query'])}")
        return
    facts = facts_of(run)
    if tool in ("document", "stock"):
        if facts.hit is None:
            raise _refuse(f"{tool} needs the unique hit of a search; there is {_hits_text(facts)}")
        if args["item"] != facts.hit:
            raise _refuse(f"{tool} of {_show(args['item'])}, but the search found {_show(facts.hit)}")
        return
    # reserve
    if task["goal"] != "reserve":
        raise _refuse(f"the task ({task['goal']}) does not permit writing the inventory")
    if facts.receipt is not None:
        raise _refuse(f"already reserved (receipt {facts.receipt}); a second reservation is refused")
    if facts.hit is None:
        raise _refuse(f"reserve needs the unique hit of a search; there is {_hits_text(facts)}")
    if args["item"] != facts.hit:
        raise _refuse(f"reserve of {_show(args['item'])}, but the search found {_show(facts.hit)}")
    if not facts.document:
        raise _refuse(f"the document of {facts.hit} was not read")
    if facts.stock is None:
        raise _refuse(f"the stock of {facts.hit} was not read")
    if args["quantity"] != task["quantity"]:
        raise _refuse(f"quantity {args['quantity']}, but the task asks for {task['quantity']}")
    if facts.stock.available < args["quantity"]:
        raise _refuse(f"only {facts.stock.available} of {facts.hit} available, "
                      f"{args['quantity']} asked")
    if args["version"] != facts.stock.version:
        raise _refuse(f"version {args['version']} is not the observed stock version "
                      f"{facts.stock.version}")


# ------------------------------------------------------------------ the budget

def budget_allows(calls: int, K: int) -> bool:
    """The pre-call check: one more real tool call is allowed while c < K."""
    return calls < K


def check_budget(run: Run) -> None:
    """Raise BudgetExhausted unless one more tool call fits: c < K. Checked only when a
    tool call is prepared or retried - never for finish or abstain."""
    if not budget_allows(run["calls"], run["K"]):
        raise BudgetExhausted(f"budget exhausted: {run['calls']} of K={run['K']} tool attempts used; "
                              "the next tool call is not made")


# ------------------------------------------------------------------ finalize

def _unsupported(reason: str) -> PolicyViolation:
    return PolicyViolation(f"unsupported final status: {reason}", "unsupported_finish")


def finalize(action: Action, run: Run) -> dict[str, Any]:
    """The terminal of a validated finish action, or PolicyViolation when the observations
    do not support it. `finish reserved` needs an observed reserve receipt (reserve task);
    `finish info` needs a unique hit and its document (info task). The budget plays no part:
    a supported finish at c == K is accepted."""
    task = run["task"]
    status = action["status"]
    facts = facts_of(run)
    if status == "reserved":
        if task["goal"] != "reserve":
            raise _unsupported(f"'reserved' on a task whose goal is {task['goal']}")
        if facts.receipt is None:
            raise _unsupported("'reserved' without an observed reserve receipt")
        return {"status": "finished", "final": "reserved", "rule": "finished_reserved",
                "reason": f"reserved {task['quantity']} x {facts.hit} (receipt {facts.receipt})",
                "receipt": facts.receipt}
    if task["goal"] != "info":
        raise _unsupported(f"'info' on a task whose goal is {task['goal']}")
    if facts.hit is None:
        raise _unsupported(f"'info' needs a unique search hit; there is {_hits_text(facts)}")
    if not facts.document:
        raise _unsupported(f"'info' needs the document of {facts.hit}, which was not read")
    return {"status": "finished", "final": "info", "rule": "finished_info",
            "reason": f"the document of {facts.hit} answers the task", "item": facts.hit}


# ------------------------------------------------------------------ the gate as one value

@dataclass(frozen=True)
class Gate:
    """The checks the runner applies, as one value (tests swap one out to build mutants)."""

    validate_action: Callable[[Any], Action] = validate_action
    authorize: Callable[[Action, Run], None] = authorize
    check_budget: Callable[[Run], None] = check_budget
    finalize: Callable[[Action, Run], dict[str, Any]] = finalize

    def replace(self, **changes: Callable[..., Any]) -> Gate:
        return replace(self, **changes)


GATE = Gate()


# ------------------------------------------------------------------ helpers

def _hits_text(facts: Facts) -> str:
    if facts.hits is None:
        return "no successful search"
    n = len(facts.hits)
    return "no hit" if n == 0 else f"{n} hits"


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
            int: "a number", float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
