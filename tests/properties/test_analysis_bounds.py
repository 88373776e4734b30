"""`--timeout` and `--max-memory` bound the analyses after an exploration too (issue 26, finding 3:
a 2-D random walk of 621 states with `--timeout 60` ran for minutes in interval iteration).

Each analysis is stopped at a tick inside it: the tests pass the deadline (or the memory limit)
on the clock's (or the memory's) first reading while a given function runs, so they are exact
and fast, and they fail when that function has no tick of its own (properties/budget.py). What
was decided before keeps its verdict; the rest is `unknown`, saying which bound and which
analysis; the run is incomplete (exit 3), violated (exit 1) when a violation was found."""

from __future__ import annotations

import itertools
import json
import sys
import time
from pathlib import Path
from types import FrameType

import numpy as np
import pytest

from haltproof.explorer import check as C
from haltproof.explorer import engine as E
from haltproof.explorer import memory as M
from haltproof.explorer import vengine as V
from haltproof.explorer.memory import current_rss
from haltproof.properties import budget
from haltproof.properties import probability as P

from test_probability_properties import AGENT, RETRY, WALK, prop

pytestmark = pytest.mark.verdict


def _name(frame: FrameType) -> str:
    """The name of the function `frame` runs. In the mutation runs' staged copy (bench/mutation.py)
    mutmut renames each function of a mutated module `x_NAME__mutmut_orig` (a method
    `xǁClassǁNAME__mutmut_orig`; a mutant `..._mutmut_7`) and calls it through a trampoline: read
    through that renaming, so these tests judge the mutants instead of failing on every one."""
    name = frame.f_code.co_name
    base, mangled, _ = name.rpartition("__mutmut_")
    if not mangled:
        return name
    return base.rpartition("ǁ")[2] if base.startswith("xǁ") else base.removeprefix("x_")


def _running(function: str) -> bool:
    """Whether `function` is on the caller's stack."""
    frame = sys._getframe(2)
    while frame is not None:
        if _name(frame) == function:
            return True
        frame = frame.f_back
    return False


def deadline_in(monkeypatch, function: str) -> None:
    """The clock passes the deadline the first time it is read while `function` runs (once: a
    later run of a sweep has its own deadline)."""
    fired = []

    def clock() -> float:
        if not fired and _running(function):
            fired.append(function)
            return 1e12
        return 0.0
    monkeypatch.setattr(budget, "clock", clock)


def memory_full_in(monkeypatch, function: str) -> None:
    """Resident memory is over any limit when read while `function` runs, and nothing elsewhere;
    the clock moves a second a reading, so every tick reads memory. Every module that reads it
    reads the stand-in: the engines' own probes read the test process's real memory otherwise,
    and a process past the limit (the staged tree of a mutation run, 487 MiB at import, after
    750 tests) stopped the exploration before the analysis was reached."""
    monkeypatch.setattr(budget, "clock", itertools.count().__next__)
    rss = lambda: 1 << 50 if _running(function) else 0        # noqa: E731
    for module in (C, E, V, M):
        monkeypatch.setattr(module, "current_rss", rss)


def run(check, text, *extra):
    r = check(text, "--format", "json", *extra)
    assert "Traceback" not in r.err, r.err
    return r.code, json.loads(r.out)["runs"][0]


def statuses(data):
    return {p["name"]: (p["status"], p["message"]) for p in data["properties"]}


SMALL_WALK = WALK.replace("1000", "20").replace("init: 995", "init: 10")
WALK_PROPS = """\
  ok: {always: x <= 20}
  east: {probability: {reach: x == 20, at_most: 0.5}}
  cost: {expected: {measure: transitions, at_most: 500}}
"""
DOMAINS = ("holds", "every variable stays inside its declared domain (never clamped or wrapped)")
WELL_DEFINED = ("holds", "every expression evaluates and every decide table has a matching rule")


def test_the_timeout_stops_interval_iteration_and_what_was_decided_stays(check, monkeypatch):
    """The walk past the exact limit (5 here): `east` is iterated and stopped there; `ok` was
    decided by the exploration; `cost` comes after, as do the bounds, the outcome table and the
    vacuity checks."""
    monkeypatch.setattr(P, "EXACT_LIMIT", 5)
    deadline_in(monkeypatch, "reach_intervals")
    code, data = run(check, SMALL_WALK + WALK_PROPS, "--timeout", "30")
    assert code == 3
    assert (data["result"], data["stopped_by"], data["stopped_after_exploration"]) == ("incomplete", "timeout", True)
    stopped = "the --timeout 30 s was reached while solving the probability of east"
    assert data["stop_reason"] == (
        "--timeout 30 s reached after the exploration, while solving the probability of east; not done: solving "
        "the expected transitions of cost, computing the worst case of transitions, computing the outcome table, "
        "looking for the parts of the spec that never matter (vacuity)")
    assert statuses(data) == {
        "domains": DOMAINS, "well_defined": WELL_DEFINED, "ok": ("holds", "true in every reachable state"),
        "east": ("unknown", f"not decided: {stopped}"),
        "cost": ("unknown", f"not decided: {stopped}, before solving the expected transitions of cost")}
    assert data["outcomes"] == {"message": f"not computed: {stopped}, before computing the outcome table"}
    assert data["bounds"]["transitions"]["message"] == (f"not computed: {stopped}, before computing the worst "
                                                       "case of transitions")
    assert data["stats"]["states"] == 21


def test_the_text_report_says_the_analyses_stopped(check, monkeypatch):
    monkeypatch.setattr(P, "EXACT_LIMIT", 5)
    deadline_in(monkeypatch, "reach_intervals")
    r = check(SMALL_WALK + WALK_PROPS, "--timeout", "30")
    assert r.code == 3
    lines = r.out.replace(r.path, "bad.yaml").splitlines()
    assert lines[0].startswith("incomplete (stopped at --timeout)  bad.yaml [walk]: 21 states, ")
    assert ("  --timeout 30 s reached after the exploration, while solving the probability of east; not done: "
            "solving the expected transitions of cost, computing the worst case of transitions, computing the "
            "outcome table, looking for the parts of the spec that never matter (vacuity)") in lines
    assert "  unknown   2 properties, not decided as the analyses after the exploration stopped (--verbose lists them)" \
        in lines
    assert lines[-1] == "1 run: 0 proved, 0 violated as expected, 0 failed, 1 incomplete -> incomplete"


def test_the_timeout_stops_exact_elimination(check, monkeypatch):
    """The retry loop's cycle is solved by Gaussian elimination (`_solve`), within policy iteration."""
    deadline_in(monkeypatch, "_solve")
    code, data = run(check, RETRY, "--timeout", "30")
    assert code == 3
    stopped = "the --timeout 30 s was reached while solving the probability of ends"
    assert statuses(data)["ends"] == ("unknown", f"not decided: {stopped}")
    assert statuses(data)["cost"] == ("unknown", f"not decided: {stopped}, before solving the expected transitions "
                                                 "of cost")
    assert data["stop_reason"].startswith("--timeout 30 s reached after the exploration, while solving the "
                                          "probability of ends; not done: solving the expected transitions of cost")


def test_a_violation_found_before_the_bound_stays_a_violation(check, monkeypatch):
    """likely_success is judged (violated) before cheap, an expected total the bound stops: exit 1."""
    deadline_in(monkeypatch, "_expected")
    text = AGENT + ("  likely_success: {probability: {reach: decision == success, at_least: 0.6}}\n"
                    "  cheap: {expected: {measure: transitions, at_most: 1.8}}\n")
    code, data = run(check, text, "--timeout", "30")
    assert code == 1
    assert (data["result"], data["stopped_by"]) == ("violated", "timeout")
    likely = prop({"runs": [data]}, "likely_success")
    assert likely["status"] == "violated" and likely["exact"] == {"min": "0", "max": "139/200"}
    assert statuses(data)["cheap"] == (
        "unknown", "not decided: the --timeout 30 s was reached while solving the expected transitions of cheap")


FAIR_RETRY = ((Path(__file__).parent.parent / "fixtures" / "fairness" / "retry.yaml").read_text()
              + "fairness:\n  - strong: call_tool\n    when: outcome == ok\n")


@pytest.mark.parametrize("function, stopped, decided", [
    ("fair_components", "ends", None),             # the fair-cycle search of `terminates` (and all after it)
    ("bad_run", "finishes", "ends"),               # the liveness pattern's own search; terminates was decided
])
def test_the_timeout_stops_the_fair_cycle_searches(check, monkeypatch, function, stopped, decided):
    deadline_in(monkeypatch, function)
    code, data = run(check, FAIR_RETRY, "--timeout", "30")
    assert code == 3 and data["stopped_by"] == "timeout"
    doing = {"ends": "searching for a deadlock or a cycle for ends",
             "finishes": "searching for a run that breaks finishes"}
    got = statuses(data)
    assert got[stopped] == ("unknown", f"not decided: the --timeout 30 s was reached while {doing[stopped]}")
    if decided is None:
        assert got["finishes"] == ("unknown", f"not decided: the --timeout 30 s was reached while {doing['ends']}, "
                                              f"before {doing['finishes']}")
    else:
        assert got[decided] == ("holds", "every run reaches a terminal state; under fairness: strong call_tool "
                                         "when outcome == ok")
    assert data["stop_reason"].startswith(f"--timeout 30 s reached after the exploration, while {doing[stopped]}")


COUNTER = """\
machine: counter
params:
  N: [3, 4, 5]
vars:
  n: {type: int, min: 0, max: N, init: 0}
  jumps: {type: int, min: 0, max: N, init: 0}
actions:
  step:
    when: n < N
    choose:
      by: [1, 2]
    do:
      - set: {n: "min(n + by, N)", jumps: "jumps + (1 if by == 2 else 0)"}
terminal: n == N
measures:
  doubles: {count: by == 2}
properties:
  small: {always: jumps <= N}
  quick: {terminates_within: 5, smallest_safe: N}
"""


def test_the_timeout_stops_the_longest_run_and_the_worst_cases(check, monkeypatch):
    """terminates_within and the bounds both read the longest run: the first stops, the rest
    (the bounds of transitions and doubles) come after. `small` was decided by the exploration."""
    deadline_in(monkeypatch, "longest_run")
    code, data = run(check, COUNTER, "-p", "N=3", "--timeout", "30")
    assert code == 3
    stopped = "the --timeout 30 s was reached while searching for the longest run for quick"
    assert statuses(data)["small"] == ("holds", "true in every reachable state")
    assert statuses(data)["quick"] == ("unknown", f"not decided: {stopped}")
    assert {k: b["message"] for k, b in data["bounds"].items()} == {
        name: f"not computed: {stopped}, before computing the worst case of {name}" for name in ("transitions", "doubles")}


def test_the_timeout_stops_the_worst_cases_alone(check, monkeypatch):
    """Every property decided, only the bounds' longest runs left: still incomplete (exit 3)."""
    deadline_in(monkeypatch, "longest_run")
    code, data = run(check, COUNTER.replace("  quick: {terminates_within: 5, smallest_safe: N}\n", ""),
                     "-p", "N=3", "--timeout", "30")
    assert code == 3
    assert statuses(data) == {"domains": DOMAINS, "well_defined": WELL_DEFINED,
                              "small": ("holds", "true in every reachable state")}
    assert data["bounds"]["transitions"]["message"] == (
        "not computed: the --timeout 30 s was reached while computing the worst case of transitions")
    assert data["bounds"]["doubles"]["message"] == (
        "not computed: the --timeout 30 s was reached while computing the worst case of transitions, before "
        "computing the worst case of doubles")
    assert data["stop_reason"] == ("--timeout 30 s reached after the exploration, while computing the worst case of "
                                   "transitions; not done: computing the worst case of doubles, looking for the "
                                   "parts of the spec that never matter (vacuity)")


def test_a_sweep_summary_says_not_decided_where_a_bound_stopped_the_property(check, monkeypatch):
    """The first run (N=3) is stopped in its longest run; N=4 and N=5 are judged in full (they
    hold). The smallest safe value is read from what was decided: N=3 is undecided, and was
    called "violated at N=3" by the summary."""
    deadline_in(monkeypatch, "longest_run")
    r = check(COUNTER, "--timeout", "30", "--format", "json")
    assert r.code == 3
    report = json.loads(r.out)
    assert [run["result"] for run in report["runs"]] == ["incomplete", "proved", "proved"]
    (safe,) = report["sweeps"][0]["smallest_safe"]
    assert (safe["value"], safe["unsafe_at"], safe["undecided_at"]) == (4, [], [3])
    assert safe["message"] == "quick holds from N=4 on (swept 3..5; not decided at N=3)"



DEAD_RULE = """\
machine: dead
vars:
  n: {type: int, min: 0, max: 3, init: 0}
  s: {type: enum, values: [go, done], init: go}
actions:
  step:
    when: s == go
    do:
      - set: {n: n + 1}
      - decide: s
        rules:
          - {name: finish, when: n >= 3, then: done}
          - {name: never, when: n > 5, then: done}
          - {name: again, then: go}
terminal: s == done
properties:
  ok: {always: n <= 3}
  top: {maximum: n, at_most: 3}
  quick: {terminates_within: 5, count: "10 // (4 - before.n) > 0"}
"""


@pytest.mark.parametrize("bound", ["timeout", "max_memory"])
def test_a_bound_stops_the_vacuity_checks(check, monkeypatch, bound):
    """Every property is decided; the warning about the dead rule is not looked for: exit 3."""
    if bound == "timeout":
        deadline_in(monkeypatch, "_all_notices")
        code, data = run(check, DEAD_RULE, "--timeout", "30")
        head = "--timeout 30 s"
    else:
        memory_full_in(monkeypatch, "_all_notices")
        code, data = run(check, DEAD_RULE, "--max-memory", "1G")
        head = "memory limit 1G"
    assert code == 3 and data["stopped_by"] == bound
    assert {name: status for name, (status, _) in statuses(data).items()} == dict.fromkeys(
        ("domains", "well_defined", "ok", "top", "quick"), "holds")
    assert data["warnings"] == []
    assert data["stop_reason"] == (f"{head} reached after the exploration, while looking for the parts of "
                                   "the spec that never matter (vacuity)")
    monkeypatch.setattr(budget, "clock", time.monotonic)          # the real clock and memory again
    monkeypatch.setattr(C, "current_rss", current_rss)
    code, data = run(check, DEAD_RULE)            # unbounded: the warning it would have given
    assert code == 0 and data["warnings"] == [
        "vacuous: decide rule 'never' of action step (line 13) never fires: its condition is never true in any "
        "reachable step"]


def test_the_timeout_stops_the_counts_on_every_transition(check, monkeypatch):
    """`quick`'s count may fail (a division): it is evaluated on every explored transition
    first, a failure being a well_defined finding. Stopped there, well_defined is not known."""
    deadline_in(monkeypatch, "first_count_error")
    code, data = run(check, DEAD_RULE, "--timeout", "30")
    assert code == 3
    stopped = ("the --timeout 30 s was reached while evaluating the counts and measures on the explored "
               "transitions")
    got = statuses(data)
    assert got["domains"] == DOMAINS and got["ok"] == ("holds", "true in every reachable state")
    assert got["well_defined"] == ("unknown", f"not decided: {stopped}")
    assert got["top"] == ("unknown", f"not decided: {stopped}, before evaluating top on every explored state")
    assert got["quick"] == ("unknown", f"not decided: {stopped}, before searching for the longest run for quick")


def test_the_timeout_stops_a_maximum_on_every_state(check, monkeypatch):
    deadline_in(monkeypatch, "_scalar_highest")
    code, data = run(check, DEAD_RULE, "--timeout", "30", "--engine", "scalar")
    assert code == 3
    stopped = "the --timeout 30 s was reached while evaluating top on every explored state"
    got = statuses(data)
    assert got["top"] == ("unknown", f"not decided: {stopped}")
    assert got["well_defined"] == ("unknown", f"not decided: {stopped}")    # a failure there would be one
    assert "maximum" not in prop({"runs": [data]}, "top")


def test_a_memory_limit_stops_an_analysis_as_the_timeout_does(check, monkeypatch):
    monkeypatch.setattr(P, "EXACT_LIMIT", 5)
    memory_full_in(monkeypatch, "reach_intervals")
    code, data = run(check, SMALL_WALK + WALK_PROPS, "--max-memory", "1G")
    assert code == 3
    assert (data["stopped_by"], data["stopped_after_exploration"]) == ("max_memory", True)
    stopped = "the memory limit 1G was reached while solving the probability of east"
    assert statuses(data)["east"] == ("unknown", f"not decided: {stopped}")
    assert statuses(data)["cost"] == ("unknown", f"not decided: {stopped}, before solving the expected "
                                                 "transitions of cost")
    assert data["stop_reason"].startswith("memory limit 1G reached after the exploration, while solving the "
                                          "probability of east; not done: ")


def test_memory_running_out_in_an_analysis_is_a_bound_not_a_crash(check, monkeypatch):
    """A MemoryError inside an analysis (the iteration's arrays, say): exit 3, never 4."""
    monkeypatch.setattr(P, "EXACT_LIMIT", 5)

    def no_memory(*args, **kwargs):
        raise MemoryError
    monkeypatch.setattr(P, "from_mdp", no_memory)
    code, data = run(check, SMALL_WALK + WALK_PROPS)
    assert code == 3 and data["stopped_by"] == "max_memory"
    assert statuses(data)["east"] == ("unknown", "not decided: memory ran out while solving the probability of east")
    assert data["stop_reason"] == (
        "out of memory after the exploration, while solving the probability of east; not done: solving the "
        "expected transitions of cost, computing the worst case of transitions, computing the outcome table, "
        "looking for the parts of the spec that never matter (vacuity) (a bound, not a bug: try --max-memory, "
        "more memory, or smaller params)")


@pytest.mark.slow
def test_a_random_walk_in_two_dimensions_stops_at_the_timeout(check):
    """The issue's case, on the real clock: 621 states whose probability takes minutes of
    interval iteration (a step moves with odds 1/100). With --timeout 2 the check ends, exit 3."""
    code, data = run(check, WALK_2D, "--timeout", "2")
    assert code == 3 and data["stopped_by"] == "timeout"
    east = statuses(data)["east"]
    assert east[0] == "unknown" and east[1].startswith("not decided: the --timeout 2 s ")


WALK_2D = """\
machine: walk2
vars:
  x: {type: int, min: 0, max: 24, init: 12}
  y: {type: int, min: 0, max: 24, init: 12}
actions:
  step:
    when: x > 0 and x < 24 and y > 0 and y < 24
    choose:
      dir: [n, s, e, w, z]
    do:
      - set: {x: "x + 1 if dir == e else x - 1 if dir == w else x", y: "y + 1 if dir == n else y - 1 if dir == s else y"}
terminal: x == 0 or x == 24 or y == 0 or y == 24
probabilities:
  step:
    dir: {n: 0.0025, s: 0.0025, e: 0.0025, w: 0.0025, z: 0.99}
properties:
  east: {probability: {reach: x == 24, at_least: 0.2}}
"""


def test_a_verdict_the_exploration_decided_stays_when_its_note_is_stopped(check, monkeypatch):
    """A pattern and a past-time invariant are decided by the exploration; only the count of the
    states their monitors added (`distinct`) is an analysis: stopped, the note says so."""
    deadline_in(monkeypatch, "distinct")
    text = DEAD_RULE.replace("  top: {maximum: n, at_most: 3}\n", "  late: {absence: n > 3, scope: {after: n == 1}}\n"
                             "  grows: {always: \"n == 0 or previous(n) < n\"}\n")
    code, data = run(check, text, "--timeout", "30")
    assert code == 3
    got = statuses(data)
    assert got["late"] == ("holds", "no state in its scope satisfies it (scope after); how many states the pattern "
                                    "monitors added is not counted: the --timeout 30 s was reached while counting "
                                    "the states the pattern monitors added")
    assert got["grows"] == ("holds", "true in every reachable state; how many states its past-time monitors (2 vars) "
                                     "added is not counted: the --timeout 30 s was reached while counting the states "
                                     "the pattern monitors added, before counting the states the past-time monitors "
                                     "of grows added")


def test_the_timeout_stops_the_outcome_table(check, monkeypatch):
    """A spec with weights and no probability property: only its outcome table is left."""
    deadline_in(monkeypatch, "_table")
    code, data = run(check, AGENT + "  ok: {always: steps <= 3}\n", "--timeout", "30")
    assert code == 3
    assert data["outcomes"] == {"message": "not computed: the --timeout 30 s was reached while computing the "
                                           "outcome table"}
    assert statuses(data)["ok"] == ("holds", "true in every reachable state")


def test_the_timeout_stops_the_check_of_parts_declared_unreachable(check, monkeypatch):
    """`again` is declared unreachable, yet fires: a finding, with a shortest trace found by a
    walk over the explored transitions. Stopped there, the built-in is not decided either way."""
    text = DEAD_RULE.replace("          - {name: again, then: go}\n",
                             "          - {name: again, then: go, unreachable_when: true, because: a bad guess}\n")
    code, data = run(check, text)
    assert code == 1 and statuses(data)["declared_unreachable"][0] == "violated"
    deadline_in(monkeypatch, "_first_edge")
    code, data = run(check, text, "--timeout", "30")
    assert code == 3
    assert statuses(data)["declared_unreachable"] == (
        "unknown", "not decided: the --timeout 30 s was reached while checking the parts declared unreachable")


# ---------------------------------------------------------------- the ticks inside the long loops

def ticks_from(monkeypatch, module, stop_at: dict[str, int]) -> list[str]:
    """Record the function each `tick()` of `module` comes from, and stop (raise Stopped) at
    the n-th tick from a function named in `stop_at`."""
    calls: list[str] = []

    def tick() -> None:
        frame = sys._getframe(1)
        name = _name(frame)
        if name == "ticking" and frame.f_back is not None:   # a loop written with `ticking`: the function that drives it
            name = _name(frame.f_back)
        calls.append(name)
        if calls.count(name) == stop_at.get(name):
            raise budget.Stopped(budget.TIMEOUT, "x", "x")
    monkeypatch.setattr(module, "tick", tick)
    return calls


def test_interval_iteration_looks_at_the_bounds_every_16_rounds(monkeypatch):
    """A walk where a step moves with odds 1/100 takes thousands of rounds; the third look
    inside the loop ends it, and the Stopped is not taken for `TooLarge` or swallowed."""
    from test_probability_solver import mdp
    from haltproof.properties import sparse as S
    calls = ticks_from(monkeypatch, S, {"reach_intervals": 3})
    m = mdp({i: {"step": [(i + 1, "1/250"), (i - 1, "3/500"), (i, "99/100")]} for i in range(1, 60)},
            [i in (0, 60) for i in range(61)], initial=(30,))
    with pytest.raises(budget.Stopped):
        S.reach_intervals(P.from_mdp(m), np.array([i == 60 for i in range(61)]), "min")
    assert calls.count("reach_intervals") == 3


def test_exact_elimination_looks_at_the_bounds_once_a_pivot(monkeypatch):
    """The walk of 59 inner states is one component: 59 pivots, a look at each."""
    from test_probability_solver import ruin, ruin_win
    calls = ticks_from(monkeypatch, P, {})
    r = P.reach(ruin(n=60, start=30), [i == 60 for i in range(61)])
    assert r.min == ruin_win(n=60, start=30)
    # the elimination ticks in solve_columns (`_solve` is its one-column case): min and max, each at
    # least one elimination of 59 pivots
    assert calls.count("solve_columns") >= 59 * 2
    calls = ticks_from(monkeypatch, P, {"solve_columns": 30})
    with pytest.raises(budget.Stopped):
        P.reach(ruin(n=60, start=30), [i == 60 for i in range(61)])


# ---------------------------------------------------------------- each analysis, under each bound

ANALYSES = [   # (function with a tick, spec, options, property it leaves unknown, the analysis named)
    ("reach_intervals", SMALL_WALK + WALK_PROPS, ["--engine", "scalar"], "east", "solving the probability of east"),
    ("_solve", RETRY, [], "ends", "solving the probability of ends"),
    ("optimize", RETRY, [], "ends", "solving the probability of ends"),
    ("expected_total", AGENT + "  cheap: {expected: {measure: transitions, at_most: 3}}\n", [], "cheap",
     "solving the expected transitions of cheap"),
    ("find_lasso", RETRY.replace("  cost: {expected: {measure: transitions, at_most: 2}}\n", "  stops: {terminates: true}\n"),
     [], "stops", "searching for a deadlock or a cycle for stops"),
    ("fair_components", FAIR_RETRY, [], "ends", "searching for a deadlock or a cycle for ends"),
    ("bad_run", FAIR_RETRY, [], "finishes", "searching for a run that breaks finishes"),
    ("kahn_order", COUNTER, ["-p", "N=3", "--engine", "scalar"], "quick", "searching for the longest run for quick"),
    ("longest_run", COUNTER, ["-p", "N=3", "--engine", "scalar"], "quick", "searching for the longest run for quick"),
    ("_longest_vector", COUNTER, ["-p", "N=3", "--engine", "vector"], "quick",
     "searching for the longest run for quick"),
    ("first_count_error", DEAD_RULE, [], "well_defined", "evaluating the counts and measures on the explored "
                                                          "transitions"),
    ("_scalar_highest", DEAD_RULE, ["--engine", "scalar"], "top", "evaluating top on every explored state"),
]


@pytest.mark.parametrize("bound", ["timeout", "max_memory"])
@pytest.mark.parametrize("function, text, options, name, doing", ANALYSES, ids=[a[0] for a in ANALYSES])
def test_every_analysis_stops_at_either_bound(check, monkeypatch, bound, function, text, options, name, doing):
    monkeypatch.setattr(P, "EXACT_LIMIT", 5)         # the walk is iterated (19 states), the rest exact
    if bound == "timeout":
        deadline_in(monkeypatch, function)
        code, data = run(check, text, "--timeout", "30", *options)
        head = "the --timeout 30 s was reached"
    else:
        memory_full_in(monkeypatch, function)
        code, data = run(check, text, "--max-memory", "1G", *options)
        head = "the memory limit 1G was reached"
    assert code == 3, statuses(data)
    assert (data["stopped_by"], data["stopped_after_exploration"]) == (bound, True)
    assert statuses(data)[name] == ("unknown", f"not decided: {head} while {doing}")
    assert data["stop_reason"].split(";")[0] == (
        f"{head.removeprefix('the ').removesuffix(' was reached')} reached after the exploration, while {doing}")
