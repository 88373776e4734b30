"""Bound code that fights the check (tests/hostile_code.py) never decides its outcome.

A `sys.exit(0)` or `os._exit(0)` in the user's code is a finding (exit 1), never the check's own
exit status; code that swallows every interrupt, installs its own SIGALRM handler or does its slow
work in `__del__` is stopped at the deadline (exit 3) by the supervisor of cli/supervise.py; a
`close()` that never returns is a finding at the call deadline (--call-timeout); what the code
prints never reaches the report on stdout, and a `chdir` in it never moves a report file.

The in-process tests (the `cli` fixture) run the supervisor as the command line does: the check
runs in a forked child. The ones that wait for a deadline shorten the supervisor's grace; the
ones with `-j 2` or the real command line run in a subprocess (slow). Every stubborn piece of code
gives up by itself after hostile_code.FIGHT seconds, so a failure is a failed test, not a hang.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from haltproof.cli import supervise
from haltproof.machine import usercode

from conftest import LOOP_DEMO
from test_binding import STUCK_AT, bound_copy, haltproof_process
from test_live_binding import AGENT_SPEC
from test_parallel import untimed

PINNED = ("-p", "max_steps=3", "-p", "max_retries=1")
IGNORED = "it ignored haltproof's interrupt, so haltproof ended the process running it"
CLOSE_AT = "running closing a live run after action work (tool=ok) from state steps=0 status=running"


@pytest.fixture
def short_grace(monkeypatch):
    """The supervisor ends ignored code 0.3 s past a deadline instead of GRACE (fork keeps the patch)."""
    monkeypatch.setattr(supervise, "GRACE", 0.3)


def live_spec(tmp_path: Path, adapter: str) -> Path:
    """tests/machine/test_live_binding.py's agent loop, bound to a live adapter of hostile_code."""
    path = tmp_path / f"{adapter.lower()}.yaml"
    path.write_text(AGENT_SPEC.replace("live_agents:", "hostile_code:").format(adapter=adapter))
    return path


def props(run: dict) -> dict:
    return {p["name"]: p for p in run["properties"]}


# ------------------------------------------------------------------ the code ends the process

@pytest.mark.verdict
def test_sys_exit_in_a_step_is_a_bound_code_finding_not_the_exit_status(cli, tmp_path):
    """It was exit 0 with nothing printed: a CI gate passed on a check that never ran."""
    ran = cli("check", bound_copy(tmp_path, "hostile_code:Exits"), *PINNED, "--format", "json")
    assert ran.code == 1, ran.err
    (run,) = ran.json()["runs"]
    bound = props(run)["bound_code"]
    assert bound["status"] == "violated"
    lines = bound["message"].splitlines()
    assert (lines[0], lines[-2:]) == ("action read_task_cards with obs=failed: the bound code raised SystemExit: 0",
                                      ["    sys.exit(0)", "SystemExit: 0"])
    assert [(s["action"], s["choices"]) for s in bound["trace"]["steps"]] == [
        (None, {}), ("read_task_cards", {"obs": "failed"})]


@pytest.mark.verdict
def test_sys_exit_in_close_is_a_bound_code_finding(cli, tmp_path):
    ran = cli("check", live_spec(tmp_path, "ExitsOnClose"), "-p", "N=2", "--format", "json")
    assert ran.code == 1, ran.err
    (run,) = ran.json()["runs"]
    bound = props(run)["bound_code"]
    assert bound["status"] == "violated"
    assert bound["message"].splitlines()[0] == "action work with tool=ok: the adapter's close() raised SystemExit: 0"
    assert bound["message"].splitlines()[-1] == "SystemExit: 0"


@pytest.mark.verdict
def test_os_exit_in_a_step_is_a_bound_code_finding(cli, tmp_path):
    """No exception stops os._exit: the supervisor sees its child end, and the child said what ran."""
    ran = cli("check", bound_copy(tmp_path, "hostile_code:OsExits"), *PINNED, "--format", "json")
    why = (f"the user's code ended haltproof's process (os._exit(0)) while {STUCK_AT}; "
           "nothing after it was checked")
    assert (ran.code, ran.err) == (1, f"haltproof: bound_code: {why}\n")
    report = ran.json()
    assert (report["result"], report["exit_code"]) == ("violated", 1)
    (run,) = report["runs"]
    assert (run["result"], run["stopped_by"], run["stop_reason"]) == ("violated", "workers_lost", why)
    assert (props(run)["bound_code"]["status"], props(run)["bound_code"]["message"]) == ("violated", why)


def test_a_sweep_keeps_the_runs_finished_before_the_process_ended(cli, tmp_path):
    """max_steps=1 never reaches the exit (it needs two steps): its run is proved and kept; the
    run that exits is the finding; the one after it was never checked."""
    ran = cli("check", bound_copy(tmp_path, "hostile_code:OsExits"), "-p", "max_retries=1",
              "-p", "max_steps=1", "-p", "max_steps=3", "-p", "max_steps=4", "--format", "json")
    assert ran.code == 1, ran.err
    runs = ran.json()["runs"]
    assert [(r["params"]["max_steps"], r["result"], r.get("stopped_by")) for r in runs] == [
        (1, "proved", None), (3, "violated", "workers_lost"), (4, "incomplete", "workers_lost")]
    assert runs[0]["stats"]["states"] > 0
    assert runs[2]["stop_reason"] == "not checked: the check ended before this run was checked"


@pytest.mark.slow
def test_an_exit_in_worker_processes_is_a_finding_too(tmp_path):
    """-j 2: sys.exit is caught in the worker, os._exit ends it after a word to its parent; neither
    is tried again (it was: three times per run, then `lost workers`)."""
    sweep = ("-p", "max_retries=1", "-p", "max_steps=2", "-p", "max_steps=3", "-j", "2")
    ran = haltproof_process("check", bound_copy(tmp_path, "hostile_code:Exits"), *sweep, "--format", "json",
                            cwd=tmp_path)
    assert ran.returncode == 1, ran.stderr
    for run in json.loads(ran.stdout)["runs"]:
        assert props(run)["bound_code"]["message"].splitlines()[0] == ("action read_task_cards with obs=failed: "
                                                                       "the bound code raised SystemExit: 0")
    ran = haltproof_process("check", bound_copy(tmp_path, "hostile_code:OsExits"), *sweep, "--format", "json",
                            cwd=tmp_path)
    assert ran.returncode == 1, ran.stderr
    why = f"the user's code ended the worker process checking it (os._exit(0)) while {STUCK_AT}"
    for run in json.loads(ran.stdout)["runs"]:
        assert (run["result"], run["stop_reason"]) == ("violated", f"not checked: {why}")
        assert props(run)["bound_code"]["message"] == why


# ------------------------------------------------------------------ the code ignores the deadline

@pytest.mark.parametrize("adapter", ["Swallows", "OwnAlarm", "BusyGarbage"])
def test_code_that_ignores_the_timeout_is_stopped_by_the_supervisor(cli, tmp_path, short_grace, adapter):
    """A bare except around its work, its own SIGALRM handler, its slow work in __del__ (where
    Python ignores the interrupt): --timeout was never reached (held until killed by hand)."""
    ran = cli("check", bound_copy(tmp_path, f"hostile_code:{adapter}"), *PINNED, "--timeout", "1",
              "--format", "json")
    why = f"--timeout 1 s reached while {STUCK_AT}; {IGNORED}"
    assert ran.code == 3, ran.err
    assert ran.err.endswith(f"haltproof: incomplete: {why}\n")
    (run,) = ran.json()["runs"]
    assert (run["result"], run["stopped_by"], run["stop_reason"]) == ("incomplete", "timeout", why)
    assert props(run)["bound_code"]["status"] == "unknown"


@pytest.mark.slow
@pytest.mark.parametrize("adapter", ["Swallows", "OwnAlarm", "BusyGarbage"])
def test_code_that_ignores_the_timeout_on_the_command_line(tmp_path, adapter):
    report = tmp_path / "report.json"
    ran = haltproof_process("check", bound_copy(tmp_path, f"hostile_code:{adapter}"), *PINNED, "--timeout", "2",
                            "--json", report, cwd=tmp_path)
    why = f"--timeout 2 s reached while {STUCK_AT}; {IGNORED}"
    assert ran.returncode == 3, ran.stderr
    assert ran.stderr.endswith(f"haltproof: incomplete: {why}\n")
    assert "Traceback" not in ran.stderr      # an interrupt __del__ ignored is a line (cli/supervise.py)
    (run,) = json.loads(report.read_text())["runs"]
    assert (run["stopped_by"], run["stop_reason"]) == ("timeout", why)


@pytest.mark.slow
@pytest.mark.parametrize("adapter", ["Swallows", "OwnAlarm", "BusyGarbage"])
def test_code_that_ignores_the_timeout_in_worker_processes(tmp_path, adapter):
    """-j 2: each worker watches the code it runs and ends itself, after a word to its parent."""
    ran = haltproof_process("check", bound_copy(tmp_path, f"hostile_code:{adapter}"), "-p", "max_retries=1",
                            "-p", "max_steps=2", "-p", "max_steps=3", "-j", "2", "--timeout", "10",
                            "--format", "json", cwd=tmp_path)
    assert ran.returncode == 3, ran.stderr
    why = (f"--timeout 10 s reached while {STUCK_AT}; it ignored haltproof's interrupt, so haltproof ended "
           "the worker process checking it")
    for run in json.loads(ran.stdout)["runs"]:
        assert (run["result"], run["stopped_by"], run["stop_reason"]) == ("incomplete", "timeout",
                                                                           f"not checked: {why}")


@pytest.mark.slow
def test_code_that_never_lets_python_run_is_ended_when_its_process_stops_answering(cli, tmp_path, monkeypatch):
    """A loop inside C (builtin sum): no signal handler and no watchdog thread runs, so
    the supervisor ends the child when it has been silent past the call deadline. Whose code held
    Python cannot be told from outside: incomplete, not a finding."""
    monkeypatch.setattr(supervise, "GRACE", 0.3)
    monkeypatch.setattr(supervise, "SILENT", 0.5)
    ran = cli("check", bound_copy(tmp_path, "hostile_code:InC"), *PINNED, "--call-timeout", "1",
              "--format", "json")
    assert ran.code == 3, ran.err
    assert ran.err.startswith("haltproof: incomplete: the process running the check stopped answering for ")
    assert ran.err.endswith(f" s (last seen {STUCK_AT}): something there never lets Python run, so haltproof "
                            "ended it\n")
    (run,) = ran.json()["runs"]
    assert (run["result"], run["stopped_by"]) == ("incomplete", "workers_lost")


# ------------------------------------------------------------------ the call deadline

@pytest.mark.verdict
def test_a_close_that_never_returns_is_a_finding_at_the_call_deadline(cli, tmp_path):
    """Without --timeout: it held a check for 75 minutes, silently."""
    ran = cli("check", live_spec(tmp_path, "HangsOnClose"), "-p", "N=2", "--call-timeout", "0.2",
              "--format", "json")
    assert (ran.code, ran.err) == (1, "")
    (run,) = ran.json()["runs"]
    bound = props(run)["bound_code"]
    assert (bound["status"], bound["message"]) == (
        "violated", f"a call into the user's code did not return within --call-timeout 0.2 s while {CLOSE_AT}")
    assert [s["state"] for s in bound["trace"]["steps"]] == [{"steps": 0, "status": "running"}]
    assert (run["result"], run["stopped_by"]) == ("violated", "call_timeout")
    assert run["stop_reason"] == ("stopped at 1 states: a call into the user's code did not return within "
                                  f"--call-timeout 0.2 s, while {CLOSE_AT}")


def test_a_close_that_ignores_the_call_deadline_is_ended_by_the_supervisor(cli, tmp_path, short_grace):
    ran = cli("check", live_spec(tmp_path, "SwallowsOnClose"), "-p", "N=2", "--call-timeout", "0.2",
              "--format", "json")
    why = f"a call into the user's code did not return within --call-timeout 0.2 s while {CLOSE_AT}; {IGNORED}"
    assert (ran.code, ran.err) == (1, f"haltproof: bound_code: {why}\n")
    (run,) = ran.json()["runs"]
    assert (run["result"], run["stopped_by"], props(run)["bound_code"]["message"]) == (
        "violated", "call_timeout", why)


def test_a_close_stuck_after_a_raising_transition_says_which_transition_left_it(cli, tmp_path, short_grace):
    """The close of a run a raising step left is described by that step, as any close is: the
    message says what the stuck call was doing, never only that some call was stuck."""
    ran = cli("check", live_spec(tmp_path, "SwallowsOnCloseAfterARaise"), "-p", "N=2", "--call-timeout", "0.2",
              "--format", "json")
    why = ("a call into the user's code did not return within --call-timeout 0.2 s while running closing a live "
           f"run after action work (tool=fail) from state steps=0 status=running; {IGNORED}")
    assert (ran.code, ran.err) == (1, f"haltproof: bound_code: {why}\n")
    (run,) = ran.json()["runs"]
    assert (run["result"], run["stopped_by"], props(run)["bound_code"]["message"]) == (
        "violated", "call_timeout", why)


def test_the_call_deadline_in_replay_and_conform(cli, tmp_path):
    """Conform makes hundreds of calls: a deadline of 1 s, which none of the code's quick calls
    reaches even on a loaded machine (0.2 s did, descheduled, and the wrong call was "stuck")."""
    path = bound_copy(tmp_path, "stuck_code:Sleeping", keep_scenarios=True)
    ran = cli("replay", path, "--scenario", "permanent_error", "--call-timeout", "1")
    assert (ran.code, ran.out) == (3, "")
    assert ran.err == ("haltproof: incomplete: a call into the user's code did not return within --call-timeout "
                       "1 s while running the bound code for action read_task_cards (obs=failed) from state "
                       "steps=1 failures=1 phase=observed observation=failed decision=continue "
                       "scenario=permanent_error\n")
    ran = cli("conform", path, "--call-timeout", "1", "-p", "max_steps=3", "-p", "max_retries=1")
    assert ran.code == 1, ran.err
    assert ran.out.startswith("conformance of loop_demo and stuck_code:Sleeping FAILED after ")
    assert ran.out.endswith(" steps compared: a call into the user's code did not return within --call-timeout "
                            "1 s while running the bound code for action read_task_cards (obs=failed) from state "
                            "steps=1 failures=1 phase=observed observation=failed decision=continue "
                            "scenario=one_match\n")


def test_a_strategy_whose_draw_never_returns_is_a_conform_failure_at_the_call_deadline(cli, tmp_path):
    """The draw runs inside Hypothesis, yet it is the user's code: the call deadline bounds it."""
    ran = cli("conform", bound_copy(tmp_path, "stuck_code:SleepingDraw"), "--call-timeout", "1", *PINNED)
    assert ran.code == 1, ran.err
    assert ran.out.endswith(" steps compared: a call into the user's code did not return within --call-timeout "
                            "1 s while running a draw of the adapter's strategy for obs of action "
                            "read_task_cards (obs=failed) from state steps=0 failures=0 phase=start "
                            "observation=nothing decision=undecided scenario=one_match\n"), ran.out


def test_hypothesis_own_work_is_not_a_call_into_the_users_code(cli, tmp_path, monkeypatch):
    """A loaded machine slows Hypothesis and haltproof between the calls into the code: that time
    is bounded by --timeout, never charged to --call-timeout (it was a "stuck" internal error)."""
    from haltproof.explorer import conform as conform_module
    monkeypatch.setenv("HALTPROOF_IN_PROCESS", "1")    # `slept` is read in this process (cli/supervise.py)
    choices = conform_module._choice_order
    slept: list[float] = []

    def slow(*args):
        if not slept:       # once, longer than the call deadline
            slept.append(1.5)
            time.sleep(1.5)
        return choices(*args)
    monkeypatch.setattr(conform_module, "_choice_order", slow)
    ran = cli("conform", LOOP_DEMO, "--call-timeout", "1", "--examples", "3", *PINNED)
    assert (ran.code, ran.err, slept) == (0, "", [1.5])
    assert ran.out.startswith("conformance of loop_demo and haltproof.harness.loop_binding:LoopDemoAdapter: "
                              "3 random runs"), ran.out


def test_loading_the_code_is_not_bound_by_the_call_deadline(cli, tmp_path):
    """A first import of a large framework can take long: only --timeout bounds loading the code,
    the call deadline bounds the calls a check makes again and again."""
    (tmp_path / "hp_slow_import.py").write_text(
        "import time\n"
        "from haltproof.harness.loop_binding import LoopDemoAdapter\n"
        "time.sleep(0.5)\n"
        "class Adapter(LoopDemoAdapter):\n"
        "    def __init__(self):\n"
        "        time.sleep(0.5)\n")
    ran = cli("check", bound_copy(tmp_path, "hp_slow_import:Adapter"), *PINNED, "--call-timeout", "0.2", "--quiet")
    assert (ran.code, ran.err) == (0, "")


# ------------------------------------------------------------------ stdout and the working directory

def test_what_the_code_prints_goes_to_stderr_never_into_the_report(cli, tmp_path, monkeypatch):
    path = bound_copy(tmp_path, "hostile_code:Prints")
    quiet = cli("check", path, *PINNED, "--format", "json")
    monkeypatch.setenv("HALTPROOF_TEST_PRINT", "1")
    loud = cli("check", path, *PINNED, "--format", "json")
    assert (quiet.code, loud.code) == (0, 0)
    assert untimed(loud.json()) == untimed(quiet.json())
    assert "decide at step 1\n" in loud.err and quiet.err == ""


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_what_the_code_prints_on_the_command_line(tmp_path, fmt):
    env_print = {**os.environ, "HALTPROOF_TEST_PRINT": "1"}
    os.environ.update(env_print)        # haltproof_process passes os.environ on
    try:
        ran = haltproof_process("check", bound_copy(tmp_path, "hostile_code:Prints"), *PINNED, "--format", fmt,
                                cwd=tmp_path)
    finally:
        del os.environ["HALTPROOF_TEST_PRINT"]
    assert ran.returncode == 0, ran.stderr
    json.loads(ran.stdout)
    assert "decide at step 1\n" in ran.stderr and "and straight to fd 1\n" in ran.stderr


def test_a_chdir_in_the_code_does_not_move_the_report_files(cli, tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.setenv("HALTPROOF_TEST_ELSEWHERE", str(elsewhere))
    monkeypatch.chdir(tmp_path)
    path = bound_copy(tmp_path, "hostile_code:Moves")
    ran = cli("check", path.name, *PINNED, "--json", "report.json", "--html", "report.html",
              "--baseline", "base.json")
    assert ran.code == 0, ran.err
    assert json.loads((tmp_path / "report.json").read_text())["result"] == "proved"
    assert json.loads((tmp_path / "base.json").read_text())
    assert (tmp_path / "report.html").read_text().startswith("<!DOCTYPE html>")
    assert [p.name for p in elsewhere.iterdir()] == ["moved"]      # the code went there; the reports did not


def test_the_pytest_plugin_fails_the_items_of_code_that_exits_or_hangs(pytester):
    """`pytest --haltproof` checks in pytest's own process: sys.exit in the code and a close()
    past the call deadline are failed bound_code items, never an exit of pytest itself."""
    bound_copy(pytester.path, "hostile_code:Exits", name="exits")
    live_spec(pytester.path, "HangsOnClose")
    result = pytester.runpytest("--haltproof", "--haltproof-call-timeout", "0.2", "-q", "-p", "no:cacheprovider",
                                "exits.yaml::bound_code[max_steps=3,max_retries=1]",
                                "hangsonclose.yaml::bound_code[N=2]")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*exits.yaml*bound_code is violated: *the bound code raised SystemExit: 0*",
                                 "*hangsonclose.yaml*bound_code is violated: a call into the user's code did not "
                                 f"return within --call-timeout 0.2 s while {CLOSE_AT}"])


# ------------------------------------------------------------------ what is supervised

def test_only_specs_that_run_code_are_supervised(tmp_path, monkeypatch):
    unbound = bound_copy(tmp_path, "", name="unbound")
    assert supervise.wanted([unbound]) is False
    assert supervise.wanted([unbound, LOOP_DEMO]) is True
    assert supervise.wanted(["some_module:Model"]) is True
    framework = tmp_path / "app.yaml"
    framework.write_text("framework: langgraph\ntarget: app:graph\n")
    assert supervise.wanted([framework]) is True
    flow = tmp_path / "flow.yaml"
    flow.write_text('{"machine": "m", "bind": "m:A"}\n')
    assert supervise.wanted([flow]) is True          # a flow mapping (JSON) is parsed
    broken = tmp_path / "broken.yaml"
    broken.write_text("{machine: [\n")
    assert supervise.wanted([broken]) is False       # loading it reports the problem, in this process
    monkeypatch.setenv(supervise.ENV, "1")
    assert supervise.wanted([LOOP_DEMO]) is False


def test_an_unsupervised_check_still_turns_sys_exit_into_a_finding(cli, tmp_path, monkeypatch):
    monkeypatch.setenv(supervise.ENV, "1")
    ran = cli("check", bound_copy(tmp_path, "hostile_code:Exits"), *PINNED, "--quiet")
    assert ran.code == 1
    assert usercode.NOW.since is None


def test_the_default_call_deadline_is_documented(cli):
    ran = cli("check", "--help")
    assert f"(default {usercode.CALL_TIMEOUT:g})" in " ".join(ran.out.split())
