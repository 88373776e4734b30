"""The OpenAI Agents SDK's shape, read from a starting `Agent`: for `haltproof init` and `haltproof
lint` (frameworks/introspect.py has the contract).

The agents are the SDK's own objects: every agent the run can reach through handoffs
(frameworks/openai_agents.py's `agents_of`), each with its function tools, its handoffs, its
`tool_use_behavior` and `model_settings`. A turn of an agent ends the run (a final answer, or a
tool the agent stops at), stays with it (tool calls) or hands off: each is the model's decision.
From the source (`ast`): the line of each `Agent(name=...)` call, agents the target's module
defines that no handoff reaches, and the `Runner.run` calls that start the run, with their
`max_turns`.
"""

from __future__ import annotations

import ast
import inspect
import typing
from typing import Any

from haltproof.machine.errors import SpecError

from .introspect import (Doc, Edge, Limit, Route, Shape, Site, TargetError, calls_in_module, header,
                         input_and_models, keyword, label, literal_limit, name_lines, placeholder, run_object, target_module)
from .openai_agents import agents_of, function_tools, is_agent, require_agents

FRAMEWORK = "openai_agents"
START, END = "__start__", "__end__"
RUNS = {"run", "run_sync", "run_streamed"}
SWEEP = 4
ASKS = [
    "input: what a run is started with (a request your app really gets).",
    "what each agent's model may answer: init lists a final answer, a call of each of the agent's function "
    "tools and each of its handoffs; keep the ones its model can really give, and make the tools' "
    "arguments ones your tools accept (tools run as written: declare an outcome under tools: for one that "
    "needs a network).",
    "max_turns: the value your app passes to Runner.run (haltproof cannot see it); the sweep below is small "
    "so that the first check is quick, the SDK's default is 10.",
    "properties: what your app must do, beyond the out-of-the-box ones (docs/how-to/frameworks.md).",
]


def claims(obj: Any) -> bool:
    return type(obj).__module__.split(".")[0] == "agents" and is_agent(obj)


def require() -> str:
    return require_agents()


def _agents(obj: Any, ref: str) -> dict[str, Any]:
    try:
        return agents_of(obj, ref, 0)
    except SpecError as exc:
        raise TargetError(f"{ref}: {exc.problems[0].message}") from None


def _handoff_names(agent: Any) -> list[str]:
    return [getattr(h, "agent_name", None) or h.name for h in agent.handoffs]


def shape(obj: Any, ref: str) -> Shape:
    """The agents, the turns that end a run, stay with an agent or hand it off, and the max_turns the code shows."""
    agents = _agents(obj, ref)
    module = target_module(ref)
    lines, file = name_lines(module)
    others = _forgotten(module, agents)

    def site(name: str) -> Site | None:
        return Site(file, lines[name]) if file and name in lines else None
    s = Shape(FRAMEWORK, ref, "agent", START, END, {n: site(n) for n in [*agents, *others]})
    s.edges.append(Edge(START, obj.name, "always", site(obj.name), "the run's starting agent"))
    for name, agent in {**agents, **others}.items():
        _turns(s, name, agent, site(name))
    s.limits = _limits(module, agents)
    return s


def _forgotten(module: Any, agents: dict[str, Any]) -> dict[str, Any]:
    """Agents the module defines that hand off into the run but that no agent of the run hands off to (a
    handoff forgotten?); agents with no link to the run are another app's, and none of lint's business."""
    if module is None:
        return {}
    return {a.name: a for a in vars(module).values()
            if is_agent(a) and a.name not in agents and any(h in agents for h in _handoff_names(a))}


def _turns(s: Shape, name: str, agent: Any, site: Site | None) -> None:
    """What a turn of `agent` can do: hand off, call tools (and stay, or stop), answer."""
    tools = list(function_tools(agent))
    for target in _handoff_names(agent):
        s.edges.append(Edge(name, target, "model", site, "the agent's handoffs"))
    behavior = agent.tool_use_behavior
    stop_names = list(getattr(behavior, "get", lambda *_: None)("stop_at_tool_names") or []) \
        if isinstance(behavior, dict) else []
    for tool in stop_names:
        if tool not in tools:
            s.routes.append(Route(name, tool, tuple(tools), site, "the agent's tool_use_behavior "
                                                                  "(stop_at_tool_names) against its function tools"))
    choice = getattr(agent.model_settings, "tool_choice", None)
    if isinstance(choice, str) and choice not in ("auto", "required", "none") and choice not in tools:
        s.routes.append(Route(name, choice, tuple(tools), site, "the agent's model_settings.tool_choice against "
                                                                "its function tools"))
    if tools or agent.tools:
        s.edges.append(Edge(name, name, "model", site, "the agent's tools: a tool call keeps the run with it"))
        if behavior == "stop_on_first_tool" or stop_names:
            s.edges.append(Edge(name, END, "model", site, "the agent's tool_use_behavior: a tool ends the run"))
    forced = choice == "required" or (isinstance(choice, str) and choice not in ("auto", "none"))
    if not (forced and agent.reset_tool_choice is False and (tools or agent.tools)):
        s.edges.append(Edge(name, END, "model", site, "a final answer of the agent's model"))


def _limits(module: Any, agents: dict[str, Any]) -> list[Limit]:
    """max_turns at each `Runner.run(agent, ...)` call of the module that starts one of these agents."""
    if module is None:
        return []
    from agents.run import DEFAULT_MAX_TURNS
    ours = {k for k, v in vars(module).items() if is_agent(v) and any(v is a for a in agents.values())}
    out: list[Limit] = []
    for call, file in calls_in_module(module, RUNS):
        if not (isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name)
                and call.func.value.id == "Runner"):
            continue
        first = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "starting_agent"), None)
        if not (isinstance(first, ast.Name) and first.id in ours):
            continue
        site = Site(file, call.lineno)
        how = f"the call Runner.{call.func.attr}({first.id}, ...) (ast)"
        given, value = keyword(call, "max_turns")
        if not given:
            out.append(Limit("max_turns", DEFAULT_MAX_TURNS, True, site, how))
            continue
        known, number = literal_limit(value)
        if known:
            out.append(Limit("max_turns", number, False, site, how))
    return out


# ---------------------------------------------------------------- init

def starter(obj: Any, ref: str) -> str:
    """A starter `framework: openai_agents` declaration for the agent (docs/how-to/init.md)."""
    agents = _agents(obj, ref)
    doc = Doc()
    header(doc, ref, "OpenAI Agents", ASKS)
    doc.key("framework", FRAMEWORK)
    doc.key("target", ref)
    context = _context(obj)
    if context:
        doc.key("context", context, note="a fresh context object per run (the agent's Agent[...] type)")
    else:
        run_object(doc, "context", _context_type(obj), "the run context your tools read (wrapper.context)")
    input_and_models(doc, "the run's input, as you pass it to Runner.run.", "agent", agents, _answers)
    _tools_hint(doc, agents)
    low = 2 if any(a.handoffs for a in agents.values()) else 1
    doc.blank()
    doc.comment("ASK: the max_turns your app passes to Runner.run; every value swept is one run of the check. "
                "The SDK's default is 10.")
    doc.key("params", block=True)
    doc.key("max_turns", {"min": low, "max": low + SWEEP - 1}, 2)
    doc.blank()
    doc.comment("The out-of-the-box properties are always checked: run_ends, limit_error, most_turns, "
                "most_tool_runs" + (", most_handoffs" if any(a.handoffs for a in agents.values()) else "")
                + ". ASK: add what your app must do, over the vars agent, status, turns, tool_runs, handoffs, "
                "runs_TOOL, e.g.:")
    doc.comment("properties:")
    doc.comment("  at_most_two_turns:")
    doc.comment("    always: turns <= 2")
    return doc.text()


def _answers(agent: Any) -> list[tuple[str, Any, str]]:
    """A final answer, a call of each function tool, each handoff: (label, answer, what it is)."""
    taken: set[str] = set()
    out: list[tuple[str, Any, str]] = [(label("answer", taken), _final(agent), "a final answer: the run ends")]
    for name, tool in function_tools(agent).items():
        args = placeholder(dict(getattr(tool, "params_json_schema", {}) or {}))
        out.append((label(f"call_{name}", taken), {"tool": name, "args": args if isinstance(args, dict) else {}},
                    f"a call of the tool {name} (it runs as written)"))
    for target in _handoff_names(agent):
        out.append((label(f"to_{target}", taken), {"handoff": target}, f"a handoff to {target}"))
    return out


def _final(agent: Any) -> str:
    """A final answer's text: a placeholder, or for a structured output_type its JSON."""
    if agent.output_type in (None, str):
        return "ASK: a final answer the agent gives"
    import json

    from agents import AgentOutputSchema
    try:
        return json.dumps(placeholder(AgentOutputSchema(agent.output_type).json_schema()))
    except Exception:       # an output type the SDK cannot describe: text, which the run will refuse
        return "ASK: the agent's structured output, as JSON"


def _tools_hint(doc: Doc, agents: dict[str, Any]) -> None:
    """The tools run as written; how to declare what one returns instead, commented."""
    tools = sorted({t for a in agents.values() for t in function_tools(a)})
    if not tools:
        return
    doc.blank()
    doc.comment(f"The function tools ({', '.join(tools)}) run as written. ASK: to declare what one returns "
                "instead of running it (one that needs a network, say), uncomment and edit:")
    doc.comment("tools:")
    doc.comment(f"  {tools[0]}:")
    doc.comment("    ok: the result your tool returns")
    doc.comment("    fails: {raises: ConnectionError, message: the service is down}")


def _context_type(obj: Any) -> Any:
    """The agent's context type (`Agent[Ctx](...)`), or None."""
    orig = getattr(obj, "__orig_class__", None)
    args = typing.get_args(orig) if orig is not None else ()
    return args[0] if args else None


def _context(obj: Any) -> str | None:
    """`module:Class` of the agent's context type (`Agent[Ctx](...)`), when it can be made with no arguments."""
    cls = _context_type(obj)
    if not inspect.isclass(cls) or cls.__module__ in ("builtins", "typing"):
        return None
    try:
        needs = [p for p in inspect.signature(cls).parameters.values()
                 if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    except (TypeError, ValueError):
        return None
    return None if needs else f"{cls.__module__}:{cls.__qualname__}"
