"""Overhead of the runtime guard's framework hooks per event, on the examples' conforming runs.

    python -m bench.guard_hooks_bench

For each framework, the example's guard is written, then its conforming scripted run (the one
docs/how-to/guard.md shows) is run many times with the guard and without it. Two numbers per
framework: the median time of the guard's decision per event (the `Follower` calls), and the
median whole-run time with the guard minus without it, per event (the decision plus the hook's
own reading of the run's state). Scripted models answer at once, so the second is the hook's
cost against a framework doing nothing else. No timed assertion anywhere: the numbers go to stdout."""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from haltproof import guard as runtime
from haltproof.cli.guard import write_guard
from haltproof.guard import Guard

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "frameworks"
RUNS = 60
WARM = 10


@contextmanager
def in_example(folder: Path) -> Iterator[None]:
    """Run from the example's folder, its modules importable."""
    cwd, path = os.getcwd(), list(sys.path)
    os.chdir(folder)
    sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        os.chdir(cwd)
        sys.path[:] = path


def timed_decisions() -> dict[str, int]:
    """Wrap the Follower's calls: their total time and count go into the returned counters."""
    acc = {"ns": 0, "n": 0}
    for name in ("start", "before", "after", "end"):
        call = getattr(runtime.Follower, name)

        def wrapped(self: Any, *args: Any, _call: Any = call, **kwargs: Any) -> Any:
            t0 = time.perf_counter_ns()
            try:
                return _call(self, *args, **kwargs)
            finally:
                acc["ns"] += time.perf_counter_ns() - t0
                acc["n"] += 1
        setattr(runtime.Follower, name, wrapped)
    return acc


def measure(guarded: Callable[[], Any], plain: Callable[[], Any], acc: dict[str, int]) -> tuple[float, float, int]:
    """Median µs per event of the decisions, and of the whole run's extra time; events per run."""
    per, extra, events = [], [], 0
    for i in range(RUNS):
        acc["ns"] = acc["n"] = 0
        t0 = time.perf_counter_ns()
        guarded()
        t1 = time.perf_counter_ns()
        plain()
        t2 = time.perf_counter_ns()
        events = acc["n"]
        if i >= WARM:
            per.append(acc["ns"] / events)
            extra.append(((t1 - t0) - (t2 - t1)) / events)
    return statistics.median(per) / 1000, statistics.median(extra) / 1000, events


def langgraph(folder: Path, guard_path: Path) -> tuple[Callable[[], Any], Callable[[], Any]]:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    from haltproof.frameworks.langgraph_guard import invoke_guarded
    import react     # type: ignore[import-not-found]
    question = {"messages": [{"role": "user", "content": "What is haltproof?"}]}
    search = {"name": "search", "args": {"query": "haltproof"}, "id": "call_1"}

    def graph() -> Any:
        return react.build_graph(GenericFakeChatModel(messages=iter([AIMessage("", tool_calls=[search]),
                                                                      AIMessage("Here is the answer.")])))
    guard = Guard.load(guard_path)
    return (lambda: invoke_guarded(graph(), question, guard, {"recursion_limit": 4}),
            lambda: graph().invoke(question, {"recursion_limit": 4}))


def pydantic_ai(folder: Path, guard_path: Path) -> tuple[Callable[[], Any], Callable[[], Any]]:
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    from haltproof.frameworks.pydantic_ai_guard import labels_of, run_guarded
    import weather   # type: ignore[import-not-found]
    labels = labels_of("weather.yaml")
    guard = Guard.load(guard_path)

    def model() -> FunctionModel:
        left = iter([ModelResponse(parts=[ToolCallPart("get_forecast", {"city": "Paris"})]),
                     ModelResponse(parts=[TextPart("Sunny.")])])
        return FunctionModel(lambda messages, info: next(left))
    return (lambda: asyncio.run(run_guarded(weather.agent, "q", guard, labels=labels, approve=lambda d: True,
                                            model=model(), usage_limits=weather.LIMITS)),
            lambda: asyncio.run(weather.agent.run("q", model=model(), usage_limits=weather.LIMITS)))


def openai_agents(folder: Path, guard_path: Path) -> tuple[Callable[[], Any], Callable[[], Any]]:
    from agents import RunConfig, Runner, set_tracing_disabled
    from agents.testing import ScriptedModel, assistant_message, function_call

    from haltproof.frameworks.openai_agents_guard import labels_of, run_guarded
    import support   # type: ignore[import-not-found]
    set_tracing_disabled(True)
    labels = labels_of("support.yaml")
    guard = Guard.load(guard_path)

    class Payments:
        async def refund(self, customer_id: str, order_id: str) -> str:
            return "R-1"

    def options() -> dict[str, Any]:
        steps = [[function_call("transfer_to_refund_agent", {}, call_id="handoff")],
                 [function_call("issue_refund", {"order_id": "A-17"}, call_id="refund")],
                 [assistant_message("Your refund is on its way.")]]
        return {"max_turns": 4, "context": support.SupportContext("C-42", Payments()),
                "run_config": RunConfig(model=ScriptedModel(steps), tracing_disabled=True)}
    return (lambda: asyncio.run(run_guarded(support.triage_agent, "q", guard, labels=labels, **options())),
            lambda: asyncio.run(Runner.run(support.triage_agent, "q", **options())))


CASES = {"langgraph": ("react.yaml", {"recursion_limit": 4}, False, langgraph),
         "pydantic_ai": ("weather.yaml", {"request_limit": 4, "tool_calls_limit": 2, "retries": 2}, True, pydantic_ai),
         "openai_agents": ("support.yaml", {"max_turns": 4}, False, openai_agents)}


def main() -> int:
    acc = timed_decisions()
    with tempfile.TemporaryDirectory() as d:
        for name, (spec, pins, violated, runs) in CASES.items():
            folder = EXAMPLES / name
            guard_path = Path(d) / f"{name}.json"
            with in_example(folder):
                write_guard(spec, pins, str(guard_path), allow_violated=violated)
                decision, extra, events = measure(*runs(folder, guard_path), acc)
            print(f"{name:14} decision {decision:6.1f} µs, whole hook {extra:7.1f} µs per event ({events} events a run)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
