"""`haltproof check`: explore every state of every spec and param combination, judge every
property, and write the reports (stdout, report files, baseline, regression tests)."""

from __future__ import annotations

import argparse
import copy
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from haltproof.machine import usercode
from haltproof.machine.binding import DETERMINISM, FULL_UP_TO
from haltproof.machine.errors import Problem, SpecError
from haltproof.machine.inputs import number_option, positive
from haltproof.machine.pymodel import load_model_ref
from haltproof.machine.spec import Spec, load_spec
from haltproof.machine.text import assignments_text
from haltproof.machine.trust import MODEL, NO_CODE, python_model_refused
from haltproof.machine.usercode import OutOfTime

from haltproof.explorer import baseline, itf
from haltproof.explorer.options import MAX_WORKERS, Options
from haltproof.explorer.results import RunResult
from haltproof.explorer.check import load_python_model, prepare, prepare_python
from haltproof.explorer import cluster, parallel
from haltproof.explorer.parallel import Batch, Source, check_batches
from haltproof.explorer.engine import ProgressFn
from haltproof.cli.usage import UsageError, parse_pins
from haltproof.reports import report
from haltproof.reports.formats import FILE_FORMATS, FORMATS
from haltproof.reports.text import render_text

from . import supervise
from .common import collect_specs, no_code_option, pins_option, runs_code, size, timeout_option, write_stdout


def add_parser(sub: Any) -> None:
    """The `check` subcommand and its options (`sub`: argparse's subparsers action)."""
    c = sub.add_parser("check", help="explore every state and judge every property")
    c.add_argument("specs", nargs="*", metavar="SPEC_OR_DIR",
                   help="spec files or directories (default: the bundled seed specs)")
    pins_option(c, "pin a param (repeatable); otherwise every declared value is checked")
    c.add_argument("--property", dest="properties", action="append", metavar="NAME",
                   help="check only this property (repeatable); built-ins are always checked")
    c.add_argument("--max-states", type=positive(int, "--max-states"), metavar="N")
    timeout_option(c, "the whole check")
    c.add_argument("--max-memory", type=size, metavar="SIZE",
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
    c.add_argument("--verbose", action="store_true",
                   help="the full text report: every property, bound, scenario, warning and trace of "
                        "every run, and the sweep tables (default: a line per run, the findings, the totals)")
    c.add_argument("--quiet", action="store_true",
                   help="no progress, and the text report shrinks to its verdict line")
    c.add_argument("--trace-format", choices=["json", "itf"], default="json",
                   help="how the JSON report writes its traces: json (default) or itf, the Informal "
                        "Trace Format of Apalache and Quint")
    c.add_argument("--model", action="store_true",
                   help="explore the spec's own stages even when it is bound to code")
    no_code_option(c)
    c.add_argument("--paths", type=positive(int, "--paths"), default=1, metavar="N",
                   help="live binding: compare up to N paths into each abstract state (default 1: off)")
    c.add_argument("--determinism", choices=DETERMINISM, default="auto",
                   help="bound code: run every transition twice and compare (full), only each state's "
                        f"first transition (sample), or none (off); auto (default): full when the spec "
                        f"declares at most {FULL_UP_TO:,} states for the params, else sample")
    c.add_argument("--engine", choices=["auto", "scalar", "vector"], default="auto",
                   help="auto (default): the numpy level-by-level engine when the spec allows it, "
                        "else the scalar one")
    c.add_argument("-j", "--workers", type=number_option(int, "--workers", above=0, most=MAX_WORKERS),
                   metavar="N", help="check the runs of a sweep (and the specs given) in N processes at once, "
                                     "with the same report (default: every core of this machine; 1: one at a time)")
    c.add_argument("--dask", metavar="ADDRESS",
                   help="check the runs on the Dask cluster whose scheduler is at ADDRESS (tcp://host:port); "
                        "its workers need haltproof, the specs at the same paths and the bound code "
                        "(docs/how-to/scaling.md)")
    c.add_argument("--emit-tests", metavar="DIR",
                   help="write a pytest regression test per violated property, replaying its counterexample")


def cmd_check(args: argparse.Namespace) -> int:
    """Validate everything (exit 2, nothing explored), check, then write every output."""
    paths = collect_specs(args.specs)
    pins = parse_pins(args.pins)
    args.run_code = runs_code(args)
    recorded = _checked_options(args)
    where = written_files(args)
    client = _dask_client(args.dask, args.timeout)
    try:
        specs, models = _load_specs(paths, args.run_code, args.model)
        _check_names(specs, pins, args.properties)
        show_progress = (args.progress or sys.stderr.isatty()) and not args.quiet
        workers = parallel.default_workers() if args.workers is None else args.workers
        one_by_one = workers == 1 and client is None      # runs here, one at a time: their own progress
        batches = _plans(specs, models, pins, args, show_progress and one_by_one, workers)
        each = _tell_plan(batches)
        done = _runs_done if show_progress and not one_by_one else None
        runs = check_batches(batches, workers, done, each) if client is None \
            else cluster.check_on_cluster(batches, client, done)
    finally:
        if client is not None:
            client.close()
    if show_progress:
        print("\r\033[K", end="", file=sys.stderr, flush=True)
    if not runs:
        raise UsageError("nothing to check")
    text, data = _reports(args, report.to_json(runs), runs, where)
    code = report.overall(runs)[1]
    moved = _baseline(args, recorded, runs, where)
    if moved and code == report.EXIT_OK:
        code = report.EXIT_VIOLATED
    if args.emit_tests:
        _emit_tests(args.emit_tests, where["emit_tests"], runs)
    write_stdout(text)
    if moved:
        print(f"baseline {args.baseline}: {len(moved)} figure{'s' if len(moved) != 1 else ''} moved "
              "(rerun with --update-baseline to accept):", file=sys.stderr)
        for line in moved:
            print(f"  {line}", file=sys.stderr)
    return code


def _dask_client(address: str | None, timeout: float | None) -> Any:
    """The Dask client for --dask ADDRESS (None without it). An unreachable scheduler, or
    anything else answering there, is exit 2; a --timeout shorter than the time given to
    connecting bounds it too, and a scheduler silent until then is exit 3 (nothing checked)."""
    if address is None:
        return None
    if not address.strip():
        raise UsageError("--dask needs the scheduler's address, e.g. tcp://127.0.0.1:8786")
    seconds = cluster.CONNECT_SECONDS if timeout is None else min(timeout, cluster.CONNECT_SECONDS)
    try:
        return cluster.connect(address, seconds)
    except cluster.Unreachable as exc:
        if exc.timed_out and seconds < cluster.CONNECT_SECONDS:
            raise OutOfTime(f"waiting for the Dask scheduler at {address} to answer") from None
        raise UsageError(str(exc)) from None


def _checked_options(args: argparse.Namespace) -> dict[str, dict[str, Any]] | None:
    """The options that need no spec, checked before anything is loaded; returns the recorded
    baseline (None when there is none yet, or no --baseline)."""
    for option, value, what in (("--baseline", args.baseline, "a file name"),
                                ("--emit-tests", args.emit_tests, "a directory name")):
        if value is not None and not value.strip():      # `--baseline=` would otherwise skip it, silently
            raise UsageError(f"{option} needs {what}")
    if args.update_baseline and not args.baseline:
        raise UsageError("--update-baseline needs --baseline FILE")
    try:     # read before exploring anything: a bad baseline is a usage error, nothing runs
        recorded = baseline.load(args.baseline) if args.baseline else None
    except baseline.BaselineError as exc:
        raise UsageError(str(exc)) from None
    _check_report_files(args)
    if args.verbose and args.quiet:
        raise UsageError("--verbose and --quiet ask for opposite text reports: give one of them")
    if args.verbose and args.format != "text":
        raise UsageError(f"--verbose lengthens the text report only, not --format {args.format}: "
                         "drop it, or leave out --format")
    if args.trace_format == "itf" and args.format != "json" and not getattr(args, "json_file", None):
        raise UsageError("--trace-format itf changes the traces of the JSON report only: "
                         "add --format json or --json FILE")
    return recorded


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


def _load_specs(paths: Sequence[Path | str], run_code: bool = True,
                model: bool = False) -> tuple[list[Spec], dict[int, type]]:
    """Every spec, and id(spec) -> the Python model class it came from; every spec's
    problems are reported together. Without `run_code` (--no-code) a Python model is refused
    before it is imported; then, and with `model` (--model), so is a framework declaration."""
    specs: list[Spec] = []
    models: dict[int, type] = {}
    problems: list[Problem] = []
    for p in paths:
        try:
            if isinstance(p, str):
                if not run_code:
                    raise SpecError([python_model_refused(p)])
                cls = _load_model_ref(p)
                spec = load_python_model(cls)[0]
                models[id(spec)] = cls
                specs.append(spec)
            else:
                specs.append(load_spec(p, run_code and not model, mode=MODEL if run_code else NO_CODE))
        except SpecError as exc:
            problems.extend(exc.problems)
    if problems:
        raise SpecError(problems)
    return specs, models


def _load_model_ref(ref: str) -> type:
    """Import a `module:Class` model: the user's code, within the command's deadline."""
    cls: type = usercode.load_as(lambda: f"importing the model {ref}", lambda: load_model_ref(ref))
    return cls


def _check_names(specs: list[Spec], pins: dict[str, list[int | str]], wanted: list[str] | None) -> None:
    """Every pinned param and every --property names something some spec declares."""
    if pins:
        unknown = [n for n in pins if not any(n in {p.name for p in s.params} for s in specs)]
        if unknown:
            raise UsageError(f"-p {unknown[0]}: no spec declares a param named {unknown[0]!r}")
    if wanted and len(specs) > 1:
        # Over several specs, each checks the named properties it has; a name no spec has is an error.
        every = {n for s in specs for n in [p.name for p in s.properties] + list(s.builtins)}
        missing = [n for n in wanted if n not in every]
        if missing:
            raise UsageError(f"--property {missing[0]}: no spec has a property with this name")


def _plans(specs: list[Spec], models: dict[int, type], pins: dict[str, list[int | str]],
           args: argparse.Namespace, show_progress: bool, workers: int) -> list[Batch]:
    """Validate every spec and combination before exploring anything (exit 2, no partial report)."""
    wanted: list[str] | None = args.properties
    plans: list[Batch] = []
    for spec in specs:
        names = {p.name for p in spec.params}
        props = wanted
        if wanted and len(specs) > 1:
            props = [n for n in wanted if n in {p.name for p in spec.properties} | set(spec.builtins)]
            if not props:
                continue
        opts = Options(pins={k: v for k, v in pins.items() if k in names}, properties=props,
                       model_only=args.model, run_code=args.run_code, engine=args.engine, paths=args.paths,
                       determinism=args.determinism, workers=workers,
                       max_states=args.max_states, timeout=args.timeout, max_memory=args.max_memory,
                       call_timeout=args.call_timeout, progress=_progress if show_progress else None)
        if id(spec) in models:
            cls = models[id(spec)]
            batch = Batch(Source(model=f"{cls.__module__}:{cls.__qualname__}"), prepare_python(cls, opts), opts)
        else:
            batch = Batch(Source(path=spec.path), prepare(spec, opts), opts)
        plans.append(batch)
    return plans


def _runs_done(done: int, total: int) -> None:
    """Progress of a check in several processes: how many runs are done."""
    print(f"\r\033[Kchecked {done:,} of {total:,} runs", end="", file=sys.stderr, flush=True)


def _progress(spec: Spec, params: dict[str, int]) -> ProgressFn:
    name = f"{spec.name} {assignments_text(params)}"

    def show(states: int, transitions: int, depth: int, frontier: int, seconds: float) -> None:
        rate = states / seconds if seconds > 0 else 0.0
        print(f"\r\033[K{name}: {states:,} states ({rate:,.0f}/s), {transitions:,} transitions, "
              f"depth {depth}, frontier {frontier:,}, {seconds:.1f} s",
              end="", file=sys.stderr, flush=True)
    return show


def written_files(args: argparse.Namespace) -> dict[str, str | None]:
    """Every file the check writes (by option name: json, junit, sarif, html, baseline,
    emit_tests, and the GitHub job summary), as an absolute path, read before any of the user's
    code runs: code that changes the working directory must not move a report."""
    def absolute(path: str | None) -> str | None:
        return os.path.abspath(path) if path else None
    out = {name: absolute(getattr(args, f"{name}_file")) for name in FILE_FORMATS}
    out.update(baseline=absolute(args.baseline), emit_tests=absolute(args.emit_tests),
               summary=absolute(os.environ.get("GITHUB_STEP_SUMMARY")))
    return out


def _tell_plan(batches: list[Batch]) -> parallel.EachFn | None:
    """In a supervised child (cli/supervise.py): tell the supervisor every run planned, as the
    report writes a run never finished, and return what tells it each run as it finishes."""
    if not supervise.supervised_child():
        return None
    why = "the check ended before this run was checked"
    supervise.tell("plan", [report.run_json(parallel.lost_run(m, b.options, why))
                            for b in batches for m in b.machines])
    return lambda i, run: supervise.tell("run", (i, report.run_json(run)))


def stopped_report(args: argparse.Namespace, partial: supervise.Partial, how: supervise.Ending) -> int:
    """The report of a supervised check whose process was ended, or ended itself, before it was
    done (cli/supervise.py): the runs it finished, the run at hand saying why it stopped (a
    `bound_code` finding when the code ended the process or ignored its call deadline), the
    others not checked. Written as the check writes it; returns the exit code, never 0."""
    runs: list[dict[str, Any]] = []
    at_hand = True
    for i, planned in enumerate(partial.planned):
        if i in partial.finished:
            runs.append(partial.finished[i])
            continue
        run = copy.deepcopy(planned)
        run["stopped_by"] = "timeout" if how.kind == "timeout" else parallel.LOST
        if at_hand:
            _stopped_at(run, how)
            at_hand = False
        runs.append(run)
    data = report.from_runs(runs)
    if data["exit_code"] == report.EXIT_OK:        # every run finished, and then the process ended
        data["result"], data["exit_code"] = "incomplete", report.EXIT_INCOMPLETE
    for option, value in (("--baseline", args.baseline), ("--emit-tests", args.emit_tests)):
        if value:
            print(f"haltproof: {option} {value}: not used, the check did not finish", file=sys.stderr)
    text, _ = _reports(args, data, None, written_files(args))
    write_stdout(text)
    return int(data["exit_code"])


def _stopped_at(run: dict[str, Any], how: supervise.Ending) -> None:
    """The run a supervised check was at when its process ended: why, and for a finding about
    the code, `bound_code` violated (its trace is not known: the process that had it is gone)."""
    run["stop_reason"] = how.reason
    for p in run["properties"]:
        p["message"] = f"not decided: {how.reason}"
    if not how.finding:
        return
    run["stopped_by"] = "call_timeout" if how.kind == "stuck" else parallel.LOST
    bound = next((p for p in run["properties"] if p["name"] == "bound_code"), None)
    if bound is None:
        bound = {"name": "bound_code", "kind": "builtin", "trace": None}
        run["properties"].insert(0, bound)
    bound.update(status="violated", message=how.reason)
    run["result"] = "violated"


def _reports(args: argparse.Namespace, data: dict[str, Any], runs: list[RunResult] | None,
             where: dict[str, str | None]) -> tuple[str, dict[str, Any]]:
    """The stdout text; writes the report files and the GitHub job summary. Without `runs`
    (a check that did not finish) the HTML report has no state graphs and traces stay JSON."""
    shown = {"json": report.cleaned(itf.report_with_itf_traces(data, [r._spec for r in runs]))} \
        if args.trace_format == "itf" and runs is not None else {}
    text = render_text(data, verbose=args.verbose, quiet=args.quiet) if args.format == "text" \
        else _render(args.format, shown.get(args.format, data), runs)
    for name in FILE_FORMATS:
        target, path = getattr(args, f"{name}_file"), where[name]
        if target and path:
            try:
                Path(path).write_text(_render(name, shown.get(name, data), runs), encoding="utf-8")
            except OSError as exc:
                raise UsageError(f"--{name} {target}: cannot write the report: {exc.strerror}") from None
    if args.format == "github":     # the job summary, when GitHub Actions gives a file for it
        from haltproof.reports.github import append_step_summary
        summary = where["summary"]
        try:
            append_step_summary(data, {"GITHUB_STEP_SUMMARY": summary} if summary else {})
        except OSError as exc:
            raise UsageError(f"GITHUB_STEP_SUMMARY={os.environ.get('GITHUB_STEP_SUMMARY')}: cannot "
                             f"append the summary: {exc.strerror}") from None
    return text, data


def _render(name: str, data: dict[str, Any], runs: list[RunResult] | None) -> str:
    """One format's text. HTML also draws the explored graph of each small run, which the
    check kept on its RunResult (the report dict does not hold graphs)."""
    if name == "html":
        from haltproof.reports.html import render_html, state_graphs
        return render_html(data, state_graphs(runs, data) if runs is not None else None)
    return FORMATS[name](data)


def _baseline(args: argparse.Namespace, recorded: dict[str, dict[str, Any]] | None,
              runs: list[RunResult], where: dict[str, str | None]) -> list[str]:
    """Write (or with --update-baseline rewrite) the baseline, or compare with it: the figures
    that moved."""
    path = where["baseline"]
    if not args.baseline or path is None:
        return []
    try:
        if recorded is None or args.update_baseline:
            baseline.save(path, runs)
            print(f"haltproof: baseline {'written' if recorded is None else 'updated'}: "
                  f"{args.baseline} ({len(runs)} runs)", file=sys.stderr)
            return []
        return baseline.compare(recorded, runs)
    except baseline.BaselineError as exc:
        raise UsageError(str(exc)) from None


def _emit_tests(directory: str, path: str | None, runs: list[RunResult]) -> None:
    from haltproof.explorer.regress import emit_tests
    try:
        written = emit_tests(runs, path or directory)
    except OSError as exc:
        raise UsageError(f"--emit-tests {directory}: cannot write the tests: {exc.strerror}") from None
    print(f"haltproof: wrote {len(written)} regression test{'s' if len(written) != 1 else ''} "
          f"to {directory}", file=sys.stderr)
