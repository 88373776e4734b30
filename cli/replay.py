"""`haltproof replay`: run a named scenario, or a saved trace, step by step, and print each step."""

from __future__ import annotations

import argparse
from typing import Any

from haltproof.machine.binding import bind_machine, spec_adapter
from haltproof.machine.compiled import CompiledSpec, Machine
from haltproof.machine.spec import Spec, load_spec
from haltproof.machine.text import assignments_text, trace_table
from haltproof.properties.kinds import Trace

from haltproof.machine.trust import MODEL, NO_CODE, without_code

from haltproof.explorer.options import check_pins
from haltproof.explorer.check import stages_for_every_action
from haltproof.explorer.replay import (Replayed, load_trace, recorded_rules, run_scenario, run_steps, trace_params,
                                      trace_states)
from haltproof.cli.usage import UsageError, one_value_each, parse_pins
from haltproof.reports import report

from .common import no_code_option, pins_option, runs_code, timeout_option, write_stdout


def add_parser(sub: Any) -> None:
    """The `replay` subcommand and its options (`sub`: argparse's subparsers action)."""
    r = sub.add_parser("replay", help="run a scenario or a saved trace step by step")
    r.add_argument("spec", metavar="SPEC")
    g = r.add_mutually_exclusive_group(required=True)
    g.add_argument("--scenario", metavar="NAME")
    g.add_argument("--trace", metavar="FILE", help="a trace as the JSON report prints it, or an ITF trace")
    r.add_argument("--property", metavar="NAME", help="which trace, when FILE is a whole report")
    r.add_argument("--model", action="store_true",
                   help="run the spec's own stages even when it is bound to code")
    no_code_option(r)
    pins_option(r)
    timeout_option(r, "the replay")


def cmd_replay(args: argparse.Namespace) -> int:
    pins = one_value_each(parse_pins(args.pins), "replay")
    if args.trace is not None and not args.trace.strip():
        raise UsageError("--trace needs a file name")
    args.run_code = runs_code(args)
    spec = load_spec(args.spec, args.run_code and not args.model, mode=MODEL if args.run_code else NO_CODE)
    if spec.bind and (args.model or not args.run_code):
        stages_for_every_action(spec, without_code(MODEL if args.run_code else NO_CODE))
    compiled = CompiledSpec(spec)
    if args.scenario is not None:
        m, out, head = _replay_scenario(args, compiled, pins)
    else:
        m, out, head = _replay_trace(args, compiled, pins)
    write_stdout("\n".join([head, *_replay_lines(m, out)]) + "\n")
    return report.EXIT_OK if out.ok else report.EXIT_VIOLATED


def _replay_scenario(args: argparse.Namespace, compiled: CompiledSpec,
                     pins: dict[str, int | str]) -> tuple[Machine, Replayed, str]:
    spec = compiled.spec
    sc = next((s for s in spec.scenarios if s.name == args.scenario), None)
    if sc is None:
        names = ", ".join(s.name for s in spec.scenarios) or "none"
        raise UsageError(f"{args.spec}: no scenario named {args.scenario!r} (it has: {names})")
    params = dict(sc.params)
    params.update({name: values[0] for name, values in check_pins(spec, pins).items()})
    m = _bound(spec, compiled.instantiate(params), args.model or not args.run_code)
    out = run_scenario(m, sc)
    return m, out, f"# scenario {sc.name} of {spec.name}, {_params_text(params)}"


def _replay_trace(args: argparse.Namespace, compiled: CompiledSpec,
                  pins: dict[str, int | str]) -> tuple[Machine, Replayed, str]:
    spec = compiled.spec
    data = load_trace(args.trace, args.property)
    params = trace_params(spec, data, args.trace, pins)
    missing = [p.name for p in spec.params if p.name not in params]
    if missing:
        raise UsageError(f"{args.trace}: the trace does not record param {missing[0]}; give it with -p")
    typed = check_pins(spec, params)
    params = {p.name: typed[p.name][0] for p in spec.params}
    m = _bound(spec, compiled.instantiate(params), args.model or not args.run_code)
    trace_states(m, data, args.trace)
    steps = data["steps"]
    out = run_steps(m, steps[0]["state"], [(s["action"], s.get("choices") or {}) for s in steps[1:]],
                    [s["state"] for s in steps], recorded_rules(steps))
    return m, out, f"# trace {args.trace} on {spec.name}, {_params_text(params)}"


def _bound(spec: Spec, m: Machine, model_only: bool) -> Machine:
    """The machine replay runs: the bound code unless --model (or the spec is not bound)."""
    if spec.bind and not model_only:
        return bind_machine(m, spec_adapter(spec), spec.bind)
    return m


def _params_text(params: dict[str, int]) -> str:
    return assignments_text(params) or "no params"


def _replay_lines(m: Machine, out: Replayed) -> list[str]:
    """The replay as it is printed: each step, then how it ended."""
    if m.replay_lines:
        lines = [f"{label}: {value}" for step in out.lines for label, value in step]
    else:
        lines = trace_table(Trace(out.steps).to_json())
    if out.ok:
        end = out.steps[-1].state
        lines.append(f"# ok: {len(out.steps) - 1} steps, final state " + assignments_text(end)
                     + ("" if out.terminal else " (not terminal)"))
    else:
        lines.append(f"# FAILED: {out.problem}")
    return lines
