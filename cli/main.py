"""The `haltproof` command line: check, replay.

Exit codes (a contract): 0 proved, 1 violated, 2 usage error or invalid spec,
3 incomplete, 4 internal error. Reports go to stdout or files, progress to stderr.
"""

from __future__ import annotations

import argparse
import errno
import os
import re
import sys
import traceback
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from haltproof.machine import usercode
from haltproof.machine.binding import bind_machine, load_adapter
from haltproof.machine.compiled import CompiledSpec
from haltproof.machine.errors import Problem, SpecError
from haltproof.machine.inputs import positive
from haltproof.machine.pymodel import load_model_ref
from haltproof.machine.spec import Spec, load_spec, symlink_problem
from haltproof.machine.usercode import OutOfTime

from haltproof.explorer import baseline, itf
from haltproof.reports import report
from haltproof.reports.formats import FILE_FORMATS, FORMATS
from haltproof.reports.text import render_text
from haltproof.reports.graph import add_arguments as add_graph_arguments, cmd_graph
from haltproof.explorer.check import Options, check_machine, check_pins, load_python_model, prepare, prepare_python
from haltproof.explorer.memory import parse_size
from haltproof.explorer.replay import Replayed, load_trace, run_scenario, run_steps, trace_params, trace_states
from haltproof.explorer.usage import UsageError, one_value_each, parse_pins


def bundled_specs() -> list[Path]:
    """The seed specs shipped with haltproof (not the mutants)."""
    root = resources.files("haltproof.specs")
    return sorted(Path(str(p)) for p in root.iterdir() if p.name.endswith((".yaml", ".yml")))


def collect_specs(args: Sequence[str]) -> list[Path | str]:
    """Spec files (directories searched for .yaml), or `module:Class` Python models."""
    if not args:
        return bundled_specs()
    out: list[Path | str] = []
    for a in args:
        p = Path(a)
        if not p.exists() and re.fullmatch(r"[\w.]+:[\w.]+", a):
            out.append(a)
        elif p.is_dir():
            found = sorted(q for q in p.rglob("*") if q.suffix in (".yaml", ".yml") and not q.is_dir())
            for q in found:
                why = _unusable(q)
                if why:        # a spec that cannot be read is never skipped silently
                    raise UsageError(f"{q}: {why}")
            if not found:
                raise UsageError(f"{a}: no .yaml specs in this directory")
            out.extend(found)
        elif p.is_file():
            out.append(p)
        else:
            raise UsageError(f"{a}: {_unusable(p) or 'not a file or a directory'}")
    return out


def _unusable(path: Path) -> str | None:
    """Why a path names no readable file or directory (`exists()` says False for all of these)."""
    try:
        os.stat(path)
    except OSError as exc:
        return symlink_problem(path, exc) or ("no such file or directory" if exc.errno == errno.ENOENT
                                              else exc.strerror or str(exc))
    return None


def _size(text: str) -> int:
    """An argparse `type=` for --max-memory: a size, checked by `parse_size` (check_number)."""
    try:
        return parse_size(text, "--max-memory")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _timeout_option(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--timeout", type=positive(float, "--timeout"), metavar="SECONDS",
                   help=f"wall-clock bound on {what}, the bound code included; hitting it gives "
                        "incomplete (exit 3)")


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
    c.add_argument("--max-states", type=positive(int, "--max-states"), metavar="N")
    _timeout_option(c, "the whole check")
    c.add_argument("--max-memory", type=_size, metavar="SIZE",
                   help="stop cleanly (incomplete) when the process holds more memory than SIZE, "
                        "e.g. 512M or 4G (K, M, G, T are powers of 1024; plain bytes too)")
    c.add_argument("--format", choices=["text", *FORMATS], default="text",
                   help="what goes to stdout (default text)")
    for name in FILE_FORMATS:
        c.add_argument(f"--{name}", dest=f"{name}_file", metavar="FILE",
                       help=f"also write the {name} report to FILE")
    c.add_argument("--progress", action="store_true", help="show progress on stderr even when not a terminal")
    c.add_argument("--baseline", metavar="FILE",
                   help="compare counts, bounds and verdicts with FILE (written when missing); "
                        "a difference exits 1")
    c.add_argument("--update-baseline", action="store_true",
                   help="with --baseline: rewrite FILE with this check's figures")
    c.add_argument("--quiet", action="store_true",
                   help="no progress, and the text report shrinks to its verdict line")
    c.add_argument("--trace-format", choices=["json", "itf"], default="json",
                   help="how the JSON report writes its traces: json (default) or itf, the Informal "
                        "Trace Format of Apalache and Quint")
    c.add_argument("--model", action="store_true",
                   help="explore the spec's own stages even when it is bound to code")
    c.add_argument("--engine", choices=["auto", "scalar", "vector"], default="auto",
                   help="auto (default): the numpy level-by-level engine when the spec allows it, "
                        "else the scalar one")
    c.add_argument("--emit-tests", metavar="DIR",
                   help="write a pytest regression test per violated property, replaying its counterexample")

    k = sub.add_parser("conform", help="test with Hypothesis that a bound spec's code and stages agree")
    k.add_argument("spec", metavar="SPEC")
    k.add_argument("--examples", type=positive(int, "--examples"), default=200, metavar="N",
                   help="random concrete runs to try (default 200)")
    k.add_argument("--seed", type=int, default=0, help="Hypothesis seed: the same seed, the same runs (default 0)")
    k.add_argument("--max-depth", type=positive(int, "--max-depth"), default=50, metavar="N",
                   help="longest run to draw (default 50 steps)")
    k.add_argument("-p", dest="pins", action="append", default=[], metavar="NAME=VALUE")
    _timeout_option(k, "the whole conformance test")

    r = sub.add_parser("replay", help="run a scenario or a saved trace step by step")
    r.add_argument("spec", metavar="SPEC")
    g = r.add_mutually_exclusive_group(required=True)
    g.add_argument("--scenario", metavar="NAME")
    g.add_argument("--trace", metavar="FILE", help="a trace as the JSON report prints it, or an ITF trace")
    r.add_argument("--property", metavar="NAME", help="which trace, when FILE is a whole report")
    r.add_argument("--model", action="store_true",
                   help="run the spec's own stages even when it is bound to code")
    r.add_argument("-p", dest="pins", action="append", default=[], metavar="NAME=VALUE")
    _timeout_option(r, "the replay")

    gr = sub.add_parser("graph", help="write the explored state space as DOT, GraphML, Mermaid or JSON")
    add_graph_arguments(gr)
    _timeout_option(gr, "building the graph")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    try:
        code = _main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else report.EXIT_USAGE
    except (SpecError, UsageError) as exc:
        print(_error_text(exc), file=sys.stderr)
        code = report.EXIT_USAGE
    except OutOfTime as stop:        # while loading the user's code, before any result
        print(f"haltproof: incomplete: --timeout reached while {stop.doing or 'running the user code'}",
              file=sys.stderr)
        code = report.EXIT_INCOMPLETE
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
    if args.command == "graph":
        return cmd_graph(args)
    command = {"check": cmd_check, "conform": cmd_conform, "replay": cmd_replay}[args.command]
    with usercode.deadline(args.timeout):     # one wall-clock bound on the whole command
        return command(args)


def _check_report_files(args: argparse.Namespace) -> None:
    """Every --json/--junit/--sarif/--html FILE can be written, before anything is explored: a
    long check must not end in exit 2 for a typo in a folder name (nothing is created here)."""
    for name in FILE_FORMATS:
        target = getattr(args, f"{name}_file")
        if target is None:
            continue
        if not target.strip():              # `--json=` would otherwise write nothing, silently
            raise UsageError(f"--{name} needs a file name")
        path = Path(target)
        folder = path.parent if str(path.parent) else Path(".")
        why = ("is a directory" if path.is_dir()
               else f"no such directory: {folder}" if not folder.is_dir()
               else "permission denied" if not os.access(path if path.exists() else folder, os.W_OK)
               else None)
        if why:
            raise UsageError(f"--{name} {target}: cannot write the report: {why}")


def cmd_check(args: argparse.Namespace) -> int:
    paths = collect_specs(args.specs)
    pins = parse_pins(args.pins)
    if args.update_baseline and not args.baseline:
        raise UsageError("--update-baseline needs --baseline FILE")
    try:     # read before exploring anything: a bad baseline is a usage error, nothing runs
        recorded = baseline.load(args.baseline) if args.baseline else None
    except baseline.BaselineError as exc:
        raise UsageError(str(exc)) from None
    _check_report_files(args)
    if args.trace_format == "itf" and args.format != "json" and not getattr(args, "json_file", None):
        raise UsageError("--trace-format itf changes the traces of the JSON report only: "
                         "add --format json or --json FILE")
    specs: list[Spec] = []
    models: dict[int, type] = {}        # id(spec) -> the Python model class it came from
    problems: list[Problem] = []
    for p in paths:
        try:
            if isinstance(p, str):
                cls = _load_model_ref(p)
                spec = load_python_model(cls)[0]
                models[id(spec)] = cls
                specs.append(spec)
            else:
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
        every = {n for s in specs for n in [p.name for p in s.properties] + list(s.builtins)}
        missing = [n for n in wanted if n not in every]
        if missing:
            raise UsageError(f"--property {missing[0]}: no spec has a property with this name")
    show_progress = (args.progress or sys.stderr.isatty()) and not args.quiet
    # Validate every spec and combination before exploring anything (exit 2, no partial report).
    plans = []
    for spec in specs:
        names = {p.name for p in spec.params}
        props = wanted
        if wanted and len(specs) > 1:
            props = [n for n in wanted if n in {p.name for p in spec.properties} | set(spec.builtins)]
            if not props:
                continue
        opts = Options(pins={k: v for k, v in pins.items() if k in names}, properties=props,
                       model_only=args.model, engine=args.engine,
                       max_states=args.max_states, timeout=args.timeout, max_memory=args.max_memory,
                       progress=_progress if show_progress else None)
        machines = prepare_python(models[id(spec)], opts) if id(spec) in models else prepare(spec, opts)
        plans.append((machines, opts))
    runs = [check_machine(m, opts) for machines, opts in plans for m in machines]
    if show_progress:
        print("\r\033[K", end="", file=sys.stderr, flush=True)
    if not runs:
        raise UsageError("nothing to check")
    data = report.to_json(runs)
    shown = {"json": itf.report_with_itf_traces(data, [r.spec for r in runs])} \
        if args.trace_format == "itf" else {}
    text = render_text(data, verbose=True, quiet=args.quiet) if args.format == "text" else _render(args.format, shown.get(args.format, data), runs)
    for name in FILE_FORMATS:
        target = getattr(args, f"{name}_file")
        if target:
            try:
                Path(target).write_text(_render(name, shown.get(name, data), runs), encoding="utf-8")
            except OSError as exc:
                raise UsageError(f"--{name} {target}: cannot write the report: {exc.strerror}") from None
    if args.format == "github":     # the job summary, when GitHub Actions gives a file for it
        from haltproof.reports.github import append_step_summary
        try:
            append_step_summary(data)
        except OSError as exc:
            raise UsageError(f"GITHUB_STEP_SUMMARY={os.environ.get('GITHUB_STEP_SUMMARY')}: cannot "
                             f"append the summary: {exc.strerror}") from None
    code = report.overall(runs)[1]
    moved: list[str] = []
    if args.baseline:
        try:
            if recorded is None or args.update_baseline:
                baseline.save(args.baseline, runs)
                print(f"haltproof: baseline {'written' if recorded is None else 'updated'}: "
                      f"{args.baseline} ({len(runs)} runs)", file=sys.stderr)
            else:
                moved = baseline.compare(recorded, runs)
        except baseline.BaselineError as exc:
            raise UsageError(str(exc)) from None
        if moved and code == report.EXIT_OK:
            code = report.EXIT_VIOLATED
    if args.emit_tests:
        from haltproof.explorer.regress import emit_tests
        try:
            written = emit_tests(runs, args.emit_tests)
        except OSError as exc:
            raise UsageError(f"--emit-tests {args.emit_tests}: cannot write the tests: {exc.strerror}") from None
        print(f"haltproof: wrote {len(written)} regression test{'s' if len(written) != 1 else ''} "
              f"to {args.emit_tests}", file=sys.stderr)
    sys.stdout.write(text)
    if moved:
        print(f"baseline {args.baseline}: {len(moved)} figure{'s' if len(moved) != 1 else ''} moved "
              "(rerun with --update-baseline to accept):", file=sys.stderr)
        for line in moved:
            print(f"  {line}", file=sys.stderr)
    return code


def _load_model_ref(ref: str) -> type:
    """Import a `module:Class` model: the user's code, within the command's deadline."""
    try:
        return usercode.run(load_model_ref, ref)
    except OutOfTime as stop:
        stop.note(f"importing the model {ref}")
        raise


def _render(name: str, data: dict[str, Any], runs: list) -> str:
    """One format's text. HTML also draws the explored graph of each small run, which the
    check kept on its RunResult (the report dict does not hold graphs)."""
    if name == "html":
        from haltproof.reports.html import render_html, state_graphs
        return render_html(data, state_graphs(runs, data))
    return FORMATS[name](data)


def _progress(spec: Spec, params: dict[str, int]):
    name = f"{spec.name} {' '.join(f'{k}={v}' for k, v in params.items())}"

    def show(states: int, transitions: int, depth: int, frontier: int, seconds: float) -> None:
        rate = states / seconds if seconds > 0 else 0.0
        print(f"\r\033[K{name}: {states:,} states ({rate:,.0f}/s), {transitions:,} transitions, "
              f"depth {depth}, frontier {frontier:,}, {seconds:.1f} s",
              end="", file=sys.stderr, flush=True)
    return show


def cmd_conform(args: argparse.Namespace) -> int:
    from haltproof.explorer.conform import conform, to_text
    spec = load_spec(args.spec)
    if not spec.bind:
        raise UsageError(f"{args.spec}: the spec is not bound to code (it has no 'bind:'), "
                         "so there is nothing to compare it with")
    machines = prepare(spec, Options(pins=parse_pins(args.pins), model_only=True))
    adapter = load_adapter(spec.bind, spec.path, spec.bind_line)
    result = conform(machines, adapter, examples=args.examples, seed=args.seed, max_depth=args.max_depth)
    sys.stdout.write(to_text(result, spec.name, spec.bind))
    if result.stopped:
        return report.EXIT_INCOMPLETE
    return report.EXIT_OK if result.ok else report.EXIT_VIOLATED


def _bound(spec: Spec, m: Any, model_only: bool) -> Any:
    """The machine replay runs: the bound code unless --model (or the spec is not bound)."""
    if spec.bind and not model_only:
        return bind_machine(m, load_adapter(spec.bind, spec.path, spec.bind_line), spec.bind)
    return m


def cmd_replay(args: argparse.Namespace) -> int:
    pins = one_value_each(parse_pins(args.pins), "replay")
    spec = load_spec(args.spec)
    compiled = CompiledSpec(spec)
    if args.scenario is not None:
        sc = next((s for s in spec.scenarios if s.name == args.scenario), None)
        if sc is None:
            names = ", ".join(s.name for s in spec.scenarios) or "none"
            raise UsageError(f"{args.spec}: no scenario named {args.scenario!r} (it has: {names})")
        params = dict(sc.params)
        check_pins(spec, pins)
        params.update(pins)
        m = _bound(spec, compiled.instantiate(params), args.model)
        out = run_scenario(m, sc)
        print(f"# scenario {sc.name} of {spec.name}, {_params_text(params)}")
    else:
        data = load_trace(args.trace, args.property)
        params = trace_params(spec, data, args.trace, pins)
        missing = [p.name for p in spec.params if p.name not in params]
        if missing:
            raise UsageError(f"{args.trace}: the trace does not record param {missing[0]}; give it with -p")
        check_pins(spec, params)
        params = {p.name: params[p.name] for p in spec.params}
        m = _bound(spec, compiled.instantiate(params), args.model)
        trace_states(m, data, args.trace)
        steps = data["steps"]
        out = run_steps(m, steps[0]["state"], [(s["action"], s.get("choices") or {}) for s in steps[1:]],
                        [s["state"] for s in steps])
        print(f"# trace {args.trace} on {spec.name}, {_params_text(params)}")
    _print_replay(m, out)
    return report.EXIT_OK if out.ok else report.EXIT_VIOLATED


def _params_text(params: dict[str, int]) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items()) or "no params"


def _print_replay(m: Any, out: Replayed) -> None:
    from haltproof.machine.text import assignments_text, trace_table
    if m.replay_lines:
        for lines in out.lines:
            for label, value in lines:
                print(f"{label}: {value}")
    else:
        from haltproof.properties.kinds import Trace
        for row in trace_table(Trace(out.steps).to_json()):
            print(row)
    if out.ok:
        end = out.steps[-1].state
        print(f"# ok: {len(out.steps) - 1} steps, final state "
              + assignments_text(end)
              + ("" if out.terminal else " (not terminal)"))
    else:
        print(f"# FAILED: {out.problem}")


if __name__ == "__main__":
    # `python -m haltproof.cli.main` runs this file as __main__, a second copy of the module beside the
    # `haltproof.cli.main` the subcommand modules import: run that one, exactly as the `haltproof` script does.
    from haltproof.cli.main import main as script_main
    script_main()
