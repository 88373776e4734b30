"""frameworks/paused.py: a framework's run paused at its model call, for frameworks haltproof has
no integration for. examples/autogen_style binds an AutoGen-style assistant (a stand-in:
AutoGen is not installed) with `PausedAdapter` in 20 lines; its numbers are worked out by hand
from assistant.py: `max_tool_iterations` rounds of tool calls, then one more model call to
reflect on them, so at most max_tool_iterations + 1 model calls.
"""

from __future__ import annotations

import asyncio
import gc

import pytest

from haltproof.explorer.check import check_spec
from haltproof.explorer.options import Options
from haltproof.frameworks.paused import PausedRun
from haltproof.machine.live import Driver
from haltproof.machine.spec import load_spec

from conftest import ROOT
from framework_helpers import fresh_modules, maxima

EXAMPLE = ROOT / "examples" / "autogen_style"


@pytest.fixture(autouse=True)
def _fresh_modules(monkeypatch):
    with fresh_modules(monkeypatch, ("assistant", "adapter")):
        yield


@pytest.mark.verdict
def test_an_autogen_style_agent_is_checked_through_its_model_client() -> None:
    runs = check_spec(load_spec(EXAMPLE / "assistant.yaml"), Options())
    assert [(r.params["max_tool_iterations"], r.result, r.as_expected, r.stats["states"]) for r in runs] == [
        (1, "violated", True, 4), (2, "violated", True, 6), (3, "violated", True, 8)]
    assert [maxima(r) for r in runs] == [{"most_model_calls": n + 1} for n in (1, 2, 3)]
    doc = (ROOT / "docs" / "how-to" / "other-frameworks.md").read_text()
    assert "```python\n" + (EXAMPLE / "adapter.py").read_text() + "```" in doc
    assert "cd examples/autogen_style && haltproof check assistant.yaml\n" in doc
    assert "States per run (1 to 3): 4, 6, 8." in doc
    assert len((EXAMPLE / "adapter.py").read_text().splitlines()) <= 25     # "about 20 lines" (issue 27)
    broken = {p.name: p for p in runs[0].properties}["model_calls_within_the_limit"]
    assert [(s.choices.get("model"), s.state["calls"], s.state["status"]) for s in broken.trace.steps] == [
        (None, 0, "running"), ("search", 1, "running"), ("search", 2, "done")]   # the reflection ends it


async def _loop(model, rounds: int = 2):
    """A framework's run in miniature: ask the model `rounds` times, return what it said last."""
    said = None
    for i in range(rounds):
        said = await model(f"request {i}")
    return said


def test_a_paused_run_answers_one_model_call_at_a_time_until_it_returns() -> None:
    async def main() -> list:
        run = await PausedRun.start(_loop)
        seen = [(run.request, run.calls, run.done)]
        await run.answer("first")
        seen.append((run.request, run.calls, run.done))
        await run.answer("second")
        seen.append((run.result, run.calls, run.done))
        with pytest.raises(RuntimeError, match="^no model call is waiting for an answer: the run has already "
                                               "returned$"):
            await run.answer("third")
        return seen
    assert asyncio.run(main()) == [("request 0", 0, False), ("request 1", 1, False), ("second", 2, True)]


def test_an_exception_as_the_answer_is_raised_by_the_model_call_and_what_the_run_raises_comes_out() -> None:
    async def main() -> str:
        run = await PausedRun.start(_loop)
        with pytest.raises(TimeoutError, match="^the model timed out$"):
            await run.answer(TimeoutError("the model timed out"))
        return run.ended()
    assert asyncio.run(main()) == "raised TimeoutError"


def test_a_paused_run_haltproof_drops_is_cancelled() -> None:
    """The run's task holds its model calls, never the PausedRun: dropping the run cancels its task."""
    driver = Driver()
    try:
        run = driver.call(PausedRun.start, _loop)
        task = run.task
        del run
        gc.collect()
        driver.call(asyncio.sleep, 0)
        assert task.cancelled()
    finally:
        driver.close()
