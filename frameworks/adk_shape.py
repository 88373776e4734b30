"""Google ADK's shape, read from a root agent: for `haltproof init` and `haltproof lint`
(frameworks/introspect.py has the contract).

The agents are ADK's own objects: the root's tree (frameworks/adk.py's `walk`), each `LlmAgent`
with its tools and the transfers ADK allows it (adk.py's `transfer_targets`), each workflow agent
with its `sub_agents`. A model call of an LlmAgent answers (its turn ends, and the run goes where
its place in the tree says: the next sub-agent of a `SequentialAgent`, the next iteration of a
`LoopAgent`, the end of the run), calls a tool (the run stays with it) or transfers; a tool or
callback whose code sets `actions.escalate` ends the `LoopAgent` around it. From the source
(`ast`): the line of each `LlmAgent(name=...)` call, and the runs the target's module starts
(`runner.run_async(...)` of a `Runner` or `InMemoryRunner` of the root), with their
`RunConfig(max_llm_calls=...)`.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from typing import Any

from .adk import LIMIT, agent_tools, is_llm_agent, is_loop, require_adk, transfer_targets, walk
from .introspect import (Decided, Doc, Edge, Limit, Shape, Site, TargetError, called, function_ast, header,
                         input_and_models, keyword, label, literal_limit, module_ast, name_lines, placeholder, receiver, target_module)
from .openai_agents import slug

FRAMEWORK = "adk"
START, END = "__start__", "__end__"
RUNS = {"run", "run_async"}
RUNNERS = {"Runner", "InMemoryRunner"}
SWEEP = 3
CALLBACKS = ("before_agent_callback", "after_agent_callback", "before_model_callback", "after_model_callback",
             "before_tool_callback", "after_tool_callback")
ASKS = [
    "input: the user's message a run starts with (a request your app really gets).",
    "what each LlmAgent's model may answer: init lists a final answer, a call of each of the agent's tools "
    "and each transfer ADK allows it; keep the ones its model can really give, and make the tools' arguments "
    "ones your tools accept (your tools and callbacks run as written).",
    "max_llm_calls: the value your app gives RunConfig (haltproof cannot see it where the runner is called); "
    "the sweep below is small so that the first check is quick, ADK's default is 500.",
    "properties: what your app must do, beyond the out-of-the-box ones (docs/how-to/adk.md).",
]


def claims(obj: Any) -> bool:
    """An ADK agent: an object whose class (or a base of it) is ADK's, a `BaseAgent`."""
    if not any(c.__module__.startswith("google.adk.") for c in type(obj).__mro__):
        return False
    from google.adk.agents import BaseAgent
    return isinstance(obj, BaseAgent)


def require() -> str:
    return require_adk()


def _kind(agent: Any) -> str:
    """What runs an agent's sub-agents: llm, sequential, parallel, loop, or custom (its own code)."""
    from google.adk.agents import ParallelAgent, SequentialAgent
    if is_llm_agent(agent):
        return "llm"
    if is_loop(agent):
        return "loop"
    return "sequential" if isinstance(agent, SequentialAgent) else "parallel" if isinstance(agent, ParallelAgent) \
        else "custom"


# ---------------------------------------------------------------- lint

def shape(obj: Any, ref: str) -> Shape:
    """The tree's agents, where each model call can take the run, and the max_llm_calls the code shows."""
    tree = walk(obj)
    module = target_module(ref)
    lines, file = name_lines(module)

    def site(name: str) -> Site | None:
        return Site(file, lines[name]) if file and name in lines else None
    s = Shape(FRAMEWORK, ref, "agent", START, END, {a.name: site(a.name) for a in tree})
    s.edges.append(Edge(START, obj.name, "always", site(obj.name), "the runner's root agent"))
    for agent in tree:
        _steps(s, agent, site(agent.name))
    s.limits = _limits(module, obj)
    return s


def _steps(s: Shape, agent: Any, site: Site | None) -> None:
    """Where the run can go from `agent`: an LlmAgent's model calls, a workflow agent's sub-agents."""
    name, kind = agent.name, _kind(agent)
    subs = list(agent.sub_agents)
    if kind == "llm":
        _model_calls(s, agent, site)
    elif kind == "custom":
        s.open[name] = "a custom agent: its own _run_async_impl decides which sub-agents run"
        for sub in subs:
            s.edges.append(Edge(name, sub.name, "code", site, "a custom agent's sub-agents"))
    elif not subs:
        for target, _, how in _after(agent):
            s.edges.append(Edge(name, target, "always", site, f"a {kind} agent with no sub-agents ends at once: {how}"))
    elif kind == "parallel":
        for sub in subs:
            s.edges.append(Edge(name, sub.name, "always", site, "the ParallelAgent runs every sub-agent"))
    else:
        s.edges.append(Edge(name, subs[0].name, "always", site, f"the {type(agent).__name__} begins with its first "
                                                                "sub-agent"))


def _model_calls(s: Shape, agent: Any, site: Site | None) -> None:
    """What a model call of an LlmAgent can do: transfer, call a tool (and stay), answer (and end its turn)."""
    name = agent.name
    for target in transfer_targets(agent):
        s.edges.append(Edge(name, target, "model", site, "ADK's transfer_to_agent (the agent's sub-agents, parent "
                                                         "and peers, as ADK allows them)"))
    if agent.tools:
        s.edges.append(Edge(name, name, "model", site, "the agent's tools: a tool call keeps the run with it"))
    for target, decided, how in _after(agent):
        s.edges.append(Edge(name, target, "model" if decided == "always" else decided, site,
                            f"a final answer of the agent's model: {how}"))
    loop = _loop_around(agent)
    if loop is None:
        return
    escalating, unread = _escalations(agent)
    if unread:
        s.open[name] = f"{', '.join(unread)} may escalate out of {loop.name}: its code cannot be read"
    for what, decided in escalating:
        for target, _, how in _after(loop):
            s.edges.append(Edge(name, target, decided, site, f"{what} sets actions.escalate, which ends the LoopAgent "
                                                             f"{loop.name}: {how}"))


def _after(agent: Any) -> list[tuple[str, Decided, str]]:
    """Where the run goes once `agent` has ended, by its place in the tree: (target, who decides, how)."""
    parent = agent.parent_agent
    if parent is None:
        return [(END, "always", "the root agent ends the run")]
    kind = _kind(parent)
    subs = list(parent.sub_agents)
    at = next(i for i, a in enumerate(subs) if a is agent)
    if kind in ("sequential", "loop") and at + 1 < len(subs):
        return [(subs[at + 1].name, "always", f"{parent.name} runs its next sub-agent")]
    if kind == "loop":
        again: list[tuple[str, Decided, str]] = [(subs[0].name, "code", f"{parent.name} begins its next iteration")]
        if parent.max_iterations is None:
            return again
        return again + [(target, "code", f"{parent.name} ends at its max_iterations ({parent.max_iterations}); {how}")
                        for target, _, how in _after(parent)]
    if kind == "llm":
        return [(t, d, f"the transfer to it returns, and {parent.name}'s turn ends; {how}") for t, d, how in _after(parent)]
    return _after(parent)


def _loop_around(agent: Any) -> Any:
    """The nearest LoopAgent above `agent` (the one an escalate of its ends), or None."""
    parent = agent.parent_agent
    while parent is not None and not is_loop(parent):
        parent = parent.parent_agent
    return parent


def _escalations(agent: Any) -> tuple[list[tuple[str, Decided]], list[str]]:
    """The tools (the model's decision) and callbacks (the app's code) of an LlmAgent whose source sets
    `actions.escalate`, and the toolsets and tools whose source cannot be read."""
    from google.adk.tools.agent_tool import AgentTool
    from google.adk.tools.base_tool import BaseTool
    from google.adk.tools.function_tool import FunctionTool
    found: list[tuple[str, Decided]] = []
    unread = [f"the toolset {type(t).__name__}" for t in agent.tools if not isinstance(t, BaseTool) and not callable(t)]
    for tool in agent_tools(agent):
        if isinstance(tool, AgentTool):
            continue        # its agent runs apart, in a runner of its own: an escalate there stays there
        code = tool.func if isinstance(tool, FunctionTool) else type(tool).run_async
        seen = _sets_escalate(code)
        if seen is None:
            unread.append(f"the tool {tool.name}")
        elif seen:
            found.append((f"the tool {tool.name}", "model"))
    for attr in CALLBACKS:
        given = getattr(agent, attr, None)
        for fn in given if isinstance(given, list) else [given] if given is not None else []:
            if _sets_escalate(fn):
                found.append((f"the {attr} {getattr(fn, '__name__', '')}".rstrip(), "code"))
    return found, unread


def _sets_escalate(fn: Any) -> bool | None:
    """Whether a function's source sets escalate (`x.actions.escalate = ...`, as ADK's exit_loop does);
    None when its source cannot be read."""
    parsed = function_ast(fn)
    if parsed is None:
        return None
    return any(isinstance(t, ast.Attribute) and t.attr == "escalate"
               for node in ast.walk(parsed[0]) if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign))
               for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))


def _limits(module: Any, root: Any) -> list[Limit]:
    """max_llm_calls at each `runner.run_async(...)` (or `run`) of a runner the module makes for the
    root: the RunConfig given there (a call, or a name bound to one), ADK's default without one. A
    name is read in the function that uses it, then at the module's top level."""
    parsed = module_ast(module) if module is not None else None
    if parsed is None:
        return []
    tree, file = parsed
    ours = {k for k, v in vars(module).items() if v is root}
    top = dict(_assigned(tree))
    out: list[Limit] = []
    for scope in [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))]:
        bound = top if scope is tree else {**top, **dict(_assigned(scope))}
        apps = {n for n, c in bound.items() if called(c) == "App" and _names(keyword(c, "root_agent")[1], ours)}
        runners = {n for n, c in bound.items() if called(c) in RUNNERS and _runs_root(c, ours, apps)}
        for call in (n for n in _own(scope) if isinstance(n, ast.Call)):
            if not (isinstance(call.func, ast.Attribute) and call.func.attr in RUNS and receiver(call) in runners):
                continue
            site = Site(file, call.lineno)
            how = f"the call {receiver(call)}.{call.func.attr}(...) of a runner of {sorted(ours)[0]} (ast)"
            given, config = keyword(call, "run_config")
            if isinstance(config, ast.Name) and config.id in bound:
                config = bound[config.id]
            if not given:
                out.append(Limit(LIMIT, _default(), True, site, how))
            elif isinstance(config, ast.Call) and called(config) == "RunConfig":
                _config_limit(out, config, site, how)
    return sorted(out, key=lambda lim: lim.site.line if lim.site else 0)


def _config_limit(out: list[Limit], config: ast.Call, site: Site, how: str) -> None:
    """The max_llm_calls a `RunConfig(...)` call gives: its literal (0 or less: no limit), ADK's default without it."""
    given, value = keyword(config, LIMIT)
    if not given:
        out.append(Limit(LIMIT, _default(), True, site, f"{how}; RunConfig without {LIMIT}"))
        return
    known, number = literal_limit(value)
    if known:
        out.append(Limit(LIMIT, number if number is not None and number > 0 else None, False, site,
                         f"{how}; RunConfig({LIMIT}=...): 0 or less is no limit"))


def _default() -> int | None:
    """ADK's max_llm_calls when a RunConfig does not give one (its default, or ADK_MAX_LLM_CALLS)."""
    from google.adk.agents.run_config import RunConfig
    value = RunConfig().max_llm_calls
    return value if value > 0 else None


def _assigned(scope: ast.AST) -> Iterator[tuple[str, ast.Call]]:
    """`name = Call(...)` in a scope (a function's body, or the module's top level): the runners, apps
    and run configs it makes."""
    for node in _own(scope):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    yield t.id, node.value


def _own(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a scope's body, not those of the functions defined in it (each is a scope of its own)."""
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        yield node
        todo += ast.iter_child_nodes(node)


def _names(node: ast.AST | None, names: set[str]) -> bool:
    return isinstance(node, ast.Name) and node.id in names


def _runs_root(call: ast.Call, ours: set[str], apps: set[str]) -> bool:
    """Whether a `Runner(...)`/`InMemoryRunner(...)` call runs the root: `agent=`, or `app=` an App of it."""
    position = 0 if called(call) == "InMemoryRunner" else None
    _, agent = keyword(call, "agent", position)
    _, app = keyword(call, "app")
    made = isinstance(app, ast.Call) and called(app) == "App" and _names(keyword(app, "root_agent")[1], ours)
    return _names(agent, ours) or _names(app, apps) or made


# ---------------------------------------------------------------- init

def starter(obj: Any, ref: str) -> str:
    """A starter `framework: adk` declaration for the root agent (docs/how-to/init.md)."""
    tree = walk(obj)
    agents = {a.name: a for a in tree if is_llm_agent(a)}
    if not agents:
        raise TargetError(f"{ref}: its tree has no LlmAgent: no model is ever called, so there is nothing to declare")
    loops = [a for a in tree if is_loop(a)]
    doc = Doc()
    header(doc, ref, "Google ADK", ASKS)
    doc.key("framework", FRAMEWORK)
    doc.key("target", ref)
    input_and_models(doc, "the user's message a run starts with (Runner.run_async's new_message).", "LlmAgent",
                     agents, _answers)
    _agent_tools_hint(doc, agents)
    low = _fewest_calls(obj, ref)
    doc.blank()
    doc.comment(f"ASK: the {LIMIT} your app gives RunConfig; every value swept is one run of the check. ADK's "
                "default is 500.")
    if loops:
        doc.comment("Each LoopAgent keeps its own max_iterations (" + ", ".join(
            f"{a.name}: {a.max_iterations}" for a in loops) + "); to sweep it, add max_iterations_SLUG, e.g. "
            f"max_iterations_{slug(loops[0].name)}: {{min: 1, max: 2}}.")
    doc.key("params", block=True)
    doc.key(LIMIT, {"min": low, "max": low + SWEEP - 1}, 2)
    doc.blank()
    builtin = ["run_ends", "limit_error", "most_model_calls", "most_tool_runs"]
    transfers = any(transfer_targets(a) for a in agents.values())
    if transfers:
        builtin.append("most_transfers")
    builtin += [f"{p}_{slug(a.name)}" for a in loops for p in ("most_iterations", "silent_stop")]
    loop_vars = [f"{v}_{slug(a.name)}" for a in loops for v in ("iterations", "exit")]
    doc.comment(f"The out-of-the-box properties are always checked: {', '.join(builtin)}. ASK: add what your app "
                "must do, over the vars " + ", ".join(["agent", "status", "calls", "tool_runs", "transfers",
                                                      "escalations", "runs_TOOL", *loop_vars]) + ", e.g.:")
    doc.comment("properties:")
    doc.comment("  at_most_one_transfer:" if transfers else "  at_most_two_tool_runs:")
    doc.comment("    always: transfers <= 1" if transfers else "    always: tool_runs <= 2")
    return doc.text()


def _answers(agent: Any) -> list[tuple[str, Any, str]]:
    """A final answer, a call of each tool (an AgentTool's left out), each transfer: (label, answer, what it is)."""
    from google.adk.tools.agent_tool import AgentTool
    taken: set[str] = set()
    out: list[tuple[str, Any, str]] = [(label("answer", taken), _final(agent),
                                        "a final answer: the agent's turn ends")]
    for tool in agent_tools(agent):
        if isinstance(tool, AgentTool):
            continue
        args = placeholder(_schema(tool))
        out.append((label(f"call_{tool.name}", taken), {"tool": tool.name, "args": args if isinstance(args, dict) else {}},
                    f"a call of the tool {tool.name} (it runs as written)"))
    for target in transfer_targets(agent):
        out.append((label(f"to_{target}", taken), {"transfer": target}, f"a transfer to {target}"))
    return out


def _schema(tool: Any) -> dict[str, Any]:
    """The JSON schema of a tool's arguments, as ADK declares the tool to the model ({} when it does not say)."""
    try:
        declared = tool._get_declaration()     # ADK's own declaration of the tool, what the model is offered
    except Exception:       # a tool whose declaration ADK cannot build offline: no arguments known
        return {}
    if declared is None:
        return {}
    schema = declared.parameters_json_schema
    if schema is None and declared.parameters is not None:
        schema = declared.parameters.model_dump(mode="json", exclude_none=True)
    return dict(schema or {})


def _final(agent: Any) -> str:
    """A final answer's text: a placeholder, or for an output_schema the JSON of one."""
    if agent.output_schema is None:
        return "ASK: a final answer the agent gives"
    try:
        return json.dumps(placeholder(agent.output_schema.model_json_schema()))
    except Exception:       # a schema pydantic cannot describe: text, which the run may refuse
        return "ASK: the agent's structured output, as JSON"


def _agent_tools_hint(doc: Doc, agents: dict[str, Any]) -> None:
    """An AgentTool's call is left out (its agent's model is not scripted); say so."""
    from google.adk.tools.agent_tool import AgentTool
    left = sorted({t.name for a in agents.values() for t in agent_tools(a) if isinstance(t, AgentTool)})
    if left:
        doc.blank()
        doc.comment(f"Not listed: a call of {', '.join(left)}, an AgentTool. Its agent runs in a runner of its own, "
                    "whose model haltproof does not script (docs/how-to/adk.md).")


def _fewest_calls(obj: Any, ref: str) -> int:
    """The fewest model calls on a way from the root to the run's end in its shape (at least 1): where the
    sweep of max_llm_calls starts, so that a run can end."""
    import networkx as nx
    s = shape(obj, ref)
    llm = {a.name for a in walk(obj) if is_llm_agent(a)}
    g = nx.DiGraph()
    for e in s.edges:
        g.add_edge(e.source, e.target, weight=int(e.source in llm))
    try:
        return max(1, int(nx.shortest_path_length(g, START, END, weight="weight")))
    except (nx.NetworkXNoPath, nx.NodeNotFound):
        return 1
