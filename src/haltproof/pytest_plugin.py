"""The pytest plugin: `pytest --haltproof specs/` turns specs into test items.

Each spec file is collected as spec × params × property items (plus one item per
scenario). An item passes when its property holds (or is violated exactly as the spec
expects), fails with the counterexample table when it is violated, and fails when the
exploration was incomplete: an incomplete proof proves nothing. An invalid spec is a
collection error carrying haltproof's file:line message. Each param combination is
explored once, when its first item runs. Without `--haltproof` (or the ini option
`haltproof = true`) the plugin does nothing.

Every pytest run of a project that installs haltproof loads this module, so it imports
haltproof's loader, engines (and numpy) only inside the hooks that collect and run specs:
a run without specs pays nothing for them (tests/project/test_lazy_imports.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    # the types of Item.repr_failure's signature, which pytest does not export under public names
    from _pytest._code.code import TerminalRepr, TracebackStyle

    from haltproof.explorer.results import RunResult
    from haltproof.machine.compiled import Machine


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("haltproof", "haltproof model checking")
    group.addoption("--haltproof", action="store_true", default=None,
                    help="collect haltproof YAML specs as tests (spec x params x property)")
    group.addoption("--haltproof-max-states", type=_max_states, default=None, metavar="N",
                    help="bound each exploration; hitting it fails the items (incomplete)")
    group.addoption("--haltproof-no-code", action="store_true", default=False,
                    help="import and run none of the specs' code (bind:, raises:, framework:): "
                         "as `haltproof check --no-code`; also HALTPROOF_NO_CODE=1 (docs/how-to/trust.md)")
    from haltproof.machine.usercode import CALL_TIMEOUT      # light: no loader, no engine
    group.addoption("--haltproof-call-timeout", type=_seconds, default=CALL_TIMEOUT, metavar="SECONDS",
                    help=f"bound each call into bound code (default {CALL_TIMEOUT:g}); a call past it fails "
                         "the bound_code item, as `haltproof check --call-timeout` does")
    parser.addini("haltproof", type="bool", default=False,
                  help="collect haltproof YAML specs as tests without --haltproof")


def _max_states(text: str) -> int:
    """A positive int, as `haltproof check --max-states` takes (0 or -1 stopped every run at once)."""
    from haltproof.machine.inputs import positive
    return positive(int, "--haltproof-max-states")(text)


def _seconds(text: str) -> float:
    """A positive finite number of seconds, as `haltproof check --call-timeout` takes."""
    from haltproof.machine.inputs import positive
    return positive(float, "--haltproof-call-timeout")(text)


def _enabled(config: pytest.Config) -> bool:
    flag = config.getoption("haltproof")
    return bool(flag) if flag is not None else bool(config.getini("haltproof"))


def _runs_code(config: pytest.Config) -> bool:
    """Whether the plugin may import the specs' code: not with --haltproof-no-code or HALTPROOF_NO_CODE=1."""
    from haltproof.machine.trust import no_code_from_env
    try:
        from_env = no_code_from_env()
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    return not (config.getoption("haltproof_no_code") or from_env)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.suffix in (".yaml", ".yml") and _enabled(parent.config):
        return SpecFile.from_parent(parent, path=file_path)
    return None


class HaltproofFailure(Exception):
    """A property did not hold; carries the report text to show instead of a traceback."""


class SpecFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        from haltproof.explorer.check import judged_builtins, prepare
        from haltproof.explorer.options import Options
        from haltproof.machine.errors import SpecError
        from haltproof.machine.spec import load_spec
        run_code = _runs_code(self.config)
        try:
            spec = load_spec(self.path, run_code)
            options = Options(max_states=self.config.getoption("haltproof_max_states"), run_code=run_code,
                              call_timeout=self.config.getoption("haltproof_call_timeout"))
            machines = prepare(spec, options)
        except SpecError as exc:
            raise self.CollectError(f"invalid spec:\n{exc}") from None
        self.spec = spec
        self.options = options
        self._results: dict[int, RunResult] = {}
        for k, m in enumerate(machines):
            tag = ",".join(f"{n}={v}" for n, v in m.params.items())
            suffix = f"[{tag}]" if tag else ""
            names = list(judged_builtins(m)) + [p.name for p in spec.properties if p.name not in m.inactive]
            for name in names:
                prop = spec.property(name)
                yield PropertyItem.from_parent(self, name=f"{name}{suffix}", machine=m, index=k,
                                               prop_name=name, line=prop.line if prop else None)
            for sc in spec.scenarios:
                if sc.params == m.params:
                    yield ScenarioItem.from_parent(self, name=f"scenario:{sc.name}{suffix}", machine=m,
                                                   index=k, scenario=sc.name, line=sc.line)

    def result(self, index: int, machine: Machine) -> RunResult:
        from haltproof.explorer.check import check_machine
        if index not in self._results:
            self._results[index] = check_machine(machine, self.options)
        return self._results[index]


class _Item(pytest.Item):
    def __init__(self, *, machine: Machine, index: int, line: int | None, **kwargs: Any):
        super().__init__(**kwargs)
        self.machine = machine
        self.index = index
        self.line = line

    def result(self) -> RunResult:
        """This item's param combination, explored once by its spec file (the item's parent)."""
        spec_file = self.parent
        assert isinstance(spec_file, SpecFile), "SpecFile.collect makes every item"
        return spec_file.result(self.index, self.machine)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, (self.line - 1) if self.line else None, f"haltproof: {self.name}"

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: TracebackStyle | None = None) -> str | TerminalRepr:
        if isinstance(excinfo.value, HaltproofFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


class PropertyItem(_Item):
    def __init__(self, *, prop_name: str, **kwargs: Any):
        super().__init__(**kwargs)
        self.prop_name = prop_name

    def runtest(self) -> None:
        from haltproof.machine.spec import shown_path
        from haltproof.properties.kinds import HOLDS, UNKNOWN, VIOLATED
        from haltproof.reports.findings import trace_text
        run = self.result()
        prop = next(p for p in run.properties if p.name == self.prop_name)
        where = f"{shown_path(run.spec_path)}:{prop.line or 1}"
        if prop.expected is True:
            return
        if prop.expected is False:
            raise HaltproofFailure(f"{where}: {prop.name} is {prop.status}, but the spec expects "
                                   f"it {'violated' if prop.status != VIOLATED else 'to hold'}: {prop.message}")
        if prop.status == HOLDS:
            return
        if prop.status == UNKNOWN:
            raise HaltproofFailure(f"{where}: {prop.name} is not proved: {prop.message}")
        traces = {name: trace.to_json() for name, trace in (("trace", prop.trace), ("other_trace", prop.other_trace))
                  if trace is not None}
        lines = [f"{where}: {prop.name} is violated: {prop.message}"]
        lines += ["  " + row for row in trace_text(traces).splitlines()]     # as every text report shows them
        raise HaltproofFailure("\n".join(lines))


class ScenarioItem(_Item):
    def __init__(self, *, scenario: str, **kwargs: Any):
        super().__init__(**kwargs)
        self.scenario = scenario

    def runtest(self) -> None:
        from haltproof.machine.spec import shown_path
        run = self.result()
        sc = next(s for s in run.scenarios if s.name == self.scenario)
        if not sc.ok:
            raise HaltproofFailure(f"{shown_path(run.spec_path)}:{self.line}: scenario "
                                   f"{self.scenario}: {sc.message}")
