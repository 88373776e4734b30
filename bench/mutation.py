"""Mutation testing of the verdict path (issue 18): mutmut over the modules that decide a
verdict, each mutant judged by every fast test that reaches the mutated function (whatever
its marker), and a report of the score per module with every survivor.

Run from the repository root, with the extra installed (`pip install -e '.[test,mutation]'`):

    python -m bench.mutation                      # the whole verdict path, then the report
    python -m bench.mutation --module machine/ranges.py      # one module at a time
    python -m bench.mutation --resume             # go on with the mutants not tested yet
    python -m bench.mutation --resume --module machine/compiled.py   # ... of one module
    python -m bench.mutation --survivors          # test again only the last run's survivors
    python -m bench.mutation --survivors-from OLD.md --module machine/binding.py   # those of a saved report
    python -m bench.mutation --report-only        # the report of the last run, no run
    python -m bench.mutation --sample 60          # 60 mutants of each module, drawn at random:
                                                  # each module's score estimated, with its 95% interval

What is mutated and which tests run is the `[tool.mutmut]` table of pyproject.toml;
tests/project/test_mutation_config.py keeps it naming exactly the verdict-path files. mutmut
works in build/mutation/ (git-ignored; see STAGE below) and keeps each mutant's result there. A run
tests again every mutant of the modules it names (so the results follow the current
tests); --resume tests only those without a result (an interrupted campaign). The report
goes to stdout and to bench/results/mutation.md; docs/explanation/mutation-testing.md says why each accepted
survivor is accepted.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import json
import math
import os
import random
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results" / "mutation.md"
KILLED = {"killed", "timeout", "caught by type check", "segfault"}   # the tests stopped the mutant


# mutmut names a mutant after its file's path (`src.` stripped) and matches it against the
# module the tests imported; the checkout's folders become haltproof.machine, ... only through
# setuptools' package-dir mapping, which mutmut does not read. So it works in a staged copy laid
# out as the installed package: src/haltproof/machine/spec.py is haltproof.machine.spec there.
STAGE = REPO / "build" / "mutation"                     # git-ignored


def _layers(pyproject: Path = REPO / "pyproject.toml") -> list[str]:
    """The checkout's folders that are subpackages of haltproof ([tool.setuptools.package-dir]).
    All of them are staged: one left out (reports/, cli/ once) is imported from the checkout
    through the editable install instead, so edits made during a run would reach the mutants."""
    dirs = tomllib.loads(pyproject.read_text())["tool"]["setuptools"]["package-dir"]
    return [folder for name, folder in dirs.items() if name.startswith("haltproof.")]


LAYERS = _layers()
STAGED = {"src/haltproof": "src/haltproof", **{f"src/haltproof/{layer}": layer for layer in LAYERS}}


def _top_level() -> list[str]:
    """The checkout's tracked top-level entries but the mutated source folders: tests read many
    of them by path, layers included (`ROOT / "specs" / "budget_runner.yaml"`, harness/), so a
    layer is staged twice, as the package and at the top. Only the folders mutmut mutates
    (`source_paths`) are left out, so the one copy of their code is the mutated one."""
    names = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    mutated = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mutmut"]["source_paths"])
    return sorted({n.split("/")[0] for n in names.splitlines()} - mutated - {"src", "pyproject.toml"})


def verdict_path(pyproject: Path = REPO / "pyproject.toml") -> list[str]:
    """The files mutated (checkout paths): `only_mutate` of `[tool.mutmut]`."""
    return list(tomllib.loads(pyproject.read_text())["tool"]["mutmut"]["only_mutate"])


def staged(path: str) -> str:
    """Where a checkout file of a layer lies in the staged tree."""
    return f"src/haltproof/{path}"


def mutant_prefix(path: str) -> str:
    """mutmut's names of the mutants of `path` start with its module name and a dot."""
    return "haltproof." + path.removesuffix(".py").replace("/", ".") + "."


NOT_STAGED = ("__pycache__", "results")      # never copied, so never pruned


def stage() -> None:
    """Copy the checkout into STAGE as the installed layout, with a pyproject.toml whose
    `[tool.mutmut]` names the staged files. Copies keep their times, so mutmut keeps the
    mutants of every file that did not change; what the checkout no longer has is pruned
    from the stage and from mutmut's copy of it."""
    tops = _top_level()
    mapping = {**STAGED, **{name: name for name in tops}}
    for dst, src in mapping.items():
        source, target = REPO / src, STAGE / dst
        if source.is_dir():
            shutil.copytree(source, target, dirs_exist_ok=True, copy_function=shutil.copy2,
                            ignore=shutil.ignore_patterns(*NOT_STAGED))
            _prune(target, source, {STAGE / d for d in mapping if d != dst and d.startswith(dst + "/")})
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    for name in ["src", *tops]:                  # mutmut's copy: source_paths and also_copy
        _prune(STAGE / "mutants" / name, STAGE / name)
    text = (REPO / "pyproject.toml").read_text()
    for path in verdict_path():
        text = text.replace(f'"{path}"', f'"{staged(path)}"')
    text = text.replace('source_paths = ["machine", "properties", "explorer"]', 'source_paths = ["src"]')
    text = text.replace('also_copy = ["specs", "docs", "bench", "harness", "README.md"]',
                        f"also_copy = {json.dumps(tops)}")
    text = _with_guard(text)
    (STAGE / "pyproject.toml").write_text(text)


def _prune(copy: Path, original: Path, staged_apart: Collection[Path] = ()) -> None:
    """Delete the files of `copy` (a staged copy of `original`) that `original` no longer has,
    and the folders left empty. Copying never deletes: when the tests moved into layer
    folders, the old flat test files lingered in the stage and in mutmut's copy of it, and the
    pool collected every test twice, the stale ones importing helpers that had moved. mutmut's
    own files beside a module (`check.py.meta`, `.spans`) go with the module; `staged_apart`
    are folders of `copy` staged from elsewhere (a layer inside src/haltproof)."""
    if not copy.is_dir():
        return
    for path in sorted(copy.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        rel = path.relative_to(copy)
        if any(part in NOT_STAGED for part in rel.parts) or any(path.is_relative_to(s) for s in staged_apart):
            continue
        if path.is_dir():
            if not any(path.iterdir()):
                path.rmdir()
            continue
        kept = original / rel.parent / rel.name.removesuffix(".meta").removesuffix(".spans")
        if not kept.exists():
            path.unlink()


GUARD_ARGS = '"-p", "no:cacheprovider"'


def _with_guard(pyproject: str) -> str:
    """`pyproject` with bench/mutation_guard.py among mutmut's pytest plugins: a test stuck in
    a loop the mutant made endless ends in seconds as a timeout, not after mutmut's minutes."""
    line = f"pytest_add_cli_args = [{GUARD_ARGS}]"
    if line not in pyproject:
        raise SystemExit(f"pyproject.toml [tool.mutmut] no longer has `{line}`: "
                         "bench/mutation.py cannot add its guard plugin")
    return pyproject.replace(line, f'pytest_add_cli_args = [{GUARD_ARGS}, "-p", "bench.mutation_guard"]')


@dataclass
class Mutant:
    name: str
    module: str
    status: str
    line: int | None = None
    removed: str = ""
    added: str = ""

    @property
    def description(self) -> str:
        return f"`{self.removed}` -> `{self.added}`" if self.removed or self.added else "(no diff)"


def forget_stats() -> None:
    """Drop mutmut's record of which tests reach which function, so the run measures it again.
    mutmut 3.8 re-collects it only for tests it has not seen: after a source change, a new or
    moved function keeps no test ("no tests") and an old one keeps only the tests that reached
    it before, so its mutants run too few tests. Collecting it again costs one run of the
    verdict selection."""
    (STAGE / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)


def survivors_in(report_text: str, modules: list[str]) -> list[str]:
    """mutmut's names of the survivors (and "no tests") a report of `report()` lists for
    `modules`: what --survivors tests again when build/mutation/ holds no results of its own
    (a fresh checkout, a new worktree) but an earlier report is at hand (`git show`)."""
    names = []
    for row in report_text.splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) >= 4 and cells[0] in modules and "__mutmut_" in cells[2]:
            names.append(mutant_prefix(cells[0]) + cells[2])
    return names


# mutmut makes the mutants at the start of `mutmut run`; a sample needs their names before it.
# These are the steps of that start (mutmut 3.8's `_run`, pinned by the `mutation` extra).
MAKE_MUTANTS = """
import os, mutmut.__main__ as m
m.set_mutant_under_test("mutant_generation")
os.makedirs("mutants", exist_ok=True)
m.copy_src_dir(); m.copy_also_copy_files(); m.setup_source_paths(); m.store_lines_covered_by_tests()
m.create_mutants({workers})
"""


def make_mutants(workers: int) -> None:
    """The mutants of every verdict-path file, made (or kept, for a file that did not change) in STAGE."""
    subprocess.run([sys.executable, "-c", MAKE_MUTANTS.format(workers=workers)], cwd=STAGE, check=True)


def mutant_names(module: str) -> list[str]:
    """mutmut's names of every mutant of `module`, in their natural order."""
    meta = STAGE / "mutants" / (staged(module) + ".meta")
    return sorted(json.loads(meta.read_text())["exit_code_by_key"], key=_natural)


def untested(module: str) -> list[str]:
    """mutmut's names of the mutants of `module` without a result: what --resume --module goes on with."""
    meta = STAGE / "mutants" / (staged(module) + ".meta")
    if not meta.exists():
        return [mutant_prefix(module) + "*"]          # not even made yet: all of them
    codes = json.loads(meta.read_text())["exit_code_by_key"]
    return sorted((n for n, code in codes.items() if code is None), key=_natural)


def sample(modules: list[str], n: int, seed: int) -> dict[str, list[str]]:
    """`n` mutants of each module drawn uniformly at random without replacement (every one of a
    module with fewer), the same for the same seed and sources."""
    rng = random.Random(seed)
    out = {}
    for module in modules:
        names = mutant_names(module)
        out[module] = sorted(rng.sample(names, min(n, len(names))), key=_natural)
    return out


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of a proportion k/n: a sampled score's plausible range
    (unlike the normal approximation, it stays inside [0, 1] when nearly every mutant is killed)."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (0.0 if k == 0 else centre - half, 1.0 if k == n else centre + half)


def run_mutmut(names: list[str], workers: int) -> int:
    """One `mutmut run` of the mutants `names` (globs allowed); none: those not tested yet."""
    cmd = [sys.executable, "-m", "mutmut", "run", "--max-children", str(workers), *names]
    print("$", " ".join(cmd), flush=True)
    return subprocess.call(cmd, cwd=STAGE)


def collect(modules: list[str], only: set[str] | None = None) -> list[Mutant]:
    """Every mutant of `modules` with its status (of `only`, when given: a sample), and for a
    survivor its diff and line."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant
    from mutmut.stats import status_by_exit_code

    out = []
    for module in modules:
        meta = STAGE / "mutants" / (staged(module) + ".meta")
        if not meta.exists():
            continue
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        for name in sorted(codes, key=_natural):
            if codes[name] is None or (only is not None and name not in only):   # not tested yet
                continue
            m = Mutant(name, module, status_by_exit_code[codes[name]])
            if m.status not in KILLED:
                _describe(m, get_diff_for_mutant(name, path=Path(staged(module))))
            out.append(m)
    return out


def _natural(name: str) -> tuple:
    head, _, n = name.rpartition("_")
    return (head, int(n) if n.isdigit() else 0)


def _describe(m: Mutant, diff: str) -> None:
    """The changed lines of a mutant's diff, and the changed line's number in the source."""
    lines = diff.splitlines()[2:]
    m.removed = " / ".join(x[1:].strip() for x in lines if x.startswith("-"))
    m.added = " / ".join(x[1:].strip() for x in lines if x.startswith("+"))
    first = next((k for k, x in enumerate(lines) if x.startswith("-")), None)
    if first is not None and lines and lines[0].startswith("@@"):
        hunk = int(lines[0].split()[1].split(",")[0].lstrip("-"))      # "@@ -45,7 +45,7 @@"
        m.line = _line_of(m.module, m.name, lines[first][1:], hunk - 1 + first - 1)


def _line_of(module: str, mutant: str, text: str, offset: int = 0) -> int | None:
    """Where `text` (a line of the original function named in `mutant`, about `offset`
    lines into it) is in `module`: the nearest such line when the function has several."""
    key = mutant[len(mutant_prefix(module)):].rpartition("__mutmut_")[0]   # x_func or xǁClassǁmethod
    func = key.split("ǁ")[-1] if key.startswith("xǁ") else key.removeprefix("x_")
    source = (REPO / module).read_text()
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == func:
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            found += [(abs(k - (start - 1 + offset)), k + 1)
                      for k in range(start - 1, node.end_lineno or node.lineno)
                      if lines[k].strip() == text.strip()]
    return min(found)[1] if found else None


def report(mutants: list[Mutant], modules: list[str], seconds: float | None,
           population: dict[str, int] | None = None) -> str:
    """The score per module and the survivors, as markdown. `population`: the run tested a
    sample, and these are each module's mutants in all; each score is then an estimate, shown
    with its 95% interval, and the verdict path's is the modules' scores weighted by their size."""
    sampled = population is not None
    rows = ["| module | mutants | killed | survived | no test | score |" + (" 95% interval |" if sampled else ""),
            "|---|---:|---:|---:|---:|---:|" + ("---:|" if sampled else "")]
    total = killed = 0
    estimate = variance = 0.0
    everything = sum(population.values()) if population else 0
    for module in modules:
        ms = [m for m in mutants if m.module == module]
        k = sum(m.status in KILLED for m in ms)
        none = sum(m.status == "no tests" for m in ms)
        row = f"| {module} | {len(ms)} | {k} | {len(ms) - k - none} | {none} | {_pct(k, len(ms))} |"
        if population is not None:
            size = population[module]
            low, high = wilson(k, len(ms))
            row = row.replace(f"| {module} | {len(ms)} |", f"| {module} | {len(ms)} of {size:,} |", 1)
            row += f" {100 * low:.1f}-{100 * high:.1f}% |" if ms else " - |"
            if ms and everything:
                share, p = size / everything, k / len(ms)
                estimate += share * p
                fpc = (size - len(ms)) / (size - 1) if size > 1 else 0.0
                variance += share * share * p * (1 - p) / len(ms) * fpc
        rows.append(row)
        total, killed = total + len(ms), killed + k
    rows.append(f"| **verdict path** | {total} | {killed} | {total - killed} | | **{_pct(killed, total)}** |"
                + (" |" if sampled else ""))
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    head = [f"# Mutation testing of the verdict path ({when})", "",
            "Made by `python -m bench.mutation`; what the numbers mean and why each accepted survivor",
            "is accepted: docs/explanation/mutation-testing.md.", ""]
    if seconds is not None:
        head += [f"Run time: {seconds / 60:.1f} minutes.", ""]
    if sampled:
        half = 1.96 * math.sqrt(variance)
        head += [f"A sample: each module's mutants drawn at random. Estimated over all {everything:,} mutants "
                 f"(each module's score weighted by its number of mutants): {100 * estimate:.1f}% killed, "
                 f"95% interval {100 * max(0.0, estimate - half):.1f}-{100 * min(1.0, estimate + half):.1f}%.", ""]
    survivors = [m for m in mutants if m.status not in KILLED]
    body = ["", f"## Survivors ({len(survivors)})", "",
            "| module | line | mutant | status | mutation |", "|---|---:|---|---|---|"]
    body += [f"| {m.module} | {m.line or ''} | {m.name[len(mutant_prefix(m.module)):]} | {m.status} | "
             f"{_cell(m.description)} |" for m in survivors]
    return "\n".join(head + rows + body) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _pct(k: int, n: int) -> str:
    return f"{100 * k / n:.1f}%" if n else "-"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.mutation", description=__doc__.split("\n\n")[0])
    ap.add_argument("--module", action="append", help="a verdict-path file to mutate (repeatable; default all)")
    ap.add_argument("--workers", type=int, default=1, help="mutants tested at once (default 1)")
    ap.add_argument("--resume", action="store_true", help="test only the mutants without a result yet")
    ap.add_argument("--survivors", action="store_true", help="test again only the last run's survivors")
    ap.add_argument("--survivors-from", type=Path, metavar="REPORT",
                    help="test again the survivors an earlier report lists (with --module: of those modules)")
    ap.add_argument("--keep-stats", action="store_true",
                    help="keep mutmut's record of which tests reach which function (only when no source "
                         "changed since the last run: tests added since are still recorded)")
    ap.add_argument("--report-only", action="store_true", help="report the last run's results, run nothing")
    ap.add_argument("--sample", type=int, metavar="N",
                    help="test N mutants of each module drawn at random (all of a smaller module): "
                         "each score an estimate with its 95%% interval")
    ap.add_argument("--seed", type=int, default=18, help="the sample's random seed (default 18)")
    ap.add_argument("--out", type=Path, default=RESULTS, help=f"the report file (default {RESULTS.relative_to(REPO)})")
    args = ap.parse_args(argv)
    every = verdict_path()
    modules = args.module or every
    unknown = [m for m in modules if m not in every]
    if unknown:
        ap.error(f"not on the verdict path (pyproject.toml [tool.mutmut] only_mutate): {', '.join(unknown)}")
    if args.workers < 1:
        ap.error(f"--workers must be at least 1, not {args.workers}")
    if args.sample is not None and (args.sample < 1 or args.resume or args.survivors or args.survivors_from):
        ap.error("--sample takes a count of at least 1 and goes with none of --resume, --survivors, --survivors-from")
    stage()
    os.chdir(STAGE)                        # mutmut reads pyproject.toml and writes mutants/ here
    drawn: dict[str, list[str]] | None = None
    if args.sample is not None:
        make_mutants(args.workers)
        drawn = sample(modules, args.sample, args.seed)
    seconds = None
    if not args.report_only:
        started = time.monotonic()
        if args.resume and args.module:
            names = [n for m in modules for n in untested(m)]
            if not names:
                print("every mutant of these modules has a result")
        elif args.resume:
            names = []
        elif args.survivors or args.survivors_from:
            names = (survivors_in(args.survivors_from.read_text(), modules) if args.survivors_from
                     else [m.name for m in collect(modules) if m.status not in KILLED])
            if not names:
                print("no survivors to test again")
        elif drawn is not None:
            names = [name for chosen in drawn.values() for name in chosen]
        else:
            names = [mutant_prefix(m) + "*" for m in modules]
        if (names or (args.resume and not args.module)) and not args.keep_stats:
            forget_stats()
        code = run_mutmut(names, args.workers) if names or (args.resume and not args.module) else 0
        seconds = time.monotonic() - started
        if code != 0:
            print(f"mutmut exited with {code}", file=sys.stderr)
            return code
    if drawn is not None:
        population = {m: len(mutant_names(m)) for m in modules}
        text = report(collect(modules, {n for chosen in drawn.values() for n in chosen}), modules, seconds, population)
    else:
        text = report(collect(modules), modules, seconds)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
