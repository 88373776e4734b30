"""`haltproof traces`: recorded runs (JSONL, OpenTelemetry exports) checked against the explored
graph of one param combination, and (`--fit FILE`) the choices' observed frequencies written as
a `probabilities:` block. docs/how-to/traces.md."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from haltproof.guard import Guard
from haltproof.machine.spec import load_spec

from haltproof.explorer.options import Options, sweep
from haltproof.explorer.check import prepare
from haltproof.explorer.guard_export import GuardIncomplete, guard_table, guarded_run
from haltproof.explorer.recorded import (Outcome, RecordingError, check_run, fit_counts, probabilities_block,
                                         read_runs, read_span_map, summary_table)
from haltproof.cli.usage import UsageError, one_value_each, parse_pins
from haltproof.reports import report

from .common import not_one_combination, pins_option, timeout_option, write_stdout


def add_parser(sub: Any) -> None:
    """The `traces` subcommand and its options (`sub`: argparse's subparsers action)."""
    t = sub.add_parser("traces", help="check recorded runs (JSONL, OpenTelemetry) against the spec")
    t.add_argument("spec", metavar="SPEC")
    t.add_argument("runs", metavar="RUNS", help="a JSONL file of runs or events, or an OTLP JSON trace export")
    pins_option(t, "pin a param (repeatable); the runs are checked against exactly one combination")
    t.add_argument("--fit", metavar="FILE", help="write the observed choice frequencies as a probabilities: block")
    t.add_argument("--json", dest="json_out", metavar="FILE", help="also write every run's outcome as JSON")
    t.add_argument("--map", dest="span_map", metavar="FILE",
                   help="a span map (YAML or JSON): which plain GenAI spans are which events of the spec "
                        "(instead of the spec's spans:)")
    timeout_option(t, "checking and exploring the spec")


def check_recorded(spec_path: str, runs_path: str, pins: dict[str, int | str], *, timeout: float | None = None,
                   span_map: str | None = None) -> tuple[list[Outcome], Guard, list[list[tuple[str, dict[str, Any]]]]]:
    """Every recorded run's outcome, the guard they were followed with, and the transitions each
    followed inside the model. Raises UsageError, RecordingError or GuardIncomplete."""
    spec = load_spec(spec_path)
    problem = not_one_combination(spec, spec_path, pins, len(sweep(spec, pins)),
                                  "recorded runs are checked against one param combination")
    if problem is not None:
        raise UsageError(problem)
    rules = read_span_map(span_map) if span_map is not None else spec.span_map or None
    runs = read_runs(runs_path, rules)
    opts = Options(pins=pins, timeout=timeout)
    (m,) = prepare(spec, opts)
    run, ex = guarded_run(m, opts, allow_violated=True)
    guard = Guard.from_table(guard_table(m, run, ex, report.version()))
    outcomes: list[Outcome] = []
    followed: list[list[tuple[str, dict[str, Any]]]] = []
    for rec in runs:
        outcome, taken = check_run(guard, rec)
        outcomes.append(outcome)
        followed.append(taken)
    return outcomes, guard, followed


def cmd_traces(args: argparse.Namespace) -> int:
    pins = one_value_each(parse_pins(args.pins), "traces")
    try:
        outcomes, guard, followed = check_recorded(args.spec, args.runs, pins, timeout=args.timeout,
                                                   span_map=args.span_map)
    except RecordingError as exc:
        raise UsageError(str(exc)) from None
    except GuardIncomplete as exc:
        print(f"haltproof traces: incomplete: {exc}", file=sys.stderr)
        return report.EXIT_INCOMPLETE
    write_stdout(summary_table(outcomes))
    _write(args.json_out, lambda: json.dumps({"runs": [o.to_dict() for o in outcomes]}, indent=1) + "\n")
    _write(args.fit, lambda: probabilities_block(fit_counts(guard, followed), f"{len(followed)} runs of {args.runs}"))
    return report.EXIT_VIOLATED if any(o.status != "conforms" for o in outcomes) else report.EXIT_OK


def _write(path: str | None, text: Any) -> None:
    if path is None:
        return
    try:
        Path(path).write_text(text(), encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{path}: cannot write: {exc.strerror}") from None
