"""haltproof: prove that an AI-agent run loop stops, and stops honestly.

The public API; everything else is internal and may move between releases.

    import haltproof

    report = haltproof.check("specs/loop_demo.yaml", params={"max_steps": 3})
    report.assert_proved()          # AssertionError with the counterexample tables otherwise
    print(report.result, report.exit_code)

See docs/reference/api.md for the whole surface: checking a spec or a Python model, the
result types, binding real code with an Adapter, and the errors raised on bad input.

Every name is imported on first use (PEP 562 `__getattr__`): `import haltproof`, and the
pytest plugin that every pytest run of a project with haltproof installed loads, must not
pay for numpy and the engines until a check runs (tests/project/test_lazy_imports.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# Registers the framework declarations (machine/declarations.py) for every entry point: the
# API, the command line and the pytest plugin all import this package first. It loads no
# framework, no YAML parser and no engine.
from haltproof import frameworks as _frameworks  # noqa: F401

if TYPE_CHECKING:     # what the names below are, for type checkers; __getattr__ loads them at run time
    from haltproof.api import Report, check
    from haltproof.explorer.results import RunResult, RunVerdict
    from haltproof.machine.binding import Adapter
    from haltproof.machine.errors import Problem, SpecError
    from haltproof.machine.live import LiveAdapter
    from haltproof.machine.pymodel import (Model, action, always, independent_of, reachable, step_invariant,
                                           terminates, terminates_within, variant)
    from haltproof.machine.spec import Pins, Spec, load_spec
    from haltproof.properties.kinds import Kind, PropertyResult, Status, Step, Trace

    __version__: str

# Each public name and the module it comes from: the TYPE_CHECKING imports above, as data
# (tests/project/test_lazy_imports.py checks that the two agree and that every name resolves).
_LAZY = {
    "Report": "haltproof.api", "check": "haltproof.api",
    "RunResult": "haltproof.explorer.results", "RunVerdict": "haltproof.explorer.results",
    "Adapter": "haltproof.machine.binding",
    "Problem": "haltproof.machine.errors", "SpecError": "haltproof.machine.errors",
    "LiveAdapter": "haltproof.machine.live",
    **dict.fromkeys(["Model", "action", "always", "independent_of", "reachable", "step_invariant",
                     "terminates", "terminates_within", "variant"], "haltproof.machine.pymodel"),
    **dict.fromkeys(["Pins", "Spec", "load_spec"], "haltproof.machine.spec"),
    **dict.fromkeys(["Kind", "PropertyResult", "Status", "Step", "Trace"], "haltproof.properties.kinds"),
}

__all__ = [
    "Adapter", "Kind", "LiveAdapter", "Model", "Pins", "Problem", "PropertyResult", "Report", "RunResult", "RunVerdict",
    "Spec", "SpecError", "Status", "Step", "Trace", "__version__", "action", "always", "check", "independent_of", "load_spec", "reachable",
    "step_invariant", "terminates", "terminates_within", "variant",
]


def _version() -> str:
    """The installed distribution's version, single-sourced from pyproject.toml."""
    from importlib import metadata      # tens of milliseconds: only when the version is asked for
    try:
        return metadata.version("haltproof")
    except metadata.PackageNotFoundError:     # imported from a checkout that was never installed
        return "0+unknown"


if not TYPE_CHECKING:     # hidden from type checkers, so that a misspelt name stays an error there
    def __getattr__(name: str) -> object:
        """Load a public name on first use, then keep it as a plain attribute of the package."""
        if name == "__version__":
            value: object = _version()
        elif name in _LAZY:
            value = getattr(importlib.import_module(_LAZY[name]), name)
        else:
            raise AttributeError(f"module 'haltproof' has no attribute {name!r}")
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
