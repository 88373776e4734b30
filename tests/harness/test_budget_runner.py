"""The budgeted runner (seed S2) as real code on real SQLite: the worked examples, interface
replacement, the adversarial decisions, and crash-and-resume.

Every run here uses a real SQLite file (the shop, the ledger and the run state in one
database) and a real policy; the HTTP policy talks to a real http.server on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from haltproof.harness.budget import gate as G
from haltproof.harness.budget import transitions as T
from haltproof.harness.budget.policies import DeterministicPolicy, HTTPJSONPolicy, LocalJSONPolicy
from haltproof.harness.budget.policy_server import PolicyServer
from haltproof.harness.budget.runner import Runner
from haltproof.harness.budget.store import RunStore
from haltproof.harness.budget.tasks import TASKS
from haltproof.harness.budget.tools import Faults, Shop, connect

from conftest import ROOT

CAMERA = TASKS["camera"]
CAMERA_INFO = TASKS["camera-info"]
FRESH_STOCK = {"cam-100": (3, 1), "fla-300": (0, 1), "tri-200": (2, 1), "tri-201": (1, 1)}

# The camera chain as a file for LocalJSONPolicy: four tools and the finish (the seed's
# "complete five-action list"). The seeded stock of cam-100 is at version 1.
CAMERA_ACTIONS = [
    {"type": "tool", "tool": "search", "args": {"query": "camera"}},
    {"type": "tool", "tool": "document", "args": {"item": "cam-100"}},
    {"type": "tool", "tool": "stock", "args": {"item": "cam-100"}},
    {"type": "tool", "tool": "reserve", "args": {"item": "cam-100", "quantity": 1, "version": 1}},
    {"type": "finish", "status": "reserved"},
]


class Crash(BaseException):
    """The process dies here (BaseException: nothing in the runner may swallow it)."""


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "shop.sqlite"
    conn = connect(str(path))
    Shop(conn).seed()
    conn.close()
    return path


def open_runner(db: Path, policy: Any, **kw: Any) -> tuple[Runner, sqlite3.Connection]:
    conn = connect(str(db))
    return Runner(conn, policy, **kw), conn


def actions_file(tmp_path: Path, actions: Any, name: str = "actions.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(actions))
    return path


def world(db: Path) -> tuple[dict, list]:
    """What is really in the database: inventory (available, version) and the ledger."""
    conn = connect(str(db))
    try:
        shop = Shop(conn)
        return shop.inventory(), shop.ledger()
    finally:
        conn.close()


def tools_called(run: dict) -> list[str]:
    return [o["tool"] for o in run["observations"]]


class Counting:
    """Wraps a policy and counts how often it is asked."""

    def __init__(self, policy: Any):
        self.policy, self.asked = policy, 0

    def next_action(self, view: dict) -> Any:
        self.asked += 1
        return self.policy.next_action(view)


# ------------------------------------------------------------------ worked example 1

def test_worked_example_1_four_calls_then_finish_reserved_at_c_equal_K(db):
    runner, conn = open_runner(db, DeterministicPolicy())
    run = runner.start(CAMERA, K=4, R=2)
    conn.close()
    assert run["terminal"]["status"] == "finished" and run["terminal"]["final"] == "reserved"
    assert run["calls"] == 4 == run["K"]                    # the finish came at c == K and was accepted
    assert tools_called(run) == ["search", "document", "stock", "reserve"]
    assert all(o["ok"] for o in run["observations"])
    inventory, ledger = world(db)
    assert len(ledger) == 1
    assert ledger[0]["item"] == "cam-100" and ledger[0]["quantity"] == 1 and ledger[0]["run_id"] == "run-1"
    assert run["terminal"]["receipt"] == ledger[0]["receipt"] == run["observations"][3]["result"]["receipt"]
    assert inventory["cam-100"] == (2, 2)                   # one unit taken, version bumped
    assert {k: v for k, v in inventory.items() if k != "cam-100"} == \
           {k: v for k, v in FRESH_STOCK.items() if k != "cam-100"}


def test_the_final_state_is_what_the_database_holds(db):
    runner, conn = open_runner(db, DeterministicPolicy())
    run = runner.start(CAMERA, K=4, R=2, run_id="camera-1")
    conn.close()
    conn = connect(str(db))
    assert RunStore(conn).load("camera-1") == run
    conn.close()


# ------------------------------------------------------------------ the same task with K = 2

def test_same_task_with_K_2_is_budget_exhausted_before_stock(db):
    policy = Counting(DeterministicPolicy())
    runner, conn = open_runner(db, policy)
    run = runner.start(CAMERA, K=2, R=2)
    conn.close()
    t = run["terminal"]
    assert t["status"] == "budget_exhausted" and t["rule"] == "budget_exhausted"
    assert "K=2" in t["reason"]
    assert run["calls"] == 2 and run["pending"] is None      # the stock call was never prepared
    assert tools_called(run) == ["search", "document"]        # observations kept
    assert all(o["ok"] for o in run["observations"])
    assert policy.asked == 3                                  # search, document, then stock is refused
    inventory, ledger = world(db)
    assert inventory == FRESH_STOCK and ledger == []          # inventory unchanged, nothing reserved


@pytest.mark.parametrize("K", [1, 2, 3])
def test_below_four_calls_nothing_is_ever_reserved(db, K):
    runner, conn = open_runner(db, DeterministicPolicy())
    run = runner.start(CAMERA, K=K, R=2)
    conn.close()
    assert run["terminal"]["status"] == "budget_exhausted" and run["calls"] == K
    assert world(db) == (FRESH_STOCK, [])


# ------------------------------------------------------------------ worked example 2 and early finishes

def test_worked_example_2_finish_reserved_first_is_policy_error(db, tmp_path):
    policy = LocalJSONPolicy(actions_file(tmp_path, [{"type": "finish", "status": "reserved"}]))
    runner, conn = open_runner(db, policy)
    run = runner.start(CAMERA, K=4, R=2)
    conn.close()
    t = run["terminal"]
    assert t["status"] == "policy_error" and t["rule"] == "unsupported_finish"
    assert "unsupported final status" in t["reason"] and "receipt" in t["reason"]
    assert run["calls"] == 0 and run["observations"] == []
    assert world(db) == (FRESH_STOCK, [])


@pytest.mark.parametrize("actions,task,why", [
    ([{"type": "finish", "status": "info"}], CAMERA_INFO, "unique search hit"),
    (CAMERA_ACTIONS[:1] + [{"type": "finish", "status": "info"}], CAMERA_INFO, "document"),
    (CAMERA_ACTIONS[:2] + [{"type": "finish", "status": "info"}], CAMERA, "goal is reserve"),
    (CAMERA_ACTIONS[:3] + [{"type": "finish", "status": "reserved"}], CAMERA, "receipt"),
], ids=["info-first", "info-without-document", "info-on-reserve-task", "reserved-before-reserve"])
def test_unsupported_finishes_are_policy_errors(db, tmp_path, actions, task, why):
    runner, conn = open_runner(db, LocalJSONPolicy(actions_file(tmp_path, actions)))
    run = runner.start(task, K=8, R=2)
    conn.close()
    assert run["terminal"]["status"] == "policy_error" and run["terminal"]["rule"] == "unsupported_finish"
    assert why in run["terminal"]["reason"]
    assert world(db) == (FRESH_STOCK, [])


def test_finish_info_at_c_equal_K(db):
    runner, conn = open_runner(db, DeterministicPolicy())
    run = runner.start(CAMERA_INFO, K=2, R=0)
    conn.close()
    assert (run["terminal"]["status"], run["terminal"]["final"], run["calls"]) == ("finished", "info", 2)
    assert world(db) == (FRESH_STOCK, [])


# ------------------------------------------------------------------ interface replacement

def _run_with(db: Path, policy: Any) -> dict:
    runner, conn = open_runner(db, policy)
    try:
        return runner.start(CAMERA, K=4, R=2)
    finally:
        conn.close()


def test_three_policies_same_calls_inventory_and_ledger(tmp_path):
    dbs = {}
    for name in ("deterministic", "local", "http"):
        dbs[name] = tmp_path / f"{name}.sqlite"
        conn = connect(str(dbs[name]))
        Shop(conn).seed()
        conn.close()
    runs = {"deterministic": _run_with(dbs["deterministic"], DeterministicPolicy()),
            "local": _run_with(dbs["local"], LocalJSONPolicy(actions_file(tmp_path, CAMERA_ACTIONS)))}
    with PolicyServer() as server:
        runs["http"] = _run_with(dbs["http"], HTTPJSONPolicy(server.url, timeout=5))
        assert server.round_trips == 5
    first = runs["deterministic"]
    assert first["terminal"]["status"] == "finished"
    for name, run in runs.items():
        assert run["observations"] == first["observations"], name        # same calls, args and results
        assert run["terminal"] == first["terminal"], name
        assert (run["calls"], run["decisions"]) == (4, 4), name
        assert world(dbs[name]) == world(dbs["deterministic"]), name    # same inventory and ledger
    inventory, ledger = world(dbs["http"])
    assert inventory["cam-100"] == (2, 2) and len(ledger) == 1


# ------------------------------------------------------------------ adversarial decisions: the gate

BAD = [
    ("unknown-tool", CAMERA, [{"type": "tool", "tool": "delete_inventory", "args": {"item": "cam-100"}}],
     "unknown_tool", 0),
    ("unauthorized-write-before-reading", CAMERA,
     CAMERA_ACTIONS[:1] + [CAMERA_ACTIONS[3]], "unauthorized", 1),
    ("write-on-an-info-task", CAMERA_INFO, CAMERA_ACTIONS[:4], "unauthorized", 3),
    ("stale-version", CAMERA, CAMERA_ACTIONS[:3] + [
        {"type": "tool", "tool": "reserve", "args": {"item": "cam-100", "quantity": 1, "version": 0}}],
     "unauthorized", 3),
    ("wrong-quantity", CAMERA, CAMERA_ACTIONS[:3] + [
        {"type": "tool", "tool": "reserve", "args": {"item": "cam-100", "quantity": 3, "version": 1}}],
     "unauthorized", 3),
    ("wrong-item", CAMERA, CAMERA_ACTIONS[:3] + [
        {"type": "tool", "tool": "reserve", "args": {"item": "tri-200", "quantity": 1, "version": 1}}],
     "unauthorized", 3),
    ("redirected-search", CAMERA, [{"type": "tool", "tool": "search", "args": {"query": "tripod"}}],
     "unauthorized", 0),
    ("read-before-search", CAMERA, [CAMERA_ACTIONS[1]], "unauthorized", 0),
    ("extra-field", CAMERA, [{"type": "tool", "tool": "search", "args": {"query": "camera"},
                              "allow_write": True}], "malformed", 0),
    ("not-an-object", CAMERA, ["search camera"], "malformed", 0),
    ("bool-quantity", CAMERA, CAMERA_ACTIONS[:3] + [
        {"type": "tool", "tool": "reserve", "args": {"item": "cam-100", "quantity": True, "version": 1}}],
     "malformed", 3),
    ("unknown-final-status", CAMERA, [{"type": "finish", "status": "done"}], "malformed", 0),
]


@pytest.mark.parametrize("name,task,actions,rule,calls", BAD, ids=[b[0] for b in BAD])
def test_refused_proposals_end_in_policy_error_with_nothing_written(db, tmp_path, name, task, actions,
                                                                     rule, calls):
    runner, conn = open_runner(db, LocalJSONPolicy(actions_file(tmp_path, actions)))
    run = runner.start(task, K=8, R=2)
    conn.close()
    assert run["terminal"]["status"] == "policy_error" and run["terminal"]["rule"] == rule
    assert run["calls"] == calls and run["pending"] is None
    assert "reserve" not in tools_called(run)
    assert world(db) == (FRESH_STOCK, [])


def test_unknown_tool_reason_names_it(db, tmp_path):
    runner, conn = open_runner(db, LocalJSONPolicy(actions_file(tmp_path, BAD[0][2])))
    run = runner.start(CAMERA, K=8, R=2)
    conn.close()
    assert "delete_inventory" in run["terminal"]["reason"] and "never runs" in run["terminal"]["reason"]


def test_a_second_reservation_is_refused(db, tmp_path):
    actions = CAMERA_ACTIONS[:4] + [CAMERA_ACTIONS[3], CAMERA_ACTIONS[4]]
    runner, conn = open_runner(db, LocalJSONPolicy(actions_file(tmp_path, actions)))
    run = runner.start(CAMERA, K=8, R=2)
    conn.close()
    assert run["terminal"]["rule"] == "unauthorized" and "already reserved" in run["terminal"]["reason"]
    inventory, ledger = world(db)
    assert len(ledger) == 1 and inventory["cam-100"] == (2, 2)


def test_a_policy_that_raises_is_policy_error(db):
    class Broken:
        def next_action(self, view):
            raise KeyError("observations")
    runner, conn = open_runner(db, Broken())
    run = runner.start(CAMERA, K=4, R=2)
    conn.close()
    assert run["terminal"]["status"] == "policy_error" and run["terminal"]["rule"] == "policy_raised"
    assert "KeyError" in run["terminal"]["reason"]
    assert world(db) == (FRESH_STOCK, [])


def test_a_policy_cannot_falsify_history_through_its_view(db):
    """It gets a deep copy: rewriting calls, K, observations or pending changes nothing."""
    seen = []

    class Forger:
        def next_action(self, view):
            seen.append(view)
            if not view["observations"]:
                view["calls"], view["K"] = 0, 100
                view["observations"].append({"attempt": 1, "tool": "reserve", "ok": True, "args": {},
                                             "result": {"item": "cam-100", "receipt": "forged"}})
                return {"type": "tool", "tool": "search", "args": {"query": "camera"}}
            view["observations"].clear()
            return {"type": "finish", "status": "reserved"}

    runner, conn = open_runner(db, Forger())
    run = runner.start(CAMERA, K=4, R=2)
    conn.close()
    assert run["terminal"]["rule"] == "unsupported_finish"
    assert run["K"] == 4 and run["calls"] == 1 and tools_called(run) == ["search"]
    assert len(seen) == 2 and len(seen[1]["observations"]) == 0        # what the forger did to its copy
    assert world(db) == (FRESH_STOCK, [])


def test_the_view_holds_only_json_data_without_handles(db):
    views = []

    class Recorder(DeterministicPolicy):
        def next_action(self, view):
            views.append(view)
            return super().next_action(view)

    runner, conn = open_runner(db, Recorder())
    runner.start(CAMERA, K=4, R=2)
    conn.close()
    assert len(views) == 5
    for n, view in enumerate(views):
        assert set(view) == {"run_id", "task", "observations", "pending", "calls", "decisions", "K", "R"}
        assert view["calls"] == n == len(view["observations"]) and view["pending"] is None
        assert json.loads(json.dumps(view)) == view                       # plain JSON, nothing else


# ------------------------------------------------------------------ failures, retries, budget boundary

def test_a_failure_consumes_an_attempt_and_the_retry_does_not_ask_the_policy(db):
    policy = Counting(DeterministicPolicy())
    runner, conn = open_runner(db, policy, faults=Faults({"search": 1}))
    run = runner.start(CAMERA, K=4, R=2)
    conn.close()
    assert [(o["tool"], o["ok"], o["try"]) for o in run["observations"]] == \
           [("search", False, 1), ("search", True, 2), ("document", True, 1), ("stock", True, 1)]
    assert run["observations"][0]["key"] == run["observations"][1]["key"]     # the same action retried
    assert run["terminal"]["status"] == "budget_exhausted" and run["calls"] == 4
    assert policy.asked == 4                                                  # not asked for the retry
    assert world(db) == (FRESH_STOCK, [])


def test_one_more_attempt_pays_for_the_failure(db):
    runner, conn = open_runner(db, DeterministicPolicy(), faults=Faults({"search": 1}))
    run = runner.start(CAMERA, K=5, R=2)
    conn.close()
    assert run["terminal"]["final"] == "reserved" and run["calls"] == 5
    assert len(world(db)[1]) == 1


def test_a_tool_failing_past_R_ends_in_error(db):
    runner, conn = open_runner(db, DeterministicPolicy(), faults=Faults({"document": 3}))
    run = runner.start(CAMERA, K=8, R=2)
    conn.close()
    t = run["terminal"]
    assert t["status"] == "error" and t["rule"] == "gave_up" and "R=2" in t["reason"]
    assert tools_called(run) == ["search", "document", "document", "document"] and run["calls"] == 4
    assert world(db) == (FRESH_STOCK, [])


def test_retries_stop_at_the_budget(db):
    runner, conn = open_runner(db, DeterministicPolicy(), faults=Faults({"search": 5}))
    run = runner.start(CAMERA, K=2, R=2)
    conn.close()
    assert run["terminal"]["status"] == "budget_exhausted" and run["calls"] == 2
    assert run["pending"]["action"]["tool"] == "search" and run["pending"]["attempts"] == 2


def test_a_version_conflict_is_a_tool_failure_not_a_write(db):
    """Someone else takes a camera between stock and reserve: the reserve fails, nothing is written."""
    def hook(point, run):
        if point == "counted" and run["pending"]["action"]["tool"] == "reserve" and run["pending"]["attempts"] == 1:
            other = connect(str(db))
            other.execute("UPDATE inventory SET available = available - 1, version = version + 1 "
                          "WHERE item = 'cam-100'")
            other.close()
    runner, conn = open_runner(db, DeterministicPolicy(), hooks=hook)
    run = runner.start(CAMERA, K=8, R=1)
    conn.close()
    assert run["terminal"]["status"] == "error"
    assert [o["error"] for o in run["observations"] if not o["ok"]][0].startswith("version conflict")
    inventory, ledger = world(db)
    assert ledger == [] and inventory["cam-100"] == (2, 2)        # only the other writer's change


@pytest.mark.parametrize("task,why", [("tripod", "2 items"), ("lens-cap", "nothing"), ("flash", "only 0")])
def test_the_deterministic_policy_abstains_when_it_cannot_finish(db, task, why):
    runner, conn = open_runner(db, DeterministicPolicy())
    run = runner.start(TASKS[task], K=8, R=2)
    conn.close()
    assert run["terminal"]["status"] == "abstained" and why in run["terminal"]["reason"]
    assert world(db) == (FRESH_STOCK, [])


def test_an_exhausted_action_list_abstains(db, tmp_path):
    runner, conn = open_runner(db, LocalJSONPolicy(actions_file(tmp_path, CAMERA_ACTIONS[:2])))
    run = runner.start(CAMERA, K=8, R=2)
    conn.close()
    assert run["terminal"]["status"] == "abstained" and "exhausted" in run["terminal"]["reason"]
    assert tools_called(run) == ["search", "document"]


# ------------------------------------------------------------------ crash and resume

def _crash_at(point: str, tool: str, attempt: int = 1):
    def hook(where, run):
        p = run["pending"]
        if where == point and p["action"]["tool"] == tool and p["attempts"] == attempt:
            raise Crash(f"killed at {point} of {tool}")
    return hook


def _crash_then_resume(db: Path, policy_factory, point: str, tool: str, K: int, R: int = 2,
                       task: dict = CAMERA) -> tuple[dict, dict]:
    runner, conn = open_runner(db, policy_factory(), hooks=_crash_at(point, tool))
    with pytest.raises(Crash):
        runner.start(task, K=K, R=R, run_id="r1")
    conn.close()                                            # the process is gone; only the file stays
    conn = connect(str(db))
    saved = RunStore(conn).load("r1")
    conn.close()
    runner, conn = open_runner(db, policy_factory())
    run = runner.resume("r1")
    conn.close()
    return saved, run


def test_killed_after_counting_before_the_call_the_counted_attempt_stays_counted(db):
    saved, run = _crash_then_resume(db, DeterministicPolicy, "counted", "reserve", K=5)
    assert saved["calls"] == 4 and saved["pending"]["started"] is True    # c + 1 was durable first
    assert len(saved["observations"]) == 3
    assert run["terminal"]["final"] == "reserved" and run["calls"] == 5
    reserve = [o for o in run["observations"] if o["tool"] == "reserve"]
    assert [o["ok"] for o in reserve] == [False, True] and "interrupted" in reserve[0]["error"]
    assert reserve[0]["key"] == reserve[1]["key"]                          # the same action, retried
    assert [o["attempt"] for o in run["observations"]] == [1, 2, 3, 4, 5]  # no lost attempt
    inventory, ledger = world(db)
    assert len(ledger) == 1 and inventory["cam-100"] == (2, 2)            # reserved exactly once


def test_killed_before_the_call_with_K_4_the_retry_has_no_budget_left(db):
    saved, run = _crash_then_resume(db, DeterministicPolicy, "counted", "reserve", K=4)
    assert run["terminal"]["status"] == "budget_exhausted" and run["calls"] == 4
    assert [o["attempt"] for o in run["observations"]] == [1, 2, 3, 4]
    assert world(db) == (FRESH_STOCK, [])


def test_killed_after_the_reservation_before_recording_it_is_recovered_from_the_ledger(db):
    saved, run = _crash_then_resume(db, DeterministicPolicy, "called", "reserve", K=4)
    assert saved["calls"] == 4 and saved["pending"]["started"] is True and len(saved["observations"]) == 3
    assert run["terminal"]["final"] == "reserved" and run["calls"] == 4     # no extra attempt needed
    last = run["observations"][-1]
    assert last["tool"] == "reserve" and last["ok"] and last.get("recovered") is True
    inventory, ledger = world(db)
    assert len(ledger) == 1 and ledger[0]["receipt"] == last["result"]["receipt"]
    assert inventory["cam-100"] == (2, 2)                                   # no double reservation


def test_killed_after_a_read_before_recording_it_is_retried_and_counted(db):
    saved, run = _crash_then_resume(db, DeterministicPolicy, "called", "search", K=5)
    assert run["terminal"]["final"] == "reserved" and run["calls"] == 5
    search = [o for o in run["observations"] if o["tool"] == "search"]
    assert [o["ok"] for o in search] == [False, True] and "interrupted" in search[0]["error"]
    assert len(world(db)[1]) == 1


def test_the_action_list_is_not_asked_again_for_a_pending_call_and_goes_on_where_it_stopped(db, tmp_path):
    path = actions_file(tmp_path, CAMERA_ACTIONS)
    saved, run = _crash_then_resume(db, lambda: LocalJSONPolicy(path), "counted", "document", K=8)
    assert saved["decisions"] == 2                               # search and document prepared
    assert run["terminal"]["final"] == "reserved"
    assert tools_called(run) == ["search", "document", "document", "stock", "reserve"]
    assert len(world(db)[1]) == 1


def test_resuming_a_finished_run_changes_nothing(db):
    runner, conn = open_runner(db, DeterministicPolicy())
    first = runner.start(CAMERA, K=4, R=2, run_id="done")
    conn.close()
    runner, conn = open_runner(db, Counting(DeterministicPolicy()))
    again = runner.resume("done")
    assert runner.policy.asked == 0
    conn.close()
    assert again == first and len(world(db)[1]) == 1


def test_a_real_process_kill_after_the_reservation(db):
    """os._exit in the middle of the reserve attempt: no cleanup, no exception handler runs."""
    script = (
        "import os, sys\n"
        "from haltproof.harness.budget import DeterministicPolicy, Runner, connect\n"
        "def hook(point, run):\n"
        "    if point == 'called' and run['pending']['action']['tool'] == 'reserve':\n"
        "        os._exit(9)\n"
        "Runner(connect(sys.argv[1]), DeterministicPolicy(), hooks=hook).start("
        "{'goal': 'reserve', 'query': 'camera', 'quantity': 1}, K=4, R=2, run_id='killed')\n")
    ran = subprocess.run([sys.executable, "-c", script, str(db)], cwd=ROOT, capture_output=True, text=True)
    assert ran.returncode == 9, ran.stderr
    inventory, ledger = world(db)
    assert len(ledger) == 1 and inventory["cam-100"] == (2, 2)      # the effect landed; its record did not
    runner, conn = open_runner(db, DeterministicPolicy())
    run = runner.resume("killed")
    conn.close()
    assert run["terminal"]["final"] == "reserved" and run["calls"] == 4
    assert run["observations"][-1].get("recovered") is True
    assert world(db) == (inventory, ledger)                          # resuming wrote nothing more


def test_the_reserve_tool_is_idempotent_per_key(db):
    conn = connect(str(db))
    shop = Shop(conn)
    first = shop.reserve("cam-100", 1, 1, "k-1", "r")
    again = shop.reserve("cam-100", 1, 1, "k-1", "r")
    assert again["receipt"] == first["receipt"] and again["replayed"] is True
    assert shop.inventory()["cam-100"] == (2, 2) and len(shop.ledger()) == 1
    assert shop.call({"tool": "reserve", "args": {"item": "cam-100", "quantity": 1, "version": 1}},
                     "k-2", "r") == {"ok": False, "error": "version conflict: cam-100 is at version 2, not 1"}
    conn.close()


# ------------------------------------------------------------------ the pure pieces the proof covers

def test_the_runner_calls_the_gate_it_was_given(db):
    """The runner really goes through `gate`: a gate that refuses every tool stops the run."""
    def no_tools(action, run):
        raise G.PolicyViolation("unauthorized: nothing today", "unauthorized")
    runner, conn = open_runner(db, DeterministicPolicy(), gate=G.GATE.replace(authorize=no_tools))
    run = runner.start(CAMERA, K=4, R=2)
    conn.close()
    assert run["terminal"]["reason"] == "unauthorized: nothing today" and run["calls"] == 0


@pytest.mark.parametrize("task,words", [
    ({"goal": "buy", "query": "camera"}, "goal"),
    ({"goal": "reserve", "query": ""}, "query"),
    ({"goal": "reserve", "query": "camera", "quantity": 0}, "quantity"),
    ({"goal": "info", "query": "camera", "quantity": 1}, "quantity"),
    ({"goal": "reserve", "query": "camera", "url": "http://10.0.0.1/"}, "url"),
    (["reserve"], "object"),
])
def test_bad_tasks_are_refused(task, words):
    with pytest.raises(T.TaskError, match=words):
        T.new_run("x", task, 4, 2)


def test_limits_are_checked():
    for K, R in ((-1, 0), (4, -1), (True, 0), (4.0, 1), (10_000, 0)):
        with pytest.raises(T.TaskError):
            T.new_run("x", CAMERA, K, R)


def test_nothing_is_reserved_when_the_process_dies_before_the_reserve_transaction(tmp_path):
    """SQLite atomicity: the decrement and the ledger entry land together or not at all."""
    path = tmp_path / "atomic.sqlite"
    conn = connect(str(path))
    shop = Shop(conn)
    shop.seed()
    conn.execute("CREATE TRIGGER boom BEFORE INSERT ON ledger BEGIN SELECT RAISE(ABORT, 'disk full'); END")
    out = shop.call({"tool": "reserve", "args": {"item": "cam-100", "quantity": 1, "version": 1}}, "k", "r")
    assert out["ok"] is False and "disk full" in out["error"]
    assert shop.inventory()["cam-100"] == (3, 1) and shop.ledger() == []
    conn.close()
    assert os.path.exists(path)
