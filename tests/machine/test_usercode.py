"""haltproof.machine.usercode: the user's code under the check's deadline, and nothing else.

The stuck adapters and models of tests/stuck_code.py are checked end to end in
test_binding.py and test_pymodel.py (in subprocesses); these are the mechanism's own
promises, with code that returns by itself if the mechanism fails (a 5 s sleep), so a
failure is a failure, not a stuck test run.
"""

from __future__ import annotations

import signal
import threading
import time

import pytest

from haltproof.machine import usercode
from haltproof.machine.usercode import OutOfTime


def test_without_a_deadline_user_code_is_a_plain_call():
    assert not usercode.active() and usercode.remaining() is None
    assert usercode.run(lambda a, b=0: a + b, 1, b=2) == 3


def test_the_deadline_interrupts_a_sleep_in_user_code():
    with usercode.deadline(0.2):
        with pytest.raises(OutOfTime):
            usercode.run(time.sleep, 5)
        assert usercode.remaining() == 0.0
        with pytest.raises(OutOfTime):          # once passed, user code is not entered again
            usercode.run(lambda: "never")
    assert not usercode.active()


def test_the_alarm_never_interrupts_haltproof_own_code():
    """Past the deadline outside user code (the engine's bookkeeping) nothing is raised:
    only the next call into user code stops."""
    with usercode.deadline(0.05):
        time.sleep(0.3)                         # the alarm (and its repeats) fire here
        with pytest.raises(OutOfTime):
            usercode.run(lambda: "never")


def test_user_code_that_swallows_the_interrupt_is_interrupted_again():
    def stubborn() -> None:
        try:
            time.sleep(5)
        except BaseException:                   # the first OutOfTime, swallowed
            pass
        time.sleep(5)                           # a repeat of the alarm ends this one
    with usercode.deadline(0.1):
        with pytest.raises(OutOfTime):
            usercode.run(stubborn)


def test_the_previous_alarm_handler_and_timer_are_put_back():
    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *_: fired.append(True))
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.4)
        with usercode.deadline(10):
            usercode.run(time.sleep, 0.1)
        assert signal.getsignal(signal.SIGALRM) is not usercode._on_alarm
        left, interval = signal.getitimer(signal.ITIMER_REAL)
        assert 0 < left < 0.4 and interval == 0
        time.sleep(0.6)
        assert fired == [True]                  # the caller's own timer still fired, once
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_nested_deadlines_the_earlier_one_wins():
    with usercode.deadline(10):
        with usercode.deadline(0.1):
            with pytest.raises(OutOfTime):
                usercode.run(time.sleep, 5)
        assert usercode.remaining() > 5         # the outer deadline is back, not passed
        assert usercode.run(lambda: "runs") == "runs"
        with usercode.deadline(100):            # later than the outer one: changes nothing
            assert 5 < usercode.remaining() <= 10


def test_off_the_main_thread_a_worker_is_given_up_at_the_deadline():
    out = {}

    def check() -> None:
        with usercode.deadline(0.2):
            try:
                usercode.run(time.sleep, 5)
            except OutOfTime:
                out["stopped"] = True
    t = threading.Thread(target=check)
    t.start()
    t.join(10)
    assert out.get("stopped") is True


def test_off_the_main_thread_results_and_exceptions_come_back():
    out = {}

    def check() -> None:
        with usercode.deadline(10):
            out["value"] = usercode.run(lambda x: x * 2, 21)
            try:
                usercode.run(lambda: {}["missing"])
            except KeyError as exc:
                out["error"] = exc.args
    t = threading.Thread(target=check)
    t.start()
    t.join(10)
    assert out == {"value": 42, "error": ("missing",)}


def test_the_note_keeps_the_innermost_description():
    stop = OutOfTime()
    stop.note("running the bound code for action a from state x=1")
    stop.note("loading the model M")
    assert stop.doing == "running the bound code for action a from state x=1" and str(stop) == stop.doing


@pytest.mark.parametrize("seconds", [1e10, 1e300])
def test_a_timeout_no_timer_can_hold_bounds_nothing(cli, seconds):
    """--timeout takes any finite number; past threading.TIMEOUT_MAX (centuries) no timer
    or wait can be armed for it (setitimer overflowed: an internal error, exit 4), and it
    cannot pass while the process runs: the check runs as without one."""
    from conftest import LOOP_DEMO
    with usercode.deadline(seconds):
        assert not usercode.active()
        assert usercode.run(lambda: 7) == 7
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    ran = cli("check", LOOP_DEMO, "--timeout", repr(seconds), "--quiet", "-p", "max_steps=2")
    assert (ran.code, ran.err) == (0, "")
    assert ran.out.endswith("-> proved\n")
