"""Turning explored state indices and edges into readable traces."""

from __future__ import annotations

from haltproof.properties.kinds import Step, Trace

from .engine import Exploration, State, StepTaken


def _step(ex: Exploration, state: State, action: int, combo: int, rule: str | None) -> Step:
    m = ex.machine
    act = m.actions[action]
    return Step(m.state_dict(state), act.name, dict(act.labels[combo]), rule, m.spec.depths.get(act.name, 0))


def path_to(ex: Exploration, i: int) -> list[Step]:
    """The BFS path from an initial state to state i: a shortest one."""
    chain: list[int] = []
    while i != -1:
        chain.append(i)
        i = int(ex.parent[i])
    chain.reverse()
    steps = [Step(ex.machine.state_dict(ex.states[chain[0]]))]
    for j in chain[1:]:
        steps.append(_step(ex, ex.states[j], ex.via_action[j], ex.via_combo[j], ex.via_rule[j]))
    return steps


def path_trace(ex: Exploration, i: int, step: StepTaken | None = None) -> Trace:
    """A shortest path to state i, optionally followed by one more transition
    (action index, combo index, rule, successor) that may leave the explored space."""
    steps = path_to(ex, i)
    if step is not None:
        action, combo, rule, succ = step
        if succ is not None:
            steps.append(_step(ex, succ, action, combo, rule))
    return Trace(steps)


def edge_steps(ex: Exploration, edges: list[int]) -> list[Step]:
    """The steps along explored edges, each showing the state it leads to."""
    return [_step(ex, ex.states[ex.e_dst[e]], ex.e_action[e], ex.e_combo[e], ex.e_rule[e])
            for e in edges]


def lasso_trace(ex: Exploration, start: int, cycle: list[int]) -> Trace:
    """Prefix to `start`, then the cycle back to it; `loop_start` indexes the first visit."""
    steps = path_to(ex, start)
    loop_start = len(steps) - 1
    steps.extend(edge_steps(ex, cycle))
    return Trace(steps, "lasso", loop_start)


def run_trace(ex: Exploration, start: int, edges: list[int]) -> Trace:
    """The run from state `start` along `edges`."""
    steps = [Step(ex.machine.state_dict(ex.states[start]))]
    steps.extend(edge_steps(ex, edges))
    return Trace(steps)
