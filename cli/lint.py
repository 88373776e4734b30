"""`haltproof lint TARGET`: a zero-config structural pass over a framework object (docs/how-to/lint.md).

No exploration and no declaration: the object's shape is read by introspection
(frameworks/introspect.py and the framework's module) and judged by the framework-neutral
rules there. Exit codes as `check`: 0 no finding, 1 findings, 2 bad input (3: --timeout hit
while importing or reading the target).
"""

from __future__ import annotations

import argparse
from typing import Any

from haltproof.frameworks.introspect import RULES, TargetError, findings, load, reader
from haltproof.cli.usage import UsageError
from haltproof.reports import lint as lint_reports

from .common import timeout_option, write_stdout


def add_parser(sub: Any) -> None:
    """The `lint` subcommand and its options (`sub`: argparse's subparsers action)."""
    p = sub.add_parser("lint", help="a structural pass over a framework object: no exploration, no declaration")
    p.add_argument("target", metavar="TARGET",
                   help="module:attr of a LangGraph graph (or a function building one), an OpenAI Agents "
                        "Agent, a Pydantic AI Agent or a Google ADK agent, importable from the working directory")
    p.add_argument("--format", choices=list(lint_reports.FORMATS), default="text",
                   help="what goes to stdout (default text)")
    timeout_option(p, "importing and reading the target")


def lint(target: str) -> dict[str, Any]:
    """The lint report of `target` (reports/lint.py's dict); TargetError when it cannot be read."""
    obj = load(target)
    module = reader(obj, target)
    found = findings(module.shape(obj, target))
    return lint_reports.lint_report(target, module.FRAMEWORK, RULES, [f.to_json() for f in found])


def cmd_lint(args: argparse.Namespace) -> int:
    try:
        data = lint(args.target)
    except TargetError as exc:
        raise UsageError(str(exc)) from None
    write_stdout(lint_reports.FORMATS[args.format](data))
    code: int = data["exit_code"]
    return code
