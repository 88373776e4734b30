"""Durable run state in SQLite: one row per run, one row per observation.

    runs(run_id, task, K, R, calls, decisions, pending, terminal)   JSON columns
    observations(run_id, n, body)                                    append-only

`save` writes the whole small state (and any new observations) in one transaction, so
the database always holds a state that some transition produced: a run killed at any
point resumes from the last one saved. Only the run state is stored - never a policy's
URL, headers or secrets.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from haltproof.machine import strict_json

from .tools import transaction

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, task TEXT NOT NULL, K INTEGER NOT NULL, R INTEGER NOT NULL,
    calls INTEGER NOT NULL, decisions INTEGER NOT NULL, pending TEXT, terminal TEXT);
CREATE TABLE IF NOT EXISTS observations (
    run_id TEXT NOT NULL REFERENCES runs(run_id), n INTEGER NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (run_id, n));
"""


class RunNotFound(KeyError):
    def __str__(self) -> str:
        return f"no run {self.args[0]!r} in this database"


class RunExists(ValueError):
    pass


def holds_run(conn: sqlite3.Connection, run_id: str) -> bool:
    """Whether the database holds the run, asked with reads only (no schema is created),
    so a resume on the wrong file refuses it without writing to it."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'runs'").fetchone() is None:
        return False
    return conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() is not None


class RunStore:
    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        conn.executescript(SCHEMA)

    def create(self, run: dict[str, Any]) -> None:
        if self.exists(run["run_id"]):
            raise RunExists(f"a run {run['run_id']!r} already exists in this database (resume it instead)")
        with transaction(self.conn):
            self.conn.execute("INSERT INTO runs VALUES (?, ?, ?, ?, 0, 0, NULL, NULL)",
                              (run["run_id"], json.dumps(run["task"]), run["K"], run["R"]))
        self.save(run)

    def exists(self, run_id: str) -> bool:
        return holds_run(self.conn, run_id)

    def run_ids(self) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT run_id FROM runs ORDER BY rowid")]

    def save(self, run: dict[str, Any]) -> None:
        run_id = run["run_id"]
        with transaction(self.conn):
            stored = self.conn.execute("SELECT COUNT(*) FROM observations WHERE run_id = ?",
                                       (run_id,)).fetchone()[0]
            if stored > len(run["observations"]):
                raise RuntimeError(f"run {run_id}: {stored} observations stored but only "
                                   f"{len(run['observations'])} in memory; observations are append-only")
            for n in range(stored, len(run["observations"])):
                self.conn.execute("INSERT INTO observations VALUES (?, ?, ?)",
                                  (run_id, n, json.dumps(run["observations"][n])))
            self.conn.execute(
                "UPDATE runs SET calls = ?, decisions = ?, pending = ?, terminal = ? WHERE run_id = ?",
                (run["calls"], run["decisions"], _dump(run["pending"]), _dump(run["terminal"]), run_id))

    def load(self, run_id: str) -> dict[str, Any]:
        row = self.conn.execute("SELECT task, K, R, calls, decisions, pending, terminal FROM runs "
                                "WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise RunNotFound(run_id)
        task, K, R, calls, decisions, pending, terminal = row
        observations = [_load(body, f"run {run_id}, observation {n}") for n, (body,) in enumerate(
            self.conn.execute("SELECT body FROM observations WHERE run_id = ? ORDER BY n", (run_id,)))]
        return {"run_id": run_id, "task": _load(task, f"run {run_id}, task"), "K": K, "R": R,
                "calls": calls, "decisions": decisions, "observations": observations,
                "pending": _load(pending, f"run {run_id}, pending"),
                "terminal": _load(terminal, f"run {run_id}, terminal")}


def _dump(value: Any) -> str | None:
    return None if value is None else json.dumps(value)


def _load(text: str | None, what: str) -> Any:
    """A JSON column as saved by `save`; anything else (edited, truncated, a key twice) means
    the database is not one this runner wrote: a DatabaseError, reported like sqlite's own."""
    if text is None:
        return None
    try:
        return strict_json.loads(text)
    except (TypeError, ValueError) as exc:
        raise sqlite3.DatabaseError(f"{what} is not the JSON this runner saves: {exc}") from None
