"""haltproof: prove that an AI-agent run loop stops, and stops honestly.

The public API; everything else is internal and may move between releases.

    import haltproof

    report = haltproof.check("specs/loop_demo.yaml", params={"max_steps": 3})
    report.assert_proved()          # AssertionError with the counterexample tables otherwise
    print(report.result, report.exit_code)

See docs/api.md for the whole surface: checking a spec or a Python model, the result types,
binding real code with an Adapter, and the errors raised on bad input.
"""

from __future__ import annotations

from importlib import metadata as _metadata

from haltproof.api import Report, check
from haltproof.explorer.results import RunResult, RunVerdict
from haltproof.machine.binding import Adapter
from haltproof.machine.errors import Problem, SpecError
from haltproof.machine.live import LiveAdapter
from haltproof.machine.pymodel import (Model, action, always, independent_of, reachable, step_invariant,
                                       terminates, terminates_within, variant)
from haltproof.machine.spec import Pins, Spec, load_spec
from haltproof.properties.kinds import Kind, PropertyResult, Status, Step, Trace

try:
    __version__ = _metadata.version("haltproof")      # single-sourced from pyproject.toml
except _metadata.PackageNotFoundError:                # imported from a checkout that was never installed
    __version__ = "0+unknown"

__all__ = [
    "Adapter", "Kind", "LiveAdapter", "Model", "Pins", "Problem", "PropertyResult", "Report", "RunResult", "RunVerdict",
    "Spec", "SpecError", "Status", "Step", "Trace", "__version__", "action", "always", "check", "independent_of", "load_spec", "reachable",
    "step_invariant", "terminates", "terminates_within", "variant",
]
