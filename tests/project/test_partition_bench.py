"""bench/partition.py: the simulated exchange of a state space split by code hash (issue 16)."""

from __future__ import annotations

import numpy as np
import pytest

from bench.partition import main, owner, simulate
from conftest import ROOT


def test_owner_spreads_neighbouring_codes_over_every_worker() -> None:
    codes = np.arange(4096, dtype=np.int64)
    for n in (2, 3, 8):
        share = np.bincount(owner(codes, n), minlength=n)
        assert len(share) == n and share.min() > 0.8 * len(codes) / n
    assert (owner(codes, 1) == 0).all()


def test_one_worker_sends_nothing_and_more_workers_send_more() -> None:
    rows = {r["workers"]: r for r in simulate(10, [1, 2, 4])}
    assert rows[1]["crossing"] == 0 and rows[1]["bytes"] == 0
    states, edges = rows[2]["states"], rows[2]["transitions"]
    assert (states, edges) == (rows[1]["states"], rows[1]["transitions"])
    for n in (2, 4):
        r = rows[n]
        assert 0 < r["sent_after_dedup"] <= r["crossing"] < edges
        assert r["bytes"] == 16 * r["sent_after_dedup"]
    assert rows[2]["crossing"] < rows[4]["crossing"]


def test_the_documented_table_is_what_the_simulation_prints_header(capsys) -> None:
    """The page's table is the tool's output: its header and the design section are there."""
    doc = (ROOT / "docs" / "how-to" / "scaling.md").read_text()
    assert main(["--q", "10", "--workers", "2"]) == 0
    header = capsys.readouterr().out.splitlines()[2]
    assert header in doc
    assert "G(100, 900, 3) has 7,212,107 states, 15,454,515 transitions and 305 BFS levels" in doc


@pytest.mark.parametrize("argv, message", [
    (["--workers", "0"], "--workers: comma-separated counts of at least 2, not '0'"),
    (["--workers", "x,2"], "--workers: comma-separated counts of at least 2, not 'x,2'"),
    (["--q", "7"], "--q 7: "),
])
def test_a_bad_argument_is_a_usage_error_not_a_traceback(argv, message, capsys) -> None:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    assert message in capsys.readouterr().err
