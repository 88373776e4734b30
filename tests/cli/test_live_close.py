"""Every live run a check makes is closed exactly once, whether its transition succeeded or
raised, and the runs still held when the check ends (saved copies, a bound's unexpanded states)
are closed then (issue 26: never a hang).

The adapter's runs each hold a non-daemon thread that ends only in close(): a run left open makes
a check in this process wait for ever at exit (HALTPROOF_IN_PROCESS=1), and a supervised one end
its child with the thread still running. Each run is started and closed under a name written to
CLOSE_LOG: the check runs in a subprocess (and, supervised, in a forked child of it).
"""

from __future__ import annotations

import collections
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import TEST_PATH

pytestmark = [pytest.mark.slow, pytest.mark.verdict]     # a real command line per case

ADAPTERS = '''\
import itertools
import os
import threading

from haltproof.machine.live import LiveAdapter

_names = itertools.count()


def _note(word):
    with open(os.environ["CLOSE_LOG"], "a") as log:
        log.write(word + "\\n")


class OutOfSteps(Exception):
    """Declared in the spec (raises:): the code's own limit."""


class Run:
    """A live run whose worker thread (not a daemon) waits until the run is closed."""

    def __init__(self, steps=0, status="running"):
        self.steps, self.status, self.name = steps, status, f"{os.getpid()}-{next(_names)}"
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.stop.wait)
        self.thread.start()
        _note("start " + self.name)

    def __deepcopy__(self, memo):
        return Run(self.steps, self.status)     # a copy is a run of its own, with its own thread


class Holds(LiveAdapter):
    def start(self, params, init):
        return Run()

    def step(self, live, action, choices):
        if choices["tool"] == "ok":
            live.status = "done"
        elif live.steps >= 2:
            raise OutOfSteps("limit")
        else:
            live.steps += 1

    def abstract(self, live):
        return {"steps": live.steps, "status": live.status}

    def close(self, live):
        live.stop.set()
        live.thread.join()
        _note("close " + live.name)


class Crashes(Holds):
    def step(self, live, action, choices):
        if choices["tool"] == "fail" and live.steps == 1:
            raise RuntimeError("boom")
        return super().step(live, action, choices)


class Copied(Holds):
    copyable = True
'''

SPEC = """\
machine: holds
bind: closing:{adapter}
vars:
  steps: {{type: int, min: 0, max: 2, init: 0}}
  status: {{type: enum, values: [running, done, limit], init: running}}
actions:
  work:
    when: status == running
    choose:
      tool: [ok, fail]
    raises:
      - class: closing.OutOfSteps
        set: {{status: limit}}
terminal: status != running
properties:
  stops:
    terminates: true
"""

CASES = [
    # (a) an undeclared exception in step: a bound_code finding; the replayed run it raised in was left open
    ("Crashes", [], 1, "1 run: 0 proved, 0 violated as expected, 1 failed, 0 incomplete -> violated", 7),
    # (b) a declared exception (raises:) reaches status=limit
    ("Holds", [], 0, "1 run: 1 proved, 0 violated as expected, 0 failed, 0 incomplete -> proved", 12),
    # copies kept for every state were never closed, the check complete or (c) stopped by --max-states
    ("Copied", [], 0, "1 run: 1 proved, 0 violated as expected, 0 failed, 0 incomplete -> proved", 20),
    ("Copied", ["--max-states", "3"], 3,
     "1 run: 0 proved, 0 violated as expected, 0 failed, 1 incomplete -> incomplete", 14),
]


@pytest.mark.parametrize("in_process", ["1", "0"])
@pytest.mark.parametrize("adapter, extra, code, summary, runs", CASES)
def test_every_live_run_is_closed_once_and_the_check_exits(tmp_path: Path, adapter: str, extra: list[str],
                                                           code: int, summary: str, runs: int,
                                                           in_process: str) -> None:
    (tmp_path / "closing.py").write_text(ADAPTERS)
    (tmp_path / "holds.yaml").write_text(SPEC.format(adapter=adapter))
    log = tmp_path / "closes.log"
    env = {**os.environ, "CLOSE_LOG": str(log), "HALTPROOF_IN_PROCESS": in_process,
           "PYTHONPATH": os.pathsep.join([str(tmp_path), TEST_PATH])}
    # before the fix, in this process: no exit at all (the timeout); supervised: runs never closed
    ran = subprocess.run([sys.executable, "-m", "haltproof", "check", "holds.yaml", *extra], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=60)
    assert (ran.returncode, ran.stdout.splitlines()[-1]) == (code, summary), ran.stderr
    words = [line.split() for line in log.read_text().splitlines()]
    started = [name for word, name in words if word == "start"]
    closed = collections.Counter(name for word, name in words if word == "close")
    assert len(started) == runs
    assert closed == collections.Counter(started)       # each run closed, and only once
