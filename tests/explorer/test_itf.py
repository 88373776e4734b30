"""ITF traces: the shape Apalache and Quint read, the round trip through haltproof's own
JSON traces, `check --trace-format itf`, and replaying ITF files."""

from __future__ import annotations

import json

import pytest

from conftest import LOOP_DEMO, MUTANTS
from haltproof.explorer.itf import (ITFError, decode_value, encode_value, is_itf, itf_to_trace,
                          trace_to_itf)

TRACE_KEYS = ("trace", "other_trace", "witness")

LASSO = {"kind": "lasso", "loop_start": 1, "params": {"max_steps": 2, "max_retries": 0},
         "steps": [
             {"state": {"steps": 0, "phase": "start", "ok": False}, "action": None, "choices": {},
              "rule": None},
             {"state": {"steps": 0, "phase": "observed", "ok": True}, "action": "read",
              "choices": {"obs": "failed", "n": 2}, "rule": "continue"},
             {"state": {"steps": 0, "phase": "observed", "ok": True}, "action": "read",
              "choices": {"obs": "failed", "n": 2}, "rule": None},
         ]}


def _report(cli, *args):
    ran = cli("check", *args, "--format", "json")
    assert ran.code in (0, 1), ran.err
    return ran.json()


# ---------------------------------------------------------------- the format

def test_itf_shape_follows_adr_015():
    itf = trace_to_itf(LASSO, {"source": "specs/x.yaml", "machine": "x", "property": "terminates",
                               "vars": ["steps", "phase", "ok"],
                               "varTypes": {"steps": "Int", "phase": "Str", "ok": "Bool"}})
    assert set(itf) == {"#meta", "vars", "states", "loop"}
    assert itf["vars"] == ["steps", "phase", "ok"]
    assert itf["loop"] == 1                       # ITF's own lasso field: the loop starts at state 1
    meta = itf["#meta"]
    assert meta["format"] == "ITF" and meta["format-description"].endswith("015adr-trace.html")
    assert meta["source"] == "specs/x.yaml" and meta["machine"] == "x" and meta["property"] == "terminates"
    assert meta["params"] == {"max_steps": 2, "max_retries": 0}
    assert meta["kind"] == "lasso" and meta["loop_start"] == 1
    assert meta["varTypes"] == {"steps": "Int", "phase": "Str", "ok": "Bool"}
    s0, s1, s2 = itf["states"]
    assert s0 == {"#meta": {"index": 0}, "steps": {"#bigint": "0"}, "phase": "start", "ok": False}
    assert s1["#meta"] == {"index": 1, "action": "read", "choices": {"obs": "failed", "n": 2},
                           "rule": "continue"}
    assert s1["ok"] is True and s1["steps"] == {"#bigint": "0"}
    assert s2["#meta"]["rule"] is None
    json.dumps(itf)                                # plain JSON all the way down


def test_a_path_has_no_loop_field():
    path = dict(LASSO, kind="path", loop_start=None)
    itf = trace_to_itf(path)
    assert "loop" not in itf and itf["#meta"]["kind"] == "path" and itf["#meta"]["loop_start"] is None
    assert itf["vars"] == ["steps", "phase", "ok"]     # without spec info: the state's own order


def test_round_trip_is_exact():
    assert itf_to_trace(trace_to_itf(LASSO)) == LASSO
    path = dict(LASSO, kind="path", loop_start=None)
    assert itf_to_trace(trace_to_itf(path)) == path


@pytest.mark.parametrize("value, encoded", [
    (0, {"#bigint": "0"}), (-7, {"#bigint": "-7"}), (10**30, {"#bigint": str(10**30)}),
    (True, True), (False, False), ("done", "done"),
    ([1, "a"], [{"#bigint": "1"}, "a"]),
    ({"x": 1, "y": True}, {"x": {"#bigint": "1"}, "y": True}),
    ({1: "a"}, {"#map": [[{"#bigint": "1"}, "a"]]}),
])
def test_values_encode_and_decode(value, encoded):
    assert encode_value(value) == encoded
    assert decode_value(encoded, "v") == value


def test_other_itf_value_forms_are_read():
    assert decode_value(5, "v") == 5                                   # a small int may be plain JSON
    assert decode_value({"#tup": [{"#bigint": "1"}, "a"]}, "v") == [1, "a"]
    assert decode_value({"#set": ["a", "b"]}, "v") == ["a", "b"]
    assert decode_value({"#map": [["a", {"#bigint": "2"}]]}, "v") == {"a": 2}
    assert decode_value({"tag": "Some", "value": {"#bigint": "3"}}, "v") == {"tag": "Some", "value": 3}
    assert decode_value(encode_value(None), "v") is None


@pytest.mark.parametrize("expr, message", [
    (1.5, "1.5 is not an ITF value"),
    (None, "null is not an ITF value"),
    ({"#bigint": "12x"}, "#bigint '12x' is not an integer"),
    ({"#bigint": 12}, "a #bigint must be the only key and hold a string"),
    ({"#map": [["a"]]}, "#map must hold a list of [key, value] pairs"),
])
def test_bad_values_are_named(expr, message):
    with pytest.raises(ITFError, match="state 3, var x: " + message.replace("[", r"\[").replace("]", r"\]")):
        decode_value(expr, "state 3, var x")


def _itf(**changes):
    doc = trace_to_itf(LASSO)
    doc.update(changes)
    return doc


@pytest.mark.parametrize("doc, message", [
    ({"vars": "steps", "states": [{}]}, "'vars' must be a list of variable names"),
    ({"vars": ["x"], "states": []}, "'states' must be a non-empty list of states"),
    ({"vars": ["x"], "states": [{"x": 1}, {"#meta": {"index": 1}, "x": 2}]},
     "state 1 names no action: haltproof keeps it in the state's '#meta.action'"),
    ({"vars": ["x", "y"], "states": [{"x": 1}]}, "state 0 has no value for var 'y'"),
    ({"vars": ["x"], "states": [{"x": 1}], "loop": 3}, r"'loop' must be the index of a state \(0..0\), got 3"),
    ({"vars": ["x"], "states": [{"x": 1.0}]}, "state 0, var x: 1.0 is not an ITF value"),
    ({"#meta": {"params": [1]}, "vars": ["x"], "states": [{"x": 1}]}, "'#meta.params' must be an object"),
])
def test_malformed_itf_is_rejected_with_the_place(doc, message):
    with pytest.raises(ITFError, match=message):
        itf_to_trace(doc)


def test_itf_is_told_apart_from_json_traces_and_reports():
    assert is_itf(trace_to_itf(LASSO))
    assert is_itf({"vars": [], "states": []})
    assert not is_itf(LASSO)
    assert not is_itf({"schema": "haltproof-report/1", "runs": []})
    assert not is_itf([1, 2])


def test_itf_params_field_of_other_tools_is_read_from_the_first_state():
    doc = {"params": ["K"], "vars": ["x"],
           "states": [{"#meta": {"index": 0}, "K": {"#bigint": "3"}, "x": {"#bigint": "0"}}]}
    assert itf_to_trace(doc)["params"] == {"K": 3}


# ---------------------------------------------------------------- check --trace-format itf

def test_trace_format_itf_rewrites_every_trace_and_keeps_every_key(cli):
    args = (MUTANTS / "decide_reads_scenario.yaml", "-p", "max_steps=3", "-p", "max_retries=1")
    plain = _report(cli, *args)
    itf = _report(cli, *args, "--trace-format", "itf")
    assert itf["trace_format"] == "itf" and "trace_format" not in plain
    assert set(plain) <= set(itf)
    seen = set()
    for run_p, run_i in zip(plain["runs"], itf["runs"], strict=True):
        assert set(run_p) == set(run_i)
        assert run_p["stats"]["states"] == run_i["stats"]["states"]
        for p, q in zip(run_p["properties"], run_i["properties"], strict=True):
            assert set(p) == set(q)                      # trace: null stays null
            for key in TRACE_KEYS:
                if p.get(key) is None:
                    assert q.get(key) is None
                    continue
                seen.add(key)
                assert is_itf(q[key]) and "steps" not in q[key]
                assert q[key]["#meta"]["property"] == p["name"] and q[key]["#meta"]["role"] == key
                assert itf_to_trace(q[key]) == p[key]    # the same trace, exactly
    assert seen == {"trace", "other_trace", "witness"}


def test_trace_format_itf_needs_a_json_report(cli, tmp_path):
    ran = cli("check", LOOP_DEMO, "-p", "max_steps=1", "-p", "max_retries=0", "--trace-format", "itf")
    assert ran.code == 2 and ran.out == ""
    assert "--trace-format itf changes the traces of the JSON report only" in ran.err
    assert "Traceback" not in ran.err
    out = tmp_path / "r.json"
    ran = cli("check", LOOP_DEMO, "-p", "max_steps=1", "-p", "max_retries=0", "--trace-format", "itf",
              "--json", out)
    assert ran.code == 0
    assert json.loads(out.read_text())["trace_format"] == "itf"
    assert cli("check", LOOP_DEMO, "--trace-format", "xml").code == 2


# ---------------------------------------------------------------- replay round trip

def _replay_all(cli, tmp_path, spec, report, suffix):
    """Replay every trace of a report from its own file; return {(run, prop, key): (code, out)}."""
    out = {}
    for r, run in enumerate(report["runs"]):
        for p in run["properties"]:
            for key in TRACE_KEYS:
                if p.get(key) is None:
                    continue
                f = tmp_path / f"{r}-{p['name']}-{key}.{suffix}"
                f.write_text(json.dumps(p[key]))
                ran = cli("replay", spec, "--trace", f)
                assert "Traceback" not in ran.err
                body = ran.out.split("\n", 1)[1]          # past the "# trace FILE on ..." header
                out[(r, p["name"], key)] = (ran.code, body)
    return out


@pytest.mark.parametrize("mutant", sorted(p.name for p in MUTANTS.glob("*.yaml")))
@pytest.mark.slow
def test_every_itf_trace_of_every_mutant_replays_like_its_json_trace(cli, tmp_path, mutant):
    spec = MUTANTS / mutant
    plain = _report(cli, spec)
    itf = _report(cli, spec, "--trace-format", "itf")
    by_json = _replay_all(cli, tmp_path, spec, plain, "json")
    by_itf = _replay_all(cli, tmp_path, spec, itf, "itf.json")
    assert by_json and by_json.keys() == by_itf.keys()
    for k, (code, body) in by_itf.items():
        assert (code, body) == by_json[k], k
        run, prop, key = k
        if prop == "domains" and key == "trace":
            # the trace ends in the state that leaves the domain: replay stops there, exit 1
            assert code == 1 and "is outside its domain" in body, body
        else:
            assert code == 0 and "# ok:" in body, (k, body)


def test_replay_an_itf_report_by_property_and_a_lasso_end_to_end(cli, tmp_path):
    report = tmp_path / "report.json"
    ran = cli("check", MUTANTS / "failure_not_a_step.yaml", "-p", "max_steps=2", "-p", "max_retries=0",
              "--json", report, "--trace-format", "itf")
    assert ran.code == 0                                  # violated exactly as expected
    prop = next(p for p in json.loads(report.read_text())["runs"][0]["properties"]
                if p["name"] == "terminates")
    assert prop["trace"]["loop"] == 1 and prop["trace"]["#meta"]["kind"] == "lasso"
    last, loop = prop["trace"]["states"][-1], prop["trace"]["states"][1]
    assert {k: v for k, v in last.items() if k != "#meta"} == {k: v for k, v in loop.items() if k != "#meta"}
    replayed = cli("replay", MUTANTS / "failure_not_a_step.yaml", "--trace", report,
                   "--property", "terminates")
    assert replayed.code == 0, replayed.out
    assert "# ok: 2 steps" in replayed.out and "(not terminal)" in replayed.out
    # a property object holding an ITF trace works too
    one = tmp_path / "prop.json"
    one.write_text(json.dumps(prop))
    assert cli("replay", MUTANTS / "failure_not_a_step.yaml", "--trace", one).code == 0


@pytest.mark.parametrize("trace_format", ["json", "itf"])
def test_a_trace_past_its_size_limit_is_refused_before_parsing(cli, tmp_path, monkeypatch, trace_format):
    from haltproof.explorer import replay
    report = tmp_path / "report.json"
    spec = MUTANTS / "failure_not_a_step.yaml"
    assert cli("check", spec, "-p", "max_steps=2", "-p", "max_retries=0", "--json", report,
               "--trace-format", trace_format).code == 0
    size = report.stat().st_size
    monkeypatch.setattr(replay, "MAX_TRACE_BYTES", size - 1)
    ran = cli("replay", spec, "--trace", report, "--property", "terminates")
    assert (ran.code, ran.out) == (2, "")
    assert ran.err == (f"error: {report}: the file is {size:,} bytes, more than the limit of "
                       f"{size - 1:,} bytes for a trace or a report\n")
    monkeypatch.setattr(replay, "MAX_TRACE_BYTES", size)     # at the limit: replays
    assert cli("replay", spec, "--trace", report, "--property", "terminates").code == 0


def test_a_trace_without_a_size_is_cut_off_at_the_limit(cli, monkeypatch):
    """/dev/zero has no size to ask first: the read stops one byte past the limit."""
    from haltproof.explorer import replay
    monkeypatch.setattr(replay, "MAX_TRACE_BYTES", 1_000)
    ran = cli("replay", LOOP_DEMO, "--trace", "/dev/zero")
    assert (ran.code, ran.out) == (2, "")
    assert ran.err == "error: /dev/zero: the file is larger than the limit of 1,000 bytes for a trace or a report\n"


def test_replay_a_domains_itf_trace_fails_at_the_step_that_leaves_the_domain(cli, tmp_path):
    report = tmp_path / "report.json"
    assert cli("check", MUTANTS / "decide_counts_as_step.yaml", "-p", "max_steps=3", "-p", "max_retries=0",
               "--json", report, "--trace-format", "itf").code == 0
    ran = cli("replay", MUTANTS / "decide_counts_as_step.yaml", "--trace", report, "--property", "domains")
    assert ran.code == 1
    assert "# FAILED: step 2: steps = 4 is outside its domain 0..3" in ran.out


def test_a_hand_written_itf_file_with_plain_ints_and_bools_replays(cli, tmp_path):
    spec = tmp_path / "flag.yaml"
    spec.write_text(
        "machine: flag\n"
        "params: {N: [2]}\n"
        "vars:\n"
        "  n: {type: int, min: 0, max: N, init: 0}\n"
        "  done: {type: bool, init: false}\n"
        "actions:\n"
        "  tick:\n"
        "    when: not done\n"
        "    choose: {stop: [true, false]}\n"
        "    do:\n"
        "      - set: {n: n + 1, done: stop or n + 1 >= N}\n"
        "terminal: done\n"
        "properties:\n"
        "  bounded: {terminates_within: N}\n")
    doc = {"#meta": {"params": {"N": 2}},
           "vars": ["n", "done"],
           "states": [{"#meta": {"index": 0}, "n": 0, "done": False},
                      {"#meta": {"index": 1, "action": "tick", "choices": {"stop": False}}, "n": 1,
                       "done": False},
                      {"#meta": {"index": 2, "action": "tick", "choices": {"stop": False}},
                       "n": {"#bigint": "2"}, "done": True}]}
    f = tmp_path / "run.itf.json"
    f.write_text(json.dumps(doc))
    ran = cli("replay", spec, "--trace", f)
    assert ran.code == 0, ran.out
    assert "# ok: 2 steps, final state n=2 done=true" in ran.out
    # and a recorded state that differs is named
    doc["states"][2]["done"] = False
    f.write_text(json.dumps(doc))
    ran = cli("replay", spec, "--trace", f)
    assert ran.code == 1
    assert "step 2: the state differs from the recorded one: done recorded false, replay gives true" in ran.out


def test_a_bool_var_is_a_json_bool_in_itf(cli, tmp_path):
    spec = tmp_path / "flag.yaml"
    spec.write_text(
        "machine: flag\n"
        "vars:\n"
        "  done: {type: bool, init: false}\n"
        "actions:\n"
        "  finish:\n"
        "    do:\n"
        "      - set: {done: true}\n"
        "terminal: done\n"
        "properties:\n"
        "  never_done: {always: not done}\n")
    ran = cli("check", spec, "--format", "json", "--trace-format", "itf")
    assert ran.code == 1
    prop = next(p for p in ran.json()["runs"][0]["properties"] if p["name"] == "never_done")
    assert [s["done"] for s in prop["trace"]["states"]] == [False, True]
    assert prop["trace"]["#meta"]["varTypes"] == {"done": "Bool"}


@pytest.mark.parametrize("content, message", [
    ('{"vars": ["steps"], "states": []}', "not a valid ITF trace: 'states' must be a non-empty list"),
    ('{"#meta": {}, "vars": ["steps"], "states": [{"steps": 1.5}]}',
     "not a valid ITF trace: state 0, var steps: 1.5 is not an ITF value"),
    ('{"vars": ["steps"], "states": [{"steps": 0}, {"steps": 1}]}',
     "not a valid ITF trace: state 1 names no action"),
])
def test_bad_itf_files_are_usage_errors_naming_the_file(cli, tmp_path, content, message):
    f = tmp_path / "bad.itf.json"
    f.write_text(content)
    ran = cli("replay", LOOP_DEMO, "--trace", f)
    assert ran.code == 2 and "Traceback" not in ran.err
    assert f"bad.itf.json: {message}" in ran.err


def test_an_itf_state_naming_a_var_twice_is_a_usage_error(cli, tmp_path):
    f = tmp_path / "twice.itf.json"
    f.write_text('{"#meta": {"params": {"max_steps": 1, "max_retries": 0}}, "vars": ["x"], '
                 '"states": [{"x": {"#bigint": "0"}, "x": {"#bigint": "1"}}]}')
    ran = cli("replay", LOOP_DEMO, "--trace", f)
    assert (ran.code, ran.out) == (2, "")
    assert ran.err == (f"error: {f}: not a JSON trace: duplicate key 'x' in a JSON object (which value "
                       "is meant is ambiguous)\n")


def test_itf_vars_that_are_not_the_specs_are_a_usage_error(cli, tmp_path):
    f = tmp_path / "other.itf.json"
    f.write_text(json.dumps({"#meta": {"params": {"max_steps": 1, "max_retries": 0}}, "vars": ["x"],
                             "states": [{"x": {"#bigint": "0"}}]}))
    ran = cli("replay", LOOP_DEMO, "--trace", f)
    assert ran.code == 2 and "the trace's state has vars ['x']" in ran.err


def test_itf_of_a_spec_with_monitors_lists_the_user_s_vars_only(cli):
    """A pattern's monitor vars are in no trace, so not in an ITF trace's `vars` either."""
    from conftest import ROOT
    report = _report(cli, ROOT / "tests" / "fixtures" / "monitors" / "toggle.yaml", "--trace-format", "itf")
    traces = [p["trace"] for p in report["runs"][0]["properties"] if p.get("trace")]
    assert len(traces) == 2
    for t in traces:
        assert t["vars"] == ["x", "done"] and set(t["#meta"]["varTypes"]) == {"x", "done"}
        assert all(set(s) == {"#meta", "x", "done"} for s in t["states"])
