"""Baselines for CI: notice when an edit silently changes the explored space.

A baseline file records, per run (spec, machine, params), the state and transition
counts, the depth, the worst-case bounds and every property's verdict. A later check
against it lists each figure that moved; the CLI then exits 1 unless
`--update-baseline` rewrites the file. A spec or bound-code edit that changes what is
explored shows up even when every property still holds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from haltproof.machine import strict_json
from haltproof.machine.inputs import TooLarge
from haltproof.machine.spec import shown_path

from .results import RunResult

SCHEMA = "haltproof-baseline/1"
# 1.4 KB a run (the bundled specs' 107 runs make 150 KB): 64 MiB holds far more than the
# 10,000 runs one check sweeps, and refuses a file built to exhaust memory (docs/reference/cli.md).
MAX_BASELINE_BYTES = 64 * 1024 * 1024


class BaselineError(Exception):
    """The baseline file cannot be read or written (a usage error)."""


def _key(r: RunResult) -> str:
    params = ",".join(f"{k}={v}" for k, v in r.params.items())
    return f"{shown_path(r.spec_path)} [{r.machine}] {params}".rstrip()


def figures(runs: list[RunResult]) -> dict[str, dict[str, Any]]:
    """What a baseline records for each run."""
    return {_key(r): {"states": r.stats["states"], "transitions": r.stats["transitions"],
                      "terminal_states": r.stats["terminal_states"], "max_depth": r.stats["max_depth"],
                      "result": r.result,
                      "bounds": {name: b["value"] for name, b in r.bounds.items()},
                      "properties": {p.name: p.status for p in r.properties}}
            for r in runs}


def load(path: str | Path) -> dict[str, dict[str, Any]] | None:
    """The recorded figures, or None when the file does not exist yet."""
    p = Path(path)
    if not p.exists():
        return None
    try:
        data = strict_json.read(p, MAX_BASELINE_BYTES, "a baseline")
    except TooLarge as exc:
        raise BaselineError(f"--baseline {path}: {exc}") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:     # ValueError: JSON, or a key given twice
        raise BaselineError(f"--baseline {path}: cannot read it: {exc}") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or not isinstance(data.get("runs"), dict):
        raise BaselineError(f"--baseline {path}: not a haltproof baseline (schema {SCHEMA})")
    runs: dict[str, dict[str, Any]] = data["runs"]
    return runs


def save(path: str | Path, runs: list[RunResult]) -> None:
    try:
        Path(path).write_text(json.dumps({"schema": SCHEMA, "runs": figures(runs)}, indent=2,
                                         sort_keys=True) + "\n", encoding="utf-8")
    except OSError as exc:
        raise BaselineError(f"--baseline {path}: cannot write it: {exc.strerror}") from None


def compare(old: dict[str, dict[str, Any]], runs: list[RunResult]) -> list[str]:
    """Every figure of the checked runs that differs from the baseline, as readable lines.
    Runs the baseline has but this check did not run are not differences (a check may pin
    params or name fewer specs); runs it does not have are."""
    out = []
    for key, now in figures(runs).items():
        before = old.get(key)
        if before is None:
            out.append(f"{key}: not in the baseline")
            continue
        for field in ("result", "states", "transitions", "terminal_states", "max_depth"):
            if before.get(field) != now[field]:
                out.append(f"{key}: {field} {before.get(field)} -> {now[field]}")
        for group in ("bounds", "properties"):
            was, new = before.get(group, {}), now[group]
            for name in sorted(set(was) | set(new)):
                if was.get(name, "absent") != new.get(name, "absent"):
                    out.append(f"{key}: {group[:-1] if group == 'bounds' else 'property'} {name} "
                               f"{was.get(name, 'absent')} -> {new.get(name, 'absent')}")
    return out
