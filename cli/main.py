"""The `haltproof` command line: the parser, the dispatch to one module per subcommand
(check, conform, replay, graph, export, guard, traces, init, lint, mcp), and the exit code.

Exit codes (a contract): 0 proved, 1 violated, 2 usage error or invalid spec,
3 incomplete, 4 internal error. Reports go to stdout or files, progress to stderr.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

from haltproof.machine import usercode
from haltproof.machine.errors import SpecError
from haltproof.machine.spec import shown_path
from haltproof.machine.text import shortened
from haltproof.machine.usercode import OutOfTime, Stuck

from haltproof.cli.usage import UsageError
from haltproof.reports import report

from . import check, conform, export, graph, guard, init, lint, mcp, replay, supervise, traces
from .common import Parser, collect_specs, drop_output, write_stdout

Command = Callable[[argparse.Namespace], int]
Command0 = Callable[[], int]


def build_parser() -> argparse.ArgumentParser:
    ap = Parser(prog="haltproof", description="Prove that an agent run loop stops, and stops honestly.")
    ap.add_argument("--version", action="version", version=f"haltproof {report.version()}")
    sub = ap.add_subparsers(dest="command", required=True, parser_class=Parser)
    for module in (check, conform, replay, graph, export, guard, traces, init, lint, mcp):
        module.add_parser(sub)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:       # argparse's: --help, --version, a usage error
        code = exc.code if isinstance(exc.code, int) else report.EXIT_USAGE
    else:
        code = _guarded(lambda: _dispatch(args))
    if argv is None:
        sys.exit(code)
    return code


def _guarded(command: Command0) -> int:
    """`command()`'s exit code, every error turned into its message on stderr and its exit code."""
    try:
        return command()
    except (SpecError, UsageError) as exc:
        print(_error_text(exc), file=sys.stderr)
        return report.EXIT_USAGE
    except Stuck as stop:           # while loading the user's code, before any result
        print(f"haltproof: incomplete: {stop.text()}", file=sys.stderr)
        return report.EXIT_INCOMPLETE
    except OutOfTime as stop:       # while loading the user's code, before any result
        print(f"haltproof: incomplete: --timeout reached while {stop.doing or 'running the user code'}",
              file=sys.stderr)
        return report.EXIT_INCOMPLETE
    except SystemExit as exc:       # the user's code called sys.exit() where no call of it is watched:
        print(f"haltproof: incomplete: the user's code raised SystemExit({exc.code!r}) (sys.exit), which "    # never
              "does not end a check; the command stopped there", file=sys.stderr)     # its exit status
        return report.EXIT_INCOMPLETE
    except KeyboardInterrupt:
        print("haltproof: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:      # a progress line's reader went away mid-command (the output itself: write_stdout)
        drop_output(sys.stdout, sys.stderr)
        return report.EXIT_INCOMPLETE       # nothing was decided: never the 0 of a passed gate
    except Exception:   # a bug in haltproof, not in the user's input
        print("haltproof: internal error (a bug in haltproof, not in your spec). Please file it with "
              "the spec and this traceback:", file=sys.stderr)
        traceback.print_exc()
        return report.EXIT_INTERNAL


def _error_text(exc: Exception) -> str:
    """Each problem on its line, cut as reports cut a text: an import error of the user's code
    may carry megabytes."""
    if isinstance(exc, SpecError):
        return "\n".join(shortened(f"error: {shown_path(p.file)}" + str(p)[len(p.file):]) for p in exc.problems)
    return shortened(f"error: {exc}")


COMMANDS: dict[str, Command] = {"check": check.cmd_check, "conform": conform.cmd_conform,
                                "replay": replay.cmd_replay, "export": export.cmd_export,
                                "guard": guard.cmd_guard, "traces": traces.cmd_traces,
                                "init": init.cmd_init, "lint": lint.cmd_lint}


def _dispatch(args: argparse.Namespace) -> int:
    """Run the subcommand: supervised (cli/supervise.py) when its specs run the user's code (mcp
    runs each tool call in a fresh process of its own)."""
    if args.command == "mcp" or not supervise.wanted(_specs_of(args)):
        return _run(args)
    partial = supervise.Partial() if args.command == "check" else None

    def ended(how: supervise.Ending) -> int:
        if partial is not None and partial.planned:
            return check.stopped_report(args, partial, how)
        return report.EXIT_VIOLATED if how.finding else report.EXIT_INCOMPLETE
    return supervise.supervised(lambda: _guarded(lambda: _run(args)), timeout=args.timeout,
                                call_timeout=args.call_timeout, partial=partial, ended=ended, write=write_stdout)


def _specs_of(args: argparse.Namespace) -> list[Path | str]:
    """The specs a subcommand reads, or the object `init` and `lint` import (`module:attr`);
    none when they cannot be found: that error is reported by the command itself."""
    if args.command in ("init", "lint"):
        return [args.target]
    if args.command != "check":
        return [args.spec]
    try:
        return collect_specs(args.specs)
    except UsageError:
        return []


def _run(args: argparse.Namespace) -> int:
    if args.command == "graph":       # its own deadline: a graph is of the whole space, or none
        return graph.cmd_graph(args)
    if args.command == "mcp":         # a server: each tool call has its own budget
        return mcp.cmd_mcp(args)
    with usercode.deadline(args.timeout, args.call_timeout):     # one wall-clock bound on the whole command
        return COMMANDS[args.command](args)


if __name__ == "__main__":
    # `python -m haltproof.cli.main` runs this file as __main__, a second copy of the module: run the
    # imported `haltproof.cli.main`, exactly as the `haltproof` script does.
    from haltproof.cli.main import main as script_main
    script_main()
