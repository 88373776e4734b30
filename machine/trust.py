"""What in a spec is the user's code, and the mode that runs none of it (`--no-code`).

A YAML spec is data: it is read with a safe loader and its expressions are parsed against a
whitelist, so nothing in the YAML itself can run code. Four things name code, which
haltproof imports and runs when it checks them (docs/how-to/trust.md):

- `bind: module:Name` imports the module and creates and calls the adapter;
- `raises:` (with `bind:`) imports each declared exception's module;
- `framework: NAME` imports its `target:` while the file is loaded, to build the spec;
- a Python model (`module:Class`) is code through and through.

`--no-code` (the environment variable HALTPROOF_NO_CODE=1, `run_code=False` in Python) is
for specs nobody vouched for, such as a pull request from a fork: it imports none of
them. A bound spec is then checked on its own stages (as `--model` does), and one that
has nothing to check without its code (a framework declaration, an action without stages,
a Python model) is refused, exit 2, saying why.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from .errors import Problem

NO_CODE = "--no-code"
MODEL = "--model"
ENV = "HALTPROOF_NO_CODE"
_ON, _OFF = ("1", "true", "yes"), ("", "0", "false", "no")


def without_code(mode: str) -> str:
    """Why the code is not there to say what a spec does, in `mode` (--model, --no-code)."""
    if mode == MODEL:
        return "--model explores the spec's own stages"
    return f"{mode} runs none of the spec's code"


def no_code_from_env(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether HALTPROOF_NO_CODE asks for the no-code mode (1/true/yes; unset, empty, 0,
    false or no: not). Any other value raises ValueError: a typo must not run the code."""
    raw = environ.get(ENV, "").strip().lower()
    if raw in _ON:
        return True
    if raw in _OFF:
        return False
    raise ValueError(f"{ENV}={environ[ENV]!r}: give 1 (run no code of the spec's) or 0")


def python_model_refused(ref: str) -> Problem:
    """A Python model (`module:Class`) under --no-code: nothing of it can be read without
    importing it, so it is refused before it is imported."""
    return Problem(ref, None, f"a Python model is code: checking it imports and runs {ref}, and "
                              f"{without_code(NO_CODE)}")
