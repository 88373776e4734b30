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
event loop (docs/binding.md, Async). A paused task cannot be copied: runs are replayed, and
a run haltproof lets go of is cancelled (the SDK's own cancellation path), never left pending.

The abstract state read back (`reads`, all by default): `agent` (the current agent's name:
the one the pending model call is for, or the one a handoff passed the run to), `turns` (model calls answered),
`tool_runs` (tool executions begun, the SDK's `on_tool_start`), `handoffs` (handoffs done,
`on_handoff`), `status` (`running`, or `done` once `Runner.run` returned; a declared exception
sets its own) and `output` (what the user sees: `str(result.final_output)`, "" before), plus
what `observe(run)` adds (e.g. from the run's context object, which the user's tools write). A generated spec (a declaration file naming the agent) has one
action per agent guarded by `agent == NAME`, choosing that agent's labels.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from haltproof.machine.live import LiveAdapter

from .declaration import require_version

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
    """What the paused SDK task and the adapter share: the pending model call and what was seen."""

    asked: asyncio.Future[None]                     # set when the SDK calls the model
    call: Any = None                                # the pending ModelCall
    reply: asyncio.Future[list[Any]] | None = None   # its answer, set by a step
    agent: str = ""
    turns: int = 0
    tool_runs: int = 0
    handoffs: int = 0
    status: str = "running"
    output: str = ""
    result: Any = None                              # the RunResult once Runner.run returned


@dataclass
class AgentRun:
    """One live run: the Runner's task, its channel and the context object the run was given
    (the SDK's `Runner.run(context=...)`, what the user's tools see). Only haltproof holds it."""

    task: asyncio.Task[Any]
    channel: Channel
    context: Any = None


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
    return Seen()


def scripted_model(channel: Channel) -> Any:
    """The SDK's ScriptedModel whose every step awaits the answer a transition gives."""
    from agents.testing import ModelStep, ScriptedModel

    model = ScriptedModel()

    async def answer(call: Any) -> list[Any]:
        model.enqueue(ModelStep.respond(answer))        # the next call is answered the same way
        loop = asyncio.get_running_loop()
        channel.call, channel.reply = call, loop.create_future()
        channel.asked.set_result(None)
        return await channel.reply
    model.enqueue(ModelStep.respond(answer))
    return model


async def settle(run: AgentRun) -> None:
    """Let the SDK run until it calls the model again or `Runner.run` ends (its exception raised here)."""
    await asyncio.wait([run.task, run.channel.asked], return_when=asyncio.FIRST_COMPLETED)
    if run.task.done():
        run.channel.result = run.task.result()        # raises what Runner.run raised
        run.channel.status = "done"
        run.channel.output = str(run.channel.result.final_output)
        run.channel.agent = run.channel.result.last_agent.name


def ended(task: asyncio.Task[Any]) -> str:
    """How a finished run task ended, in words: `returned`, or `raised MaxTurnsExceeded`."""
    error = task.exception()
    return "returned" if error is None else f"raised {type(error).__name__}"


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


def let_go(task: asyncio.Task[Any]) -> None:
    """A run haltproof no longer holds: cancel its paused task (the loop finishes it on its next turn)."""
    if not task.done() and not task.get_loop().is_closed():
        task.cancel()


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

    async def start(self, params: dict[str, Any], init: dict[str, Any]) -> AgentRun:
        require_agents()
        from agents import RunConfig, Runner, set_tracing_disabled
        set_tracing_disabled(True)          # offline: no trace is exported anywhere
        channel = Channel(asked=asyncio.get_running_loop().create_future())
        config = RunConfig(model=scripted_model(channel), tracing_disabled=True)
        context = self.context(params)
        options = {"context": context, "hooks": hooks_for(channel), "run_config": config, **self.run_options(params)}
        agent, given = self.agent(params), self.inputs(params)
        ran = streamed_run(Runner, agent, given, options) if self.streamed else Runner.run(agent, given, **options)
        task = asyncio.create_task(ran)
        run = AgentRun(task, channel, context)
        weakref.finalize(run, let_go, task)
        await settle(run)
        return run

    async def step(self, live: AgentRun, action: str, choices: dict[str, Any]) -> str | None:
        name = self.scripted_choice(action, choices)
        channel = live.channel
        if live.task.done() or channel.reply is None:
            raise ValueError(f"action {action} answers a model call, but Runner.run has already {ended(live.task)}: "
                             "guard the action so that it is enabled only while the run is running")
        answer = render(self.scripted[name][choices[name]], channel.call, channel.agent, channel.turns + 1)
        channel.asked = asyncio.get_running_loop().create_future()
        channel.reply.set_result(answer)
        channel.turns += 1
        await settle(live)
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
