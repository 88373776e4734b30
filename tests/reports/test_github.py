"""`--format github` (workflow commands), the job summary in $GITHUB_STEP_SUMMARY and
`--format markdown`, on real checks; the runner's escaping rules."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ci_reports import (AS_EXPECTED, BAD_SCENARIO, INDEPENDENCE, LASSO, PIN_PROVED, PIN_VIOLATED, PROVED,
                        TINY, TINY_ONLY, VIOLATED, line_of)
from haltproof.reports.github import (command, escape_data, escape_property, md_cell, mermaid_text,
                             render_markdown)

VIOLATED_PROPS = ["limit_only_when_observation_allows_going_on", "complete_search_always_decides",
                  "final_answer_on_last_step_kept"]
COMMAND = re.compile(r"::(?P<name>error|warning)(?: (?P<props>[^:]*))?::(?P<message>.*)")


def unescape_data(text: str) -> str:          # the runner's unescaping (ActionCommand.cs)
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def unescape_property(text: str) -> str:
    return unescape_data(text.replace("%3A", ":").replace("%2C", ","))


def parse(out: str) -> list[dict]:
    """Every workflow command in the output, as the runner reads it."""
    found = []
    for line in out.splitlines():
        if not line.startswith("::"):
            continue
        m = COMMAND.fullmatch(line)
        assert m, f"not a well-formed workflow command: {line!r}"
        props = {}
        for pair in (m["props"] or "").split(","):
            if pair:
                key, _, value = pair.partition("=")
                props[key] = unescape_property(value)
        found.append({"name": m["name"], **props, "message": unescape_data(m["message"])})
    return found


def test_escaping_follows_the_runner():
    assert escape_data("100% done\r\nnext: a,b") == "100%25 done%0D%0Anext: a,b"
    assert escape_property("100% done\r\nnext: a,b") == "100%25 done%0D%0Anext%3A a%2Cb"
    assert escape_data("%0A") == "%250A"                   # a literal %0A stays literal
    for text in ("a%b", "x:y,z", "line\nbreak", "%3A%2C", "::error::", "\r%\n"):
        assert unescape_data(escape_data(text)) == text
        assert unescape_property(escape_property(text)) == text
    line = command("error", "two\nlines: 50%", file="a,b:c.yaml", line=3, title="t: x", col=None)
    assert line == "::error file=a%2Cb%3Ac.yaml,line=3,title=t%3A x::two%0Alines: 50%25"
    assert parse(line) == [{"name": "error", "file": "a,b:c.yaml", "line": "3", "title": "t: x",
                            "message": "two\nlines: 50%"}]


def test_one_error_per_violated_property_at_its_line(cli, workdir):
    ran = cli("check", VIOLATED, "--format", "github")
    assert ran.code == 1
    cmds = parse(ran.out)
    errors = [c for c in cmds if c["name"] == "error"]
    assert [c["title"] for c in errors] == [f"haltproof: {n} violated" for n in VIOLATED_PROPS]
    for c, name in zip(errors, VIOLATED_PROPS):
        assert c["file"] == VIOLATED
        assert c["line"] == str(line_of(VIOLATED, rf"^  {name}:"))
        for steps in (3, 4, 5):
            for retries in (0, 1):
                assert f"max_steps={steps} max_retries={retries}" in c["message"]
        assert "\nAt max_steps=3 max_retries=0, shortest counterexample (3 steps): " in c["message"]
    assert "read_task_cards(obs=one_match) -> limit" in errors[2]["message"]
    assert "::error" in ran.out and "%0A" in ran.out          # the newline went out escaped
    assert ran.out.rstrip().splitlines()[-1].endswith("6 failed, 0 incomplete -> violated")


def test_expected_violations_get_no_annotation_but_vacuity_warnings_do(cli, workdir):
    ran = cli("check", "specs/mutants/failure_not_a_step.yaml", "-p", "max_steps=2", "-p", "max_retries=0",
              "--format", "github")
    assert ran.code == 0
    cmds = parse(ran.out)
    assert not [c for c in cmds if c["name"] == "error"]
    warnings = [c for c in cmds if c["name"] == "warning"]
    spec = "specs/mutants/failure_not_a_step.yaml"
    rule_line = line_of(spec, r"\{name: error,")
    assert [(w["file"], w["line"]) for w in warnings] == [(spec, str(rule_line)),
                                                         (spec, str(line_of(spec, r"^terminal:")))]
    assert warnings[0]["message"] == (f"vacuous: decide rule 'error' of action read_task_cards "
                                      f"(line {rule_line}) never fires: its condition is never true in any "
                                      "reachable step (params: max_steps=2 max_retries=0)")
    assert warnings[1]["message"].startswith("vacuous: terminal 'error' is never reached")


def test_warnings_are_grouped_over_params(cli, workdir):
    ran = cli("check", PROVED, "-p", "max_steps=1", "--format", "github")
    assert ran.code == 0
    warnings = [c for c in parse(ran.out) if c["name"] == "warning"]
    cont = [w for w in warnings if "'continue'" in w["message"]]
    assert len(cont) == 1                                   # fires at neither max_retries
    assert "max_steps=1 max_retries=0; max_steps=1 max_retries=1" in cont[0]["message"]
    assert cont[0]["line"] == str(line_of(PROVED, r"\{name: continue,"))


def test_incomplete_and_scenario_failures_are_errors(cli, workdir):
    ran = cli("check", PROVED, *PIN_PROVED, "--max-states", "3", "--format", "github")
    assert ran.code == 3
    (err,) = [c for c in parse(ran.out) if c["name"] == "error"]
    assert err["title"] == "haltproof: incomplete" and "--max-states" in err["message"]
    ran = cli("check", BAD_SCENARIO, "-p", "max_steps=5", "-p", "max_retries=1", "--format", "github")
    assert ran.code == 1
    (err,) = [c for c in parse(ran.out) if c["name"] == "error"]
    assert err["title"] == "haltproof: scenario one_match failed"
    assert err["line"] == str(line_of(BAD_SCENARIO, r"^  one_match:"))


def test_run_not_as_expected_is_an_error(cli, workdir):
    ran = cli("check", TINY, *TINY_ONLY, "--format", "github")
    assert ran.code == 1
    (err,) = [c for c in parse(ran.out) if c["name"] == "error"]
    assert err["title"] == "haltproof: not as expected" and err["file"] == TINY


def test_awkward_file_names_are_escaped(cli, workdir):
    odd = Path("plain/100%,a:b.yaml")
    odd.write_text(Path(VIOLATED).read_text())
    ran = cli("check", odd, *PIN_VIOLATED, "--format", "github")
    assert ran.code == 1
    assert "file=plain/100%25%2Ca%3Ab.yaml," in ran.out
    assert {c["file"] for c in parse(ran.out) if c["name"] == "error"} == {str(odd)}


def test_step_summary_is_appended_when_the_runner_asks(cli, workdir, monkeypatch):
    summary = Path("summary.md")
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    ran = cli("check", VIOLATED, *PIN_VIOLATED, "--format", "github", "--json", "r.json")
    assert ran.code == 1
    report = json.loads(Path("r.json").read_text())
    assert summary.read_text() == "earlier step\n" + render_markdown(report)
    # other formats leave the summary alone
    cli("check", VIOLATED, *PIN_VIOLATED, "--format", "markdown")
    assert summary.read_text() == "earlier step\n" + render_markdown(report)


def test_unwritable_step_summary_is_a_usage_error(cli, workdir, monkeypatch):
    Path("adir").mkdir()
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", "adir")
    ran = cli("check", VIOLATED, *PIN_VIOLATED, "--format", "github")
    assert ran.code == 2
    assert "GITHUB_STEP_SUMMARY=adir: cannot append the summary" in ran.err
    assert "Traceback" not in ran.err and ran.out == ""


def table(md: str, header: str) -> list[list[str]]:
    lines = md.splitlines()
    start = lines.index(header)
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]])
    return rows


RUN_HEADER = "| spec | params | result | states | transitions | depth |"


def test_markdown_summary_run_table(cli, workdir):
    ran = cli("check", VIOLATED, "--format", "json", "--junit", "x.xml")
    report = ran.json()
    md = cli("check", VIOLATED, "--format", "markdown")
    assert md.code == 1
    md = render_markdown(report)
    assert md.startswith("## haltproof: violated\n\n6 runs: 0 proved, 0 violated as expected, 6 failed, "
                         "0 incomplete (exit 1).")
    rows = table(md, RUN_HEADER)
    assert len(rows) == 6
    for row, run in zip(rows, report["runs"]):
        assert row[0] == f"`{VIOLATED}`"
        assert row[1] == " ".join(f"{k}={v}" for k, v in run["params"].items()).replace("_", "\\_")
        assert row[2] == "❌ violated"
        assert row[3:] == [f"{run['stats']['states']:,}", f"{run['stats']['transitions']:,}",
                           str(run["stats"]["max_depth"])]


def test_markdown_counterexamples_have_a_step_table_and_a_mermaid_diagram(cli, workdir):
    report = cli("check", VIOLATED, "--format", "json").json()
    md = render_markdown(report)
    for name in VIOLATED_PROPS:
        assert f"#### `{name}` in `{VIOLATED}:{line_of(VIOLATED, rf'^  {name}:')}`" in md
    assert md.count("```mermaid\nflowchart TD\n") == 3              # one per property, not per params
    assert "also at: max\\_steps=3 max\\_retries=1; max\\_steps=4" in md
    section = md[md.index("#### `final_answer_on_last_step_kept`"):]
    steps = table(section, "| step | action | choices | rule | state (changes) |")
    assert steps[0] == ["0", "(initial)", "", "", "`steps=0 failures=0 phase=start observation=nothing "
                                                  "decision=undecided scenario=one_match`"]
    assert steps[3] == ["3", "`read_task_cards`", "`obs=one_match`", "`limit`",
                        "`steps=3 observation=one_match decision=limit`"]
    mermaid = section[section.index("```mermaid"):section.index("```", section.index("```mermaid") + 3)]
    assert '    s0["0#58; steps=0 failures=0 phase=start' in mermaid
    assert "    s2 -->|read_task_cards obs=one_match rule limit| s3" in mermaid
    assert "    style s3 stroke:#d00,stroke-width:3px" in mermaid
    for label in re.findall(r'\["(.*?)"\]|\|(.*?)\|', mermaid):
        text = "".join(label)
        assert re.fullmatch(r"[A-Za-z0-9 _.=,#;]*", text), text


def test_markdown_lasso_goes_back_and_independence_shows_both_runs(cli, workdir):
    md = render_markdown(cli("check", LASSO, "-p", "max_steps=2", "-p", "max_retries=0",
                             "--format", "json").json())
    section = md[md.index("#### `terminates`"):md.index("#### `terminates_within")]
    assert "Counterexample, lasso (a prefix, then a cycle), 2 transitions:" in section
    assert "    s1 -->|read_task_cards obs=failed rule continue| s1" in section
    assert "s2[" not in section                          # the lasso's last state is s1 again
    assert "`(no change)  -> back to step 1`" in section
    md = render_markdown(cli("check", INDEPENDENCE, "-p", "max_steps=3", "-p", "max_retries=0",
                             "--format", "json").json())
    section = md[md.index("#### `decide_ignores_scenario`"):]
    assert "The run that does differently, " in section
    assert section.count("```mermaid") >= 2


def test_markdown_lists_expected_violations_and_warnings(cli, workdir):
    md = cli("check", AS_EXPECTED, *PIN_VIOLATED, "--format", "markdown")
    assert md.code == 0
    assert "### Violations" not in md.out
    rows = table(md.out, "| spec | params | property | message |")
    assert sorted(r[2] for r in rows) == sorted(f"`{n}`" for n in VIOLATED_PROPS)
    md = cli("check", PROVED, "-p", "max_steps=1", "-p", "max_retries=1", "--format", "markdown")
    warn = table(md.out, "| spec | line | warning | params |")
    assert [r[1] for r in warn] == [str(line_of(PROVED, r"\{name: error,")),
                                    str(line_of(PROVED, r"\{name: continue,")),
                                    str(line_of(PROVED, r"^terminal:"))]


def test_markdown_incomplete_run(cli, workdir):
    md = cli("check", PROVED, *PIN_PROVED, "--max-states", "3", "--format", "markdown")
    assert md.code == 3
    (row,) = table(md.out, RUN_HEADER)
    assert row[2] == "⚠️ incomplete (stopped at --max-states)"


@pytest.mark.parametrize("text", ['a "b" [c] {d} (e) |f| <g> --> h; #i; `j` %k & l\nm', "end", "A-->B"])
def test_mermaid_labels_cannot_break_out(text):
    label = mermaid_text(text)
    assert re.fullmatch(r"[A-Za-z0-9 _.=,#;]*", label)
    decoded = re.sub(r"#(\d+);", lambda m: chr(int(m.group(1))), label)
    assert decoded == text


def test_markdown_cells_cannot_break_the_table():
    cell = md_cell("a | b\nc <script> *d* _e_ [f](g) `h`")
    assert "\n" not in cell and "<script>" not in cell
    assert re.split(r"(?<!\\)\|", cell) == [cell]
