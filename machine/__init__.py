"""Declaring a finite machine: the YAML spec loader, the safe expression language,
domains, actions/choices/decide tables, and compiling a spec to step functions.

Nothing is imported here: every entry point imports `haltproof.machine.declarations`
(through `haltproof.frameworks`), which must not load the spec loader and the compiler
with it (`import haltproof` stays cheap; tests/project/test_lazy_imports.py)."""
