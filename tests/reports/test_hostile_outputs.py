"""What a spec's strings and the bound code's values can do to the outputs (issue 26, finding 14):
every writer still writes valid output, and the check's exit code is still its verdict.

- A lone surrogate (`"\\udc80"` in YAML, an exception message from undecodable bytes) is
  written as its escape, the six characters `\\udc80`, by every format (machine/text.py
  `encodable`); it crashed the file writers (exit 4) and went to stdout as an invalid byte.
- A text past 10,000 characters is cut, `… (N more characters)` (machine/text.py
  `shortened`): a 1 MB error message made a 2 MB report.
- A NaN or an infinity from abstract() is a `bound_code` finding naming the var; it was exit 4
  (JSON cannot hold it) or, with determinism checks on, "nondeterministic" (NaN != NaN).
- An exception whose __str__ raises is shown as `Type: <str() raised X>`; it was exit 4.
- A closed stdout, or a reader gone (`| head -0`): the exit code is still the verdict's.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from ci_reports import assert_valid
from conftest import LOOP_DEMO, ROOT
from haltproof.api import check as api_check
from haltproof.machine.pymodel import action
from haltproof.machine.text import TEXT_LIMIT, shortened
from test_junit import assert_schema
from test_live_binding import AGENT_SPEC

TESTS = Path(__file__).resolve().parent.parent

sys.path.insert(0, str(ROOT / "docs" / "examples"))
from retry_model import RetryLoop  # noqa: E402


# The YAML writes `\udc80` in double quotes: the loaded names and values hold the lone surrogate.
SURROGATES = """\
machine: m
params:
  n: [1]
vars:
  steps: {type: int, min: 0, max: n, init: 0}
  decision: {type: enum, values: [going, "d\\udc80ne"], init: going}
actions:
  work:
    when: decision == going
    choose:
      obs: [good, "b\\udc80d"]
    do:
      - set: {steps: steps + 1, decision: going}
      - decide: decision
        rules:
          - {name: "fin\\udc80ish", when: steps >= n, then: "d\\udc80ne"}
          - {name: again, then: going}
terminal:
  label: decision
  values: ["d\\udc80ne"]
properties:
  never_finished:
    description: "finishing \\udc80 is a violation here"
    always: steps < 1
"""

PINNED_PROVED = ("-p", "max_steps=2", "-p", "max_retries=1")
ESCAPED = ("d\\udc80ne", "fin\\udc80ish", "finishing \\udc80 is a violation here")
# what each format shows of them (GitHub's annotations name the rule; a text line has no description)
SHOWN = {"text": ESCAPED[:2], "json": ESCAPED, "html": ESCAPED, "junit": ESCAPED, "sarif": ESCAPED,
         "github": ESCAPED[1:2], "markdown": ESCAPED[:2]}


class NaNRetry(RetryLoop):
    """Counts its calls in a float that turns NaN on an error."""

    @action(when=lambda s, p: s["status"] == "running", outcome=["ok", "error"],
            rules=["finished", "gave_up", "exhausted", "retry"])
    def call_tool(self, s, p, outcome):
        out, rule = RetryLoop.call_tool(self, s, p, outcome)
        return ({**out, "calls": float("nan")} if outcome == "error" else out), rule


@pytest.fixture(autouse=True)
def _tests_importable(monkeypatch):
    monkeypatch.syspath_prepend(str(TESTS))


def surrogate_spec(tmp_path: Path) -> Path:
    path = tmp_path / "surrogates.yaml"
    path.write_text(SURROGATES)
    return path


def agent_spec(tmp_path: Path, adapter: str) -> Path:
    path = tmp_path / f"{adapter.lower()}.yaml"
    path.write_text(AGENT_SPEC.format(adapter=adapter))
    return path


class StrictHTML(HTMLParser):
    """Every tag the page opens is closed, in order (void elements aside)."""

    VOID = {"meta", "br", "hr", "img", "input", "link", "col", "wbr", "path", "polygon", "ellipse",
            "polyline", "rect", "circle", "line"}

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_endtag(self, tag):
        if tag not in self.VOID:
            assert self.open and self.open[-1] == tag, (tag, self.open[-5:])
            self.open.pop()


def assert_parses(fmt: str, text: str, validator) -> None:
    """`text` is valid UTF-8 and a valid document of its format."""
    text.encode("utf-8")        # strict: a lone surrogate raises
    if fmt == "json":
        json.loads(text)
    elif fmt == "sarif":
        assert_valid(validator, json.loads(text))
    elif fmt == "junit":
        assert_schema(ET.fromstring(text))
    elif fmt == "html":
        page = StrictHTML()
        page.feed(text)
        page.close()
        assert page.open == []


# ---------------------------------------------------------------- lone surrogates

@pytest.mark.parametrize("fmt", ["text", "json", "html", "junit", "sarif", "github", "markdown"])
def test_a_lone_surrogate_in_the_spec_is_written_as_its_escape_on_stdout(cli, tmp_path, monkeypatch, fmt, validator):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    ran = cli("check", surrogate_spec(tmp_path), "--format", fmt)
    assert ran.code == 1, ran.err
    assert "\udc80" not in ran.out
    assert_parses(fmt, ran.out, validator)
    for escaped in SHOWN[fmt]:
        assert (json.dumps(escaped)[1:-1] if fmt in ("json", "sarif") else escaped) in ran.out, (fmt, escaped)


def test_a_lone_surrogate_in_the_spec_is_written_as_its_escape_in_every_report_file(cli, tmp_path, validator):
    """The file writers raised UnicodeEncodeError (exit 4) and wrote nothing."""
    files = {fmt: tmp_path / f"report.{fmt}" for fmt in ("json", "html", "junit", "sarif")}
    ran = cli("check", surrogate_spec(tmp_path), *(a for fmt, f in files.items() for a in (f"--{fmt}", f)))
    assert ran.code == 1, ran.err
    for fmt, f in files.items():
        assert_parses(fmt, f.read_text(encoding="utf-8"), validator)
    (run,) = json.loads(files["json"].read_text(encoding="utf-8"))["runs"]
    prop = next(p for p in run["properties"] if p["name"] == "never_finished")
    assert prop["description"] == "finishing \\udc80 is a violation here"
    assert prop["trace"]["steps"][1] == {"state": {"steps": 1, "decision": "d\\udc80ne"}, "action": "work",
                                         "choices": {"obs": "good"}, "rule": "fin\\udc80ish"}
    assert run["coverage"] == {"rules": {"fin\\udc80ish": 2, "again": 0}, "terminals": {"d\\udc80ne": 1}}


def test_a_lone_surrogate_in_an_itf_trace_is_escaped_too(cli, tmp_path):
    ran = cli("check", surrogate_spec(tmp_path), "--format", "json", "--trace-format", "itf")
    assert ran.code == 1, ran.err
    ran.out.encode("utf-8")
    (run,) = ran.json()["runs"]
    trace = next(p for p in run["properties"] if p["name"] == "never_finished")["trace"]
    assert trace["states"][1]["decision"] == "d\\udc80ne" and trace["states"][1]["#meta"]["rule"] == "fin\\udc80ish"


@pytest.mark.parametrize("fmt,shown", [("dot", "d\\\\udc80ne"), ("graphml", "d\\udc80ne"),
                                       ("mermaid", "d\\udc80ne"), ("json", "d\\\\udc80ne")])
def test_a_lone_surrogate_in_a_graph_is_escaped(cli, tmp_path, fmt, shown):
    """The same escape as the reports (DOT and JSON quote its backslash); the HTML report's
    graphs go through the DOT writer."""
    ran = cli("graph", surrogate_spec(tmp_path), "--format", fmt)
    assert ran.code == 0, ran.err
    ran.out.encode("utf-8")
    assert shown in ran.out
    if fmt == "json":
        states = {n.get("var.decision") for n in json.loads(ran.out)["nodes"]}
        assert states == {"going", "d\\udc80ne"}


def test_a_lone_surrogate_in_the_bound_codes_error_is_escaped(cli, tmp_path, validator):
    ran = cli("check", agent_spec(tmp_path, "RaisesSurrogate"), "-p", "N=2", "--format", "sarif",
              "--json", tmp_path / "report.json")
    assert ran.code == 1, ran.err
    assert_parses("sarif", ran.out, validator)
    (run,) = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))["runs"]
    bound = next(p for p in run["properties"] if p["name"] == "bound_code")
    assert bound["message"].startswith("action work with tool=ok: the bound code raised ValueError: "
                                       "bad \\udc80 byte\n")


# ---------------------------------------------------------------- long texts

def test_shortened_keeps_at_most_the_limit_and_says_how_much_was_cut():
    assert shortened("y" * TEXT_LIMIT) == "y" * TEXT_LIMIT
    assert shortened("y" * (TEXT_LIMIT + 1)) == "y" * 9_978 + "… (23 more characters)"
    cut = shortened("x" * 50_000_000)
    assert cut == "x" * 9_970 + "… (49,990,030 more characters)" and len(cut) == TEXT_LIMIT
    assert shortened(cut) == cut


def test_a_megabyte_error_message_is_cut_in_the_report(cli, tmp_path):
    """The message and the traceback each held the million characters: a 2 MB report."""
    ran = cli("check", agent_spec(tmp_path, "RaisesLong"), "-p", "N=2", "--format", "json",
              "--html", tmp_path / "report.html")
    assert ran.code == 1, ran.err
    (run,) = ran.json()["runs"]
    message = next(p for p in run["properties"] if p["name"] == "bound_code")["message"]
    head = "action work with tool=ok: the bound code raised ValueError: "
    cut = re.fullmatch(re.escape(head) + r"(x+)… \(([\d,]+) more characters\)", message)
    assert cut is not None and len(message) == TEXT_LIMIT
    assert len(head) + len(cut[1]) + int(cut[2].replace(",", "")) > 2_000_000     # message and traceback
    assert len(ran.out) < 3 * TEXT_LIMIT
    assert (tmp_path / "report.html").stat().st_size < 10 * TEXT_LIMIT
    text = cli("check", agent_spec(tmp_path, "RaisesLong"), "-p", "N=2")
    assert text.code == 1 and len(text.out) < 2 * TEXT_LIMIT


def test_a_megabyte_import_error_is_cut_on_stderr(cli, tmp_path):
    (tmp_path / "loud.py").write_text("raise ImportError('x' * 1_000_000)\n")
    spec = tmp_path / "loud.yaml"
    spec.write_text(AGENT_SPEC.format(adapter="X").replace("live_agents:X", "loud:X"))
    ran = cli("check", spec)
    assert (ran.code, ran.out) == (2, "")
    line = ran.err.rstrip("\n")
    assert line.startswith(f"error: {spec}:2: cannot import the bound module: ImportError: xxx")
    assert len(line) == TEXT_LIMIT and re.search(r"… \([\d,]+ more characters\)$", line)


# ---------------------------------------------------------------- values and exceptions of the bound code

@pytest.mark.verdict      # judges a verdict: in the per-mutant selection (docs/explanation/mutation-testing.md)
@pytest.mark.parametrize("determinism", ["off", "sample", "full"])
@pytest.mark.parametrize("adapter,shown", [("NotANumber", "nan"), ("Infinite", "inf")])
def test_a_float_that_is_not_finite_from_abstract_is_a_bound_code_finding(cli, tmp_path, adapter, shown,
                                                                          determinism):
    """Exit 4 with determinism off or sampled (the report could not write NaN), and with it on a
    false "nondeterministic" (NaN != NaN): now the code's mistake, named, on every setting."""
    ran = cli("check", agent_spec(tmp_path, adapter), "-p", "N=2", "--format", "json",
              "--determinism", determinism)
    assert ran.code == 1, ran.err
    (run,) = ran.json()["runs"]
    props = {p["name"]: p for p in run["properties"]}
    bound = props["bound_code"]
    assert bound["status"] == "violated"
    assert bound["message"] == (f"action work with tool=ok: abstract() gave var steps the value {shown}, which "
                                "no state can hold: it is not a finite number (a NaN is not even equal to itself)")
    assert [s["state"] for s in bound["trace"]["steps"]] == [{"steps": 0, "status": "running"}]
    assert props["domains"]["status"] == "unknown"


@pytest.mark.verdict      # judges a verdict: in the per-mutant selection (docs/explanation/mutation-testing.md)
def test_a_nan_from_a_python_models_action_is_a_bound_code_finding():
    """The model's own determinism check compared NaN != NaN first: "nondeterministic"."""
    run = api_check(NaNRetry, params={"K": 2, "R": 1}).to_json()["runs"][0]
    (bound,) = [p for p in run["properties"] if p["status"] == "violated"]
    assert (bound["name"], bound["message"]) == (
        "bound_code", "action call_tool with outcome=error: action call_tool gave var calls the value nan, which no "
                      "state can hold: it is not a finite number (a NaN is not even equal to itself)")
    assert [s["state"] for s in bound["trace"]["steps"]] == [{"calls": 0, "fails": 0, "status": "running"}]


@pytest.mark.verdict      # judges a verdict: in the per-mutant selection (docs/explanation/mutation-testing.md)
def test_an_exception_whose_str_raises_is_shown_by_its_type(cli, tmp_path):
    ran = cli("check", agent_spec(tmp_path, "RaisesUnprintable"), "-p", "N=2", "--format", "json")
    assert ran.code == 1, ran.err
    (run,) = ran.json()["runs"]
    message = next(p for p in run["properties"] if p["name"] == "bound_code")["message"]
    first, *frames = message.split("\n")
    assert first == "action work with tool=ok: the bound code raised UnprintableError: <str() raised RuntimeError>"
    assert "raise UnprintableError()" in message
    assert frames[-1] == "live_agents.UnprintableError: <exception str() failed>"


@pytest.mark.verdict      # judges a verdict: in the per-mutant selection (docs/explanation/mutation-testing.md)
def test_an_exception_whose_str_raises_in_a_raises_match_is_not_matched(cli, tmp_path):
    """`raises: {match: ...}` searches the message: one that cannot be made matches nothing
    (not even a pattern found in the `<str() raised RuntimeError>` shown for it)."""
    text = AGENT_SPEC.format(adapter="RaisesUnprintable").replace(
        "    do:\n", "    raises:\n      - {class: live_agents.UnprintableError, match: raised, "
                    "rule: finished, set: {status: done}}\n    do:\n")
    spec = tmp_path / "matched.yaml"
    spec.write_text(text)
    ran = cli("check", spec, "-p", "N=2", "--format", "json")
    assert ran.code == 1, ran.err
    (run,) = ran.json()["runs"]
    message = next(p for p in run["properties"] if p["name"] == "bound_code")["message"]
    assert message.startswith("action work with tool=ok: the bound code raised UnprintableError: "
                              "<str() raised RuntimeError>\n")


# ---------------------------------------------------------------- a closed stdout

def haltproof(*args: str | Path, stdout: int | None, cwd: Path, closed: bool = False) -> subprocess.CompletedProcess:
    """`haltproof ARGS` in its own process, its stdout `stdout` (closed: file descriptor 1 closed
    before it starts, as `>&-` does)."""
    return subprocess.run([sys.executable, "-m", "haltproof.cli.main", *map(str, args)], cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=stdout, stderr=subprocess.PIPE,
                          text=True, timeout=120, preexec_fn=(lambda: os.close(1)) if closed else None)


def violated_spec(tmp_path: Path) -> Path:
    text = (ROOT / "specs" / "mutants" / "limit_before_observation.yaml").read_text()
    path = tmp_path / "violated.yaml"
    path.write_text(text[:text.index("\nexpect:")] + "\n")
    return path


def closed_pipe() -> int:
    """The write end of a pipe whose reader has gone (`| head -0`)."""
    read, write = os.pipe()
    os.close(read)
    return write


@pytest.mark.slow
@pytest.mark.parametrize("how", ["pipe", "closed"])
def test_a_reader_gone_or_a_closed_stdout_keeps_the_verdicts_exit_code(tmp_path, how):
    """`| head -0` was exit 0 whatever the verdict (a CI gate with pipefail passed on a
    violation); `>&-` was exit 4. Now: the verdict's code, a line on stderr for `>&-` only."""
    pinned = ("-p", "max_steps=3", "-p", "max_retries=0")
    for spec, args, code in ((violated_spec(tmp_path), pinned, 1), (LOOP_DEMO, PINNED_PROVED, 0)):
        out = closed_pipe() if how == "pipe" else None
        ran = haltproof("check", spec, *args, "--format", "json", stdout=out, cwd=tmp_path, closed=how == "closed")
        if out is not None:
            os.close(out)
        assert ran.returncode == code, ran.stderr
        assert ran.stderr == ("" if how == "pipe" else "haltproof: stdout is closed: the report was not written\n")


@pytest.mark.slow
def test_a_replay_whose_reader_is_gone_keeps_its_exit_code(tmp_path):
    """replay printed line by line, and a broken pipe anywhere was exit 0: a failed replay passed."""
    text = LOOP_DEMO.read_text()
    bad, n = re.subn(r"(  one_match:\n(?:.*\n)*?    expect: \{decision: )success", r"\1limit", text, count=1)
    assert n == 1
    spec = tmp_path / "bad_scenario.yaml"
    spec.write_text(bad)
    out = closed_pipe()
    ran = haltproof("replay", spec, "--scenario", "one_match", stdout=out, cwd=tmp_path)
    os.close(out)
    assert (ran.returncode, ran.stderr) == (1, "")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
@pytest.mark.slow
def test_a_full_disk_under_stdout_is_exit_2_saying_so(tmp_path):
    with open("/dev/full", "w") as full:
        ran = haltproof("check", LOOP_DEMO, *PINNED_PROVED, stdout=full.fileno(), cwd=tmp_path)
    assert (ran.returncode, ran.stderr) == (2, "error: cannot write the report to stdout: No space left on device\n")


@pytest.mark.verdict      # judges a verdict: in the per-mutant selection (docs/explanation/mutation-testing.md)
def test_a_broken_pipe_before_the_output_is_incomplete_not_a_pass(cli, monkeypatch):
    """A progress line's reader gone mid-check stopped the check and exited 0."""
    from haltproof.cli import check as check_cli

    def gone(*args, **kwargs):
        raise BrokenPipeError(32, "Broken pipe")
    monkeypatch.setattr(check_cli, "check_batches", gone)
    ran = cli("check", LOOP_DEMO, *PINNED_PROVED)
    assert (ran.code, ran.out, ran.err) == (3, "", "")
