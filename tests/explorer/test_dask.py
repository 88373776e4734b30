"""`--dask ADDRESS`: a sweep checked on a real Dask cluster gives the local report (explorer/cluster.py).

Each test starts its own cluster on 127.0.0.1 (a `dask scheduler` and two `dask worker`
processes, random free ports, one thread each, no dashboard, no nanny: a killed worker stays
dead) and tears it down whatever happens. `-m dask` selects them.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from haltproof.explorer import cluster as cluster_module

from conftest import LOOP_DEMO, MUTANTS, ROOT
from test_parallel import bound_to, untimed

distributed = pytest.importorskip("distributed")

pytestmark = [pytest.mark.dask, pytest.mark.slow]

START_SECONDS = 60      # how long the cluster may take to come up on a loaded machine (not a timing check)


@dataclass
class Cluster:
    address: str
    workers: list[subprocess.Popen[bytes]]
    dashboard: int | None = None       # the dashboard's port, when started with one
    worker_addresses: tuple[str, ...] = ()


def _dask(*args: str, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen([sys.executable, "-m", "dask", *args], cwd=ROOT, env=env,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def _written(file: Path) -> bool:
    """Whether the scheduler has written its whole file: it appears empty first (a read then
    failed with "Expecting value")."""
    try:
        return "address" in json.loads(file.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return False


@contextmanager
def _cluster(tmp_path: Path, dashboard: bool = False) -> Iterator[Cluster]:
    """A scheduler (with its dashboard on a free port if asked) and two single-threaded workers;
    their environment sees tests/ (the dying adapters) and this process's environment
    (HALTPROOF_TEST_MARKER)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")]))
    file = tmp_path / "scheduler.json"
    board = ["--dashboard-address", "127.0.0.1:0"] if dashboard else ["--no-dashboard"]
    procs = [_dask("scheduler", "--host", "127.0.0.1", "--port", "0", *board,
                   "--scheduler-file", str(file), env=env, log=tmp_path / "scheduler.log")]
    try:
        deadline = time.monotonic() + START_SECONDS
        while not _written(file) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _written(file), (tmp_path / "scheduler.log").read_text()
        address = json.loads(file.read_text())["address"]
        workers = [_dask("worker", address, "--nthreads", "1", "--no-nanny", "--no-dashboard",
                         "--host", "127.0.0.1", env=env, log=tmp_path / f"worker{i}.log") for i in range(2)]
        procs += workers
        with distributed.Client(address, timeout=START_SECONDS) as client:
            client.wait_for_workers(2, timeout=START_SECONDS)
            at = tuple(sorted(client.scheduler_info()["workers"]))
        yield Cluster(address, workers, json.loads(file.read_text())["services"].get("dashboard"), at)
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def test_a_sweep_on_dask_gives_the_local_report_and_a_killed_worker_loses_nothing(cli, tmp_path, monkeypatch):
    """On one cluster: the bundled loop_demo sweep (bound code) and the mutants (models) give the
    -j 1 report; then the bound code kills the worker checking max_steps=3 once, Dask runs it
    again on the other worker, and the report is still the local one."""
    marker = tmp_path / "died"
    monkeypatch.setenv("HALTPROOF_TEST_MARKER", str(marker))
    dying = bound_to(tmp_path, "dying_adapters:DiesOnce")
    with _cluster(tmp_path) as c:
        remote = cli("check", LOOP_DEMO, MUTANTS, "--dask", c.address, "--format", "json")
        assert not marker.exists()
        remote_dying = cli("check", dying, "--dask", c.address, "--format", "json")
        assert marker.exists(), "no worker was killed: the test proves nothing"
        assert sum(w.poll() is not None for w in c.workers) == 1
    local = cli("check", LOOP_DEMO, MUTANTS, "-j", "1", "--format", "json")
    assert local.code == remote.code == 0, remote.err
    assert len(remote.json()["runs"]) == 51
    assert untimed(remote.json()) == untimed(local.json())
    local_dying = cli("check", dying, "-j", "1", "--format", "json")
    assert local_dying.code == remote_dying.code == 0, remote_dying.err
    assert untimed(remote_dying.json()) == untimed(local_dying.json())


def test_a_cluster_that_loses_every_worker_is_incomplete_with_what_finished(cli, tmp_path, monkeypatch):
    """Both workers die on max_steps=3: those runs are incomplete (exit 3), no run is missing, and
    every run that finished is as the local check has it."""
    monkeypatch.setattr(cluster_module, "NO_WORKERS_SECONDS", 1.0)
    spec = bound_to(tmp_path, "dying_adapters:DiesOnDask")
    with _cluster(tmp_path) as c:
        remote = cli("check", spec, "--dask", c.address, "--format", "json")
        assert all(w.poll() is not None for w in c.workers)
    assert remote.code == 3
    runs = remote.json()["runs"]
    assert [(r["params"]["max_steps"], r["params"]["max_retries"]) for r in runs] == \
        [(s, r) for s in range(1, 6) for r in (0, 1)]
    lost = [r for r in runs if r.get("stopped_by") == "workers_lost"]
    assert {(r["params"]["max_steps"]) for r in lost} >= {3}
    assert all(r["stop_reason"].startswith("not checked: ") for r in lost)
    serial = cli("check", spec, "-j", "1", "--format", "json").json()["runs"]
    local = {json.dumps(r["params"]): untimed(r) for r in serial}
    finished = [r for r in runs if r not in lost]
    assert all(untimed(r) == local[json.dumps(r["params"])] for r in finished)


def _shared_levels(monkeypatch) -> list[int]:
    """Every level of a single bound run shared from the first one; the sizes of those shared."""
    from haltproof.explorer import parallel
    monkeypatch.setenv("HALTPROOF_IN_PROCESS", "1")    # the sharing is counted in this process (cli/supervise.py)
    monkeypatch.setattr(parallel, "SHARE_SECONDS", 0.0)
    shared: list[int] = []
    share = parallel.LevelSharer.share

    def counted(self, level):
        shared.append(len(level))
        share(self, level)
    monkeypatch.setattr(parallel.LevelSharer, "share", counted)
    return shared


PINNED = ("-p", "max_steps=3", "-p", "max_retries=1")


def test_a_single_bound_run_shared_on_dask_gives_the_local_report_and_a_killed_worker_loses_nothing(
        cli, tmp_path, monkeypatch):
    """One run of bound code, its levels' slices Dask tasks: the -j 1 report; then the first
    worker to concretize a state is killed, Dask runs its slice on the other, nothing is lost."""
    shared = _shared_levels(monkeypatch)
    marker = tmp_path / "died"
    monkeypatch.setenv("HALTPROOF_TEST_MARKER", str(marker))
    dying = bound_to(tmp_path, "dying_adapters:DiesOnce")
    with _cluster(tmp_path) as c:
        remote = cli("check", LOOP_DEMO, *PINNED, "--dask", c.address, "--format", "json")
        levels = list(shared)
        assert not marker.exists()
        remote_dying = cli("check", dying, *PINNED, "--dask", c.address, "--format", "json")
        assert marker.exists(), "no worker was killed: the test proves nothing"
        assert sum(w.poll() is not None for w in c.workers) == 1
    local = cli("check", LOOP_DEMO, *PINNED, "-j", "1", "--format", "json")
    assert local.code == remote.code == 0, remote.err
    (run,) = remote.json()["runs"]
    assert len(levels) == run["stats"]["max_depth"] + 1 and sum(levels) == run["stats"]["states"]
    assert untimed(remote.json()) == untimed(local.json())
    local_dying = cli("check", dying, *PINNED, "-j", "1", "--format", "json")
    assert local_dying.code == remote_dying.code == 0, remote_dying.err
    assert untimed(remote_dying.json()) == untimed(local_dying.json())


def test_a_single_bound_run_whose_cluster_loses_every_worker_is_incomplete(cli, tmp_path, monkeypatch):
    """Every worker that runs a slice dies: the run stops at the states no worker expanded,
    incomplete (exit 3), saying why; nothing explored before them is lost."""
    monkeypatch.setattr(cluster_module, "NO_WORKERS_SECONDS", 1.0)
    shared = _shared_levels(monkeypatch)
    spec = bound_to(tmp_path, "dying_adapters:DiesOnDask")
    with _cluster(tmp_path) as c:
        remote = cli("check", spec, *PINNED, "--dask", c.address, "--format", "json")
        assert all(w.poll() is not None for w in c.workers)
    assert remote.code == 3, remote.err
    (run,) = remote.json()["runs"]
    assert run["stopped_by"] == "workers_lost"
    assert run["stop_reason"].startswith("stopped at 7 states: lost workers: ")
    assert run["stats"]["transitions"] == 0 and shared == [7]


def test_an_unreachable_scheduler_is_exit_2_naming_it(cli):
    with socket.socket() as s:     # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    ran = cli("check", LOOP_DEMO, "--dask", address)
    assert (ran.code, ran.out, ran.err) == (2, "", f"error: --dask {address}: cannot reach the Dask scheduler "
                                                   "within 5 s: nothing listens there (connection refused)\n")


def test_the_dashboard_or_a_worker_given_for_the_scheduler_is_exit_2_saying_so(cli, tmp_path):
    """The dashboard's HTTP reply was read as a message length (exit 4 asking numpy for
    exabytes) and a worker's address failed after a 10 s wait and a traceback: both are now
    named before distributed's client connects, and the scheduler's own address still works."""
    with _cluster(tmp_path, dashboard=True) as c:
        assert c.dashboard is not None
        board = f"tcp://127.0.0.1:{c.dashboard}"
        on_board = cli("check", LOOP_DEMO, *PINNED, "--dask", board)
        worker = c.worker_addresses[0]
        on_worker = cli("check", LOOP_DEMO, *PINNED, "--dask", worker)
        on_scheduler = cli("check", LOOP_DEMO, *PINNED, "--dask", c.address, "--quiet")
    assert (on_board.code, on_board.out, on_board.err) == (
        2, "", f"error: --dask {board}: an HTTP server answered (Dask's dashboard?), not a Dask scheduler; "
               "the scheduler's address is usually port 8786\n")
    assert (on_worker.code, on_worker.out, on_worker.err) == (
        2, "", f"error: --dask {worker}: a Dask worker answered, not the scheduler; its scheduler is at "
               f"{c.address}\n")
    assert (on_scheduler.code, on_scheduler.err) == (0, ""), on_scheduler.err


def test_an_empty_dask_address_is_exit_2(cli):
    ran = cli("check", LOOP_DEMO, "--dask=")
    assert ran.code == 2
    assert "--dask needs the scheduler's address" in ran.err
