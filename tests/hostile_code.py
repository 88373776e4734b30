"""Test-only bound code that fights the check it runs in: it ends the process, swallows haltproof's
interrupts, installs its own SIGALRM handler, does its slow work in `__del__`, prints to stdout,
changes the working directory, or never returns from close(). Nothing here ships.

Each misbehaves from the second step on, once a failure was counted (as tests/stuck_code.py), so a
check first explores a few states. Code that holds on does so for FIGHT seconds at most and then
returns: if haltproof failed to stop it, the test fails instead of hanging.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import Any

from haltproof.cli import supervise
from haltproof.harness import loop
from haltproof.harness.loop_binding import LoopDemoAdapter

from live_agents import Agent, ReplayedAdapter

State = dict[str, Any]
FIGHT = 20.0        # seconds the stubborn code below holds on before it gives up by itself


def _late(state: State) -> bool:
    return state["steps"] >= 2 and state["failures"] > 0


def _exits(state: State) -> str:
    if _late(state):
        sys.exit(0)
    return loop.decide(state)


def _os_exits(state: State) -> str:
    if _late(state):
        os._exit(0)
    return loop.decide(state)


def _hold_on() -> None:
    """A loop that swallows everything, haltproof's interrupts included (a bare except)."""
    end = time.monotonic() + FIGHT
    while time.monotonic() < end:
        try:
            time.sleep(0.05)
        except:     # noqa: E722 -- the point: it swallows BaseException too
            pass


def _swallows(state: State) -> str:
    if _late(state):
        _hold_on()
    return loop.decide(state)


def _own_alarm(state: State) -> str:
    """Installs its own SIGALRM handler (haltproof's then never fires), then takes its time."""
    if _late(state):
        signal.signal(signal.SIGALRM, lambda *_: None)
        time.sleep(FIGHT)
    return loop.decide(state)


class _Slow:
    """Garbage whose finalizer busy-waits: an interrupt that lands there is ignored by Python."""

    def __del__(self) -> None:
        end = time.monotonic() + 0.05
        while time.monotonic() < end:
            pass


def _busy_garbage(state: State) -> str:
    if _late(state):
        end = time.monotonic() + FIGHT
        while time.monotonic() < end:
            _Slow()
    return loop.decide(state)


def _in_c(state: State) -> str:
    """A loop inside C for many seconds (builtin sum over a range: about 15 s at 15 ns an item)
    that never lets Python run: no signal handler, no other thread; only ending the process stops
    it. It must outlast the supervisor's silence (the call deadline + GRACE + SILENT) on any machine."""
    if _late(state):
        time.sleep(0.5)         # Python runs: the supervisor hears what this code is doing
        sum(range(10**9))
    return loop.decide(state)


def _prints(state: State) -> str:
    """Prints (when HALTPROOF_TEST_PRINT is set), through sys.stdout and straight to fd 1."""
    if os.environ.get("HALTPROOF_TEST_PRINT"):
        print(f"decide at step {state['steps']}")
        sys.stdout.flush()
        os.write(1, b"and straight to fd 1\n")
    return loop.decide(state)


def _moves(state: State) -> str:
    """Changes the working directory for good, in the supervised child only (never in pytest's
    own process: tests/project/test_parallel_safety.py)."""
    if _late(state) and supervise.supervised_child():
        os.chdir(os.environ["HALTPROOF_TEST_ELSEWHERE"])
        with open("moved", "w"):       # here now: a file of its own, where it went
            pass
    return loop.decide(state)


class Exits(LoopDemoAdapter):
    decide = staticmethod(_exits)


class OsExits(LoopDemoAdapter):
    decide = staticmethod(_os_exits)


class Swallows(LoopDemoAdapter):
    decide = staticmethod(_swallows)


class OwnAlarm(LoopDemoAdapter):
    decide = staticmethod(_own_alarm)


class BusyGarbage(LoopDemoAdapter):
    decide = staticmethod(_busy_garbage)


class InC(LoopDemoAdapter):
    decide = staticmethod(_in_c)


class Prints(LoopDemoAdapter):
    decide = staticmethod(_prints)


class Moves(LoopDemoAdapter):
    decide = staticmethod(_moves)


class ExitsOnClose(ReplayedAdapter):
    """A live adapter (tests/live_agents.py's agent loop) whose close() calls sys.exit(0)."""

    def close(self, live: Agent) -> None:
        sys.exit(0)


class HangsOnClose(ReplayedAdapter):
    """A close() that waits for something that never comes (a task it did not cancel, say); the
    first time only, so that a check that does not stop it goes on after FIGHT seconds."""

    hung = False

    def close(self, live: Agent) -> None:
        if not HangsOnClose.hung:
            HangsOnClose.hung = True
            time.sleep(FIGHT)


class SwallowsOnClose(ReplayedAdapter):
    """A close() that never returns and swallows every interrupt."""

    hung = False

    def close(self, live: Agent) -> None:
        if not SwallowsOnClose.hung:
            SwallowsOnClose.hung = True
            _hold_on()


class SwallowsOnCloseAfterARaise(ReplayedAdapter):
    """A step with tool=fail raises, and the close() of the run it leaves swallows every interrupt:
    the call haltproof then ends is a close after a raising transition, which names it."""

    hung = False

    def step(self, live: Agent, action: str, choices: dict[str, Any]) -> str:
        if choices["tool"] == "fail":
            live.broken = True          # type: ignore[attr-defined]
            raise RuntimeError("the tool broke the run")
        return super().step(live, action, choices)

    def close(self, live: Agent) -> None:
        if getattr(live, "broken", False) and not SwallowsOnCloseAfterARaise.hung:
            SwallowsOnCloseAfterARaise.hung = True
            _hold_on()
