"""`haltproof guard`: write a runtime guard (haltproof.guard) from a proved run of one param
combination, as a JSON table or (`-o FILE.py`) a standalone Python module. docs/how-to/guard.md."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from haltproof.machine.spec import load_spec

from haltproof.explorer.options import Options, sweep
from haltproof.explorer.check import prepare
from haltproof.explorer.guard_export import GuardIncomplete, GuardRefused, guard_module, guard_table, guarded_run
from haltproof.cli.usage import UsageError, one_value_each, parse_pins
from haltproof.reports import report

from .common import not_one_combination, pins_option, timeout_option, write_stdout


def add_parser(sub: Any) -> None:
    """The `guard` subcommand and its options (`sub`: argparse's subparsers action)."""
    g = sub.add_parser("guard", help="write a runtime guard (shields, monitors) from a proved run")
    g.add_argument("spec", metavar="SPEC")
    pins_option(g, "pin a param (repeatable); a guard is of exactly one combination")
    g.add_argument("-o", dest="output", metavar="FILE", required=True,
                   help="the guard: FILE.py a standalone Python module, any other name a JSON table")
    g.add_argument("--allow-violated", action="store_true",
                   help="write the guard of a run that is not proved (it guards the known violation)")
    timeout_option(g, "checking and exploring the run")


def write_guard(spec_path: str, pins: dict[str, int | str], output: str, *, allow_violated: bool = False,
                timeout: float | None = None) -> tuple[dict[str, Any], str]:
    """Check and explore one param combination, then write its guard to `output`; the table and
    what to tell the user. Raises UsageError, GuardRefused or GuardIncomplete."""
    spec = load_spec(spec_path)
    problem = not_one_combination(spec, spec_path, pins, len(sweep(spec, pins)), "a guard is of one param combination")
    if problem is not None:
        raise UsageError(problem)
    opts = Options(pins=pins, timeout=timeout)
    (m,) = prepare(spec, opts)
    run, ex = guarded_run(m, opts, allow_violated=allow_violated)
    table = guard_table(m, run, ex, report.version())
    text = guard_module(table) if output.endswith(".py") else json.dumps(table, separators=(",", ":")) + "\n"
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"-o {output}: cannot write the guard: {exc.strerror}") from None
    edges = sum(len(r) for r in table["edges"])
    told = (f"{output}: guard of {spec.name} {_params(m.params)} ({run.result}): {len(table['states'])} states, "
            f"{edges} transitions, {len(table['properties'])} safety properties, {len(table['budgets'])} budgets")
    if table["spec"]["violated"]:
        told += f"; guards the known violation of {', '.join(table['spec']['violated'])}"
    return table, told


def _params(params: dict[str, Any]) -> str:
    return "(" + ", ".join(f"{k}={v}" for k, v in params.items()) + ")"


def cmd_guard(args: argparse.Namespace) -> int:
    pins = one_value_each(parse_pins(args.pins), "guard")
    if not args.output.strip():
        raise UsageError("-o needs a file name")
    try:
        _, told = write_guard(args.spec, pins, args.output, allow_violated=args.allow_violated,
                              timeout=args.timeout)
    except GuardRefused as exc:
        print(f"haltproof guard: {exc}; no guard written", file=sys.stderr)
        return report.EXIT_VIOLATED
    except GuardIncomplete as exc:
        print(f"haltproof guard: incomplete: {exc}; no guard written", file=sys.stderr)
        return report.EXIT_INCOMPLETE
    write_stdout(told + "\n")
    return 0
