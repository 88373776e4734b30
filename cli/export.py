"""`haltproof export`: the explored machine of one param combination as a model another tool
reads. `--format prism` writes an explicit-state PRISM MDP (haltproof.reports.prism) with the
spec's weights, its terminal values, deadlocks and probability targets as labels, and a reward
structure per measure, so that Storm or PRISM can cross-check haltproof's probabilities;
`--format drn` the same model in Storm's explicit format (haltproof.reports.drn), which Storm
reads at any size (its PRISM labels stop at a few thousand states)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from collections.abc import Iterable, Iterator
from typing import Any

from haltproof.machine import usercode
from haltproof.machine.spec import load_spec, shown_path

from haltproof.explorer.options import Options, sweep
from haltproof.explorer.judging import edge_weights
from haltproof.explorer.check import prepare, stop_reason
from haltproof.explorer.engine import explore
from haltproof.explorer.chances import Chances
from haltproof.properties.probability import Flags
from haltproof.cli.usage import UsageError, one_value_each, parse_pins
from haltproof.reports.drn import drn_lines
from haltproof.reports.prism import ident, wide_numbers, write_prism
from haltproof.reports.report import EXIT_INCOMPLETE, EXIT_VIOLATED

from .common import no_code_option, not_one_combination, runs_code, timeout_option, write_stdout

FORMATS = ("prism", "drn")


def add_parser(sub: Any) -> None:
    """The `export` subcommand and its options (`sub`: argparse's subparsers action)."""
    e = sub.add_parser("export", help="write the explored machine as a PRISM model or in Storm's explicit "
                                      "format (drn), for Storm or PRISM")
    e.add_argument("spec", metavar="SPEC")
    e.add_argument("-p", dest="pins", action="append", default=[], metavar="NAME=VALUE",
                   help="pin a param (repeatable); an export is of exactly one combination")
    e.add_argument("--format", choices=FORMATS, default="prism",
                   help="prism (default) or drn: Storm's explicit format, which Storm reads at any size")
    e.add_argument("-o", dest="output", metavar="FILE", help="write to FILE instead of stdout")
    no_code_option(e)
    timeout_option(e, "exploring")


def cmd_export(args: argparse.Namespace) -> int:
    pins = one_value_each(parse_pins(args.pins), "export")
    if args.output is not None and not args.output.strip():
        raise UsageError("-o needs a file name")
    output = os.path.abspath(args.output) if args.output else None     # before the user's code may chdir
    run_code = runs_code(args)
    spec = load_spec(args.spec, run_code)
    combos = sweep(spec, pins)
    problem = not_one_combination(spec, args.spec, pins, len(combos), "an export is of one param combination")
    if problem is not None:
        raise UsageError(problem)
    opts = Options(pins=pins, run_code=run_code, call_timeout=args.call_timeout)
    (m,) = prepare(spec, opts)
    ex = explore(m, timeout=usercode.remaining())
    if not ex.complete:
        print(f"haltproof export: incomplete: {stop_reason(ex, opts)}; no model written", file=sys.stderr)
        return EXIT_INCOMPLETE
    errors = [n for n in spec.builtins if n in ex.findings]
    if errors or ex.terminal_unknown is not None:
        print(f"haltproof export: the spec's own errors ({', '.join(errors) or 'well_defined'}) cut the "
              "exploration short: run `haltproof check` to see them; no model written", file=sys.stderr)
        return EXIT_VIOLATED
    chances = Chances(ex, m, None, edge_weights(ex, m))
    params = " ".join(f"{k}={v}" for k, v in m.params.items()) or "no params"
    header = (f"haltproof export of {shown_path(spec.path)} [{spec.name}], {params}: "
              f"{len(ex.states):,} explored states")
    if args.format == "drn":
        return _emit(_drn(chances, m, header), output, args.output)
    labels: dict[str, Flags] = {"terminal": chances.mdp.terminal, "deadlock": chances.deadlocks()}
    if m.label is not None:
        labels.update({f"end_{ident(value)}": members for value, members in chances.ends().items()})
    labels.update({f"reach_{name}": chances.target(name) for name in m.chances})
    rewards = {name: chances.edge_reward(name) for name in chances.measures()}
    text = write_prism(chances.mdp, spec.name, labels, rewards, header)
    wide = wide_numbers(chances.mdp, rewards)
    if wide:
        print(f"haltproof export: note: {wide:,} of the model's probabilities and rewards have a numerator or "
              "denominator past 64 bits (weights of more than 18 digits): written exactly, but Storm's PRISM "
              "parser reads integers of 64 bits at most", file=sys.stderr)
    return _emit([text], output, args.output)


def _drn(chances: Chances, m: Any, header: str) -> Iterator[str]:
    """The DRN text, line by line, built over the arrays (no Python object per state)."""
    labels: dict[str, Flags] = {"terminal": chances.sparse.terminal, "deadlock": chances.deadlocks()}
    if m.label is not None:
        labels.update({f"end_{ident(value)}": members for value, members in chances.ends().items()})
    labels.update({f"reach_{ident(name)}": chances.target(name) for name in m.chances})
    rewards = {ident(name): chances.edge_rewards(name) for name in chances.measures()}
    return (line + "\n" for line in drn_lines(chances.sparse, labels, rewards, header))


def _emit(parts: Iterable[str], output: str | None, given: str | None) -> int:
    text = "".join(parts)
    if output:
        try:
            Path(output).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"-o {given}: cannot write the model: {exc.strerror}") from None
    else:
        write_stdout(text)
    return 0
