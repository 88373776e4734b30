"""The run's state transitions, as pure functions of a plain run dict.

A run state is JSON-shaped data (it is what the SQLite store persists):

    {"run_id": "run-1", "task": {"goal": "reserve", "query": "camera", "quantity": 1},
     "K": 4, "R": 2, "calls": 0, "decisions": 0, "observations": [...],
     "pending": None | {"action": {...}, "key": "run-1/0", "attempts": 0, "started": False},
     "terminal": None | {"status": ..., "final": ..., "rule": ..., "reason": ...}}

`calls` is c, the tool attempts counted so far; `decisions` counts the tool actions
prepared (a LocalJSONPolicy reads its list at this index); `pending` is the tool action
being attempted, kept across failed attempts so a retry never asks the policy again;
`started` marks an attempt that was counted (c + 1 persisted) and whose result is not
recorded yet. The runner (haltproof.harness.budget.runner) persists the state after every
transition below; the adapter (haltproof.harness.budget.binding) runs the same functions on
every state of specs/budget_runner.yaml.

Each transition returns the name of the rule that decided it (the spec's rule names).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .gate import GATE, GOALS, MAX_QUANTITY, Gate, Run, Stop, checked_text

Policy = Callable[[dict[str, Any]], Any]

STATUSES = ("finished", "policy_error", "budget_exhausted", "abstained", "error")


class TaskError(ValueError):
    """A task, K or R that a run cannot start with."""


def check_task(task: Any) -> dict[str, Any]:
    """A structured task: {"goal": "reserve", "query": TEXT, "quantity": N} or
    {"goal": "info", "query": TEXT}."""
    if not isinstance(task, dict):
        raise TaskError("a task is an object with goal and query")
    goal = task.get("goal")
    if goal not in GOALS:
        raise TaskError(f"task goal must be one of {', '.join(GOALS)}, got {goal!r}")
    allowed = {"goal", "query", "quantity"} if goal == "reserve" else {"goal", "query"}
    extra = sorted(set(task) - allowed)
    if extra:
        raise TaskError(f"unexpected task field {extra[0]!r} (allowed: {', '.join(sorted(allowed))})")
    try:
        query = checked_text(task.get("query"), "task query")
    except Stop as exc:
        raise TaskError(str(exc).replace("malformed action: ", "")) from None
    out: dict[str, Any] = {"goal": goal, "query": query}
    if goal == "reserve":
        q = task.get("quantity", 1)
        if isinstance(q, bool) or not isinstance(q, int) or not 1 <= q <= MAX_QUANTITY:
            raise TaskError(f"task quantity must be an integer in 1..{MAX_QUANTITY}, got {q!r}")
        out["quantity"] = q
    return out


def check_limits(K: Any, R: Any) -> None:
    for name, value, hi in (("K", K, 1000), ("R", R, 100)):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= hi:
            raise TaskError(f"{name} must be an integer in 0..{hi}, got {value!r}")


def new_run(run_id: str, task: dict[str, Any], K: int, R: int) -> Run:
    check_limits(K, R)
    return {"run_id": run_id, "task": check_task(task), "K": K, "R": R, "calls": 0, "decisions": 0,
            "observations": [], "pending": None, "terminal": None}


_SCALARS = (str, int, float, bool, type(None))


def json_copy(value: Any) -> Any:
    """A deep copy of JSON data (dicts with string keys, lists, scalars); anything else is refused,
    so no handle, connection or function can reach a policy through the view."""
    kind = type(value)
    if kind is dict:
        return {(k if type(k) is str else _key(k)): json_copy(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [json_copy(v) for v in value]
    if kind in _SCALARS:
        return value
    raise TypeError(f"not JSON data: {kind.__name__}")


def _key(k: Any) -> str:
    if isinstance(k, str):
        return str(k)
    raise TypeError(f"not JSON data: a {type(k).__name__} as an object key")


def observable_view(run: Run) -> dict[str, Any]:
    """What a policy sees: a deep copy of the task, observations, pending call and counters.
    Changing it changes nothing in the run."""
    view: dict[str, Any] = json_copy({"run_id": run["run_id"], "task": run["task"],
                                      "observations": run["observations"], "pending": run["pending"],
                                      "calls": run["calls"], "decisions": run["decisions"],
                                      "K": run["K"], "R": run["R"]})
    return view


def _end(run: Run, status: str, rule: str, reason: str, **extra: Any) -> str:
    run["terminal"] = {"status": status, "final": None, "rule": rule, "reason": reason, **extra}
    return rule


def consult(run: Run, policy: Policy, gate: Gate = GATE) -> str:
    """Ask the policy for one action (it gets a deep copy of the view) and judge it.
    Only called when nothing is pending: a pending call is retried without asking."""
    assert run["terminal"] is None and run["pending"] is None
    view = observable_view(run)
    try:
        raw = policy(view)
    except Exception as exc:           # any failure of the policy: HTTP, file, its own bug
        return _end(run, "policy_error", "policy_raised",
                    f"the policy failed: {type(exc).__name__}: {exc}")
    return judge(run, raw, gate)


def judge(run: Run, raw: Any, gate: Gate = GATE) -> str:
    """The gate applied to one raw proposal: end the run, or prepare the tool call."""
    try:
        action = gate.validate_action(raw)
        if action["type"] == "abstain":
            return _end(run, "abstained", "abstained", action["reason"])
        if action["type"] == "finish":
            terminal = gate.finalize(action, run)
            run["terminal"] = terminal
            rule: str = terminal["rule"]
            return rule
        gate.authorize(action, run)
        gate.check_budget(run)
    except Stop as stop:
        return _end(run, stop.status, stop.rule, stop.reason)
    run["pending"] = {"action": action, "key": f"{run['run_id']}/{run['decisions']}",
                      "attempts": 0, "started": False}
    run["decisions"] += 1
    return "prepared"


def begin_attempt(run: Run, gate: Gate = GATE) -> str | None:
    """Before a real call: check c < K, then count the attempt (c + 1). The runner persists
    the result of this before it calls the tool. Returns 'budget_exhausted' or None."""
    pending = run["pending"]
    assert run["terminal"] is None and pending is not None and not pending["started"]
    try:
        gate.check_budget(run)
    except Stop as stop:
        return _end(run, stop.status, stop.rule, stop.reason)
    run["calls"] += 1
    pending["attempts"] += 1
    pending["started"] = True
    return None


def record_attempt(run: Run, outcome: dict[str, Any]) -> str:
    """Record the result of the started attempt: {"ok": true, "result": {...}} or
    {"ok": false, "error": TEXT}. A failure is retried while attempts <= R."""
    pending = run["pending"]
    assert run["terminal"] is None and pending is not None and pending["started"]
    action = pending["action"]
    obs: dict[str, Any] = {"attempt": run["calls"], "tool": action["tool"], "args": dict(action["args"]),
                           "key": pending["key"], "try": pending["attempts"], "ok": bool(outcome["ok"])}
    if outcome["ok"]:
        obs["result"] = outcome["result"]
    else:
        obs["error"] = str(outcome["error"])
    for extra in ("recovered",):
        if outcome.get(extra):
            obs[extra] = True
    run["observations"].append(obs)
    pending["started"] = False
    if outcome["ok"]:
        run["pending"] = None
        return "succeeded"
    if pending["attempts"] > run["R"]:
        return _end(run, "error", "gave_up",
                    f"{action['tool']} failed {pending['attempts']} time(s), more than R={run['R']} "
                    f"retries allow: {obs['error']}")
    return "retry"


INTERRUPTED = ("interrupted: the process stopped after this attempt was counted and before its "
               "result was recorded; the outcome is unknown")


def recover(run: Run, receipt: dict[str, Any] | None) -> str:
    """Resume after the process died during an attempt (counted, result not recorded).

    `receipt` is what the effect ledger holds under the pending action's idempotency key
    (only a reserve has an effect). If the reservation landed, its receipt becomes the
    attempt's result ('recovered'): nothing is applied twice and no attempt is added.
    Otherwise the attempt is recorded as failed - it stays counted, because the call may
    have happened - and the usual retry rule applies ('retry' or 'gave_up')."""
    pending = run["pending"]
    assert run["terminal"] is None and pending is not None and pending["started"]
    if pending["action"]["tool"] == "reserve" and receipt is not None:
        record_attempt(run, {"ok": True, "result": receipt, "recovered": True})
        return "recovered"
    return record_attempt(run, {"ok": False, "error": INTERRUPTED})


def outcome_of(run: Run) -> str:
    """One line: the terminal status and its reason."""
    t = run["terminal"]
    if t is None:
        return "running"
    head = f"{t['status']} ({t['final']})" if t.get("final") else t["status"]
    return f"{head}: {t['reason']}"
