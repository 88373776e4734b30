"""`haltproof conform`: test with Hypothesis that a bound spec's code and its stages agree."""

from __future__ import annotations

import argparse
from typing import Any

from haltproof.machine.binding import spec_adapter
from haltproof.machine.inputs import positive
from haltproof.machine.spec import load_spec

from haltproof.explorer.check import Options, prepare
from haltproof.cli.usage import UsageError, parse_pins
from haltproof.reports import report

from . import supervise
from .common import pins_option, timeout_option


def add_parser(sub: Any) -> None:
    """The `conform` subcommand and its options (`sub`: argparse's subparsers action)."""
    k = sub.add_parser("conform", help="test with Hypothesis that a bound spec's code and stages agree")
    k.add_argument("spec", metavar="SPEC")
    k.add_argument("--examples", type=positive(int, "--examples"), default=200, metavar="N",
                   help="random concrete runs to try (default 200)")
    k.add_argument("--seed", type=int, default=0, help="Hypothesis seed: the same seed, the same runs (default 0)")
    k.add_argument("--max-depth", type=positive(int, "--max-depth"), default=50, metavar="N",
                   help="longest run to draw (default 50 steps)")
    pins_option(k)
    timeout_option(k, "the whole conformance test")


def cmd_conform(args: argparse.Namespace) -> int:
    from haltproof.explorer.conform import conform, to_text
    spec = load_spec(args.spec)
    if not spec.bind:
        raise UsageError(f"{args.spec}: the spec is not bound to code (it has no 'bind:'), "
                         "so there is nothing to compare it with")
    machines = prepare(spec, Options(pins=parse_pins(args.pins), model_only=True, call_timeout=args.call_timeout))
    adapter = spec_adapter(spec)
    result = conform(machines, adapter, examples=args.examples, seed=args.seed, max_depth=args.max_depth)
    supervise.report_stream().write(to_text(result, spec.name, spec.bind))
    if result.stopped:
        return report.EXIT_INCOMPLETE
    return report.EXIT_OK if result.ok else report.EXIT_VIOLATED
