"""Recursive sub-agents (`depth:` on a sub-agent, machine/compose.py): an agent that runs copies of
itself, at most `depth` copies deep. The copies are unrolled into one machine; these tests pin its
exact size (counted by hand and by a separate enumerator), its worst cases per depth, the shortest
nested trace of a failure at the bound, and the mistakes refused at the file and line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import ROOT
from test_agents import in_tmp, problems, write  # noqa: F401  (in_tmp: the same autouse fixture, working folder = tmp_path)
from haltproof.machine.spec import load_spec

ENGINES = ["scalar", "vector"]
SHIPPED = (ROOT / "examples" / "trees" / "recursive" / "solver.yaml").read_text()
# the shipped solver without the team's assumption (an expected violation at depth 3)
SOLVER = SHIPPED[:SHIPPED.index("  at_most_10_model_calls:")] + SHIPPED[SHIPPED.index("  stops:"):SHIPPED.index("expect:")]
NO_GIVE_UP = SOLVER[:SOLVER.index("  give_up:")] + SOLVER[SOLVER.index("  merge:"):]



def runs(cli, spec: Path, *args: str) -> list[dict]:
    r = cli("check", spec, "--format", "json", *args)
    assert r.code == 0, r.out
    return r.json()["runs"]


# -- the solver's machine, counted apart from haltproof

Copy = tuple[str, int, "Copy | None"]      # phase, halves, the half it is running (None: none)
START: Copy = ("trying", 0, None)


def steps(copy: Copy, calls: int, left: int) -> Iterator[tuple[Copy, int]]:
    """The solver's transitions as docs/reference/spec-language.md states them, written directly:
    a copy with `left` levels below it; a running half steps inside, or returns once it ended."""
    phase, halves, half = copy
    if half is not None:
        if half[0] in ("solved", "failed"):
            done = halves + (half[0] == "solved")
            yield ("failed" if half[0] == "failed" else "merging" if done == 2 else "splitting", done, None), calls
        else:
            yield from (((phase, halves, h), c) for h, c in steps(half, calls, left - 1))
        return
    if phase == "trying":
        yield ("solved", halves, None), calls + 1
        yield ("splitting", halves, None), calls + 1
    if phase == "splitting" and halves < 2 and left >= 1:
        yield (phase, halves, START), calls
    if phase == "splitting" and halves == 0:
        yield ("failed", halves, None), calls
    if phase == "merging":
        yield ("solved", halves, None), calls + 1


def enumerate_solver(depth: int) -> tuple[int, int]:
    """States and terminal states of the solver at `depth`, by a plain search over `steps`."""
    seen = {(START, 0)}
    todo = [(START, 0)]
    terminal = 0
    while todo:
        copy, calls = todo.pop()
        if copy[0] in ("solved", "failed"):
            terminal += 1
            continue
        for nxt in steps(copy, calls, depth):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return len(seen), terminal


def test_the_separate_enumerator_gives_the_counts_made_by_hand():
    """By hand, depth 0: trying(0), then solved(1) or splitting(1), and from splitting only
    give_up, failed(1): 4 states, 2 of them terminal. Depth 1 adds the halves: the 4 above; the first half's 4
    states under `calling = solve_half` (calls 1, 2, 2, 2); its 2 returns (splitting with one
    half, failed, both at 2 calls); the second half's 4 (calls 2, 3, 3, 3); its 2 returns
    (merging, failed, at 3); merged, solved at 4: 4 + 4 + 2 + 4 + 2 + 1 = 17, of which 5 are
    terminal (solved at 1 and 4, failed at 1, 2 and 3)."""
    assert [enumerate_solver(d) for d in (0, 1)] == [(4, 2), (17, 5)]


@pytest.mark.verdict
@pytest.mark.parametrize("engine", ENGINES)
def test_a_recursive_tree_explores_exactly_the_machine_the_semantics_gives(cli, tmp_path, engine):
    spec = write(tmp_path, solver=SOLVER)
    got = runs(cli, spec, "--engine", engine)
    assert [r["params"]["depth"] for r in got] == [0, 1, 2, 3]
    assert [(r["stats"]["states"], r["stats"]["terminal_states"]) for r in got] == \
        [enumerate_solver(d) for d in range(4)] == [(4, 2), (17, 5), (72, 14), (329, 34)]


@pytest.mark.verdict
@pytest.mark.parametrize("engine", ENGINES)
def test_worst_cases_swept_over_the_depth_add_up_across_every_copy(cli, tmp_path, engine):
    """Each copy makes at most 2 calls of its own plus its two halves': 3 * 2**depth - 2 in all."""
    spec = write(tmp_path, solver=SOLVER)
    got = runs(cli, spec, "--engine", engine, "-p", "depth=0", "-p", "depth=1", "-p", "depth=2", "-p", "depth=3")
    worst = [{k: b["value"] for k, b in r["bounds"].items()} for r in got]
    assert worst == [{"transitions": 2, "model_calls": 1},
                     {"transitions": 8, "model_calls": 4},
                     {"transitions": 22, "model_calls": 10},
                     {"transitions": 50, "model_calls": 22}]
    assert [3 * 2 ** d - 2 for d in range(4)] == [w["model_calls"] for w in worst]
    calls = [next(p for p in r["properties"] if p["name"] == "model_calls_in_all") for r in got]
    assert [(p["status"], p["maximum"]["value"]) for p in calls] == [("holds", 1), ("holds", 4), ("holds", 10),
                                                                     ("holds", 22)]
    assert all(next(p for p in r["properties"] if p["name"] == "stops")["status"] == "holds" for r in got)


@pytest.mark.verdict
@pytest.mark.parametrize("engine", ENGINES)
def test_a_copy_stuck_at_the_depth_bound_is_caught_with_the_shortest_nested_trace(cli, tmp_path, engine):
    """Without give_up, a copy at the bound that finds its task too big has nothing to do: the
    split is not enabled there, so the tree deadlocks inside it. The state has every copy the
    param's values allow (3 deep) and the one past them (`half.half.half.half`, never entered)."""
    spec = write(tmp_path, solver=NO_GIVE_UP)
    r = cli("check", spec, "--engine", engine, "-p", "depth=2", "--property", "stops", "--verbose")
    assert r.code == 1
    finding = ("VIOLATED  stops         deadlock: a non-terminal state with no enabled action, inside sub-agent "
               "half.half, run by half.solve_half: that call never returns\n")
    assert finding in r.out
    assert r.out.split(finding)[1].splitlines()[:7] == [
        "      step  action                 choices          rule             state (changes)",
        "      0     (initial)                                                phase=trying halves=0 calls=0 "
        "half.phase=trying half.halves=0 half.half.phase=trying half.half.halves=0 half.half.half.phase=trying "
        "half.half.half.halves=0 half.half.half.half.phase=trying half.half.half.half.halves=0 "
        "half.half.half.calling=top half.half.calling=top half.calling=top calling=top",
        "      1     attempt                outcome=too_big  split            phase=splitting calls=1",
        "      2     solve_half                                               calling=solve_half",
        "      3       half.attempt         outcome=too_big  half.split       calls=2 half.phase=splitting",
        "      4       half.solve_half                                        half.calling=solve_half",
        "      5         half.half.attempt  outcome=too_big  half.half.split  calls=3 half.half.phase=splitting",
    ]
    prop = cli("check", spec, "--engine", engine, "-p", "depth=2", "--property", "stops",
               "--format", "json").json()["runs"][0]["properties"][-1]
    assert [(s["action"], s.get("depth")) for s in prop["trace"]["steps"]] == [
        (None, None), ("attempt", None), ("solve_half", None), ("half.attempt", 1), ("half.solve_half", 1),
        ("half.half.attempt", 2)]


def test_copies_past_the_bound_are_not_reported_as_vacuous(cli, tmp_path):
    """At depth 1 the copies two and three deep never run: that is the bound, not news. What
    is news stays: the deepest copy that runs never merges."""
    spec = write(tmp_path, solver=SOLVER)
    warnings = [line.strip() for line in cli("check", spec, "-p", "depth=1", "--verbose").out.splitlines()
                if "warning:" in line]
    assert warnings == ["warning: vacuous: action half.merge (line 43) is never taken"]


def two_halves(name: str) -> str:
    """The solver with a sub-agent of itself per half (`left`, `right`), in file `name`.yaml."""
    return SOLVER.replace("""  half:
    spec: solver.yaml                  # itself
    params: {depth: depth}
    depth: depth                       # a half runs only within the bound
    shared: {calls: calls}""", f"""  left: {{spec: {name}.yaml, params: {{depth: depth}}, depth: depth, shared: {{calls: calls}}}}
  right: {{spec: {name}.yaml, params: {{depth: depth}}, depth: depth, shared: {{calls: calls}}}}""").replace("""  solve_half:                          # runs a copy of itself on the next half
    when: phase == splitting and halves < 2
    run: half
    do:
      - set: {halves: halves + (1 if half.phase == solved else 0)}""", """  solve_left:
    when: phase == splitting and halves == 0
    run: left
    do:
      - set: {halves: 1 if left.phase == solved else 0}
      - decide: phase
        rules:
          - {name: left_failed, when: left.phase == failed, then: failed}
          - {name: left_solved, then: splitting}
  solve_right:
    when: phase == splitting and halves == 1
    run: right
    do:
      - set: {halves: 2 if right.phase == solved else 1}""").replace("half.phase == failed", "right.phase == failed")


@pytest.mark.verdict
def test_two_sub_agents_of_itself_allow_the_same_worst_case_as_one_run_twice(cli, tmp_path):
    spec = write(tmp_path, two=two_halves("two"))
    got = runs(cli, spec, "-p", "depth=2")
    assert got[0]["bounds"]["model_calls"]["value"] == 10
    assert sorted(a.name for a in load_spec(spec).actions if a.name.count(".") == 2 and a.name.endswith("attempt")) \
        == ["left.left.attempt", "left.right.attempt", "right.left.attempt", "right.right.attempt"]


@pytest.mark.slow
def test_a_depth_that_would_make_too_many_copies_is_refused(cli, tmp_path):
    """Two halves of itself, depth up to 4: 31 copies and 32 past the bound, 63 in all; up to
    5 they would be 127 (17 s and 470 MB to check), past the 64 allowed."""
    tree = load_spec(write(tmp_path, two=two_halves("two").replace("max: 3}", "max: 4}")))
    assert len({a.name.rsplit(".", 1)[0] for a in tree.actions if a.name.endswith(".attempt")}) == 30   # + the top
    r = cli("check", write(tmp_path, two=two_halves("two").replace("max: 3}", "max: 5}")), "-p", "depth=1")
    assert r.code == 2
    assert r.err.strip() == (
        "error: two.yaml:13: sub-agent left: its depth bound makes more than 64 copies of the specs that run "
        "themselves, each part of the machine (two sub-agents of itself double them at each level): lower the most "
        "the depth can be, or run one sub-agent twice (its calls run one after the other, so one copy per level is "
        "enough)")


MUTUAL_A = """\
machine: a
params:
  d: [1, 2]
vars:
  n: {type: int, min: 0, max: 9, init: 0}
  done: {type: bool, init: false}
agents:
  b: {spec: b.yaml, params: {d: d}, depth: d, shared: {n: n}}
actions:
  call_b:
    when: not done
    run: b
    do:
      - set: {done: true, n: n + 1}
terminal: done
"""

MUTUAL_B = """\
machine: b
params:
  d: [1, 2]
vars:
  n: {type: int, min: 0, max: 9, init: 0}
  done: {type: bool, init: false}
agents:
  a: {spec: a.yaml, params: {d: d}, depth: d, shared: {n: n}}
actions:
  call_a:
    when: not done
    run: a
    do:
      - set: {done: true, n: n + 1}
  stop:
    when: not done
    do:
      - set: {done: true}
terminal: done
"""


@pytest.mark.verdict
@pytest.mark.parametrize("engine", ENGINES)
def test_mutual_recursion_counts_the_copies_of_each_spec(cli, tmp_path, engine):
    """a runs b, which stops or runs a, ...; at most d copies of a spec run inside its first.
    At d = 1: a calls b, b calls a (a's first copy), that a calls b (b's first copy), which
    must stop (a second copy of a would pass d): 3 calls, the stop and 3 returns, each return
    adding 1 to n. Each more level adds two calls and their returns."""
    spec = write(tmp_path, a=MUTUAL_A, b=MUTUAL_B)
    got = runs(cli, spec, "--engine", engine)
    assert [(r["bounds"]["transitions"]["value"], max(s["state"]["n"] for s in r["bounds"]["transitions"]["witness"]
             ["steps"])) for r in got] == [(7, 3), (11, 5)]
    names = [a.name for a in load_spec(spec).actions]
    assert "b.a.b.a.b.stop" in names and "b.a.b.a.b.a.call_b" not in names


# -- what is refused, at the file and line

def test_a_depth_that_is_no_int_or_int_param_is_refused(tmp_path):
    body = SOLVER.replace("  depth: {min: 0, max: 3}", "  depth: {min: 0, max: 3}\n  fast: {type: bool}")
    cases = {"depth - 1": "depth of sub-agent half must be an int >= 0 or the name of an int param of this spec "
                          "(params: depth, fast)",
             "-1": "depth of sub-agent half must be an int >= 0 or the name of an int param of this spec (params: "
                   "depth, fast)",
             "fast": "depth of sub-agent half must be an int >= 0 or the name of an int param of this spec (params: "
                     "depth, fast)",
             "true": "depth of sub-agent half must be an int >= 0 or the name of an int param of this spec (params: "
                     "depth, fast)"}
    for given, message in cases.items():
        spec = write(tmp_path, solver=body.replace("    depth: depth                       # a half",
                                                   f"    depth: {given}   # a half"))
        assert problems(spec) == [f"solver.yaml:17: {message}"], given


def test_a_depth_param_that_may_be_negative_is_refused(tmp_path):
    spec = write(tmp_path, solver=SOLVER.replace("depth: {min: 0, max: 3}", "depth: {min: -1, max: 3, values: [1]}"))
    assert problems(spec) == ["solver.yaml:16: depth of sub-agent half is param depth, which may be -1 (any int -1..3; "
                              "swept by default: 1): a depth bound is 0 or more"]


def test_a_recursive_sub_agent_without_a_depth_is_refused_saying_how_to_bound_it(tmp_path):
    spec = write(tmp_path, solver=SOLVER.replace("    depth: depth                       # a half runs only within "
                                                 "the bound\n", ""))
    assert problems(spec) == [
        "solver.yaml:14: sub-agent half makes a cycle of sub-agents (solver.yaml -> solver.yaml): an agent that runs "
        "itself needs a depth bound: give sub-agent half depth: N (an int, or an int param of this spec), the most "
        "copies of solver.yaml that may run nested inside its outermost run"]


def test_check_refuses_a_recursive_tree_without_a_depth_with_exit_2(cli, tmp_path):
    spec = write(tmp_path, solver=SOLVER.replace("    depth: depth                       # a half runs only within "
                                                 "the bound\n", ""))
    r = cli("check", spec)
    assert (r.code, r.out) == (2, "")
    assert r.err.startswith("error: solver.yaml:14: sub-agent half makes a cycle of sub-agents (solver.yaml -> "
                            "solver.yaml): an agent that runs itself needs a depth bound: give sub-agent half depth: N")


@pytest.mark.verdict
def test_a_literal_depth_bounds_the_copies_for_every_param(cli, tmp_path):
    spec = write(tmp_path, solver=SOLVER.replace("    depth: depth                       # a half", "    depth: 1   #"))
    got = runs(cli, spec)
    assert {r["bounds"]["model_calls"]["value"] for r in got} == {4}


HELPER = """\
machine: helper
params:
  limit: {min: 1, max: 5}
vars:
  turn: {type: int, min: 0, max: limit, init: 0}
actions:
  call:
    when: turn < limit
    do:
      - set: {turn: turn + 1}
terminal: turn >= limit
"""

MID = """\
machine: mid
params:
  mlimit: {min: 1, max: 9, values: [1, 2]}
vars:
  asked: {type: bool, init: false}
agents:
  helper:
    spec: helper.yaml
    params: {limit: mlimit}
actions:
  delegate:
    when: not asked
    run: helper
    do:
      - set: {asked: true}
terminal: asked
"""

TOP = """\
machine: top
vars:
  done: {type: bool, init: false}
agents:
  mid:
    spec: mid.yaml
    params: {mlimit: 7}
actions:
  go:
    when: not done
    run: mid
    do:
      - set: {done: true}
terminal: done
"""


def test_a_value_a_sub_agents_own_sub_agent_does_not_allow_is_refused_in_the_tree(cli, tmp_path):
    """mid alone sweeps mlimit 1 and 2, which helper allows; the tree gives it 7, and helper
    would run with limit 7 (its spec allows 1..5). Before, only the tree's own sub-agents were
    checked, and the tree was proved with 12 states."""
    spec = write(tmp_path, top=TOP, mid=MID, helper=HELPER)
    assert cli("check", tmp_path / "mid.yaml").code == 0
    r = cli("check", spec)
    assert r.code == 2
    assert r.err.strip() == ("error: mid.yaml:7: param limit of sub-agent helper is bound to mlimit = 7, which "
                             "helper.yaml does not allow (1..5)")


@pytest.mark.verdict
def test_the_depth_is_read_in_the_copy_that_calls(cli, tmp_path):
    """Each copy reads `depth` as its own param: given `depth - 1`, the copy k deep may call only
    while k + 1 <= depth - k. Copies past the bound get a depth their spec does not allow (-1 at
    depth 0): that is judged only where the copy can run, so no error."""
    spec = write(tmp_path, solver=SOLVER.replace("params: {depth: depth}", "params: {depth: depth - 1}"))
    got = runs(cli, spec)
    assert [r["bounds"]["model_calls"]["value"] for r in got] == [1, 4, 4, 10]
