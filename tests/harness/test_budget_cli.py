"""`python -m haltproof.harness.budget`: the worked examples from the command line, resume, serve, and
bad input (exit 2, a message, never a traceback)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest

from haltproof.harness.budget.cli import main
from haltproof.harness.budget.tools import Shop, connect

from conftest import ROOT


def budget(capsys, *args: str) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def python_m(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "haltproof.harness.budget", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, **kw)


# ------------------------------------------------------------------ the worked examples

def test_worked_example_1_from_the_command_line():
    ran = python_m("run", "-K", "4", "-R", "2")
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    assert lines[0] == "run run-1: reserve 1 x 'camera', K=4 R=2, 0 attempts and 0 observations so far"
    attempts = [ln for ln in lines if ln.startswith("  attempt ")]
    assert [ln.split(":")[1].split()[0] for ln in attempts] == ["search", "document", "stock", "reserve"]
    assert all("of K=4" in ln and "-> ok" in ln for ln in attempts)
    assert "decision 5: finish reserved -> finished_reserved" in lines
    assert "outcome: finished (reserved): reserved 1 x cam-100 (receipt rsv:run-1/3)" in lines
    assert "calls: 4 of K=4, decisions: 4, observations kept: 4" in lines
    assert "ledger: 1 entry" in lines and "inventory: cam-100 3 -> 2" in lines
    assert ran.stderr == ""


def test_same_task_with_K_2(capsys):
    code, out, err = budget(capsys, "run", "-K", "2")
    assert code == 1 and err == ""
    lines = out.splitlines()
    assert "decision 3: stock {\"item\": \"cam-100\"} -> budget_exhausted" in lines
    assert not any("stock" in ln for ln in lines if ln.startswith("  attempt"))
    assert any(ln.startswith("outcome: budget_exhausted: ") for ln in lines)
    assert "ledger: 0 entries" in lines and "inventory: unchanged" in lines
    assert "calls: 2 of K=2, decisions: 2, observations kept: 2" in lines


def test_worked_example_2_with_an_action_file(capsys, tmp_path):
    actions = tmp_path / "finish_first.json"
    actions.write_text('[{"type": "finish", "status": "reserved"}]')
    code, out, _ = budget(capsys, "run", "--policy", "local", "--actions", actions)
    assert code == 1
    assert "decision 1: finish reserved -> unsupported_finish" in out
    assert "outcome: policy_error: unsupported final status: 'reserved' without an observed reserve receipt" in out
    assert "ledger: 0 entries" in out and "calls: 0 of K=4" in out


def test_json_output(capsys):
    code, out, _ = budget(capsys, "run", "--task", "camera-info", "-K", "2", "-R", "0", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["run"]["terminal"]["final"] == "info" and data["run"]["calls"] == 2
    assert data["ledger"] == [] and data["inventory"] == data["inventory_before"]


def test_injected_failures_are_retried(capsys):
    code, out, _ = budget(capsys, "run", "-K", "5", "--fail", "stock=1")
    assert code == 0
    assert "attempt 3 of K=5: stock {\"item\": \"cam-100\"} (try 1) -> failed: injected fault" in out
    assert "attempt 4 of K=5: stock {\"item\": \"cam-100\"} (try 2) -> ok" in out


# ------------------------------------------------------------------ resume from the database

def test_resume_after_a_kill(tmp_path, capsys):
    db = tmp_path / "shop.sqlite"
    script = ("import os, sys\n"
              "from haltproof.harness.budget import DeterministicPolicy, Runner, Shop, connect\n"
              "conn = connect(sys.argv[1]); Shop(conn).seed()\n"
              "def hook(point, run):\n"
              "    if point == 'called' and run['pending']['action']['tool'] == 'reserve':\n"
              "        os._exit(9)\n"
              "Runner(conn, DeterministicPolicy(), hooks=hook).start("
              "{'goal': 'reserve', 'query': 'camera', 'quantity': 1}, K=4, R=2, run_id='r1')\n")
    assert subprocess.run([sys.executable, "-c", script, str(db)], cwd=ROOT).returncode == 9
    code, out, _ = budget(capsys, "resume", "--db", db, "--run-id", "r1")
    assert code == 0
    assert out.startswith("resuming run r1: reserve 1 x 'camera', K=4 R=2, 4 attempts and 3 observations so far")
    assert "  recovered attempt 4 of K=4: reserve" in out and "[recovered]" in out
    assert "calls: 4 of K=4" in out and "ledger: 1 entry" in out
    conn = connect(str(db))
    assert Shop(conn).inventory()["cam-100"] == (2, 2)
    conn.close()


def test_run_ids_and_resume_of_a_finished_run(tmp_path, capsys):
    db = tmp_path / "runs.sqlite"
    assert budget(capsys, "run", "--db", db, "--run-id", "a")[0] == 0
    code, out, _ = budget(capsys, "run", "--db", db, "-K", "2", "--run-id", "b")
    assert code == 1 and "ledger: 0 entries" in out          # the ledger of run b; the shop is shared
    code, out, _ = budget(capsys, "resume", "--db", db, "--run-id", "a")
    assert code == 0
    assert not any(ln.startswith(("decision", "  attempt")) for ln in out.splitlines())   # nothing ran
    assert "outcome: finished (reserved)" in out


# ------------------------------------------------------------------ serve + the HTTP policy

def test_serve_and_run_against_it():
    server = subprocess.Popen([sys.executable, "-m", "haltproof.harness.budget", "serve", "--port", "0",
                               "--max-requests", "5"], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        first = server.stdout.readline()
        assert first.startswith("policy server (the deterministic rules, hero-policy-v1): http://127.0.0.1:")
        url = first.rsplit(" ", 1)[1].strip()
        ran = python_m("run", "--policy", "http", "--url", url, "--timeout", "5")
        assert ran.returncode == 0, ran.stderr
        assert "outcome: finished (reserved)" in ran.stdout
        out, _ = server.communicate(timeout=30)
        assert server.returncode == 0 and "answered 5 request(s)" in out
    finally:
        if server.poll() is None:
            server.kill()
            server.communicate()


# ------------------------------------------------------------------ bad input: exit 2, a message

BAD = [
    (["run", "-K", "-1"], "K must be an integer"),
    (["run", "-K", "four"], "invalid int value"),
    (["run", "-R", "101"], "R must be an integer"),
    (["run", "--policy", "local"], "--actions"),
    (["run", "--policy", "http"], "--url"),
    (["run", "--url", "http://127.0.0.1:9/"], "--policy http"),
    (["run", "--policy", "local", "--actions", "/no/such/file.json"], "cannot read"),
    (["run", "--policy", "http", "--url", "http://10.1.2.3/"], "loopback"),
    (["run", "--policy", "http", "--url", "http://example.org/x"], "loopback"),
    (["run", "--policy", "http", "--url", "http://u:p@127.0.0.1:9/"], "user:password"),
    (["run", "--policy", "http", "--url", "http://127.0.0.1:9/#f"], "fragment"),
    (["run", "--policy", "http", "--url", "http://127.0.0.1:9/", "--timeout", "0"], "timeout"),
    (["run", "--policy", "http", "--url", "http://127.0.0.1:9/", "--timeout", "nan"], "timeout"),
    (["run", "--fail", "teleport=1"], "teleport"),
    (["run", "--fail", "search"], "TOOL=N"),
    (["run", "--task", "boat"], "invalid choice"),
    (["run", "--task-json", "{goal: reserve}"], "not valid JSON"),
    (["run", "--task-json", '{"goal": "buy", "query": "x"}'], "goal"),
    (["run", "--task-json", '{"goal": "reserve", "query": "x", "quantity": -2}'], "quantity"),
    (["resume"], "--run-id"),
    (["teleport"], "invalid choice"),
    ([], "required"),
    (["serve", "--port", "70000"], "port"),
    (["serve", "--max-requests", "0"], "max-requests"),
]


@pytest.mark.parametrize("args,words", BAD, ids=[" ".join(b[0]) or "nothing" for b in BAD])
def test_bad_input_exits_2_with_a_message(capsys, tmp_path, args, words):
    db = tmp_path / "never.sqlite"
    args = list(args) + (["--db", str(db)] if args[:1] in (["run"],) else [])
    code, out, err = budget(capsys, *args)
    assert code == 2, (out, err)
    assert words in err and "Traceback" not in err
    assert "outcome" not in out
    assert not db.exists()                       # refused before anything was written


@pytest.mark.parametrize("content,words", [("{", "not valid JSON"), ('{"type": "abstain"}', "JSON list"),
                                           (b"\xff\xfe[]", "UTF-8")])
def test_bad_action_files_exit_2(capsys, tmp_path, content, words):
    path = tmp_path / "actions.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    code, _, err = budget(capsys, "run", "--policy", "local", "--actions", path)
    assert code == 2 and words in err and "actions.json" in err


def test_an_action_file_past_its_size_limit_is_refused_before_parsing(capsys, tmp_path, monkeypatch):
    from haltproof.harness.budget import policies
    monkeypatch.setattr(policies, "MAX_ACTIONS_BYTES", 50)
    path, db = tmp_path / "actions.json", tmp_path / "never.sqlite"
    action = '[{"type": "finish", "status": "reserved"}]'              # 42 bytes
    path.write_text(action + " " * 9)                                   # 51 bytes
    code, out, err = budget(capsys, "run", "--policy", "local", "--actions", path, "--db", db)
    assert (code, out, err) == (2, "", f"error: {path}: the file is 51 bytes, more than the limit of "
                                       "50 bytes for an action list\n")
    assert not db.exists()
    path.write_text(action + " " * 8)                                   # 50 bytes: runs
    assert budget(capsys, "run", "--policy", "local", "--actions", path)[0] == 1


DUPLICATE = "duplicate key 'type' in a JSON object (which value is meant is ambiguous)"


def test_an_action_file_naming_a_key_twice_exits_2(capsys, tmp_path):
    path = tmp_path / "actions.json"
    path.write_text('[{"type": "abstain", "type": "finish", "status": "reserved"}]')
    code, out, err = budget(capsys, "run", "--policy", "local", "--actions", path)
    assert (code, out, err) == (2, "", f"error: {path}: {DUPLICATE}\n")


def test_task_json_naming_a_key_twice_exits_2(capsys):
    code, out, err = budget(capsys, "run", "--task-json",
                            '{"goal": "reserve", "query": "camera", "quantity": 1, "quantity": 3}')
    assert (code, out) == (2, "")
    assert err == ("error: --task-json: duplicate key 'quantity' in a JSON object (which value is meant "
                   "is ambiguous)\n")


def test_a_stored_run_naming_a_key_twice_exits_2(capsys, tmp_path):
    """The database is the runner's own file: an edited one is refused, not half-read."""
    db = tmp_path / "r.sqlite"
    assert budget(capsys, "run", "--db", db, "--run-id", "r1", "-K", "2")[0] == 1
    conn = sqlite3.connect(db)
    conn.execute("UPDATE runs SET terminal = NULL, task = ? WHERE run_id = 'r1'",
                 ('{"goal": "reserve", "query": "camera", "quantity": 1, "quantity": 3}',))
    conn.commit()
    conn.close()
    code, out, err = budget(capsys, "resume", "--db", db, "--run-id", "r1")
    assert (code, out) == (2, "")
    assert err == ("error: the database cannot be used: run r1, task is not the JSON this runner saves: "
                   "duplicate key 'quantity' in a JSON object (which value is meant is ambiguous)\n")


def test_unknown_run_and_taken_run_id_exit_2(capsys, tmp_path):
    db = tmp_path / "r.sqlite"
    assert budget(capsys, "run", "--db", db, "--run-id", "x")[0] == 0
    code, _, err = budget(capsys, "resume", "--db", db, "--run-id", "ghost")
    assert code == 2 and err == "error: no run 'ghost' in this database\n"
    code, _, err = budget(capsys, "run", "--db", db, "--run-id", "x")
    assert code == 2 and "already exists" in err


def test_resume_of_a_missing_database_writes_nothing(capsys, tmp_path):
    """It exited 2 but left a 53 KB database behind (created, seeded, given the schema)."""
    db = tmp_path / "missing.sqlite"
    code, out, err = budget(capsys, "resume", "--db", db, "--run-id", "r1")
    assert (code, out) == (2, "")
    assert err == f"error: --db {db}: no such database (resume continues a run saved by `run --db {db}`)\n"
    assert sorted(tmp_path.iterdir()) == []


def test_resume_on_a_foreign_database_leaves_it_untouched(capsys, tmp_path):
    """An unrelated SQLite file is neither given the runs schema, seeded, nor switched to WAL."""
    db = tmp_path / "notes.sqlite"
    other = sqlite3.connect(db)
    other.execute("CREATE TABLE notes (text TEXT)")
    other.commit()
    other.close()
    before = db.read_bytes()
    code, out, err = budget(capsys, "resume", "--db", db, "--run-id", "r1")
    assert (code, out, err) == (2, "", "error: no run 'r1' in this database\n")
    assert db.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.sqlite"]


def test_resume_of_a_directory_exits_2(capsys, tmp_path):
    code, out, err = budget(capsys, "resume", "--db", tmp_path, "--run-id", "r1")
    assert (code, out, err) == (2, "", f"error: --db {tmp_path}: a directory, not a database\n")


def test_a_database_that_cannot_be_opened_exits_2(capsys, tmp_path):
    code, _, err = budget(capsys, "run", "--db", tmp_path)           # a directory
    assert code == 2 and "database" in err and "Traceback" not in err
    not_sqlite = tmp_path / "notes.txt"
    not_sqlite.write_text("these are not the tables you are looking for\n" * 100)
    code, _, err = budget(capsys, "run", "--db", not_sqlite)
    assert code == 2 and "database" in err


def test_bad_input_from_a_real_process_has_no_traceback():
    ran = python_m("run", "--policy", "http", "--url", "http://user:pw@127.0.0.1:1/")
    assert ran.returncode == 2 and ran.stdout == ""
    assert "user:password" in ran.stderr and "Traceback" not in ran.stderr


@pytest.mark.parametrize("command", ["run", "resume"])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e999", "0", "61", "soon"])
def test_timeout_must_be_finite_seconds_whatever_the_policy(capsys, tmp_path, command, value):
    """nan was accepted (and ignored) unless --policy http happened to read it."""
    db = tmp_path / "never.sqlite"
    code, out, err = budget(capsys, command, f"--timeout={value}", "--db", db,
                            *(["--run-id", "r1"] if command == "resume" else []))
    assert (code, out) == (2, "")
    assert err.splitlines()[-1] == (f"error: argument --timeout: --timeout must be a finite number of "
                                    f"seconds in (0, 60], got {value!r}")
    assert not db.exists()
