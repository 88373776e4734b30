"""A small agent loop written the way framework code is: an async generator run loop.

Not haltproof code: a stand-in for the agents people run (a LangGraph graph, a Pydantic AI
agent). Its state (the step count, the retries, the history) lives inside the running
coroutine, where nothing outside can build it; the model and the tool are async callables
handed in; the run signals its limits with exceptions, as frameworks do
(`GraphRecursionError`, `UsageLimitExceeded`).

`agent.yaml` is its spec and `adapter.py` binds the two with live binding:

    cd examples/agent_loop && haltproof check agent.yaml
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

Model = Callable[[list[str]], Awaitable[str]]     # the history -> "answer" or a tool's name
Tool = Callable[[str], Awaitable[str]]            # a query -> its result, or ToolError


class StepLimitExceeded(RuntimeError):
    """The run used its step budget without an answer."""


class ToolError(Exception):
    """A tool failed this time (a timeout, a 5xx): worth a retry."""


class ToolFailed(RuntimeError):
    """A tool kept failing past the retry budget: the run gives up."""


@dataclass(frozen=True)
class Event:
    """What the run shows after each step."""

    kind: str            # "start" | "continue" | "answered"
    steps: int
    retries: int
    status: str          # "running" | "answered"


async def run_agent(model: Model, tools: dict[str, Tool], *, max_steps: int,
                    max_retries: int) -> AsyncIterator[Event]:
    """Ask the model, call the tool it picks, until it answers; yield an Event per step."""
    history: list[str] = []
    steps = retries = 0
    while True:
        if steps >= max_steps:
            raise StepLimitExceeded(f"the run used its {max_steps} steps without an answer")
        choice = await model(history)
        if choice == "answer":
            yield Event("answered", steps + 1, retries, "answered")
            return
        try:
            history.append(await tools[choice](history[-1] if history else "start"))
        except ToolError as exc:
            if retries >= max_retries:
                raise ToolFailed(f"{choice} failed {retries + 1} times: {exc}") from exc
            retries += 1
            history.append(f"error: {exc}")
        steps += 1
        yield Event("continue", steps, retries, "running")
