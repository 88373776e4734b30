"""JSON read from outside (traces, baselines, action lists, policy answers), refusing what
`json.loads` silently accepts: an object that names a key twice keeps its last value, so
`{"type": "abstain", "type": "finish"}` would be read as a finish. Which one the writer
meant is ambiguous, and a verifier's input must never be read one way by one tool and
another way by the next."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .inputs import read_bounded


class DuplicateKeyError(ValueError):
    """A JSON object names the same key twice."""


def loads(text: str | bytes, **options: Any) -> Any:
    """`json.loads` that raises DuplicateKeyError (a ValueError) on a repeated key;
    `options` go to json.loads (parse_constant, ...)."""
    return json.loads(text, object_pairs_hook=_unique, **options)


def read(path: str | Path, limit: int, what: str, **options: Any) -> Any:
    """The one reader of a JSON file from outside: at most `limit` bytes (TooLarge past it,
    `what` naming the file: "a trace"), UTF-8, and no key twice. OSError, UnicodeDecodeError,
    json.JSONDecodeError and DuplicateKeyError propagate: each caller words them its own way."""
    return loads(read_bounded(path, limit, what), **options)


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKeyError(f"duplicate key {key!r} in a JSON object (which value is meant "
                                    "is ambiguous)")
        out[key] = value
    return out
