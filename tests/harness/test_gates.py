"""The gate layer (seed S3) as code: the ledger, each gate alone, the chain, the loop, the
decision records, and the demo command."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from conftest import ROOT
from haltproof.harness import gate_loop
from haltproof.harness.decision_records import (DECISION_FIELDS, END_FIELDS, OPTIONAL_DECISION_FIELDS, JsonLinesWriter)
from haltproof.harness.gate_loop import (ConfigError, GateLoop, GateLoopConfig, Tool, UnknownToolError, main,
                               scripted_policy)
from haltproof.harness.gates import (BudgetGate, GateChain, GateContext, GateDecision, PerToolBudgetGate, RecencyGate,
                           RegexGate, ToolCall, ToolCallError, WhitelistGate, build_chain)
from haltproof.harness.ledger import LedgerRow, ObservationLedger, clip_to_tokens, heuristic_tokens


def ctx(turn: int = 1, ledger: ObservationLedger | None = None) -> GateContext:
    return GateContext(turn, ledger if ledger is not None else ObservationLedger())


def call(tool: str = "read_file", max_tokens: int = 1, extends: int | None = None, **args: str) -> ToolCall:
    return ToolCall(tool, args or {"path": "README.md"}, max_tokens, extends)


# ------------------------------------------------------------------ the ledger

def test_heuristic_counts_len_over_four():
    assert [heuristic_tokens("x" * n) for n in (0, 3, 4, 7, 8, 401)] == [0, 0, 1, 1, 2, 100]


def test_ledger_rows_cumulative_and_per_tool():
    ledger = ObservationLedger()
    assert ledger.cumulative() == 0 and ledger.per_tool("read_file") == 0 and len(ledger) == 0
    rows = [ledger.record(1, "read_file", "x" * 40), ledger.record(2, "grep", "y" * 9),
            ledger.record(2, "read_file", "z" * 3), ledger.record(4, "read_file", "w" * 20)]
    assert rows == [LedgerRow(1, "read_file", 10, 10), LedgerRow(2, "grep", 2, 12),
                    LedgerRow(2, "read_file", 0, 12), LedgerRow(4, "read_file", 5, 17)]
    assert ledger.rows == tuple(rows) and list(ledger) == rows
    assert ledger.cumulative() == 17
    assert ledger.per_tool("read_file") == 15 and ledger.per_tool("grep") == 2 and ledger.per_tool("shell") == 0
    assert ledger.cumulative() == sum(r.tokens for r in ledger.rows) == rows[-1].cumulative


def test_ledger_counter_is_replaceable():
    words = ObservationLedger(counter=lambda text: len(text.split()))
    assert words.record(1, "grep", "three little words").tokens == 3
    assert words.count("a b") == 2 and words.cumulative() == 3


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_ledger_rejects_counts_that_are_not_token_counts(bad):
    with pytest.raises(ValueError):
        ObservationLedger().record_tokens(1, "grep", bad)
    with pytest.raises(ValueError, match="token counter"):
        ObservationLedger(counter=lambda text: bad).record(1, "grep", "text")


def test_ledger_rows_come_in_turn_order():
    ledger = ObservationLedger()
    ledger.record_tokens(3, "grep", 1)
    with pytest.raises(ValueError, match="turn order"):
        ledger.record_tokens(2, "grep", 1)


def test_clip_keeps_the_longest_prefix_within_the_reservation():
    text = "abcdefghij" * 10                     # 100 characters, 25 tokens
    assert clip_to_tokens(text, 25) == text
    assert clip_to_tokens(text, 3) == text[:15] and heuristic_tokens(text[:15]) == 3
    assert clip_to_tokens(text, 0) == text[:3]
    def words(t):                            # any monotone counter works
        return len(t.split())
    assert clip_to_tokens("one two three four", 2, words) == "one two "
    with pytest.raises(ValueError):
        clip_to_tokens(text, -1)


# ------------------------------------------------------------------ each gate alone

def test_tool_call_validation():
    for bad in [dict(tool="", args={}, max_tokens=1), dict(tool="x", args=[], max_tokens=1),
                dict(tool="x", args={1: "a"}, max_tokens=1), dict(tool="x", args={}, max_tokens=0),
                dict(tool="x", args={}, max_tokens=1, extends=0), dict(tool="x", args={}, max_tokens=True)]:
        with pytest.raises(ToolCallError):
            ToolCall(**bad)


def test_whitelist_gate():
    gate = WhitelistGate({"read_file", "grep"})
    ok = gate.evaluate(call("grep"), ctx())
    assert ok == GateDecision(True, "grep is on the whitelist", "whitelist")
    no = gate.evaluate(call("shell"), ctx())
    assert not no.allow and no.gate_name == "whitelist" and "'shell' is not on the whitelist" in no.reason
    assert not WhitelistGate([]).evaluate(call("read_file"), ctx()).allow


DANGEROUS = ["rm -rf /", "rm -fr build", "rm -Rf x", "rm -r -f x", "sudo rm -rf ~", "rm --recursive --force d",
             "rm d -rf", "/bin/rm -rf x", "cd /tmp && rm -rf *", "ls; rm -fR y",
             "http://10.0.0.7/admin", "http://127.0.0.1:8080/", "https://localhost/", "http://api.localhost/",
             "http://169.254.169.254/latest/meta-data/", "http://[::1]/", "http://192.168.1.1/",
             "http://172.16.0.5/", "http://100.64.0.1/", "http://0.0.0.0:8000/", "http://[fd00::5]/",
             "http://0x7f000001/", "http://2130706433/", "http://0177.0.0.1/", "http://127.1/",
             "http://[::ffff:127.0.0.1]/", "curl 10.1.2.3", "curl -s ::1", "ping fe80::1%eth0",
             "curl localhost:9000", "http://[::1"]
SAFE = ["grep -rn TODO src", "grep -rf patterns.txt src", "rm -r build", "rm -f old.log", "confirm -rf",
        "rmdir -rf", "rm -v a; ls -rf", "https://example.com/docs", "http://93.184.216.34/",
        "https://[2606:4700::1111]/", "see https://example.com/localhost", "version 1.2.3.4",
        "std::vector<int>", "at 12:30:45", "docs/plan.md"]


@pytest.mark.parametrize("text", DANGEROUS)
def test_regex_gate_denies_rm_rf_and_internal_addresses(text):
    d = RegexGate().evaluate(call("shell", cmd=text), ctx())
    assert not d.allow and d.gate_name == "regex" and d.reason.startswith("args.cmd ")


@pytest.mark.parametrize("text", SAFE)
def test_regex_gate_allows_lookalikes(text):
    assert RegexGate().evaluate(call("shell", cmd=text), ctx()).allow


def test_regex_gate_searches_nested_arguments_and_keys():
    gate = RegexGate()
    nested = ToolCall("http_get", {"request": {"headers": ["x", {"Forwarded": "for=10.2.3.4"}]}}, 1)
    d = gate.evaluate(nested, ctx())
    assert not d.allow and "args.request.headers[1].Forwarded" in d.reason and "10.2.3.4" in d.reason
    assert not gate.evaluate(ToolCall("shell", {"rm -rf /": "yes"}, 1), ctx()).allow


def test_regex_gate_patterns_and_address_check_are_configurable():
    gate = RegexGate(patterns={"drop table": r"(?i)\bdrop\s+table\b"}, block_internal_addresses=False)
    assert not gate.evaluate(call("sql", q="DROP TABLE users"), ctx()).allow
    assert gate.evaluate(call("shell", cmd="rm -rf /"), ctx()).allow          # the default patterns replaced
    assert gate.evaluate(call("http_get", url="http://127.0.0.1/"), ctx()).allow


def test_recency_gate_window_edges():
    gate = RecencyGate(window=2)        # at turn 5 turns 3 and 4 are visible
    verdicts = {r: gate.evaluate(call(extends=r), ctx(turn=5)).allow for r in range(1, 8)}
    assert verdicts == {1: False, 2: False, 3: True, 4: True, 5: False, 6: False, 7: False}
    assert gate.evaluate(call(), ctx(turn=5)).allow                          # extends nothing
    expired = gate.evaluate(call(extends=2), ctx(turn=5))
    assert expired.gate_name == "recency" and "left the 2-turn window after turn 4" in expired.reason
    assert "not earlier" in gate.evaluate(call(extends=5), ctx(turn=5)).reason
    assert RecencyGate(window=1).evaluate(call(extends=1), ctx(turn=2)).allow
    assert not RecencyGate(window=1).evaluate(call(extends=1), ctx(turn=3)).allow
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ValueError):
            RecencyGate(bad)


def _ledger(**per_tool: int) -> ObservationLedger:
    ledger = ObservationLedger()
    for tool, tokens in per_tool.items():
        ledger.record_tokens(1, tool, tokens)
    return ledger


def test_budget_gate_allows_exactly_the_calls_that_fit():
    gate = BudgetGate(10)
    assert gate.evaluate(call(max_tokens=4), ctx(ledger=_ledger(read_file=6))).allow        # 6 + 4 == 10 fits
    over = gate.evaluate(call(max_tokens=5), ctx(ledger=_ledger(read_file=6)))
    assert not over.allow and over.gate_name == "budget" and "would be exceeded: 6 observed + 5 reserved > 10" in over.reason
    spent = gate.evaluate(call(max_tokens=1), ctx(ledger=_ledger(read_file=10)))
    assert not spent.allow and "spent: 10 of 10" in spent.reason
    assert not BudgetGate(0).evaluate(call(max_tokens=1), ctx()).allow
    for used in range(0, 13):
        for reserve in range(1, 6):
            d = gate.evaluate(call(max_tokens=reserve), ctx(ledger=_ledger(grep=used) if used else None))
            assert d.allow == (used + reserve <= 10), (used, reserve)


def test_per_tool_budget_gate_reads_only_its_tool():
    gate = PerToolBudgetGate({"grep": 5})
    ledger = _ledger(read_file=100, grep=3)
    assert gate.evaluate(call("grep", max_tokens=2), ctx(ledger=ledger)).allow
    d = gate.evaluate(call("grep", max_tokens=3), ctx(ledger=ledger))
    assert not d.allow and d.gate_name == "per_tool_budget" and "the budget of grep would be exceeded" in d.reason
    assert gate.evaluate(call("read_file", max_tokens=50), ctx(ledger=ledger)).allow      # no cap on it
    with pytest.raises(ValueError):
        PerToolBudgetGate({"grep": -1})


def test_gates_are_deterministic_and_do_not_touch_the_context():
    ledger = _ledger(grep=3)
    c = ctx(turn=4, ledger=ledger)
    chain = build_chain({"grep"}, 10, 2, {"grep": 5})
    probe = ToolCall("grep", {"pattern": "x"}, 2, extends=3)
    assert chain.evaluate(probe, c) == chain.evaluate(probe, c)
    assert ledger.rows == (LedgerRow(1, "grep", 3, 3),)


# ------------------------------------------------------------------ the chain

class Fake:
    def __init__(self, name: str, allow: bool, log: list[str]):
        self.name, self.allow, self.log = name, allow, log

    def evaluate(self, call: ToolCall, ctx: GateContext) -> GateDecision:
        self.log.append(self.name)
        return GateDecision(self.allow, f"{self.name} says {self.allow}", self.name)


def test_chain_short_circuits_on_the_first_deny():
    log: list[str] = []
    chain = GateChain([Fake("a", True, log), Fake("b", False, log), Fake("c", False, log), Fake("d", True, log)])
    d = chain.evaluate(call(), ctx())
    assert log == ["a", "b"]                                    # c and d never ran
    assert (d.allow, d.gate_name, d.reason) == (False, "b", "b says False")
    assert d.evaluated == ("a", "b") and [t.allow for t in d.trail] == [True, False]


def test_chain_allows_when_every_gate_allows_and_records_them_all():
    log: list[str] = []
    d = GateChain([Fake("a", True, log), Fake("b", True, log)]).evaluate(call(), ctx())
    assert d.allow and d.gate_name == "chain" and d.evaluated == ("a", "b") and log == ["a", "b"]
    assert GateChain([]).evaluate(call(), ctx()).allow


def test_chain_order_decides_which_gate_is_named():
    bad = ToolCall("shell", {"cmd": "rm -rf /"}, 5, extends=1)        # every gate would deny it
    spent = _ledger(read_file=10)
    gates = build_chain({"read_file"}, 10, 1, {"shell": 1}).gates
    assert [g.name for g in gates] == ["whitelist", "regex", "recency", "per_tool_budget", "budget"]
    for k, expected in enumerate(["whitelist", "regex", "recency", "per_tool_budget", "budget"]):
        d = GateChain(gates[k:]).evaluate(bad, ctx(turn=5, ledger=spent))
        assert d.gate_name == expected and d.evaluated == (expected,)
    reversed_chain = GateChain(list(reversed(gates)))
    assert reversed_chain.evaluate(bad, ctx(turn=5, ledger=spent)).gate_name == "budget"


def test_chain_rejects_two_gates_with_one_name_and_nests():
    with pytest.raises(ValueError, match="two gates named"):
        GateChain([WhitelistGate({"a"}), WhitelistGate({"b"})])
    inner = GateChain([WhitelistGate({"grep"})])
    outer = GateChain([inner, BudgetGate(5)])
    d = outer.evaluate(call("read_file"), ctx())
    assert not d.allow and d.gate_name == "whitelist" and d.evaluated == ("whitelist",)


# ------------------------------------------------------------------ the loop

def _loop(**overrides) -> tuple[GateLoop, list[str]]:
    ran: list[str] = []

    def tool(name: str, output: str, reserve: int) -> Tool:
        def run(args):
            ran.append(name)
            return output
        return Tool(name, run, reserve)
    config = dict(whitelist={"read_file", "grep"}, token_budget=10, window=2, refusal_threshold=2, turn_limit=5,
                  per_tool_budgets={"grep": 4})
    config.update(overrides)
    tools = {"read_file": tool("read_file", "r" * 16, 4), "grep": tool("grep", "g" * 100, 3),
             "shell": tool("shell", "s", 1)}
    return GateLoop(GateLoopConfig(**config), tools), ran


def test_allow_dispatches_then_ledger_then_message_store():
    loop, ran = _loop()
    r = loop.step({"tool": "read_file", "args": {"path": "a.md"}})
    assert r.dispatched and ran == ["read_file"] and r.tokens == 4 and not r.truncated
    assert loop.ledger.rows == (LedgerRow(1, "read_file", 4, 4),)
    (m,) = loop.messages
    assert (m.turn, m.role, m.name, m.content, m.call_id) == (1, "tool", "read_file", "r" * 16, "call_1")
    assert loop.refusal_count == 0 and loop.status == "running" and loop.dispatch_count == 1


def test_output_is_clipped_to_the_reservation():
    loop, _ = _loop()
    r = loop.step({"tool": "grep", "args": {"pattern": "x"}})        # 100 characters, reservation 3
    assert r.truncated and r.tokens == 3 and loop.messages[0].content == "g" * 15
    assert r.record["haltproof.observation.truncated"] is True


def test_deny_tells_the_model_counts_and_does_not_dispatch():
    loop, ran = _loop()
    r = loop.step({"tool": "shell", "args": {"cmd": "ls"}})
    assert not r.dispatched and ran == [] and r.tokens == 0 and len(loop.ledger) == 0
    (m,) = loop.messages
    assert m.role == "system" and m.turn == 1 and "whitelist gate" in m.content and r.decision.reason in m.content
    assert loop.refusal_count == 1 and loop.status == "running"


def test_loop_aborts_when_refusals_reach_the_threshold():
    loop, ran = _loop(refusal_threshold=2)
    end = loop.run(scripted_policy([{"tool": "shell", "args": {}}, {"tool": "read_file", "args": {}},
                                    {"tool": "grep", "args": {"pattern": "rm -rf /"}},
                                    {"tool": "read_file", "args": {}}]))
    assert loop.status == "aborted" and loop.turn == 3 and loop.refusal_count == 2 and ran == ["read_file"]
    assert end["haltproof.loop.status"] == "aborted" and end["haltproof.tool.dispatch_count"] == 1
    with pytest.raises(RuntimeError, match="stopped"):
        loop.step({"tool": "read_file", "args": {}})


def test_loop_stops_at_the_turn_limit_and_when_the_policy_is_done():
    loop, _ = _loop(turn_limit=2)
    loop.run(scripted_policy([{"tool": "read_file", "args": {}}] * 5))
    assert (loop.status, loop.turn) == ("turn_limit", 2)
    loop, _ = _loop()
    loop.run(scripted_policy([{"tool": "read_file", "args": {}}]))
    assert (loop.status, loop.turn) == ("finished", 1)


def test_budget_reached_then_every_call_is_denied():
    loop, _ = _loop(token_budget=8, refusal_threshold=5)
    loop.run(scripted_policy([{"tool": "read_file", "args": {}}] * 5))
    gates = [r["haltproof.gate.name"] for r in loop.records[:-1]]
    assert gates == ["chain", "chain", "budget", "budget", "budget"]
    assert loop.ledger.cumulative() == 8 and loop.refusal_count == 3


def test_reservation_comes_from_the_registry_and_a_proposal_may_only_lower_it():
    loop, _ = _loop()
    assert loop.prepare({"tool": "grep", "args": {}}, 1).max_tokens == 3
    assert loop.prepare({"tool": "grep", "args": {}, "max_tokens": 1}, 1).max_tokens == 1
    assert loop.prepare({"tool": "grep", "args": {}, "max_tokens": 99}, 1).max_tokens == 3
    assert loop.prepare({"tool": "invented", "args": {}}, 1).max_tokens == 1
    with pytest.raises(ToolCallError, match="unknown field"):
        loop.prepare({"tool": "grep", "argz": {}}, 1)
    with pytest.raises(ToolCallError):
        loop.step({"tool": "grep", "args": "not a mapping"})
    assert loop.turn == 0                           # a malformed proposal takes no turn


def test_tool_failure_is_an_observation_and_tools_cannot_change_the_call():
    def boom(args):
        raise OSError("disk on fire")

    def mutate(args):
        args["path"] = "/etc/shadow"
        return "ok"
    config = GateLoopConfig(whitelist={"boom", "mutate"}, token_budget=100, window=2, refusal_threshold=2,
                            turn_limit=5)
    loop = GateLoop(config, {"boom": Tool("boom", boom, 20), "mutate": Tool("mutate", mutate, 20)})
    loop.step({"tool": "boom", "args": {}})
    assert loop.messages[0].content == "error: OSError: disk on fire"
    proposal = {"tool": "mutate", "args": {"path": "a.md"}}
    r = loop.step(proposal)
    assert r.call.args == {"path": "a.md"} and proposal["args"] == {"path": "a.md"}


def test_an_allowed_unregistered_tool_is_an_error_not_a_silent_call():
    loop = GateLoop(GateLoopConfig(whitelist={"ghost"}, token_budget=9, window=1, refusal_threshold=1,
                                   turn_limit=2), {})
    with pytest.raises(UnknownToolError):
        loop.step({"tool": "ghost", "args": {}})


def test_the_policy_sees_a_copy_of_the_last_n_turns():
    loop, _ = _loop(window=1)
    seen = []

    def policy(view):
        seen.append(view)
        view["messages"].clear()
        return {"tool": "read_file", "args": {}} if view["turn"] <= 3 else None
    loop.run(policy)
    assert [v["turn"] for v in seen] == [1, 2, 3, 4]
    assert [[m["turn"] for m in v["messages"]] for v in seen] == [[], [], [], []]   # cleared by the policy
    assert len(loop.messages) == 3
    assert [m.turn for m in loop.messages.visible(4, 1)] == [3]
    assert [m.turn for m in loop.messages.visible(4, 2)] == [2, 3]


@pytest.mark.parametrize("bad", [dict(token_budget=-1), dict(window=0), dict(refusal_threshold=0),
                                 dict(turn_limit=0), dict(per_tool_budgets={"grep": -2}), dict(turn_limit="3"),
                                 dict(turn_limit=True), dict(token_budget=2 ** 63),
                                 dict(per_tool_budgets={"grep": 2 ** 63})])
def test_config_validation(bad):
    with pytest.raises(ConfigError):
        _loop(**bad)


# ------------------------------------------------------------------ records

def _records_of_demo(capture: bool = False) -> list[dict]:
    buf = io.StringIO()
    loop = GateLoop(gate_loop.DEMO_CONFIG, gate_loop.demo_tools(), sink=JsonLinesWriter(buf),
                    conversation_id="t", capture_arguments=capture)
    loop.run(scripted_policy(gate_loop.DEMO_SCRIPT + [{"tool": "shell", "args": {"cmd": "ls"}}]))
    lines = buf.getvalue().splitlines()
    assert [json.loads(ln) for ln in lines] == loop.records
    return [json.loads(ln) for ln in lines]


def _attribute_value(v) -> bool:
    return isinstance(v, (str, bool, int)) or (isinstance(v, list) and all(isinstance(x, str) for x in v))


def test_records_are_json_lines_with_the_documented_fields():
    records = _records_of_demo()
    *decisions, end = records
    assert len(decisions) == 3
    for rec in decisions:
        assert set(DECISION_FIELDS) <= set(rec) <= set(DECISION_FIELDS) | set(OPTIONAL_DECISION_FIELDS)
        assert all(_attribute_value(v) for v in rec.values()), rec
        assert rec["event.name"] == "haltproof.gate.decision"
        assert rec["gen_ai.operation.name"] == "execute_tool" and rec["gen_ai.tool.type"] == "function"
        assert rec["gen_ai.conversation.id"] == "t"
        assert ("error.type" in rec) == (rec["haltproof.gate.decision"] == "deny")
        assert "gen_ai.tool.call.arguments" not in rec
    assert [r["haltproof.gate.decision"] for r in decisions] == ["allow", "allow", "deny"]
    assert decisions[2]["haltproof.gate.name"] == "budget" and decisions[2]["error.type"] == "haltproof.gate.denied"
    assert [r["haltproof.ledger.cumulative_tokens"] for r in decisions] == [50, 100, 100]
    assert decisions[0]["haltproof.gate.evaluated"] == ["whitelist", "regex", "recency", "per_tool_budget", "budget"]
    assert set(end) == set(END_FIELDS) and all(_attribute_value(v) for v in end.values())
    assert end["event.name"] == "haltproof.loop.end" and end["haltproof.refusal_count"] == 1
    assert end["haltproof.loop.status"] == "turn_limit" and end["haltproof.tool.dispatch_count"] == 2


def test_arguments_are_recorded_only_when_captured():
    rec = _records_of_demo(capture=True)[0]
    assert json.loads(rec["gen_ai.tool.call.arguments"]) == {"path": "README.md"}


def test_a_denied_record_lists_only_the_gates_that_ran():
    loop, _ = _loop()
    rec = loop.step({"tool": "read_file", "args": {"url": "http://10.0.0.1/"}, "extends": None}).record
    assert rec["haltproof.gate.evaluated"] == ["whitelist", "regex"] and rec["haltproof.gate.name"] == "regex"
    rec = loop.step({"tool": "read_file", "args": {}, "extends": 2}).record
    assert rec["haltproof.gate.name"] == "recency" and rec["haltproof.tool.extends_turn"] == 2


# ------------------------------------------------------------------ the demo command

def test_demo_three_turns_budget_trips_on_turn_three(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    turns = out.split("\nturn ")
    assert len(turns) == 3
    assert "=> ALLOW" in turns[0] and "=> ALLOW" in turns[1]
    assert "budget           DENY   the observation budget is spent: 100 of 100 tokens observed" in turns[2]
    assert "=> DENY by budget" in turns[2] and "refusal_count 1/3" in turns[2]
    assert out.rstrip().endswith("run ended: turn_limit after 3 turns; 2 dispatched, refusal_count 1, "
                                 "100/100 tokens observed")


def test_demo_as_a_real_process_exits_zero():
    ran = subprocess.run([sys.executable, "-m", "haltproof.harness.gate_loop"], cwd=ROOT, capture_output=True, text=True)
    assert ran.returncode == 0 and ran.stderr == ""
    assert "=> DENY by budget" in ran.stdout and "refusal_count 1" in ran.stdout


def test_demo_records_file_and_stdout(tmp_path, capsys):
    path = tmp_path / "decisions.jsonl"
    assert main(["--records", str(path), "--capture-arguments"]) == 0
    lines = path.read_text().splitlines()
    assert len(lines) == 4 and all(json.loads(ln) for ln in lines)
    assert json.loads(lines[2])["haltproof.gate.name"] == "budget"
    assert "turn 3" in capsys.readouterr().out
    assert main(["--records", "-"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 4 and [json.loads(ln)["event.name"] for ln in out][-1] == "haltproof.loop.end"


def test_demo_script_option(tmp_path, capsys):
    script = tmp_path / "calls.json"
    script.write_text(json.dumps([{"tool": "shell", "args": {"cmd": "ls"}},
                                  {"tool": "grep", "args": {"pattern": "x", "path": "http://127.0.0.1/"}},
                                  {"tool": "read_file", "args": {"path": "README.md"}, "extends": 1}]))
    assert main(["--script", str(script), "--turns", "5", "--window", "1"]) == 0
    out = capsys.readouterr().out
    assert "=> DENY by whitelist" in out and "=> DENY by regex" in out and "=> DENY by recency" in out
    assert "run ended: aborted after 3 turns" in out        # the third refusal reaches A=3


TOO_BIG = "9223372036854775808"          # 2^63: no OpenTelemetry int attribute holds it
LIMITS = [
    ("--budget", "-1", "the token budget must be in 0..9223372036854775807, got -1"),
    ("--budget", TOO_BIG, f"the token budget must be in 0..9223372036854775807, got {TOO_BIG}"),
    ("--window", "0", "the recency window must be in 1..9223372036854775807, got 0"),
    ("--window", "-3", "the recency window must be in 1..9223372036854775807, got -3"),
    ("--window", TOO_BIG, f"the recency window must be in 1..9223372036854775807, got {TOO_BIG}"),
    ("--refusals", "0", "the refusal threshold must be in 1..9223372036854775807, got 0"),
    ("--refusals", "-1", "the refusal threshold must be in 1..9223372036854775807, got -1"),
    ("--refusals", TOO_BIG, f"the refusal threshold must be in 1..9223372036854775807, got {TOO_BIG}"),
    ("--turns", "0", "the turn limit must be in 1..9223372036854775807, got 0"),
    ("--turns", "-1", "the turn limit must be in 1..9223372036854775807, got -1"),
    ("--turns", "1" + "0" * 50, "the turn limit must be in 1..9223372036854775807, got "
                                "10000000000000000000... (51 characters)"),
]


@pytest.mark.parametrize("option, value, message", LIMITS, ids=[f"{o}={v}" for o, v, _ in LIMITS])
def test_demo_limits_out_of_range_are_exit_2_naming_the_limit(option, value, message, capsys):
    """A negative, zero or past-64-bit limit: one message, nothing run (the budget above 2^63
    ran, and its records carried an int no OpenTelemetry attribute holds)."""
    assert main([option, value]) == 2
    assert capsys.readouterr() == ("", f"error: {message}\n")


@pytest.mark.parametrize("option, value", [("--budget", "0"), ("--budget", "9223372036854775807"),
                                           ("--turns", "9223372036854775807"), ("--window", "1"),
                                           ("--refusals", "1")])
def test_demo_limits_at_their_bounds_run(option, value, capsys):
    assert main([option, value]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("run ended: ")


def test_demo_script_past_its_size_limit_is_refused_before_parsing(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(gate_loop, "MAX_SCRIPT_BYTES", 100)
    script = tmp_path / "calls.json"
    script.write_text("[" + " " * 99 + "]")                  # 101 bytes, valid JSON
    assert main(["--script", str(script)]) == 2
    assert capsys.readouterr() == ("", f"error: {script}: the file is 101 bytes, more than the limit of "
                                       "100 bytes for a script\n")
    script.write_text("[" + " " * 98 + "]")                  # 100 bytes: runs
    assert main(["--script", str(script)]) == 0


@pytest.mark.parametrize("argv, message", [
    (["--script", "/nonexistent/calls.json"], "cannot read the script"),
    (["--records", "/nonexistent/dir/out.jsonl"], "cannot write the records"),
])
def test_demo_bad_input_is_exit_2_with_a_message(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and "Traceback" not in err


@pytest.mark.parametrize("content, message", [
    ("{not json", "not valid JSON"), ('{"tool": "grep"}', "must be a JSON list"),
    ('[{"tool": "grep", "args": {}, "max_tokens": 0}]', "max_tokens must be an int >= 1"),
    ('[{"tool": "grep", "extends": "two"}]', "extends must be None or a turn number"),
    ('[{"tool": 7}]', "tool must be a non-empty string"),
    ('[{"tool": "grep", "tool": "rm"}]', "calls.json: duplicate key 'tool' in a JSON object (which value "
                                         "is meant is ambiguous)"),
])
def test_demo_bad_script_is_exit_2(tmp_path, content, message, capsys):
    script = tmp_path / "calls.json"
    script.write_text(content)
    assert main(["--script", str(script)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_demo_usage_errors_are_exit_2():
    ran = subprocess.run([sys.executable, "-m", "haltproof.harness.gate_loop", "--turns", "three"], cwd=ROOT,
                         capture_output=True, text=True)
    assert ran.returncode == 2 and "invalid int value" in ran.stderr and "Traceback" not in ran.stderr
