"""The mutation-testing configuration (pyproject.toml `[tool.mutmut]`, docs/explanation/mutation-testing.md)
still names the verdict path as it is: every file exists, none is missing, nothing else is
mutated, and each mutant runs every fast test that reaches it, whatever its marker. The campaign
itself is too slow for every CI run; this keeps it runnable."""

from __future__ import annotations

import sys
import tomllib

import pytest

from conftest import ROOT

if str(ROOT) not in sys.path:  # bench/ is not installed: it runs from the repo root
    sys.path.insert(0, str(ROOT))

from bench import mutation

CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())
MUTMUT = CONFIG["tool"]["mutmut"]

# The modules that decide a verdict (issue 18): the spec and its expressions, the compiled
# and vectorized machine with its widths, bound code and Python models, the monitors of
# patterns and past-time operators, every property analysis, both engines with the vector
# engine's visited sets, the parallel runs' merge and the check runner. A new module of
# properties/ joins by itself.
NAMED = ["machine/spec.py", "machine/specdata.py", "machine/load_base.py", "machine/load_params.py",
         "machine/load_vars.py", "machine/load_choices.py", "machine/load_actions.py", "machine/load_properties.py",
         "machine/load_scenarios.py", "machine/expr.py", "machine/compiled.py", "machine/sweep.py", "machine/fold.py",
         "machine/astgen.py", "machine/vectorize.py",
         "machine/ranges.py", "machine/binding.py", "machine/pymodel.py", "machine/weights.py",
         "machine/patterns.py", "machine/liveness.py", "machine/pasttime.py",
         "explorer/engine.py", "explorer/vengine.py", "explorer/codeset.py", "explorer/parallel.py",
         "explorer/check.py", "explorer/options.py", "explorer/results.py", "explorer/judging.py",
         "explorer/chances.py", "explorer/acknowledged.py"]


def verdict_path_now() -> set[str]:
    properties = {f"properties/{p.name}" for p in (ROOT / "properties").glob("*.py") if p.name != "__init__.py"}
    return set(NAMED) | properties


def test_every_mutated_file_exists():
    missing = [f for f in MUTMUT["only_mutate"] if not (ROOT / f).is_file()]
    assert missing == []


def test_the_configuration_names_exactly_the_verdict_path():
    listed = MUTMUT["only_mutate"]
    assert len(listed) == len(set(listed))
    assert set(listed) == verdict_path_now()
    assert mutation.verdict_path() == listed


def test_every_mutated_file_lies_in_a_copied_source_path():
    roots = set(MUTMUT["source_paths"])
    assert {f.split("/")[0] for f in MUTMUT["only_mutate"]} <= roots
    assert all((ROOT / p).is_dir() for p in roots)
    assert all((ROOT / p).exists() for p in MUTMUT["also_copy"])     # what the tests read


# The tests of the checkout itself: they read the source folders by path (layers, lint, this
# configuration), which the staged tree lays out as the package; none judges a verdict.
CHECKOUT_TESTS = ["tests/project/test_layers.py", "tests/project/test_hygiene.py",
                  "tests/reports/test_report_layers.py", "tests/project/test_mutation_config.py",
                  "tests/project/test_mutation_guard.py"]
# Tests that fail in the staged tree with no mutant applied (a prefix ending in `[` deselects every
# parametrization): mutmut's trampoline frames enter the user traceback the first one pins whole,
# and the second compares a worker's (unrecorded) with the recording process's; the third bounds a
# whole check by 1 s of wall time, which the slowed staged tree exceeds on a busy machine; the last
# three set memory limits around the installed package's size, which the staged modules (every
# mutant's code in them) exceed tenfold. mutmut records no pool while one fails.
STAGE_BOUND_TESTS = ["tests/machine/test_live_binding.py::"
                     "test_a_close_that_raises_in_a_worker_shows_the_users_traceback_alone",
                     "tests/explorer/test_parallel_bound.py::"
                     "test_a_violation_found_in_a_worker_has_the_serial_trace[broken_decides:Crashing]",
                     "tests/cli/test_supervise.py::test_code_that_ignores_the_timeout_is_stopped_by_the_supervisor[",
                     "tests/cli/test_cli.py::test_max_memory_stops_a_large_exploration_before_it_is_done[",
                     "tests/explorer/test_vector_memory.py::"
                     "test_a_param_pinned_huge_under_an_address_space_limit_explores_to_max_states",
                     "tests/explorer/test_vector_memory.py::"
                     "test_past_time_operators_nested_deep_under_an_address_space_limit_run_out_of_memory_cleanly"]


def test_each_mutant_runs_every_fast_test_that_reaches_it_whatever_its_marker():
    """Issue 26: the selection was `-m verdict`, so fast tests without the marker that catch a
    false proof (a dropped link of a chained comparison, a range choice without its max, ...)
    were never run against a mutant and the score did not see them. Now every test but the
    slow ones and the Dask cluster's is in the pool (mutmut runs, per mutant, those of the pool
    that reach its function); only the checkout's own tests are left out, and the few that
    fail in the staged tree with no mutant applied, each for its reason (STAGE_BOUND_TESTS)."""
    selection = MUTMUT["pytest_add_cli_args_test_selection"]
    assert selection[:3] == ["-m", "not slow and not dask", "tests"]
    assert selection[3:] == ([f"--ignore={path}" for path in CHECKOUT_TESTS]
                             + [f"--deselect={test}" for test in STAGE_BOUND_TESTS])
    for test in STAGE_BOUND_TESTS:                      # each still a test of the checkout's suite
        path, _, name = test.partition("::")
        assert f"def {name.partition('[')[0]}(" in (ROOT / path).read_text(), test
    marked = "pytest.mark." + "verdict"                 # spelt apart: this file holds it too
    for path in CHECKOUT_TESTS:
        assert marked not in (ROOT / path).read_text(), path
    markers = {m.split(":")[0] for m in CONFIG["tool"]["pytest"]["ini_options"]["markers"]}
    assert {"slow", "dask", "verdict"} <= markers


def test_mutant_names_and_source_lines_are_read_back():
    """The report keys each survivor by the line it changes: mutmut's names map back."""
    assert mutation.mutant_prefix("machine/ranges.py") == "haltproof.machine.ranges."
    line = mutation._line_of("machine/ranges.py", "haltproof.machine.ranges.xǁ_Rangesǁof__mutmut_3",
                             "self.widest = max(self.widest, abs(b[0]), abs(b[1]))")
    text = (ROOT / "machine" / "ranges.py").read_text().splitlines()[line - 1]
    assert text.strip() == "self.widest = max(self.widest, abs(b[0]), abs(b[1]))"
    assert mutation._line_of("machine/compiled.py", "haltproof.machine.compiled.x__choice_items__mutmut_1",
                             "return list(cs.items)") is not None


def test_the_staged_tree_keeps_every_folder_the_tests_read_by_path():
    """Tests read specs/ and harness/ by path (`ROOT / "specs" / "budget_runner.yaml"`); both
    are also layers, staged as the package. Leaving them out of the top of the staged tree
    made every mutation run stop while collecting tests ("no such file")."""
    tops = set(mutation._top_level())
    assert {"specs", "harness", "tests", "docs", "bench", "README.md"} <= tops
    assert not tops & set(MUTMUT["source_paths"])        # the mutated code exists once, mutated


def test_what_the_checkout_no_longer_has_is_pruned_from_the_stage(tmp_path):
    """Copies never delete: when the tests moved into layer folders, the old flat files stayed
    in the stage and in mutmut's copy, and the pool collected them beside the moved ones."""
    def tree(root, files):
        for name in files:
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text("")
    checkout, stage = tmp_path / "checkout", tmp_path / "stage"
    tree(checkout, ["tests/machine/test_spec.py", "tests/conftest.py", "haltproof/api.py"])
    tree(stage, ["tests/machine/test_spec.py", "tests/conftest.py", "tests/test_spec_kills.py",
                 "tests/old/test_gone.py", "tests/__pycache__/x.pyc", "haltproof/api.py", "haltproof/api.py.meta",
                 "haltproof/gone.py", "haltproof/gone.py.meta", "haltproof/gone.py.spans",
                 "haltproof/machine/spec.py"])
    mutation._prune(stage / "tests", checkout / "tests")
    mutation._prune(stage / "haltproof", checkout / "haltproof", {stage / "haltproof" / "machine"})
    left = sorted(str(p.relative_to(stage)) for p in stage.rglob("*") if p.is_file())
    assert left == ["haltproof/api.py", "haltproof/api.py.meta", "haltproof/machine/spec.py",
                    "tests/__pycache__/x.pyc", "tests/conftest.py", "tests/machine/test_spec.py"]
    assert not (stage / "tests" / "old").exists()                   # emptied: gone too


def test_the_survivors_of_a_saved_report_are_read_back_by_module():
    """`--survivors-from`: a report's survivor rows give mutmut's full names, for the modules asked only."""
    report = mutation.report([
        mutation.Mutant("haltproof.machine.binding.x__value_text__mutmut_7", "machine/binding.py", "survived", 491,
                        'return "false"', 'return "XXfalseXX"'),
        mutation.Mutant("haltproof.machine.binding.xǁAdapterǁstrategy__mutmut_1", "machine/binding.py",
                        "no tests"),
        mutation.Mutant("haltproof.machine.binding.x__value_text__mutmut_1", "machine/binding.py", "killed"),
        mutation.Mutant("haltproof.explorer.check.x__seconds__mutmut_2", "explorer/check.py", "survived", 480,
                        "a | b", "a"),
    ], ["machine/binding.py", "explorer/check.py"], None)
    assert mutation.survivors_in(report, ["machine/binding.py"]) == [
        "haltproof.machine.binding.x__value_text__mutmut_7", "haltproof.machine.binding.xǁAdapterǁstrategy__mutmut_1"]
    assert mutation.survivors_in(report, ["explorer/check.py"]) == ["haltproof.explorer.check.x__seconds__mutmut_2"]
    assert mutation.survivors_in(report, ["machine/ranges.py"]) == []


def test_a_sample_draws_each_modules_mutants_at_random_without_repeats(monkeypatch):
    names = {"machine/ranges.py": [f"haltproof.machine.ranges.x_f__mutmut_{i}" for i in range(1, 101)],
             "machine/fold.py": [f"haltproof.machine.fold.x_g__mutmut_{i}" for i in range(1, 6)]}
    monkeypatch.setattr(mutation, "mutant_names", lambda module: names[module])
    drawn = mutation.sample(list(names), 10, seed=18)
    assert len(drawn["machine/ranges.py"]) == len(set(drawn["machine/ranges.py"])) == 10
    assert set(drawn["machine/ranges.py"]) <= set(names["machine/ranges.py"])
    assert drawn["machine/fold.py"] == names["machine/fold.py"]              # fewer than 10: all of them
    assert drawn == mutation.sample(list(names), 10, seed=18)                 # the same seed, the same sample
    assert drawn["machine/ranges.py"] != mutation.sample(list(names), 10, seed=19)["machine/ranges.py"]


def test_a_sampled_score_comes_with_its_95_percent_wilson_interval():
    low, high = mutation.wilson(57, 60)
    assert (round(low, 4), round(high, 4)) == (0.863, 0.9829)
    low, high = mutation.wilson(60, 60)
    assert high == 1.0 and round(low, 4) == 0.9398                        # inside [0, 1], not 1.0 +- 0
    assert mutation.wilson(0, 0) == (0.0, 1.0)                              # nothing tested: nothing known


def test_a_sampled_report_shows_each_modules_share_and_the_weighted_estimate():
    mutants = ([mutation.Mutant(f"haltproof.machine.ranges.x_f__mutmut_{i}", "machine/ranges.py", "killed")
                for i in range(9)]
               + [mutation.Mutant("haltproof.machine.ranges.x_f__mutmut_9", "machine/ranges.py", "survived", 3, "a", "b")]
               + [mutation.Mutant(f"haltproof.machine.fold.x_g__mutmut_{i}", "machine/fold.py", "killed")
                  for i in range(5)])
    text = mutation.report(mutants, ["machine/ranges.py", "machine/fold.py"], None,
                           {"machine/ranges.py": 300, "machine/fold.py": 100})
    assert "| machine/ranges.py | 10 of 300 | 9 | 1 | 0 | 90.0% | 59.6-98.2% |" in text
    assert "| machine/fold.py | 5 of 100 | 5 | 0 | 0 | 100.0% | 56.6-100.0% |" in text
    # 0.75 * 0.9 + 0.25 * 1.0
    assert "Estimated over all 400 mutants (each module's score weighted by its number of mutants): 92.5% killed" in text
    assert "| machine/ranges.py | 3 | x_f__mutmut_9 | survived | `a` -> `b` |" in text


def test_a_bad_option_is_a_usage_error_before_anything_is_staged(capsys):
    """Refused before the checkout is copied or mutmut started: exit 2 and the reason."""
    for argv, reason in [(["--sample", "0"], "--sample takes a count of at least 1"),
                         (["--sample", "5", "--survivors"], "goes with none of --resume, --survivors"),
                         (["--workers", "0"], "--workers must be at least 1, not 0"),
                         (["--module", "nope.py"], "not on the verdict path (pyproject.toml [tool.mutmut] only_mutate): nope.py")]:
        with pytest.raises(SystemExit) as stopped:
            mutation.main(argv)
        assert stopped.value.code == 2
        assert reason in capsys.readouterr().err
