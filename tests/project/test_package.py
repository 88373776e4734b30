"""One import package: `pip install haltproof` puts `haltproof` and nothing else at the top of
site-packages, the public API imports, and a user's own `harness` or `machine` can never be
picked up in place of ours (nor ours in place of theirs)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import haltproof
from conftest import ROOT

# one pytest-xdist worker for the whole module (scripts/test: --dist loadgroup):
# the wheel (a module fixture) is built once
pytestmark = pytest.mark.xdist_group("wheel")


def test_the_public_api_is_importable_from_the_top():
    for name in haltproof.__all__:
        assert getattr(haltproof, name) is not None, name
    assert callable(haltproof.check) and callable(haltproof.load_spec)
    assert issubclass(haltproof.SpecError, Exception)
    assert haltproof.__version__ and haltproof.__version__ != "0+unknown"


def test_the_version_is_the_distributions():
    from importlib import metadata
    assert haltproof.__version__ == metadata.version("haltproof")
    ran = subprocess.run([sys.executable, "-m", "haltproof", "--version"], capture_output=True, text=True)
    assert (ran.returncode, ran.stdout) == (0, f"haltproof {haltproof.__version__}\n")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    # a copy of the checkout: a `build/` left by an older install would leak into the wheel. The
    # caches are left out too: other test processes (pytest -n) write into them during the copy.
    src = out / "src"
    shutil.copytree(ROOT, src, ignore=lambda folder, names: [
        n for n in names if n in {".git", ".venv", "build", "__pycache__", ".hypothesis", ".mypy_cache",
                                  ".pytest_cache", ".ruff_cache"}
        or n.endswith(".egg-info") or (Path(folder) == ROOT and n == "mutants")])
    ran = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                          "-q", "-w", str(out), str(src)], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    (path,) = out.glob("haltproof-*.whl")
    return zipfile.ZipFile(path)


@pytest.mark.slow
def test_the_wheel_installs_only_the_haltproof_package(wheel):
    tops = {name.split("/")[0] for name in wheel.namelist()}
    dist_info = {t for t in tops if t.endswith(".dist-info")}
    assert tops - dist_info == {"haltproof"}
    (info,) = dist_info
    names = set(wheel.namelist())
    record = wheel.read(f"{info}/RECORD").decode()
    assert {line.split("/")[0] for line in record.splitlines()} - dist_info == {"haltproof"}
    if f"{info}/top_level.txt" in names:
        assert wheel.read(f"{info}/top_level.txt").decode().split() == ["haltproof"]


@pytest.mark.slow
def test_the_wheel_ships_the_specs_the_seed_harness_the_type_marker_and_the_report_schema(wheel):
    names = set(wheel.namelist())
    for path in ("haltproof/py.typed", "haltproof/report.schema.json", "haltproof/specs/loop_demo.yaml", "haltproof/specs/mutants/__init__.py",
                 "haltproof/harness/02_stop_policy.json", "haltproof/harness/budget/binding.py",
                 "haltproof/machine/spec.py", "haltproof/cli/main.py", "haltproof/properties/kinds.py"):
        assert path in names, path


def test_a_users_own_harness_and_machine_are_never_picked_up(tmp_path):
    """An agent project often has its own `harness/` or `machine.py`, first on the path."""
    for name in ("harness", "machine", "explorer", "properties"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(f"raise ImportError('the decoy {name} was imported')\n")
    (tmp_path / "haltproof_specs.py").write_text("raise ImportError('the decoy specs were imported')\n")
    ran = subprocess.run([sys.executable, "-m", "haltproof", "check", "--verbose", "-p", "max_steps=2", "-p", "max_retries=0",
                          str(ROOT / "specs" / "loop_demo.yaml")],
                         cwd=tmp_path, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "decoy" not in ran.stdout + ran.stderr
    assert "(checked the bound code: haltproof.harness.loop_binding:LoopDemoAdapter)" in ran.stdout
    # and ours does not shadow theirs: the user's package is the one `import harness` finds
    probe = subprocess.run([sys.executable, "-c", "import haltproof.harness.loop, harness"], cwd=tmp_path,
                           env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
                           capture_output=True, text=True)
    assert "the decoy harness was imported" in probe.stderr


def test_the_api_page_example_runs_as_written(tmp_path):
    import re
    page = (ROOT / "docs" / "reference" / "api.md").read_text()
    (code,) = re.findall(r"```python\n(.*?)```", page, re.S)
    (tmp_path / "example.py").write_text(code)
    ran = subprocess.run([sys.executable, "example.py"], cwd=tmp_path, capture_output=True, text=True)
    assert (ran.returncode, ran.stderr) == (0, "")
