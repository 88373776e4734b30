"""OpenAI Agents SDK: an `Agent` explored as the SDK's own `Runner` runs it, one model turn per transition.

The agents, tools and handoffs are the user's own; `Runner.run` drives them with its own
loop, handoff handling, tool execution and `max_turns` check, which raises
`MaxTurnsExceeded` (declare it under the action's `raises:`; haltproof never re-implements
the limit). Only the model is scripted, through the SDK's own test double
(`agents.testing.ScriptedModel`, given to every agent by `RunConfig(model=...)`): each model
call answers what the transition's choice names (`scripted`: choice name -> {label: answer},
answers built with `final`, `tool_call` and `handoff_to`).

One model turn per transition, with the Runner in charge: the scripted model's responder
awaits the adapter's answer, so a run is an asyncio task paused inside the SDK at its next
model call; a step hands the call its answer and runs the SDK (tools, handoffs, its turn
check) until it asks the model again or the run ends. The task lives on the live adapter's
event loop (docs/how-to/binding.md, Async). A paused task cannot be copied: runs are replayed, and
a run haltproof lets go of is cancelled (the SDK's own cancellation path), never left pending.

The abstract state read back (`reads`, all by default): `agent` (the current agent's name:
the one the pending model call is for, or the one a handoff passed the run to), `turns` (model calls answered),
`tool_runs` (tool executions begun, the SDK's `on_tool_start`), `handoffs` (handoffs done,
`on_handoff`), `status` (`running`, or `done` once `Runner.run` returned; a declared exception
sets its own) and `output` (what the user sees: `str(result.final_output)`, "" before), plus
what `observe(run)` adds (e.g. from the run's context object, which the user's tools write). A generated spec (a declaration file naming the agent) has one
action per agent guarded by `agent == NAME`, choosing that agent's labels.

Declaration files (`framework: openai_agents`, `declaration` below): `target` names the user's
own starting Agent; every agent its handoffs reach gets an action and a `SLUG_says` choice of
its declared answers; a declared tool outcome (`TOOL_returns`) replaces the tool's own code
inside the SDK's invoker, for haltproof's runs only (`scripted_tool`, read through the
`RUNNING` context variable each run's task carries), so the SDK's failure handling
(failure_error_function) still decides what an exception does.

Agents used as tools (`Agent.as_tool`, docs/how-to/trees-frameworks.md): the SDK gives the
nested `Runner.run` the parent's RunConfig, so the scripted model answers its calls too, one
per transition; the RunConfig's `call_model_input_filter` names the agent calling, `DEPTH`
tells a nested call from the top run's, and `scripted_tool` counts the nested runs' tools and
limit errors and gives an agent tool the `max_turns` a param `max_turns_TOOL` sets.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import functools
import os
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from haltproof.machine.declarations import Declared
from haltproof.machine.live import LiveAdapter
from haltproof.machine.yamlpos import YMap

from .declaration import (COMMON_KEYS, Choice, RunObject, begin, check_run_object, choose_node, fail, give,
                          guard_of, import_target, keep_user_lines, lined, mapping, node, outcome_labels, plain,
                          quoted, require_version, run_object, scripted_outcome, skipped_writes, with_user_properties)
from .paused import ModelCalls, PausedRun

READS = ("agent", "turns", "tool_runs", "handoffs", "status", "output")


def require_agents() -> str:
    """The installed SDK's version, or a clear error naming it when it is missing or unsupported."""
    return require_version("openai_agents", "openai-agents", "the OpenAI Agents SDK")


@dataclass(frozen=True)
class Final:
    """The model answers with a final text: the run ends (for an agent whose output is text)."""

    text: str


@dataclass(frozen=True)
class ToolCall:
    """The model calls a function tool by name; the SDK runs the user's tool with these arguments."""

    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class HandoffTo:
    """The model hands off to the agent of that name, through the current agent's own handoff tool."""

    agent: str


Answer = Final | ToolCall | HandoffTo


def final(text: str) -> Final:
    return Final(text)


def tool_call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(name, arguments)


def handoff_to(agent: str) -> HandoffTo:
    return HandoffTo(agent)


def render(answer: Answer | Sequence[Answer], call: Any, agent: str, turn: int) -> list[Any]:
    """The SDK's output items for one model answer (several items: parallel tool calls).

    Call ids are fresh per turn (the SDK's Model contract: an id names one invocation); a
    handoff is the current agent's own handoff tool for that agent, as the SDK offered it."""
    from agents.testing import assistant_message, function_call
    answers = [answer] if isinstance(answer, Final | ToolCall | HandoffTo) else list(answer)
    items: list[Any] = []
    for i, one in enumerate(answers):
        call_id = f"call_{turn}_{i}"
        if isinstance(one, Final):
            items.append(assistant_message(one.text, item_id=f"msg_{turn}_{i}"))
        elif isinstance(one, ToolCall):
            items.append(function_call(one.name, one.arguments, call_id=call_id))
        else:
            offered = {h.agent_name: h.tool_name for h in call.handoffs}
            if one.agent not in offered:
                raise ValueError(f"{agent} has no handoff to {one.agent!r} "
                                 f"(its handoffs: {sorted(offered) or 'none'})")
            items.append(function_call(offered[one.agent], {}, call_id=call_id))
    return items


@dataclass
class Channel:
    """What the SDK's run and the adapter share: its model calls (the pending ModelCall, the turns
    answered: frameworks/paused.py) and what the run's hooks saw."""

    model: ModelCalls = field(default_factory=ModelCalls)
    agent: str = ""
    tool_runs: int = 0
    handoffs: int = 0
    status: str = "running"
    output: str = ""
    result: Any = None                              # the RunResult once Runner.run returned
    runs: dict[str, int] = field(default_factory=dict)     # per tool name: its executions begun
    tools: dict[str, Any] = field(default_factory=dict)    # a declaration's tool outcomes for this turn
    chosen: dict[str, Any] = field(default_factory=dict)   # the choices of the turn running (a declaration's)
    depth: int = 0                  # how deep in agents-as-tools the pending model call is (0: the top run)
    calls_of: dict[str, int] = field(default_factory=dict)     # per agent: its model calls answered, in all runs
    nested_calls: int = 0           # model calls answered inside agents used as tools
    child_limits: int = 0           # nested runs (agents used as tools) that raised MaxTurnsExceeded
    nested_turns: dict[str, int] = field(default_factory=dict)  # agent tool -> its nested run's max_turns

    @property
    def turns(self) -> int:
        """Model calls of the run `Runner.run` started (what its max_turns counts) answered so far."""
        return self.model.calls - self.nested_calls

    @property
    def model_calls(self) -> int:
        """Model calls answered so far, in the top run and every nested one."""
        return self.model.calls

    def answered(self) -> None:
        """The pending model call is being answered: count it for its agent and its run."""
        self.calls_of[self.agent] = self.calls_of.get(self.agent, 0) + 1
        self.nested_calls += self.depth > 0

    @property
    def call(self) -> Any:
        """The pending ModelCall (the last one, once the run ended)."""
        return self.model.request


@dataclass
class AgentRun:
    """One live run: `Runner.run` paused at its model call, its channel, and the context object
    the run was given (the SDK's `Runner.run(context=...)`, what the user's tools see). Only
    haltproof holds it: dropped, its task is cancelled."""

    paused: PausedRun
    channel: Channel
    context: Any = None

    @property
    def task(self) -> asyncio.Future[Any]:
        """The task running `Runner.run`."""
        assert self.paused.task is not None, "a started run"
        return self.paused.task


def hooks_for(channel: Channel) -> Any:
    """The SDK's RunHooks, counting what the Runner does into the channel."""
    from agents import RunHooks

    class Seen(RunHooks[Any]):
        async def on_agent_start(self, context: Any, agent: Any) -> None:
            channel.agent = agent.name

        async def on_handoff(self, context: Any, from_agent: Any, to_agent: Any) -> None:
            channel.handoffs += 1
            channel.agent = to_agent.name       # the SDK's current agent from now, even if no turn follows

        async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
            channel.tool_runs += 1
            channel.runs[tool.name] = channel.runs.get(tool.name, 0) + 1
    return Seen()


def calling(channel: Channel) -> Any:
    """The RunConfig's `call_model_input_filter` (the SDK calls it right before each model call,
    with the agent calling, in every nested run too): the pending call's agent, into the channel."""
    def seen(data: Any) -> Any:
        channel.agent = data.agent.name
        return data.model_data
    return seen


def scripted_model(channel: Channel) -> Any:
    """The SDK's ScriptedModel whose every step awaits the answer a transition gives (the run,
    paused at its model call: frameworks/paused.py)."""
    from agents.testing import ModelStep, ScriptedModel

    model = ScriptedModel()

    async def answer(call: Any) -> list[Any]:
        model.enqueue(ModelStep.respond(answer))        # the next call is answered the same way
        channel.depth = DEPTH.get()
        reply: list[Any] = await channel.model.model(call)
        return reply
    model.enqueue(ModelStep.respond(answer))
    return model


def seen_the_end(run: AgentRun) -> None:
    """What `Runner.run`'s result shows, once it returned: done, the output, the last agent."""
    channel = run.channel
    if run.paused.done:
        channel.result = run.paused.result
        channel.status = "done"
        channel.output = str(channel.result.final_output)
        channel.agent = channel.result.last_agent.name


async def streamed_run(runner: Any, agent: Any, given: Any, options: dict[str, Any]) -> Any:
    """`Runner.run_streamed` read to its end, as an app consuming its events does: the SDK's
    streaming loop (with its own copy of the max_turns check) runs instead of `Runner.run`'s.
    Its exceptions come out of `stream_events()`; a run cancelled midway is cancelled in the SDK."""
    result = runner.run_streamed(agent, given, **options)
    try:
        async for _ in result.stream_events():
            pass
    finally:
        if not result.is_complete:
            result.cancel()
    return result


class AgentsAdapter(LiveAdapter):
    """A live adapter for an OpenAI Agents SDK agent run by `Runner.run`. Subclass it and give:

    `agent(params)`: the starting agent; `inputs(params)`: the run's input; `scripted`: for each
    choice, the answer per label (`final`, `tool_call`, `handoff_to`, or a list of them).
    `run_options(params)` gives `max_turns` from the param of that name; override for others.
    `context(params)`: a fresh context object per run (default None); `reads` narrows the vars
    read back; `observe(run)` adds vars read from the run (e.g. from its context);
    `streamed = True` runs `Runner.run_streamed` instead of `Runner.run`."""

    scripted: dict[str, dict[str, Answer | Sequence[Answer]]] = {}
    reads: tuple[str, ...] = READS
    streamed: bool = False          # True: Runner.run_streamed, its events read to the end

    def agent(self, params: dict[str, Any]) -> Any:
        raise NotImplementedError

    def inputs(self, params: dict[str, Any]) -> Any:
        raise NotImplementedError

    def run_options(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"max_turns": params["max_turns"]}

    def context(self, params: dict[str, Any]) -> Any:
        """A fresh context object for each run (the SDK's `context=`), or None."""
        return None

    def nested_turns(self, params: dict[str, Any]) -> dict[str, int]:
        """The `max_turns` each agent used as a tool gets in this run, by tool name: a param
        `max_turns_TOOL`; a tool without one keeps what `as_tool(max_turns=...)` gave it."""
        return {name[len(NESTED):]: value for name, value in params.items() if name.startswith(NESTED)}

    def run_context(self, params: dict[str, Any], channel: Channel) -> Any:
        """The context one run is given: `context(params)` (a declaration's also answers for `channel`)."""
        return self.context(params)

    async def start(self, params: dict[str, Any], init: dict[str, Any]) -> AgentRun:
        require_agents()
        from agents import RunConfig, Runner, set_tracing_disabled
        set_tracing_disabled(True)          # offline: no trace is exported anywhere
        channel = Channel(nested_turns=self.nested_turns(params))
        config = RunConfig(model=scripted_model(channel), tracing_disabled=True, call_model_input_filter=calling(channel))
        context = self.run_context(params, channel)
        options = {"context": context, "hooks": hooks_for(channel), "run_config": config, **self.run_options(params)}
        agent, given = self.agent(params), self.inputs(params)
        instrument(agent)

        def ran(model: Any) -> Any:     # the SDK asks scripted_model, which awaits channel.model
            return streamed_run(Runner, agent, given, options) if self.streamed else Runner.run(agent, given, **options)
        token = RUNNING.set(channel)        # the run's task sees its channel: scripted tools read it
        try:
            run = AgentRun(PausedRun.launch(ran, channel.model), channel, context)
        finally:
            RUNNING.reset(token)
        await run.paused.settle()
        seen_the_end(run)
        return run

    async def step(self, live: AgentRun, action: str, choices: dict[str, Any]) -> str | None:
        name = self.scripted_choice(action, choices)
        channel = live.channel
        if live.paused.done or live.task.done():
            raise ValueError(f"action {action} answers a model call, but Runner.run has already "
                             f"{live.paused.ended()}: guard the action so that it is enabled only while the run "
                             "is running")
        answer = render(self.scripted[name][choices[name]], channel.call, channel.agent, channel.model_calls + 1)
        channel.answered()
        await live.paused.answer(answer)
        seen_the_end(live)
        return None

    def scripted_choice(self, action: str, choices: dict[str, Any]) -> str:
        """The one choice of this action that names the model's answer; a mismatch is named up front."""
        names = [name for name in choices if name in self.scripted]
        if len(names) != 1:
            raise ValueError(f"action {action} must choose exactly one of {type(self).__name__}.scripted's "
                             f"choices {sorted(self.scripted)} (it chooses {sorted(choices)})")
        name = names[0]
        if choices[name] not in self.scripted[name]:
            raise ValueError(f"{type(self).__name__}.scripted has no answer for {name}={choices[name]} "
                             f"(it has {sorted(self.scripted[name])})")
        return name

    def observe(self, run: AgentRun) -> dict[str, Any]:
        """More abstract vars, read from the run: its `context`, its channel (the RunResult once
        ended); none by default."""
        return {}

    def abstract(self, live: AgentRun) -> dict[str, Any]:
        seen = {name: getattr(live.channel, name) for name in self.reads}
        return {**seen, **self.observe(live)}


# ---------------------------------------------------------------- declaration files (docs/how-to/openai-agents.md)

LIMIT = "max_turns"
NESTED = "max_turns_"            # a param max_turns_TOOL: the max_turns of the agent used as tool TOOL
DECLARATION_KEYS = COMMON_KEYS | {"input", "models", "tools", "context"}
LIMIT_ERROR = {"class": "agents.MaxTurnsExceeded", "match": r"Max turns \(\d+\) exceeded", "set": {"status": "limit"}}
# a tool's exception the SDK does not turn into a message for the model (failure_error_function=None)
TOOL_ERROR = {"class": "agents.UserError", "match": r"^Error running tool \w+: ", "set": {"status": "tool_error"}}
SCRIPTED: weakref.WeakSet[Any] = weakref.WeakSet()     # tool invokers' code already made scriptable
RUNNING: contextvars.ContextVar[Channel | None] = contextvars.ContextVar("haltproof_agents_run", default=None)
# how many agents-as-tools deep the code running is (0: the run Runner.run started)
DEPTH: contextvars.ContextVar[int] = contextvars.ContextVar("haltproof_agents_depth", default=0)


@dataclass
class AgentDeclaration:
    """An OpenAI Agents declaration, read: the agents, what each agent's model answers, the tools' outcomes."""

    target: Any                                          # the starting Agent, the user's own
    agents: dict[str, Any]                               # name -> Agent, every agent handoffs reach
    models: dict[str, dict[str, Answer | list[Answer]]]  # agent name -> label -> answer
    tools: dict[str, dict[str, Any]]                     # tool name -> label -> returned value or Raises
    tools_of: dict[str, list[str]]                       # agent name -> its tools with declared outcomes
    counted: list[str]                                   # the function tools whose runs are counted (runs_TOOL)
    input: Any
    context: RunObject | None = None                     # `context:`: a hook, or the context's fields
    declared: dict[str, Choice] = field(default_factory=dict)   # choice name -> its lines (models, tools)
    nested: dict[str, Any] = field(default_factory=dict)        # agent tool name -> the tool (Agent.as_tool)
    swept: set[str] = field(default_factory=set)                # agent tools whose max_turns a param gives

    def choices(self, agent: str) -> list[Choice]:
        """The choices of agent `agent`'s turn: its model's answer, each declared tool's outcome and,
        for an agent with function tools, each scripted callable of the context."""
        out = [self.declared[model_choice(agent)]]
        out += [self.declared[tool_choice(t)] for t in self.tools_of.get(agent, [])]
        if self.context is not None and function_tools(self.agents[agent]):
            out += self.context.declared()
        return out

    def context_type(self) -> Any:
        """The context's type as the app declares it, `Agent[Context](...)`, or None."""
        import typing
        args = typing.get_args(getattr(self.target, "__orig_class__", None))
        return args[0] if args else None


def slug(name: str) -> str:
    """An agent's name as an identifier: `Triage agent` -> `triage_agent`."""
    return "_".join("".join(c if c.isalnum() else " " for c in name.lower()).split())


def model_choice(agent: str) -> str:
    return f"{slug(agent)}_says"


def tool_choice(tool: str) -> str:
    return f"{tool}_returns"


class DeclaredAgents(AgentsAdapter):
    """The live adapter of a declaration file: the user's own agents, the declared answers scripted."""

    def __init__(self, d: AgentDeclaration):
        self.d = d
        self.scripted = {model_choice(a): dict(outs) for a, outs in d.models.items()}
        self.reads = ("agent", "turns", "tool_runs", "handoffs", "status")

    def agent(self, params: dict[str, Any]) -> Any:
        return self.d.target

    def inputs(self, params: dict[str, Any]) -> Any:
        return copy.deepcopy(self.d.input)

    def run_context(self, params: dict[str, Any], channel: Channel) -> Any:
        """`context:`'s object for one run (of the type `Agent[Context]` declares), its scripted
        callables answering what `channel`'s turn chose."""
        if self.d.context is None:
            return None
        return self.d.context.build(params, lambda: channel.chosen, self.d.context_type())

    async def step(self, live: AgentRun, action: str, choices: dict[str, Any]) -> str | None:
        live.channel.chosen = dict(choices)
        live.channel.tools = {name: self.d.tools[name][choices[tool_choice(name)]]
                              for name in self.d.tools if tool_choice(name) in choices}
        return await super().step(live, action, {k: v for k, v in choices.items() if k in self.scripted})

    def abstract(self, live: AgentRun) -> dict[str, Any]:
        channel = live.channel
        seen = {**super().abstract(live), **{f"runs_{t}": channel.runs.get(t, 0) for t in self.d.counted}}
        if self.d.nested:
            seen.update({"model_calls": channel.model_calls, "child_limits": channel.child_limits,
                         **{f"turns_{slug(a)}": channel.calls_of.get(a, 0) for a in self.d.agents}})
        return seen


def scripted_tool(tool: Any) -> None:
    """Make function tool `tool` seen by haltproof's runs, in place, once (its own code still runs
    for other runs and for the app outside haltproof):

    - a run that declares an outcome for it (`channel.tools`) gets that outcome instead of its
      code, inside the SDK's invoker, so the SDK's own failure handling (failure_error_function)
      takes a declared exception exactly as it takes the tool's;
    - a call inside a nested run (an agent used as a tool, `Agent.as_tool`) is counted: the SDK
      gives a nested run the tool's own `hooks` (none by default), not the parent run's;
    - an agent used as a tool runs its nested `Runner.run` one level deeper (`DEPTH`), with the
      `max_turns` the run's params give it (`channel.nested_turns`, else the one `as_tool` was
      given), and a nested `MaxTurnsExceeded` is counted (`channel.child_limits`) as it leaves."""
    invoker = tool.on_invoke_tool
    impl = getattr(invoker, "_invoke_tool_impl", None)
    if impl is None or impl in SCRIPTED:
        return
    limit = _cell(impl, "max_turns") if getattr(tool, "_is_agent_tool", False) else None
    written = limit.cell_contents if limit is not None else None

    @functools.wraps(impl)
    async def scripted(ctx: Any, arguments: str) -> Any:
        channel = RUNNING.get()
        if limit is not None:       # set before every call: a swept value never outlives its run
            limit.cell_contents = channel.nested_turns.get(tool.name, written) if channel is not None else written
        if channel is None:
            return await impl(ctx, arguments)
        if DEPTH.get() > 0:
            channel.tool_runs += 1
            channel.runs[tool.name] = channel.runs.get(tool.name, 0) + 1
        if tool.name in channel.tools:
            return give(channel.tools[tool.name])
        if limit is None:
            return await impl(ctx, arguments)
        from agents import MaxTurnsExceeded
        token, caller = DEPTH.set(DEPTH.get() + 1), channel.agent
        try:
            return await impl(ctx, arguments)
        except MaxTurnsExceeded:
            channel.child_limits += 1
            raise
        finally:
            DEPTH.reset(token)
            channel.agent = caller      # the run is back with the agent that called the tool
    scripted.written_max_turns = written    # type: ignore[attr-defined]  # what as_tool gave (the cell is swept)
    SCRIPTED.add(scripted)
    invoker._invoke_tool_impl = scripted


def _cell(fn: Any, name: str) -> Any:
    """The closure cell of `fn` holding its free variable `name` (None when it has none)."""
    names = getattr(getattr(fn, "__code__", None), "co_freevars", ())
    return fn.__closure__[names.index(name)] if name in names and fn.__closure__ else None


def agent_tools(agent: Any) -> dict[str, Any]:
    """The agent's tools that are agents (`Agent.as_tool`), by tool name."""
    return {name: t for name, t in function_tools(agent).items() if getattr(t, "_agent_instance", None) is not None}


def nested_limit(tool: Any) -> int:
    """The `max_turns` an agent tool's nested run gets as the app wrote it: `as_tool(max_turns=...)`,
    else the SDK's own default (its nested run never inherits the parent run's limit)."""
    from agents.run import DEFAULT_MAX_TURNS
    impl = getattr(tool.on_invoke_tool, "_invoke_tool_impl", None)
    if impl in SCRIPTED:            # its cell holds the last run's value: what as_tool gave is kept aside
        value = getattr(impl, "written_max_turns", None)
    else:
        cell = _cell(impl, "max_turns")
        value = cell.cell_contents if cell is not None else None
    return DEFAULT_MAX_TURNS if value is None else int(value)


def instrument(start: Any) -> None:
    """Every function tool of every agent a run from `start` can reach, made seen (scripted_tool)."""
    for agent in agents_of(start, "", 0, tools=True).values():
        for tool in function_tools(agent).values():
            scripted_tool(tool)


def is_agent(obj: Any) -> bool:
    from agents import Agent
    return isinstance(obj, Agent)


def agents_of(start: Any, file: str, line: int, tools: bool = False) -> dict[str, Any]:
    """Every agent the run can reach from `start` through handoffs (and, with `tools`, the agents
    used as tools, in their nested runs), by name (names are unique)."""
    found: dict[str, Any] = {}
    todo = [start]
    while todo:
        agent = todo.pop(0)
        if agent.name in found:
            if found[agent.name] is not agent:
                raise fail(file, line, f"two agents are named {agent.name!r}: a handoff names its agent by name")
            continue
        found[agent.name] = agent
        for h in agent.handoffs:
            ref = getattr(h, "_agent_ref", None)
            target = h if is_agent(h) else (ref() if callable(ref) else None)
            if target is None:
                raise fail(file, line, f"{agent.name} hands off to {getattr(h, 'agent_name', h)!r}, an agent "
                                       "haltproof cannot see (a handoff() of an agent no longer alive)")
            todo.append(target)
        if tools:
            todo.extend(t._agent_instance for t in agent_tools(agent).values())
    return found


def function_tools(agent: Any) -> dict[str, Any]:
    from agents import FunctionTool
    return {t.name: t for t in agent.tools if isinstance(t, FunctionTool)}


def _answer(raw: Any, file: str, line: int, what: str, d_agent: Any, nested: bool = False) -> Answer | list[Answer]:
    """One scripted answer: a text (the final output), `{tool: NAME, args: {...}}`, `{handoff: AGENT}`,
    or a list of tool calls and handoffs (one turn making them all)."""
    if isinstance(raw, list) and raw and not nested:
        out: list[Answer] = []
        for one in raw:
            part = _answer(one, file, line, what, d_agent, nested=True)
            assert not isinstance(part, list), "a nested answer is never a list"
            out.append(part)
        return out
    if isinstance(raw, str):
        return final(str(raw))
    tools = function_tools(d_agent)
    if isinstance(raw, dict) and set(raw) <= {"tool", "args"} and "tool" in raw:
        name, args = raw["tool"], raw.get("args", {})
        if name not in tools:
            raise fail(file, line, f"{what} calls the tool {name!r}, which {d_agent.name} does not have "
                                   f"(its function tools: {', '.join(tools) or 'none'})")
        if not isinstance(args, dict):
            raise fail(file, line, f"{what}: args must be a mapping of the tool's arguments")
        return tool_call(str(name), **plain(args))
    if isinstance(raw, dict) and set(raw) == {"handoff"}:
        offered = [getattr(h, "agent_name", None) or h.name for h in d_agent.handoffs]
        if raw["handoff"] not in offered:
            raise fail(file, line, f"{what} hands off to {raw['handoff']!r}, which {d_agent.name} does not hand "
                                   f"off to (its handoffs: {', '.join(offered) or 'none'})")
        return handoff_to(str(raw["handoff"]))
    raise fail(file, line, f"{what} must be the model's final text, {{tool: NAME, args: {{...}}}}, "
                           "{handoff: AGENT}, or a list of those (one turn making them all)")


def _models(top: YMap, file: str, agents: dict[str, Any],
            lines: dict[str, Choice]) -> dict[str, dict[str, Answer | list[Answer]]]:
    """`models:` agent -> label -> answer (an answer may carry `when:`, a guard over the vars)."""
    return declared_models(top, file, agents, lines, _answer, "agent", "run", "can get the run")


def declared_models(top: YMap, file: str, agents: dict[str, Any], lines: dict[str, Choice],
                    answer: Callable[[Any, str, int, str, Any], Any], kind: str, where: str,
                    present: str) -> dict[str, dict[str, Any]]:
    """`models:` agent -> label -> answer, each read by `answer` (the framework's answer shapes);
    each agent's choice at its lines goes to `lines`. `kind`, `where` and `present` word the
    errors: an agent named that is not in the `where`, one that `present` with no answers."""
    declared = mapping(top, "models", file, "agent names to their model's answers")
    out: dict[str, dict[str, Any]] = {}
    for name in declared:
        if name not in agents:
            raise fail(file, declared.line_of(name), f"models: no {kind} named {name!r} in the {where} "
                                                     f"(its {kind}s: {', '.join(agents)})")
        labels = outcome_labels(declared, name, file, "models")
        choice = lines[model_choice(str(name))] = Choice(model_choice(str(name)), declared.line_of(name), {})
        out[str(name)] = {}
        for label, raw in labels.items():
            at = labels.line_of(label)
            raw, guard = guard_of(raw, file, f"answer {label} of {name}")
            choice.labels[str(label)] = at
            if guard is not None:
                choice.when[str(label)] = guard
            out[str(name)][str(label)] = answer(raw, file, at, f"answer {label} of {name}", agents[name])
    missing = [a for a in agents if a not in out]
    if missing:
        raise fail(file, top.line_of("models") if "models" in top else top.line,
                   f"models: the {kind} {missing[0]!r} {present}, but its model has no answers declared")
    return out


def _tools(top: YMap, file: str, agents: dict[str, Any], lines: dict[str, Choice]) -> dict[str, dict[str, Any]]:
    """`tools:`: tool name -> {label: what it returns, or {raises: module.Class, message: TEXT}};
    each tool's choice at its lines goes to `lines`."""
    declared = mapping(top, "tools", file, "tool names to their outcomes")
    known = {name: tool for agent in agents.values() for name, tool in function_tools(agent).items()}
    out: dict[str, dict[str, Any]] = {}
    for name in declared:
        if name not in known or not str(name).isidentifier():
            raise fail(file, declared.line_of(name), f"tools: no function tool named {name!r} in the run "
                                                     f"(its tools: {', '.join(known) or 'none'})")
        labels = outcome_labels(declared, name, file, "tools")
        out[str(name)] = {str(label): scripted_outcome(raw, file, labels.line_of(label), f"tools: outcome {label} of {name}")
                          for label, raw in labels.items()}
        lines[tool_choice(str(name))] = Choice(tool_choice(str(name)), declared.line_of(name),
                                               {str(label): labels.line_of(label) for label in labels})
        scripted_tool(known[name])
    return out


def declaration(top: YMap, file: str) -> Declared:
    """Expand a `framework: openai_agents` declaration into its spec and adapter (docs/how-to/openai-agents.md)."""
    begin(top, file, require_agents, DECLARATION_KEYS, {"target", "input", "models"})
    target = import_target(top, file)
    ref, tline = str(top["target"]), top.line_of("target")
    if not is_agent(target):
        raise fail(file, tline, f"{ref} is a {type(target).__name__}, not an agents.Agent")
    params = top.get("params", YMap())
    if not isinstance(params, YMap) or LIMIT not in params:
        raise fail(file, top.line_of("params") if "params" in top else top.line,
                   f"params: an openai_agents declaration needs {LIMIT} (the Runner's limit, e.g. "
                   f"{LIMIT}: {{min: 1, max: 5}})")
    agents = agents_of(target, file, tline, tools=True)
    slugs = [slug(a) for a in agents]
    if len(set(slugs)) != len(slugs) or not all(s.isidentifier() for s in slugs) or any("'" in a for a in agents):
        raise fail(file, tline, f"the agents' names {', '.join(agents)} do not give distinct identifiers "
                                "(letters, digits, spaces; no quote)")
    lines: dict[str, Choice] = {}
    models = _models(top, file, agents, lines)
    tools = _tools(top, file, agents, lines)
    tools_of = {a: [t for t in function_tools(agent) if t in tools] for a, agent in agents.items()}
    counted = sorted({t for agent in agents.values() for t in function_tools(agent)})
    d = AgentDeclaration(target, agents, models, tools, tools_of, [t for t in counted if t.isidentifier()],
                         plain(top["input"]), run_object(top, "context", file, params), lines)
    d.nested, d.swept = _nested(top, file, d, params)
    if d.context is not None:
        check_run_object(d.context, file, params, d.context_type())
        for s in d.context.scripted:
            if s.choice in lines:
                raise fail(file, s.line, f"context: {s.path}'s choice {s.choice} is also a tool's: rename the "
                                         "field or the tool's outcome")
    spec = node(_spec(top, file, ref, d), top.line_of("framework"))
    functions = {name: tool_function(t) for agent in agents.values() for name, t in function_tools(agent).items()}
    warnings = skipped_writes({t: lines[tool_choice(t)].labels for t in tools}, functions, "context")
    return Declared(keep_user_lines(spec, top), lambda: DeclaredAgents(d), warnings)


def _nested(top: YMap, file: str, d: AgentDeclaration, params: YMap) -> tuple[dict[str, Any], set[str]]:
    """The agents used as tools (`Agent.as_tool`) the run can reach, by tool name, and those whose
    max_turns a param `max_turns_TOOL` sweeps; what haltproof cannot explore is refused at its line:
    a nested run with its own run_config or streamed (the scripted model would not answer it), a
    nesting with no depth bound, two nested runs in one turn."""
    tline = top.line_of("target")
    nested = {name: t for agent in d.agents.values() for name, t in agent_tools(agent).items()}
    for name, t in nested.items():
        owner = next(a for a, agent in d.agents.items() if name in agent_tools(agent))
        impl = t.on_invoke_tool._invoke_tool_impl
        impl = getattr(impl, "__wrapped__", impl)
        for own, what in (("run_config", "its own run_config"), ("on_stream", "an on_stream callback")):
            cell = _cell(impl, own)
            if cell is not None and cell.cell_contents is not None:
                raise fail(file, tline, f"{owner} uses {t._agent_instance.name} as the tool {name} with {what}: "
                                        "haltproof's scripted model answers only a nested run that takes the "
                                        "parent run's run_config and is not streamed")
        if owner in agents_of(t._agent_instance, file, tline, tools=True):
            raise fail(file, tline, f"{owner} uses {t._agent_instance.name} as the tool {name}, whose run can call "
                                    f"{owner} again: the nesting has no depth bound (each nested run has its own "
                                    "max_turns, so the tree's model calls are unbounded)")
    swept: set[str] = set()
    for p in params:
        if str(p).startswith(NESTED):
            tool = str(p)[len(NESTED):]
            if tool not in nested:
                raise fail(file, params.line_of(p), f"params: {p} names no agent used as a tool (a param "
                                                     f"{NESTED}TOOL sets the max_turns of the agent tool TOOL; agent "
                                                     f"tools: {', '.join(nested) or 'none'})", p)
            swept.add(tool)
    for agent, outs in d.models.items():
        for label, answer in outs.items():
            calls = [a.name for a in answer if isinstance(a, ToolCall) and a.name in nested] \
                if isinstance(answer, list) else []
            if len(calls) > 1:
                raise fail(file, d.declared[model_choice(agent)].labels[label],
                           f"answer {label} of {agent} calls {' and '.join(calls)}, agents used as tools, in one "
                           "turn: their nested runs would ask the model at once (in parallel), which haltproof does "
                           "not explore; give each its own turn")
    return nested, swept


def nested_bound(d: AgentDeclaration, start: Any, limit: str, calls: int) -> str:
    """An upper bound on the model calls of a run from `start` with `limit` turns, nested runs
    included (the vars' range; haltproof measures the exact value): each turn may call every
    agent tool of the run's agents `calls` times, each nested run bounded the same way."""
    inner = [nested_bound(d, t._agent_instance, _limit_of(d, name), calls)
             for agent in agents_of(start, "", 0).values() for name, t in agent_tools(agent).items()]
    return f"({limit} + 1)" if not inner else f"({limit} + 1) * (1 + {calls} * ({' + '.join(inner)}))"


def _limit_of(d: AgentDeclaration, tool: str) -> str:
    """An agent tool's max_turns in the generated spec: its param, or the value its as_tool gave."""
    return f"{NESTED}{tool}" if tool in d.swept else str(nested_limit(d.nested[tool]))


def tool_function(tool: Any) -> Any:
    """The user's function behind a function tool (the SDK keeps it in its invoker's closure), or
    None when it cannot be found there."""
    import inspect
    impl = getattr(tool.on_invoke_tool, "_invoke_tool_impl", None)
    impl = getattr(impl, "__wrapped__", impl)       # scripted_tool wraps it
    for cell in getattr(impl, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:          # an empty cell
            continue
        if inspect.isfunction(value) and not value.__module__.startswith("agents"):
            return value
    return None


def _spec(top: YMap, file: str, ref: str, d: AgentDeclaration) -> dict[str, Any]:
    """The spec a declaration stands for: the run's abstract state, one action per agent (a real
    model turn of that agent, its answer chosen; the SDK's limit error an outcome) and the
    out-of-the-box properties, then the user's own."""
    calls = max([len(a) if isinstance(a, list) else 1 for outs in d.models.values() for a in outs.values()])
    total = nested_bound(d, d.target, LIMIT, calls)
    per_turn = f"{calls} * {total}"
    counters: dict[str, Any] = {
        "turns": {"type": "int", "min": 0, "max": f"{LIMIT} + 1", "init": 0},      # room to see an overrun
        "tool_runs": {"type": "int", "min": 0, "max": per_turn, "init": 0},
        "handoffs": {"type": "int", "min": 0, "max": per_turn, "init": 0},
    }
    counters.update({f"runs_{t}": {"type": "int", "min": 0, "max": per_turn, "init": 0} for t in d.counted})
    if d.nested:        # an agent tree: its model calls in all, per agent, and the nested limits hit
        counters["model_calls"] = {"type": "int", "min": 0, "max": total, "init": 0}
        counters.update({f"turns_{slug(a)}": {"type": "int", "min": 0, "max": total, "init": 0} for a in d.agents})
        counters["child_limits"] = {"type": "int", "min": 0, "max": total, "init": 0}
    statuses = ["running", "done", "limit"] + (["tool_error"] if _raising(d) else [])
    raises = [LIMIT_ERROR] + ([TOOL_ERROR] if _raising(d) else [])
    actions = lined({slug(a): {"when": f"status == running and agent == {quoted(a)}",
                               "choose": choose_node(d.choices(a)), "raises": raises} for a in d.agents},
                    {slug(a): d.declared[model_choice(a)].line for a in d.agents})
    properties = with_user_properties(top, file, _builtin_properties(d), "OpenAI Agents")
    spec: dict[str, Any] = {
        "machine": top.get("machine", os.path.splitext(os.path.basename(file))[0]),
        "description": top.get("description", f"{ref} as the Agents SDK's Runner runs it: one model turn per "
                                              "transition"),
        "bind": ref,
        "params": top["params"],
        "vars": {"agent": {"type": "enum", "values": list(d.agents), "init": d.target.name},
                 "status": {"type": "enum", "values": statuses, "init": "running"},
                 **counters},
        "actions": actions,
        "terminal": "status != running",
        "properties": properties,
    }
    if "expect" in top:
        spec["expect"] = top["expect"]
    return spec


def _raising(d: AgentDeclaration) -> bool:
    """Whether a tool's exception can end the run: a tool whose failure_error_function is None
    (the SDK re-raises what it raises, as its UserError; with a failure function the model reads
    a message and the run goes on). The SDK's own resolution of the tool's setting decides."""
    from agents.tool import resolve_function_tool_failure_error_function
    return any(resolve_function_tool_failure_error_function(t, None) is None
               for agent in d.agents.values() for t in function_tools(agent).values())


def _builtin_properties(d: AgentDeclaration) -> dict[str, Any]:
    """The out-of-the-box properties (docs/how-to/openai-agents.md): the run ends; whether the SDK's
    MaxTurnsExceeded can happen, the smallest safe max_turns; the worst cases, with what
    max_turns promises."""
    props: dict[str, Any] = {
        "run_ends": {"terminates": True, "description": "every run ends: a final output, or the SDK's "
                                                        "MaxTurnsExceeded"},
        "limit_error": {"possible": "status == limit", "smallest_safe": LIMIT,
                        "description": "whether a run can end in MaxTurnsExceeded, with a shortest one"},
        "most_turns": {"maximum": "turns", "at_most": LIMIT, "limit": LIMIT,
                       "description": "the most model calls (turns) a run makes; the SDK promises at most max_turns"},
        "most_tool_runs": {"maximum": "tool_runs", "limit": LIMIT, "description": "the most tool executions in a run "
                                                                  "(max_turns does not bound them)"},
    }
    if any(agent.handoffs for agent in d.agents.values()):
        props["most_handoffs"] = {"maximum": "handoffs", "limit": LIMIT, "description": "the most handoffs in a run"}
    if d.nested:
        props["most_model_calls"] = {"maximum": "model_calls", "limit": LIMIT,
                                     "description": "the most model calls in a run, nested runs (agents used as "
                                                    "tools) included: max_turns counts only the top run's"}
        props.update({f"most_turns_{slug(a)}": {"maximum": f"turns_{slug(a)}", "limit": LIMIT,
                                                "description": f"the most model calls of {a}, in all its runs"}
                      for a in d.agents})
        props["child_limit_error"] = {"possible": "child_limits > 0",
                                      "description": "whether a nested run (an agent used as a tool) can hit its "
                                                     "own max_turns, with a shortest such run"}
    return props
