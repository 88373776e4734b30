"""Pydantic AI's shape, read from an `Agent`: for `haltproof init` and `haltproof lint`
(frameworks/introspect.py has the contract).

A Pydantic AI run is the same small graph for every agent: a model request, then the calls
that answer asked for (back to a request) or the final output (the end), each the model's
decision. The agent's tools are Pydantic AI's own, read as the declaration reads them (its
first model request, frameworks/pydantic_ai.py's `tools_of`). From the source (`ast`): the calls
that run the agent (`run`, `run_sync`, `run_stream`, `iter`) in the target's module, with their
`usage_limits` (a `UsageLimits(...)` call, or a module-level `UsageLimits` object by name).
"""

from __future__ import annotations

import ast
from typing import Any

from haltproof.machine.errors import SpecError

from .introspect import (Doc, Edge, Limit, Shape, Site, TargetError, calls_in_module, header, keyword, label,
                         literal_limit, placeholder, run_object, site_of, target_module)
from .pydantic_ai import DEFAULT_REQUEST_LIMIT, AgentTools, require_pydantic_ai, tools_of

FRAMEWORK = "pydantic_ai"
START, END = "__start__", "end"
RUNS = {"run", "run_sync", "run_stream", "run_stream_events", "iter"}
PROMPT = "ASK: a request your app really gets"
ASKS = [
    "prompt: the user prompt a run is started with.",
    "what the model may answer: init lists a text answer, a call of each of the agent's tools and its "
    "structured output; keep the ones your model can really give, and make the tools' arguments ones your "
    "tools accept.",
    "what each tool may do: ok runs your real tool, retry is it asking the model to retry (ModelRetry); add "
    "{raises: CLASS, message: TEXT} for a failure, {returns: VALUE} to return without running it.",
    "limits: the UsageLimits your app passes (haltproof cannot see them); the sweep below is small so "
    "that the first check is quick. Pydantic AI's default is request_limit 50 and no tool_calls_limit.",
    "properties: what your app must do, beyond the out-of-the-box ones (docs/how-to/frameworks.md).",
]


def claims(obj: Any) -> bool:
    if type(obj).__module__.split(".")[0] != "pydantic_ai":
        return False
    from pydantic_ai.agent import AbstractAgent
    return isinstance(obj, AbstractAgent)


def require() -> str:
    return require_pydantic_ai()


def _tools(obj: Any, ref: str) -> AgentTools:
    try:
        return tools_of(obj, PROMPT, ref, ref, 0)
    except SpecError as exc:
        raise TargetError(f"{ref}: {exc.problems[0].message}") from None


def shape(obj: Any, ref: str) -> Shape:
    """Pydantic AI's run graph for this agent, and the request_limit the code shows."""
    module = target_module(ref)
    site = _agent_site(obj, module)
    s = Shape(FRAMEWORK, ref, "node", START, END, {"model_request": site, "call_tools": site},
              limit_error="request_limit_error")
    tools = _tools(obj, ref)
    s.edges += [Edge(START, "model_request", "always", site, "Pydantic AI's run graph"),
                Edge("model_request", "call_tools", "always", site, "Pydantic AI's run graph"),
                Edge("call_tools", END, "model", site, "the model's answer: a final output ends the run"),
                Edge("call_tools", "model_request", "model", site,
                     "the model's answer: " + ("a tool call, or " if tools.function else "")
                     + "an answer the output does not accept, asks the model again")]
    s.limits = _limits(module, obj)
    return s


def _agent_site(obj: Any, module: Any) -> Site | None:
    """The line of the `Agent(...)` call the module's global is assigned from."""
    from .introspect import module_ast
    parsed = module_ast(module) if module else None
    if parsed is None:
        return None
    tree, file = parsed
    names = {k for k, v in vars(module).items() if v is obj}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in names for t in node.targets):
            return Site(file, node.lineno)
    return site_of(module)


def _limits(module: Any, obj: Any) -> list[Limit]:
    """request_limit at each call running the agent in its module."""
    if module is None:
        return []
    names = {k for k, v in vars(module).items() if v is obj}
    out: list[Limit] = []
    for call, file in calls_in_module(module, RUNS):
        if not (isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name)
                and call.func.value.id in names):
            continue
        site = Site(file, call.lineno)
        how = f"the call {call.func.value.id}.{call.func.attr}(...) (ast)"
        given, value = keyword(call, "usage_limits")
        if not given or (isinstance(value, ast.Constant) and value.value is None):
            out.append(Limit("request_limit", DEFAULT_REQUEST_LIMIT, True, site, how + ": no usage_limits"))
        elif isinstance(value, ast.Call):
            passed, limit = keyword(value, "request_limit")
            if not passed:
                out.append(Limit("request_limit", DEFAULT_REQUEST_LIMIT, True, site, how + ": UsageLimits(...)"))
            else:
                known, number = literal_limit(limit)
                if known:
                    out.append(Limit("request_limit", number, False, site, how + ": UsageLimits(...)"))
        elif isinstance(value, ast.Name) and value.id in vars(module):
            limits = vars(module)[value.id]
            if hasattr(limits, "request_limit"):
                out.append(Limit("request_limit", limits.request_limit, False, site,
                                 f"{how}: the module's {value.id}.request_limit"))
    return out


# ---------------------------------------------------------------- init

def starter(obj: Any, ref: str) -> str:
    """A starter `framework: pydantic_ai` declaration for the agent (docs/how-to/init.md)."""
    tools = _tools(obj, ref)
    doc = Doc()
    header(doc, ref, "Pydantic AI", ASKS)
    doc.key("framework", FRAMEWORK)
    doc.key("target", ref)
    doc.blank()
    doc.comment("ASK: the user prompt, as you pass it to agent.run.")
    doc.key("prompt", PROMPT)
    run_object(doc, "deps", obj.deps_type, "the deps your tools read (ctx.deps)")
    doc.blank()
    doc.comment("What the model may answer (the choice model). ASK: keep the answers your model can really give.")
    doc.key("models", block=True)
    taken: set[str] = set()
    text = "a text answer: " + ("the run ends with it" if not tools.output else
                                "no output, so Pydantic AI asks the model again (an output retry)")
    doc.key(label("answer", taken), "ASK: an answer your model gives", 2, note=text)
    for name in tools.function:
        args = placeholder(tools.schemas.get(name, {}))
        doc.key(label(f"call_{name}", taken), {"tool_calls": [{"name": name, "args": args if isinstance(args, dict)
                                                                 else {}}]}, 2, note=f"a call of the tool {name}")
    if len(tools.output) == 1:
        out = placeholder(tools.schemas.get(tools.output[0], {}))
        doc.key(label("output", taken), {"output": out if isinstance(out, dict) else {}}, 2,
                note="the structured output: the run ends with it when it validates")
    if tools.function:
        doc.blank()
        doc.comment("What each tool may do when it is called (the choice named after the tool). ASK: keep what "
                    "your tool can really do.")
        doc.key("tools", block=True)
        for name in tools.function:
            doc.key(name, indent=2, block=True)
            doc.key("ok", "ok", 4, note="your real tool runs")
            doc.key("retry", {"retry": "ASK: why your tool asks the model to retry"}, 4,
                    note="it raises ModelRetry: the model is asked again, within the tool's retries")
    doc.blank()
    doc.comment("ASK: your app's UsageLimits; a limit named here is a param, swept. To bound tool calls too, add "
                "tool_calls_limit: tool_calls_limit here and under params (Pydantic AI's default: none).")
    doc.key("limits", block=True)
    doc.key("request_limit", "request_limit", 2)
    doc.key("params", block=True)
    doc.key("request_limit", {"min": 2, "max": 3}, 2, note=f"Pydantic AI's default is {DEFAULT_REQUEST_LIMIT}")
    doc.blank()
    doc.comment("The out-of-the-box properties are always checked: run_ends, request_limit_error, retries_error, "
                "most_model_requests" + (", most_tool_runs, most_successful_tool_calls" if tools.function else "")
                + ". ASK: add what your app must do, over the vars next, response, requests, tool_calls, "
                "tool_runs, tool_retries, output_retries, status, e.g.:")
    doc.comment("properties:")
    doc.comment("  at_most_two_requests:")
    doc.comment("    always: requests <= 2")
    return doc.text()
