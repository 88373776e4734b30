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
tool call); a tool named in `tool_outcomes` gets, through a capability wrapping its
execution, the outcome its choice (named after the tool) names: `OK` runs the real tool,
a `ModelRetry` is raised as the tool's request to retry, any other exception is raised as
the tool's failure. Tools not named there just run.

The abstract state read back (the vars a spec, or a generated one, declares):
`next` (the node kind to run next: `model_request`, `call_tools`, `end`), `requests` and
`tool_calls` (Pydantic AI's own `RunUsage` counts), `status` (`running`, `done` once the run
ended with an output; the spec sets others, e.g. `limit`, `retries_exhausted`, on the
declared exceptions), plus the optional readings named in `reads` (`READINGS`) and what
`observe(run)` adds. Runs are replayed (a running agent graph cannot be copied).
"""

from __future__ import annotations

import asyncio
import copy
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from haltproof.machine.live import LiveAdapter

from .declaration import require_version

OK = "ok"                           # a tool outcome: run the real tool
END = "end"
NODE_KINDS = {"UserPromptNode": "user_prompt", "ModelRequestNode": "model_request",
              "CallToolsNode": "call_tools", "SetFinalResult": "set_final_result", "End": END}
LIMIT_FIELDS = ("request_limit", "tool_calls_limit", "input_tokens_limit", "output_tokens_limit",
                "total_tokens_limit")


def require_pydantic_ai() -> str:
    """The installed Pydantic AI version, or a clear error naming it when it is missing or unsupported."""
    return require_version("pydantic_ai", "pydantic-ai-slim", "Pydantic AI")


Request = tuple[Any, "asyncio.Future[Any]"] | None      # (the node to run, its result's future); None: stop


@dataclass
class Script:
    """What the scripted model and tools of one run read and count (never the run itself)."""

    choices: dict[str, Any] = field(default_factory=dict)       # of the transition running
    tool_runs: int = 0          # tool calls that reached execution (the tool ran, or its scripted failure)


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

    async def next(self) -> Any:
        """Run `node` in the run's own task; its result, or the exception it raised. A run that
        has ended is refused by name: its task is gone, and a request to it would wait forever."""
        if self.ended:
            raise RuntimeError(f"the agent run already ended ({self.ended}); a spec must not step it "
                               "again: make the status its raises set terminal")
        done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.inbox.put_nowait((self.node, done))
        try:
            return await done
        except Exception as exc:
            self.ended = f"{type(exc).__name__}: {exc}"
            raise


async def _drive(runs: Any, inbox: asyncio.Queue[Request], started: asyncio.Future[Any]) -> None:
    """Enter `Agent.iter()`, hand its run out, then run one node per request until told to stop.
    Holds no reference to its `AgentLive`, so a dropped run is collected and stops its task."""
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


def _stop(inbox: asyncio.Queue[Request], loop: asyncio.AbstractEventLoop) -> None:
    """Tell a dropped run's task to leave its run; once its loop is closed there is no task to tell."""
    if not loop.is_closed():
        inbox.put_nowait(None)


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
    named after it), the outcome per label (`OK`, a `ModelRetry`, an exception).
    `usage_limits(params)` builds `UsageLimits` from the params named like its fields;
    `retries(params)` the run's retry budgets from `retries`, `tool_retries`, `output_retries`;
    `deps(params)` the run's deps; `reads` lists `READINGS` to add; `observe(live)` adds more."""

    responses: dict[str, Any] = {}
    tool_outcomes: dict[str, dict[str, Any]] = {}
    reads: tuple[str, ...] = ()

    def agent(self) -> Any:
        raise NotImplementedError

    def prompt(self, params: dict[str, Any]) -> str:
        raise NotImplementedError

    def deps(self, params: dict[str, Any]) -> Any:
        return None

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
                                 deps=self.deps(params), capabilities=[_scripted_tools(self, live.script)])
        started: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        live.task = asyncio.create_task(_drive(runs, live.inbox, started))
        weakref.finalize(live, _stop, live.inbox, asyncio.get_running_loop())     # dropped: its task leaves the run
        live.run = await started
        live.node = live.run.next_node
        live.node = await live.next()       # the user prompt node: no model request, no choice
        return live

    async def step(self, live: AgentLive, action: str, choices: dict[str, Any]) -> str | None:
        self.check_choices(action, choices)
        if node_kind(live.node) == "model_request" and "model" not in choices:
            raise ValueError(f"action {action} runs a model request, so it must choose `model` "
                             f"(it chooses {sorted(choices)})")
        live.script.choices = dict(choices)
        ran = node_kind(live.node)
        live.node = await live.next()
        if ran == "model_request":
            live.response = str(choices["model"])
        if node_kind(live.node) == END:
            live.status = "done"
        return None

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
        return {"next": node_kind(live.node), "response": live.response, "requests": usage.requests,
                "tool_calls": usage.tool_calls, "status": live.status, **{name: READINGS[name](live) for name in self.reads},
                **self.observe(live)}


def _scripted_model(adapter: AgentAdapter, script: Script) -> Callable[..., Any]:
    def scripted_model(messages: list[Any], info: Any) -> Any:
        """Pydantic AI's FunctionModel asks this for each request: the response the choice names."""
        return copy.deepcopy(adapter.responses[script.choices["model"]])     # a fresh one: Pydantic AI stamps it
    return scripted_model


def _scripted_tools(adapter: AgentAdapter, script: Script) -> Any:
    """A capability wrapping each function tool's execution: the outcome the tool's choice names."""
    from pydantic_ai.capabilities import AbstractCapability

    @dataclass
    class ScriptedTools(AbstractCapability[Any]):
        async def wrap_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any) -> Any:
            if tool_def.kind != "function":
                return await handler(args)
            script.tool_runs += 1
            outcomes = adapter.tool_outcomes.get(call.tool_name)
            if outcomes is None:
                return await handler(args)
            if call.tool_name not in script.choices:
                raise ValueError(f"the model called tool {call.tool_name}, whose outcome the transition does "
                                 f"not choose (it chooses {sorted(script.choices)})")
            outcome = outcomes[script.choices[call.tool_name]]
            if outcome == OK:
                return await handler(args)
            raise copy.copy(outcome)            # a ModelRetry (the tool asks for a retry) or its failure
    return ScriptedTools()
