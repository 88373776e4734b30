"""Running the user's own code (bound adapters, Python models) under the check's deadline.

`--timeout` is a wall-clock bound on the whole check, and the user's code is the one
part of a check haltproof does not control: a `step` that loops forever or sleeps for
an hour would otherwise hold the check past any timeout. So every call into user code
goes through `run`, inside the `deadline` the check sets:

- In the main thread (where Python delivers signals), `deadline` arms a real-time
  interval timer (SIGALRM). Its handler raises `OutOfTime`, a BaseException (a user's
  `except Exception` cannot swallow it), but only when the interrupted frame is inside
  a `run` call (its frames are on the stack), where the worst it can interrupt is a
  call whose result is then thrown away. Anywhere else (the engine's own bookkeeping,
  which must not be left half-updated) it only marks the deadline as passed; the engine sees the
  deadline on its own clock, and the next call into user code raises at once. A signal
  interrupts both pure-Python loops and blocking calls such as `time.sleep`, and costs
  nothing per call; after the deadline the timer repeats, in case user code swallowed
  the first `OutOfTime` with a bare `except`. The previous SIGALRM handler and timer are
  restored afterwards (a timer that would have fired meanwhile fires at once).
- In any other thread (signals unavailable), `run` calls the user's function in a
  daemon worker thread and waits for it until the deadline. A worker still running
  then is abandoned: it cannot keep the process alive (a daemon), and an asynchronous
  `OutOfTime` is set in it, which ends a pure-Python loop at once (so it does not keep
  eating the CPU) and a blocking call when it returns.

Without a deadline `run` is a plain call. Code that never returns to Python (a C loop
that ignores signals) cannot be interrupted by either; the worker thread still lets a
check in another thread go on.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from .text import assignments_text

REPEAT = 0.5      # seconds between further interrupts once the deadline has passed


class OutOfTime(BaseException):
    """The check's deadline passed while the user's code was running.

    `doing` says what that code was doing, as a phrase that follows "while" ("importing
    the bound module m", "running RetryLoop.call_tool (outcome=ok) from state ..."); the
    innermost boundary that knows sets it."""

    def __init__(self, doing: str | None = None):
        super().__init__(doing)
        self.doing = doing

    def note(self, doing: str) -> None:
        """Say what the user's code was doing, unless a more precise boundary already did."""
        if self.doing is None:
            self.doing = doing
            self.args = (doing,)


class _State(threading.local):
    deadline: float | None = None      # time.monotonic() value; None: no deadline
    expired: bool = False
    alarm: bool = False                # SIGALRM armed for this (the main) thread


_state = _State()


def active() -> bool:
    """Whether a deadline bounds user code in this thread."""
    return _state.deadline is not None


def remaining() -> float | None:
    """Seconds left before the deadline (0 once it has passed), None without one."""
    if _state.deadline is None:
        return None
    if _state.expired:
        return 0.0
    return max(0.0, _state.deadline - time.monotonic())


@contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    """Bound the user code run inside to `seconds` from now (None: no bound).

    Nested, the earlier deadline wins. A bound longer than any wait the platform can make
    (`threading.TIMEOUT_MAX`, centuries) cannot pass while the process runs: it bounds
    nothing, and no timer could be armed for it."""
    st = _state
    if seconds is None or seconds > threading.TIMEOUT_MAX:
        yield
        return
    end = time.monotonic() + seconds
    if st.deadline is not None and st.deadline <= end:
        yield
        return
    saved = (st.deadline, st.expired, st.alarm)
    outer = st.deadline is not None
    st.deadline, st.expired = end, False
    restore = None
    if outer:
        if st.alarm:
            signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-6), REPEAT)
    else:
        restore = _arm(seconds)
        st.alarm = restore is not None
    try:
        yield
    finally:
        if restore is not None:
            restore()
        st.deadline, st.expired, st.alarm = saved
        if outer and st.alarm and st.deadline is not None:     # outer: the restored deadline is set
            left = st.deadline - time.monotonic() if not st.expired else 0.0
            signal.setitimer(signal.ITIMER_REAL, max(left, 1e-6), REPEAT)


def _arm(seconds: float) -> Callable[[], None] | None:
    """Install the SIGALRM handler and timer; return what undoes it (None: not possible here)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        return None
    previous = signal.getsignal(signal.SIGALRM)
    if previous is None:          # installed from C: we could not put it back
        return None
    started = time.monotonic()
    signal.signal(signal.SIGALRM, _on_alarm)
    old_delay, old_interval = signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-6), REPEAT)

    def restore() -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if old_delay > 0:
            left = old_delay - (time.monotonic() - started)
            signal.setitimer(signal.ITIMER_REAL, max(left, 1e-6), old_interval)
    return restore


def _on_alarm(signum: int, frame: Any) -> None:
    _state.expired = True
    if _in_user_code(frame):
        raise OutOfTime()


def _in_user_code(frame: Any) -> bool:
    """Whether `frame` runs inside a `run` call (in `_call` or below it): the user's code,
    or haltproof's thin wrapping of it, never the engine's own state."""
    while frame is not None:
        if frame.f_code is _CALL:
            return True
        frame = frame.f_back
    return False


def running(what: str, choices: dict[str, Any], state: dict[str, Any]) -> str:
    """What the user's code was doing when the deadline passed, for the report:
    `running the bound code for action decide (obs=failed) from state steps=1 phase=observed`."""
    chosen = assignments_text(choices, ", ")
    return f"running {what}{f' ({chosen})' if chosen else ''} from state " + assignments_text(state)


def run(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`fn(*args, **kwargs)`, the user's code, bounded by the deadline in force (if any)."""
    st = _state
    if st.deadline is None:
        return fn(*args, **kwargs)
    if st.alarm:
        return _call(fn, args, kwargs)
    return _in_worker(fn, args, kwargs, st.deadline)


def _call(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The frame the SIGALRM handler looks for: below it runs user code."""
    if _state.expired:
        raise OutOfTime()
    try:
        return fn(*args, **kwargs)
    except SystemError:
        if _state.expired:      # the alarm's OutOfTime landed inside C code (compile's AST checks), which
            raise OutOfTime() from None     # reports it as "recursion depth mismatch": it is the deadline
        raise


_CALL = _call.__code__


def _in_worker(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], end: float) -> Any:
    left = end - time.monotonic()
    if _state.expired or left <= 0:
        _state.expired = True
        raise OutOfTime()
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as exc:          # handed to the waiting thread, which raises it
            box["error"] = exc

    worker = threading.Thread(target=work, name="haltproof-user-code", daemon=True)
    worker.start()
    worker.join(left)
    if worker.is_alive():
        _state.expired = True
        _interrupt(worker)
        raise OutOfTime()
    if "error" in box:
        raise box["error"]
    return box["value"]


def _interrupt(worker: threading.Thread) -> None:
    """Raise OutOfTime in an abandoned worker, so a busy loop in it stops eating the CPU."""
    try:
        import ctypes
        assert worker.ident is not None, "the worker was started"
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(worker.ident), ctypes.py_object(OutOfTime))
    except (ImportError, AttributeError):       # not CPython: the daemon thread is left to run
        pass
