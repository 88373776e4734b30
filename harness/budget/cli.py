"""`python -m haltproof.harness.budget`: run a task with a chosen policy, K and R; print the steps.

    python -m haltproof.harness.budget run -K 4 -R 2                       # worked example 1
    python -m haltproof.harness.budget run -K 2                            # budget_exhausted
    python -m haltproof.harness.budget run --policy local --actions finish_first.json   # worked example 2
    python -m haltproof.harness.budget run --policy http --url http://127.0.0.1:8765/
    python -m haltproof.harness.budget run --db shop.sqlite --run-id r1 ... ; python -m haltproof.harness.budget resume --db shop.sqlite --run-id r1
    python -m haltproof.harness.budget serve --port 8765                  # the default rules over HTTP, on 127.0.0.1

Exit codes: 0 the run finished (reserved or info); 1 it ended in another terminal
(policy_error, budget_exhausted, abstained, error) - the outcome is printed either way;
2 bad input (options, task, action file, URL, database): a message, nothing run.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from haltproof.machine import strict_json

from . import transitions as T
from .gate import Stop, validate_action
from .policies import (DEFAULT_TIMEOUT, MAX_TIMEOUT, DeterministicPolicy, HTTPJSONPolicy,
                       LocalJSONPolicy, PolicyConfigError, checked_seconds)
from .policy_server import PolicyServer
from .store import RunExists, RunNotFound, RunStore, holds_run
from .tasks import TASKS
from .tools import TOOL_NAMES, Faults, Shop, connect
from .runner import Runner


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:      # exit 2 with a message, like every other bad input
        self.print_usage(sys.stderr)
        raise UsageError(message)


def _timeout(text: str) -> float:
    """--timeout is checked whatever the policy: `nan` or `inf` is a mistake even where unused."""
    try:
        return checked_seconds(float(text), "--timeout")     # the HTTP policy's own check, at parse time
    except (ValueError, PolicyConfigError):
        raise argparse.ArgumentTypeError(f"--timeout must be a finite number of seconds in "
                                         f"(0, {MAX_TIMEOUT:g}], got {text!r}") from None


def _parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="python -m haltproof.harness.budget",
                 description="The budgeted policy runner (seed S2): real policies, real tools on SQLite.")
    sub = ap.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def policy_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("--policy", choices=["deterministic", "local", "http"], default="deterministic",
                       help="who proposes the actions (default: deterministic)")
        p.add_argument("--actions", metavar="FILE", help="--policy local: a JSON list of actions")
        p.add_argument("--url", help="--policy http: the policy service (http only to 127.0.0.1/[::1])")
        p.add_argument("--timeout", type=_timeout, default=DEFAULT_TIMEOUT,
                       help=f"--policy http: seconds per network wait (default {DEFAULT_TIMEOUT:g})")
        p.add_argument("--db", default=":memory:", help="SQLite file for the shop and the runs (default :memory:)")
        p.add_argument("--fail", action="append", default=[], metavar="TOOL=N",
                       help="inject N failures of TOOL (repeatable)")
        p.add_argument("--json", action="store_true", help="print the final run as JSON instead of the steps")

    run = sub.add_parser("run", help="start a run")
    run.add_argument("--task", default="camera", choices=sorted(TASKS), help="a named task (default camera)")
    run.add_argument("--task-json", metavar="JSON", help="a task object instead of --task")
    run.add_argument("-K", "--K", dest="K", type=int, default=4, help="tool attempt cap (default 4)")
    run.add_argument("-R", "--R", dest="R", type=int, default=2, help="retries per action (default 2)")
    run.add_argument("--run-id", help="name of the run (default run-N)")
    policy_options(run)

    resume = sub.add_parser("resume", help="continue a run saved in --db")
    resume.add_argument("--run-id", required=True)
    policy_options(resume)

    serve = sub.add_parser("serve", help="serve the default rules as an HTTP policy on 127.0.0.1")
    serve.add_argument("--port", type=int, default=8765, help="port (0: any free one; default 8765)")
    serve.add_argument("--max-requests", type=int, metavar="N", help="stop after N answers")
    return ap


def _policy(args: argparse.Namespace) -> Any:
    if args.policy == "deterministic":
        if args.actions or args.url:
            raise UsageError("--actions and --url need --policy local / --policy http")
        return DeterministicPolicy()
    if args.policy == "local":
        if not args.actions:
            raise UsageError("--policy local needs --actions FILE")
        return LocalJSONPolicy(args.actions)
    if not args.url:
        raise UsageError("--policy http needs --url URL")
    return HTTPJSONPolicy(args.url, timeout=args.timeout)


def _faults(specs: list[str]) -> Faults:
    plan: dict[str, int] = {}
    for s in specs:
        tool, sep, n = s.partition("=")
        if not sep or not n.strip().isdigit():
            raise UsageError(f"--fail {s!r}: write TOOL=N, e.g. search=1 (tools: {', '.join(TOOL_NAMES)})")
        plan[tool] = plan.get(tool, 0) + int(n)
    try:
        return Faults(plan)
    except ValueError as exc:
        raise UsageError(f"--fail: {exc}") from None


def _task(args: argparse.Namespace) -> object:
    """The task as given, for T.check_task to judge (--task-json may be any JSON)."""
    if args.task_json is None:
        return dict(TASKS[args.task])
    try:
        return strict_json.loads(args.task_json)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--task-json is not valid JSON: {exc.msg}") from None
    except strict_json.DuplicateKeyError as exc:
        raise UsageError(f"--task-json: {exc}") from None


# ------------------------------------------------------------------ printing the steps

def _short(value: Any, limit: int = 160) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _describe(action: dict[str, Any]) -> str:
    if action["type"] == "tool":
        return f"{action['tool']} {_short(action['args'])}"
    if action["type"] == "finish":
        return f"finish {action['status']}"
    return "abstain"


def _proposal(raw: Any, rule: str) -> str:
    """A proposal the run ended on: described if it is a valid action, else shown raw."""
    if rule == "policy_raised":
        return "(no proposal: the policy failed)"
    try:
        return _describe(validate_action(raw))
    except Stop:
        return _short(raw)


class Printer:
    def __init__(self, out: Any):
        self.out = out
        self.decision = 0

    def __call__(self, event: dict[str, Any]) -> None:
        kind = event["event"]
        w = self.out.write
        if kind in ("start", "resume"):
            run = event["run"]
            task = run["task"]
            what = (f"reserve {task['quantity']} x {task['query']!r}" if task["goal"] == "reserve"
                    else f"information about {task['query']!r}")
            verb = "run" if kind == "start" else "resuming run"
            w(f"{verb} {run['run_id']}: {what}, K={run['K']} R={run['R']}, "
              f"{run['calls']} attempts and {len(run['observations'])} observations so far\n")
            self.decision = run["decisions"]
        elif kind == "decision":
            self.decision += 1
            rule = event["rule"]
            shown = _describe(event["action"]) if event["action"] else _proposal(event["proposal"], rule)
            if rule == "prepared":
                w(f"decision {self.decision}: {shown}\n")
            else:
                w(f"decision {self.decision}: {shown} -> {rule}\n")
        elif kind in ("attempt", "recovered"):
            o = event["observation"]
            got = f"ok {_short(o['result'])}" if o["ok"] else f"failed: {o['error']}"
            tag = "  recovered " if kind == "recovered" else "  "
            w(f"{tag}attempt {o['attempt']} of K={event['K']}: {o['tool']} {_short(o['args'])} "
              f"(try {o['try']}) -> {got} [{event['rule']}]\n")


def _summary(run: dict[str, Any], shop: Shop, before: dict[str, tuple[int, int]]) -> str:
    lines = [f"outcome: {T.outcome_of(run)}",
             f"calls: {run['calls']} of K={run['K']}, decisions: {run['decisions']}, "
             f"observations kept: {len(run['observations'])}"]
    ledger = shop.ledger(run["run_id"])
    lines.append(f"ledger: {len(ledger)} entr{'y' if len(ledger) == 1 else 'ies'}"
                 + "".join(f"\n  {e['receipt']}: {e['quantity']} x {e['item']}" for e in ledger))
    after = shop.inventory()
    changed = [f"{item} {before[item][0]} -> {after[item][0]}" for item in after
               if item in before and before[item][0] != after[item][0]]
    lines.append("inventory: " + (", ".join(changed) if changed else "unchanged"))
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ main

def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(argv)
    except (UsageError, PolicyConfigError, T.TaskError, RunExists, RunNotFound) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except sqlite3.Error as exc:
        print(f"error: the database cannot be used: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _main(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    policy = _policy(args)
    faults = _faults(args.fail)
    raw_task = _task(args) if args.command == "run" else None
    task: dict[str, Any] | None = None          # a run's task; a resume has the run's own
    if args.command == "run":
        T.check_limits(args.K, args.R)
        task = T.check_task(raw_task)
    if args.command == "resume":
        _check_resumable(args.db, args.run_id)
    try:
        conn = connect(args.db, mode="rwc" if args.command == "run" else "rw")
        shop = Shop(conn, faults)
        shop.seed()
        store = RunStore(conn)
    except sqlite3.Error as exc:
        raise UsageError(f"cannot open the database {args.db!r}: {exc}") from None
    if args.command == "run" and args.run_id and store.exists(args.run_id):
        raise RunExists(f"a run {args.run_id!r} already exists in {args.db} (resume it instead)")
    before = shop.inventory()
    out = sys.stdout
    printer = Printer(out)
    runner = Runner(conn, policy, faults=faults, on_event=None if args.json else printer)
    if task is not None:
        run = runner.start(task, args.K, args.R, run_id=args.run_id)
    else:
        run = runner.resume(args.run_id)
    if args.json:
        out.write(json.dumps({"run": run, "ledger": shop.ledger(run["run_id"]),
                              "inventory_before": {k: v[0] for k, v in before.items()},
                              "inventory": {k: v[0] for k, v in shop.inventory().items()}}, indent=2) + "\n")
    else:
        out.write(_summary(run, shop, before))
    conn.close()
    return 0 if run["terminal"]["status"] == "finished" else 1


def _check_resumable(db: str, run_id: str) -> None:
    """Before anything is written: `db` is an existing database holding the run (opened
    read-only: a resume on a missing or foreign file must not create or change it)."""
    if db != ":memory:" and not Path(db).exists():
        raise UsageError(f"--db {db}: no such database (resume continues a run saved by "
                         f"`run --db {db}`)")
    if Path(db).is_dir():
        raise UsageError(f"--db {db}: a directory, not a database")
    try:
        probe = connect(db, mode="ro")
        try:
            found = holds_run(probe, run_id)
        finally:
            probe.close()
    except sqlite3.Error as exc:
        raise UsageError(f"cannot open the database {db!r}: {exc}") from None
    if not found:
        raise RunNotFound(run_id)


def _serve(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be in 0..65535, got {args.port}")
    if args.max_requests is not None and args.max_requests < 1:
        raise UsageError("--max-requests must be at least 1")
    try:
        server = PolicyServer(port=args.port)
    except OSError as exc:
        raise UsageError(f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc}") from None
    print(f"policy server (the deterministic rules, hero-policy-v1): {server.url}", flush=True)
    try:
        server.serve(args.max_requests)
    finally:
        server.stop()
    print(f"answered {server.round_trips} request(s)", flush=True)
    return 0
