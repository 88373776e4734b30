"""The four real tools, on SQLite tables: search, document, stock and reserve.

The shop lives in the same database as the runs (stdlib sqlite3, a file or :memory:):

    catalogue(item, name, tags, document)        read by search and document
    inventory(item, available, version)          read by stock, written by reserve
    ledger(idempotency_key UNIQUE, run_id, item, quantity, receipt)   the effect ledger

`reserve` is the only write. In one transaction it checks the idempotency key (an action
retried or resumed with the same key gets the receipt of the first success and changes
nothing), the version read by `stock`, and the available quantity, then decrements the
inventory, bumps its version and appends one ledger entry.

Tool failures - a missing item, a version conflict, an injected fault - come back as
{"ok": false, "error": ...}; each consumes an attempt like any other call.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

SCHEMA = """
CREATE TABLE IF NOT EXISTS catalogue (
    item TEXT PRIMARY KEY, name TEXT NOT NULL, tags TEXT NOT NULL, document TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS inventory (
    item TEXT PRIMARY KEY REFERENCES catalogue(item),
    available INTEGER NOT NULL CHECK (available >= 0), version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS ledger (
    id INTEGER PRIMARY KEY AUTOINCREMENT, idempotency_key TEXT NOT NULL UNIQUE,
    run_id TEXT NOT NULL, item TEXT NOT NULL, quantity INTEGER NOT NULL, receipt TEXT NOT NULL UNIQUE);
"""

# The demo shop: one camera (the worked examples), two tripods (an ambiguous search), a
# flash that is out of stock, and no lens cap at all.
SEED_ITEMS = [
    # item, name, tags, document, available, version
    ("cam-100", "Compact camera C100", "camera compact photo",
     "C100: 20 MP compact camera, 3x zoom, battery and strap included. Rental deposit 50.", 3, 1),
    ("tri-200", "Travel tripod T200", "tripod travel",
     "T200: aluminium travel tripod, 1.4 kg, max height 150 cm.", 2, 1),
    ("tri-201", "Studio tripod T201", "tripod studio",
     "T201: steel studio tripod, 4 kg, max height 190 cm.", 1, 1),
    ("fla-300", "Flash unit F300", "flash light",
     "F300: hot-shoe flash, guide number 36.", 0, 1),
]

TOOL_NAMES = ("search", "document", "stock", "reserve")


class ToolError(Exception):
    """A tool ran and failed; the message becomes the failed observation's error."""


def connect(path: str = ":memory:", *, mode: str = "rwc") -> sqlite3.Connection:
    """A connection in autocommit mode; every write below opens its own transaction.

    A file database runs in WAL mode with synchronous=NORMAL: every committed transaction
    survives the death of the process (what resume relies on); only a power cut may lose
    the last few, which then resume from an earlier saved state - never a half-applied one.
    `mode`: "rwc" creates a missing file, "rw" opens an existing one only, "ro" reads an
    existing one and changes nothing (not even its journal mode)."""
    target, uri = path, False
    if mode != "rwc" and path != ":memory:":
        target, uri = f"{Path(path).absolute().as_uri()}?mode={mode}", True
    conn = sqlite3.connect(target, uri=uri, isolation_level=None, check_same_thread=False, timeout=10)
    if mode == "ro":
        return conn
    conn.execute("PRAGMA foreign_keys = ON")
    if path != ":memory:" and not path.startswith("file::memory:"):
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
    return conn


class Faults:
    """Injected failures for tests and demos: {"search": 2} makes the next two search calls
    fail before they touch the database."""

    def __init__(self, plan: dict[str, int] | None = None):
        plan = dict(plan or {})
        for tool, n in plan.items():
            if tool not in TOOL_NAMES:
                raise ValueError(f"no tool named {tool!r} to fail (tools: {', '.join(TOOL_NAMES)})")
            if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                raise ValueError(f"the number of failures of {tool} must be an integer >= 0, got {n!r}")
        self.remaining = plan

    def fire(self, tool: str) -> bool:
        if self.remaining.get(tool, 0) > 0:
            self.remaining[tool] -= 1
            return True
        return False


class Shop:
    """The tools, bound to one SQLite connection."""

    def __init__(self, conn: sqlite3.Connection, faults: Faults | None = None):
        self.conn = conn
        self.faults = faults or Faults()
        conn.executescript(SCHEMA)

    # -- setup and inspection
    def seed(self, items: list[tuple[Any, ...]] | None = None) -> None:
        """Fill an empty catalogue with the demo items (a no-op if it has items)."""
        if self.conn.execute("SELECT COUNT(*) FROM catalogue").fetchone()[0]:
            return
        with transaction(self.conn):
            for item, name, tags, document, available, version in (items or SEED_ITEMS):
                self.conn.execute("INSERT INTO catalogue VALUES (?, ?, ?, ?)", (item, name, tags, document))
                self.conn.execute("INSERT INTO inventory VALUES (?, ?, ?)", (item, available, version))

    def inventory(self) -> dict[str, tuple[int, int]]:
        """item -> (available, version)."""
        return {item: (a, v) for item, a, v in
                self.conn.execute("SELECT item, available, version FROM inventory ORDER BY item")}

    def ledger(self, run_id: str | None = None) -> list[dict[str, Any]]:
        sql = "SELECT idempotency_key, run_id, item, quantity, receipt FROM ledger"
        rows = (self.conn.execute(sql + " WHERE run_id = ? ORDER BY id", (run_id,)) if run_id
                else self.conn.execute(sql + " ORDER BY id"))
        return [{"idempotency_key": k, "run_id": r, "item": i, "quantity": q, "receipt": rc}
                for k, r, i, q, rc in rows]

    def receipt_for(self, key: str) -> dict[str, Any] | None:
        """The reserve result recorded under an idempotency key, if that reservation landed."""
        row = self.conn.execute("SELECT item, quantity, receipt FROM ledger WHERE idempotency_key = ?",
                                (key,)).fetchone()
        if row is None:
            return None
        return {"item": row[0], "quantity": row[1], "receipt": row[2], "idempotency_key": key}

    # -- the tools
    def call(self, action: dict[str, Any], key: str, run_id: str) -> dict[str, Any]:
        """Run one validated, authorized tool action; a failure is an observation, not an exception."""
        tool, args = action["tool"], action["args"]
        try:
            if self.faults.fire(tool):
                raise ToolError(f"injected fault: {tool} is unavailable")
            if tool == "search":
                result = self.search(args["query"])
            elif tool == "document":
                result = self.document(args["item"])
            elif tool == "stock":
                result = self.stock(args["item"])
            elif tool == "reserve":
                result = self.reserve(args["item"], args["quantity"], args["version"], key, run_id)
            else:                                   # validate_action never lets one through
                raise ToolError(f"no tool named {tool!r}")
        except ToolError as exc:
            return {"ok": False, "error": str(exc)}
        except sqlite3.Error as exc:
            return {"ok": False, "error": f"database error: {exc}"}
        return {"ok": True, "result": result}

    def search(self, query: str) -> dict[str, Any]:
        pattern = "%" + query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        rows = self.conn.execute(
            "SELECT item FROM catalogue WHERE name LIKE ? ESCAPE '\\' OR tags LIKE ? ESCAPE '\\' "
            "ORDER BY item", (pattern, pattern)).fetchall()
        return {"query": query, "hits": [r[0] for r in rows]}

    def document(self, item: str) -> dict[str, Any]:
        row = self.conn.execute("SELECT name, document FROM catalogue WHERE item = ?", (item,)).fetchone()
        if row is None:
            raise ToolError(f"no item {item!r} in the catalogue")
        return {"item": item, "title": row[0], "text": row[1]}

    def stock(self, item: str) -> dict[str, Any]:
        row = self.conn.execute("SELECT available, version FROM inventory WHERE item = ?", (item,)).fetchone()
        if row is None:
            raise ToolError(f"no inventory for {item!r}")
        return {"item": item, "available": row[0], "version": row[1]}

    def reserve(self, item: str, quantity: int, version: int, key: str, run_id: str) -> dict[str, Any]:
        with transaction(self.conn, immediate=True):
            done = self.receipt_for(key)
            if done is not None:                    # the same action again: no second effect
                return {**done, "replayed": True}
            row = self.conn.execute("SELECT available, version FROM inventory WHERE item = ?",
                                    (item,)).fetchone()
            if row is None:
                raise ToolError(f"no inventory for {item!r}")
            available, current = row
            if current != version:
                raise ToolError(f"version conflict: {item} is at version {current}, not {version}")
            if available < quantity:
                raise ToolError(f"only {available} of {item} available, {quantity} asked")
            self.conn.execute("UPDATE inventory SET available = available - ?, version = version + 1 "
                              "WHERE item = ? AND version = ?", (quantity, item, version))
            receipt = f"rsv:{key}"
            self.conn.execute("INSERT INTO ledger (idempotency_key, run_id, item, quantity, receipt) "
                              "VALUES (?, ?, ?, ?, ?)", (key, run_id, item, quantity, receipt))
        return {"item": item, "quantity": quantity, "receipt": receipt, "idempotency_key": key}


class transaction:
    """BEGIN ... COMMIT on an autocommit connection; ROLLBACK if the body raises."""

    def __init__(self, conn: sqlite3.Connection, immediate: bool = False):
        self.conn, self.immediate = conn, immediate

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE" if self.immediate else "BEGIN")
        return self.conn

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> Literal[False]:
        self.conn.execute("COMMIT" if kind is None else "ROLLBACK")
        return False
