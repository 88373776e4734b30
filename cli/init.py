"""`haltproof init TARGET`: a starter declaration file for a framework object (docs/how-to/init.md).

The file is written only once `haltproof check` would accept it: it is loaded as check loads
it (the framework's declaration is expanded, the target imported and started), from a
temporary file beside the output, and moved into place when that succeeds. An existing file
is never overwritten without `--force`.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from haltproof.machine.errors import SpecError
from haltproof.machine.spec import load_spec, shown_path

from haltproof.frameworks.introspect import TargetError, load, reader, stem
from haltproof.cli.usage import UsageError
from haltproof.reports import report

from .common import timeout_option


def add_parser(sub: Any) -> None:
    """The `init` subcommand and its options (`sub`: argparse's subparsers action)."""
    p = sub.add_parser("init", help="write a starter declaration for a framework object (module:attr)")
    p.add_argument("target", metavar="TARGET",
                   help="module:attr of a LangGraph graph (or a function building one), an OpenAI Agents "
                        "Agent, a Pydantic AI Agent or a Google ADK agent, importable from the working directory")
    p.add_argument("-o", "--output", metavar="FILE", help="where to write it (default: ATTR.yaml here)")
    p.add_argument("--force", action="store_true", help="overwrite FILE when it exists")
    timeout_option(p, "importing and reading the target")


def cmd_init(args: argparse.Namespace) -> int:
    """Read the target, write its starter declaration, check that `haltproof check` accepts it."""
    out = Path(args.output if args.output is not None else f"{stem(args.target)}.yaml")
    _writable(out, args.force)
    try:
        obj = load(args.target)
        text = reader(obj, args.target).starter(obj, args.target)
    except TargetError as exc:
        raise UsageError(str(exc)) from None
    _write_checked(out, text, args.target)
    print(f"haltproof: wrote {shown_path(str(out))}: read its ASK comments, then run "
          f"`haltproof check {shown_path(str(out))}`", file=sys.stderr)
    return report.EXIT_OK


def _writable(out: Path, force: bool) -> None:
    """The output can be written: its folder exists, and it is no file already (unless --force)."""
    if not str(out).strip() or out.name in ("", ".", ".."):
        raise UsageError("-o needs a file name")
    if out.is_dir():
        raise UsageError(f"{out}: is a directory; give -o a file name")
    if out.exists() and not force:
        raise UsageError(f"{out}: already exists; init never overwrites a file: give --force, or another -o FILE")
    folder = out.parent if str(out.parent) else Path(".")
    if not folder.is_dir():
        raise UsageError(f"{out}: no such directory: {folder}")
    if not os.access(folder, os.W_OK):
        raise UsageError(f"{out}: cannot write in {folder}: permission denied")


def _write_checked(out: Path, text: str, target: str) -> None:
    """Write `text` to `out` once the spec loader accepts it (from a temporary file beside it)."""
    fd, temp = tempfile.mkstemp(prefix=".haltproof-init-", suffix=".yaml", dir=out.parent if str(out.parent) else ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        try:
            load_spec(temp)
        except SpecError as exc:
            problems = "\n".join(f"  {p.message}" + (f": {p.text!r}" if p.text else "") for p in exc.problems)
            raise UsageError(f"{target}: haltproof check would refuse the starter declaration init wrote "
                             f"for it, so nothing was written:\n{problems}") from None
        os.replace(temp, out)
    finally:
        if os.path.exists(temp):
            os.unlink(temp)
