"""An OpenAI Agents SDK run under its runtime guard: the SDK's own run hooks, one model turn per
guarded step.

`GuardHooks(guard, labels=...)` is a `RunHooks` given to `Runner.run(..., hooks=...)`
(`run_guarded` does that); the state it shows the guard is the explorer's
(frameworks/openai_agents.py: `agent`, `status`, `turns`, `tool_runs`, `handoffs`,
`runs_TOOL`), counted by the same hooks the explorer counts with. When the model has answered
(`on_llm_end`) and before the SDK acts on the answer (runs a tool, hands off, ends), the guard
is asked `before(AGENT, {AGENT_says: label})`, the label the declaration gives an answer of the
same shape (a final text, a call of that tool, a handoff to that agent; `labels`: agent ->
label -> answer, the declaration's `models:`, read by `labels_of("support.yaml")`; without
labels the answer is the environment's). The turn's state goes to `after` when the
next model call starts, and on the final output with `status: done`, then `end`. A denial
raises `GuardStopped` out of `Runner.run`, before the SDK runs what the model asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from haltproof.guard import Decision, Guard

from .guard_hooks import Approve, Follower, state_of
from .openai_agents import Answer, Final, HandoffTo, ToolCall, model_choice, require_agents, slug

RUNS = "runs_"
UNDECLARED = "<undeclared>"
Shape = tuple[tuple[str, str], ...]


def guard_hooks(guard: Guard, *, labels: dict[str, dict[str, Any]] | None = None,
                approve: Approve | None = None) -> Any:
    """The SDK's RunHooks following one run through `guard` (a fresh one per run)."""
    require_agents()
    from agents import RunHooks

    follower = Follower(guard, approve)
    counted = [v[len(RUNS):] for v in guard.var_names if v.startswith(RUNS)]
    seen: dict[str, Any] = {"agent": "", "status": "running", "turns": 0, "tool_runs": 0, "handoffs": 0,
                            **{RUNS + t: 0 for t in counted}}
    turn = {"open": False}

    def now() -> dict[str, Any]:
        return state_of(guard, seen)

    class GuardHooks(RunHooks[Any]):
        follows = follower

        async def on_agent_start(self, context: Any, agent: Any) -> None:
            if not follower.decisions:
                seen["agent"] = agent.name
                follower.start(now())

        async def on_llm_start(self, context: Any, agent: Any, system_prompt: Any, input_items: Any) -> None:
            if turn["open"]:
                turn["open"] = False
                follower.after(now())

        async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
            seen["turns"] += 1
            turn["open"] = True
            declared = (labels or {}).get(agent.name)
            label = label_of(response.output, agent, declared or {})
            if label == UNDECLARED and declared:
                follower.check(_undeclared(guard, agent, response.output, declared))
            follower.before(slug(agent.name), {} if label in (None, UNDECLARED) else {model_choice(agent.name): label})

        async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
            seen["tool_runs"] += 1
            if tool.name in counted:
                seen[RUNS + tool.name] += 1

        async def on_handoff(self, context: Any, from_agent: Any, to_agent: Any) -> None:
            seen["handoffs"] += 1
            seen["agent"] = to_agent.name

        async def on_agent_end(self, context: Any, agent: Any, output: Any) -> None:
            seen["status"], seen["agent"], turn["open"] = "done", agent.name, False
            follower.after(now())
            follower.end()
    return GuardHooks()


async def run_guarded(agent: Any, given: Any, guard: Guard, *, labels: dict[str, dict[str, Any]] | None = None,
                      approve: Approve | None = None, **kwargs: Any) -> Any:
    """`Runner.run(agent, given, **kwargs)` with the guard's hooks; its result. Raises
    GuardStopped at the first event the guard does not allow."""
    require_agents()
    from agents import Runner
    return await Runner.run(agent, given, hooks=guard_hooks(guard, labels=labels, approve=approve), **kwargs)


def labels_of(declaration: str) -> dict[str, dict[str, Any]]:
    """The declared answers of a `framework: openai_agents` file: agent -> label -> answer."""
    from haltproof.machine.spec import load_spec
    adapter = load_spec(declaration).adapter
    if adapter is None:
        raise ValueError(f"{declaration} is not a framework declaration")
    models: dict[str, dict[str, Any]] = dict(adapter().d.models)
    return models


def label_of(output: Sequence[Any], agent: Any, labels: dict[str, Answer | Sequence[Answer]]) -> str | None:
    """The declared label of the model's answer: the one of the same shape; several: None (the
    answer counts as the environment's); none: UNDECLARED."""
    shape = _shape_of_output(output, agent)
    same = [label for label, answer in labels.items() if _shape_of_answer(answer) == shape]
    return same[0] if len(same) == 1 else None if same else UNDECLARED


def _undeclared(guard: Guard, agent: Any, output: Sequence[Any], labels: dict[str, Any]) -> Decision:
    """An answer of no declared shape: a model escape at the step it would take, decided as the
    guard decides escapes (denied unless it was loaded with another `on_escape`)."""
    shape = ", ".join(f"{kind} {what}".strip() for kind, what in _shape_of_output(output, agent))
    step = guard.taken + 1
    return Decision(guard.on_escape, "before", step, f"model escape at step {step}: {agent.name}'s model answered "
                    f"({shape}), none of its declared answers ({', '.join(labels)})", slug(agent.name), {},
                    escape=True)


def _shape_of_answer(answer: Answer | Sequence[Answer]) -> Shape:
    answers = [answer] if isinstance(answer, Final | ToolCall | HandoffTo) else list(answer)
    return tuple(("final", "") if isinstance(a, Final) else ("tool", a.name) if isinstance(a, ToolCall)
                 else ("handoff", a.agent) for a in answers)


def _shape_of_output(output: Sequence[Any], agent: Any) -> Shape:
    """What the model's output items do: a message (final text), a tool call, a handoff (the
    current agent's handoff tool for that agent, as the SDK offers it)."""
    from agents import Handoff
    handoffs: dict[str, str] = {}
    for h in getattr(agent, "handoffs", []):
        if isinstance(h, Handoff):
            handoffs[h.tool_name] = h.agent_name
        else:
            handoffs[Handoff.default_tool_name(h)] = h.name
    out: list[tuple[str, str]] = []
    for item in output:
        kind = getattr(item, "type", None)
        if kind == "message":
            out.append(("final", ""))
        elif kind == "function_call":
            name = item.name
            out.append(("handoff", handoffs[name]) if name in handoffs else ("tool", name))
    return tuple(out)
