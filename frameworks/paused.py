"""A framework's run paused at its model call: binding a framework haltproof has no integration for.

Most agent frameworks run their loop inside one call (`await agent.run(task)`) and ask a model
client somewhere inside it. `PausedRun` runs that call as a task on the run's event loop with
a stand-in for the model (`model(request)`) that pauses the task until haltproof gives the
answer the transition chose; the framework then goes on with its own loop (its tools, its
limits) until it asks the model again or its call returns or raises. Like an async generator
paused at a `yield`: `start` runs it to its first model call, `answer(reply)` resumes it as
`asend` would, and what the run raised comes out of `answer`.

`PausedAdapter` is the live adapter over it (docs/how-to/binding.md): a subclass gives the
framework's run as `run(params, model)` and the answers per choice label, and the rest (one
model call per transition, the run's end, its cancellation when haltproof lets it go) is
here. The OpenAI Agents integration (frameworks/openai_agents.py) is built on it.

One model call at a time: a framework that calls its model from several tasks at once (in
parallel) is not paused this way.
"""

from __future__ import annotations

import asyncio
import copy
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from haltproof.machine.live import LiveAdapter

Model = Callable[[Any], Awaitable[Any]]     # the stand-in the framework awaits: request -> reply


class ModelCalls:
    """The model calls of one run: the pending one's request and its answer, and how many were
    answered. The run's task holds this (through `model`), never the `PausedRun`: a run haltproof
    drops is then collected, and its task cancelled, while the task is still paused."""

    def __init__(self) -> None:
        self.request: Any = None
        self.calls = 0
        self.asked: asyncio.Future[None] | None = None      # set when the run calls the model
        self.reply: asyncio.Future[Any] | None = None       # the pending call's answer

    async def model(self, request: Any) -> Any:
        """The model the framework calls: pauses the run until `PausedRun.answer` gives the reply."""
        assert self.asked is not None, "a launched run"
        self.request, self.reply = request, asyncio.get_running_loop().create_future()
        self.asked.set_result(None)
        return await self.reply


class PausedRun:
    """One run of a framework, as a task paused wherever it awaits `model(request)`.

    `request` is the pending model call's request, `calls` the calls answered so far, `done`
    whether the run's call returned, and `result` what it returned."""

    def __init__(self, calls: ModelCalls | None = None) -> None:
        self.task: asyncio.Future[Any] | None = None
        self.pending = calls if calls is not None else ModelCalls()
        self.done = False
        self.result: Any = None

    @property
    def request(self) -> Any:
        return self.pending.request

    @property
    def calls(self) -> int:
        return self.pending.calls

    @classmethod
    def launch(cls, run: Callable[[Model], Awaitable[Any]], calls: ModelCalls | None = None) -> PausedRun:
        """The run `run(model)` started as a task of the running loop, not yet run (its task is
        created here: a context variable set around this call is the task's). `calls`: the run's
        model calls, when the caller's own objects hand its `model` to the framework."""
        paused = cls(calls)
        paused.pending.asked = asyncio.get_running_loop().create_future()
        paused.task = asyncio.ensure_future(run(paused.pending.model))
        weakref.finalize(paused, let_go, paused.task)      # dropped by haltproof: cancelled, never left pending
        return paused

    @classmethod
    async def start(cls, run: Callable[[Model], Awaitable[Any]]) -> PausedRun:
        """The run started and run up to its first model call, or its end."""
        paused = cls.launch(run)
        await paused.settle()
        return paused

    async def answer(self, reply: Any) -> None:
        """Give the pending model call `reply` (an exception: the call raises it) and run on to the
        next model call or the end (what the run raised is raised here)."""
        pending = self.pending
        if pending.reply is None or self.done or self.task is None or self.task.done():
            raise RuntimeError(f"no model call is waiting for an answer: the run has already {self.ended()}")
        pending.asked = asyncio.get_running_loop().create_future()
        if isinstance(reply, BaseException):        # the model call fails (a rate limit, a timeout)
            pending.reply.set_exception(copy.copy(reply))
        else:
            pending.reply.set_result(reply)
        pending.reply = None
        pending.calls += 1
        await self.settle()

    async def settle(self) -> None:
        """Let the run go on until it calls the model again or its call ends (raising what it raised)."""
        assert self.task is not None and self.pending.asked is not None, "a launched run"
        await asyncio.wait([self.task, self.pending.asked], return_when=asyncio.FIRST_COMPLETED)
        if self.task.done():
            self.result = self.task.result()
            self.done = True

    def ended(self) -> str:
        """How the run's call ended, in words: `returned`, `raised MaxTurnsExceeded`, or `not ended`."""
        if self.task is None or not self.task.done():
            return "not ended"
        if self.task.cancelled():
            return "been cancelled"
        error = self.task.exception()
        return "returned" if error is None else f"raised {type(error).__name__}"

    def close(self) -> None:
        """Cancel the run if it is still paused (haltproof is done with it)."""
        if self.task is not None:
            let_go(self.task)


def let_go(task: asyncio.Future[Any]) -> None:
    """A run haltproof no longer holds: cancel its paused task (the loop finishes it on its next turn)."""
    if not task.done() and not task.get_loop().is_closed():
        task.cancel()


class PausedAdapter(LiveAdapter):
    """A live adapter for a framework's run that calls a model. Subclass it and give:

    `run(params, model)`: the framework's own run (an `async def`), with `model` standing for the
    model client: `await model(request)` returns the answer the transition chose;
    `answers`: for each choice, the reply per label (or a function of the request giving it).
    Each transition answers one model call. The abstract state is `calls` (model calls answered)
    and `status` (`running`, `done` once the run returned; a declared exception sets its own),
    plus what `observe(run)` reads from the `PausedRun` (its `result`, your objects)."""

    answers: dict[str, dict[str, Any]] = {}

    async def run(self, params: dict[str, Any], model: Model) -> Any:
        raise NotImplementedError

    async def start(self, params: dict[str, Any], init: dict[str, Any]) -> PausedRun:
        return await PausedRun.start(lambda model: self.run(params, model))

    async def step(self, live: PausedRun, action: str, choices: dict[str, Any]) -> str | None:
        names = [name for name in choices if name in self.answers]
        if len(names) != 1:
            raise ValueError(f"action {action} must choose exactly one of {type(self).__name__}.answers' choices "
                             f"{sorted(self.answers)} (it chooses {sorted(choices)})")
        label = choices[names[0]]
        if label not in self.answers[names[0]]:
            raise ValueError(f"{type(self).__name__}.answers has no reply for {names[0]}={label} "
                             f"(it has {sorted(self.answers[names[0]])})")
        reply = self.answers[names[0]][label]
        await live.answer(reply(live.request) if callable(reply) else reply)
        return None

    def observe(self, live: PausedRun) -> dict[str, Any]:
        """More abstract vars, read from the run; none by default."""
        return {}

    def abstract(self, live: PausedRun) -> dict[str, Any]:
        return {"calls": live.calls, "status": "done" if live.done else "running", **self.observe(live)}

    def close(self, live: PausedRun) -> None:
        live.close()
