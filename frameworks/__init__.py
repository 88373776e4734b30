"""Agent frameworks driven as they run: their own code, their own limits (docs/how-to/frameworks.md).

One module per framework (`haltproof.frameworks.langgraph`); each imports its framework
lazily at use, so haltproof installs and imports without any of them.

Declaration files: a YAML file with `framework: NAME` and `target: module:attr` (the user's
own object) instead of an adapter and a spec. Each framework plugs in here, and only here,
by registering the function that expands its declarations:

    register_declaration("NAME", "haltproof.frameworks.NAME:declaration")

(the name as text: nothing of the framework is imported until such a file is loaded). The
function's contract is in haltproof.machine.declarations: it takes the declaration's
top-level mapping and file, and returns a `Declared` (the spec's mapping, with `bind:`, and
a factory for its live adapter); a bad declaration raises `SpecError` at its line.
frameworks/declaration.py has the shared parts (keys, importing the target, YAML nodes).
The haltproof package imports this module (api.py), so every entry point knows the names.
"""

from haltproof.machine.declarations import register_declaration

register_declaration("adk", "haltproof.frameworks.adk:declaration")
register_declaration("crewai", "haltproof.frameworks.crewai:declaration")
register_declaration("langgraph", "haltproof.frameworks.langgraph:declaration")
register_declaration("openai_agents", "haltproof.frameworks.openai_agents:declaration")
register_declaration("pydantic_ai", "haltproof.frameworks.pydantic_ai:declaration")
