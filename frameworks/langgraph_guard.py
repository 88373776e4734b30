"""A LangGraph graph run under its runtime guard, one superstep per guarded step.

`invoke_guarded(graph, inputs, guard)` runs the user's compiled graph as `graph.invoke` would
and returns what it returns (the last `values` chunk), but streams it with LangGraph's
checkpoints as the explorer does (frameworks/langgraph.py): before each superstep runs the
guard is asked (`before(step)`: the model's answer is the environment's), after it the state the
checkpoint shows goes to `after`, read by the explorer's own mapping (`DeclaredGraph.abstract`:
`next`, `tasks`, `steps`, `status`, `runs_NODE`, `model_calls`, `tool_runs`). Model calls are
counted by a LangChain callback on the run's config. A denial stops the stream there: the next
superstep never runs, and `GuardStopped` carries the decision packet. docs/how-to/guard.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from haltproof.guard import Guard

from .guard_hooks import Approve, Follower, state_of
from .langgraph import Declaration, DeclaredGraph, GraphRun, require_langgraph

RUNS = "runs_"


def invoke_guarded(graph: Any, inputs: Any, guard: Guard, config: dict[str, Any] | None = None, *,
                   action: str = "step", approve: Approve | None = None, **kwargs: Any) -> Any:
    """Run `graph` on `inputs` as `graph.invoke(inputs, config, **kwargs)` does, each superstep
    guarded; its output. Raises GuardStopped at the first event the guard does not allow."""
    require_langgraph()
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.errors import GraphRecursionError
    follower = Follower(guard, approve)
    run = GraphRun()
    config = dict(config or {})
    config["callbacks"] = [*_callbacks(config), _model_counter(run)]
    if graph.checkpointer is None:      # checkpoints need a saver: a fresh one, as the explorer's runs
        graph = graph.copy(update={"checkpointer": InMemorySaver()})
        config["configurable"] = {"thread_id": "haltproof-guard", **config.get("configurable", {})}
    last: dict[str, Any] = {}
    run.events = _checkpoints(graph.stream(inputs, config, stream_mode=["checkpoints", "values"], **kwargs), last)
    reader = _reader(guard)
    try:
        run.pull()          # the input checkpoint
        run.pull()          # the first nodes, prepared: the initial state
        follower.start(state_of(guard, reader.abstract(run)))
        while run.status == "running":
            follower.before(action)
            try:
                run.pull()
            except GraphRecursionError:
                run.status = "limit"        # what the declared spec's raises set
                follower.after(state_of(guard, reader.abstract(run)))
                raise
            follower.after(state_of(guard, reader.abstract(run)))
        follower.end()
    finally:
        close = getattr(run.events, "close", None)
        if callable(close):
            close()
    return last.get("values")


def _checkpoints(stream: Iterator[Any], last: dict[str, Any]) -> Iterator[Any]:
    """The checkpoint events GraphRun reads; the latest `values` chunk kept (invoke's output)."""
    for mode, payload in stream:
        if mode == "values":
            last["values"] = payload
        else:
            yield payload


def _reader(guard: Guard) -> DeclaredGraph:
    """The explorer's mapping of a run to the declared spec's vars, for the vars this guard has."""
    names = guard.var_names
    counted = [v[len(RUNS):] for v in names if v.startswith(RUNS)]
    d = Declaration(target=None, models={"model": {}} if "model_calls" in names else {}, nodes={}, input=None,
                    messages="tool_runs" in names, counted=counted)
    return DeclaredGraph(d)


def _callbacks(config: dict[str, Any]) -> list[Any]:
    given = config.get("callbacks")
    if given is None:
        return []
    if isinstance(given, list):
        return list(given)
    raise ValueError("invoke_guarded takes config['callbacks'] as a list of handlers")


def _model_counter(run: GraphRun) -> Any:
    """A LangChain callback counting the graph's model calls into `run.calls` (model_calls)."""
    from langchain_core.callbacks import BaseCallbackHandler

    class ModelCalls(BaseCallbackHandler):
        def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
            run.calls += 1

        def on_llm_start(self, serialized: Any, prompts: Any, **kwargs: Any) -> None:
            run.calls += 1
    return ModelCalls()
