"""`haltproof mcp`: a Model Context Protocol server over stdio, for coding agents (docs/how-to/mcp.md).

Built on the official MCP Python SDK (`pip install 'haltproof[mcp]'`). Its tools validate a
spec, check it within a budget, explain a counterexample step by step, replay a trace, list
the out-of-the-box properties of a framework target, and init or lint one.

Every tool that touches the user's code runs haltproof in a fresh process, the same command
line a user types (`python -m haltproof check SPEC --format json --timeout T --max-states N`,
`replay`, `init`, `lint`; validating and listing properties run this module's worker, which
loads the spec as `check` does): the server never imports the user's modules, so an agent that
edits its code and checks again gets its new code, never a stale import, and a crash, a hang
or a `sys.exit` in that code cannot take the server down. Each process is bounded by the
tool's time budget (the CLI's `--timeout`, and a kill a little after it).

A bad argument (a file that does not exist, a budget of 0, a spec that does not parse for
`check`) is a tool error with the CLI's message (`is_error: true`); an undecided check (a
budget hit) says "undecided" and proves nothing, never a guess.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from haltproof.machine import text as T
from haltproof.properties.kinds import BUILTIN_TEXT, KIND_TEXT

from haltproof.cli.usage import UsageError
from haltproof.reports import report
from haltproof.reports.text import render_text

GRACE = 30.0            # seconds a process may take past its --timeout (start-up, writing its report)
DEFAULT_TIMEOUT = 60.0  # the budget of tools that only load things (validate, properties, init, lint, replay)
INSTRUCTIONS = (
    "haltproof proves that an AI agent's run loop stops: validate and check YAML specs or framework declarations "
    "(framework: langgraph | openai_agents | pydantic_ai), explain and replay counterexamples, and write a starter "
    "declaration (init) or lint a LangGraph graph, an OpenAI Agents Agent, a Pydantic AI Agent or a Google ADK agent "
    "by module:attr. "
    "Paths are relative to the server's working directory. A check needs a time and state budget; an "
    "'undecided' answer proves nothing: raise the budget.")


def add_parser(sub: Any) -> None:
    """The `mcp` subcommand (`sub`: argparse's subparsers action)."""
    sub.add_parser("mcp", help="serve haltproof's tools to coding agents: a Model Context Protocol server over stdio")


def cmd_mcp(args: argparse.Namespace) -> int:
    """Serve until the client closes stdin."""
    try:
        from mcp.server.mcpserver import MCPServer
    except ImportError:
        raise UsageError("haltproof mcp needs the MCP Python SDK: pip install 'haltproof[mcp]'") from None
    server: Any = MCPServer("haltproof", version=report.version(), instructions=INSTRUCTIONS, log_level="WARNING")
    for tool in TOOLS:
        server.add_tool(tool)
    server.run("stdio")
    return report.EXIT_OK


# ---------------------------------------------------------------- running haltproof in a fresh process

def _error(message: str) -> Exception:
    """A tool error, as the SDK shows one: the message, `is_error: true`."""
    from mcp.server.mcpserver.exceptions import ToolError
    return ToolError(message)


def _run(args: list[str], timeout: float, module: str = "haltproof") -> subprocess.CompletedProcess[str]:
    """`python -m MODULE ARGS` in the server's working directory, its stdin closed (the server's is the
    protocol's), killed GRACE seconds past `timeout`."""
    try:
        return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=timeout + GRACE, check=False)
    except subprocess.TimeoutExpired:
        raise _error(f"undecided: haltproof did not finish within {timeout + GRACE:g} s and was stopped; "
                     "nothing is proved") from None


def _message(ran: subprocess.CompletedProcess[str]) -> str:
    """What the command said went wrong (its error lines), for a tool error."""
    text = ran.stderr.strip() or ran.stdout.strip()
    if ran.returncode == report.EXIT_INTERNAL:
        return "haltproof internal error (a bug in haltproof, please report it):\n" + text[-4000:]
    return text[-4000:] or f"haltproof exited {ran.returncode}"


def _budget(timeout_seconds: float, what: str = "timeout_seconds") -> float:
    if not isinstance(timeout_seconds, (int, float)) or isinstance(timeout_seconds, bool) or \
            not math.isfinite(timeout_seconds) or timeout_seconds <= 0:
        raise _error(f"{what} must be a number of seconds above 0, not {timeout_seconds!r}")
    return float(timeout_seconds)


def _existing(path: str, what: str) -> str:
    if not isinstance(path, str) or not path.strip():
        raise _error(f"{what} must be a path")
    if not Path(path).exists():
        raise _error(f"{what} {path}: no such file (paths are relative to {os.getcwd()})")
    return path


def _pins(params: dict[str, Any] | None) -> list[str]:
    """`params` as `-p NAME=VALUE` options (a list of values sweeps them)."""
    out: list[str] = []
    for name, value in (params or {}).items():
        for one in value if isinstance(value, list) else [value]:
            if isinstance(one, bool) or not isinstance(one, (int, str)):
                raise _error(f"params: {name} must be an int or a string (or a list of them), not {one!r}")
            out += ["-p", f"{name}={one}"]
    return out


def _reports_dir() -> Path:
    folder = Path(tempfile.gettempdir()) / f"haltproof-mcp-{os.getpid()}"
    folder.mkdir(exist_ok=True)
    return folder


# ---------------------------------------------------------------- the tools

def validate(spec: str, timeout_seconds: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
    """Validate a haltproof spec or framework declaration (YAML) without exploring it: every problem with its
    file:line, or what the spec declares (machine, params, properties, actions). The spec's bound code is
    imported as `haltproof check` imports it."""
    _existing(spec, "spec")
    ran = _run(["validate", spec, str(_budget(timeout_seconds))], _budget(timeout_seconds), module=__name__)
    if ran.returncode != 0:
        raise _error(_message(ran))
    answer: dict[str, Any] = json.loads(ran.stdout)
    return answer


def check(spec: str, timeout_seconds: float, max_states: int, params: dict[str, Any] | None = None,
          properties: list[str] | None = None) -> dict[str, Any]:
    """Check a spec or declaration exhaustively, exactly as `haltproof check` does, within a budget: at most
    timeout_seconds of wall-clock time and max_states states per run. result is proved, violated or
    undecided (a budget ran out: nothing is proved). params pins params (NAME: value or list of values);
    properties checks only those. report_file is the JSON report, for explain and replay."""
    _existing(spec, "spec")
    timeout = _budget(timeout_seconds)
    if isinstance(max_states, bool) or not isinstance(max_states, int) or max_states < 1:
        raise _error(f"max_states must be a whole number of states above 0, not {max_states!r}")
    names = [a for p in properties or [] for a in ("--property", p)]
    ran = _run(["check", spec, "--format", "json", "-j", "1", "--timeout", str(timeout),
                "--max-states", str(max_states), *_pins(params), *names], timeout)
    if ran.returncode not in (report.EXIT_OK, report.EXIT_VIOLATED, report.EXIT_INCOMPLETE) or \
            not ran.stdout.strip().startswith("{"):
        raise _error(_message(ran))
    data = json.loads(ran.stdout)
    fd, name = tempfile.mkstemp(prefix="check-", suffix=".json", dir=_reports_dir())
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(ran.stdout)
    path = Path(name)
    result = {"proved": "proved", "violated": "violated"}.get(data["result"], "undecided")
    answer = {"proved": "every property holds in every run, each explored completely",
              "violated": "a property is violated (see violations; explain gives the counterexample step by step)",
              "undecided": "undecided: a budget ran out before every state was explored, so nothing is proved and "
                           "nothing refuted beyond the violations listed; raise timeout_seconds or max_states"}[result]
    return {"result": result, "exit_code": ran.returncode, "answer": answer, "report_file": str(path),
            "violations": _violations(data), "summary": render_text(data)}


def _violations(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"spec": run["spec"], "params": run["params"], "property": p["name"], "message": p.get("message", ""),
             "steps": len(p["trace"]["steps"]) - 1 if p.get("trace") else None}
            for run in data["runs"] for p in run["properties"] if p["status"] == "violated"]


def explain(report_file: str, property: str, params: dict[str, Any] | None = None) -> str:
    """Explain a counterexample step by step: the violated property (by name) in a JSON report (the check tool's
    report_file, or `haltproof check --json FILE`), in the run with these params (default: its first
    violation): each step's action, choices, decide rule and the variables it changed."""
    _existing(report_file, "report_file")
    try:
        data = json.loads(Path(report_file).read_text(encoding="utf-8"))
        runs = data["runs"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise _error(f"report_file {report_file}: not a haltproof JSON report ({exc})") from None
    wanted = {k: v for k, v in (params or {}).items()}
    found = [(run, p) for run in runs for p in run["properties"]
             if p["name"] == property and all(run["params"].get(k) == v for k, v in wanted.items())]
    if not found:
        names = sorted({p["name"] for run in runs for p in run["properties"]})
        raise _error(f"no property {property!r} in {report_file}" + (f" with params {wanted}" if wanted else "")
                     + f" (its properties: {', '.join(names)})")
    broken = [(run, p) for run, p in found if p["status"] == "violated" and p.get("trace")]
    if not broken:
        status = ", ".join(sorted({p["status"] for _, p in found}))
        raise _error(f"{property} has no counterexample in {report_file}: it is {status} there"
                     + (" (undecided: the check's budget ran out)" if status == "unknown" else ""))
    run, prop = broken[0]
    return _steps(run, prop)


def _steps(run: dict[str, Any], prop: dict[str, Any]) -> str:
    trace = prop["trace"]
    lines = [f"{prop['name']} ({prop['kind']}) is violated in {run['machine']} "
             f"({T.assignments_text(run['params']) or 'no params'}): {prop.get('message', '')}",
             ("a lasso: the steps from " + str(trace.get("loop_start")) + " on repeat forever")
             if trace.get("kind") == "lasso" else f"the shortest run that breaks it: {_count(len(trace['steps']) - 1)}"]
    for n, step in enumerate(trace["steps"]):
        if n == 0:
            lines.append(f"step 0: the initial state: {T.assignments_text(step['state'])}")
            continue
        head = f"step {n}: {step['action']}"
        choices = T.assignments_text(step.get("choices") or {})
        if choices:
            head += f", choosing {choices}"
        if step.get("rule"):
            head += f", rule {step['rule']}"
        mark = T.loop_mark(trace, n)
        lines.append(f"{head}: {T.changes(trace['steps'], n)}" + (f" ({mark})" if mark else ""))
    return "\n".join(lines) + "\n"


def _count(n: int) -> str:
    return f"{n} step" if n == 1 else f"{n} steps"


def replay(spec: str, trace_file: str, property: str | None = None, params: dict[str, Any] | None = None,
           timeout_seconds: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
    """Replay a saved trace on the spec's bound code (or its model), step by step, as `haltproof replay SPEC
    --trace FILE` does: trace_file is a JSON report (name the property whose trace to replay) or a trace.
    ok says whether the code took the same steps to the same states."""
    _existing(spec, "spec")
    _existing(trace_file, "trace_file")
    timeout = _budget(timeout_seconds)
    extra = ["--property", property] if property else []
    ran = _run(["replay", spec, "--trace", trace_file, *extra, *_pins(params), "--timeout", str(timeout)], timeout)
    if ran.returncode not in (report.EXIT_OK, report.EXIT_VIOLATED):
        raise _error(_message(ran))
    return {"ok": ran.returncode == report.EXIT_OK, "exit_code": ran.returncode, "steps": ran.stdout}


def properties(target: str, timeout_seconds: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
    """The out-of-the-box properties haltproof checks on a framework target (module:attr of a LangGraph graph or
    function building one, an OpenAI Agents Agent, a Pydantic AI Agent, a Google ADK agent): each with its kind and
    what it answers."""
    timeout = _budget(timeout_seconds)
    ran = _run(["properties", target, str(timeout)], timeout, module=__name__)
    if ran.returncode != 0:
        raise _error(_message(ran))
    return {"target": target, "properties": json.loads(ran.stdout)}


def init(target: str, output: str, force: bool = False, timeout_seconds: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
    """Write a starter declaration for a framework target (module:attr) to output, as `haltproof init` does: its
    ASK comments say what to fill in; check accepts it as written. An existing file is kept unless force."""
    timeout = _budget(timeout_seconds)
    ran = _run(["init", target, "-o", output, *(["--force"] if force else []), "--timeout", str(timeout)], timeout)
    if ran.returncode != report.EXIT_OK:
        raise _error(_message(ran))
    return {"written": output, "declaration": Path(output).read_text(encoding="utf-8")}


def lint(target: str, timeout_seconds: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
    """Lint a framework target (module:attr) structurally, as `haltproof lint` does: cycles without an exit,
    unreachable nodes, unknown routes, limits left at a default; each finding with file:line and the check that
    would prove or refute it. No exploration."""
    timeout = _budget(timeout_seconds)
    ran = _run(["lint", target, "--format", "json", "--timeout", str(timeout)], timeout)
    if ran.returncode not in (report.EXIT_OK, report.EXIT_VIOLATED):
        raise _error(_message(ran))
    answer: dict[str, Any] = json.loads(ran.stdout)
    return answer


TOOLS = [validate, check, explain, replay, properties, init, lint]


# ---------------------------------------------------------------- the worker (a fresh process per call)

def _worker(argv: list[str]) -> int:
    """`python -m haltproof.cli.mcp validate SPEC SECONDS | properties TARGET SECONDS`: JSON on stdout, exit 0;
    a problem on stderr, exit 2 (3: the time ran out while loading the user's code)."""
    import haltproof.frameworks  # noqa: F401  (registers the framework declarations)
    from haltproof.machine import usercode
    from haltproof.machine.errors import SpecError
    from haltproof.machine.usercode import OutOfTime
    command, arg, seconds = argv
    try:
        with usercode.deadline(float(seconds)):
            out = _validated(arg) if command == "validate" else _builtin_properties(arg)
    except SpecError as exc:
        if command == "validate":
            out = {"valid": False, "problems": [{"file": p.file, "line": p.line, "message": p.message,
                                                 "text": p.text} for p in exc.problems]}
        else:
            print("\n".join(f"error: {p}" for p in exc.problems), file=sys.stderr)
            return report.EXIT_USAGE
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return report.EXIT_USAGE
    except OutOfTime as stop:
        print(f"undecided: the time ran out while {stop.doing or 'loading the user code'}", file=sys.stderr)
        return report.EXIT_INCOMPLETE
    print(json.dumps(out, default=str))
    return report.EXIT_OK


def _validated(path: str) -> dict[str, Any]:
    from haltproof.machine.spec import load_spec
    spec = load_spec(path)
    return {"valid": True, "machine": spec.name, "framework": spec.framework, "bind": spec.bind,
            "params": {p.name: list(p.values) for p in spec.params},
            "vars": [v.name for v in spec.vars], "actions": [a.name for a in spec.actions],
            "properties": [{"name": p.name, "kind": p.kind, "line": p.line} for p in spec.properties],
            "builtins": list(spec.builtins)}


def _builtin_properties(target: str) -> list[dict[str, Any]]:
    """The properties a starter declaration of `target` gets without writing any: the framework's and haltproof's."""
    from haltproof.frameworks.introspect import TargetError, load, reader
    from haltproof.machine.spec import load_spec
    try:
        obj = load(target)
        text = reader(obj, target).starter(obj, target)
    except TargetError as exc:
        raise UsageError(str(exc)) from None
    fd, temp = tempfile.mkstemp(prefix="properties-", suffix=".yaml")     # its target is imported from here (cwd)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        spec = load_spec(temp)
    finally:
        os.unlink(temp)
    out = [{"name": p.name, "kind": p.kind, "description": p.description or KIND_TEXT.get(p.kind, "")}
           for p in spec.properties]
    return out + [{"name": name, "kind": "builtin", "description": BUILTIN_TEXT.get(name, "")}
                  for name in spec.builtins]


if __name__ == "__main__":
    raise SystemExit(_worker(sys.argv[1:]))
