"""Live adapters for tests/machine/test_live_binding.py: a tiny agent loop, run live, and ways to get it wrong.

`Agent` is the code under test: it calls a tool until the tool succeeds or `limit` steps
are spent. Each adapter below binds it (or a variant) through the live API; the spec is
AGENT_SPEC in the tests.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Iterator
from typing import Any

from haltproof.machine.live import LiveAdapter


class Agent:
    def __init__(self, limit: int):
        self.limit, self.steps, self.status = limit, 0, "running"

    def work(self, tool: str) -> str:
        self.steps += 1
        if tool == "ok":
            self.status = "done"
            return "finished"
        if self.steps >= self.limit:
            self.status = "limit"
            return "out_of_steps"
        return "again"


class SkipsLimit(Agent):
    """The bug: the limit is checked with > instead of >=, one step too late."""

    def work(self, tool: str) -> str:
        self.steps += 1
        if tool == "ok":
            self.status = "done"
            return "finished"
        if self.steps > self.limit:
            self.status = "limit"
            return "out_of_steps"
        return "again"


class AgentAdapter(LiveAdapter):
    """Copyable: haltproof keeps a deepcopy per state ("snapshot")."""

    agent = Agent
    copyable = True

    def start(self, params: dict[str, Any], init: dict[str, Any]) -> Agent:
        return self.agent(params["N"])

    def step(self, live: Agent, action: str, choices: dict[str, Any]) -> str:
        return live.work(choices["tool"])

    def abstract(self, live: Agent) -> dict[str, Any]:
        return {"steps": live.steps, "status": live.status}


class ReplayedAdapter(AgentAdapter):
    copyable = False


_CALLS = {"n": 0}


class ClosureAgent(Agent):
    """An agent whose step count lives in a closure: `copy.deepcopy` copies the object but
    not what its function closes over, so a copy steps the original's count."""

    def __init__(self, limit: int):
        super().__init__(limit)
        box = {"steps": 0}

        def tick() -> int:
            box["steps"] += 1
            return box["steps"]
        self.tick = tick

    def work(self, tool: str) -> str:
        rule = super().work(tool)
        self.steps = self.tick()       # the count the run reports is the closure's
        return rule


class DefaultAdapter(LiveAdapter):
    """Says nothing about copying: haltproof must replay (a deepcopy would share the closure)."""

    def start(self, params: dict[str, Any], init: dict[str, Any]) -> Agent:
        return ClosureAgent(params["N"])

    def step(self, live: Agent, action: str, choices: dict[str, Any]) -> str:
        return live.work(choices["tool"])

    def abstract(self, live: Agent) -> dict[str, Any]:
        return {"steps": live.steps, "status": live.status}


class CopiedClosures(DefaultAdapter):
    """The same code, declared copyable by mistake: the copies share the closure."""

    copyable = True


class ReplayedMutant(ReplayedAdapter):
    agent = SkipsLimit


class SnapshotAdapter(AgentAdapter):
    """snapshot()/restore() of its own, counted."""

    taken = 0

    def snapshot(self, live: Agent) -> tuple[int, int, str]:
        type(self).taken += 1
        return (live.limit, live.steps, live.status)

    def restore(self, snap: tuple[int, int, str]) -> Agent:
        agent = Agent(snap[0])
        agent.steps, agent.status = snap[1], snap[2]
        return agent


class ForgetfulRestore(SnapshotAdapter):
    """The bug: restore() forgets the steps taken."""

    def restore(self, snap: tuple[int, int, str]) -> Agent:
        agent = Agent(snap[0])
        agent.status = snap[2]
        return agent


class Shared:
    """A deepcopy that copies nothing: every copy is the same agent."""

    def __init__(self, agent: Agent):
        self.agent = agent

    def __deepcopy__(self, memo: dict[int, Any]) -> Shared:
        return self


class SharedCopyAdapter(AgentAdapter):
    def start(self, params: dict[str, Any], init: dict[str, Any]) -> Shared:
        return Shared(Agent(params["N"]))

    def step(self, live: Shared, action: str, choices: dict[str, Any]) -> str:
        return live.agent.work(choices["tool"])

    def abstract(self, live: Shared) -> dict[str, Any]:
        return {"steps": live.agent.steps, "status": live.agent.status}


class LeakyReplay(ReplayedAdapter):
    """The bug: state kept between runs (a call counter shared by every run), so the fifth
    call (the first replayed one) takes an extra step and a replay does not reach the state its path reached first."""

    calls = 0

    def step(self, live: Agent, action: str, choices: dict[str, Any]) -> str:
        type(self).calls += 1
        rule = live.work(choices["tool"])
        if type(self).calls == 5:
            live.steps += 1
        return rule


class WrongStart(AgentAdapter):
    def start(self, params: dict[str, Any], init: dict[str, Any]) -> Agent:
        agent = Agent(params["N"])
        agent.steps = 1
        return agent


def _generator_agent(limit: int) -> Iterator[dict[str, Any]]:
    """The agent as a generator: its state lives in the paused frame, which cannot be copied."""
    steps, status = 0, "running"
    while True:
        tool = yield {"steps": steps, "status": status}
        steps += 1
        if tool == "ok":
            status = "done"
        elif steps >= limit:
            status = "limit"


class GeneratorRun:
    def __init__(self, limit: int):
        self.gen = _generator_agent(limit)
        self.seen = next(self.gen)


class GeneratorAdapter(LiveAdapter):
    def start(self, params: dict[str, Any], init: dict[str, Any]) -> GeneratorRun:
        return GeneratorRun(params["N"])

    def step(self, live: GeneratorRun, action: str, choices: dict[str, Any]) -> str:
        live.seen = live.gen.send(choices["tool"])
        status = live.seen["status"]
        return {"done": "finished", "limit": "out_of_steps"}.get(status, "again")

    def abstract(self, live: GeneratorRun) -> dict[str, Any]:
        return dict(live.seen)


# ---------------------------------------------------------------- async


async def _async_agent(limit: int) -> AsyncIterator[dict[str, Any]]:
    steps, status = 0, "running"
    while True:
        tool = yield {"steps": steps, "status": status}
        await asyncio.sleep(0)
        steps += 1
        if tool == "ok":
            status = "done"
        elif steps >= limit:
            status = "limit"


class AsyncRun:
    def __init__(self, limit: int):
        self.gen = _async_agent(limit)
        self.seen: dict[str, Any] = {}
        self.loop: asyncio.AbstractEventLoop | None = None


LOOPS_SEEN: set[int] = set()


class AsyncAdapter(LiveAdapter):
    """start and step are coroutines; the run is an async generator paused at its yield."""

    async def start(self, params: dict[str, Any], init: dict[str, Any]) -> AsyncRun:
        run = AsyncRun(params["N"])
        run.seen = await run.gen.__anext__()
        run.loop = asyncio.get_running_loop()
        return run

    async def step(self, live: AsyncRun, action: str, choices: dict[str, Any]) -> str:
        loop = asyncio.get_running_loop()
        LOOPS_SEEN.add(id(loop))
        assert loop is live.loop, "the run's loop lives across transitions"
        live.seen = await live.gen.asend(choices["tool"])
        return {"done": "finished", "limit": "out_of_steps"}.get(live.seen["status"], "again")

    def abstract(self, live: AsyncRun) -> dict[str, Any]:
        return copy.copy(live.seen)


class HangingAsync(AsyncAdapter):
    """An async step that waits forever on something that never comes."""

    async def step(self, live: AsyncRun, action: str, choices: dict[str, Any]) -> str:
        await asyncio.Event().wait()
        return "again"


# ---------------------------------------------------------------- exceptions as outcomes


class StepLimitExceeded(Exception):
    pass


class ToolError(Exception):
    pass


class RaisingAgent(Agent):
    """Signals its limit with an exception, as frameworks do, and its tool can fail."""

    def work(self, tool: str) -> str:
        if self.steps >= self.limit:
            raise StepLimitExceeded(f"hit the limit of {self.limit} steps")
        self.steps += 1
        if tool == "crash":
            raise ToolError("the tool crashed")
        if tool == "ok":
            self.status = "done"
            return "finished"
        return "again"


class RaisingAdapter(ReplayedAdapter):
    agent = RaisingAgent


class RaisingCopied(AgentAdapter):
    agent = RaisingAgent


class Trail:
    def __init__(self) -> None:
        self.x, self.via = 0, ""


class TrailAdapter(LiveAdapter):
    """The abstraction is too coarse for this code: `finish` acts on the way the run came
    (`via`), which the abstract state (x alone) leaves out."""

    def start(self, params: dict[str, Any], init: dict[str, Any]) -> Trail:
        return Trail()

    def step(self, live: Trail, action: str, choices: dict[str, Any]) -> None:
        if action == "go":
            live.x, live.via = 1, choices["via"]
        else:
            live.x = 2 if live.via == "a" else 3

    def abstract(self, live: Trail) -> dict[str, Any]:
        return {"x": live.x}


class TrailOk(TrailAdapter):
    def step(self, live: Trail, action: str, choices: dict[str, Any]) -> None:
        if action == "go":
            live.x, live.via = 1, choices["via"]
        else:
            live.x = 2


class LateUncopyable(AgentAdapter):
    """Copyable at first; from its second step on, the run holds a generator (which Python
    refuses to deepcopy): haltproof must switch to replay there, skipping nothing."""

    def step(self, live: Agent, action: str, choices: dict[str, Any]) -> str:
        if live.steps >= 1:
            live.pending = (n for n in range(3))      # type: ignore[attr-defined]
        return live.work(choices["tool"])


class GhostReader(AgentAdapter):
    """Reads back a var the spec declares ghost (the code has no business giving it)."""

    def abstract(self, live: Agent) -> dict[str, Any]:
        return {"steps": live.steps, "status": live.status, "fails": 0}


class ClosingAdapter(ReplayedAdapter):
    """Counts the runs it starts and the runs haltproof closes (each object once)."""

    started: list[Agent] = []
    closed: list[Agent] = []

    def start(self, params: dict[str, Any], init: dict[str, Any]) -> Agent:
        agent = super().start(params, init)
        type(self).started.append(agent)
        return agent

    def close(self, live: Agent) -> None:
        type(self).closed.append(live)


class CrashesOnOk(ReplayedMutant):
    """Fails conform two ways: its step raises on tool ok, and its limit check is one step late."""

    def step(self, live: Agent, action: str, choices: dict[str, Any]) -> str:
        if choices["tool"] == "ok":
            raise RuntimeError("the ok tool is gone")
        return super().step(live, action, choices)


class ClosingMutant(ClosingAdapter):
    """ClosingAdapter over the agent that checks its limit one step late: conform fails it."""

    agent = SkipsLimit


class CloseRaises(ClosingAdapter):
    """A run it cannot release: its close() raises."""

    def close(self, live: Agent) -> None:
        super().close(live)
        raise RuntimeError("the run's pool is shut down already")


class CloseRaisesMutant(ClosingMutant):
    """The late limit check, and a close() that raises on a run still running: only a run on which
    the code and the spec disagree ends so (the spec's ends are done and limit)."""

    def close(self, live: Agent) -> None:
        super().close(live)
        if live.status == "running":
            raise RuntimeError("the run's pool is shut down already")


class NotANumber(AgentAdapter):
    """Reads a step count it keeps as a float, and NaN once the first step is taken (a
    division 0/0 in the user's own bookkeeping): NaN is not even equal to itself."""

    value = float("nan")

    def abstract(self, live: Agent) -> dict[str, Any]:
        return {"steps": type(self).value if live.steps == 1 else live.steps, "status": live.status}


class Infinite(NotANumber):
    value = float("inf")


class UnprintableError(Exception):
    """An exception whose message cannot be made: its __str__ raises."""

    def __str__(self) -> str:
        raise RuntimeError("no message")


class RaisesUnprintable(AgentAdapter):
    def step(self, live: Agent, action: str, choices: dict[str, Any]) -> str:
        raise UnprintableError()


class RaisesLong(AgentAdapter):
    """Its error message is a million characters (a whole response body put in the message)."""

    def step(self, live: Agent, action: str, choices: dict[str, Any]) -> str:
        raise ValueError("x" * 1_000_000)


class RaisesSurrogate(AgentAdapter):
    """Its error message holds a lone surrogate (a byte that did not decode, kept by surrogateescape)."""

    def step(self, live: Agent, action: str, choices: dict[str, Any]) -> str:
        raise ValueError(b"bad \x80 byte".decode("utf-8", "surrogateescape"))
