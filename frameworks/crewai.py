"""CrewAI: a `Crew` explored as CrewAI's own `kickoff` runs it, one model call per transition.

The crew's agents, tasks, tools, guardrails and process (sequential or hierarchical) are the
user's own; `Crew.kickoff` runs them with CrewAI's own agent executor, its `max_iter` check
(the call after the limit is CrewAI's forced final answer), its delegation tools and its
guardrail retries (a guardrail still failing after `guardrail_max_retries` retries raises
`Exception("Task failed guardrail validation after N retries ...")`). Only the model is
scripted: every agent of a run (and a hierarchical crew's manager) gets one `BaseLLM`
subclass, CrewAI's custom-LLM interface, answering in CrewAI's text format what the
transition's choice names.

CrewAI runs its executor synchronously, in threads of its own: the run is `kickoff` in a
thread, and the scripted LLM's `call` hands each request to the run's event loop, where
frameworks/paused.py pauses it until the transition's answer comes (one model call at a time).
A run haltproof lets go of has its pending call cancelled: CrewAI sees `RunDropped`, a
BaseException its own `except Exception` handlers do not swallow, and the thread ends.

Offline: CrewAI's telemetry and tracing are on by default; `require_crewai` turns them off
through CrewAI's own switches (CREWAI_DISABLE_TELEMETRY, OTEL_SDK_DISABLED,
CREWAI_TRACING_ENABLED=false), and `max_rpm` is taken off the run's copies (it only makes a
run wait for the next minute: it ends nothing and bounds no count).

Declaration files (`framework: crewai`, docs/how-to/crewai.md): `target` names the user's
`Crew`; `models` gives each agent's answers (by role; a hierarchical crew's manager is `Crew
Manager`); `tools` may declare a tool's outcomes instead of running it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import json
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from haltproof.machine.declarations import Declared
from haltproof.machine.live import LiveAdapter
from haltproof.machine.yamlpos import YMap

from .declaration import (COMMON_KEYS, Choice, begin, choose_node, fail, give, guard_of, import_target,
                          keep_user_lines, lined, mapping, node, outcome_labels, plain, require_version, scripted_outcome,
                          with_user_properties)
from .openai_agents import Final, ToolCall     # a scripted model's answers, as there
from .paused import ModelCalls, PausedRun

LIMIT = "max_iter"
RETRIES = "guardrail_max_retries"
MANAGER = "Crew Manager"            # the role CrewAI gives the manager it makes (hierarchical_manager_agent)
DELEGATE = "Delegate work to coworker"
ASK = "Ask question to coworker"
OFFLINE = {"CREWAI_DISABLE_TELEMETRY": "true", "OTEL_SDK_DISABLED": "true", "CREWAI_TRACING_ENABLED": "false"}
DECLARATION_KEYS = COMMON_KEYS | {"inputs", "models", "tools"}
GUARDRAIL_ERROR = {"class": "Exception", "match": r"^Task failed guardrail( \d+)? validation after \d+ retries",
                   "set": {"status": "guardrail_failed"}}
RUNNING: contextvars.ContextVar[Channel | None] = contextvars.ContextVar("haltproof_crewai_run", default=None)


def require_crewai() -> str:
    """The installed CrewAI's version (or a clear error), with its telemetry and tracing off:
    CrewAI reads these switches when it sends, so setting them before any run is enough."""
    os.environ.update(OFFLINE)
    version = require_version("crewai", "crewai", "CrewAI")
    event_bus_threads_here()
    return version


def event_bus_threads_here() -> None:
    """CrewAI's event bus starts its handler threads (a pool, an event loop's thread) at its
    first event and counts them as started from then on. A forked process (a check's supervised
    child, a -j worker) has none of its parent's threads: after a crew ran in the parent (an
    emitted test, a run through the API, the user's own kickoff), the child's first delegation
    waited forever on events no thread ran, and the check stopped at --call-timeout. Here the bus
    is told to start them again when its loop's thread is not in this process."""
    bus: Any = getattr(sys.modules.get("crewai.events.event_bus"), "crewai_event_bus", None)
    thread = getattr(bus, "_loop_thread", None)
    if bus is not None and getattr(bus, "_executor_initialized", False) and thread is not None \
            and not thread.is_alive():
        bus._executor_initialized = False       # its next event starts new threads, in this process
        bus._pending_futures = set()            # the parent's, which no thread here runs
        bus._futures_lock = threading.Lock()


class RunDropped(BaseException):
    """Raised inside CrewAI at the pending model call of a run haltproof let go of: a
    BaseException, so that CrewAI's handlers (`except Exception`) let the run's thread end."""


@dataclass(frozen=True)
class Request:
    """One model call of a run: whose it is, and whether it is CrewAI's forced final answer (max_iter reached)."""

    agent: str
    forced: bool
    messages: Any


@dataclass
class Channel:
    """What a run's thread and the adapter share: the model calls (frameworks/paused.py) and what the run did."""

    model: ModelCalls = field(default_factory=ModelCalls)
    agent: str = ""
    forced: bool = False
    tool_runs: int = 0
    delegations: int = 0
    given_up: int = 0
    status: str = "running"
    output: str = ""
    tools: dict[str, Any] = field(default_factory=dict)     # a declaration's tool outcomes for this call
    dropped: bool = False

    @property
    def turns(self) -> int:
        return self.model.calls


def forced_prompt() -> str:
    """The text CrewAI appends when an agent reaches max_iter (its i18n `force_final_answer`)."""
    from crewai.utilities.i18n import I18N_DEFAULT
    return str(I18N_DEFAULT.errors("force_final_answer"))


def last_text(messages: Any) -> str:
    if isinstance(messages, str):
        return messages
    last = messages[-1] if messages else {}
    return str(last.get("content", "")) if isinstance(last, dict) else str(last)


@functools.cache
def scripted_llm_class() -> type:
    """CrewAI's custom-LLM interface (`BaseLLM`), answering each call with what the run's transition chose."""
    from crewai.llms.base_llm import BaseLLM

    class ScriptedLLM(BaseLLM):     # type: ignore[misc]
        """Every call waits for the transition's answer (text in CrewAI's ReAct format)."""

        def call(self, messages: Any, tools: Any = None, callbacks: Any = None, available_functions: Any = None,
                 from_task: Any = None, from_agent: Any = None, response_model: Any = None) -> str:
            channel, loop, role = self.__dict__["haltproof_run"]
            if channel.dropped:
                raise RunDropped()
            request = Request(role, last_text(messages).strip() == forced_prompt().strip(), messages)
            future = asyncio.run_coroutine_threadsafe(asked(channel, request), loop)
            try:
                return str(future.result())
            except (concurrent.futures.CancelledError, asyncio.CancelledError):
                raise RunDropped() from None

        def supports_function_calling(self) -> bool:
            return False            # answers are text in CrewAI's ReAct format

        def get_input_tokens_count(self, messages: Any, tools: Any = None, response_model: Any = None) -> int:
            """BaseLLM's own estimate (a token per four characters), without its warning on every call."""
            return (len(str(messages)) + 3) // 4
    return ScriptedLLM


async def asked(channel: Channel, request: Request) -> Any:
    """On the run's loop: the call is now the pending one (whose, forced or not), paused until answered."""
    channel.agent, channel.forced = request.agent, request.forced
    return await channel.model.model(request)


def scripted_llm(channel: Channel, loop: asyncio.AbstractEventLoop, role: str) -> Any:
    """The model of agent `role` in one run: one per agent, as CrewAI's forced final answer
    (max_iter reached) calls the executor's own LLM without naming the agent."""
    llm = scripted_llm_class()(model="haltproof-scripted")
    llm.__dict__["haltproof_run"] = (channel, loop, role)
    return llm


@dataclass
class CrewRun:
    """One live run: `Crew.kickoff` in its thread, paused at its model call, and its channel."""

    paused: PausedRun
    channel: Channel


def settle(done: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if done.done():
        return
    if error is not None:
        done.set_exception(error)
    else:
        done.set_result(result)


async def kickoff_in_thread(crew: Any, inputs: dict[str, Any]) -> Any:
    """`crew.kickoff(inputs=...)` in a thread of its own (CrewAI's run is synchronous), awaited
    here; the thread carries this task's context (RUNNING)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[Any] = loop.create_future()

    def body() -> None:
        try:
            result = crew.kickoff(inputs=inputs)
        except BaseException as exc:            # the run's end, whatever it is, goes back to the loop
            outcome: tuple[Any, BaseException | None] = (None, exc)
        else:
            outcome = (result, None)
        try:
            loop.call_soon_threadsafe(settle, done, *outcome)
        except RuntimeError:        # the loop is closed: nobody waits for this run any more
            pass
    threading.Thread(target=contextvars.copy_context().run, args=(body,), daemon=True,
                     name="haltproof-crewai-run").start()
    return await done


Answer = Final | ToolCall        # a final answer for the task, or a tool call (a delegation calls CrewAI's own tool)


def render(answer: Answer) -> str:
    """An answer as the model's text in CrewAI's ReAct format (what its parser reads)."""
    if isinstance(answer, Final):
        return f"Thought: I now know the final answer\nFinal Answer: {answer.text}"
    return f"Thought: I will use {answer.name}\nAction: {answer.name}\nAction Input: {json.dumps(answer.arguments)}"


def the_run_copy(d: CrewDeclaration, params: dict[str, Any], llm: Callable[[str], Any]) -> Any:
    """A fresh copy of the user's crew (`Crew.copy`, CrewAI's own) whose every agent, and the
    manager, asks its own `llm(role)`, with the swept limits set and max_rpm off."""
    crew = d.target.copy()
    for agent in crew.agents:
        agent.llm, agent.function_calling_llm, agent.max_rpm = llm(agent.role), None, None
        agent.max_iter = params[LIMIT]
    crew.max_rpm = None
    if RETRIES in params:
        for task in crew.tasks:
            task.guardrail_max_retries = params[RETRIES]
    if d.hierarchical:
        if crew.manager_agent is not None:
            crew.manager_agent.llm = llm(crew.manager_agent.role)
        else:
            crew.manager_llm = llm(MANAGER)
        made = crew._create_manager_agent

        def manager_with_the_limit() -> None:
            made()
            crew.manager_agent.max_iter = params[LIMIT]
        object.__setattr__(crew, "_create_manager_agent", manager_with_the_limit)
    return crew


class CrewAdapter(LiveAdapter):
    """The live adapter of a declaration: the user's crew copied per run, its model scripted."""

    def __init__(self, d: CrewDeclaration):
        self.d = d

    async def start(self, params: dict[str, Any], init: dict[str, Any]) -> CrewRun:
        require_crewai()
        channel = Channel()
        crew = self.the_crew(params, channel)
        token = RUNNING.set(channel)
        try:
            run = CrewRun(PausedRun.launch(lambda model: kickoff_in_thread(crew, plain(self.d.inputs)), channel.model),
                          channel)
        finally:
            RUNNING.reset(token)
        await run.paused.settle()
        self.seen_the_end(run)
        return run

    def the_crew(self, params: dict[str, Any], channel: Channel) -> Any:
        loop = asyncio.get_running_loop()
        return the_run_copy(self.d, params, lambda role: scripted_llm(channel, loop, role))

    async def step(self, live: CrewRun, action: str, choices: dict[str, Any]) -> str | None:
        channel = live.channel
        if live.paused.done or live.paused.task is None or live.paused.task.done():
            raise ValueError(f"action {action} answers a model call, but the crew's kickoff has already "
                             f"{live.paused.ended()}")
        answer = self.d.models[channel.agent][choices[model_choice(channel.agent)]]
        if channel.forced:
            channel.given_up += 1
        channel.tools = {name: self.d.tools[name][choices[tool_choice(name)]]
                         for name in self.d.tools if tool_choice(name) in choices}
        await live.paused.answer(render(answer))
        self.seen_the_end(live)
        return None

    def seen_the_end(self, run: CrewRun) -> None:
        if run.paused.done:
            run.channel.status = "done"
            run.channel.output = str(getattr(run.paused.result, "raw", run.paused.result))

    def abstract(self, live: CrewRun) -> dict[str, Any]:
        c = live.channel
        return {"agent": c.agent, "forced": c.forced, "status": c.status, "turns": c.turns,
                "tool_runs": c.tool_runs, "delegations": c.delegations, "given_up": c.given_up}

    async def close(self, live: CrewRun) -> None:
        """The run's pending model call cancelled (CrewAI sees RunDropped), its thread let finish."""
        live.channel.dropped = True
        reply = live.channel.model.reply
        if reply is not None and not reply.done():
            reply.cancel()
        task = live.paused.task
        if task is not None and not task.done():
            await asyncio.wait([task], timeout=5)
        if task is not None and task.done() and not task.cancelled():
            task.exception()        # retrieved: a dropped run's end is not an unhandled error


# ---------------------------------------------------------------- counting what CrewAI runs

COUNTED: set[int] = set()       # the tools (by id) whose runs are counted already


def counted_tool(tool: Any) -> None:
    """Count a tool's runs into the run's channel and let a declaration script its outcome:
    its `_run` wrapped in place, once (other runs, and the app outside haltproof, run its code)."""
    if id(tool) in COUNTED:
        return
    COUNTED.add(id(tool))
    own = tool._run
    name = tool.name

    @functools.wraps(own)
    def counted(*args: Any, **kwargs: Any) -> Any:
        channel = RUNNING.get()
        if channel is None:
            return own(*args, **kwargs)
        channel.tool_runs += 1
        if name in channel.tools:
            return give(channel.tools[name])
        return own(*args, **kwargs)
    object.__setattr__(tool, "_run", counted)


@functools.cache
def count_delegations() -> None:
    """CrewAI's delegation tools (made per run) count each delegation and question into the run's channel."""
    from crewai.tools.agent_tools.ask_question_tool import AskQuestionTool
    from crewai.tools.agent_tools.delegate_work_tool import DelegateWorkTool
    for cls in (DelegateWorkTool, AskQuestionTool):
        own = cls._run

        def counted(self: Any, *args: Any, own: Any = own, **kwargs: Any) -> Any:
            channel = RUNNING.get()
            if channel is not None:
                channel.delegations += 1
            return own(self, *args, **kwargs)
        cls._run = counted


# ---------------------------------------------------------------- declaration files (docs/how-to/crewai.md)

@dataclass
class CrewDeclaration:
    """A CrewAI declaration, read: the crew, what each agent's model answers, the tools' outcomes."""

    target: Any                                     # the user's Crew
    agents: dict[str, Any]                          # role -> Agent (the manager: None when CrewAI makes it)
    hierarchical: bool
    models: dict[str, dict[str, Answer]]            # role -> label -> answer
    tools: dict[str, dict[str, Any]]                # tool name -> label -> returned value or Raises
    inputs: Any
    declared: dict[str, Choice] = field(default_factory=dict)
    delegating: bool = False                        # an agent can delegate (the manager always does)
    guarded: bool = False                           # a task has a guardrail

    def choices(self, role: str) -> list[Choice]:
        """An agent's call: its model's answer, and the outcome of each declared tool it has."""
        own = tool_names(self.agents[role])
        return [self.declared[model_choice(role)]] + [self.declared[tool_choice(t)] for t in self.tools if t in own]


def slug(name: str) -> str:
    """A role as an identifier: `Senior Researcher` -> `senior_researcher`."""
    return "_".join("".join(c if c.isalnum() else " " for c in name.lower()).split())


def model_choice(role: str) -> str:
    return f"{slug(role)}_says"


def tool_choice(tool: str) -> str:
    return f"{slug(tool)}_returns"


def tool_names(agent: Any) -> dict[str, Any]:
    """An agent's own tools by name (CrewAI's delegation tools are its crew's, not listed here)."""
    return {t.name: t for t in (getattr(agent, "tools", None) or [])}


def coworkers(d_agents: dict[str, Any], role: str, hierarchical: bool) -> list[str]:
    """Whom an agent may delegate to: the manager any agent of the crew; an agent with
    allow_delegation the crew's other agents; nobody otherwise."""
    if hierarchical and role == MANAGER:
        return [r for r in d_agents if r != MANAGER]
    agent = d_agents[role]
    if agent is None or not agent.allow_delegation:
        return []
    return [r for r in d_agents if r not in (role, MANAGER)]


def _answer(raw: Any, file: str, line: int, what: str, role: str, d_agents: dict[str, Any], hierarchical: bool) -> Answer:
    """An answer: the final text, `{tool: NAME, args: {...}}` (one of the agent's tools),
    `{delegate: COWORKER, task: TEXT}` or `{ask: COWORKER, question: TEXT}` (CrewAI's delegation tools)."""
    if isinstance(raw, str):
        return Final(str(raw))
    if isinstance(raw, dict) and "tool" in raw and set(raw) <= {"tool", "args"}:
        own = tool_names(d_agents[role]) if d_agents[role] is not None else {}
        if raw["tool"] not in own:
            raise fail(file, line, f"{what} calls the tool {raw['tool']!r}, which {role} does not have "
                                   f"(its tools: {', '.join(own) or 'none'})")
        args = raw.get("args", {})
        if not isinstance(args, dict):
            raise fail(file, line, f"{what}: args must be a mapping of the tool's arguments")
        return ToolCall(str(raw["tool"]), plain(args))
    for key, text, tool in (("delegate", "task", DELEGATE), ("ask", "question", ASK)):
        if isinstance(raw, dict) and key in raw and set(raw) <= {key, text, "context"}:
            allowed = coworkers(d_agents, role, hierarchical)
            if raw[key] not in allowed:
                raise fail(file, line, f"{what} delegates to {raw[key]!r}, but {role} can delegate to "
                                       f"{', '.join(allowed) or 'nobody (allow_delegation is off)'}")
            return ToolCall(tool, {text: str(raw.get(text, "")), "context": str(raw.get("context", "")),
                                 "coworker": str(raw[key])})
    raise fail(file, line, f"{what} must be the agent's final answer (text), {{tool: NAME, args: {{...}}}}, "
                           "{delegate: COWORKER, task: TEXT} or {ask: COWORKER, question: TEXT}")


def _models(top: YMap, file: str, d_agents: dict[str, Any], hierarchical: bool,
            lines: dict[str, Choice]) -> dict[str, dict[str, Answer]]:
    """`models:` role -> label -> answer, every agent of the crew answered for."""
    declared = mapping(top, "models", file, "agent roles to their model's answers")
    out: dict[str, dict[str, Answer]] = {}
    for role in declared:
        if role not in d_agents:
            raise fail(file, declared.line_of(role), f"models: no agent with the role {role!r} in the crew "
                                                     f"(its agents: {', '.join(d_agents)})")
        labels = outcome_labels(declared, role, file, "models")
        choice = lines[model_choice(str(role))] = Choice(model_choice(str(role)), declared.line_of(role), {})
        out[str(role)] = {}
        for label, raw in labels.items():
            at = labels.line_of(label)
            raw, guard = guard_of(raw, file, f"answer {label} of {role}")
            choice.labels[str(label)] = at
            if guard is not None:
                choice.when[str(label)] = guard
            out[str(role)][str(label)] = _answer(raw, file, at, f"answer {label} of {role}", str(role), d_agents,
                                                 hierarchical)
    missing = [r for r in d_agents if r not in out]
    if missing:
        raise fail(file, top.line_of("models") if "models" in top else top.line,
                   f"models: the agent {missing[0]!r} works in the crew, but its model has no answers declared")
    return out


def _tools(top: YMap, file: str, d_agents: dict[str, Any], lines: dict[str, Choice]) -> dict[str, dict[str, Any]]:
    """`tools:` tool name -> {label: what it returns, or {raises: CLASS, message: TEXT}}."""
    declared = mapping(top, "tools", file, "tool names to their outcomes")
    known = {n: t for a in d_agents.values() if a is not None for n, t in tool_names(a).items()}
    out: dict[str, dict[str, Any]] = {}
    for name in declared:
        if name not in known:
            raise fail(file, declared.line_of(name), f"tools: no agent of the crew has a tool named {name!r} "
                                                     f"(its tools: {', '.join(known) or 'none'})")
        labels = outcome_labels(declared, name, file, "tools")
        out[str(name)] = {str(label): scripted_outcome(raw, file, labels.line_of(label), f"tools: outcome {label} of {name}")
                          for label, raw in labels.items()}
        lines[tool_choice(str(name))] = Choice(tool_choice(str(name)), declared.line_of(name),
                                               {str(label): labels.line_of(label) for label in labels})
    return out


def crew_agents(crew: Any, file: str, line: int) -> tuple[dict[str, Any], bool]:
    """The crew's agents by role (and the manager, for a hierarchical crew), and whether it is hierarchical."""
    from crewai import Process
    hierarchical = crew.process == Process.hierarchical
    found: dict[str, Any] = {}
    for agent in crew.agents:
        if agent.role in found:
            raise fail(file, line, f"two agents have the role {agent.role!r}: delegation names an agent by its role")
        found[agent.role] = agent
    if hierarchical:
        manager = crew.manager_agent
        found[manager.role if manager is not None else MANAGER] = manager
    slugs = [slug(r) for r in found]
    if len(set(slugs)) != len(slugs) or not all(s.isidentifier() for s in slugs) or any("'" in r for r in found):
        raise fail(file, line, f"the agents' roles {', '.join(found)} do not give distinct identifiers "
                               "(letters, digits, spaces; no quote)")
    return found, hierarchical


def declaration(top: YMap, file: str) -> Declared:
    """Expand a `framework: crewai` declaration into its spec and adapter (docs/how-to/crewai.md)."""
    begin(top, file, require_crewai, DECLARATION_KEYS, {"target", "models"})
    from crewai import Crew
    target = import_target(top, file)
    ref, tline = str(top["target"]), top.line_of("target")
    if not isinstance(target, Crew):
        raise fail(file, tline, f"{ref} is a {type(target).__name__}, not a crewai.Crew")
    params = top.get("params", YMap())
    if not isinstance(params, YMap) or LIMIT not in params:
        raise fail(file, top.line_of("params") if "params" in top else top.line,
                   f"params: a crewai declaration needs {LIMIT} (every agent's limit, e.g. {LIMIT}: {{min: 1, max: 3}})")
    inputs = top.get("inputs", {})
    if not isinstance(inputs, dict):
        raise fail(file, top.line_of("inputs"), "inputs must be a mapping (what kickoff(inputs=...) gets)")
    d_agents, hierarchical = crew_agents(target, file, tline)
    lines: dict[str, Choice] = {}
    models = _models(top, file, d_agents, hierarchical, lines)
    tools = _tools(top, file, d_agents, lines)
    d = CrewDeclaration(target, d_agents, hierarchical, models, tools, inputs, lines,
                        delegating=hierarchical or any(a is not None and a.allow_delegation for a in d_agents.values()),
                        guarded=any(t.guardrail is not None or t.guardrails for t in target.tasks))
    for agent in d_agents.values():
        for tool in tool_names(agent).values() if agent is not None else ():
            counted_tool(tool)
    count_delegations()
    spec = node(_spec(top, file, ref, d), top.line_of("framework"))
    return Declared(keep_user_lines(spec, top), lambda: CrewAdapter(d))


def _spec(top: YMap, file: str, ref: str, d: CrewDeclaration) -> dict[str, Any]:
    """The spec a declaration stands for: one action per agent (a real model call of that agent,
    its answer chosen; a guardrail's exhausted retries an outcome), the out-of-the-box properties, the user's own."""
    attempts = f"({RETRIES} + 1)" if RETRIES in top["params"] else "4"     # CrewAI's default: 3 retries
    per_task = f"({LIMIT} + 1) * ({LIMIT} + 1)" if d.delegating else f"({LIMIT} + 1)"
    most = f"{len(d.target.tasks)} * {attempts} * {per_task}"
    counter = {"type": "int", "min": 0, "max": most, "init": 0}
    statuses = ["running", "done"] + (["guardrail_failed"] if d.guarded else [])
    raises = [GUARDRAIL_ERROR] if d.guarded else []
    actions = lined({slug(r): {"when": f"status == running and agent == '{r}'", "choose": choose_node(d.choices(r)),
                               **({"raises": raises} if raises else {})} for r in d.agents},
                    {slug(r): d.declared[model_choice(r)].line for r in d.agents})
    first = list(d.agents)[-1] if d.hierarchical else d.target.tasks[0].agent.role     # whose call comes first
    spec: dict[str, Any] = {
        "machine": top.get("machine", os.path.splitext(os.path.basename(file))[0]),
        "description": top.get("description", f"{ref} as CrewAI's kickoff runs it: one model call per transition"),
        "bind": ref,
        "params": top["params"],
        "vars": {"agent": {"type": "enum", "values": list(d.agents), "init": first},
                 "forced": {"type": "bool", "init": False},
                 "status": {"type": "enum", "values": statuses, "init": "running"},
                 "turns": dict(counter), "tool_runs": dict(counter), "delegations": dict(counter),
                 "given_up": dict(counter)},
        "actions": actions,
        "terminal": "status != running",
        "properties": with_user_properties(top, file, _builtin_properties(d), "CrewAI"),
    }
    if "expect" in top:
        spec["expect"] = top["expect"]
    return spec


def _builtin_properties(d: CrewDeclaration) -> dict[str, Any]:
    """The out-of-the-box properties (docs/how-to/crewai.md)."""
    props: dict[str, Any] = {
        "run_ends": {"terminates": True, "description": "every kickoff ends: the crew's output, or an exception"},
        "max_iter_reached": {"possible": "given_up > 0", "smallest_safe": LIMIT,
                             "description": "whether a task's answer can be CrewAI's forced final answer (an agent "
                                            "reached max_iter), with a shortest run"},
        "most_model_calls": {"maximum": "turns", "limit": LIMIT, "description": "the most model calls in a kickoff"},
    }
    if any(tool_names(a) for a in d.agents.values() if a is not None):
        props["most_tool_runs"] = {"maximum": "tool_runs", "limit": LIMIT,
                                   "description": "the most tool runs in a kickoff (delegations not counted)"}
    if d.delegating:
        props["most_delegations"] = {"maximum": "delegations", "limit": LIMIT,
                                     "description": "the most delegations (and questions) to coworkers in a kickoff"}
    if d.guarded:
        props["guardrail_exhausted"] = {"possible": "status == guardrail_failed",
                                        "description": "whether a task's guardrail can fail every retry (kickoff "
                                                       "raises), with a shortest run"}
    return props
