"""`haltproof graph`: the explored state space of one param combination, written as DOT,
GraphML, Mermaid or JSON (the graph model and its writers are haltproof.reports.graph)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from haltproof.machine import usercode
from haltproof.machine.compiled import Machine
from haltproof.machine.errors import Problem, SpecError
from haltproof.machine.inputs import check_number, positive
from haltproof.machine.spec import load_spec, shown_path
from haltproof.machine.text import counted
from haltproof.machine.usercode import CALL_TIMEOUT, OutOfTime, Stuck
from haltproof.properties.kinds import HOLDS, VIOLATED, Trace

from haltproof.explorer.options import Options, sweep
from haltproof.explorer.check import check_machine, prepare, stop_reason
from haltproof.explorer.engine import explore
from haltproof.cli.usage import UsageError, one_value_each, parse_pins
from haltproof.reports.graph import DEFAULT_MAX_NODES, FORMAT_NAMES, WRITERS, StateGraph, build_graph
from haltproof.reports.report import EXIT_INCOMPLETE

from .common import no_code_option, not_one_combination, runs_code, timeout_option, write_stdout


def add_parser(sub: Any) -> None:
    """The `graph` subcommand and its options (`sub`: argparse's subparsers action)."""
    g = sub.add_parser("graph", help="write the explored state space as DOT, GraphML, Mermaid or JSON")
    g.add_argument("spec", metavar="SPEC")
    g.add_argument("-p", dest="pins", action="append", default=[], metavar="NAME=VALUE",
                   help="pin a param (repeatable); the graph needs exactly one combination")
    g.add_argument("--format", choices=FORMAT_NAMES, default="dot", help="default dot")
    g.add_argument("-o", dest="output", metavar="FILE", help="write to FILE instead of stdout")
    g.add_argument("--max-nodes", type=positive(int, "--max-nodes"), default=DEFAULT_MAX_NODES, metavar="N",
                   help=f"keep the first N states in BFS order (default {DEFAULT_MAX_NODES})")
    g.add_argument("--highlight", metavar="PROPERTY",
                   help="highlight the counterexample of PROPERTY (or the witness of a reachable one)")
    no_code_option(g)
    timeout_option(g, "building the graph")


def graph_for(spec_path: str, pins: dict[str, int | str], *, max_nodes: int | None = DEFAULT_MAX_NODES,
              highlight: str | None = None, timeout: float | None = None,
              run_code: bool = True, call_timeout: float | None = CALL_TIMEOUT) -> tuple[StateGraph, list[str]]:
    """The graph of one param combination of a spec, and the notes to tell the user.

    Raises SpecError (bad spec, pin or property), GraphUsage (not exactly one combination),
    or ValueError (max_nodes not a positive int, timeout not a positive finite number),
    before anything is explored. `timeout` bounds it all, as `check --timeout` does, the
    bound code included; a graph is of the whole space, so hitting it (or running out of
    memory) raises GraphIncomplete and gives no graph. run_code=False (--no-code): the graph of
    a bound spec's own stages, none of its code imported (machine/trust.py). `call_timeout` bounds
    each call into the bound code, as `check --call-timeout` does."""
    if max_nodes is not None:
        max_nodes = check_number(max_nodes, "max_nodes", int, above=0)
    if timeout is not None:
        timeout = check_number(timeout, "timeout", float, above=0)
    try:
        with usercode.deadline(timeout, call_timeout):
            return _graph(spec_path, pins, max_nodes, highlight, timeout, run_code, call_timeout)
    except Stuck as stop:            # while loading the bound code, before any exploration
        raise GraphIncomplete(stop.text()) from None
    except OutOfTime as stop:        # while loading the bound code, before any exploration
        raise GraphIncomplete(f"--timeout {timeout:g} s reached while "
                              f"{stop.doing or 'running the user code'}") from None


def _graph(spec_path: str, pins: dict[str, int | str], max_nodes: int | None, highlight: str | None,
           timeout: float | None, run_code: bool, call_timeout: float | None) -> tuple[StateGraph, list[str]]:
    spec = load_spec(spec_path, run_code)
    combos = sweep(spec, pins)
    problem = not_one_combination(spec, spec_path, pins, len(combos), "a graph shows one param combination")
    if problem is not None:
        raise GraphUsage(problem)
    opts = Options(pins=pins, properties=None if highlight is None else [highlight], timeout=timeout,
                   run_code=run_code, call_timeout=call_timeout)
    try:
        (m,) = prepare(spec, opts)
    except SpecError as exc:             # its property check names the option --property
        raise SpecError([Problem(p.file, p.line, p.message.replace("--property ", "--highlight ", 1), p.text)
                         for p in exc.problems]) from None
    ex = explore(m, timeout=usercode.remaining())
    if not ex.complete:
        raise GraphIncomplete(stop_reason(ex, opts))
    trace, told = (None, "") if highlight is None else _highlighted(m, opts, highlight)
    g = build_graph(ex, max_nodes=max_nodes, highlight=[] if trace is None else [trace], name=spec.name,
                    source=shown_path(spec.path))
    if highlight is not None:       # one note for the option: what the property gave, and how much of it is shown
        g.highlight = highlight
        marked = [n for n in g.notes if n.startswith("highlighted:")]
        g.notes = [n for n in g.notes if not n.startswith("highlighted:")]
        g.notes.append(told + "".join(f"; {n}" for n in marked))
    return g, [n for n in g.notes if not n.startswith("complete:")]


def _highlighted(m: Machine, opts: Options, highlight: str) -> tuple[Trace | None, str]:
    """The trace --highlight PROPERTY marks (its counterexample, or a reachable one's
    witness), and what to tell the user about it."""
    run = check_machine(m, opts)
    if run.stopped_by is not None:
        raise GraphIncomplete(run.stop_reason)
    res = next((p for p in run.properties if p.name == highlight), None)
    if res is None:
        return None, (f"--highlight {highlight}: the property is not checked for these params "
                      "(its `when` is false): nothing highlighted")
    if res.status == VIOLATED and res.trace is not None:
        return res.trace, (f"--highlight {highlight}: violated; its counterexample "
                           f"({counted(len(res.trace), 'transition')}) is highlighted")
    if res.witness is not None:
        return res.witness, (f"--highlight {highlight}: holds; its witness ({counted(len(res.witness), 'transition')}) "
                             "is highlighted")
    what = "holds" if res.status == HOLDS else res.status
    return None, f"--highlight {highlight}: {what}, no trace: nothing highlighted"


class GraphUsage(Exception):
    """Not exactly one param combination."""


class GraphIncomplete(Exception):
    """The timeout passed (or memory ran out) before the whole space was explored."""


def cmd_graph(args: argparse.Namespace) -> int:
    pins = one_value_each(parse_pins(args.pins), "graph")
    if args.output is not None and not args.output.strip():     # `-o ""` would write to stdout instead
        raise UsageError("-o needs a file name")
    output = os.path.abspath(args.output) if args.output else None     # before the user's code may chdir
    try:
        g, notes = graph_for(args.spec, pins, max_nodes=args.max_nodes, highlight=args.highlight,
                             timeout=args.timeout, run_code=runs_code(args), call_timeout=args.call_timeout)
    except GraphUsage as exc:
        raise UsageError(str(exc)) from None
    except GraphIncomplete as exc:
        print(f"haltproof graph: incomplete: {exc}; no graph written", file=sys.stderr)
        return EXIT_INCOMPLETE
    text = WRITERS[args.format](g)
    if output:
        try:
            Path(output).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"-o {args.output}: cannot write the graph: {exc.strerror}") from None
    else:
        write_stdout(text)
    for note in notes:
        print(f"haltproof graph: {note}", file=sys.stderr)
    return 0
