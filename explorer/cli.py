"""The `haltproof` command line: check, replay.

Exit codes (a contract): 0 proved, 1 violated, 2 usage error or invalid spec,
3 incomplete, 4 internal error. Reports go to stdout or files, progress to stderr.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from importlib import resources
from pathlib import Path
from typing import Any, Sequence

from machine.compiled import CompiledSpec
from machine.errors import Problem, SpecError
from machine.spec import BUILTIN_PROPERTIES, Spec, load_spec

from . import report
from .formats import FILE_FORMATS, FORMATS
from .check import Options, check_machine, prepare, sweep
from .replay import Replayed, load_trace, run_scenario, run_steps


class UsageError(Exception):
    """A mistake on the command line (exit 2)."""


def bundled_specs() -> list[Path]:
    """The seed specs shipped with haltproof (not the mutants)."""
    root = resources.files("haltproof_specs")
    return sorted(Path(str(p)) for p in root.iterdir() if p.name.endswith((".yaml", ".yml")))


def collect_specs(args: Sequence[str]) -> list[Path]:
    if not args:
        return bundled_specs()
    out: list[Path] = []
    for a in args:
        p = Path(a)
        if p.is_dir():
            found = sorted(q for q in p.rglob("*") if q.suffix in (".yaml", ".yml") and q.is_file())
            if not found:
                raise UsageError(f"{a}: no .yaml specs in this directory")
            out.extend(found)
        elif p.is_file():
            out.append(p)
        else:
            raise UsageError(f"{a}: no such file or directory")
    return out


def parse_pins(pins: Sequence[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in pins:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"-p {item}: write -p NAME=VALUE")
        try:
            out[name.strip()] = int(value)
        except ValueError:
            raise UsageError(f"-p {item}: the value must be an integer") from None
    return out


def _positive(kind: type, what: str):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be a number, got {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{what} must be positive, got {text!r}")
        return value
    return parse


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:     # argparse exits 2 itself; keep its message short
        self.print_usage(sys.stderr)
        print(f"haltproof: error: {message}", file=sys.stderr)
        raise SystemExit(report.EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="haltproof", description="Prove that an agent run loop stops, and stops honestly.")
    ap.add_argument("--version", action="version", version=f"haltproof {report.version()}")
    sub = ap.add_subparsers(dest="command", required=True, parser_class=_Parser)

    c = sub.add_parser("check", help="explore every state and judge every property")
    c.add_argument("specs", nargs="*", metavar="SPEC_OR_DIR",
                   help="spec files or directories (default: the bundled seed specs)")
    c.add_argument("-p", dest="pins", action="append", default=[], metavar="NAME=VALUE",
                   help="pin a param (repeatable); otherwise every declared value is checked")
    c.add_argument("--property", dest="properties", action="append", metavar="NAME",
                   help="check only this property (repeatable); built-ins are always checked")
    c.add_argument("--max-states", type=_positive(int, "--max-states"), metavar="N")
    c.add_argument("--timeout", type=_positive(float, "--timeout"), metavar="SECONDS")
    c.add_argument("--format", choices=["text", *FORMATS], default="text",
                   help="what goes to stdout (default text)")
    for name in FILE_FORMATS:
        c.add_argument(f"--{name}", dest=f"{name}_file", metavar="FILE",
                       help=f"also write the {name} report to FILE")
    c.add_argument("--progress", action="store_true", help="show progress on stderr even when not a terminal")

    r = sub.add_parser("replay", help="run a scenario or a saved trace step by step")
    r.add_argument("spec", metavar="SPEC")
    g = r.add_mutually_exclusive_group(required=True)
    g.add_argument("--scenario", metavar="NAME")
    g.add_argument("--trace", metavar="FILE", help="a trace as the JSON report prints it")
    r.add_argument("--property", metavar="NAME", help="which trace, when FILE is a whole report")
    r.add_argument("-p", dest="pins", action="append", default=[], metavar="NAME=VALUE")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    try:
        code = _main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else report.EXIT_USAGE
    except (SpecError, UsageError) as exc:
        print(_error_text(exc), file=sys.stderr)
        code = report.EXIT_USAGE
    except KeyboardInterrupt:
        print("haltproof: interrupted", file=sys.stderr)
        code = 130
    except BrokenPipeError:
        code = 0
    except Exception:   # a bug in haltproof, not in the user's input
        print("haltproof: internal error (a bug in haltproof, not in your spec). Please file it with "
              "the spec and this traceback:", file=sys.stderr)
        traceback.print_exc()
        code = report.EXIT_INTERNAL
    if argv is None:
        sys.exit(code)
    return code


def _error_text(exc: Exception) -> str:
    if isinstance(exc, SpecError):
        return "\n".join(f"error: {report.shown_path(p.file)}" + str(p)[len(p.file):] for p in exc.problems)
    return f"error: {exc}"


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "check":
        return cmd_check(args)
    return cmd_replay(args)


def cmd_check(args: argparse.Namespace) -> int:
    paths = collect_specs(args.specs)
    pins = parse_pins(args.pins)
    specs: list[Spec] = []
    problems: list[Problem] = []
    for p in paths:
        try:
            specs.append(load_spec(p))
        except SpecError as exc:
            problems.extend(exc.problems)
    if problems:
        raise SpecError(problems)
    if pins:
        unknown = [n for n in pins if not any(n in {p.name for p in s.params} for s in specs)]
        if unknown:
            raise UsageError(f"-p {unknown[0]}: no spec declares a param named {unknown[0]!r}")
    wanted = args.properties
    if wanted and len(specs) > 1:
        # Over several specs, each checks the named properties it has; a name no spec has is an error.
        every = {n for s in specs for n in [p.name for p in s.properties]} | set(BUILTIN_PROPERTIES)
        missing = [n for n in wanted if n not in every]
        if missing:
            raise UsageError(f"--property {missing[0]}: no spec has a property with this name")
    show_progress = args.progress or sys.stderr.isatty()
    # Validate every spec and combination before exploring anything (exit 2, no partial report).
    plans = []
    for spec in specs:
        names = {p.name for p in spec.params}
        props = wanted
        if wanted and len(specs) > 1:
            props = [n for n in wanted if n in {p.name for p in spec.properties} | set(BUILTIN_PROPERTIES)]
            if not props:
                continue
        opts = Options(pins={k: v for k, v in pins.items() if k in names}, properties=props,
                       max_states=args.max_states, timeout=args.timeout,
                       progress=_progress if show_progress else None)
        plans.append((prepare(spec, opts), opts))
    runs = [check_machine(m, opts) for machines, opts in plans for m in machines]
    if show_progress:
        print("\r\033[K", end="", file=sys.stderr, flush=True)
    if not runs:
        raise UsageError("nothing to check")
    data = report.to_json(runs)
    text = report.to_text(runs) if args.format == "text" else FORMATS[args.format](data)
    for name in FILE_FORMATS:
        target = getattr(args, f"{name}_file")
        if target:
            try:
                Path(target).write_text(FORMATS[name](data), encoding="utf-8")
            except OSError as exc:
                raise UsageError(f"--{name} {target}: cannot write the report: {exc.strerror}") from None
    sys.stdout.write(text)
    return report.overall(runs)[1]


def _progress(spec: Spec, params: dict[str, int]):
    name = f"{spec.name} {' '.join(f'{k}={v}' for k, v in params.items())}"

    def show(states: int, transitions: int, depth: int) -> None:
        print(f"\r\033[K{name}: {states:,} states, {transitions:,} transitions, depth {depth}",
              end="", file=sys.stderr, flush=True)
    return show


def cmd_replay(args: argparse.Namespace) -> int:
    spec = load_spec(args.spec)
    pins = parse_pins(args.pins)
    compiled = CompiledSpec(spec)
    if args.scenario is not None:
        sc = next((s for s in spec.scenarios if s.name == args.scenario), None)
        if sc is None:
            names = ", ".join(s.name for s in spec.scenarios) or "none"
            raise UsageError(f"{args.spec}: no scenario named {args.scenario!r} (it has: {names})")
        params = dict(sc.params)
        for k, v in pins.items():
            sweep(spec, {k: v})
            params[k] = v
        m = compiled.instantiate(params)
        out = run_scenario(m, sc)
        print(f"# scenario {sc.name} of {spec.name}, {' '.join(f'{k}={v}' for k, v in params.items())}")
    else:
        data = load_trace(args.trace, args.property)
        params = dict(data.get("params") or {})
        params.update(pins)
        missing = [p.name for p in spec.params if p.name not in params]
        if missing:
            raise UsageError(f"{args.trace}: the trace does not record param {missing[0]}; give it with -p")
        sweep(spec, params)
        params = {p.name: params[p.name] for p in spec.params}
        m = compiled.instantiate(params)
        steps = data["steps"]
        init = steps[0]["state"]
        if set(init) != set(m.var_names):
            raise UsageError(f"{args.trace}: the trace's state has vars {sorted(init)}, the spec has "
                             f"{sorted(m.var_names)}")
        out = run_steps(m, init, [(s["action"], s.get("choices") or {}) for s in steps[1:]],
                        [s["state"] for s in steps])
        print(f"# trace {args.trace} on {spec.name}, {' '.join(f'{k}={v}' for k, v in params.items())}")
    _print_replay(m, out)
    return report.EXIT_OK if out.ok else report.EXIT_VIOLATED


def _print_replay(m: Any, out: Replayed) -> None:
    if m.replay_lines:
        for lines in out.lines:
            for label, value in lines:
                print(f"{label}: {value}")
    else:
        from .report import trace_table
        from properties.kinds import Trace
        for row in trace_table(Trace(out.steps)):
            print(row)
    if out.ok:
        end = out.steps[-1].state
        print(f"# ok: {len(out.steps) - 1} steps, final state "
              + " ".join(f"{k}={report._v(v)}" for k, v in end.items())
              + ("" if out.terminal else " (not terminal)"))
    else:
        print(f"# FAILED: {out.problem}")


if __name__ == "__main__":
    main()
