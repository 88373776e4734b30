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
import functools
import itertools
import os
from collections.abc import AsyncIterator, Coroutine, Iterator
from dataclasses import dataclass, field
from typing import Any

from haltproof.machine.declarations import Declared
from haltproof.machine.live import Driver, LiveAdapter
from haltproof.machine.yamlpos import YList, YMap
from haltproof.machine.text import exception_text

from .declaration import (COMMON_KEYS, Choice, RunObject, begin, check_run_object, choose_node, fail,
                          function_tree, guard_of, import_target, is_name, keep_user_lines, lined, literal_text,
                          mapping, node, plain, require_version, run_object, with_user_properties)

END = "__end__"


def require_langgraph() -> str:
    """The installed LangGraph version, or a clear error naming it when it is missing or unsupported."""
    return require_version("langgraph", "langgraph", "LangGraph")


@dataclass
class GraphRun:
    """One live run of a graph: its event stream, the choices of the transition running, what it shows."""

    choices: dict[str, Any] = field(default_factory=dict)
    events: Iterator[Any] = field(default_factory=lambda: iter(()))
    next: str = ""
    steps: int = 0
    status: str = "running"
    values: dict[str, Any] = field(default_factory=dict)     # the graph's state at the last checkpoint
    nodes: list[str] = field(default_factory=list)           # the nodes the next pull runs
    runs: dict[str, int] = field(default_factory=dict)       # per node: the supersteps it ran in
    calls: int = 0                                           # the scripted models' answers so far

    aevents: AsyncIterator[Any] | None = None               # an async graph's stream (`astream`)

    subgraphs: tuple[str, ...] = ()         # the nodes whose subgraphs are explored superstep by superstep
    sub: str = "none"                       # the node whose subgraph runs now
    sub_next: str = "none"                  # the nodes that subgraph runs next
    sub_steps: int = 0                      # supersteps that subgraph run took so far (LangGraph's step)
    sub_supersteps: dict[str, int] = field(default_factory=dict)     # per subgraph: supersteps in all its runs
    tools: set[str] = field(default_factory=set)            # ids of the tool messages seen in any graph's state

    def pull(self) -> None:
        """Run LangGraph up to its next checkpoint: one superstep (or the end, or its limit error)."""
        if self.subgraphs:
            self.pull_nested()      # a run whose pull raised is closed by the caller (check and conform)
            return
        event = next(self.events, None)
        self.took(event)
        if event is not None and not self.nodes:
            self.ended(next(self.events, None))

    def pull_nested(self) -> None:
        """`pull` over the checkpoints of the graph and its subgraphs (`paused_stream`): up to the
        next superstep any of them prepares. A subgraph's input and end checkpoints are read on the
        way (its run starts or ends): they prepare nothing to choose."""
        while True:
            item = next(self.events, None)
            if item is not None:
                self.tools.update(tool_message_ids(item[1]["values"]))
            if item is None or not item[0]:
                self.took(None if item is None else item[1])
                if item is not None and not self.nodes:
                    self.ended(next(self.events, None))
                return
            if self.entered(item[0], item[1]):
                return

    def entered(self, ns: tuple[str, ...], event: dict[str, Any]) -> bool:
        """Read a subgraph's checkpoint; whether it prepares a superstep (the transition ends there)."""
        name = ns[0].split(":")[0]
        if len(ns) > 1:
            raise RuntimeError(f"the subgraph of node {name} ran a subgraph of its own "
                               f"({' > '.join(n.split(':')[0] for n in ns)}): "
                               "haltproof explores one level of subgraphs")
        if name not in self.subgraphs:
            raise RuntimeError(f"node {name} ran a subgraph, which the declaration's subgraphs: does not "
                               f"name (it names {', '.join(self.subgraphs)})")
        if len(self.nodes) > 1:
            raise RuntimeError(f"the subgraph of node {name} runs beside {'+'.join(n for n in self.nodes if n != name)} "
                               "in one superstep: haltproof explores a subgraph only when its node runs alone")
        step, nodes = int(event["metadata"]["step"]), sorted(event["next"])
        if step >= 1:
            self.sub_supersteps[name] = self.sub_supersteps.get(name, 0) + 1
        if not nodes or nodes == ["__start__"]:        # the subgraph's run ends, or takes its input
            self.sub, self.sub_next, self.sub_steps = "none", "none", 0
            return False
        self.sub, self.sub_next, self.sub_steps = name, "+".join(sorted(set(nodes))), step
        return True

    async def apull(self) -> None:
        """`pull` for an async graph, on the run's one event loop (machine/live.py's Driver)."""
        assert self.aevents is not None, "an async run"
        event = await anext(self.aevents, None)
        self.took(event)
        if event is not None and not self.nodes:
            self.ended(await anext(self.aevents, None))

    def took(self, event: Any) -> None:
        """What a checkpoint shows: the nodes before it ran, the nodes it prepares, the state.
        No checkpoint (the stream ended) with nodes still to run: paused (an interrupt), not finished."""
        if event is None:
            self.status = "interrupted"
            return
        for name in self.nodes:     # reached the next checkpoint: they ran
            self.runs[name] = self.runs.get(name, 0) + 1
        nodes = self.nodes = sorted(event["next"])      # a node sent several times (`Send`) is there as often
        self.values = dict(event["values"])
        self.steps = int(event["metadata"]["step"])
        self.next = "+".join(sorted(set(nodes))) if nodes else END

    def ended(self, after: Any) -> None:
        """A checkpoint with nothing next is not yet the end: LangGraph counts that superstep too,
        and when it is past recursion_limit the stream raises GraphRecursionError right after it
        (as `invoke` does; the pull that read the checkpoint raises it). Only a stream that then
        stops has ended."""
        if after is not None:
            raise RuntimeError(f"LangGraph streamed another checkpoint after one with nothing next: {after!r}")
        self.status = "done"


class Abandoned(Exception):
    """The exploration closed a paused run: its graph stops at its next checkpoint."""


def paused_stream(graph: Any, inputs: Any, config: dict[str, Any], given: dict[str, Any]) -> Iterator[Any]:
    """The checkpoints of `graph` and of its subgraphs, as `(namespace, checkpoint)`, each pausing
    the graph that made it until the next is asked for. LangGraph runs a subgraph inside its
    parent's superstep, so the parent's stream can only pause between the parent's supersteps;
    here the graph runs in a thread of its own and LangGraph's subgraph streaming (the stream a
    parent hands its subgraphs, `subgraphs=True`) delivers every graph's checkpoint to a callback
    that waits: a subgraph, as a node or invoked inside one, pauses between its supersteps too."""
    import queue
    import threading

    from langgraph._internal._constants import CONFIG_KEY_RUNTIME, CONFIG_KEY_STREAM
    from langgraph.pregel.protocol import StreamProtocol
    from langgraph.runtime import DEFAULT_RUNTIME
    items: queue.Queue[Any] = queue.Queue()
    go = threading.Semaphore(0)
    closed = threading.Event()
    done = object()

    def put(chunk: Any) -> None:
        ns, mode, event = chunk
        if mode != "checkpoints" or closed.is_set():
            if closed.is_set():
                raise Abandoned()
            return
        items.put((tuple(ns), event))
        while not go.acquire(timeout=0.5):
            if not threading.main_thread().is_alive():     # the process is exiting: a run left paused
                raise Abandoned()                           # must not keep LangGraph's pool from its join
        if closed.is_set():
            raise Abandoned()

    # a parent's stream is handed on to the subgraphs (with the runtime it reads beside it)
    hooked = {**config, "configurable": {**config.get("configurable", {}), CONFIG_KEY_RUNTIME: DEFAULT_RUNTIME,
                                         CONFIG_KEY_STREAM: StreamProtocol(put, {"checkpoints"})}}

    def run() -> None:
        try:
            for _ in graph.stream(inputs, hooked, stream_mode="checkpoints", subgraphs=True, **given):
                pass
            items.put(done)
        except BaseException as exc:        # the graph's own error (GraphRecursionError), given to the explorer
            items.put(exc)
    worker = threading.Thread(target=run, name="haltproof-langgraph", daemon=True)
    worker.start()
    try:
        while (item := items.get()) is not done:
            if isinstance(item, BaseException):
                raise item
            yield item
            go.release()
    finally:
        closed.set()
        go.release()
        worker.join(timeout=10)


def tool_message_ids(values: Any) -> set[str]:
    """The ids of the tool messages in a graph's state (`messages`): one per tool execution, the
    same id in a subgraph's state and in the parent's it returns them to."""
    messages = values.get("messages", []) if isinstance(values, dict) else []
    return {str(m.id) for m in messages if getattr(m, "type", None) == "tool"}


@dataclass(frozen=True)
class Structured:
    """A scripted model's structured answer: what `model.with_structured_output(schema).invoke`
    returns (a router's decision, say), as data."""

    data: dict[str, Any]


def scripted_model(run: GraphRun, choice: str, outcomes: dict[str, Any]) -> Any:
    """LangGraph's own test double for a chat model (langchain-core's `GenericFakeChatModel`),
    answering what `run.choices[choice]` names; each answer counts in `run.calls`. A
    `Structured` outcome is what `with_structured_output(...)` gives; `bind_tools` binds
    nothing (the scripted messages carry the tool calls)."""
    def answer() -> Any:
        run.calls += 1
        return copy.deepcopy(outcomes[run.choices[choice]])     # a fresh message: ids are set on it

    def answers() -> Iterator[Any]:
        while True:
            out = answer()
            yield _as_message(out.data) if isinstance(out, Structured) else out
    return _scripted_class()(messages=answers(), structured=answer)


def _as_message(data: dict[str, Any]) -> Any:
    import json

    from langchain_core.messages import AIMessage
    return AIMessage(json.dumps(data))


@functools.cache
def _scripted_class() -> type:
    """GenericFakeChatModel, able to stand where a graph binds tools or asks for structured output."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.runnables import RunnableLambda
    from pydantic import BaseModel

    class ScriptedChatModel(GenericFakeChatModel):
        structured: Any = None

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def with_structured_output(self, schema: Any, **kwargs: Any) -> Any:
            def respond(_: Any) -> Any:
                out = self.structured()
                data = out.data if isinstance(out, Structured) else {"content": getattr(out, "content", out)}
                return schema.model_validate(data) if isinstance(schema, type) and issubclass(schema, BaseModel) \
                    else data
            return RunnableLambda(respond)
    return ScriptedChatModel


class GraphAdapter(LiveAdapter):
    """A live adapter for a compiled LangGraph graph. Subclass it and give:

    `graph(models)`: the compiled graph, built with `models[choice]` where a node calls a model;
    `inputs(params)`: the graph's input; `scripted`: for each choice, the message per label.
    `config(params)` gives `recursion_limit` from the param of that name; override for others.
    `context(params)`: the run's runtime context (LangGraph's `context=`, what nodes read as
    `runtime.context`), a fresh one per run; None (the default) passes none.
    `observe(values)` adds vars read from the graph's state (its channels) to the abstract state."""

    scripted: dict[str, dict[str, Any]] = {}
    subgraphs: tuple[str, ...] = ()     # nodes whose subgraphs are explored superstep by superstep

    def graph(self, models: dict[str, Any]) -> Any:
        raise NotImplementedError

    def inputs(self, params: dict[str, Any]) -> Any:
        raise NotImplementedError

    def config(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"recursion_limit": params["recursion_limit"]}

    def context(self, params: dict[str, Any]) -> Any:
        """The run's runtime context (`graph.stream(..., context=...)`), made fresh for each run; None: none."""
        return None

    def run_context(self, params: dict[str, Any], run: GraphRun) -> Any:
        """The context one run is given: `context(params)` (a declaration's also answers for `run`)."""
        return self.context(params)

    def build(self, run: GraphRun) -> Any:
        """The graph one run explores: the user's, built with scripted models answering for `run`."""
        return self.graph({name: scripted_model(run, name, outs) for name, outs in self.scripted.items()})

    def start(self, params: dict[str, Any], init: dict[str, Any]) -> GraphRun | Coroutine[Any, Any, GraphRun]:
        """A fresh run, up to its first nodes prepared. A graph with an `async def` node is
        streamed with `astream`: then this returns a coroutine, which haltproof runs on the
        run's one event loop (docs/how-to/binding.md, "Async"), like every later step."""
        require_langgraph()
        run = GraphRun(subgraphs=self.subgraphs)
        from langgraph.checkpoint.memory import InMemorySaver
        # always a fresh saver: a run on the user's own (shared) checkpointer would resume the
        # thread an earlier run left, and explore a state that run reached instead of this one
        graph = self.build(run).copy(update={"checkpointer": InMemorySaver()})
        config = {**self.config(params), "configurable": {"thread_id": "haltproof"}}
        context = self.run_context(params, run)
        given = {} if context is None else {"context": context}
        if run.subgraphs:
            run.events = paused_stream(graph, self.inputs(params), config, given)
        elif has_async_nodes(graph):
            run.aevents = aiter(graph.astream(self.inputs(params), config, stream_mode="checkpoints", **given))
            return self._astart(run)
        else:
            run.events = iter(graph.stream(self.inputs(params), config, stream_mode="checkpoints", **given))
        run.pull()          # the input checkpoint: next is __start__, which only writes the input
        run.pull()          # the graph's first nodes, prepared
        return run

    async def _astart(self, run: GraphRun) -> GraphRun:
        await run.apull()
        await run.apull()
        return run

    def step(self, live: GraphRun, action: str, choices: dict[str, Any]) -> str | None | Coroutine[Any, Any, None]:
        self.check_choices(action, choices)
        live.choices = dict(choices)
        if live.aevents is not None:
            return live.apull()
        live.pull()
        return None

    def close(self, live: GraphRun) -> Coroutine[Any, Any, None] | None:
        """End the run's stream now: LangGraph's loop exits and shuts down its thread pool here,
        in the exploring thread. Left to the garbage collector, that shutdown ran inside a new
        thread's start-up, joining threads while holding the lock Thread.start waits on: a hang."""
        if live.aevents is not None:
            aclose = getattr(live.aevents, "aclose", None)
            return aclose() if callable(aclose) else None
        close = getattr(live.events, "close", None)
        if callable(close):
            close()
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


# ---------------------------------------------------------------- declaration files (docs/how-to/langgraph.md)

LIMIT = "recursion_limit"
DEFAULT_LIMIT = 25                  # LangGraph's own default recursion_limit
DECLARATION_KEYS = COMMON_KEYS | {"input", "models", "nodes", "context", "subgraphs"}
GRAPH_VARS = ("next", "tasks", "steps", "status")
PARALLEL_NODES = 8      # up to this many nodes, `next` may show any set of them (2**8 - 1 values)
PER_SUPERSTEP = 16      # runs_NODE / tool_runs / model_calls may grow this much per superstep: more is a `domains` finding
LIMIT_ERROR = {"class": "langgraph.errors.GraphRecursionError", "match": r"Recursion limit of \d+ reached",
               "set": {"status": "limit"}}


@dataclass
class Declaration:
    """A LangGraph declaration, read: what its adapter builds and scripts."""

    target: Any                                 # the compiled graph, or a function building it from the models
    models: dict[str, dict[str, Any]]           # model name -> label -> the message it answers (function targets)
    nodes: dict[str, dict[str, Any]]            # node name -> label -> the update it returns instead of running
    input: Any                                  # the graph's input
    messages: bool = False                      # the state has a `messages` channel: count tool runs
    counted: list[str] = field(default_factory=list)     # the nodes whose runs are counted (runs_NODE)
    context: RunObject | None = None            # `context:`, the run's runtime context
    schema: Any = None                          # the graph's context_schema (the context's type), or None
    declared: list[Choice] = field(default_factory=list)     # the choices at their lines (models, nodes)
    subgraphs: dict[str, list[str]] = field(default_factory=dict)   # node -> its subgraph's nodes (explored)

    def choices(self) -> dict[str, list[str]]:
        """The step's choices: `NAME_answer` per scripted model, `NAME_returns` per scripted node
        and per scripted callable of the context."""
        out = {model_choice(name): list(outs) for name, outs in self.models.items()}
        out.update({node_choice(name): list(outs) for name, outs in self.nodes.items()})
        out.update(self.context.choices() if self.context is not None else {})
        return out


def model_choice(name: str) -> str:
    """The choice that picks model NAME's answer (not NAME: a node may have that name)."""
    return f"{name}_answer"


def node_choice(name: str) -> str:
    """The choice that picks what node NAME returns."""
    return f"{name}_returns"


class DeclaredGraph(GraphAdapter):
    """The live adapter of a declaration file: the user's own graph, the declared outcomes scripted."""

    def __init__(self, d: Declaration):
        self.d = d
        self.scripted = d.models
        self.subgraphs = tuple(d.subgraphs)

    def build(self, run: GraphRun) -> Any:
        return scripted_nodes(self.users_graph(run), run, self.d.nodes)

    def users_graph(self, run: GraphRun) -> Any:
        """The user's graph as the target gives it: itself, or built with the scripted models."""
        if is_graph(self.d.target):
            return self.d.target
        models = {name: scripted_model(run, model_choice(name), outs) for name, outs in self.d.models.items()}
        return self.d.target(**models)

    def inputs(self, params: dict[str, Any]) -> Any:
        return copy.deepcopy(self.d.input)

    def run_context(self, params: dict[str, Any], run: GraphRun) -> Any:
        """`context:`'s object for one run, of the graph's own `context_schema`, its scripted
        callables answering what `run`'s transition chose."""
        if self.d.context is None:
            return None
        return self.d.context.build(params, lambda: run.choices, self.d.schema)

    def check_choices(self, action: str, choices: dict[str, Any]) -> None:
        """Every scripted model and node has its choice (the spec is generated: a mismatch is a bug)."""
        for name, outcomes in self.d.choices().items():
            if choices.get(name) not in outcomes:
                raise ValueError(f"no scripted outcome {name}={choices.get(name)} (it has {sorted(outcomes)})")

    def abstract(self, live: GraphRun) -> dict[str, Any]:
        out: dict[str, Any] = {"next": live.next, "tasks": len(live.nodes), "steps": live.steps, "status": live.status}
        out.update({f"runs_{n}": live.runs.get(n, 0) for n in self.d.counted})
        if self.d.models:
            out["model_calls"] = live.calls
        if self.d.messages:
            out["tool_runs"] = sum(getattr(m, "type", None) == "tool" for m in live.values.get("messages", []))
        if self.d.subgraphs:
            out.update(subgraph=live.sub, subgraph_next=live.sub_next, subgraph_steps=live.sub_steps)
            out.update({f"steps_{n}": live.sub_supersteps.get(n, 0) for n in self.d.subgraphs})
            out["supersteps"] = live.steps + sum(live.sub_supersteps.values())
            out["tool_runs"] = len(live.tools)     # the subgraphs' too, each once
        return out


def has_async_nodes(graph: Any) -> bool:
    """Whether a node of the graph is `async def` only: LangGraph then runs it through `astream`."""
    return any(getattr(spec.runnable, "func", True) is None and getattr(spec.runnable, "afunc", None) is not None
               for spec in graph.builder.nodes.values())


def is_graph(obj: Any) -> bool:
    """A compiled LangGraph graph (a `StateGraph` compiled)."""
    from langgraph.graph.state import CompiledStateGraph
    return isinstance(obj, CompiledStateGraph)


def scripted_nodes(graph: Any, run: GraphRun, nodes: dict[str, dict[str, Any]]) -> Any:
    """A copy of `graph` whose `nodes` return the update `run`'s choice names instead of running
    (the graph's edges, routing functions and other nodes are its own, untouched)."""
    if not nodes:
        return graph
    import dataclasses

    from langchain_core.runnables import RunnableLambda
    builder = copy.copy(graph.builder)
    builder.nodes = dict(builder.nodes)
    for name, outcomes in nodes.items():
        def answer(state: Any, _name: str = node_choice(name), _outcomes: dict[str, Any] = outcomes) -> Any:
            return copy.deepcopy(_outcomes[run.choices[_name]])
        builder.nodes[name] = dataclasses.replace(builder.nodes[name], runnable=RunnableLambda(answer))
    return builder.compile(interrupt_before=graph.interrupt_before_nodes, interrupt_after=graph.interrupt_after_nodes)


def _message(raw: Any, file: str, line: int, what: str) -> Any:
    """A scripted model's answer: text, or a message mapping (`content`, `tool_calls`, ...)."""
    from langchain_core.messages import AIMessage, convert_to_messages
    if isinstance(raw, str):
        return AIMessage(str(raw))
    if not isinstance(raw, dict):
        raise fail(file, line, f"{what} must be the model's text, a message mapping (content, tool_calls) "
                               "or the data of a structured answer")
    data = plain(raw)
    if not {"content", "tool_calls", "role", "type"} & set(data):
        return Structured(data)
    data.setdefault("role", "assistant")
    try:
        return convert_to_messages([data])[0]
    except Exception as exc:        # langchain-core says what is wrong with the message
        raise fail(file, line, f"{what} is not a message: {exception_text(exc)}") from None


COMMAND_KEYS = {"goto", "update"}


def _node_outcome(raw: Any, file: str, line: int, what: str) -> Any:
    """A scripted node's return: a plain update (a mapping of channels), or a LangGraph `Command`
    written `{command: {goto: ..., update: ...}}`; `goto` names a node, `__end__`, or a list of
    them and of `{send: NODE, arg: VALUE}` (a `Send`: NODE runs on VALUE), all in the next superstep."""
    if not (isinstance(raw, YMap) and "command" in raw):
        return plain(raw)
    from langgraph.types import Command
    if len(raw) != 1:
        raise fail(file, line, f"{what}: a command outcome has the key command only (its goto and update go inside)")
    spec = raw["command"]
    if not isinstance(spec, YMap) or not spec or not set(spec) <= COMMAND_KEYS:
        raise fail(file, line, f"{what}: command must be a mapping of {' and '.join(sorted(COMMAND_KEYS))}")
    goto = spec.get("goto", [])
    return Command(goto=[_goto(g, file, line, what) for g in goto] if isinstance(goto, list)
                   else _goto(goto, file, line, what), update=plain(spec.get("update")))


def _goto(raw: Any, file: str, line: int, what: str) -> Any:
    """One `goto` target: a node's name, or `{send: NODE, arg: VALUE}`, a `Send`."""
    from langgraph.types import Send
    if isinstance(raw, str):
        return str(raw)
    if isinstance(raw, YMap) and set(raw) == {"send", "arg"} and isinstance(raw["send"], str):
        return Send(str(raw["send"]), plain(raw["arg"]))
    raise fail(file, line, f"{what}: a goto target is a node's name or {{send: NODE, arg: VALUE}}", raw)


def goto_targets(outcome: Any) -> list[str]:
    """The nodes a scripted `Command` outcome goes to (none for a plain update)."""
    from langgraph.types import Command, Send
    if not isinstance(outcome, Command):
        return []
    goto: list[Any] = list(outcome.goto) if isinstance(outcome.goto, (list, tuple)) else [outcome.goto]
    return [str(g.node) if isinstance(g, Send) else str(g) for g in goto]


def _outcomes(top: YMap, key: str, file: str, message: bool) -> tuple[dict[str, dict[str, Any]], list[Choice]]:
    """`models:` or `nodes:`: name -> {label: outcome}, each name and label a plain identifier; and
    their choices at their lines (a model's answer may carry `when:`, a guard over the vars)."""
    out: dict[str, dict[str, Any]] = {}
    choices: list[Choice] = []
    declared = mapping(top, key, file, "names to their outcomes")
    for name, labels in declared.items():
        line = declared.line_of(name)
        if not str(name).isidentifier():
            raise fail(file, line, f"{key}: a name haltproof can choose by must be a plain identifier", name)
        if not isinstance(labels, YMap) or not labels:
            raise fail(file, line, f"{key}: {name} needs a mapping of outcome labels to outcomes")
        out[str(name)] = {}
        choice = Choice(model_choice(str(name)) if message else node_choice(str(name)), line, {})
        for label, raw in labels.items():
            where = labels.line_of(label)
            if not str(label).isidentifier():
                raise fail(file, where, f"an outcome label of {name} must be a plain identifier", label)
            choice.labels[str(label)] = where
            if message:
                raw, guard = guard_of(raw, file, f"outcome {label} of model {name}")
                if guard is not None:
                    choice.when[str(label)] = guard
            out[str(name)][str(label)] = (_message(raw, file, where, f"outcome {label} of model {name}")
                                         if message else _node_outcome(raw, file, where, f"outcome {label} of node {name}"))
        choices.append(choice)
    return out, choices


def declaration(top: YMap, file: str) -> Declared:
    """Expand a `framework: langgraph` declaration into its spec and adapter (docs/how-to/langgraph.md)."""
    begin(top, file, require_langgraph, DECLARATION_KEYS, {"target", "input"})
    target = import_target(top, file)
    ref, tline = str(top["target"]), top.line_of("target")
    models, model_choices = _outcomes(top, "models", file, message=True)
    nodes, node_choices = _outcomes(top, "nodes", file, message=False)
    if is_graph(target):
        if models:
            raise fail(file, top.line_of("models"), f"models: {ref} is a compiled graph, built already: script "
                                                    "the nodes that call a model under nodes:, or name a "
                                                    "function that builds the graph from its models")
    elif not callable(target):
        raise fail(file, tline, f"{ref} is a {type(target).__name__}, not a compiled LangGraph graph or a "
                                "function building one")
    d = Declaration(target, models, nodes, plain(top["input"]), declared=model_choices + node_choices,
                    context=run_object(top, "context", file, top.get("params")))
    adapter = DeclaredGraph(d)
    graph = _graph_of(adapter, ref, file, tline)
    names = list(graph.builder.nodes)
    d.schema = graph.builder.context_schema
    if d.context is not None:
        _no_clash(d, file)
        check_run_object(d.context, file, top.get("params"), d.schema)
    declared = mapping(top, "nodes", file, "")
    for name, outcomes in nodes.items():
        if name not in names:
            raise fail(file, declared.line_of(name),
                       f"nodes: the graph {ref} has no node {name!r} (its nodes: {', '.join(names)})")
        for label, outcome in outcomes.items():
            for target in goto_targets(outcome):
                if target not in (*names, END):
                    raise fail(file, declared[name].line_of(label), f"outcome {label} of node {name}: goto "
                               f"{target!r}: the graph {ref} has no such node (its nodes: {', '.join(names)})")
    bad = [n for n in names if not n.isidentifier()]
    if bad:
        raise fail(file, tline, f"node {bad[0]!r} of {ref} is not a plain identifier: the abstract state "
                                "cannot name it yet")
    d.messages = "messages" in graph.builder.channels
    d.counted = names
    d.subgraphs = _subgraphs(top, file, ref, graph, names)
    adapter.subgraphs = tuple(d.subgraphs)
    start = _first_state(adapter, file, tline)
    spec = keep_user_lines(node(_spec(top, file, ref, d, names, start), top.line_of("framework")), top)
    return Declared(spec, lambda: DeclaredGraph(d), dropped_channels(graph, nodes, declared))


def _subgraphs(top: YMap, file: str, ref: str, graph: Any, names: list[str]) -> dict[str, list[str]]:
    """`subgraphs:`, the nodes whose subgraph (a compiled graph as the node, or one the node's
    function invokes) is explored superstep by superstep, each with its subgraph's nodes; a name
    that is no node, or a node running no subgraph LangGraph finds, is refused at its line."""
    if "subgraphs" not in top:
        return {}
    declared = top["subgraphs"]
    if not isinstance(declared, YList) or not declared or not all(isinstance(n, str) for n in declared):
        raise fail(file, top.line_of("subgraphs"), "subgraphs: must be a list of the graph's nodes that run a "
                                                   "subgraph (as the node, or invoked inside its function)")
    if has_async_nodes(graph):
        raise fail(file, top.line_of("subgraphs"), f"subgraphs: {ref} has an async def node: haltproof pauses "
                                                   "subgraphs only in a graph streamed synchronously")
    found = dict(graph.get_subgraphs())
    out: dict[str, list[str]] = {}
    for i, name in enumerate(declared):
        line = declared.line_of(i)
        if name not in names:
            raise fail(file, line, f"subgraphs: the graph {ref} has no node {name!r} (its nodes: {', '.join(names)})")
        if name not in found:
            raise fail(file, line, f"subgraphs: node {name} of {ref} runs no subgraph LangGraph finds (neither a "
                                   "compiled graph as the node nor one its function refers to; nodes running one: "
                                   f"{', '.join(found) or 'none'})")
        if name in out:
            raise fail(file, line, f"subgraphs: {name} is named twice")
        inner = [n for n in found[name].builder.nodes] if hasattr(found[name], "builder") else []
        bad = [n for n in inner if not n.isidentifier()]
        if bad or not inner:
            raise fail(file, line, f"subgraphs: the subgraph of {name} has a node haltproof cannot name "
                                   f"({bad[0] if bad else 'none'})")
        out[str(name)] = inner
    return out


def _no_clash(d: Declaration, file: str) -> None:
    """A scripted callable of the context whose choice is named like a scripted node's is refused at its line."""
    taken = {c.name for c in d.declared}
    for s in d.context.scripted if d.context is not None else []:
        if s.choice in taken:
            raise fail(file, s.line, f"context: {s.path}'s choice {s.choice} is also a scripted node's: "
                                     "rename the node's outcome or the field")


def _graph_of(adapter: DeclaredGraph, ref: str, file: str, line: int) -> Any:
    """The graph a run explores, built once at load to read its nodes; a problem at the target's line."""
    try:
        graph = adapter.users_graph(GraphRun())
    except Exception as exc:        # the user's function may fail in any way
        models = ", ".join(adapter.d.models) or "no models"
        raise fail(file, line, f"building the graph with {ref}({models}) failed: {exception_text(exc)}") \
            from None
    if not is_graph(graph):
        raise fail(file, line, f"{ref} gave a {type(graph).__name__}, not a compiled LangGraph graph "
                               "(StateGraph(...).compile())")
    return graph


def _first_state(adapter: DeclaredGraph, file: str, line: int) -> dict[str, Any]:
    """The abstract state a run starts in: the graph's own input step (`__start__`) run for real."""
    driver = Driver()       # an async graph's start is a coroutine, run on a loop of its own
    try:
        return adapter.abstract(driver.call(adapter.start, {LIMIT: DEFAULT_LIMIT}, {}))
    except Exception as exc:        # the input does not fit the graph's state, say
        raise fail(file, line, f"starting the graph failed: {exception_text(exc)}") from None
    finally:
        driver.close()


def _spec(top: YMap, file: str, ref: str, d: Declaration, names: list[str], start: dict[str, Any]) -> dict[str, Any]:
    """The spec a declaration stands for: the graph's abstract state, one action (a real
    superstep, the declared outcomes chosen, GraphRecursionError an outcome) and the
    out-of-the-box properties, then the user's own."""
    params = top.get("params", YMap())
    if not isinstance(params, YMap):
        raise fail(file, top.line_of("params"), "params must be a mapping")
    if LIMIT not in params:         # LangGraph's default, explicit
        params = node({**params, LIMIT: [DEFAULT_LIMIT]}, top.line)
        params.lines.update(getattr(top.get("params"), "lines", {}))
    counters = {f"runs_{n}": {"type": "int", "min": 0, "max": f"{PER_SUPERSTEP} * ({LIMIT} + 1)",
                              "init": start[f"runs_{n}"]}
                for n in names}         # a Send fan-out runs a node several times in one superstep
    nested = f" * ({LIMIT} + 2)" if d.subgraphs else ""        # each superstep of the parent may run a subgraph's
    for var in ("tool_runs", "model_calls"):
        if var in start:
            counters[var] = {"type": "int", "min": 0,
                             "max": f"{PER_SUPERSTEP} * ({LIMIT} + 1){nested} + {start[var]}", "init": start[var]}
    counters.update(_subgraph_vars(d, start))
    step: dict[str, Any] = {"when": "status == running", "raises": [LIMIT_ERROR]}
    declared = d.declared + (d.context.declared() if d.context is not None else [])
    if declared:
        step["choose"] = choose_node(declared)
    properties = with_user_properties(top, file, _builtin_properties(d), "LangGraph")
    spec: dict[str, Any] = {
        "machine": top.get("machine", os.path.splitext(os.path.basename(file))[0]),
        "description": top.get("description", f"{ref} as LangGraph runs it: one real superstep per transition"),
        "bind": ref,
        "params": params,
        "vars": {"next": {"type": "enum", "values": [*next_values(names), END], "init": start["next"]},
                 "tasks": {"type": "int", "min": 0, "max": PER_SUPERSTEP, "init": start["tasks"]},
                 "steps": {"type": "int", "min": 0, "max": f"{LIMIT} + 1", "init": start["steps"]},
                 "status": {"type": "enum", "values": ["running", "done", "limit"], "init": start["status"]},
                 **counters},
        "actions": lined({"step": step}, {"step": top.line_of("target")}),
        "terminal": "status != running",
        "properties": properties,
    }
    if "expect" in top:
        spec["expect"] = top["expect"]
    return spec


def _subgraph_vars(d: Declaration, start: dict[str, Any]) -> dict[str, Any]:
    """The vars of the subgraphs explored: which one runs (`sub`), what it runs next, its steps in
    this run and in all its runs, and the supersteps of every graph in all."""
    if not d.subgraphs:
        return {}
    inner = sorted({v for names in d.subgraphs.values() for v in next_values(names)})
    out: dict[str, Any] = {
        "subgraph": {"type": "enum", "values": ["none", *d.subgraphs], "init": start["subgraph"]},
        "subgraph_next": {"type": "enum", "values": ["none", *inner], "init": start["subgraph_next"]},
        "subgraph_steps": {"type": "int", "min": 0, "max": f"{LIMIT} + 1", "init": start["subgraph_steps"]},
    }
    for name in d.subgraphs:
        out[f"steps_{name}"] = {"type": "int", "min": 0, "max": f"({LIMIT} + 1) * ({LIMIT} + 1)",
                                "init": start[f"steps_{name}"]}
    out["supersteps"] = {"type": "int", "min": 0, "max": f"({LIMIT} + 1) * ({LIMIT} + 2) * {len(d.subgraphs)}",
                         "init": start["supersteps"]}
    return out


def next_values(names: list[str]) -> list[str]:
    """What `next` may show: each node, and (for a graph of at most PARALLEL_NODES nodes) each set
    of nodes a parallel superstep may run, `+`-joined in sorted order; a larger graph's parallel
    superstep is a `domains` finding naming the set."""
    if len(names) > PARALLEL_NODES:
        return list(names)
    return ["+".join(sorted(group)) for size in range(1, len(names) + 1)
            for group in itertools.combinations(names, size)]


def _builtin_properties(d: Declaration) -> dict[str, Any]:
    """The out-of-the-box properties (docs/how-to/langgraph.md): the run ends; whether LangGraph's
    limit error can happen, the smallest safe limit; the worst cases, with what the limit promises."""
    props: dict[str, Any] = {
        "run_ends": {"terminates": True, "description": "every run ends: an answer, or LangGraph's limit error"},
        "limit_error": {"possible": "status == limit", "smallest_safe": LIMIT,
                        "description": "whether a run can end in GraphRecursionError, with a shortest one"},
        "most_supersteps": {"maximum": "steps", "at_most": LIMIT, "limit": LIMIT,
                            "description": "the most supersteps a run takes; LangGraph promises at most "
                                           "recursion_limit"},
    }
    if d.models:
        props["most_model_calls"] = {"maximum": "model_calls", "limit": LIMIT, "description": "the most answers the scripted "
                                                                              "models give in a run"}
    if d.subgraphs:
        props["most_supersteps_in_all"] = {"maximum": "supersteps", "limit": LIMIT,
                                           "description": "the most supersteps of a run, its subgraphs' included"}
        for name in d.subgraphs:
            props[f"most_steps_{name}"] = {"maximum": f"steps_{name}", "limit": LIMIT,
                                           "description": f"the most supersteps the subgraph of {name} runs in a "
                                                          "run, in all its calls"}
        props["subgraph_limit_error"] = {"possible": "status == limit and subgraph != none",
                                         "description": "whether a subgraph's own GraphRecursionError can end the "
                                                        "run, with a shortest such run"}
    if d.messages or d.subgraphs:
        props["most_tool_runs"] = {"maximum": "tool_runs", "limit": LIMIT, "description": "the most tool executions in a run "
                                                                          "(tool messages in `messages`)"}
    return props


# ---------------------------------------------------------------- scripted nodes that leave out a channel read elsewhere

def dropped_channels(graph: Any, nodes: dict[str, dict[str, Any]], declared: YMap) -> list[tuple[int, str]]:
    """A warning at each scripted outcome that leaves out a channel the real node writes and
    another node or a routing function reads: the outcome replaces all of the node's writes, so
    that channel keeps its old value, and what reads it may decide otherwise than the real graph
    (a router's counter that never moves loops forever). Read from the functions' source: a
    function haltproof cannot read (no source, a lambda, a compiled subgraph) is left out."""
    readers = channel_readers(graph)
    out: list[tuple[int, str]] = []
    for name, outcomes in nodes.items():
        writes = function_writes(_function(graph.builder.nodes[name].runnable))
        for label, outcome in outcomes.items():
            for channel in sorted((writes or set()) - outcome_channels(outcome)):
                who = [reader for node_name, reader in readers.get(channel, []) if node_name != name]
                if who:
                    out.append((declared[name].line_of(label),
                                f"outcome {label} of node {name} leaves out {channel}, which the real {name} writes "
                                f"and {' and '.join(who)} read{'s' if len(who) == 1 else ''}: a scripted outcome "
                                f"replaces all of the node's writes, so {channel} keeps its old value there; give it "
                                f"in the outcome ({channel}: ...) or script what {name} calls instead (context:)"))
    return out


def channel_readers(graph: Any) -> dict[str, list[tuple[str, str]]]:
    """Per channel: (the node it belongs to, who reads it in words) for every node and routing
    function whose source reads it from the state (`state["x"]`, `state.get("x")`, `state.x`)."""
    out: dict[str, list[tuple[str, str]]] = {}
    for name, spec in graph.builder.nodes.items():
        for channel in sorted(function_reads(_function(spec.runnable)) or ()):
            out.setdefault(channel, []).append((name, f"node {name}"))
    for source, branches in graph.builder.branches.items():
        for branch_name, branch in branches.items():
            for channel in sorted(function_reads(_function(branch.path)) or ()):
                out.setdefault(channel, []).append(("", f"the routing function {branch_name} (after {source})"))
    return out


def outcome_channels(outcome: Any) -> set[str]:
    """The channels a scripted outcome writes: an update's keys, a `Command`'s update's."""
    from langgraph.types import Command
    update = outcome.update if isinstance(outcome, Command) else outcome
    return {str(k) for k in update} if isinstance(update, dict) else set()


def _function(runnable: Any) -> Any:
    """The user's function behind a node or routing function (LangGraph wraps it), or None."""
    return getattr(runnable, "func", None) or getattr(runnable, "afunc", None)


def function_reads(fn: Any) -> set[str] | None:
    """The state channels a node or routing function reads by name, or None when unknown."""
    import ast
    parsed = function_tree(fn)
    if parsed is None:
        return None
    tree, state = parsed
    out: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Subscript) and is_name(n.value, state) and literal_text(n.slice) is not None:
            out.add(str(literal_text(n.slice)))
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and is_name(n.func.value, state) \
                and n.func.attr == "get" and n.args and literal_text(n.args[0]) is not None:
            out.add(str(literal_text(n.args[0])))
        elif isinstance(n, ast.Attribute) and is_name(n.value, state) and n.attr not in _MAPPING_METHODS:
            out.add(n.attr)
        elif isinstance(n, ast.Compare) and literal_text(n.left) is not None and any(is_name(c, state) for c in n.comparators):
            out.add(str(literal_text(n.left)))
    return out


def function_writes(fn: Any) -> set[str] | None:
    """The channels a node's returns write (the keys of the dicts it returns, a `Command`'s
    update), or None when a return is not such a literal (the writes are not known)."""
    import ast
    parsed = function_tree(fn)
    if parsed is None:
        return None
    out: set[str] = set()
    for n in ast.walk(parsed[0]):
        if not isinstance(n, ast.Return) or n.value is None:
            continue
        value = n.value
        if isinstance(value, ast.Call) and getattr(value.func, "id", getattr(value.func, "attr", None)) == "Command":
            value = next((k.value for k in value.keywords if k.arg == "update"), ast.Dict(keys=[], values=[]))
        if not isinstance(value, ast.Dict) or any(k is None or literal_text(k) is None for k in value.keys):
            return None
        out.update(str(literal_text(k)) for k in value.keys)
    return out


_MAPPING_METHODS = {"get", "keys", "values", "items", "copy", "model_dump", "dict"}


