"""How to check: the `Options` record a check runs with, and the params it sweeps.

The command line and the Python API build the same `Options`; it refuses on construction
what no run could honour, and `check_pins` / `sweep` turn `-p` pins into the combinations
of param values a check explores, each checked against the spec's declarations.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from haltproof.machine.errors import Problem, SpecError
from haltproof.machine.inputs import check_number
from haltproof.machine.binding import DETERMINISM
from haltproof.machine.inputs import value_count
from haltproof.machine.spec import Pins, Spec, declared_at
from haltproof.machine.text import values_text
from haltproof.machine.trust import MODEL, NO_CODE
from haltproof.machine.usercode import CALL_TIMEOUT

from .engine import ProgressFn
from .memory import parse_size




ENGINES = ("auto", "scalar", "vector")


MAX_WORKERS = 1024      # -j: more local processes than this is a typo, not a machine


@dataclass
class Options:
    """How to check; refused on construction when no run could honour it (the Python API
    hands its arguments straight here, without the command line's checks). The pins are
    checked against each spec, by check_pins."""

    pins: Pins = field(default_factory=dict)        # see sweep
    properties: list[str] | None = None
    max_states: int | None = None
    timeout: float | None = None    # seconds for the whole check, the user's own code included
    call_timeout: float | None = CALL_TIMEOUT   # seconds one call into the user's code may take (usercode.py)
    max_memory: int | str | None = None   # bytes of resident memory, or "512M" (explorer/memory.py)
    model_only: bool = False      # explore the spec's own stages even when it is bound to code
    run_code: bool = True         # False (--no-code): import none of the user's code (machine/trust.py)
    engine: str = "auto"          # auto | scalar | vector (see explorer/vengine.py)
    paths: int = 1                # live binding: paths compared into each abstract state (machine/binding.py)
    determinism: str = "auto"     # bound code: which transitions run twice (binding.DETERMINISM)
    workers: int = 1              # processes (-j) the runs of a sweep are checked in (explorer/parallel.py);
                                  # a run checked in this process: the vector engine's threads
    progress: Callable[[Spec, dict[str, int]], ProgressFn] | None = None

    @property
    def stages_only(self) -> bool:
        """Whether a bound spec is explored on its own stages: --model, or --no-code."""
        return self.model_only or not self.run_code

    @property
    def stages_mode(self) -> str:
        """The option that keeps the bound code from running, as messages name it."""
        return MODEL if self.run_code else NO_CODE

    @property
    def memory_bytes(self) -> int | None:
        """`max_memory` in bytes: construction parsed a size such as "512M"."""
        assert not isinstance(self.max_memory, str), "parsed by __post_init__"
        return self.max_memory

    def __post_init__(self) -> None:
        if self.max_states is not None:
            self.max_states = check_number(self.max_states, "max_states", int, above=0)
        if self.timeout is not None:
            self.timeout = check_number(self.timeout, "timeout", float, above=0)
        if self.call_timeout is not None:
            self.call_timeout = check_number(self.call_timeout, "call_timeout", float, above=0)
        if isinstance(self.max_memory, str):        # a size as --max-memory takes it: "512M"
            self.max_memory = parse_size(self.max_memory, "max_memory")
        elif self.max_memory is not None:
            self.max_memory = check_number(self.max_memory, "max_memory", int, above=0)
        if self.properties is not None and (isinstance(self.properties, str) or not all(
                isinstance(n, str) for n in self.properties)):
            raise ValueError(f"properties must be a list of property names, got {self.properties!r}")
        if not isinstance(self.model_only, bool):
            raise ValueError(f"model must be True or False, got {self.model_only!r}")
        if not isinstance(self.run_code, bool):
            raise ValueError(f"run_code must be True or False, got {self.run_code!r}")
        self.paths = check_number(self.paths, "paths", int, above=0)
        self.workers = check_number(self.workers, "workers", int, above=0, most=MAX_WORKERS)
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {self.engine!r}")
        if self.determinism not in DETERMINISM:
            raise ValueError(f"determinism must be one of {', '.join(DETERMINISM)}, got {self.determinism!r}")


MAX_COMBINATIONS = 10_000   # param combinations one check sweeps (docs/reference/cli.md, "-p")


def sweep(spec: Spec, pins: Pins) -> list[dict[str, Any]]:
    """Every combination of declared param values, a pinned param taking only its pinned
    values; refused past MAX_COMBINATIONS before any is built (a `{min, max}` param may
    declare 10^12 values)."""
    typed = check_pins(spec, pins)
    lists = [typed[p.name] if p.name in typed else p.values for p in spec.params]
    total = math.prod(value_count(values) for values in lists)
    if total > MAX_COMBINATIONS:
        wide = sorted((p for p, values in zip(spec.params, lists) if value_count(values) > 1),
                      key=lambda p: (p.name in typed, -p.count))
        have = ", ".join(f"{p.name} has {values_text(p.values)}" for p in wide if p.name not in typed)
        given = ", ".join(f"-p gives {p.name} {len(typed[p.name])} values" for p in wide
                          if p.name in typed)
        raise SpecError([Problem(spec.path, wide[0].line,
                                 f"the params make {total:,} combinations, more than the "
                                 f"{MAX_COMBINATIONS:,} a check sweeps: pin params with -p NAME=VALUE, "
                                 f"e.g. -p {wide[0].name}={wide[0].values[0]} ({have or given})")])
    return [dict(zip([p.name for p in spec.params], combo)) for combo in itertools.product(*lists)]


def _pin_values(name: str, value: Any) -> list[Any]:
    """The values a pin gives, each given once: ValueError for anything else. An empty
    list would sweep no combination, and a check of nothing proves nothing. Their type is
    the param's to check (Param.pinned): `True` must not pass for 1."""
    if isinstance(value, range) and value_count(value) > MAX_COMBINATIONS:     # never listed out
        raise ValueError(f"-p {name}={value!r} gives {value_count(value):,} values, more than the "
                         f"{MAX_COMBINATIONS:,} combinations a check sweeps")
    given = list(value) if isinstance(value, (list, tuple, range)) else [value]
    if not given:
        raise ValueError(f"-p {name}: no value given (an empty list pins no combination)")
    out: list[Any] = []
    for v in given:
        if any(type(v) is type(w) and v == w for w in out):
            raise ValueError(f"-p {name}={v} is given twice")
        out.append(v)
    return out


def check_pins(spec: Spec, pins: Pins) -> dict[str, list[Any]]:
    """Every pinned param is declared and given values of its type and range, each once
    (an int param declared `{min, max, values}` takes any int between min and max);
    returns the pins as the params' values (`-p flag=true` is True)."""
    if not isinstance(pins, Mapping):
        raise SpecError([Problem(spec.path, None, "the params to pin must be a mapping of param names "
                                                  f"to values, got {type(pins).__name__}")])
    declared = {p.name: p for p in spec.params}
    out: dict[str, list[Any]] = {}
    for name, values in pins.items():
        try:
            given = _pin_values(name, values)
        except ValueError as exc:
            raise SpecError([Problem(spec.path, None, str(exc))]) from None
        if name not in declared:
            raise SpecError([Problem(spec.path, None, f"-p {name}={given[0]}: the spec has no param "
                                                       f"{name} (it has: {', '.join(declared) or 'none'})")])
        try:
            out[name] = [declared[name].pinned(v) for v in given]
        except TypeError as exc:        # not even of the param's type
            raise SpecError([Problem(spec.path, None, str(exc))]) from None
        except ValueError as exc:       # of its type, but not a value it declares
            raise SpecError([Problem(*declared_at(spec, declared[name]), str(exc))]) from None
    return out


BOUND_OPTION = {"max_states": "--max-states", "timeout": "--timeout", "max_memory": "--max-memory",
                "call_timeout": "--call-timeout",   # a call into the user's code did not return (usercode.Stuck)
                "workers_lost": "lost workers"}     # every worker checking the run died (explorer/parallel.py)
