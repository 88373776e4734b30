"""A Pydantic AI agent run under its runtime guard, one node of its agent graph per guarded step.

`await run_guarded(agent, prompt, guard, labels=...)` runs the user's agent through
`Agent.iter()` as the explorer does (frameworks/pydantic_ai.py) and returns the run's result
(what `agent.run` returns): before each node runs the guard is asked (`before(request)` for a
model request, `before(tools)` for the tool calls, their outcomes the environment's), after it
the state goes to `after`, read by the explorer's own mapping (`AgentAdapter.abstract` and its
`READINGS`: `next`, `response`, `requests`, `tool_calls`, `tool_runs`, `tool_retries`,
`output_retries`, `status`). Tool executions are counted by the explorer's toolset wrapper,
which here runs every real tool. The model's response is named by the declaration's label of
the same shape (`labels`: label -> ModelResponse, the declaration's `models:`, read by
`labels_of("weather.yaml")` outside any running event loop); a response of no declared shape is
a model escape. A denial stops the run before the node runs: `GuardStopped` carries the packet.
"""

from __future__ import annotations

from typing import Any

from haltproof.guard import Guard

from .guard_hooks import Approve, Follower, state_of
from .pydantic_ai import END, READINGS, AgentAdapter, AgentLive, node_kind, require_pydantic_ai, scripted_tools

ACTIONS = {"model_request": "request", "call_tools": "tools"}      # the declared spec's action per node kind
UNDECLARED = "<undeclared>"


async def run_guarded(agent: Any, prompt: str, guard: Guard, *, labels: dict[str, Any] | None = None,
                      approve: Approve | None = None, **iter_kwargs: Any) -> Any:
    """Run `agent` on `prompt` (`Agent.iter(prompt, **iter_kwargs)`), each node guarded; the run's
    result. Raises GuardStopped at the first event the guard does not allow."""
    require_pydantic_ai()
    reader = _reader(guard)
    if "response" in guard.var_names and labels is None:
        raise ValueError(f"the guard of {guard.spec_name} follows the model's response by its label: give "
                         "labels=labels_of(DECLARATION)")
    follower = Follower(guard, approve)
    live = AgentLive()
    capabilities = [*iter_kwargs.pop("capabilities", []), scripted_tools(AgentAdapter(), live.script)]
    async with agent.iter(prompt, capabilities=capabilities, **iter_kwargs) as run:
        live.run = run
        live.node = await run.next(run.next_node)       # the user prompt: no model request, no choice
        follower.start(state_of(guard, reader.abstract(live)))
        while node_kind(live.node) != END:
            kind = node_kind(live.node)
            follower.before(ACTIONS.get(kind, kind))
            live.node = await run.next(live.node)
            if kind == "model_request":
                live.response = label_of(live.node.model_response, labels or {})
            if node_kind(live.node) == END:
                live.status = "done"
            follower.after(state_of(guard, reader.abstract(live)))
        follower.end()
        return run.result


def labels_of(declaration: str) -> dict[str, Any]:
    """The declared model responses of a `framework: pydantic_ai` file, by label. Loading it runs
    the agent up to its first model request on an event loop of its own: call it before yours."""
    from haltproof.machine.spec import load_spec
    adapter = load_spec(declaration).adapter
    if adapter is None:
        raise ValueError(f"{declaration} is not a framework declaration")
    responses: dict[str, Any] = adapter().responses
    return responses


def label_of(response: Any, labels: dict[str, Any]) -> str:
    """The declared label of a model response: the one of the same shape (text, or the same tools
    called in order); among several, the one equal in content; none: UNDECLARED."""
    same = [label for label, declared in labels.items() if _shape(declared) == _shape(response)]
    if len(same) > 1:
        same = [label for label in same if _content(labels[label]) == _content(response)]
    return same[0] if len(same) == 1 else UNDECLARED


def _shape(response: Any) -> tuple[str, ...]:
    from pydantic_ai.messages import TextPart, ToolCallPart
    return tuple("text" if isinstance(p, TextPart) else p.tool_name for p in response.parts
                 if isinstance(p, TextPart | ToolCallPart))


def _content(response: Any) -> list[Any]:
    from pydantic_ai.messages import TextPart, ToolCallPart
    return [p.content if isinstance(p, TextPart) else (p.tool_name, p.args_as_dict()) for p in response.parts
            if isinstance(p, TextPart | ToolCallPart)]


def _reader(guard: Guard) -> AgentAdapter:
    """The explorer's mapping of a run to the declared spec's vars, with the readings this guard has."""

    class Reader(AgentAdapter):
        reads = tuple(name for name in READINGS if name in guard.var_names)
    return Reader()
