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

from haltproof.machine import usercode
from haltproof.machine.errors import SpecError
from haltproof.machine.spec import shown_path
from haltproof.machine.text import shortened
from haltproof.machine.usercode import OutOfTime

from haltproof.cli.usage import UsageError
from haltproof.reports import report

from . import check, conform, export, graph, guard, init, lint, mcp, replay, traces
from .common import Parser, drop_output

Command = Callable[[argparse.Namespace], int]


def build_parser() -> argparse.ArgumentParser:
    ap = Parser(prog="haltproof", description="Prove that an agent run loop stops, and stops honestly.")
    ap.add_argument("--version", action="version", version=f"haltproof {report.version()}")
    sub = ap.add_subparsers(dest="command", required=True, parser_class=Parser)
    for module in (check, conform, replay, graph, export, guard, traces, init, lint, mcp):
        module.add_parser(sub)
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
    except BrokenPipeError:      # a progress line's reader went away mid-command (the output itself: write_stdout)
        drop_output(sys.stdout, sys.stderr)
        code = report.EXIT_INCOMPLETE       # nothing was decided: never the 0 of a passed gate
    except Exception:   # a bug in haltproof, not in the user's input
        print("haltproof: internal error (a bug in haltproof, not in your spec). Please file it with "
              "the spec and this traceback:", file=sys.stderr)
        traceback.print_exc()
        code = report.EXIT_INTERNAL
    if argv is None:
        sys.exit(code)
    return code


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


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "graph":       # its own deadline: a graph is of the whole space, or none
        return graph.cmd_graph(args)
    if args.command == "mcp":         # a server: each tool call has its own budget
        return mcp.cmd_mcp(args)
    with usercode.deadline(args.timeout):     # one wall-clock bound on the whole command
        return COMMANDS[args.command](args)


if __name__ == "__main__":
    # `python -m haltproof.cli.main` runs this file as __main__, a second copy of the module: run the
    # imported `haltproof.cli.main`, exactly as the `haltproof` script does.
    from haltproof.cli.main import main as script_main
    script_main()
