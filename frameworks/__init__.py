"""Agent frameworks driven as they run: their own code, their own limits (docs/frameworks.md).

One module per framework (`haltproof.frameworks.langgraph`); each imports its framework
lazily at use, so haltproof installs and imports without any of them.
"""
