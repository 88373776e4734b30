"""`haltproof conform`: test with Hypothesis that a bound spec's code and its stages agree."""

from __future__ import annotations

import argparse
from typing import Any

from haltproof.machine.binding import spec_adapter
from haltproof.machine.inputs import positive
from haltproof.machine.spec import load_spec

from haltproof.machine.trust import NO_CODE, without_code

from haltproof.explorer.options import Options
from haltproof.explorer.check import prepare, stages_for_every_action
from haltproof.cli.usage import UsageError, parse_pins
from haltproof.reports import report

from .common import no_code_option, pins_option, runs_code, timeout_option, write_stdout


def add_parser(sub: Any) -> None:
    """The `conform` subcommand and its options (`sub`: argparse's subparsers action)."""
    k = sub.add_parser("conform", help="test with Hypothesis that a bound spec's code and stages agree")
    k.add_argument("spec", metavar="SPEC")
    k.add_argument("--examples", type=positive(int, "--examples"), default=200, metavar="N",
                   help="random concrete runs to try (default 200)")
    k.add_argument("--seed", type=int, default=0, help="Hypothesis seed: the same seed, the same runs (default 0)")
    k.add_argument("--max-depth", type=positive(int, "--max-depth"), default=50, metavar="N",
                   help="longest run to draw (default 50 steps)")
    no_code_option(k)
    pins_option(k)
    timeout_option(k, "the whole conformance test")


def cmd_conform(args: argparse.Namespace) -> int:
    from haltproof.explorer.conform import conform, to_text
    if not runs_code(args):
        raise UsageError(f"{args.spec}: conform runs the bound code to compare it with the spec, and "
                         f"{without_code(NO_CODE)}")
    spec = load_spec(args.spec)
    if not spec.bind:
        raise UsageError(f"{args.spec}: the spec is not bound to code (it has no 'bind:'), "
                         "so there is nothing to compare it with")
    stages_for_every_action(spec, "conform compares the bound code with the spec's own stages")
    machines = prepare(spec, Options(pins=parse_pins(args.pins), model_only=True, call_timeout=args.call_timeout))
    adapter = spec_adapter(spec)
    result = conform(machines, adapter, examples=args.examples, seed=args.seed, max_depth=args.max_depth)
    write_stdout(to_text(result, spec.name, spec.bind))
    if result.stopped:
        return report.EXIT_INCOMPLETE
    return report.EXIT_OK if result.ok else report.EXIT_VIOLATED
