"""A command that runs the user's code runs in a child process that the command can stop.

Bound adapters, Python models and framework declarations are the user's code, run inside the
check. machine/usercode.py interrupts it at the deadlines with an exception, but code can keep
a process from ever returning in ways no exception stops: it swallows the interrupt (a bare
`except:`), installs its own SIGALRM handler, does its slow work in `__del__` (where Python
ignores exceptions), loops in C, or ends the process itself (`os._exit(0)`, a crash: a CI gate
that read exit 0 from a check that never ran). So when a spec runs code, the command runs in
a child process (`supervised`), and this process, the supervisor, only watches it:

- The child is a fork (cheap, and it keeps everything this process set up), in a process group
  of its own that its `-j` workers share, with stdin from /dev/null. Its stdout goes to stderr
  (fd 1 and `sys.stdout`): whatever the user's code prints can never corrupt a report, and
  the reports reach stdout only through `write_stdout` (cli/common.py), as messages to the
  supervisor. The child's stderr comes here as messages too.
- A watchdog thread in the child tells the supervisor every BEAT seconds that the child is
  alive and what its user code is doing (usercode.NOW). When that code has run GRACE seconds
  past the whole check's deadline, or past its call's deadline (the interrupt had its chance
  and was ignored), it says so, and the supervisor ends the child's process group.
- The child says when it is done, with the command's exit code. A child that ends without
  saying so ended in the user's code (os._exit, a signal): that is a `bound_code` finding, exit
  1, never the child's own exit status. A child that stops sending anything for longer than
  the deadlines allow (code in C that never lets Python run) is ended too.
- `haltproof check` tells the supervisor its planned runs and each run as it finishes; when
  the child is ended or ends early, the report is written here from those, with the runs not
  finished `incomplete` and the run at hand saying why (cli/check.py `stopped_report`).

Specs with no `bind:`, `framework:` or Python model run no user code: their commands run in
this process, as before, and pay nothing for this.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import threading
import time
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, Pipe
from pathlib import Path
from typing import Any, NoReturn

from haltproof.machine import usercode
from haltproof.machine.yamlpos import YMap, load_yaml

from .common import report_to

# the clock every deadline is read on, taken once: a test that fakes the engine's clock
# (time.monotonic) must not move the deadlines of the user's code or of its supervisor
_clock = time.monotonic
GRACE = usercode.GRACE      # seconds code may run past a deadline, its interrupt ignored, before it is ended
BEAT = 0.2      # seconds between the child's heartbeats
SILENT = 10.0   # a child that sends nothing this long past a deadline is ended (code in C holding Python)
ENV = "HALTPROOF_IN_PROCESS"    # set to 1: run the user's code in haltproof's own process (debugging)


@dataclass(frozen=True)
class Ending:
    """How a supervised child ended without finishing its command.

    kind: "timeout" (the whole check's deadline passed in code that ignored its interrupt),
    "stuck" (one call ran past the call deadline and ignored its interrupt), "died" (the process
    ended in the user's code) or "silent" (the process stopped answering: something holds Python).
    `reason` says what happened, as a run's stop reason."""

    kind: str
    reason: str

    @property
    def finding(self) -> bool:
        """Whether it is a finding about the code (bound_code) rather than an incomplete check."""
        return self.kind in ("stuck", "died")

    @property
    def text(self) -> str:
        """The line on stderr, after "haltproof: "."""
        return f"{'bound_code' if self.finding else 'incomplete'}: {self.reason}"


class Partial:
    """What a supervised `check` sent before it ended: its planned runs (as the report writes a
    run never finished) and every run finished, as report dicts by their index in the plan."""

    def __init__(self) -> None:
        self.planned: list[dict[str, Any]] = []
        self.finished: dict[int, dict[str, Any]] = {}


# ---------------------------------------------------------------- whether to supervise

_TOP_KEY = re.compile(r"""^["']?(bind|framework)["']?[ \t]*:""", re.MULTILINE)


def involves_code(spec: Path | str) -> bool:
    """Whether checking `spec` runs the user's code: a Python model (`module:Class`), or a YAML
    file that binds code (`bind:`) or declares a framework app (`framework:`). A file that cannot
    be read or parsed runs nothing: loading it reports the problem. A top-level key starts its
    line, so a look at the lines decides a spec written in block style (parsing a seed spec
    takes 60 ms); one written as a flow mapping (`{...}`, JSON) is parsed."""
    if isinstance(spec, str) and not Path(spec).exists():
        return True
    try:
        text = Path(spec).read_text(encoding="utf-8")
        if _TOP_KEY.search(text):
            return True
        if not text.lstrip().startswith("{"):
            return False
        top = load_yaml(text, str(spec), lambda _: True)     # only the top level matters here
    except Exception:        # any problem is reported when the spec is loaded, in this process
        return False
    return isinstance(top, YMap) and ("bind" in top or "framework" in top)


def wanted(specs: Sequence[Path | str]) -> bool:
    """Whether a command over `specs` runs supervised: some spec runs code, and the user did not
    ask for the code to run in this process (HALTPROOF_IN_PROCESS=1) or this platform has no fork."""
    if os.environ.get(ENV, "") not in ("", "0") or not hasattr(os, "fork"):
        return False
    return any(involves_code(s) for s in specs)


# ---------------------------------------------------------------- the child's side

class _Channel:
    """The child's line to the supervisor: whole messages, one writer at a time. A deadline's
    interrupt never cuts one short (usercode.shielded: a message half written would garble
    every later one); it comes when the user's code that printed goes on."""

    def __init__(self, conn: Connection):
        self.conn = conn
        self.lock = threading.Lock()

    @usercode.shielded
    def send(self, kind: str, payload: Any) -> None:
        try:
            with self.lock:
                self.conn.send((kind, payload))
        except OSError:         # the supervisor is gone: nobody left to tell
            pass


class _Forward:
    """A text stream whose writes go to the supervisor as messages of one kind (out, err)."""

    def __init__(self, channel: _Channel, kind: str, tty: bool):
        self.channel, self.kind, self.tty = channel, kind, tty
        self.encoding, self.errors = "utf-8", "replace"

    def write(self, text: str) -> int:
        if text:
            self.channel.send(self.kind, str(text))
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return self.tty         # the supervisor's stream's: progress shows on a terminal as before

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return 2


_CHANNEL: _Channel | None = None        # set in a supervised child


def tell(kind: str, payload: Any) -> None:
    """Send the supervisor a message (`plan`, `run`), when this is a supervised child."""
    if _CHANNEL is not None:
        _CHANNEL.send(kind, payload)


def supervised_child() -> bool:
    return _CHANNEL is not None


def _child(conn: Connection, command: Callable[[], int], parent: int, tty: bool) -> NoReturn:
    """The supervised child: set up, run the command, say how it ended, and end."""
    global _CHANNEL
    end = os._exit
    code = 4
    try:
        os.setpgid(0, 0)                # its own group: ended with every process it starts
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)                # no terminal input: a background group reading it would stop
        try:
            os.dup2(2, 1)               # what the user's code writes to fd 1 lands on stderr
        except OSError:                 # stderr is closed: nowhere
            os.dup2(null, 1)
        os.close(null)
        channel = _CHANNEL = _Channel(conn)
        report_to(_Forward(channel, "out", False))
        sys.stdout = sys.stderr = _Forward(channel, "err", tty)
        usercode.tell_exits(lambda how, doing: channel.send("died", (how, doing)))
        sys.unraisablehook = _unraisable
        threading.Thread(target=_watchdog, args=(channel, parent), name="haltproof-watchdog",
                         daemon=True).start()
        code = command()
    except BaseException:       # command() handles everything; this is a last resort
        code = 4
    finally:
        if _CHANNEL is not None:
            _CHANNEL.send("exit", code)
        end(0)


def _unraisable(u: Any) -> None:
    """A deadline's interrupt that landed where Python ignores exceptions (a `__del__`, a
    callback of the garbage collector) is said once in a line, not as a traceback each time: it
    is no error of the code's, and the watchdog ends code that goes on regardless."""
    if not isinstance(u.exc_value, usercode.OutOfTime):
        sys.__unraisablehook__(u)
        return
    if not _NOTED:
        _NOTED.append(True)
        where = (u.object.__qualname__ if isinstance(u.object, types.FunctionType)
                 else type(u.object).__qualname__)
        print(f"haltproof: the deadline's interrupt landed in {where}, where Python ignores it", file=sys.stderr)


_NOTED: list[bool] = []


def _watchdog(channel: _Channel, parent: int) -> None:
    """Beat, and say when the user's code has ignored a deadline's interrupt for GRACE seconds."""
    while True:
        time.sleep(BEAT)
        if os.getppid() != parent:      # the supervisor is gone: take our workers with us
            os.killpg(0, signal.SIGKILL)
        late = usercode.overdue(GRACE)
        if late is not None:
            channel.send("stuck", late)
            return
        channel.send("beat", usercode.doing_now())


# ---------------------------------------------------------------- the supervisor's side

def supervised(command: Callable[[], int], *, timeout: float | None, call_timeout: float | None,
               partial: Partial | None, ended: Callable[[Ending], int], write: Callable[[str], None]) -> int:
    """Run `command` in a supervised child; its exit code, or `ended(how)`'s when the child did
    not finish (after the reason is printed on stderr). `write` puts the child's report on stdout."""
    for stream in (sys.stdout, sys.stderr):     # what is buffered is written once, not by both processes
        if stream is not None:
            stream.flush()
    tty = sys.stderr is not None and sys.stderr.isatty()
    receive, send = Pipe(duplex=False)
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        receive.close()
        _child(send, command, parent, tty)
    try:
        os.setpgid(pid, pid)        # the child does too: whoever is first, it is in its group before any kill
    except OSError:                 # it got there first (or already ended)
        pass
    send.close()
    watch = _Watch(pid, timeout, call_timeout, partial, write)
    try:
        how = watch.follow(receive)
    except BaseException:       # Ctrl-C (or a bug here): the child must not live on
        _end(pid)
        raise
    finally:
        receive.close()
    if how is None:
        return watch.code
    if sys.stderr is not None:
        print(f"haltproof: {how.text}", file=sys.stderr)
    return ended(how)


class _Watch:
    """The supervisor's loop over one child's messages."""

    def __init__(self, pid: int, timeout: float | None, call_timeout: float | None, partial: Partial | None,
                 write: Callable[[str], None]):
        self.pid, self.partial, self.write = pid, partial, write
        self.started = _clock()
        self.end = None if timeout is None else self.started + timeout
        self.call_timeout = call_timeout
        self.heard = self.started
        self.doing: str | None = None
        self.died: tuple[str, str | None] | None = None     # what os._exit said
        self.status: int | None = None      # the child's wait status, once reaped
        self.timeout = timeout
        self.code = 4

    def follow(self, conn: Connection) -> Ending | None:
        """Messages until the child ends; None when it finished its command (`code` holds its exit code)."""
        while True:
            if conn.poll(BEAT):
                try:
                    kind, payload = conn.recv()
                except (EOFError, OSError):
                    return self._gone()
                self.heard = _clock()
                ending = self._take(kind, payload)
                if ending is not None or kind == "exit":
                    _end(self.pid)
                    return ending
            elif self._silent():
                _end(self.pid)
                return self._unanswered()
            else:
                self.status = _exited(self.pid)
                if self.status is not None:
                    return self._gone()

    def _take(self, kind: str, payload: Any) -> Ending | None:
        if kind == "out":
            self.write(payload)
        elif kind == "err" and sys.stderr is not None:
            sys.stderr.write(payload)
            sys.stderr.flush()
        elif kind == "beat":
            self.doing = payload or self.doing
        elif kind == "plan" and self.partial is not None:
            self.partial.planned = payload
        elif kind == "run" and self.partial is not None:
            index, run = payload
            self.partial.finished[index] = run
        elif kind == "died":
            self.died = payload
        elif kind == "stuck":
            how, doing = payload
            return self._stopped(how, doing or self.doing)
        elif kind == "exit":
            self.code = payload
        return None

    def _past_deadline(self) -> bool:
        return self.end is not None and _clock() > self.end

    def _silent(self) -> bool:
        """Whether the child has said nothing for longer than anything it runs may take."""
        quiet = _clock() - self.heard
        if self._past_deadline():
            assert self.end is not None, "past a deadline there is one"
            return _clock() > self.end + GRACE and quiet > SILENT
        return self.call_timeout is not None and quiet > self.call_timeout + GRACE + SILENT

    def _stopped(self, how: str, doing: str | None) -> Ending:
        return Ending(how, usercode.ignored(how, doing, timeout=self.timeout, limit=self.call_timeout,
                                            process="the process running it"))

    def _unanswered(self) -> Ending:
        """The child said nothing for longer than anything may take: something holds Python (code
        in C that never lets it run). Whose code cannot be told, so it is no finding: incomplete."""
        quiet = _clock() - self.heard
        last = f" (last seen {self.doing})" if self.doing else ""
        return Ending("silent", f"the process running the check stopped answering for {quiet:.0f} s{last}: "
                                "something there never lets Python run, so haltproof ended it")

    def _gone(self) -> Ending | None:
        """The child's line closed: it finished (after saying so) or it ended in the user's code."""
        status = self.status if self.status is not None else _reap(self.pid)
        _end(self.pid, reaped=status is not None)
        if self.died is not None:
            how, doing = self.died
        else:
            how, doing = _status_text(status), self.doing
        what = f" while {doing}" if doing else ""
        return Ending("died", f"the user's code ended haltproof's process ({how}){what}; "
                              "nothing after it was checked")


def _status_text(status: int | None) -> str:
    if status is None:
        return "its exit status is unknown"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = str(sig)
        return f"killed by signal {sig}, {name}"
    return f"exit status {os.waitstatus_to_exitcode(status)}"


def _exited(pid: int) -> int | None:
    """The child's wait status if it has ended (it is reaped), else None."""
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return 0
    return status if done else None


def _reap(pid: int) -> int | None:
    """Wait (a little) for the child to end; its wait status, None if it would not."""
    deadline = _clock() + GRACE
    while _clock() < deadline:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return None
        if done:
            return status
        time.sleep(0.01)
    return None


def _end(pid: int, reaped: bool = False) -> None:
    """End the child's whole process group (its -j workers too), and reap the child (unless it
    was: then its pid may be another process's by now)."""
    for kill in (os.killpg,) if reaped else (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    if not reaped:
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
