"""Live runs: bound code whose state lives inside a running program, reached without rebuilding it.

An agent's state often lives where no adapter can build it from an abstract state: in
a running loop, a coroutine, an async generator paused at a yield. A live adapter
(`LiveAdapter`) therefore only starts runs and advances them; haltproof gets a live run
standing in any reachable abstract state itself, by the cheapest means the adapter
allows, decided per run:

- `snapshot`: the adapter gives `snapshot(live)` and `restore(snap)`: one snapshot is
  kept per reachable state, each transition steps a fresh `restore` of it.
- `snapshot` (taken by haltproof): otherwise, when the adapter says `copyable = True`, a
  `copy.deepcopy` of the live run is kept per state and each transition steps a copy of
  it. Opt-in, because a deepcopy does not copy what functions close over, module globals
  or outside resources: a copy that shares them with its original steps the original too,
  and the wrong state could be explored before the read-back notices. A deepcopy that
  raises (a coroutine, a generator, a lock) switches the run to replay for good; the
  report then says `replay`.
- `replay`: the state's path of (action, choices) is run again from `start`.

Which concrete run stands for an abstract state: the one reached along the first path
into it that the exploration found (breadth-first: a shortest one), whatever the mode.
Every live run handed to a transition is read back first and must be in the abstract
state it stands for; a run that is not (a nondeterministic replay, a snapshot or copy
that does not restore what was taken) is a `bound_code` finding, never a silent drift.
A state a declared exception reached (`raises:` with `set:`) is what abstract() reads
from the run the exception left, with the `set:` values on top: its runs are read back
the same way (a replay must raise the exception again; a snapshot or copy keeps them).

`Driver` makes the user's calls: an awaitable result (an `async def` method) is run to
completion on the run's one event loop, which lives across transitions (no
`asyncio.run` per step), so tasks and async generators created in one step are still
there in the next. Its callers run it under the check's deadline (machine/usercode.py):
an async step that never returns is interrupted like a sync one. Closing the loop cancels
the tasks a run left pending and lets them finish, as `asyncio.run` does.
"""

from __future__ import annotations

import asyncio
import atexit
import copy
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

SNAPSHOT, REPLAY, STATE = "snapshot", "replay", "state"
CLOSE_GRACE = 5.0       # seconds a cancelled task may take to finish when a run's loop closes


class LiveAdapter:
    """Base class for live adapters: start runs and advance them; haltproof finds the rest.

    `start(params, init)` a fresh live run in the initial abstract state `init` (a dict; a
    spec with one initial state can ignore it); `step(live, action, choices)` advances it
    by one transition in place and returns the decide rule that fired (or None);
    `abstract(live)` reads its abstract state. Any of them may be `async def`. Optional:
    `snapshot(live)` / `restore(snap)`, or `copyable = True` to let haltproof deepcopy runs
    (only when a run shares nothing with another through closures, globals or resources);
    otherwise haltproof replays each state's path."""

    copyable: bool = False

    def start(self, params: dict[str, Any], init: dict[str, Any]) -> Any:
        raise NotImplementedError

    def step(self, live: Any, action: str, choices: dict[str, Any]) -> str | None | Awaitable[str | None]:
        raise NotImplementedError       # an `async def step` in a subclass is typed as the awaitable

    def abstract(self, live: Any) -> dict[str, Any]:
        raise NotImplementedError

    def close(self, live: Any) -> None | Awaitable[None]:
        """Release a run haltproof is done with (its threads, streams, tasks) now, in the
        exploring thread; by default nothing. Without it the garbage collector finalizes the
        run at a moment and in a thread of its own choosing, and a framework whose cleanup
        joins threads can deadlock there. An `async def close` runs on the run's loop."""
        return None

    def representative(self, action: str, choice: str, label: Any) -> Any:
        return label

    def strategy(self, action: str, choice: str, label: Any) -> Any:
        """Concrete values of an abstract choice for `haltproof conform` (Hypothesis)."""
        from hypothesis import strategies as st     # only conform needs Hypothesis
        return st.just(self.representative(action, choice, label))


def is_live(adapter: object) -> bool:
    """A live adapter starts runs (`start`); a state adapter rebuilds them (`concretize`)."""
    return callable(getattr(adapter, "start", None))


def close_run(adapter: object, driver: Driver, live: Any) -> None:
    """`live` goes to the adapter's `close`, if it has one (on the run's loop when it is async)."""
    close = getattr(adapter, "close", None)
    if callable(close):
        driver.call(close, live)


class Driver:
    """Makes the user's calls; awaits what they return on one event loop kept for the run."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        out = fn(*args)
        if inspect.isawaitable(out):
            finish_left_open()          # no loop runs here: a good time to finish closed runs' loops
            if self.loop is None:
                self.loop = asyncio.new_event_loop()
            out = self.loop.run_until_complete(_awaited(out))
        return out

    def close(self) -> None:
        """Close the loop, first cancelling the tasks still pending on it, as `asyncio.run` does:
        a live run left paused in an await (a framework's run task) ends through its own
        cancellation path instead of being destroyed pending ("Task was destroyed but it is
        pending!", or CPython 3.11 crashing at exit inside an `async with` with no loop to run its
        exit), and async generators are closed. Tasks that ignore the cancellation get CLOSE_GRACE seconds, never a hang.
        A close that comes while another loop runs in this thread (the garbage collector
        finalizing an old run inside a new run's call) cannot run this loop now: it is finished
        by the next call that runs a loop, or at exit."""
        if self.loop is None or self.loop.is_running() or self.loop.is_closed():
            return
        LEFT_OPEN.append(self.loop)
        if not loop_running():
            finish_left_open()


LEFT_OPEN: list[asyncio.AbstractEventLoop] = []     # closed drivers' loops, still to finish


def loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def finish_left_open() -> None:
    """Cancel and finish the tasks of every loop left to close, then close it."""
    while LEFT_OPEN:
        loop = LEFT_OPEN.pop()
        pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.wait(pending, timeout=CLOSE_GRACE))
        loop.run_until_complete(loop.shutdown_asyncgens())      # async generators' cleanup, while the loop runs
        loop.close()


atexit.register(finish_left_open)


async def _awaited(value: Awaitable[Any]) -> Any:
    return await value


Origin = tuple[tuple[Any, ...] | None, str, dict[str, Any]]      # (parent state, action, choices)


class LiveRuns:
    """A live run for every reachable abstract state, by snapshot, copy or replay.

    `fresh(s)` and `keep(...)` are the user's code (start, step, snapshot, deepcopy):
    callers run them under the deadline and turn their exceptions into findings."""

    def __init__(self, adapter: Any, driver: Driver, params: dict[str, Any], var_names: list[str],
                 inits: list[tuple[Any, ...]],
                 advance: Callable[[Any, str, dict[str, Any]], dict[str, Any]],
                 verify: Callable[[LiveRuns, Any, tuple[Any, ...], str, dict[str, Any]], None],
                 code_vars: list[str]) -> None:
        self.adapter, self.driver, self.params, self.var_names = adapter, driver, params, var_names
        self.code_vars = code_vars      # the vars abstract() reads (the spec's ghost vars are not among them)
        self.advance = advance          # one transition on a live run, declared exceptions allowed: their set:
        self.verify = verify            # a live run must be in the state it stands for: raises if not
        self.origin: dict[tuple[Any, ...], Origin] = {s: (None, "", {}) for s in inits}
        # the set: values of the declared exception on the transition that first reached a state:
        # a run kept there stands for what abstract() reads from it with them on top
        self.raised: dict[tuple[Any, ...], dict[str, Any]] = {}
        self.saved: dict[tuple[Any, ...], Any] = {}
        self.open: list[Any] = []       # the runs made (start, restore, copy) and not yet released
        if callable(getattr(adapter, "snapshot", None)) and callable(getattr(adapter, "restore", None)):
            self.how = "snapshot"
        elif getattr(adapter, "copyable", False) is True:
            self.how = "copy"
        else:
            self.how = "replay"
        self.first_way: dict[tuple[Any, ...], Any] = {}       # the transition that first reached a state
        self.others: dict[tuple[Any, ...], set[Any]] = {}     # --paths: the other ways into it, compared

    def another_path(self, s: tuple[Any, ...], way: Any, paths: int) -> bool:
        """Whether `way` (a transition into the known state `s`) is a path into it that
        `--paths N` has not compared yet and still has room for (N-1 besides the first)."""
        if paths <= 1 or way == self.first_way.get(s):
            return False
        seen = self.others.setdefault(s, set())
        if way in seen or len(seen) >= paths - 1:
            return False
        seen.add(way)
        return True

    @property
    def mode(self) -> str:
        """What the report says: snapshot (the adapter's or a copy) or replay."""
        return REPLAY if self.how == "replay" else SNAPSHOT

    def known(self, s: tuple[Any, ...]) -> bool:
        return s in self.origin

    def fresh(self, s: tuple[Any, ...]) -> Any:
        """A live run in abstract state `s` that nobody else holds, checked to be in `s`: a
        state a declared exception reached is checked with the exception's `set:` values on
        top, those it raised again when replayed, those remembered for a snapshot or copy."""
        if self.how != "replay" and s not in self.saved:
            replayed, _ = self._replay(s)
            self._save(s, replayed)
            self.release(replayed)
        live, how, sets = self._made(s)
        self.verify(self, live, s, how, sets)
        return live

    def _made(self, s: tuple[Any, ...]) -> tuple[Any, str, dict[str, Any]]:
        if self.how == "snapshot":
            restored = self.made(self.driver.call(self.adapter.restore, self.saved[s]))
            return restored, "snapshot", self.raised.get(s, {})
        if self.how == "copy":
            try:
                return self.made(copy.deepcopy(self.saved[s])), "copy", self.raised.get(s, {})
            except Exception:     # any failure to copy means: replay instead
                self._give_up_copying()
        live, sets = self._replay(s)
        return live, "replay", sets

    def made(self, live: Any) -> Any:
        """`live` is a run of its own (started, restored or copied): open until released."""
        self.open.append(live)
        return live

    def release(self, live: Any) -> None:
        """The caller is done with `live` (a saved copy is a run of its own): the adapter's
        `close`, if it has one, called once: the run is forgotten first, so a close() that
        raises is not called again for it."""
        for k, run in enumerate(self.open):
            if run is live:
                del self.open[k]
                break
        close_run(self.adapter, self.driver, live)

    def keep(self, parent: tuple[Any, ...], action: str, choices: dict[str, Any],
             s: tuple[Any, ...], live: Any, way: Any = None, sets: dict[str, Any] | None = None) -> None:
        """Remember how `s` was first reached (and, snapshotting, the run that reached it, with
        `sets`: the values of the declared exception that transition raised); `way` names that
        transition for `another_path`."""
        if s in self.origin:
            return
        self.origin[s] = (parent, action, copy.deepcopy(choices))
        self.first_way[s] = way
        if sets:
            self.raised[s] = dict(sets)
        if self.how != "replay":
            self._save(s, live)

    def _save(self, s: tuple[Any, ...], live: Any) -> None:
        if self.how == "snapshot":
            self.saved[s] = self.driver.call(self.adapter.snapshot, live)
            return
        try:
            self.saved[s] = copy.deepcopy(live)
        except Exception:          # any failure to copy means: replay instead
            self._give_up_copying()

    def unreleased(self) -> list[Any]:
        """The runs made and not yet released (a transition that raised left them), forgotten
        here: the caller closes them."""
        left, self.open = self.open, []
        return left

    def saved_runs(self) -> list[Any]:
        """The saved runs (copies: a snapshot is the adapter's own value, not a run), forgotten
        here: the caller closes them. A state left without one is replayed if it is needed again."""
        runs = list(self.saved.values()) if self.how == "copy" else []
        self.saved.clear()
        return runs

    def _give_up_copying(self) -> None:
        """For good: the report says `replay` (docs/how-to/binding.md), and no state is skipped.
        The copies saved so far are runs: left open, for the transition under way to close."""
        self.open.extend(self.saved_runs())
        self.how = "replay"

    def _replay(self, s: tuple[Any, ...]) -> tuple[Any, dict[str, Any]]:
        """Start a run in the initial state `s` leads back to and run its path again: the run,
        and the `set:` values of the declared exception its last transition raised ({} if none)."""
        path: list[Origin] = []
        at = s
        while True:
            parent, action, choices = self.origin[at]
            if parent is None:
                break
            path.append((parent, action, choices))
            at = parent
        live = self.made(self.driver.call(self.adapter.start, dict(self.params), dict(zip(self.var_names, at))))
        if not path:
            self.verify(self, live, at, "start", {})
        sets: dict[str, Any] = {}
        for _, action, choices in reversed(path):
            sets = self.advance(live, action, copy.deepcopy(choices))
        return live, sets

    def path_length(self, s: tuple[Any, ...]) -> int:
        n, at = 0, s
        while (parent := self.origin[at][0]) is not None:
            n, at = n + 1, parent
        return n
