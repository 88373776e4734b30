"""Google ADK: an agent tree explored as ADK's own `InMemoryRunner` runs it, one model call per transition.

The agents (`LlmAgent`, `SequentialAgent`, `ParallelAgent`, `LoopAgent`, their `sub_agents`,
tools and callbacks) are the user's own; `Runner.run_async` drives them with ADK's own flows:
its transfers (`transfer_to_agent`), its tool calls, its LoopAgent loop and its
`RunConfig.max_llm_calls` check, which raises `LlmCallsLimitExceededError` before the call that
would pass the limit (declared as the action's outcome; haltproof never re-implements a limit).
Only the model is scripted: each LlmAgent of a copy of the tree (ADK's `BaseAgent.clone`, so the
user's objects are left as they are) gets a `ScriptedLlm`, a `BaseLlm` whose every call pauses the
run (frameworks/paused.py) until the transition gives the answer its choice names.

A `ParallelAgent`'s branches call their models from concurrent tasks: the calls are answered one
at a time, in the order asyncio runs the branches (one interleaving, not all of them).

What each run is seen through, counted in the run's own tasks before its next model call: a
plugin (ADK's own `BasePlugin`, given to the runner) counts the tools and transfers begun, the
loops' iterations begun and how each loop ended; each loop's sub-agents, in haltproof's copy,
pass their events to the loop through a wrapper that counts the escalations it reads. Offline: the model is never ADK's
Gemini (no client, no key), and ADK's tracing goes to the OpenTelemetry API only, whose
default provider records nothing (ADK installs an exporter only in `adk web`/`api_server`).

Declaration files (`framework: adk`, docs/how-to/adk.md): `target` names the user's root
agent; every LlmAgent in its tree gets an action (guarded by `agent == NAME`, the agent whose
model call is pending) and a `SLUG_says` choice of its declared answers.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import logging
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from haltproof.machine.declarations import Declared
from haltproof.machine.live import LiveAdapter
from haltproof.machine.yamlpos import YMap

from .declaration import (COMMON_KEYS, Choice, begin, choose_node, fail, import_target, keep_user_lines,
                          lined, node, plain, quoted, require_version, with_user_properties)
from .openai_agents import Final, ToolCall, declared_models, model_choice, slug     # a text answer and a tool call, as there
from .paused import ModelCalls, PausedRun

LIMIT = "max_llm_calls"
ITERATIONS = "max_iterations"
EXITS = ["none", "escalate", "out_of_iterations"]
LIMIT_ERROR = {"class": "google.adk.agents.invocation_context.LlmCallsLimitExceededError",
               "match": r"Max number of llm calls limit of `\d+` exceeded", "set": {"status": "limit"}}
TRANSFER = "transfer_to_agent"     # ADK's own tool for a transfer
RUNNING: contextvars.ContextVar[Channel | None] = contextvars.ContextVar("haltproof_adk_run", default=None)


def require_adk() -> str:
    """The installed ADK's version, or a clear error naming it when it is missing or unsupported.
    ADK's loggers get a handler that drops what they say (the app's own handlers, on the root
    logger, still see it): without one, Python prints ADK's warnings and the traceback of every
    LlmCallsLimitExceededError, a declared outcome here, over haltproof's output."""
    version = require_version("adk", "google-adk", "Google ADK")
    quiet = logging.getLogger("google_adk")
    if not any(isinstance(h, logging.NullHandler) for h in quiet.handlers):
        quiet.addHandler(logging.NullHandler())
    return version


@dataclass(frozen=True)
class Transfer:
    """The model transfers the run to another agent, through ADK's own `transfer_to_agent` tool."""

    agent: str


Answer = Final | ToolCall | Transfer


def render(answer: Answer | Sequence[Answer], request: Any, agent: str, call: int) -> Any:
    """ADK's LlmResponse for one model answer (several function calls: parallel tool calls), with
    zero token counts (no usage metadata makes ADK log a warning on every call)."""
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types
    answers = [answer] if isinstance(answer, Final | ToolCall | Transfer) else list(answer)
    offered = sorted(getattr(request, "tools_dict", {}) or {})
    parts = []
    for i, one in enumerate(answers):
        if isinstance(one, Final):
            parts.append(types.Part(text=one.text))
            continue
        name, args = (TRANSFER, {"agent_name": one.agent}) if isinstance(one, Transfer) \
            else (one.name, copy.deepcopy(one.arguments))
        if name not in offered:
            raise ValueError(f"{agent}'s model was not offered the tool {name!r} on this call "
                             f"(it was offered: {', '.join(offered) or 'none'})")
        parts.append(types.Part(function_call=types.FunctionCall(name=name, args=args, id=f"call_{call}_{i}")))
    usage = types.GenerateContentResponseUsageMetadata(prompt_token_count=0, candidates_token_count=0,
                                                       total_token_count=0)
    return LlmResponse(content=types.Content(role="model", parts=parts), usage_metadata=usage)


@dataclass
class Channel:
    """What ADK's run and the adapter share: its model calls (frameworks/paused.py) and what the
    plugin and the loops' sub-agents saw, all counted in the run's own tasks before its next
    model call (never from the runner's event stream, which may lag behind)."""

    model: ModelCalls = field(default_factory=ModelCalls)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)     # one model call pending at a time
    agent: str = ""                 # the LlmAgent whose model call is pending (the last one, once ended)
    status: str = "running"
    tool_runs: int = 0              # the agents' tools begun (ADK's transfer_to_agent is counted apart)
    transfers: int = 0              # transfer_to_agent calls begun
    escalations: int = 0            # escalate events a LoopAgent saw from its sub-agents
    runs: dict[str, int] = field(default_factory=dict)          # per tool name: its runs begun
    iterations: dict[str, int] = field(default_factory=dict)    # per LoopAgent: iterations begun
    exits: dict[str, str] = field(default_factory=dict)         # per LoopAgent: how it last ended
    escalated: dict[str, bool] = field(default_factory=dict)    # per LoopAgent: escalated in its current run

    @property
    def calls(self) -> int:
        """Model calls answered so far."""
        return self.model.calls


@dataclass
class AdkRun:
    """One live run: `Runner.run_async` paused at its model call, and its channel."""

    paused: PausedRun
    channel: Channel


def scripted_llm(agent: str, model: Any) -> Any:
    """A `BaseLlm` for LlmAgent `agent` (named like its own model) whose every call awaits the
    answer the transition gives, read through `RUNNING` (each run's task carries its channel)."""
    from google.adk.models.base_llm import BaseLlm

    class ScriptedLlm(BaseLlm):
        """haltproof's scripted model: answers what each transition chooses, inside haltproof's runs only."""

        async def generate_content_async(self, llm_request: Any, stream: bool = False) -> Any:
            channel = RUNNING.get()
            if channel is None:
                raise RuntimeError("haltproof's scripted model answers inside haltproof's runs only")
            async with channel.lock:
                channel.agent = agent
                reply = await channel.model.model(llm_request)
            yield reply

    return ScriptedLlm(model=model if isinstance(model, str) and model else f"haltproof-scripted-{agent}")


def seen_by(channel: Channel) -> Any:
    """ADK's plugin counting what the run does into `channel`: tools and transfers begun, loop
    iterations begun (a loop's first sub-agent begun), how each loop ended (escalated while it
    ran, else it ran out of iterations)."""
    from google.adk.plugins.base_plugin import BasePlugin

    class Seen(BasePlugin):
        async def before_agent_callback(self, *, agent: Any, callback_context: Any) -> None:
            if is_loop(agent):
                channel.escalated[agent.name] = False
            parent = agent.parent_agent
            if is_loop(parent) and parent.sub_agents and parent.sub_agents[0] is agent:
                channel.iterations[parent.name] = channel.iterations.get(parent.name, 0) + 1

        async def after_agent_callback(self, *, agent: Any, callback_context: Any) -> None:
            if is_loop(agent):
                channel.exits[agent.name] = "escalate" if channel.escalated.get(agent.name) else "out_of_iterations"

        async def before_tool_callback(self, *, tool: Any, tool_args: Any, tool_context: Any) -> None:
            if tool.name == TRANSFER:
                channel.transfers += 1
                return
            channel.tool_runs += 1
            channel.runs[tool.name] = channel.runs.get(tool.name, 0) + 1
    return Seen(name="haltproof")


def seen_escalations(agent: Any, loop: str) -> None:
    """Let the run see the escalate events `agent` (a sub-agent of LoopAgent `loop`, in haltproof's
    copy of the tree) yields, as the loop reads them: its `run_async` wrapped in place."""
    own = agent.run_async

    async def run_async(ctx: Any) -> Any:
        events = own(ctx)
        try:
            async for event in events:
                channel = RUNNING.get()
                if channel is not None and event.actions.escalate:
                    channel.escalations += 1
                    channel.escalated[loop] = True
                yield event
        finally:
            await events.aclose()
    object.__setattr__(agent, "run_async", run_async)     # a pydantic model: its own __setattr__ refuses


async def run_to_end(runner: Any, message: str, config: Any) -> None:
    """One ADK run as an app drives it: a fresh in-memory session, `run_async` read to its end."""
    from google.genai import types
    session = await runner.session_service.create_session(app_name=runner.app_name, user_id="haltproof")
    given = types.Content(role="user", parts=[types.Part(text=message)])
    async for _ in runner.run_async(user_id="haltproof", session_id=session.id, new_message=given,
                                    run_config=config):
        pass


class AdkAdapter(LiveAdapter):
    """A live adapter for an ADK agent tree run by `InMemoryRunner`. Subclass it and give:

    `root(params)`: the root agent whose LlmAgents have `scripted_llm` models (`scripted_tree`
    makes one); `message(params)`: the user's message; `scripted`: for each choice, the answer
    per label (`Final`, `ToolCall`, `Transfer`, or a list of them). `run_config(params)` gives
    `max_llm_calls` from the param of that name."""

    scripted: dict[str, dict[str, Answer | Sequence[Answer]]] = {}

    def root(self, params: dict[str, Any]) -> Any:
        raise NotImplementedError

    def message(self, params: dict[str, Any]) -> str:
        raise NotImplementedError

    def run_config(self, params: dict[str, Any]) -> Any:
        from google.adk.agents.run_config import RunConfig
        return RunConfig(max_llm_calls=params[LIMIT])

    async def start(self, params: dict[str, Any], init: dict[str, Any]) -> AdkRun:
        require_adk()
        from google.adk.apps import App
        from google.adk.runners import InMemoryRunner
        channel = Channel()
        runner = InMemoryRunner(app=App(name="haltproof", root_agent=self.root(params), plugins=[seen_by(channel)]))
        message, config = self.message(params), self.run_config(params)
        token = RUNNING.set(channel)        # the run's task (and ADK's branch tasks) see its channel
        try:
            run = AdkRun(PausedRun.launch(lambda model: run_to_end(runner, message, config), channel.model), channel)
        finally:
            RUNNING.reset(token)
        await run.paused.settle()
        seen_the_end(run)
        return run

    async def step(self, live: AdkRun, action: str, choices: dict[str, Any]) -> str | None:
        channel, paused = live.channel, live.paused
        names = [name for name in choices if name in self.scripted]
        if len(names) != 1:
            raise ValueError(f"action {action} must choose exactly one of {type(self).__name__}.scripted's "
                             f"choices {sorted(self.scripted)} (it chooses {sorted(choices)})")
        if paused.done or paused.task is None or paused.task.done():
            raise ValueError(f"action {action} answers a model call, but the ADK run has already "
                             f"{paused.ended()}: guard the action so that it is enabled only while the run is running")
        reply = render(self.scripted[names[0]][choices[names[0]]], channel.model.request, channel.agent,
                       channel.calls + 1)
        await paused.answer(reply)
        seen_the_end(live)
        return None

    def abstract(self, live: AdkRun) -> dict[str, Any]:
        channel = live.channel
        return {"agent": channel.agent, "status": channel.status, "calls": channel.calls,
                "tool_runs": channel.tool_runs, "transfers": channel.transfers, "escalations": channel.escalations}

    def close(self, live: AdkRun) -> None:
        live.paused.close()


def seen_the_end(run: AdkRun) -> None:
    """A run whose `run_async` was read to its end is done."""
    if run.paused.done:
        run.channel.status = "done"


def scripted_tree(root: Any, iterations: dict[str, int | None]) -> Any:
    """A copy of the user's tree (ADK's `clone`) whose every LlmAgent has a `scripted_llm` model
    and whose LoopAgents named in `iterations` have that max_iterations; the user's agents stay as they are."""
    with warnings.catch_warnings():     # ADK 2.x deprecates its workflow agents, in favour of Workflow
        warnings.simplefilter("ignore", DeprecationWarning)
        copied = root.clone()
    for agent in walk(copied):
        if is_llm_agent(agent):
            agent.model = scripted_llm(agent.name, agent.model)
        if agent.name in iterations:
            agent.max_iterations = iterations[agent.name]
        if is_loop(agent):
            for sub in agent.sub_agents:
                seen_escalations(sub, agent.name)
    return copied


def walk(root: Any) -> list[Any]:
    """Every agent of the tree, depth first in sub_agents order."""
    out = [root]
    for sub in root.sub_agents:
        out += walk(sub)
    return out


def is_llm_agent(agent: Any) -> bool:
    from google.adk.agents import LlmAgent
    return isinstance(agent, LlmAgent)


def is_loop(agent: Any) -> bool:
    from google.adk.agents import LoopAgent
    return isinstance(agent, LoopAgent)


def first_model_call(root: Any) -> tuple[str, list[str]]:
    """The LlmAgent whose model the run asks first (the root's first sub-agent, down to an
    LlmAgent; a ParallelAgent's first branch asks first), and the LoopAgents begun on the way
    (each in its first iteration by then)."""
    agent, loops = root, []
    while not is_llm_agent(agent) and agent.sub_agents:
        if is_loop(agent):
            loops.append(str(agent.name))
        agent = agent.sub_agents[0]
    return str(agent.name), loops


def agent_tools(agent: Any) -> list[Any]:
    """An LlmAgent's tools as ADK's `BaseTool`s (a function wrapped as ADK wraps it, in a FunctionTool);
    a toolset, whose tools are known only once it is asked, is left out."""
    from google.adk.tools.base_tool import BaseTool
    from google.adk.tools.function_tool import FunctionTool
    out = []
    for tool in agent.tools:
        if isinstance(tool, BaseTool):
            out.append(tool)
        elif callable(tool):
            out.append(FunctionTool(tool))
    return out


def tool_names(agent: Any) -> list[str]:
    """The names of an LlmAgent's tools (a function is wrapped as ADK's FunctionTool is: its name)."""
    return [tool.name for tool in agent_tools(agent)]


def transfer_targets(agent: Any) -> list[str]:
    """The agents an LlmAgent may transfer to, by ADK's rule: its sub-agents, its parent (unless
    disallow_transfer_to_parent) and its peers (unless disallow_transfer_to_peers), when the
    parent is an LlmAgent."""
    out = [a.name for a in agent.sub_agents]
    parent = agent.parent_agent
    if is_llm_agent(parent):
        if not agent.disallow_transfer_to_parent:
            out.append(parent.name)
        if not agent.disallow_transfer_to_peers:
            out += [a.name for a in parent.sub_agents if a is not agent]
    return out


# ---------------------------------------------------------------- declaration files (docs/how-to/adk.md)

DECLARATION_KEYS = COMMON_KEYS | {"input", "models"}


@dataclass
class AdkDeclaration:
    """An ADK declaration, read: the tree, what each LlmAgent's model answers, the loops' params."""

    target: Any                                          # the root agent, the user's own
    agents: dict[str, Any]                               # name -> LlmAgent of the tree
    loops: dict[str, str | None]                         # LoopAgent name -> the param of its max_iterations
    models: dict[str, dict[str, Answer | list[Answer]]]  # LlmAgent name -> label -> answer
    counted: list[str]                                   # the tools whose runs are counted (runs_TOOL)
    input: str
    declared: dict[str, Choice] = field(default_factory=dict)


class DeclaredAdk(AdkAdapter):
    """The live adapter of a declaration file: the user's own tree, copied once per loops' params,
    the declared answers scripted."""

    def __init__(self, d: AdkDeclaration):
        self.d = d
        self.scripted = {model_choice(a): dict(outs) for a, outs in d.models.items()}
        self.trees: dict[tuple[Any, ...], Any] = {}

    def root(self, params: dict[str, Any]) -> Any:
        iterations = {loop: params[p] for loop, p in self.d.loops.items() if p is not None}
        key = tuple(sorted(iterations.items()))
        if key not in self.trees:
            self.trees[key] = scripted_tree(self.d.target, iterations)
        return self.trees[key]

    def message(self, params: dict[str, Any]) -> str:
        return self.d.input

    def abstract(self, live: AdkRun) -> dict[str, Any]:
        channel = live.channel
        out = super().abstract(live)
        out.update({f"runs_{t}": channel.runs.get(t, 0) for t in self.d.counted})
        for loop in self.d.loops:
            out[f"iterations_{slug(loop)}"] = channel.iterations.get(loop, 0)
            out[f"exit_{slug(loop)}"] = channel.exits.get(loop, "none")
        return out


def _answer(raw: Any, file: str, line: int, what: str, agent: Any, nested: bool = False) -> Answer | list[Answer]:
    """One scripted answer: a text (the agent's final response), `{tool: NAME, args: {...}}`,
    `{transfer: AGENT}`, or a list of tool calls (one model call making them all)."""
    if isinstance(raw, list) and raw and not nested:
        out: list[Answer] = []
        for one in raw:
            part = _answer(one, file, line, what, agent, nested=True)
            assert not isinstance(part, list), "a nested answer is never a list"
            out.append(part)
        return out
    if isinstance(raw, str):
        return Final(str(raw))
    if isinstance(raw, dict) and set(raw) <= {"tool", "args"} and "tool" in raw:
        tools, args = tool_names(agent), raw.get("args", {})
        if raw["tool"] not in tools:
            raise fail(file, line, f"{what} calls the tool {raw['tool']!r}, which {agent.name} does not have "
                                   f"(its tools: {', '.join(tools) or 'none'})")
        if not isinstance(args, dict):
            raise fail(file, line, f"{what}: args must be a mapping of the tool's arguments")
        return ToolCall(str(raw["tool"]), plain(args))
    if isinstance(raw, dict) and set(raw) == {"transfer"}:
        targets = transfer_targets(agent)
        if raw["transfer"] not in targets:
            raise fail(file, line, f"{what} transfers to {raw['transfer']!r}, which {agent.name} cannot transfer "
                                   f"to (its transfer targets: {', '.join(targets) or 'none'})")
        return Transfer(str(raw["transfer"]))
    raise fail(file, line, f"{what} must be the model's text, {{tool: NAME, args: {{...}}}}, {{transfer: AGENT}}, "
                           "or a list of those (one model call making them all)")


def _models(top: YMap, file: str, agents: dict[str, Any],
            lines: dict[str, Choice]) -> dict[str, dict[str, Answer | list[Answer]]]:
    """`models:` LlmAgent -> label -> answer, read as the OpenAI Agents declaration reads them."""
    return declared_models(top, file, agents, lines, _answer, "LlmAgent", "tree", "is in the tree")


def _limit_values(params: YMap, name: str) -> list[Any]:
    """The values a param is declared with (a value, a list, or a range's ends)."""
    raw = params[name]
    if isinstance(raw, dict):
        return [raw[k] for k in ("min", "max") if k in raw] + list(raw.get("values", []))
    return list(raw) if isinstance(raw, list) else [raw]


def _params(top: YMap, file: str, loops: list[Any]) -> dict[str, str | None]:
    """The params every declaration needs (max_llm_calls, each at least 1: ADK reads 0 or less as
    no limit) and the LoopAgents' max_iterations params (`max_iterations` for the one loop, or
    `max_iterations_SLUG` per loop); a loop without one keeps its own max_iterations."""
    params = top.get("params", YMap())
    at = top.line_of("params") if "params" in top else top.line
    if not isinstance(params, YMap) or LIMIT not in params:
        raise fail(file, at, f"params: an adk declaration needs {LIMIT} (RunConfig's limit, e.g. "
                             f"{LIMIT}: {{min: 1, max: 5}})")
    for value in _limit_values(params, LIMIT):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise fail(file, params.line_of(LIMIT), f"params: {LIMIT} must be 1 or more: ADK reads 0 or less as no "
                                                    "limit at all, and a run haltproof explores must be bounded", value)
    out: dict[str, str | None] = {}
    for loop in loops:
        own = f"{ITERATIONS}_{slug(loop.name)}"
        out[loop.name] = own if own in params else ITERATIONS if ITERATIONS in params and len(loops) == 1 else None
        name = out[loop.name]
        values = _limit_values(params, name) if name is not None else [loop.max_iterations]
        if any(v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 1) for v in values):
            raise fail(file, params.line_of(name) if name is not None else top.line_of("target"),
                       f"{loop.name}'s max_iterations must be 1 or more (or unset): with 0 or less ADK never runs "
                       "its sub-agents", next(v for v in values if v is not None and not (isinstance(v, int) and v >= 1)))
    if ITERATIONS in params and len(loops) != 1:
        raise fail(file, params.line_of(ITERATIONS), f"params: {ITERATIONS} sets the max_iterations of the one "
                   f"LoopAgent, and the tree has {len(loops)}: name the loop's own param, "
                   f"{ITERATIONS}_SLUG (e.g. {ITERATIONS}_{slug(loops[0].name) if loops else 'refine'})")
    return out


def declaration(top: YMap, file: str) -> Declared:
    """Expand a `framework: adk` declaration into its spec and adapter (docs/how-to/adk.md)."""
    begin(top, file, require_adk, DECLARATION_KEYS, {"target", "input", "models"})
    target = import_target(top, file)
    ref, tline = str(top["target"]), top.line_of("target")
    from google.adk.agents import BaseAgent
    if not isinstance(target, BaseAgent):
        raise fail(file, tline, f"{ref} is a {type(target).__name__}, not an ADK agent (google.adk.agents.BaseAgent)")
    tree = walk(target)
    seen: dict[str, str] = {}
    for agent in tree:
        if slug(agent.name) in seen:
            raise fail(file, tline, f"two agents of {ref}'s tree are named {seen[slug(agent.name)]!r} and "
                                    f"{agent.name!r}: haltproof names an agent's action and vars by its name, so "
                                    "the names must differ in more than case and punctuation")
        seen[slug(agent.name)] = agent.name
    agents = {a.name: a for a in tree if is_llm_agent(a)}
    if not agents:
        raise fail(file, tline, f"{ref}'s tree has no LlmAgent: no model is ever called")
    if not isinstance(top["input"], str):
        raise fail(file, top.line_of("input"), "input must be the user's message, a text")
    loops = _params(top, file, [a for a in tree if is_loop(a)])
    lines: dict[str, Choice] = {}
    models = _models(top, file, agents, lines)
    counted = sorted({t for a in agents.values() for t in tool_names(a) if t.isidentifier()})
    d = AdkDeclaration(target, agents, loops, models, counted, str(top["input"]), lines)
    spec = node(_spec(top, file, ref, d), top.line_of("framework"))
    return Declared(keep_user_lines(spec, top), lambda: DeclaredAdk(d), [])


def _spec(top: YMap, file: str, ref: str, d: AdkDeclaration) -> dict[str, Any]:
    """The spec a declaration stands for: the run's abstract state, one action per LlmAgent (a
    real model call of that agent, its answer chosen; ADK's limit error an outcome) and the
    out-of-the-box properties, then the user's own."""
    calls = max([len(a) if isinstance(a, list) else 1 for outs in d.models.values() for a in outs.values()])
    per_call = f"{calls} * ({LIMIT} + 1)"
    counters: dict[str, Any] = {
        "calls": {"type": "int", "min": 0, "max": f"{LIMIT} + 1", "init": 0},
        "tool_runs": {"type": "int", "min": 0, "max": per_call, "init": 0},
        "transfers": {"type": "int", "min": 0, "max": per_call, "init": 0},
        "escalations": {"type": "int", "min": 0, "max": per_call, "init": 0},
    }
    counters.update({f"runs_{t}": {"type": "int", "min": 0, "max": per_call, "init": 0} for t in d.counted})
    first, begun = first_model_call(d.target)
    for loop in d.loops:
        counters[f"iterations_{slug(loop)}"] = {"type": "int", "min": 0, "max": f"{LIMIT} + 1",
                                                "init": int(loop in begun)}
        counters[f"exit_{slug(loop)}"] = {"type": "enum", "values": EXITS, "init": "none"}
    actions = lined({slug(a): {"when": f"status == running and agent == {quoted(a)}",
                               "choose": choose_node([d.declared[model_choice(a)]]), "raises": [LIMIT_ERROR]}
                     for a in d.agents},
                    {slug(a): d.declared[model_choice(a)].line for a in d.agents})
    properties = with_user_properties(top, file, _builtin_properties(d), "ADK")
    spec: dict[str, Any] = {
        "machine": top.get("machine", os.path.splitext(os.path.basename(file))[0]),
        "description": top.get("description", f"{ref} as ADK's InMemoryRunner runs it: one model call per "
                                              "transition"),
        "bind": ref,
        "params": top["params"],
        "vars": {"agent": {"type": "enum", "values": list(d.agents), "init": first},
                 "status": {"type": "enum", "values": ["running", "done", "limit"], "init": "running"},
                 **counters},
        "actions": actions,
        "terminal": "status != running",
        "properties": properties,
    }
    if "expect" in top:
        spec["expect"] = top["expect"]
    return spec


def _builtin_properties(d: AdkDeclaration) -> dict[str, Any]:
    """The out-of-the-box properties (docs/how-to/adk.md): the run ends; whether ADK's
    LlmCallsLimitExceededError can happen, the smallest safe max_llm_calls; the worst cases, with
    what max_llm_calls promises; per loop, whether it can stop at max_iterations without escalating."""
    props: dict[str, Any] = {
        "run_ends": {"terminates": True, "description": "every run ends: its agents finish, or ADK's "
                                                        "LlmCallsLimitExceededError"},
        "limit_error": {"possible": "status == limit", "smallest_safe": LIMIT,
                        "description": "whether a run can end in LlmCallsLimitExceededError, with a shortest one"},
        "most_model_calls": {"maximum": "calls", "at_most": LIMIT, "limit": LIMIT,
                             "description": "the most model calls in a run; ADK promises at most max_llm_calls"},
        "most_tool_runs": {"maximum": "tool_runs", "limit": LIMIT,
                           "description": "the most tool runs in a run (max_llm_calls does not bound them)"},
    }
    if any(transfer_targets(a) for a in d.agents.values()):
        props["most_transfers"] = {"maximum": "transfers", "limit": LIMIT, "description": "the most transfers in a run"}
    for loop, param in d.loops.items():
        name = slug(loop)
        props[f"most_iterations_{name}"] = {"maximum": f"iterations_{name}", "limit": param or LIMIT,
                                            "description": f"the most iterations {loop} begins in a run"}
        if param is not None:       # ADK promises at most max_iterations
            props[f"most_iterations_{name}"]["at_most"] = param
        props[f"silent_stop_{name}"] = {"possible": f"exit_{name} == out_of_iterations",
                                        "description": f"whether {loop} can end at its max_iterations with no "
                                                       "escalate (the run goes on as if it had finished)"}
    return props
