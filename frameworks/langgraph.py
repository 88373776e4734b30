"""LangGraph: a compiled graph explored as it really runs, one superstep per transition.

The graph is the user's own (built by `graph(models)`), run by LangGraph's own Pregel loop
through `graph.stream(..., stream_mode="checkpoints")`: its routing functions choose the
next nodes on real state, and its `recursion_limit` is enforced by LangGraph itself, which
raises `GraphRecursionError` (declare it under the action's `raises:`; haltproof never
re-implements the limit). The nodes that call a model get scripted chat models
(langchain-core's `GenericFakeChatModel`): on each transition a model answers with the
message the transition's choice names (`scripted`: choice name -> {label: message}).

Why checkpoints: LangGraph emits a checkpoint when it has prepared a superstep and before it
runs it, carrying the nodes to run next (`next`) and the step number; pulling one more event
runs exactly that superstep. They need a checkpointer: each run is a copy of the graph with a
fresh in-memory one (never the graph's own, which earlier runs would share).

The abstract state read back: `next` (the nodes to run next, `+`-joined in sorted order, or
`__end__`), `steps` (supersteps run since the input, LangGraph's own step number) and
`status` (`running`, `done` once the graph has ended, `interrupted` when the stream stopped
with nodes still to run: an interrupt, which a spec must not mistake for an end), plus what `observe` reads from the
graph's channels; the spec sets `status` on the declared `GraphRecursionError`. Runs are replayed (a running stream cannot be copied).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from haltproof.machine.live import LiveAdapter

END = "__end__"
SUPPORTED = ((1, 2), (2, 0))        # [lowest, first excluded) major.minor; the extra's range


def require_langgraph() -> str:
    """The installed LangGraph version, or a clear error naming it when it is missing or unsupported."""
    try:
        version = metadata.version("langgraph")
    except metadata.PackageNotFoundError:
        raise RuntimeError("haltproof.frameworks.langgraph needs LangGraph: "
                           "pip install 'haltproof[langgraph]'") from None
    major_minor = tuple(int(p) for p in version.split(".")[:2] if p.isdigit())
    if not SUPPORTED[0] <= major_minor < SUPPORTED[1]:
        raise RuntimeError(f"haltproof.frameworks.langgraph supports langgraph >=1.2,<2; "
                           f"langgraph {version} is installed")
    return version


@dataclass
class GraphRun:
    """One live run of a graph: its event stream, the choices of the transition running, what it shows."""

    choices: dict[str, Any] = field(default_factory=dict)
    events: Iterator[Any] = field(default_factory=lambda: iter(()))
    next: str = ""
    steps: int = 0
    status: str = "running"
    values: dict[str, Any] = field(default_factory=dict)     # the graph's state at the last checkpoint

    def pull(self) -> None:
        """Run LangGraph up to its next checkpoint: one superstep (or the end, or its limit error)."""
        try:
            event = next(self.events)
        except StopIteration:       # ended without a last, empty checkpoint: paused, not finished
            self.status = "interrupted"
            return
        nodes = sorted(event["next"])
        self.values = dict(event["values"])
        self.steps = int(event["metadata"]["step"])
        self.next = "+".join(nodes) if nodes else END
        if not nodes:
            self.status = "done"


def scripted_model(run: GraphRun, choice: str, outcomes: dict[str, Any]) -> Any:
    """LangGraph's own test double for a chat model, answering what `run.choices[choice]` names."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    def answers() -> Iterator[Any]:
        while True:
            yield copy.deepcopy(outcomes[run.choices[choice]])     # a fresh message: ids are set on it
    return GenericFakeChatModel(messages=answers())


class GraphAdapter(LiveAdapter):
    """A live adapter for a compiled LangGraph graph. Subclass it and give:

    `graph(models)`: the compiled graph, built with `models[choice]` where a node calls a model;
    `inputs(params)`: the graph's input; `scripted`: for each choice, the message per label.
    `config(params)` gives `recursion_limit` from the param of that name; override for others.
    `observe(values)` adds vars read from the graph's state (its channels) to the abstract state."""

    scripted: dict[str, dict[str, Any]] = {}

    def graph(self, models: dict[str, Any]) -> Any:
        raise NotImplementedError

    def inputs(self, params: dict[str, Any]) -> Any:
        raise NotImplementedError

    def config(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"recursion_limit": params["recursion_limit"]}

    def start(self, params: dict[str, Any], init: dict[str, Any]) -> GraphRun:
        require_langgraph()
        run = GraphRun()
        models = {name: scripted_model(run, name, outs) for name, outs in self.scripted.items()}
        from langgraph.checkpoint.memory import InMemorySaver
        # always a fresh saver: a run on the user's own (shared) checkpointer would resume the
        # thread an earlier run left, and explore a state that run reached instead of this one
        graph = self.graph(models).copy(update={"checkpointer": InMemorySaver()})
        config = {**self.config(params), "configurable": {"thread_id": "haltproof"}}
        run.events = iter(graph.stream(self.inputs(params), config, stream_mode="checkpoints"))
        run.pull()          # the input checkpoint: next is __start__, which only writes the input
        run.pull()          # the graph's first nodes, prepared
        return run

    def step(self, live: GraphRun, action: str, choices: dict[str, Any]) -> str | None:
        self.check_choices(action, choices)
        live.choices = dict(choices)
        live.pull()
        return None

    def check_choices(self, action: str, choices: dict[str, Any]) -> None:
        """A spec and `scripted` that disagree are named up front, not met as a KeyError in a node."""
        for name, outcomes in self.scripted.items():
            if name not in choices:
                raise ValueError(f"{type(self).__name__}.scripted scripts the choice {name!r}, "
                                 f"which action {action} does not choose (it chooses {sorted(choices)})")
            if choices[name] not in outcomes:
                raise ValueError(f"{type(self).__name__}.scripted has no message for {name}={choices[name]} "
                                 f"(it has {sorted(outcomes)})")

    def observe(self, values: dict[str, Any]) -> dict[str, Any]:
        """More abstract vars, from the graph's state at the last checkpoint (none by default)."""
        return {}

    def abstract(self, live: GraphRun) -> dict[str, Any]:
        return {"next": live.next, "steps": live.steps, "status": live.status, **self.observe(live.values)}
