"""Declaration files: a YAML file naming a framework and the user's own object, instead of a spec.

A file whose top level has `framework: NAME` is not a spec: the integration registered
under NAME expands it into one (docs/how-to/frameworks.md). The spec loader calls `expand` and
loads what it returns like any spec, so `haltproof check`, sweeps, every output format and
the pytest plugin take declarations as they take specs.

This module is the registry only: the spec loader (this layer) must not import the
framework integrations (haltproof.frameworks, a higher layer), which register themselves
here (frameworks/__init__.py) when the haltproof package is imported. An integration is
named by `"module:function"` so registering it imports nothing of the framework.

The contract of an expand function, `expand(top, file) -> Declared`:

- `top` is the declaration's top-level mapping as read (a `yamlpos.YMap`: every value
  knows its line); `file` is the name problems are reported under.
- It returns the spec's top-level mapping (a YMap, as a YAML spec file would give; reuse
  the user's own nodes, e.g. `properties`, so their problems keep their lines; generated
  nodes carry the line of the key they come from) and a factory for the live adapter
  (called inside the check's deadline when the spec is checked or replayed), and its warnings.
- The spec it returns must say `bind:` (any `module:Name` text naming what runs: reports
  show it); the adapter comes from the factory, never from importing that text.
- A bad declaration raises `SpecError` naming the file and the line of the offending key.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

from .errors import Located, SpecError
from .trust import without_code

if TYPE_CHECKING:       # imported where used: registering an integration loads no YAML parser
    from .yamlpos import YMap


@dataclass
class Declared:
    """A declaration expanded: the spec's top-level mapping, the live adapter's factory, and
    what the expansion warns about (line, message): a scripted part that changes what the
    user's code means, say. Every run of the spec carries them (kind `declaration`)."""

    spec: YMap
    adapter: Callable[[], Any]
    warnings: list[tuple[int, str]] = field(default_factory=list)


Expand: TypeAlias = "Callable[[YMap, str], Declared]"

_REGISTRY: dict[str, Expand | str] = {}


def register_declaration(kind: str, expand: Expand | str) -> None:
    """Register the integration that expands `framework: KIND` files: a function, or its
    `"module:function"` name, imported only when such a file is loaded."""
    _REGISTRY[kind] = expand


def registered() -> list[str]:
    """The framework names a declaration may give, sorted."""
    return sorted(_REGISTRY)


def is_declaration(top: Any) -> bool:
    """Whether a file's top level is a declaration (it names a framework) rather than a spec."""
    from .yamlpos import YMap
    return isinstance(top, YMap) and "framework" in top


def expand(top: YMap, file: str) -> Declared:
    """The declaration `top` (from `file`) expanded by its framework's integration."""
    line = top.line_of("framework")
    kind = top["framework"]
    found = _REGISTRY.get(kind) if isinstance(kind, str) else None
    if found is None:
        raise Located(file, line).error(f"unknown framework (known: {', '.join(registered()) or 'none'})", kind)
    if isinstance(found, str):
        module, _, name = found.partition(":")
        found = getattr(importlib.import_module(module), name)
        _REGISTRY[kind] = found
    declared = found(top, file)
    if not isinstance(declared, Declared):
        raise SpecError([Located(file, line).problem(f"the {kind} integration returned no declaration")])
    return declared


def stages_needed(top: YMap, file: str, mode: str) -> SpecError:
    """Why a declaration cannot be checked in `mode` (--model, --no-code), at its `framework`
    line: it has no stages of its own; what its framework runs comes from importing the
    user's target, which is the code `mode` leaves alone. Nothing is imported to say so."""
    target = top.get("target")
    what = f" {target}" if isinstance(target, str) else ""
    return Located(file, top.line_of("framework")).error(
        f"a {top['framework']} declaration has no stages of its own: it becomes a spec by importing its "
        f"target{what} and running it, and {without_code(mode)}", top["framework"])
