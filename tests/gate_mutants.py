"""Test-only broken variants of the gate layer, and adapters that bind them to
specs/gate_chain.yaml. Nothing here ships.

Each adapter subclasses haltproof.harness.gate_binding.GateChainAdapter and swaps one piece of
the real code (a gate, the chain, the loop) for a broken twin; the bound explorer must
catch every one with a shortest counterexample. Specs name them as
`bind: gate_mutants:Name` (the tests directory is on sys.path while pytest runs).
"""

from __future__ import annotations

from typing import Any

from haltproof.harness.gate_binding import GateChainAdapter
from haltproof.harness.gate_loop import GateLoop, GateLoopConfig
from haltproof.harness.gates import (BudgetGate, GateChain, GateContext, GateDecision, PerToolBudgetGate, RecencyGate,
                           ToolCall)


def _swap(gates: list[Any], cls: type, new: Any) -> list[Any]:
    out = [new if isinstance(g, cls) else g for g in gates]
    assert any(g is new for g in out), f"no {cls.__name__} in the chain"
    return out


# ------------------------------------------------------------------ budgets

class BudgetAtLeastGate(BudgetGate):
    """Denies when cumulative + reservation >= budget: a call that fits exactly is refused."""

    def evaluate(self, call: ToolCall, ctx: GateContext) -> GateDecision:
        if ctx.ledger.cumulative() + call.max_tokens >= self.budget:
            return GateDecision(False, "budget (mutant: >=)", self.name)
        return GateDecision(True, "fits (mutant)", self.name)


class BudgetAtLeast(GateChainAdapter):
    def make_gates(self, config: GateLoopConfig) -> list[Any]:
        return _swap(super().make_gates(config), BudgetGate, BudgetAtLeastGate(config.token_budget))


class BudgetReachedOnlyGate(BudgetGate):
    """Only the seed's literal rule (deny once cumulative >= budget), without the
    reservation: a call that does not fit is allowed and the ledger passes the budget."""

    def evaluate(self, call: ToolCall, ctx: GateContext) -> GateDecision:
        if ctx.ledger.cumulative() >= self.budget:
            return GateDecision(False, "budget reached (mutant)", self.name)
        return GateDecision(True, "not reached yet (mutant)", self.name)


class BudgetReachedOnly(GateChainAdapter):
    def make_gates(self, config: GateLoopConfig) -> list[Any]:
        return _swap(super().make_gates(config), BudgetGate, BudgetReachedOnlyGate(config.token_budget))


class PerToolAtLeastGate(PerToolBudgetGate):
    def evaluate(self, call: ToolCall, ctx: GateContext) -> GateDecision:
        cap = self.caps.get(call.tool)
        if cap is not None and ctx.ledger.per_tool(call.tool) + call.max_tokens >= cap:
            return GateDecision(False, "per-tool budget (mutant: >=)", self.name)
        return GateDecision(True, "fits (mutant)", self.name)


class PerToolAtLeast(GateChainAdapter):
    def make_gates(self, config: GateLoopConfig) -> list[Any]:
        return _swap(super().make_gates(config), PerToolBudgetGate, PerToolAtLeastGate(config.per_tool_budgets))


# ------------------------------------------------------------------ the chain

class LastDecisionChain(GateChain):
    """Evaluates every gate and returns the last gate's decision."""

    def evaluate(self, call: ToolCall, ctx: GateContext) -> GateDecision:
        trail = tuple(g.evaluate(call, ctx) for g in self.gates)
        last = trail[-1]
        return GateDecision(last.allow, last.reason, last.gate_name, trail)


class LastDecision(GateChainAdapter):
    chain_class = LastDecisionChain


class NoShortCircuitChain(GateChain):
    """Returns the right decision (the first DENY) but evaluates every gate anyway."""

    def evaluate(self, call: ToolCall, ctx: GateContext) -> GateDecision:
        trail = tuple(g.evaluate(call, ctx) for g in self.gates)
        first = next((d for d in trail if not d.allow), None)
        if first is None:
            return GateDecision(True, "all allow", self.name, trail)
        return GateDecision(False, first.reason, first.gate_name, trail)


class NoShortCircuit(GateChainAdapter):
    chain_class = NoShortCircuitChain


# ------------------------------------------------------------------ the loop

class UncountedRefusalLoop(GateLoop):
    """Tells the model about a refusal but forgets to count it."""

    def refuse(self, turn: int, call: ToolCall, decision: GateDecision) -> None:
        before = self.refusal_count
        super().refuse(turn, call, decision)
        self.refusal_count = before


class UncountedRefusal(GateChainAdapter):
    loop_class = UncountedRefusalLoop


class UnclippedLoop(GateLoop):
    """Shows the model the whole tool output, ignoring the call's reservation."""

    def observe(self, call: ToolCall, output: str) -> str:
        return output


class Unclipped(GateChainAdapter):
    loop_class = UnclippedLoop


# ------------------------------------------------------------------ the recency window, off by one

class RecencyStrictGate(RecencyGate):
    """Off by one, too strict: the oldest visible turn t - N counts as expired."""

    def evaluate(self, call: ToolCall, ctx: GateContext) -> GateDecision:
        if call.extends is not None and not (ctx.turn - self.window < call.extends < ctx.turn):
            return GateDecision(False, "expired (mutant)", self.name)
        return GateDecision(True, "visible (mutant)", self.name)


class RecencyStrict(GateChainAdapter):
    def make_gates(self, config: GateLoopConfig) -> list[Any]:
        return _swap(super().make_gates(config), RecencyGate, RecencyStrictGate(config.window))


class RecencyLenientGate(RecencyGate):
    """Off by one, too lenient: the newest expired turn t - N - 1 still counts as visible."""

    def evaluate(self, call: ToolCall, ctx: GateContext) -> GateDecision:
        if call.extends is not None and not (ctx.turn - self.window - 1 <= call.extends < ctx.turn):
            return GateDecision(False, "expired (mutant)", self.name)
        return GateDecision(True, "visible (mutant)", self.name)


class RecencyLenient(GateChainAdapter):
    def make_gates(self, config: GateLoopConfig) -> list[Any]:
        return _swap(super().make_gates(config), RecencyGate, RecencyLenientGate(config.window))


# ------------------------------------------------------------------ recording: the real chain, every time

CHAIN_CALLS: list[str] = []


class RecordingChain(GateChain):
    def evaluate(self, call: ToolCall, ctx: GateContext) -> GateDecision:
        decision = super().evaluate(call, ctx)
        CHAIN_CALLS.append(decision.gate_name)
        return decision


class Recording(GateChainAdapter):
    """Copies runs instead of replaying them, so the chain runs once per transition (and
    once more for the determinism check), never to replay a path."""

    chain_class = RecordingChain
    copyable = True
