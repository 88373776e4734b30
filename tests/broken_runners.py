"""Test-only mutants of the budgeted runner (haltproof.harness.budget), and adapters that bind them.

Nothing here ships. Each mutant is one of the mistakes seed S2 warns about, written the
way it would slip into the runner: a gate function swapped, or one transition changed.
Each adapter subclasses the shipped BudgetRunnerAdapter, so the bound explorer runs the
mutant on every state of specs/budget_runner.yaml; the tests demand that it is caught,
with a shortest trace. Specs name them `bind: broken_runners:Name` (tests/ is on
sys.path while pytest runs).
"""

from __future__ import annotations

from typing import Any

from haltproof.harness.budget import gate as G
from haltproof.harness.budget import transitions as T
from haltproof.harness.budget.binding import BudgetRunnerAdapter

Run = dict[str, Any]


# ------------------------------------------------------------------ 1. c == K treated as "everything stops"

def finalize_stops_at_K(action: dict[str, Any], run: Run) -> dict[str, Any]:
    """finalize that consults the budget: at c == K even a supported finish is refused."""
    if not G.budget_allows(run["calls"], run["K"]):
        raise G.BudgetExhausted(f"budget exhausted: {run['calls']} of K={run['K']} used, so everything stops")
    return G.finalize(action, run)


class FinishExhaustedAtK(BudgetRunnerAdapter):
    gate = G.GATE.replace(finalize=finalize_stops_at_K)


# ------------------------------------------------------------------ 2. the budget checked after the call

def no_pre_call_check(run: Run) -> None:
    """The pre-call check c < K is gone, both when a call is prepared and before a retry."""


def record_attempt_then_check(run: Run, outcome: dict[str, Any]) -> str:
    """... and the budget is looked at only once the call was made."""
    rule = T.record_attempt(run, outcome)
    if run["terminal"] is None and run["calls"] > run["K"]:
        run["terminal"] = {"status": "budget_exhausted", "final": None, "rule": "budget_exhausted",
                           "reason": "over budget (noticed after the call)"}
        return "budget_exhausted"
    return rule


class BudgetAfterCall(BudgetRunnerAdapter):
    gate = G.GATE.replace(check_budget=no_pre_call_check)
    record_attempt = staticmethod(record_attempt_then_check)


# ------------------------------------------------------------------ 3. finalize without the receipt

def finalize_trusting(action: dict[str, Any], run: Run) -> dict[str, Any]:
    """`finish reserved` on a reserve task is believed: the receipt is never looked for."""
    if action["status"] == "reserved" and run["task"]["goal"] == "reserve":
        return {"status": "finished", "final": "reserved", "rule": "finished_reserved",
                "reason": "the policy says it is reserved"}
    return G.finalize(action, run)


class FinishWithoutReceipt(BudgetRunnerAdapter):
    gate = G.GATE.replace(finalize=finalize_trusting)


# ------------------------------------------------------------------ 4. abstain that does not end the run

def consult_abstain_goes_on(run: Run, policy: Any, gate: G.Gate = G.GATE) -> str:
    """Notes the abstention and asks again next time: the run never ends."""
    view = T.observable_view(run)
    try:
        raw = policy(view)
    except Exception as exc:
        return T._end(run, "policy_error", "policy_raised", f"the policy failed: {exc}")
    if isinstance(raw, dict) and raw.get("type") == "abstain":
        return "abstained"
    return T.judge(run, raw, gate)


class AbstainGoesOn(BudgetRunnerAdapter):
    consult = staticmethod(consult_abstain_goes_on)


# ------------------------------------------------------------------ a rewrite that must still be proved

def check_budget_reworded(run: Run) -> None:
    """The same check written as K - c > 0, with its own message."""
    if not run["K"] - run["calls"] > 0:
        raise G.BudgetExhausted("no attempts left")


class ReworderBudget(BudgetRunnerAdapter):
    gate = G.GATE.replace(check_budget=check_budget_reworded)
