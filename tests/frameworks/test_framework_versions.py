"""One supported range per framework, written once (pyproject.toml's framework extras) and
named alike everywhere: the `test` extra, the range the framework module enforces at run time
(read from haltproof's installed metadata), the oldest-versions CI run (scripts/test-oldest) and
the docs. In that CI run (HALTPROOF_OLDEST_FRAMEWORKS=1) the lowest versions are the installed ones."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT

spec = importlib.util.spec_from_file_location("framework_versions", ROOT / "scripts" / "framework_versions.py")
assert spec is not None and spec.loader is not None
fv = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fv)

from haltproof.frameworks import declaration  # noqa: E402

# extra -> (module, dist, the require_* function's module attribute)
EXPECTED = {"langgraph": ("langgraph", "langgraph"), "openai-agents": ("openai_agents", "openai-agents"),
            "pydantic-ai": ("pydantic_ai", "pydantic-ai-slim"), "adk": ("adk", "google-adk"),
            "crewai": ("crewai", "crewai")}
OWN_VENV = ["crewai"]       # tested by scripts/test-crewai: its pins conflict with the `test` extra's
SHARED = sorted(set(EXPECTED) - set(OWN_VENV))
RANGES = fv.frameworks()
OLDEST = os.environ.get("HALTPROOF_OLDEST_FRAMEWORKS") == "1"


def test_every_framework_module_has_an_extra_written_low_high():
    assert {extra: dist for extra, (dist, _, _) in RANGES.items()} == {e: d for e, (_, d) in EXPECTED.items()}
    assert fv.own_venv() == OWN_VENV and sorted(fv.shared()) == SHARED


def test_a_framework_of_its_own_venv_is_tested_there_with_its_extra():
    """CrewAI is in no shared venv: not in `test`, not in the oldest run; scripts/test-crewai installs
    its extra and runs its tests at the range's lowest release, then at its newest, and CI runs it."""
    dist, low, high = RANGES["crewai"]
    assert fv.extras()["crewai"] == [f"{dist}>={low},<{high}"]
    assert not [r for r in fv.extras()["test"] if r.startswith("crewai")]
    assert not [r for r in fv.requirements() if r.startswith("crewai")]
    assert not [t for t in fv.tests() if "crewai" in t]
    script = (ROOT / "scripts" / "test-crewai").read_text()
    assert "pip install --quiet '.[crewai]' \"crewai==$low\" \"${runners[@]}\" jsonschema" in script     # the lowest
    assert 'pip install --quiet --upgrade "$crewai"' in script                                       # then the newest
    assert script.count("python -m pytest -q -n auto tests/frameworks/test_crewai.py "
                        "tests/frameworks/test_framework_versions.py -k crewai") == 2
    assert 'HALTPROOF_CREWAI_VENV="$venvs/crewai" scripts/test-crewai' in (ROOT / ".ci" / "run").read_text()


@pytest.mark.parametrize("extra", SHARED)
def test_the_test_extra_names_the_frameworks_range_as_its_extra_does(extra):
    dist, low, high = RANGES[extra]
    written = f"{dist}>={low},<{high}"
    assert fv.extras()[extra] == [written]
    assert [r for r in fv.extras()["test"] if re.split(r"[<>=;\s]", r, maxsplit=1)[0] == dist] == [written]


@pytest.mark.parametrize("extra", sorted(EXPECTED))
def test_the_module_enforces_the_range_pyproject_writes(extra, monkeypatch):
    """supported_range reads the installed metadata: a stale install (pyproject changed, not
    reinstalled) fails here. The lowest version passes, the one before it and HIGH are refused."""
    module, dist = EXPECTED[extra]
    _, low, high = RANGES[extra]
    shown = f">={low},<{high}"
    assert declaration.supported_range(module, dist)[2] == shown
    for version in (low, f"{low}.post1" if low.count(".") == 2 else f"{low}.5"):
        monkeypatch.setattr(importlib.metadata, "version", lambda name, v=version: v)
        assert declaration.require_version(module, dist, "it") == version
    below = [int(n) for n in low.split(".")]
    below[-1] -= 1
    for version in (".".join(map(str, below)) if below[-1] >= 0 else "0.0.1", high, f"{high}.0.1"):
        monkeypatch.setattr(importlib.metadata, "version", lambda name, v=version: v)
        with pytest.raises(RuntimeError) as refused:
            declaration.require_version(module, dist, "it")
        assert str(refused.value) == f"haltproof.frameworks.{module} supports {dist} {shown}; {dist} {version} is installed"


def test_release_numbers_compare_as_pep_440_does():
    assert declaration.release("1.2.24") == (1, 2, 24)
    assert declaration.release("1.2") == declaration.release("1.2.0") == (1, 2)
    assert declaration.release("1.3.0rc1") == (1, 3)
    assert declaration.release("0.24.0") < declaration.release("0.24.1") < declaration.release("0.25")


def test_the_oldest_run_installs_each_frameworks_lowest_version_and_runs_every_framework_test():
    assert fv.requirements()[:4] == [f"{dist}=={low}" for dist, low, _ in fv.shared().values()]
    assert set(fv.requirements()[4:]) == {r for r in fv.extras()["test"] if r.startswith("pytest")}
    assert {"tests/frameworks/test_langgraph.py", "tests/frameworks/test_framework_declaration.py",
            "tests/frameworks/test_framework_versions.py", "tests/frameworks/test_openai_agents.py",
            "tests/frameworks/test_pydantic_ai.py", "tests/frameworks/test_adk.py"} <= set(fv.tests())
    script = (ROOT / "scripts" / "test-oldest").read_text()
    assert "python3 scripts/framework_versions.py requirements" in script
    assert 'HALTPROOF_OLDEST_FRAMEWORKS=1 python -m pytest -q -n auto --dist loadgroup "${tests[@]}" "$@"' in script
    assert 'framework_versions.py tests ${HALTPROOF_TESTED_PYTHON:+--tested-by "$HALTPROOF_TESTED_PYTHON"}' in script
    ran = subprocess.run([sys.executable, str(ROOT / "scripts" / "framework_versions.py"), "nonsense"],
                         capture_output=True, text=True, timeout=60)
    assert ran.returncode == 1 and "usage: python3 scripts/framework_versions.py requirements|tests [--tested-by PYTHON]" in ran.stderr


def test_the_oldest_run_leaves_out_a_framework_already_tested_at_its_lowest_version(monkeypatch):
    """CI's first venv has the newest versions; where a range's newest is its lowest (one release
    so far) that framework's tests already ran at the lowest version and are not run twice."""
    lowest = {dist: low for dist, low, _ in fv.shared().values()}
    monkeypatch.setattr(fv, "installed", lambda python, dist: lowest[dist] + ".0")       # 0.24.0 is 0.24
    assert fv.tests("py") == []
    monkeypatch.setattr(fv, "installed", lambda python, dist: lowest[dist] if dist != "langgraph" else "1.2.24")
    assert fv.tests("py") == ["tests/frameworks/test_framework_declaration.py",
                              "tests/frameworks/test_framework_versions.py", "tests/frameworks/test_langgraph.py",
                              "tests/frameworks/test_langgraph_trees.py"]
    # not installed there, or a pre-release of the lowest: not tested at the lowest version
    monkeypatch.setattr(fv, "installed", lambda python, dist: "" if dist == "pydantic-ai-slim" else lowest[dist])
    assert fv.tests("py") == ["tests/frameworks/test_framework_declaration.py",
                              "tests/frameworks/test_framework_versions.py", "tests/frameworks/test_pydantic_ai.py",
                              "tests/frameworks/test_pydantic_ai_declaration.py",
                              "tests/frameworks/test_pydantic_ai_trees.py"]
    monkeypatch.setattr(fv, "installed", lambda python, dist: lowest[dist] + "rc1")
    assert fv.tests("py") == fv.tests()


def test_the_oldest_run_reads_the_versions_the_tested_venv_has():
    """The real probe, on this interpreter: the files left are those of the frameworks whose
    installed version here is not their lowest."""
    ran = subprocess.run([sys.executable, str(ROOT / "scripts" / "framework_versions.py"), "tests",
                          "--tested-by", sys.executable], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    differ = [extra for extra, (dist, low, _) in fv.shared().items()
              if declaration.release(importlib.metadata.version(dist)) != declaration.release(low)]
    expected = sorted({str(p.relative_to(ROOT)) for extra in differ
                       for p in (ROOT / "tests" / "frameworks").glob(f"test_{extra.replace('-', '_')}*.py")}
                      | ({"tests/frameworks/test_framework_declaration.py",
                          "tests/frameworks/test_framework_versions.py"} if differ else set()))
    assert ran.stdout.split() == expected
    missing = subprocess.run([sys.executable, str(ROOT / "scripts" / "framework_versions.py"), "tests",
                              "--tested-by", str(ROOT / "no-such-python")], capture_output=True, text=True, timeout=60)
    assert missing.returncode == 1
    assert missing.stderr.strip() == (f"{ROOT / 'no-such-python'}: cannot run it to read the installed version "
                                      f"of langgraph: No such file or directory")
    failing = subprocess.run([sys.executable, str(ROOT / "scripts" / "framework_versions.py"), "tests",
                              "--tested-by", "false"], capture_output=True, text=True, timeout=60)
    assert (failing.returncode, failing.stderr.strip()) == (
        1, "false: cannot read the installed version of langgraph: it exited with 1")
    empty = subprocess.run([sys.executable, str(ROOT / "scripts" / "framework_versions.py"), "tests",
                            "--tested-by", ""], capture_output=True, text=True, timeout=60)
    assert (empty.returncode, empty.stderr.strip()) == (1, "--tested-by needs a Python to run, not an empty path")


@pytest.mark.parametrize("extra", sorted(EXPECTED))
def test_the_installed_framework_is_in_its_range_and_the_lowest_in_the_oldest_run(extra):
    module, dist = EXPECTED[extra]
    if extra in OWN_VENV and importlib.util.find_spec(module) is None:
        pytest.skip(f"{dist} is installed and tested in scripts/test-{extra}'s venv")
    _, low, _ = RANGES[extra]
    version = declaration.require_version(module, dist, "it")
    if OLDEST:
        assert declaration.release(version) == declaration.release(low), f"the oldest run installed {dist} {version}"


@pytest.mark.parametrize("extra", sorted(EXPECTED))
def test_the_docs_name_each_range(extra):
    """Each framework's page (docs/how-to/EXTRA.md) names its range as the extra writes it."""
    dist, low, high = RANGES[extra]
    assert f">={low},<{high}`" in (ROOT / "docs" / "how-to" / f"{extra}.md").read_text(), extra
