"""Checking the runs of a sweep at once, in worker processes (`-j N`) or on a Dask cluster (`--dask`);
and a single run of bound code with its BFS levels shared among the workers (below, `check_shared`).

A run is one spec at one param combination. Runs share nothing, so a sweep's runs (and
the specs of a directory) can be checked concurrently; what must not change is the report.
So the caller validates and prepares every run first, in its own process, exactly as a
serial check does (every user error is exit 2 before anything is explored), and each run is
then rebuilt in a worker from a `Job`: where its spec comes from (a YAML file, or a Python
model's `module:Class`), its params and the options. The worker imports the user's code
itself (the `spawn` start method: nothing of the parent's state leaks in), checks the one
run with `check_machine`, and sends the RunResult back; results are put back in the
serial order, with the parent's own Spec and Machine objects in them, so every report
reads them as if the parent had checked them.

Faults:
- The whole check keeps one deadline (`--timeout`): each job carries its wall-clock end,
  and the worker checks under whatever is left of it, as a serial run does.
- A worker process that dies (killed, `os._exit` in user code, out of memory) breaks the
  pool; the runs it had started are charged one attempt and everything unfinished is
  submitted again to a fresh pool. A run charged MAX_ATTEMPTS times is not tried again:
  it is reported `incomplete` (stopped_by "workers_lost"), never dropped.
- Any other error in a worker (a SpecError, OutOfTime while importing the user's code, a
  bug) is raised in the parent: the one of the first run in serial order, as a serial
  check would have raised it.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from multiprocessing.queues import SimpleQueue
from typing import Any

from haltproof.machine import usercode
from haltproof.machine.binding import BoundCode, Outcome, Recipe, WorkersLost, bound_code
from haltproof.machine.compiled import EVAL_ERRORS, CompiledSpec, Machine
from haltproof.machine.pymodel import load_model_ref
from haltproof.machine.spec import Spec, load_spec, present
from haltproof.machine.usercode import OutOfTime, Stuck
from haltproof.machine.vectorize import vectorize
from haltproof.properties.kinds import UNKNOWN, VIOLATED, PropertyResult

from .options import Options
from .results import RunResult
from .check import check_machine, judged_builtins, prepare, prepare_python
from .engine import Exploration, State
from .vengine import LazyStates

MAX_ATTEMPTS = 3          # times a run may be in a worker that dies before it is reported lost
LOST = "workers_lost"     # a run's stopped_by when every attempt to check it lost its worker
# The per-edge and per-state columns an exploration may recompute on demand (engine.attach_lazy):
# written out as lists before the exploration travels, since what recomputes them cannot.
LAZY_COLUMNS = ("via_action", "via_combo", "via_rule", "e_action", "e_combo", "e_rule")
DoneFn = Callable[[int, int], None]     # runs finished, runs in all
EachFn = Callable[[int, RunResult], None]    # a run finished: its index in the serial order, and it


def default_workers() -> int:
    """`-j`'s default: every core of this machine."""
    return os.cpu_count() or 1


@dataclass(frozen=True)
class Source:
    """Where a worker finds a run's spec again: a YAML spec file, or a Python model's
    `module:Class` (importable in the worker as it is here)."""

    path: str | None = None
    model: str | None = None

    def machines(self, options: Options) -> list[Machine]:
        """Load and prepare the spec's runs for `options` (the pins of one combination), running
        the user's code (bound adapter, model) within the deadline in force, as `prepare` does."""
        if self.model is not None:
            model = self.model
            cls = usercode.load_as(lambda: f"importing the model {model}", lambda: load_model_ref(model))
            return prepare_python(cls, options)
        assert self.path is not None, "a source is a spec file or a model"
        spec, compiled = _compiled(self.path, options.run_code)
        return prepare(spec, options, compiled)


def model_source(cls: type) -> Source | None:
    """A Python model class as a Source, or None when a worker could not import it by name
    (a class made inside a function, or in a module that is not importable)."""
    ref = f"{cls.__module__}:{cls.__qualname__}"
    if "<" in cls.__qualname__ or "." in cls.__qualname__ or cls.__module__ == "__main__":
        return None
    try:
        same: type = load_model_ref(ref)
    except Exception:       # anything the import raises: then the run stays in this process
        return None
    return Source(model=ref) if same is cls else None


_SPECS: dict[tuple[str, bool], tuple[Spec, CompiledSpec]] = {}   # a worker's compiled specs, by path, run_code


def _compiled(path: str, run_code: bool) -> tuple[Spec, CompiledSpec]:
    """The spec at `path`, loaded and compiled once per worker process (as a serial check
    compiles each spec once for all its combinations); without `run_code` (--no-code) none
    of its code is imported (machine/trust.py)."""
    if (path, run_code) not in _SPECS:
        spec = load_spec(path, run_code)
        _SPECS[path, run_code] = spec, CompiledSpec(spec)
    return _SPECS[path, run_code]


@dataclass(frozen=True)
class Job:
    """One run as a worker rebuilds it: its source, its one param combination and the options
    (progress left out: it writes to the parent's terminal); `end` is the whole check's deadline
    as a wall-clock time (time.time()), None without one."""

    index: int
    source: Source
    params: dict[str, Any]
    options: Options
    end: float | None


@dataclass(frozen=True)
class Batch:
    """The prepared runs of one spec, where a worker finds that spec, and the options to check
    them with. `source` None: the runs can only be checked in this process."""

    source: Source | None
    machines: list[Machine]
    options: Options


def jobs_of(batches: Sequence[Batch]) -> tuple[list[Job], list[Machine]]:
    """Every run as a Job, in serial order, and the parent's Machine for each."""
    left = usercode.remaining()
    end = None if left is None else time.time() + left
    jobs: list[Job] = []
    machines: list[Machine] = []
    for b in batches:
        assert b.source is not None, "only runs a worker can rebuild become jobs"
        for m in b.machines:
            # one thread per run in a worker: the worker processes already take the cores
            jobs.append(Job(len(jobs), b.source, dict(m.params), replace(b.options, pins=dict(m.params),
                                                                           progress=None, workers=1), end))
            machines.append(m)
    return jobs, machines


# A local worker's line to its parent: ("took", run index) when it takes a run in hand (LocalPool),
# ("ended", task index, (kind, what happened...)) just before the user's code ends the worker
# (os._exit) or the worker ends itself because that code ignored a deadline's interrupt.
Note = tuple[str, int, Any]
_LINE: SimpleQueue[Note] | None = None
_TASK = -1          # the run (LocalPool) or the slice (LocalSlices) this worker has in hand
WATCH_EVERY = 0.2   # seconds between a worker's looks at the user's code it runs


def _worker_setup(line: SimpleQueue[Note]) -> None:
    """A local worker's initializer: its line to the parent, and a watch over the user's code it
    runs: code that ignores a deadline's interrupt for usercode.GRACE seconds ends this worker,
    and code that ends it says so first (usercode.tell_exits); either way, the parent is told
    which task it was and why, and reports that task without trying it again."""
    global _LINE
    _LINE = line

    def told(how: str, doing: str | None) -> None:
        if doing is not None:           # the user's code, not the end of the worker's own life
            line.put(("ended", _TASK, ("died", how, doing)))
    usercode.tell_exits(told)
    threading.Thread(target=_watch_user_code, args=(line,), name="haltproof-watchdog", daemon=True).start()


def _watch_user_code(line: SimpleQueue[Note]) -> None:
    while True:
        time.sleep(WATCH_EVERY)
        late = usercode.overdue()
        if late is not None:
            kind, doing = late
            line.put(("ended", _TASK, (kind, doing, usercode.NOW.per_call)))
            if kind == "timeout":       # every worker is past the same deadline: let the others speak
                time.sleep(2 * WATCH_EVERY)     # before the pool, broken by this one, ends them
            os.kill(os.getpid(), signal.SIGKILL)


def ended_run(m: Machine, options: Options, how: tuple[Any, ...], process: str) -> RunResult:
    """The run a worker was checking when the user's code ended it (os._exit), or when it ended
    itself because that code ignored a deadline's interrupt: a `bound_code` finding (an exit, a
    call past its deadline), or incomplete at the --timeout."""
    kind, detail, *rest = how
    if kind == "died":
        return lost_run(m, options, f"the user's code ended {process} ({detail}) while {rest[0]}", finding=True)
    limit = rest[0] if rest else None
    why = usercode.ignored(kind, detail, timeout=options.timeout, limit=limit, process=process)
    if kind == "timeout":
        return lost_run(m, options, why, stopped_by="timeout")
    return lost_run(m, options, why, stopped_by="call_timeout", finding=True)


def run_job(job: Job) -> bytes:
    """A worker's whole task: rebuild the run, check it, and return it pickled, its kept
    exploration without the machine (the parent puts its own spec and machine back, `restore`).
    A local worker says first which run it takes, so the parent knows what a dying worker held.

    The whole check's deadline holds here too, the worker's own import of the user's code
    included: when it passes before the run could be rebuilt, the run comes back as a
    `late` marker, and the parent reports it incomplete (see `restore`)."""
    global _TASK
    _TASK = job.index
    if _LINE is not None:
        _LINE.put(("took", job.index, None))
    left = None if job.end is None else max(1e-6, job.end - time.time())
    with usercode.deadline(left, job.options.call_timeout):
        try:
            (m,) = job.source.machines(job.options)
        except OutOfTime as stop:
            return pickle.dumps(("late", stop.doing))
        result = check_machine(m, job.options)
    return pickle.dumps(("done", _detached(result)))


def _detached(r: RunResult) -> tuple[RunResult, type[Exploration] | None, dict[str, Any] | None]:
    """The result without what cannot travel: the kept exploration's machine, numpy machine (and
    the vector engine's states, decoded through it) and recomputing columns (closures over
    compiled code); those columns are written out instead."""
    ex = r._exploration
    # the spec goes without a declaration's adapter factory (a closure); the parent puts its own spec back
    r = replace(r, _spec=replace(r._spec, adapter=None))
    if ex is None:
        return r, None, None
    state = {k: v for k, v in vars(ex).items() if k not in ("machine", "vm") and not isinstance(v, LazyStates)}
    for name in LAZY_COLUMNS:
        state[name] = list(getattr(ex, name))
    return replace(r, _exploration=None), type(ex), state


def restore(blob: bytes, m: Machine, options: Options) -> RunResult:
    """A worker's result with the parent's own spec and machine in it (reports read them by identity)."""
    kind, sent = pickle.loads(blob)
    if kind == "late":
        doing = f" while {sent}" if sent else ""
        return lost_run(m, options, f"the --timeout passed{doing} in the worker process, before the run started",
                        stopped_by="timeout")
    r, cls, state = sent
    assert isinstance(r, RunResult), "a worker sends a RunResult"
    r = replace(r, _spec=m.spec)
    if cls is not None and state is not None:
        ex = cls.__new__(cls)
        ex.__dict__.update(state)
        ex.machine = m
        if "vm" in getattr(cls, "__annotations__", {}):     # the vector engine's: rebuilt, it is cheap
            ex.vm = vectorize(m)
            ex.states = LazyStates(ex.vm, ex.codes)         # decodes with the vm: rebuilt with it
        r = replace(r, _exploration=ex)
    return r


def lost_run(m: Machine, options: Options, why: str, stopped_by: str = LOST, finding: bool = False) -> RunResult:
    """An `incomplete` run for a combination no worker finished (lost with its workers, or the
    deadline passed before it started): nothing decided, and why. With `finding`, `why` is a
    finding about the bound code (it ended its process, or a call of it never returned):
    `bound_code` is violated, without a trace (the process that had it is gone)."""
    spec = m.spec
    selected = set(options.properties) if options.properties else {p.name for p in spec.properties}
    props = [PropertyResult(n, "builtin", VIOLATED, why) if finding and n == "bound_code"
             else PropertyResult(n, "builtin", UNKNOWN, f"not decided: {why}") for n in judged_builtins(m)]
    for p in spec.properties:
        if p.name in selected - m.inactive:
            r = PropertyResult(p.name, p.kind if p.pattern is None else present(p.pattern), UNKNOWN,
                               f"not decided: {why}", line=p.line)
            r.description, r.file = p.description, p.file
            props.append(r)
    stats = {"states": 0, "transitions": 0, "terminal_states": 0, "max_depth": 0, "seconds": 0.0}
    return RunResult(_spec=spec, params=m.params, stats=stats, properties=props,
                     coverage={"rules": {}, "terminals": {}}, notices=[], scenarios=[], stopped_by=stopped_by,
                     as_expected=None if spec.expect_violated is None else False,
                     explored=f"code: {m.bound_to}" if m.bound_to else "model", stop_reason=f"not checked: {why}")


def check_batches(batches: Sequence[Batch], workers: int, done: DoneFn | None = None,
                  each: EachFn | None = None) -> list[RunResult]:
    """Every run of every batch, in serial order, checked in up to `workers` local processes
    (one worker, or a run no worker can rebuild: all in this process, as before). A single
    run of bound code has its BFS levels shared among the workers instead (`check_shared`).
    `each` is told every run as it is finished, with its index in the serial order."""
    total = sum(len(b.machines) for b in batches)
    if workers > 1 and shareable(batches):
        (b,) = batches
        result = check_shared(b, LocalSlices(workers), workers)
        if each is not None:
            each(0, result)
        if done is not None:
            done(1, 1)
        return [result]
    if workers <= 1 or total <= 1 or any(b.source is None for b in batches):
        out: list[RunResult] = []
        for b in batches:
            for m in b.machines:
                out.append(check_machine(m, b.options))
                if each is not None:
                    each(len(out) - 1, out[-1])
                if done is not None:
                    done(len(out), total)
        return out
    jobs, machines = jobs_of(batches)
    return LocalPool(workers).run(jobs, machines, done, each)


class LocalPool:
    """Jobs in up to `workers` spawned processes. A pool broken by a dying worker is replaced; the
    runs that worker may have held are then retried one at a time, so only the run that kills
    its worker is charged for it."""

    def __init__(self, workers: int):
        self.workers = workers
        self.context = multiprocessing.get_context("spawn")

    def run(self, jobs: list[Job], machines: list[Machine], done: DoneFn | None,
            each: EachFn | None = None) -> list[RunResult]:
        results: dict[int, RunResult] = {}
        errors: dict[int, BaseException] = {}
        attempts = dict.fromkeys(range(len(jobs)), 0)
        unstarted_deaths = dict.fromkeys(range(len(jobs)), 0)     # of those, pools that broke before any took a run
        pending = list(jobs)
        while pending:
            suspects = [j for j in pending if attempts[j.index]]
            def tick(i: int) -> None:
                if each is not None:
                    each(i, results[i])
                if done is not None:
                    done(len(results), len(jobs))
            died, ended, unstarted = self._round(suspects or pending, 1 if suspects else self.workers, machines,
                                                 results, errors, tick)
            for i, how in ended.items():        # its own code ended the worker: trying again ends it again
                results[i] = ended_run(machines[i], jobs[i].options, how, "the worker process checking it")
                tick(i)
            for i in died - set(ended):
                attempts[i] += 1
                unstarted_deaths[i] += unstarted
            first_error = min(errors, default=len(jobs))    # serial order stops at the first error
            pending = [j for j in pending if j.index not in results and j.index < first_error]
            for j in [j for j in pending if attempts[j.index] >= MAX_ATTEMPTS]:
                why = (f"the worker processes died {MAX_ATTEMPTS} times before taking a run (what they said is "
                       "on stderr)" if unstarted_deaths[j.index] == attempts[j.index]
                       else f"the worker process checking it died {MAX_ATTEMPTS} times")
                results[j.index] = lost_run(machines[j.index], j.options, why)
                if each is not None:
                    each(j.index, results[j.index])
                pending.remove(j)
        if errors:
            raise errors[min(errors)]
        return [results[i] for i in range(len(jobs))]

    def _round(self, jobs: list[Job], workers: int, machines: list[Machine], results: dict[int, RunResult],
               errors: dict[int, BaseException],
               tick: Callable[[int], None]) -> tuple[set[int], dict[int, tuple[Any, ...]], bool]:
        """Submit `jobs` to a fresh pool of `workers` and collect what comes back; returns the runs
        a worker had in hand when the pool broke (none when it did not), those whose own code
        ended their worker, with how (`ended_run`), and whether the pool broke before any worker
        took a run: then the workers die as they start (an import that fails in a new process),
        so every run not finished is charged, or the same round would be tried for ever."""
        started: SimpleQueue[Note] = self.context.SimpleQueue()
        pool = ProcessPoolExecutor(min(workers, len(jobs)), mp_context=self.context,
                                   initializer=_worker_setup, initargs=(started,))
        broken = False
        in_hand: set[int] = set()
        ended: dict[int, tuple[Any, ...]] = {}
        try:
            futures: dict[Future[bytes], int] = {pool.submit(run_job, j): j.index for j in jobs}
            options = {j.index: j.options for j in jobs}
            waiting = set(futures)
            while waiting:
                finished, waiting = wait(waiting, return_when=FIRST_COMPLETED)
                _drain(started, in_hand, ended)     # read as they come: a full pipe would stop the workers
                for fut in sorted(finished, key=futures.__getitem__):
                    i = futures[fut]
                    if fut.cancelled():
                        continue
                    exc = fut.exception()
                    if isinstance(exc, BrokenProcessPool):
                        broken = True
                    elif exc is not None:
                        errors[i] = exc
                        for later, k in futures.items():     # a serial check would not run them
                            if k > i:
                                later.cancel()
                    else:
                        results[i] = restore(fut.result(), machines[i], options[i])
                        tick(i)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        if not broken:
            return set(), {}, False
        _drain(started, in_hand, ended)
        unstarted = not in_hand
        held = {j.index for j in jobs} if unstarted else in_hand
        lost = {i for i in held if i not in results and i not in errors}
        return lost, {i: how for i, how in ended.items() if i in lost}, unstarted


def _drain(line: SimpleQueue[Note], took: set[int], ended: dict[int, tuple[Any, ...]]) -> None:
    """What the workers have said so far: each task they took, and each their user's code ended."""
    while not line.empty():
        kind, task, how = line.get()
        if kind == "took":
            took.add(task)
        else:
            ended[task] = how


# One run of bound code, its BFS levels shared among worker processes. The engine explores
# in this process as it always does; before each level it hands the level's states to
# `LevelSharer`, which has the workers run the code's transitions out of them (each worker
# with its own import of the user's code, machine/binding.py `BoundCode.outcome`), and the
# engine then takes each transition's outcome in the serial order as if it had run it here
# (`BoundCode.take`): the same states, numbering, traces, findings and figures.

SHARE_SECONDS = 1.0     # levels are shared once the exploration has run this long (starting workers costs)
SLICES_PER_WORKER = 4   # a level is cut into this many slices per worker, so a slow slice holds up less
GRACE_SECONDS = 5.0     # how long past the deadline a worker may take to return before it is killed
SliceResult = tuple[str, Any, list[list[tuple[int, int, Outcome]]]]   # kind, detail, per state its outcomes


def shareable(batches: Sequence[Batch]) -> bool:
    """Whether the check is a single run of bound code that workers can rebuild (`--paths` > 1
    compares paths as the single process meets them: that check stays in one process)."""
    if len(batches) != 1 or len(batches[0].machines) != 1 or batches[0].source is None:
        return False
    b = batches[0]
    return bound_code(b.machines[0]) is not None and b.options.paths <= 1


@dataclass(frozen=True)
class Slice:
    """A slice of a shared level as a worker takes it: the run (`job`: its spec, params, options
    and the deadline), a name for this check's run, and the states with what reaches each."""

    job: Job
    token: str
    states: list[tuple[State, Recipe]]
    index: int = 0          # its place in the level (what a dying worker's last word names)


def check_shared(b: Batch, slices: Slices, workers: int) -> RunResult:
    """Check the batch's one run here, its levels expanded by `slices`' workers (see above)."""
    (m,) = b.machines
    code = bound_code(m)
    assert code is not None and b.source is not None, "shareable() said so"
    (job,), _ = jobs_of([b])
    code.ahead = LevelSharer(job, code, m, slices, workers)
    try:
        return check_machine(m, b.options)
    finally:
        code.ahead = None
        slices.close()


class Slices:
    """Where slices are expanded: local worker processes (LocalSlices) or a Dask cluster."""

    def run(self, slices: list[Slice]) -> list[SliceResult]:
        raise NotImplementedError

    def warm(self, empty: Slice, workers: int) -> Callable[[], bool]:
        """Have the workers import the run's code now, in the background; returns whether they
        are done. By default nothing to wait for (a cluster's workers import on their first slice)."""
        return lambda: True

    def close(self) -> None:
        """Stop the workers."""


class LevelSharer:
    """The engine's `ahead` hook for one run. A run that ends within SHARE_SECONDS is not worth
    starting workers for (each imports haltproof and the user's code: about a second of CPU),
    so the first levels run here. At the first level that begins after SHARE_SECONDS the
    workers are started, and they import the code while the levels go on here; the first level
    that begins with every worker ready, and has a state for each, and every level after it,
    is shared. (SHARE_SECONDS 0: every level, the workers waited for.)"""

    def __init__(self, job: Job, code: BoundCode, m: Machine, slices: Slices, workers: int):
        self.job, self.code, self.m, self.slices, self.workers = job, code, m, slices, workers
        self.token = uuid.uuid4().hex
        self.sharing = False
        self.began: float | None = None      # when the first level began
        self.ready: Callable[[], bool] | None = None     # whether the started workers have the code

    def __call__(self, level: list[State]) -> None:
        if not self.sharing:
            now = time.monotonic()
            self.began = now if self.began is None else self.began
            if SHARE_SECONDS <= 0:
                self.sharing = True
            elif self.ready is None and now - self.began > SHARE_SECONDS:
                self.ready = self.slices.warm(Slice(self.job, self.token, []), self.workers)
            elif self.ready is not None:
                self.sharing = len(level) >= self.workers and self.ready()
            if not self.sharing:
                return
        self.share(level)

    def share(self, level: list[State]) -> None:
        code = self.code
        if code.relayed is None:
            code.relayed = {}
        left = usercode.remaining()
        job = replace(self.job, end=None if left is None else time.time() + left)
        n = min(len(level), self.workers * SLICES_PER_WORKER)
        cuts = [len(level) * k // n for k in range(n + 1)]
        parts = [level[cuts[k]:cuts[k + 1]] for k in range(n)]
        sent = [Slice(job, self.token, [(s, code.recipe(s)) for s in part], k) for k, part in enumerate(parts)]
        results = self.slices.run(sent)
        errors = [detail for kind, detail, _ in results if kind == "error"]
        if errors:
            raise errors[0]         # the first in serial order, as one process would have met it
        for part, (kind, detail, per_state) in zip(parts, results):
            self.take(part, kind, detail, per_state)

    def take(self, part: list[State], kind: str, detail: Any,
             per_state: list[list[tuple[int, int, Outcome]]]) -> None:
        """One slice's outcomes into the relay; where it stopped short, why, for each state it left."""
        code, actions = self.code, self.m.actions
        relayed = code.relayed
        assert relayed is not None, "share() started relaying"
        for s, outs in zip(part, per_state):
            for a, ci, out in outs:
                relayed[(s, a, actions[a].combos[ci])] = out
        if kind == "done":
            return
        gap: Callable[[], BaseException]
        if kind == "late":
            gap = lambda: OutOfTime(detail)     # noqa: E731 -- one per state left, made when raised
        elif kind == "stuck":
            gap = lambda: Stuck(*detail)        # noqa: E731
        else:
            gap = lambda: WorkersLost(detail)   # noqa: E731
        unfinished = len(per_state) - 1 if kind in ("late", "stuck") and per_state else len(per_state)
        for s in part[max(0, unfinished):]:
            code.gaps[s] = gap


_EXPANDING: dict[str, Machine] = {}     # a worker's bound machine for the run it shares, by check
_EXPANDING_LOCK = threading.Lock()       # a Dask worker may run tasks in threads


def expand_slice(sl: Slice) -> bytes:
    """A worker's task: every transition out of the slice's states, as the engine would make
    them, each an Outcome; pickled ("done", or "late" / "stuck" with what was running, and the
    outcomes so far: a state cut short by a deadline has its outcomes up to there)."""
    global _TASK
    _TASK = sl.index
    left = None if sl.job.end is None else max(1e-6, sl.job.end - time.time())
    per_state: list[list[tuple[int, int, Outcome]]] = []
    with usercode.deadline(left, sl.job.options.call_timeout):
        try:
            m = _shared_machine(sl)
            code = bound_code(m)
            assert code is not None, "a shared run is bound"
            code.expanding(sl.states)
            for s, _ in sl.states:
                outs: list[tuple[int, int, Outcome]] = []
                per_state.append(outs)
                _expand(m, code, s, outs)
        except Stuck as stop:
            return pickle.dumps(("stuck", (stop.limit, stop.doing), per_state))
        except OutOfTime as stop:
            return pickle.dumps(("late", stop.doing or "running the bound code in a worker process", per_state))
    return pickle.dumps(("done", None, per_state))


def _shared_machine(sl: Slice) -> Machine:
    """The run's bound machine in this worker: built (the user's code imported) once per check."""
    with _EXPANDING_LOCK:
        if sl.token not in _EXPANDING:
            _EXPANDING.clear()
            (m,) = sl.job.source.machines(sl.job.options)
            _EXPANDING[sl.token] = m
        return _EXPANDING[sl.token]


def _expand(m: Machine, code: BoundCode, s: State, outs: list[tuple[int, int, Outcome]]) -> None:
    """The transitions the engine's plain loop runs out of s (explorer/engine.py: the terminal
    predicate, each action's guard, each combination's `when`s), in its order."""
    try:
        if m.is_terminal(s):
            return
    except EVAL_ERRORS:
        return
    for act in m.actions:
        try:
            if act.guard is not None and not act.guard(s):
                continue
        except EVAL_ERRORS:
            continue
        for ci, combo in enumerate(act.combos):
            try:
                if act.admit is not None and act.admit(s, *combo) is not None:
                    continue
            except EVAL_ERRORS:
                continue
            outs.append((act.index, ci, code.outcome(act, s, combo)))


def _slice_ended(how: tuple[Any, ...]) -> SliceResult:
    """A slice whose user's code ended its worker (`_worker_setup`): at a call past its deadline
    a `bound_code` finding (Stuck), at the --timeout late, after an exit of the code's own lost."""
    kind, detail, *rest = how
    process = "the worker process expanding it"
    if kind == "died":
        return "lost", f"the user's code ended {process} ({detail}) while {rest[0]}", []
    doing = f"{detail or 'running the bound code'}; it ignored haltproof's interrupt, so haltproof ended {process}"
    if kind == "stuck":
        return "stuck", (rest[0], doing), []
    return "late", doing, []


class LocalSlices(Slices):
    """Slices in up to `workers` spawned processes, kept for the whole run (each imports the
    user's code once). A worker that dies: the slices not finished are run again, one at a
    time, so the slice that kills its worker is charged for it; one charged MAX_ATTEMPTS times
    is lost (its states stop the exploration: `workers_lost`). A worker still running past the
    deadline and GRACE_SECONDS (code that never returns to Python) is killed: its slice is late."""

    def __init__(self, workers: int):
        self.workers = workers
        self.context = multiprocessing.get_context("spawn")
        self.pool: ProcessPoolExecutor | None = None
        self.warming: list[Future[bytes]] = []
        self.line: SimpleQueue[Note] = self.context.SimpleQueue()     # the workers' last words

    def run(self, slices: list[Slice]) -> list[SliceResult]:
        results: dict[int, SliceResult] = {}
        attempts = [0] * len(slices)
        alone = False
        pending = list(range(len(slices)))
        while pending:
            batch = pending[:1] if alone else pending
            if self._round(slices, batch, results) and alone:
                k = batch[0]
                attempts[k] += 1
                if attempts[k] >= MAX_ATTEMPTS:     # the exploration stops there: later slices are not needed
                    why = f"the worker process expanding it died {MAX_ATTEMPTS} times"
                    for later in pending[pending.index(k):]:
                        results.setdefault(later, ("lost", why, []))
            alone = alone or any(k not in results for k in batch)
            pending = [k for k in pending if k not in results]
        return [results[k] for k in range(len(slices))]

    def warm(self, empty: Slice, workers: int) -> Callable[[], bool]:
        """Start the workers, each building the run (an empty slice) while this process goes on."""
        self.warming = [self._pool().submit(expand_slice, empty) for _ in range(workers)]
        return lambda: all(f.done() for f in self.warming)

    def _round(self, slices: list[Slice], batch: list[int], results: dict[int, SliceResult]) -> bool:
        """Run the slices of `batch` at once; True when a worker died meanwhile."""
        try:
            futures = {self._pool().submit(expand_slice, slices[k]): k for k in batch}
        except BrokenProcessPool:           # a worker died between two levels (while importing the code)
            self.close()
            futures = {self._pool().submit(expand_slice, slices[k]): k for k in batch}
        left = usercode.remaining()
        finished, waiting = wait(futures, timeout=None if left is None else left + GRACE_SECONDS)
        broken = False
        for fut in finished:
            k = futures[fut]
            exc = fut.exception()
            if isinstance(exc, BrokenProcessPool):
                broken = True
            elif exc is not None:
                results[k] = ("error", exc, [])
            else:
                results[k] = pickle.loads(fut.result())
        for fut in waiting:
            results[futures[fut]] = ("late", "running the bound code in a worker process, which did not "
                                             "return to Python", [])
        ended: dict[int, tuple[Any, ...]] = {}
        _drain(self.line, set(), ended)
        for k, how in ended.items():       # its own code ended the worker: trying again ends it again
            if k in futures.values() and k not in results:
                results[k] = _slice_ended(how)
        if waiting:
            self._kill()
        elif broken:
            self.close()
        return broken

    def _pool(self) -> ProcessPoolExecutor:
        if self.pool is None:
            self.pool = ProcessPoolExecutor(self.workers, mp_context=self.context, initializer=_worker_setup,
                                            initargs=(self.line,))
        return self.pool

    def _kill(self) -> None:
        """Stop workers that do not return (their code ignores the deadline)."""
        if self.pool is not None:
            for proc in list((self.pool._processes or {}).values()):
                proc.kill()
        self.close()

    def close(self) -> None:
        """Stop the workers; ones still importing the code for a run that ended meanwhile are
        killed (they have done nothing else), not waited for."""
        if self.pool is not None and not all(f.done() for f in self.warming):
            self.warming = []
            self._kill()
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None
