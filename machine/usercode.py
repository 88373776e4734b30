"""Running the user's own code (bound adapters, Python models) under the check's deadlines.

The user's code is the one part of a check haltproof does not control: a `step` that loops
forever, or a `close()` that never returns, would otherwise hold the check for ever. So every
call into user code goes through `run` (or `run_as`, which also says what the code is doing),
inside the `deadline` the check sets. A deadline has two bounds, each optional:

- the whole check's (`--timeout`): once it passes, the call running is interrupted with
  `OutOfTime` and no call into user code starts again: the check is incomplete;
- each call's (`--call-timeout`, CALL_TIMEOUT by default): one stretch of user code that
  does not return to haltproof within it is interrupted with `Stuck` (an OutOfTime): a
  finding about the code (the built-in `bound_code`), never a silent hang. A call that
  swallows the interrupt and returns later is still `Stuck`.

How a call is interrupted:
- In the main thread (where Python delivers signals), `deadline` arms a real-time timer
  (SIGALRM) for the earliest of the two. Its handler raises the interrupt, a BaseException
  (a user's `except Exception` cannot swallow it), but only when the interrupted frame is
  inside a `run` call (its frames are on the stack), where the worst it can interrupt is a
  call whose result is then thrown away. Anywhere else (the engine's own bookkeeping, which
  must not be left half-updated) it only marks the deadline as passed; the engine sees the
  deadline on its own clock, and the next call into user code raises at once. A call's
  deadline is re-armed lazily: the timer fires at most about once per call deadline while
  calls return in time, and no call pays a system call. Once something is late the timer
  repeats every REPEAT seconds, in case the user's code swallowed the first interrupt with a
  bare `except`. The previous SIGALRM handler and timer are restored afterwards.
- In any other thread (no signals there), with a whole-check deadline `run` calls the user's
  function in a daemon worker thread and waits for it until the earlier of the two bounds.
  A worker still running then is abandoned: it cannot keep the process alive (a daemon), and
  an asynchronous `OutOfTime` is set in it, which ends a pure-Python loop at once and a
  blocking call when it returns. Without a whole-check deadline, off the main thread, a call
  is a plain call (a thread per call would cost more than most calls).

What no signal can stop (code that swallows every interrupt, replaces the SIGALRM handler,
does its slow work in `__del__` where exceptions are ignored, or loops in C) is stopped from
outside: `NOW` says what the main thread's user code is doing and since when, and the
command line's supervisor (cli/supervise.py) watches it from another thread and ends the
process that runs the check when it is past a deadline.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn, TypeVar

from .text import assignments_text

T = TypeVar("T")
# the clock every deadline is read on, taken once: a test that fakes the engine's clock
# (time.monotonic) must not move the deadlines of the user's code or of its supervisor
_clock = time.monotonic
REPEAT = 0.5          # seconds between further interrupts once a deadline has passed
CALL_TIMEOUT = 60.0   # seconds one call into user code may take by default (--call-timeout)
GRACE = 2.0           # seconds code may run past a deadline, its interrupt ignored, before its process is ended
# What the user's code may raise that is its own failure: any Exception, and SystemExit. A
# `sys.exit(0)` in a step must be a finding about the step, never the check's own exit status
# (a CI gate that passes on nothing). KeyboardInterrupt (the user's Ctrl-C) is not one.
FAILURES = (Exception, SystemExit)


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


class Stuck(OutOfTime):
    """One call into the user's code did not return within the call deadline (`limit`
    seconds, --call-timeout): the code is stuck, or far slower than one call should be."""

    def __init__(self, limit: float, doing: str | None = None):
        super().__init__(doing)
        self.limit = limit

    def __reduce__(self) -> tuple[Any, ...]:      # crosses process boundaries with its limit
        return (Stuck, (self.limit, self.doing))

    def text(self) -> str:
        """What happened, for a finding or a message."""
        return (f"a call into the user's code did not return within --call-timeout {self.limit:g} s"
                + (f" while {self.doing}" if self.doing else ""))


class _State(threading.local):
    deadline: float | None = None      # _clock() value; None: no whole-check deadline
    expired: bool = False
    per_call: float | None = None      # seconds one call may take; None: no call deadline
    alarm: bool = False                # SIGALRM armed for this (the main) thread


_state = _State()


class _Now:
    """What the main thread's user code is doing right now: written by `run` in the main thread,
    read by the supervisor's watchdog thread (so not thread-local)."""

    since: float | None = None                  # _clock() the current stretch of user code began
    doing: Callable[[], str] | None = None      # says what it is, when asked
    late: bool = False                          # the current call ran past its call deadline
    deadline: float | None = None               # the main thread's deadlines, as `_state` holds them
    per_call: float | None = None


NOW = _Now()


def active() -> bool:
    """Whether a whole-check deadline bounds user code in this thread."""
    return _state.deadline is not None


def remaining() -> float | None:
    """Seconds left before the whole-check deadline (0 once it has passed), None without one."""
    if _state.deadline is None:
        return None
    if _state.expired:
        return 0.0
    return max(0.0, _state.deadline - _clock())


def call_limit() -> float | None:
    """The call deadline in force in this thread, in seconds (None: none)."""
    return _state.per_call


def _bounded(seconds: float | None) -> float | None:
    """A bound longer than any wait the platform can make (`threading.TIMEOUT_MAX`, centuries)
    cannot pass while the process runs: it bounds nothing, and no timer could be armed for it."""
    return None if seconds is None or seconds > threading.TIMEOUT_MAX else seconds


@contextmanager
def deadline(seconds: float | None, per_call: float | None = None) -> Iterator[None]:
    """Bound the user code run inside to `seconds` from now, and each call into it to
    `per_call` seconds (None: no such bound). Nested, the earlier deadline and the shorter
    call deadline win."""
    st = _state
    seconds, per_call = _bounded(seconds), _bounded(per_call)
    end = None if seconds is None else _clock() + seconds
    if st.deadline is not None and (end is None or st.deadline <= end):
        end = st.deadline
    if st.per_call is not None and (per_call is None or st.per_call <= per_call):
        per_call = st.per_call
    if (end, per_call) == (st.deadline, st.per_call):
        yield
        return
    saved = (st.deadline, st.expired, st.per_call, st.alarm)
    outer = st.deadline is not None or st.per_call is not None
    if end != st.deadline:
        st.deadline, st.expired = end, False
    st.per_call = per_call
    restore = None
    if not outer:
        restore = _arm()
        st.alarm = restore is not None
    elif st.alarm:
        _rearm()
    _publish()
    try:
        yield
    finally:
        if restore is not None:
            restore()
        st.deadline, st.expired, st.per_call, st.alarm = saved
        _publish()
        if outer and st.alarm:
            _rearm()


def _publish() -> None:
    """Copy the main thread's deadlines where the watchdog reads them."""
    if threading.current_thread() is threading.main_thread():
        NOW.deadline, NOW.per_call = _state.deadline, _state.per_call


def _arm() -> Callable[[], None] | None:
    """Install the SIGALRM handler and timer; return what undoes it (None: not possible here)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        return None
    previous = signal.getsignal(signal.SIGALRM)
    if previous is None:          # installed from C: we could not put it back
        return None
    started = _clock()
    signal.signal(signal.SIGALRM, _on_alarm)
    old_delay, old_interval = signal.setitimer(signal.ITIMER_REAL, _next_alarm(started), REPEAT)

    def restore() -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if old_delay > 0:
            left = old_delay - (_clock() - started)
            signal.setitimer(signal.ITIMER_REAL, max(left, 1e-6), old_interval)
    return restore


def _next_alarm(now: float) -> float:
    """Seconds until the timer must next fire: at the whole-check deadline, or when the call
    running now (or one starting now) would be past its call deadline; soon once late."""
    st = _state
    if st.expired or NOW.late:
        return REPEAT
    due: list[float] = []
    if st.deadline is not None:
        due.append(st.deadline)
    if st.per_call is not None:
        due.append((NOW.since if NOW.since is not None else now) + st.per_call)
    return max(min(due) - now, 1e-6) if due else REPEAT


def _rearm() -> None:
    signal.setitimer(signal.ITIMER_REAL, _next_alarm(_clock()), REPEAT)


def _on_alarm(signum: int, frame: Any) -> None:
    st = _state
    now = _clock()
    if st.deadline is not None and now >= st.deadline:
        st.expired = True
    limit = st.per_call
    if not st.expired and limit is not None and NOW.since is not None and now >= NOW.since + limit:
        NOW.late = True
    _rearm()
    if (st.expired or NOW.late) and _in_user_code(frame):
        raise OutOfTime() if st.expired else Stuck(limit if limit is not None else 0.0)


def _in_user_code(frame: Any) -> bool:
    """Whether `frame` runs inside a `run` call (in `_call` or below it): the user's code,
    or haltproof's thin wrapping of it, never the engine's own state, nor haltproof code the
    user's code called (`shielded`)."""
    while frame is not None:
        if frame.f_code is _CALL:
            return True
        if frame.f_code in _SHIELDED:
            return False
        frame = frame.f_back
    return False


_SHIELDED: set[Any] = set()


def shielded(fn: Callable[..., T]) -> Callable[..., T]:
    """Mark `fn` (a decorator) as haltproof's own code that the user's code may call (writing
    what it prints, say) and that a deadline's interrupt must not cut in half: inside it the
    interrupt waits, as it does in the engine, for the user's code to go on."""
    _SHIELDED.add(fn.__code__)
    return fn


def running(what: str, choices: dict[str, Any], state: dict[str, Any]) -> str:
    """What the user's code was doing when the deadline passed, for the report:
    `running the bound code for action decide (obs=failed) from state steps=1 phase=observed`."""
    chosen = assignments_text(choices, ", ")
    return f"running {what}{f' ({chosen})' if chosen else ''} from state " + assignments_text(state)


def run(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`fn(*args, **kwargs)`, the user's code, bounded by the deadlines in force (if any)."""
    st = _state
    if st.alarm:
        return _call(fn, args, kwargs)
    if st.deadline is None:
        return fn(*args, **kwargs)
    return _in_worker(fn, args, kwargs, st.deadline, st.per_call)


def run_as(doing: Callable[[], str], fn: Callable[[], T]) -> T:
    """`run(fn)`, saying what the code does (`doing()`, a phrase that follows "while"): to the
    OutOfTime it may raise, and to the supervisor's watchdog while it runs."""
    before = NOW.doing
    NOW.doing = doing
    try:
        result: T = run(fn)
        return result
    except OutOfTime as stop:
        stop.note(doing())
        raise
    finally:
        NOW.doing = before


def load_as(doing: Callable[[], str], fn: Callable[[], T]) -> T:
    """`run_as` for loading the user's code (importing its module, creating its adapter or
    model): bounded by the whole check's deadline only, not by the call deadline, which is for
    the calls a check makes again and again (a first import of a large framework can take long)."""
    st = _state
    saved = st.per_call
    st.per_call = None
    _publish()
    try:
        return run_as(doing, fn)
    finally:
        st.per_call = saved
        _publish()


def _call(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The frame the SIGALRM handler looks for: below it runs user code. Each call is a new
    stretch for the call deadline; when a nested one returns, the outer stretch starts again."""
    st = _state
    if st.expired:
        raise OutOfTime()
    outer = NOW.since
    NOW.since, NOW.late = _clock(), False
    try:
        result = fn(*args, **kwargs)
    except SystemError:
        if st.expired or NOW.late:      # the alarm's interrupt landed inside C code (compile's AST checks),
            raise _late() from None     # which reports it as "recursion depth mismatch": it is the deadline
        raise
    except Stuck:
        raise
    except OutOfTime:
        if NOW.late and not st.expired:     # an OutOfTime the user's code kept from another call
            raise _late() from None
        raise
    finally:
        late = NOW.late
        NOW.since, NOW.late = (_clock() if outer is not None else None), False
    if late or st.expired:     # it swallowed the interrupt and returned after all: still too late
        raise OutOfTime() if st.expired else Stuck(st.per_call if st.per_call is not None else 0.0)
    return result


def _late() -> OutOfTime:
    st = _state
    return OutOfTime() if st.expired else Stuck(st.per_call if st.per_call is not None else 0.0)


_CALL = _call.__code__


def _in_worker(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], end: float,
               per_call: float | None) -> Any:
    left = end - _clock()
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
    worker.join(left if per_call is None else min(left, per_call))
    if worker.is_alive():
        _interrupt(worker)
        if per_call is not None and _clock() < end:
            raise Stuck(per_call)
        _state.expired = True
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


# What watches this process from another thread (cli/supervise.py, the -j workers of
# explorer/parallel.py): what the main thread's user code is doing, whether it has ignored a
# deadline's interrupt, and a word before it ends the process itself.

def doing_now() -> str | None:
    """What the main thread's user code is doing now (None: it runs none)."""
    describe = NOW.doing
    if NOW.since is None:
        return None
    try:
        return describe() if describe is not None else "running the user's code"
    except Exception:       # the main thread changes what it reads meanwhile: say less
        return "running the user's code"


def overdue(grace: float = GRACE) -> tuple[str, str | None] | None:
    """("timeout" or "stuck", what the code is doing) when the main thread's user code has run
    `grace` seconds past the whole check's deadline or its call's deadline: it ignored the
    interrupt, and only ending its process stops it. None otherwise."""
    since, deadline, per_call, now = NOW.since, NOW.deadline, NOW.per_call, _clock()
    if since is None:
        return None
    if deadline is not None and now > deadline + grace:
        return "timeout", doing_now()
    if per_call is not None and now > since + per_call + grace:
        return "stuck", doing_now()
    return None


def ignored(kind: str, doing: str | None, *, timeout: float | None, limit: float | None, process: str,
            why: str = "it ignored haltproof's interrupt") -> str:
    """What happened when code outran a deadline (`kind` as `overdue` says, the deadlines in
    seconds when known) and `process` was ended for it."""
    what = f" while {doing}" if doing else ""
    head = (f"--timeout{f' {timeout:g} s' if timeout is not None else ''} reached{what}" if kind == "timeout"
            else f"a call into the user's code did not return within --call-timeout"
                 f"{f' {limit:g} s' if limit is not None else ''}{what}")
    return f"{head}; {why}, so haltproof ended {process}"


def tell_exits(tell: Callable[[str, str | None], None]) -> Callable[[int], NoReturn]:
    """Make `os._exit(n)` in this process (the user's code ending it at once, which no exception
    stops) first `tell("os._exit(n)", doing_now())`. Returns the real os._exit, for haltproof's
    own end of the process. Only for a process that ends with the check (a supervised child, a
    worker); a process the user's code forks from it ends untold."""
    real = os._exit
    me = os.getpid()

    def exiting(status: int) -> NoReturn:
        if os.getpid() == me:
            tell(f"os._exit({status})", doing_now())
        real(status)
    os._exit = exiting
    return real
