"""Using haltproof from Python and inside ordinary tests.

    from haltproof.api import check

    def test_loop_stops():
        check("specs/loop_demo.yaml").assert_proved()

`check` runs exactly what `haltproof check` runs and returns a `Report`;
`assert_proved()` raises an AssertionError carrying the counterexample tables, so a
failing proof reads like any failing test. An invalid spec raises `SpecError`.

The spec loader, the engines (and numpy) and the report writers are imported inside the
functions that use them: `from haltproof import check` must cost nothing until a check
runs (tests/project/test_lazy_imports.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from haltproof.explorer.results import RunResult, RunVerdict
    from haltproof.machine.spec import Pins


@dataclass(frozen=True)
class Report:
    """What `check` found: a `RunResult` per param combination, in sweep order."""

    runs: list[RunResult]

    @property
    def result(self) -> RunVerdict:
        """proved | violated | incomplete: the same verdict as the CLI's exit code."""
        from haltproof.reports.report import overall
        return overall(self.runs)[0]

    @property
    def exit_code(self) -> int:
        from haltproof.reports.report import overall
        return overall(self.runs)[1]

    def to_json(self) -> dict[str, Any]:
        """The `haltproof-report/1` dict, as `haltproof check --format json` writes it."""
        from haltproof.reports.report import to_json
        return to_json(self.runs)

    def text(self, verbose: bool = True) -> str:
        """The text report: by default the full listing (every property, trace and warning),
        as `haltproof check --verbose` prints it; verbose=False gives the CLI's short default."""
        from haltproof.reports.text import render_text
        return render_text(self.to_json(), verbose=verbose)

    def assert_proved(self) -> None:
        """Raise AssertionError unless every run passes (proved, or violated exactly as expected)."""
        from haltproof.reports.report import to_json
        from haltproof.reports.text import render_text
        failing = [r for r in self.runs if r.verdict != "pass"]
        if failing:
            raise AssertionError(f"haltproof: {self.result}\n" + render_text(to_json(failing), verbose=True))


def check(spec: str | Path | type, *, params: Pins | None = None,
          properties: list[str] | None = None, max_states: int | None = None,
          timeout: float | None = None, max_memory: int | str | None = None,
          model: bool = False, determinism: str = "auto", paths: int = 1, workers: int | None = 1,
          run_code: bool = True, call_timeout: float | None = 60.0) -> Report:
    """Check a YAML spec (a path) or a `haltproof.machine.pymodel.Model` subclass, over every param
    combination or those `params` pins, and return the report.

    Options are checked before anything runs, as the command line checks its own:
    `max_states` a positive int, `timeout` a positive finite number of seconds, `max_memory`
    a positive number of bytes or a size such as "512M" (ValueError otherwise); each
    `params` value, or a non-empty list of distinct values, of the param's declared kind and
    range (SpecError otherwise: `True` is not 1; a bool or enum param takes True/False or
    one of its names). `determinism` and `paths` are the command
    line's `--determinism` and `--paths` (bound code only; docs/how-to/binding.md). `workers` is the
    command line's `-j`: the runs of a sweep checked in that many processes, with the same
    report (default 1, in this process; None: every core; docs/how-to/scaling.md). `run_code=False` is
    the command line's `--no-code`: none of the spec's code is imported (docs/how-to/trust.md); a
    Python model, a framework declaration or a bound action without stages is a SpecError.

    `timeout` bounds the whole check, the user's bound code or model included: hitting it
    makes the report incomplete. When it passes while that code is still being loaded (an
    import, creating the adapter or model), there is no report: TimeoutError. `call_timeout`
    bounds each call into that code (machine/usercode.py's CALL_TIMEOUT, 60 s, by default; None:
    no bound; in the main thread only, where signals are, or off it together with `timeout`): a
    call that does not return within it is a `bound_code` finding, and the run stops there
    (docs/how-to/binding.md)."""
    from haltproof.explorer.check import prepare, prepare_python
    from haltproof.explorer.options import Options
    from haltproof.explorer.parallel import Batch, Source, check_batches, default_workers, model_source
    from haltproof.machine import usercode
    from haltproof.machine.spec import load_spec
    from haltproof.machine.trust import MODEL, NO_CODE
    from haltproof.machine.usercode import OutOfTime, Stuck
    options = Options(pins={} if params is None else params, properties=properties,
                      max_states=max_states, timeout=timeout, max_memory=max_memory, model_only=model,
                      run_code=run_code,
                      determinism=determinism, paths=paths, call_timeout=call_timeout,
                      workers=default_workers() if workers is None else workers)
    try:
        with usercode.deadline(options.timeout, options.call_timeout):
            if isinstance(spec, type):
                batch = Batch(model_source(spec), prepare_python(spec, options), options)
            else:
                loaded = load_spec(spec, run_code and not model, mode=MODEL if run_code else NO_CODE)
                batch = Batch(Source(path=loaded.path), prepare(loaded, options), options)
            return Report(check_batches([batch], options.workers))
    except Stuck as stop:
        raise TimeoutError(f"haltproof: {stop.text()}; nothing was checked") from None
    except OutOfTime as stop:
        raise TimeoutError(f"haltproof: the timeout of {options.timeout:g} s passed while "
                           f"{stop.doing or 'running the user code'}; nothing was checked") from None
