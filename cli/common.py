"""What every subcommand module shares: the argument parser class, common options, spec paths.

Kept apart from cli/main.py so that a subcommand module never imports the dispatcher (which
imports every subcommand): the cli layer's imports stay acyclic.
"""

from __future__ import annotations

import argparse
import errno
import os
import re
import sys
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any, NoReturn

from haltproof.machine.inputs import positive
from haltproof.machine.spec import Spec, symlink_problem
from haltproof.machine.text import encodable
from haltproof.machine.trust import ENV, no_code_from_env
from haltproof.machine.usercode import CALL_TIMEOUT

from haltproof.explorer.memory import parse_size
from haltproof.cli.usage import UsageError
from haltproof.reports import report


class Parser(argparse.ArgumentParser):
    """argparse exits 2 itself on a usage error; this keeps its message to the usage and one line."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        print(f"haltproof: error: {message}", file=sys.stderr)
        raise SystemExit(report.EXIT_USAGE)


def pins_option(p: argparse.ArgumentParser, help: str | None = None) -> None:
    """The repeatable `-p NAME=VALUE` option of every subcommand."""
    p.add_argument("-p", dest="pins", action="append", default=[], metavar="NAME=VALUE", help=help)


def timeout_option(p: argparse.ArgumentParser, what: str) -> None:
    """`--timeout SECONDS`, one wall-clock bound on `what`, and `--call-timeout SECONDS`, a bound
    on each call into the user's code (machine/usercode.py)."""
    p.add_argument("--timeout", type=positive(float, "--timeout"), metavar="SECONDS",
                   help=f"wall-clock bound on {what}, the bound code included; hitting it gives "
                        "incomplete (exit 3)")
    p.add_argument("--call-timeout", type=positive(float, "--call-timeout"), default=CALL_TIMEOUT,
                   metavar="SECONDS",
                   help=f"bound on each call into the bound code or model (default {CALL_TIMEOUT:g}); a call "
                        "that does not return within it is a bound_code finding, and its run stops there")


def no_code_option(p: argparse.ArgumentParser) -> None:
    """`--no-code`: import and run none of the spec's code (machine/trust.py)."""
    p.add_argument("--no-code", action="store_true",
                   help="import and run none of the spec's code (bind:, raises:, framework:, Python models): "
                        f"for specs nobody vouched for; also {ENV}=1 (docs/how-to/trust.md)")


def runs_code(args: argparse.Namespace) -> bool:
    """Whether this command may import the spec's code: not with --no-code or HALTPROOF_NO_CODE=1."""
    try:
        from_env = no_code_from_env()
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return not (args.no_code or from_env)


def size(text: str) -> int:
    """An argparse `type=` for --max-memory: a size, checked by `parse_size` (check_number)."""
    try:
        return parse_size(text, "--max-memory")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def bundled_specs() -> list[Path]:
    """The seed specs shipped with haltproof (not the mutants)."""
    root = resources.files("haltproof.specs")
    return sorted(Path(str(p)) for p in root.iterdir() if p.name.endswith((".yaml", ".yml")))


_REPORT: list[Any] = []     # where reports go instead of stdout (a supervised child's line to its supervisor)


def report_to(stream: Any) -> None:
    """Send every report written by `write_stdout` to `stream` from now on: a supervised child's
    line to its supervisor (cli/supervise.py), which writes them on its stdout."""
    _REPORT[:] = [stream]


def write_stdout(text: str) -> None:
    """Write a command's output to stdout, once. A reader that went away (`| head`) or a
    stdout closed from the start (`>&-`) loses the output, not the verdict: the command
    still exits with its own code (ruff and ripgrep exit 0 there, which would pass a violated
    check under `set -o pipefail`), quietly for the pipe, with a line on stderr for the
    closed stdout. Any other failure to write is exit 2, as for --json FILE. In a supervised
    child (cli/supervise.py) the output goes to the supervisor, which writes it here."""
    out = _REPORT[0] if _REPORT else sys.stdout
    if out is None:
        print("haltproof: stdout is closed: the report was not written", file=sys.stderr)
        return
    try:
        out.write(encodable(text))
        out.flush()
    except OSError as exc:
        drop_output(out)
        if isinstance(exc, BrokenPipeError):
            return
        if exc.errno == errno.EBADF:
            print("haltproof: stdout is closed: the report was not written", file=sys.stderr)
            return
        raise UsageError(f"cannot write the report to stdout: {exc.strerror or exc}") from None


def drop_output(*streams: Any) -> None:
    """Point the streams' file descriptors at /dev/null: what is still buffered for a reader
    that went away would otherwise fail again when Python exits, printing a traceback and
    exiting 120."""
    for out in streams:
        try:
            fd = out.fileno()
            null = os.open(os.devnull, os.O_WRONLY)
        except (OSError, ValueError, AttributeError):       # closed, or not a file (a test's capture)
            continue
        os.dup2(null, fd)
        os.close(null)


def collect_specs(args: Sequence[str]) -> list[Path | str]:
    """Spec files (directories searched for .yaml), or `module:Class` Python models."""
    if not args:
        return list(bundled_specs())
    out: list[Path | str] = []
    for a in args:
        p = Path(a)
        if not p.exists() and re.fullmatch(r"[\w.]+:[\w.]+", a):
            out.append(a)
        elif p.is_dir():
            out.extend(_specs_in(p, a))
        elif p.is_file():
            out.append(p)
        else:
            raise UsageError(f"{a}: {unusable(p) or 'not a file or a directory'}")
    return out


def _specs_in(folder: Path, given: str) -> list[Path]:
    """The .yaml specs under a directory; one that cannot be read is never skipped silently."""
    found = sorted(q for q in folder.rglob("*") if q.suffix in (".yaml", ".yml") and not q.is_dir())
    for q in found:
        why = unusable(q)
        if why:
            raise UsageError(f"{q}: {why}")
    if not found:
        raise UsageError(f"{given}: no .yaml specs in this directory")
    return found


def unusable(path: Path) -> str | None:
    """Why a path names no readable file or directory (`exists()` says False for all of these)."""
    try:
        os.stat(path)
    except OSError as exc:
        return symlink_problem(path, exc) or ("no such file or directory" if exc.errno == errno.ENOENT
                                              else exc.strerror or str(exc))
    return None


def not_one_combination(spec: Spec, spec_path: str, pins: dict[str, int | str], count: int, needs: str) -> str | None:
    """Why `count` param combinations are not the one a graph or an export needs (`needs`
    says so, e.g. "a graph shows one param combination"), naming the params to pin with an
    example; None when there is exactly one."""
    if count == 1:
        return None
    unpinned = [p for p in spec.params if p.name not in pins and p.count > 1]
    example = " ".join(f"-p {p.name}={p.values[0]}" for p in unpinned)
    return (f"{spec_path}: {needs}, and {count} are declared; "
            f"pin {', '.join(p.name for p in unpinned)} (e.g. {example})")
