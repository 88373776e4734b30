"""Pydantic AI: an `Agent` explored as it really runs, one node of its agent graph per transition.

The agent is the user's own (`agent()`), run by Pydantic AI's own graph through `Agent.iter()`
and `AgentRun.next(node)`: each transition runs exactly one node, a `ModelRequestNode` (one
model request) or a `CallToolsNode` (the tool calls that response asked for, or the final
result). Its `UsageLimits` (request_limit, tool_calls_limit, ...) and its retry budgets
(`retries`, `output_retries`) are enforced by Pydantic AI itself, which raises
`UsageLimitExceeded` and `UnexpectedModelBehavior` (declare them under the action's `raises:`;
haltproof never re-implements a limit).

The environment is scripted with the test doubles Pydantic AI ships: the model is a
`FunctionModel` answering each request with the `ModelResponse` the transition's `model`
choice names (`responses`: label -> response: text, one tool call, parallel calls, an output
tool call); a tool named in `tool_outcomes` gets, through a capability wrapping the agent's
toolset, the outcome its choice (named after the tool) names, where the real tool would run
(so Pydantic AI counts, retries and reports it as the real tool's): `OK` runs the real tool,
`Returns(value)` returns a value without running it, a `ModelRetry` is raised as the tool's
request to retry, any other exception is raised as the tool's failure. Tools not named there
just run.

The abstract state read back (the vars a spec, or a generated one, declares):
`next` (the node kind to run next: `model_request`, `call_tools`, `end`), `requests` and
`tool_calls` (Pydantic AI's own `RunUsage` counts), `status` (`running`, `done` once the run
ended with an output; the spec sets others, e.g. `limit`, `retries_exhausted`, on the
declared exceptions), plus the optional readings named in `reads` (`READINGS`) and what
`observe(run)` adds. Runs are replayed (a running agent graph cannot be copied).

Delegation (`delegates`, docs/how-to/trees-frameworks.md): a tool awaiting another agent's run
gets that agent's model overridden (`Agent.override`, in the task running the graph) by one
whose every request pauses the node (`Delegated`); the next transition answers it, so each
delegate request is a transition of its own, read as `next == delegate_request`.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import os
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from haltproof.machine import usercode
from haltproof.machine.declarations import Declared
from haltproof.machine.live import Driver, LiveAdapter
from haltproof.machine.outcomes import Outcome, resolve
from haltproof.machine.yamlpos import YMap
from haltproof.machine.text import exception_text

from .declaration import (COMMON_KEYS, Choice, RunObject, begin, check_run_object, choose_node, fail, guard_of,
                          import_target, keep_user_lines, lined, mapping, node, plain, require_version, run_object,
                          skipped_writes, with_user_properties)

OK = "ok"                           # a tool outcome: run the real tool
END = "end"
NODE_KINDS = {"UserPromptNode": "user_prompt", "ModelRequestNode": "model_request",
              "CallToolsNode": "call_tools", "SetFinalResult": "set_final_result", "End": END}
LIMIT_FIELDS = ("request_limit", "tool_calls_limit", "input_tokens_limit", "output_tokens_limit",
                "total_tokens_limit")


@dataclass(frozen=True)
class Returns:
    """A tool outcome: the tool returns `value` without running (a scripted success)."""

    value: Any


def require_pydantic_ai() -> str:
    """The installed Pydantic AI version, or a clear error naming it when it is missing or unsupported."""
    return require_version("pydantic_ai", "pydantic-ai-slim", "Pydantic AI")


Request = tuple[Any, "asyncio.Future[Any]"] | None      # (the node to run, its result's future); None: stop


@dataclass
class Script:
    """What the scripted model and tools of one run read and count (never the run itself)."""

    choices: dict[str, Any] = field(default_factory=dict)       # of the transition running
    tool_runs: int = 0          # tool calls that reached execution (the tool ran, or its scripted failure)
    model_calls: int = 0        # the run's own model requests answered (never a delegate's)


PAUSED = object()       # a node's run is paused at a delegate's model request (Delegated)


@dataclass
class Delegated:
    """The model requests of the agents a run delegates to (a tool of the run awaiting
    `delegate.run(...)`, each delegate's model overridden by `model(name)`): the pending one's
    delegate and its reply, and how many each delegate made. The run's task holds this (through
    the delegates' models), never the `AgentLive`, so a dropped run is still collected."""

    asked: asyncio.Future[None] | None = None       # set when a delegate asks its model
    pending: str = ""                               # the delegate whose request waits ("": none)
    reply: asyncio.Future[Any] | None = None
    calls: dict[str, int] = field(default_factory=dict)

    def model(self, name: str) -> Any:
        """The FunctionModel delegate `name` runs with: each request waits for the transition's answer."""
        from pydantic_ai.models.function import FunctionModel

        async def ask(messages: list[Any], info: Any) -> Any:
            assert self.asked is not None, "a settled run"
            if self.reply is not None:
                raise RuntimeError(f"{name} asks its model while {self.pending}'s request waits: two delegations "
                                   "run at once (parallel tool calls), which haltproof does not explore")
            self.pending, self.reply = name, asyncio.get_running_loop().create_future()
            self.asked.set_result(None)
            return await self.reply
        return FunctionModel(ask)

    def answer(self, response: Any) -> None:
        """Give the pending request its response (counted for its delegate)."""
        assert self.reply is not None, "a pending delegate request"
        reply, self.reply = self.reply, None
        self.calls[self.pending] = self.calls.get(self.pending, 0) + 1
        self.pending = ""
        reply.set_result(response)


@dataclass
class AgentLive:
    """One live agent run: Pydantic AI's `AgentRun`, the node it runs next, what the run shows.

    Pydantic AI runs its graph in an anyio task group, which must be entered, stepped and left
    by one task: each run is driven by a task of its own (`_drive`) on the run's event loop,
    running one node per request put in `inbox`; a run that is dropped is told to stop
    (`None`), so its task leaves `Agent.iter()` itself."""

    script: Script = field(default_factory=Script)
    run: Any = None                                             # pydantic_ai.run.AgentRun
    node: Any = None                                            # the node the next transition runs
    status: str = "running"
    response: str = "none"              # the label of the model's latest response
    inbox: asyncio.Queue[Request] = field(default_factory=asyncio.Queue)
    task: asyncio.Task[None] | None = None
    ended: str = ""                     # the exception that ended the run, as the refusal names it
    delegated: Delegated = field(default_factory=Delegated)
    running: asyncio.Future[Any] | None = None      # the result of the node paused at a delegate's request

    async def next(self) -> Any:
        """Run `node` in the run's own task; its result, the exception it raised, or PAUSED when a
        delegate's model request waits (`answer` gives it). A run that has ended is refused by
        name: its task is gone, and a request to it would wait forever."""
        if self.ended:
            raise RuntimeError(f"the agent run already ended ({self.ended}); a spec must not step it "
                               "again: make the status its raises set terminal")
        self.running = asyncio.get_running_loop().create_future()
        self.inbox.put_nowait((self.node, self.running))
        return await self.settle()

    async def answer(self, response: Any) -> Any:
        """Answer the delegate's pending model request and go on as `next` does."""
        self.delegated.answer(response)
        return await self.settle()

    async def settle(self) -> Any:
        """Wait until the node ends (its result, or what it raised) or a delegate asks its model (PAUSED)."""
        assert self.running is not None, "a node running"
        self.delegated.asked = asyncio.get_running_loop().create_future()
        await asyncio.wait([self.running, self.delegated.asked], return_when=asyncio.FIRST_COMPLETED)
        if not self.running.done():
            return PAUSED
        done, self.running = self.running, None
        try:
            return done.result()
        except Exception as exc:
            self.ended = f"{exception_text(exc)}"
            raise


async def _drive(runs: Any, inbox: asyncio.Queue[Request], started: asyncio.Future[Any],
                 overrides: tuple[Any, ...] = ()) -> None:
    """Enter `Agent.iter()`, hand its run out, then run one node per request until told to stop.
    Holds no reference to its `AgentLive`, so a dropped run is collected and stops its task.
    `overrides`: context managers entered in this task first (`delegate.override(model=...)`: the
    delegates' models, which Pydantic AI reads from a context variable of the running task)."""
    try:
        with contextlib.ExitStack() as stack:
            for override in overrides:
                stack.enter_context(override)
            await _run_nodes(runs, inbox, started)
    except Exception as exc:
        if not started.done():
            started.set_exception(exc)          # entering the run failed: the caller sees why


async def _run_nodes(runs: Any, inbox: asyncio.Queue[Request], started: asyncio.Future[Any]) -> None:
    """`_drive`'s run: its nodes, one per request."""
    try:
        async with runs as run:
            started.set_result(run)
            while (request := await inbox.get()) is not None:
                node, done = request
                try:
                    done.set_result(await run.next(node))
                except Exception as exc:        # Pydantic AI's own (a limit) or the user's: the caller's outcome
                    done.set_exception(exc)
                    return
    except Exception as exc:
        if not started.done():
            started.set_exception(exc)          # entering the run failed: the caller sees why
        # otherwise leaving a run that ended in an exception raised it again: the caller has it


def _stop(inbox: asyncio.Queue[Request], loop: asyncio.AbstractEventLoop, delegated: Delegated | None = None) -> None:
    """Tell a dropped run's task to leave its run (a delegate's request it waits in is cancelled);
    once its loop is closed there is no task to tell."""
    if not loop.is_closed():
        inbox.put_nowait(None)
        if delegated is not None and delegated.reply is not None:
            delegated.reply.cancel()


def node_kind(node: Any) -> str:
    """The spec's name of a graph node: its kind, never its (run-specific) content."""
    name = type(node).__name__
    return NODE_KINDS.get(name, name)


def tool_retries(live: AgentLive) -> int:
    """The highest retry attempt Pydantic AI stamped on the tool returns of the latest request
    (pending or sent): the tool's own retry count that `retries` is checked against; 0 after a
    success. After the run stopped on a tool's retries, the count as it stood before."""
    from pydantic_ai.messages import ModelRequest, ToolReturnPart
    request = live.node.request if node_kind(live.node) == "model_request" else None
    if request is None:
        request = next((m for m in reversed(live.run.all_messages())     # a run ended by an error
                        if isinstance(m, ModelRequest) and m.parts), None)      # leaves an empty one last
    parts = request.parts if request is not None else []
    return max((p.retry.attempt for p in parts if isinstance(p, ToolReturnPart) and p.retry is not None
                and p.retry.attempt is not None), default=0)


READINGS: dict[str, Callable[[AgentLive], int]] = {
    "tool_runs": lambda live: live.script.tool_runs,
    "tool_retries": tool_retries,
    "output_retries": lambda live: int(live.run.ctx.state.output_retries_used),
}
"""Optional abstract vars an adapter lists in `reads`: tool executions so far (successful or
not: `tool_calls` counts only the successful ones), the tool retry count, the output retries used."""


class AgentAdapter(LiveAdapter):
    """A live adapter for a Pydantic AI `Agent`. Subclass it and give:

    `agent()`: your agent; `prompt(params)`: the user prompt; `responses`: the model's
    `ModelResponse` per label of the `model` choice; `tool_outcomes`: per tool (its choice is
    named after it), the outcome per label (`OK`, `Returns(value)`, a `ModelRetry`, an exception).
    `usage_limits(params)` builds `UsageLimits` from the params named like its fields;
    `retries(params)` the run's retry budgets from `retries`, `tool_retries`, `output_retries`;
    `deps(params)` the run's deps; `reads` lists `READINGS` to add; `observe(live)` adds more."""

    responses: dict[str, Any] = {}
    tool_outcomes: dict[str, dict[str, Any]] = {}
    reads: tuple[str, ...] = ()
    delegates: dict[str, Any] = {}                       # name -> an Agent a tool of the run delegates to
    delegate_responses: dict[str, dict[str, Any]] = {}   # name -> label -> its model's ModelResponse

    def agent(self) -> Any:
        raise NotImplementedError

    def prompt(self, params: dict[str, Any]) -> str:
        raise NotImplementedError

    def deps(self, params: dict[str, Any]) -> Any:
        """The run's deps (`agent.iter(deps=...)`, what tools read as `ctx.deps`), fresh per run; None: none."""
        return None

    def run_deps(self, params: dict[str, Any], script: Script) -> Any:
        """The deps one run is given: `deps(params)` (a declaration's also answer for `script`)."""
        return self.deps(params)

    def usage_limits(self, params: dict[str, Any]) -> Any:
        """Pydantic AI's own `UsageLimits`; a limit not given as a param keeps Pydantic AI's default."""
        from pydantic_ai.usage import UsageLimits
        return UsageLimits(**{name: params[name] for name in LIMIT_FIELDS if name in params})

    def retries(self, params: dict[str, Any]) -> Any:
        """The run's retry budgets (`Agent.iter(retries=...)`), or None to keep the agent's own."""
        if "retries" in params:
            return params["retries"]
        budgets = {key: params[name] for key, name in (("tools", "tool_retries"), ("output", "output_retries"))
                   if name in params}
        return budgets or None

    async def start(self, params: dict[str, Any], init: dict[str, Any]) -> AgentLive:
        require_pydantic_ai()
        from pydantic_ai.models.function import FunctionModel
        live = AgentLive()
        runs = self.agent().iter(self.prompt(params), model=FunctionModel(_scripted_model(self, live.script)),
                                 usage_limits=self.usage_limits(params), retries=self.retries(params),
                                 deps=self.run_deps(params, live.script),
                                 capabilities=[_scripted_tools(self, live.script)])
        started: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        overrides = tuple(agent.override(model=live.delegated.model(name)) for name, agent in self.delegates.items())
        live.task = asyncio.create_task(_drive(runs, live.inbox, started, overrides))
        weakref.finalize(live, _stop, live.inbox, asyncio.get_running_loop(), live.delegated)     # dropped: its task leaves the run
        live.run = await started
        live.node = live.run.next_node
        live.node = await live.next()       # the user prompt node: no model request, no choice
        return live

    async def step(self, live: AgentLive, action: str, choices: dict[str, Any]) -> str | None:
        self.check_choices(action, choices)
        live.script.choices = dict(choices)
        if live.delegated.pending:
            result = await live.answer(copy.deepcopy(self.delegate_response(action, live.delegated.pending, choices)))
        else:
            if node_kind(live.node) == "model_request" and "model" not in choices:
                raise ValueError(f"action {action} runs a model request, so it must choose `model` "
                                 f"(it chooses {sorted(choices)})")
            ran = node_kind(live.node)
            result = await live.next()
            if ran == "model_request":          # after the request ran: one that raised leaves the last answer
                live.response = str(choices["model"])
        if result is not PAUSED:
            live.node = result
        if node_kind(live.node) == END:
            live.status = "done"
        return None

    def delegate_response(self, action: str, delegate: str, choices: dict[str, Any]) -> Any:
        """The response the transition gives delegate `delegate`'s pending request (its choice `DELEGATE_says`)."""
        name = delegate_choice(delegate)
        if name not in choices or choices[name] not in self.delegate_responses.get(delegate, {}):
            raise ValueError(f"action {action} answers {delegate}'s model request, so it must choose {name} "
                             f"among {sorted(self.delegate_responses.get(delegate, {}))} (it chooses "
                             f"{sorted(choices.items())})")
        return self.delegate_responses[delegate][choices[name]]

    def check_choices(self, action: str, choices: dict[str, Any]) -> None:
        """A spec and the scripts that disagree are named up front, not met inside Pydantic AI."""
        scripts = {"model": self.responses, **self.tool_outcomes}
        for name, label in choices.items():
            if name in scripts and label not in scripts[name]:
                script = "responses" if name == "model" else f"tool_outcomes[{name!r}]"
                raise ValueError(f"{type(self).__name__}.{script} has no entry for {name}={label} "
                                 f"(it has {sorted(scripts[name])})")

    def observe(self, live: AgentLive) -> dict[str, Any]:
        """More abstract vars, read from the run (`live.run`, an `AgentRun`); none by default."""
        return {}

    def abstract(self, live: AgentLive) -> dict[str, Any]:
        unknown = [name for name in self.reads if name not in READINGS]
        if unknown:
            raise ValueError(f"{type(self).__name__}.reads names {unknown}, which are no readings "
                             f"(there are {sorted(READINGS)})")
        usage = live.run.usage
        delegated = live.delegated
        tree: dict[str, Any] = {"next": "delegate_request", "delegate": delegated.pending} if delegated.pending \
            else {"delegate": "none"}
        tree.update({"delegate_requests": sum(delegated.calls.values()),
                     "model_calls": live.script.model_calls + sum(delegated.calls.values())})
        return {"next": node_kind(live.node), "response": live.response, "requests": usage.requests,
                "tool_calls": usage.tool_calls, "status": live.status, **{name: READINGS[name](live) for name in self.reads},
                **(tree if self.delegates else {}), **self.observe(live)}


def _scripted_model(adapter: AgentAdapter, script: Script) -> Callable[..., Any]:
    def scripted_model(messages: list[Any], info: Any) -> Any:
        """Pydantic AI's FunctionModel asks this for each request: the response the choice names."""
        script.model_calls += 1
        return copy.deepcopy(adapter.responses[script.choices["model"]])     # a fresh one: Pydantic AI stamps it
    return scripted_model


def _scripted_tools(adapter: AgentAdapter, script: Script) -> Any:
    """A capability wrapping the agent's toolset (Pydantic AI's `get_wrapper_toolset`): each call of a
    scripted tool gets the outcome its choice names **where the real tool would run**, inside
    Pydantic AI's own execution, so everything around it (the successful-call count, the retry
    check of a `ModelRetry`, the error hooks) is Pydantic AI's as for the real tool."""
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.toolsets import WrapperToolset

    @dataclass
    class ScriptedToolset(WrapperToolset[Any]):
        async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: Any, tool: Any) -> Any:
            if tool.tool_def.kind != "function":
                return await super().call_tool(name, tool_args, ctx, tool)
            script.tool_runs += 1
            outcomes = adapter.tool_outcomes.get(name)
            if outcomes is None:
                return await super().call_tool(name, tool_args, ctx, tool)
            if name not in script.choices:
                raise ValueError(f"the model called tool {name}, whose outcome the transition does "
                                 f"not choose (it chooses {sorted(script.choices)})")
            outcome = outcomes[script.choices[name]]
            if outcome == OK:
                return await super().call_tool(name, tool_args, ctx, tool)
            if isinstance(outcome, Returns):
                return copy.deepcopy(outcome.value)     # what the tool returns, without running it
            raise copy.copy(outcome)            # a ModelRetry (the tool asks for a retry) or its failure

    @dataclass
    class ScriptedTools(AbstractCapability[Any]):
        def get_wrapper_toolset(self, toolset: Any) -> Any:
            return ScriptedToolset(toolset)
    return ScriptedTools()


scripted_tools = _scripted_tools     # the runtime guard's hook counts tool runs with it (pydantic_ai_guard.py)


# ---------------------------------------------------------------- declaration files (docs/how-to/pydantic-ai.md)

DECLARATION_KEYS = COMMON_KEYS | {"prompt", "models", "tools", "limits", "retries", "deps", "delegates"}
DELEGATE_KEYS = {"target", "models"}
DELEGATE_BOUND = 50         # a delegate's own request_limit when its run sets none (Pydantic AI's default)
DECLARED_LIMITS = ("request_limit", "tool_calls_limit")     # token and cost counts of a FunctionModel are estimates
DEFAULT_REQUEST_LIMIT = 50          # Pydantic AI's own UsageLimits default
RETRY_BUDGETS = ("tools", "output")     # the keys of Pydantic AI's AgentRetries
ANSWER_KEYS = ("text", "tool_calls", "output")
MODEL = "model"                     # the request action's choice: the model's answer
NEXT = ["model_request", "call_tools", "set_final_result", END]
STATUSES = ["running", "done", "request_limit_exceeded", "tool_calls_limit_exceeded", "retries_exhausted",
            "tool_error"]
RETRIES_EXHAUSTED = r"exceeded max retries count|Exceeded maximum output retries"

Budget = int | str                  # a number, or the name of the param giving it


@dataclass
class AgentDeclaration:
    """A Pydantic AI declaration, read: what its adapter runs and scripts."""

    agent: Any                                  # the user's Agent, as their app builds it
    prompt: str
    responses: dict[str, Any]                   # label -> the ModelResponse the model answers with
    tools: dict[str, dict[str, Any]]            # tool -> label -> OK, Returns, a ModelRetry or an exception
    limits: dict[str, Budget]                   # UsageLimits field -> its value
    retries: Budget | dict[str, Budget] | None  # Agent.iter(retries=...), None: the agent's own
    errors: list[tuple[str, int]] = field(default_factory=list)    # the scripted tools' exception classes, lines
    deps: RunObject | None = None               # `deps:`, what the tools read as ctx.deps
    declared: list[Choice] = field(default_factory=list)     # the model's and tools' choices at their lines
    delegates: dict[str, Any] = field(default_factory=dict)  # name -> an Agent a tool delegates to
    delegate_responses: dict[str, dict[str, Any]] = field(default_factory=dict)     # name -> label -> response
    delegate_choices: dict[str, Choice] = field(default_factory=dict)   # name -> its model's choice, at its lines


def budget(value: Budget, params: dict[str, Any]) -> int:
    """A limit or retry budget for these params: a number, or the value of the param it names."""
    return int(params[value]) if isinstance(value, str) else value


class DeclaredAgent(AgentAdapter):
    """The live adapter of a declaration file: the user's own agent, the declared answers and outcomes scripted."""

    reads = tuple(READINGS)

    def __init__(self, d: AgentDeclaration):
        self.d = d
        self.responses = d.responses
        self.tool_outcomes = d.tools
        self.delegates = d.delegates
        self.delegate_responses = d.delegate_responses

    def agent(self) -> Any:
        return self.d.agent

    def prompt(self, params: dict[str, Any]) -> str:
        return self.d.prompt

    def usage_limits(self, params: dict[str, Any]) -> Any:
        from pydantic_ai.usage import UsageLimits
        limits: dict[str, Any] = {name: budget(value, params) for name, value in self.d.limits.items()}
        return UsageLimits(**limits)

    def retries(self, params: dict[str, Any]) -> Any:
        r = self.d.retries
        if isinstance(r, dict):
            return {key: budget(value, params) for key, value in r.items()}
        return None if r is None else budget(r, params)

    def run_deps(self, params: dict[str, Any], script: Script) -> Any:
        """`deps:`'s object for one run, of the agent's own `deps_type`, its scripted callables
        answering what `script`'s transition chose."""
        if self.d.deps is None:
            return None
        return self.d.deps.build(params, lambda: script.choices, self.d.agent.deps_type)


@dataclass
class AgentTools:
    """The tools the agent offers the model (as Pydantic AI's FunctionModel is told them)."""

    function: list[str]
    output: list[str]
    schemas: dict[str, dict[str, Any]] = field(default_factory=dict)     # tool -> its arguments' JSON schema


class _Probed(Exception):
    """Stops the probe run at its first model request: the tools are known by then."""


async def _probe(agent: Any, prompt: str, deps: Any) -> AgentTools:
    from pydantic_ai.models.function import FunctionModel
    seen: list[Any] = []

    def look(messages: list[Any], info: Any) -> Any:
        seen.append(info)
        raise _Probed
    try:
        async with agent.iter(prompt, model=FunctionModel(look), deps=deps) as run:
            async for _ in run:
                pass
    except _Probed:
        pass
    if not seen:
        raise RuntimeError("the agent made no model request")
    info = seen[0]
    return AgentTools([t.name for t in info.function_tools], [t.name for t in info.output_tools],
                      {t.name: dict(t.parameters_json_schema) for t in [*info.function_tools, *info.output_tools]})


def tools_of(agent: Any, prompt: str, ref: str, file: str, line: int, deps: Any = None) -> AgentTools:
    """The agent's tools, read from its first model request (Pydantic AI's own, with a model that
    stops it there, given `deps`); a problem at the target's line when the agent cannot get that far."""
    driver = Driver()
    try:
        tools: AgentTools = usercode.load_as(lambda: f"running {ref} up to its first model request",
                                             lambda: driver.call(_probe, agent, prompt, deps))
        return tools
    except usercode.FAILURES as exc:        # the user's agent may fail in any way before it asks the model
        raise fail(file, line, f"running {ref} up to its first model request failed: "
                               f"{exception_text(exc)}") from None
    finally:
        driver.close()


def _budget_of(value: Any, file: str, line: int, params: YMap, what: str) -> Budget:
    """A limit or retry budget as declared: a number (0 or more) or the name of a param."""
    if isinstance(value, str):
        if value not in params:
            raise fail(file, line, f"{what} names no param {value!r} (params: {', '.join(params) or 'none'})")
        return str(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise fail(file, line, f"{what} must be a number (0 or more) or the name of a param", value)


def _limits(top: YMap, file: str, params: YMap) -> dict[str, Budget]:
    declared = mapping(top, "limits", file, "UsageLimits fields to a number or a param")
    out: dict[str, Budget] = {}
    for name, value in declared.items():
        line = declared.line_of(name)
        if name not in DECLARED_LIMITS:
            raise fail(file, line, f"limits: a declaration sets {' and '.join(DECLARED_LIMITS)} only "
                                   "(a scripted model's token counts are estimates)", name)
        out[str(name)] = _budget_of(value, file, line, params, f"limits: {name}")
    return out


def _retries(top: YMap, file: str, params: YMap) -> Budget | dict[str, Budget] | None:
    if "retries" not in top:
        return None
    raw, line = top["retries"], top.line_of("retries")
    if not isinstance(raw, YMap):
        return _budget_of(raw, file, line, params, "retries")
    out: dict[str, Budget] = {}
    for key, value in raw.items():
        if key not in RETRY_BUDGETS:
            raise fail(file, raw.line_of(key), f"retries: Pydantic AI's budgets are {' and '.join(RETRY_BUDGETS)}",
                       key)
        out[str(key)] = _budget_of(value, file, raw.line_of(key), params, f"retries: {key}")
    return out


def _label(name: Any, file: str, line: int, what: str) -> str:
    if not isinstance(name, str) or not name.isidentifier():
        raise fail(file, line, f"{what} must be a plain identifier (haltproof chooses by it)", name)
    return name


def _answers(top: YMap, file: str, ref: str, tools: AgentTools) -> tuple[dict[str, Any], int, Choice]:
    """`models:` label -> the ModelResponse it stands for; the most tool calls one answer makes;
    and the `model` choice at its lines (an answer may carry `when:`, a guard over the vars)."""
    declared = mapping(top, "models", file, "answer labels to the model's answers")
    if not declared:
        raise fail(file, top.line_of("models"), "models: give the model at least one answer")
    out: dict[str, Any] = {}
    most = 0
    choice = Choice(MODEL, top.line_of("models"), {})
    for label, raw in declared.items():
        line = declared.line_of(label)
        raw, guard = guard_of(raw, file, f"models: answer {label}")
        name = _label(label, file, line, "a model answer's label")
        choice.labels[name] = line
        if guard is not None:
            choice.when[name] = guard
        out[name] = response = _response(raw, name, file, line, ref, tools)
        most = max(most, sum(getattr(p, "tool_name", None) in tools.function for p in response.parts))
    return out, most, choice


def _response(raw: Any, label: str, file: str, line: int, ref: str, tools: AgentTools) -> Any:
    """One model answer: its text, or a mapping of `text`, `tool_calls` (several: in parallel) and `output`."""
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    if isinstance(raw, str):
        return ModelResponse(parts=[TextPart(str(raw))])
    if not isinstance(raw, YMap) or not raw:
        raise fail(file, line, f"models: answer {label} must be the model's text, or a mapping of "
                               f"{', '.join(ANSWER_KEYS)}")
    for key in raw:
        if key not in ANSWER_KEYS:
            raise fail(file, raw.line_of(key), f"models: answer {label} may give {', '.join(ANSWER_KEYS)}", key)
    parts: list[Any] = []
    if "text" in raw:
        if not isinstance(raw["text"], str):
            raise fail(file, raw.line_of("text"), f"models: the text of answer {label} must be a string")
        parts.append(TextPart(str(raw["text"])))
    calls = raw.get("tool_calls", [])
    if not isinstance(calls, list):
        raise fail(file, raw.line_of("tool_calls"), f"models: tool_calls of answer {label} must be a list")
    for i, call in enumerate(calls, 1):
        where = calls.lines[i - 1] if hasattr(calls, "lines") else line
        parts.append(ToolCallPart(*_call(call, label, file, where, ref, tools), tool_call_id=f"{label}_{i}"))
    if "output" in raw:
        where = raw.line_of("output")
        if len(tools.output) != 1:
            has = ("no output tool (its output is text)" if not tools.output
                   else "several output tools: name one under tool_calls")
            raise fail(file, where, f"models: answer {label} gives an output, but {ref} has {has}")
        if not isinstance(raw["output"], YMap):
            raise fail(file, where, f"models: the output of answer {label} must be a mapping "
                                    "(the output tool's arguments)")
        parts.append(ToolCallPart(tools.output[0], plain(raw["output"]), tool_call_id=f"{label}_output"))
    return ModelResponse(parts=parts)


def _call(call: Any, label: str, file: str, line: int, ref: str, tools: AgentTools) -> tuple[str, dict[str, Any]]:
    """A tool call of an answer: `{name: TOOL, args: {...}}`, naming a tool the agent has."""
    if not isinstance(call, YMap) or "name" not in call or set(call) - {"name", "args"}:
        raise fail(file, line, f"models: a tool call of answer {label} is a mapping of name and args")
    name, args = call["name"], call.get("args", YMap())
    known = tools.function + tools.output
    if name not in known:
        raise fail(file, call.line_of("name"), f"models: answer {label} calls a tool {ref} does not have "
                                               f"(its tools: {', '.join(known) or 'none'})", name)
    if not isinstance(args, YMap):
        raise fail(file, call.line_of("args"), f"models: the args of {name} in answer {label} must be a mapping")
    return str(name), plain(args)


def _tool_outcomes(top: YMap, file: str, ref: str, tools: AgentTools) -> tuple[dict[str, dict[str, Any]],
                                                                              list[tuple[str, int]], list[Choice]]:
    """`tools:` tool -> label -> outcome; the exception classes they raise, with their lines; and
    each tool's choice at its lines."""
    declared = mapping(top, "tools", file, "tools to their outcomes")
    out: dict[str, dict[str, Any]] = {}
    errors: list[tuple[str, int]] = []
    choices: list[Choice] = []
    for name, labels in declared.items():
        line = declared.line_of(name)
        if name in tools.output:
            raise fail(file, line, f"tools: {name} is {ref}'s output tool: its result is a model answer's output",
                       name)
        if name not in tools.function:
            raise fail(file, line, f"tools: {ref} has no tool {name!r} (its tools: "
                                   f"{', '.join(tools.function) or 'none'})")
        if name == MODEL:
            raise fail(file, line, "tools: a tool named model cannot be scripted: its choice would be the model's")
        if not isinstance(labels, YMap) or not labels:
            raise fail(file, line, f"tools: {name} needs a mapping of outcome labels to outcomes")
        out[str(name)] = {}
        for label, raw in labels.items():
            where = labels.line_of(label)
            out[str(name)][_label(label, file, where, f"an outcome label of {name}")] = \
                _outcome(raw, str(name), file, where, errors)
        choices.append(Choice(str(name), line, {str(label): labels.line_of(label) for label in labels}))
    return out, errors, choices


def _outcome(raw: Any, tool: str, file: str, line: int, errors: list[tuple[str, int]]) -> Any:
    """One tool outcome: `ok` (the real tool runs), `{returns: VALUE}`, `{retry: MESSAGE}` (ModelRetry)
    or `{raises: CLASS, message: TEXT}` (the tool fails)."""
    from pydantic_ai import ModelRetry
    if raw == OK:
        return OK
    kinds = ("returns", "retry", "raises")
    if not isinstance(raw, YMap) or len([k for k in kinds if k in raw]) != 1 or \
            set(raw) - {*kinds, "message"} or ("message" in raw and "raises" not in raw):
        raise fail(file, line, f"tools: an outcome of {tool} is ok, {{returns: VALUE}}, {{retry: MESSAGE}} or "
                               "{raises: CLASS, message: TEXT}")
    if "returns" in raw:
        return Returns(plain(raw["returns"]))
    if "retry" in raw:
        return ModelRetry(str(raw["retry"]))
    path, where = raw["raises"], raw.line_of("raises")
    (cls, _), = resolve([Outcome(str(path), None, None, {}, where)], file)
    try:
        error = cls(str(raw.get("message", "")))
    except Exception as exc:        # the user's exception class may want other arguments
        raise fail(file, where, f"tools: cannot make a {path}(message): {exception_text(exc)}") from None
    errors.append((str(path), where))
    return error


def declaration(top: YMap, file: str) -> Declared:
    """Expand a `framework: pydantic_ai` declaration into its spec and adapter (docs/how-to/pydantic-ai.md)."""
    begin(top, file, require_pydantic_ai, DECLARATION_KEYS, {"target", "prompt", "models"})
    from pydantic_ai.agent import AbstractAgent
    agent = import_target(top, file)
    ref, tline = str(top["target"]), top.line_of("target")
    if not isinstance(agent, AbstractAgent):
        raise fail(file, tline, f"{ref} is a {type(agent).__name__}, not a Pydantic AI Agent")
    if not isinstance(top["prompt"], str):
        raise fail(file, top.line_of("prompt"), "prompt must be the user prompt, a string")
    params = top.get("params", YMap())
    if not isinstance(params, YMap):
        raise fail(file, top.line_of("params"), "params must be a mapping")
    deps = run_object(top, "deps", file, params)
    made = None
    if deps is not None:
        made = check_run_object(deps, file, params, agent.deps_type)
        _no_clash(deps, file, {MODEL} | set(mapping(top, "tools", file, "tools to their outcomes")))
    tools = tools_of(agent, str(top["prompt"]), ref, file, tline, made)
    responses, parallel, model = _answers(top, file, ref, tools)
    outcomes, errors, tool_choices = _tool_outcomes(top, file, ref, tools)
    d = AgentDeclaration(agent, str(top["prompt"]), responses, outcomes, _limits(top, file, params),
                         _retries(top, file, params), errors, deps, [model, *tool_choices])
    _delegates(top, file, d, {MODEL, *outcomes, *(c.name for c in (deps.declared() if deps else []))})
    spec = node(_agent_spec(top, file, ref, d, max(parallel, 1), bool(tools.function)), top.line_of("framework"))
    skipping = {c.name: {label: line for label, line in c.labels.items() if outcomes[c.name][label] != OK}
                for c in tool_choices}
    functions = {name: t.function for name, t in getattr(getattr(agent, "_function_toolset", None), "tools", {}).items()}
    return Declared(keep_user_lines(spec, top), lambda: DeclaredAgent(d), skipped_writes(skipping, functions, "deps"))


def delegate_choice(name: str) -> str:
    """The choice naming a delegate's model answer."""
    return f"{name}_says"


def _delegates(top: YMap, file: str, d: AgentDeclaration, taken: set[str]) -> None:
    """`delegates:` name -> {target: module:attr, models: {label: answer}}: the agents a tool of the
    run delegates to (`await delegate.run(...)` in the tool, as Pydantic AI's docs write
    delegation), each with its model's answers; into `d`."""
    declared = mapping(top, "delegates", file, "delegate names to {target, models}")
    for name, raw in declared.items():
        line = declared.line_of(name)
        label = _label(name, file, line, "a delegate's name")
        if not isinstance(raw, YMap) or set(raw) != DELEGATE_KEYS:
            raise fail(file, line, f"delegates: {label} needs exactly the keys target (module:attr of the Agent a "
                                   "tool delegates to) and models (its model's answers)")
        from pydantic_ai.agent import AbstractAgent
        agent = import_target(raw, file)
        if not isinstance(agent, AbstractAgent) or agent is d.agent:
            raise fail(file, raw.line_of("target"), f"delegates: {raw['target']} is "
                                                    f"{'the target itself' if agent is d.agent else 'not a Pydantic AI Agent'}")
        if delegate_choice(label) in taken:
            raise fail(file, line, f"delegates: {label}'s choice {delegate_choice(label)} is also a tool's or the "
                                   "model's: rename the delegate")
        tools = tools_of(agent, str(top["prompt"]), str(raw["target"]), file, raw.line_of("target"))
        responses, _, choice = _answers(raw, file, str(raw["target"]), tools)
        choice.name = delegate_choice(label)
        d.delegates[label], d.delegate_responses[label], d.delegate_choices[label] = agent, responses, choice


def _no_clash(deps: RunObject, file: str, taken: set[str]) -> None:
    """A scripted callable of the deps whose choice is named like the model's or a tool's is refused at its line."""
    for s in deps.scripted:
        if s.choice in taken:
            raise fail(file, s.line, f"deps: {s.path}'s choice {s.choice} is also the choice of a tool: rename "
                                     "the tool's outcome or the field")


def _agent_spec(top: YMap, file: str, ref: str, d: AgentDeclaration, parallel: int, has_tools: bool) -> dict[str, Any]:
    """The spec a declaration stands for: the run's abstract state, one action per node kind (a
    model request choosing the answer, the tool calls choosing each scripted tool's outcome), the
    limits' and retries' exceptions as outcomes, the out-of-the-box properties, then the user's own."""
    requests = f"({d.limits.get('request_limit', DEFAULT_REQUEST_LIMIT)} + 1)"     # room to see an overrun
    counter = {"type": "int", "min": 0, "init": 0}
    retries_exhausted = {"class": "pydantic_ai.exceptions.UnexpectedModelBehavior", "match": RETRIES_EXHAUSTED,
                         "set": {"status": "retries_exhausted"}}
    tools: dict[str, Any] = {
        "when": "status == running and next == call_tools",
        "raises": [{"class": "pydantic_ai.exceptions.UsageLimitExceeded", "match": "tool_calls_limit",
                    "set": {"status": "tool_calls_limit_exceeded"}}, retries_exhausted,
                   *({"class": path, "set": {"status": "tool_error"}} for path in dict(d.errors))]}
    tool_choices = d.declared[1:] + (d.deps.declared() if d.deps is not None else [])
    if tool_choices:
        tools["choose"] = choose_node(tool_choices)
    spec: dict[str, Any] = {
        "machine": top.get("machine", os.path.splitext(os.path.basename(file))[0]),
        "description": top.get("description", f"{ref} as Pydantic AI runs it: one node of its agent graph per "
                                              "transition"),
        "bind": ref,
        "params": top.get("params", YMap()),
        "vars": {"next": {"type": "enum", "values": NEXT, "init": "model_request"},
                 "response": {"type": "enum", "values": ["none", *d.responses], "init": "none"},
                 "requests": {**counter, "max": requests},
                 "tool_calls": {**counter, "max": f"{requests} * {parallel}"},
                 "tool_runs": {**counter, "max": f"{requests} * {parallel}"},
                 "tool_retries": {**counter, "max": requests},
                 "output_retries": {**counter, "max": requests},
                 "status": {"type": "enum", "values": STATUSES, "init": "running"}},
        "actions": lined({
            "request": {"when": "status == running and next == model_request", "choose": choose_node(d.declared[:1]),
                        "raises": [{"class": "pydantic_ai.exceptions.UsageLimitExceeded", "match": "request_limit",
                                    "set": {"status": "request_limit_exceeded"}}, retries_exhausted]},
            "tools": tools}, {"request": top.line_of("models"),
                              "tools": top.line_of("tools") if "tools" in top else top.line_of("target")}),
        "terminal": "status != running",
        "properties": with_user_properties(top, file, _builtin_agent_properties(d, has_tools), "Pydantic AI"),
    }
    if d.delegates:
        _with_delegates(spec, top, file, d, requests, parallel, retries_exhausted)
    if "expect" in top:
        spec["expect"] = top["expect"]
    return spec


def _with_delegates(spec: dict[str, Any], top: YMap, file: str, d: AgentDeclaration, requests: str, parallel: int,
                    retries_exhausted: dict[str, Any]) -> None:
    """A run delegating from its tools: an action per delegate answering its pending model request
    (its exceptions leave the parent's tool, so they end the parent's run), the vars counting the
    delegates' requests, and the out-of-the-box properties over them."""
    calls = f"{requests} * (1 + {parallel} * {DELEGATE_BOUND + 1})"
    counter = {"type": "int", "min": 0, "init": 0, "max": calls}
    spec["vars"]["next"] = {"type": "enum", "values": [*NEXT, "delegate_request"], "init": "model_request"}
    spec["vars"].update({"delegate": {"type": "enum", "values": ["none", *d.delegates], "init": "none"},
                         "delegate_requests": counter, "model_calls": counter})
    for key in ("requests", "tool_calls", "tool_runs", "tool_retries", "output_retries"):
        spec["vars"][key] = {**spec["vars"][key], "max": calls}
    limits = [{"class": "pydantic_ai.exceptions.UsageLimitExceeded", "match": "request_limit",
               "set": {"status": "request_limit_exceeded"}},
              {"class": "pydantic_ai.exceptions.UsageLimitExceeded", "match": "tool_calls_limit",
               "set": {"status": "tool_calls_limit_exceeded"}}, retries_exhausted]
    actions = lined({f"delegate_{name}": {"when": f"status == running and next == delegate_request and delegate == {name}",
                                          "choose": choose_node([d.delegate_choices[name]]), "raises": limits}
                     for name in d.delegates}, {f"delegate_{name}": d.delegate_choices[name].line for name in d.delegates})
    spec["actions"].update(actions)
    spec["actions"].lines.update(actions.lines)
    tools = spec["actions"]["tools"]        # a delegate's run may stop before its first request
    tools["raises"] = node([limits[0], *tools["raises"]], tools.line)
    request_limit = d.limits.get("request_limit", DEFAULT_REQUEST_LIMIT)
    builtin = {
        "most_model_calls": {"maximum": "model_calls", "description": "the most model requests in a run, the "
                                                                      "delegates' included"},
        "most_delegate_requests": {"maximum": "delegate_requests", "description": "the most model requests the "
                                                                                  "delegates make in a run"},
        "usage_counts_every_request": {"always": "requests == model_calls",
                                       "description": "the run's usage (what its UsageLimits check) counts every "
                                                      "model request, the delegates' too: false where a delegate "
                                                      "runs without usage=ctx.usage"},
    }
    if isinstance(request_limit, str):
        for name in ("most_model_calls", "most_delegate_requests"):
            builtin[name]["limit"] = request_limit
    user = spec["properties"]
    for name in builtin:
        if name in user:
            raise fail(file, user.line_of(name),
                       f"{name} is an out-of-the-box property of a delegating Pydantic AI declaration: give yours "
                       "another name")
    generated = node(builtin, top.line_of("delegates"))
    user.update(generated)
    user.lines.update(generated.lines)


def _builtin_agent_properties(d: AgentDeclaration, has_tools: bool) -> dict[str, Any]:
    """The out-of-the-box properties (docs/how-to/pydantic-ai.md): the run ends; whether each of Pydantic AI's
    limit errors can happen, the smallest safe value of the param behind it; the worst cases, with
    what each limit promises."""
    request_limit = d.limits.get("request_limit", DEFAULT_REQUEST_LIMIT)
    props: dict[str, Any] = {
        "run_ends": {"terminates": True, "description": "every run ends: an output, a limit error or a "
                                                        "declared failure"},
        "request_limit_error": {"possible": "status == request_limit_exceeded",
                                "description": "whether a run can end in UsageLimitExceeded from "
                                               "request_limit, with a shortest one"},
    }
    if isinstance(request_limit, str):
        props["request_limit_error"]["smallest_safe"] = request_limit
    if "tool_calls_limit" in d.limits:
        props["tool_calls_limit_error"] = {"possible": "status == tool_calls_limit_exceeded",
                                           "description": "whether a run can end in UsageLimitExceeded from "
                                                          "tool_calls_limit, with a shortest one"}
        if isinstance(d.limits["tool_calls_limit"], str):
            props["tool_calls_limit_error"]["smallest_safe"] = d.limits["tool_calls_limit"]
    props["retries_error"] = {"possible": "status == retries_exhausted",
                              "description": "whether a run can end in UnexpectedModelBehavior, a retry "
                                             "budget used up, with a shortest one"}
    if isinstance(d.retries, str):
        props["retries_error"]["smallest_safe"] = d.retries
    props["most_model_requests"] = {"maximum": "requests", "at_most": str(request_limit),
                                    "description": "the most model requests in a run; Pydantic AI promises at "
                                                   "most request_limit"}
    if has_tools:
        props["most_tool_runs"] = {"maximum": "tool_runs", "description": "the most tool executions in a run, "
                                                                           "failed ones included"}
        props["most_successful_tool_calls"] = {"maximum": "tool_calls",
                                               "description": "the most successful tool calls in a run (what "
                                                              "tool_calls_limit counts)"}
        if "tool_calls_limit" in d.limits:
            props["most_successful_tool_calls"]["at_most"] = str(d.limits["tool_calls_limit"])
            props["most_successful_tool_calls"]["description"] += "; Pydantic AI promises at most tool_calls_limit"
    return _with_limits(props, request_limit, d.limits.get("tool_calls_limit"))


def _with_limits(props: dict[str, Any], request_limit: Budget, tool_calls_limit: Budget | None) -> dict[str, Any]:
    """The worst cases' `limit:` (the sweep's "a limit of N allows at most M" line): requests against
    request_limit, tool executions against tool_calls_limit where that is a param, else request_limit;
    none where the limit is a fixed number (there is nothing to sweep)."""
    tools = tool_calls_limit if isinstance(tool_calls_limit, str) else request_limit
    for name, limit in (("most_model_requests", request_limit), ("most_tool_runs", tools),
                        ("most_successful_tool_calls", tools)):
        if name in props and isinstance(limit, str):
            props[name]["limit"] = limit
    return props
