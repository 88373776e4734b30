"""`haltproof traces`: recorded runs of examples/agent_loop (JSONL, and OpenTelemetry spans made with
the real SDK) checked against the spec, every planted deviation found, and the fit."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from haltproof.cli.main import main
from haltproof.cli.traces import check_recorded
from haltproof.explorer.recorded import fit_counts, probabilities_block, wilson
from haltproof.machine.spec import load_spec

ROOT = Path(__file__).resolve().parent.parent.parent
AGENT = ROOT / "examples" / "agent_loop" / "agent.yaml"
PINS = ["-p", "max_steps=3", "-p", "max_retries=1"]
TRUE = {"answer": 0.3, "tool_ok": 0.5, "tool_error": 0.2}


def _simulate(rng: random.Random, max_steps: int = 3, max_retries: int = 1) -> list[str]:
    """One run of agent.py's loop as the spec describes it: the moves until it stops."""
    steps = retries = 0
    status = "running"
    moves = []
    while status == "running":
        move = rng.choices(list(TRUE), weights=list(TRUE.values()))[0]
        moves.append(move)
        if steps >= max_steps:
            status = "step_limit"
        elif move == "answer":
            status = "answered"
        elif move == "tool_error" and retries >= max_retries:
            status = "tool_failed"
        if status in ("running", "answered"):
            steps += 1
        if move == "tool_error" and status == "running":
            retries += 1
    return moves


def _recorded(n: int = 1000) -> tuple[list[dict], dict[str, tuple[str, int]]]:
    """n runs, some drifting: one step after the end (leaves the model), or cut short (unfinished)."""
    rng = random.Random(30)
    runs, planted = [], {}
    for i in range(n):
        moves = _simulate(rng)
        if i % 40 == 7:
            moves.append("answer")
            planted[f"r{i}"] = ("leaves_model", len(moves))
        elif i % 55 == 3 and len(moves) > 1:
            moves.pop()
            planted[f"r{i}"] = ("unfinished", len(moves))
        runs.append({"run": f"r{i}", "events": [{"action": "step", "choices": {"move": m}} for m in moves]})
    return runs, planted


@pytest.mark.slow
@pytest.mark.verdict
def test_every_planted_deviation_is_found_and_the_fit_contains_the_true_weights(tmp_path, capsys):
    runs, planted = _recorded()
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in runs))
    outcomes, guard, followed = check_recorded(str(AGENT), str(path), {"max_steps": 3, "max_retries": 1})
    found = {o.run: (o.status, o.step) for o in outcomes if o.status != "conforms"}
    assert found == planted and len(planted) == 39
    counts = fit_counts(guard, followed)["step"]["move"]
    n = sum(counts.values())
    for move, p in TRUE.items():
        lo, hi = wilson(counts[move], n)
        assert lo <= p <= hi, (move, counts, lo, hi)
    fit = tmp_path / "fit.yaml"
    assert main(["traces", str(AGENT), str(path), *PINS, "--fit", str(fit)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("1000 runs: 961 conforms, 0 violates, 25 leaves model, 14 unfinished\n")
    assert "  run r7: leaves the model at step" in out
    # the block is the spec language's: a spec with it loads
    spec_text = AGENT.read_text() + "\n" + fit.read_text()
    weighted = tmp_path / "agent.yaml"
    weighted.write_text(spec_text)
    assert [w.action for w in load_spec(weighted).probabilities] == ["step"]


def test_the_fit_block_says_where_the_data_are_thin():
    counts = {"step": {"move": {"answer": 3, "tool_ok": 2, "tool_error": 0}}}
    assert probabilities_block(counts, "5 runs of r.jsonl") == (
        "# fitted by `haltproof traces` from 5 runs of r.jsonl: observed frequency of each choice value,\n"
        "# with its Wilson 95% interval and the count it rests on\n"
        "probabilities:\n"
        "  step:\n"
        "    move:  # thin: only 5 observations\n"
        "      answer: '3/5'  # 0.600 [0.231, 0.882], 3 of 5\n"
        "      tool_ok: '2/5'  # 0.400 [0.118, 0.769], 2 of 5\n"
        "      tool_error: '0/1'  # 0.000 [0.000, 0.434], 0 of 5; never observed\n")


def test_one_event_per_line_and_bad_input(tmp_path, capsys):
    path = tmp_path / "events.jsonl"
    path.write_text('{"run": 1, "action": "step", "choices": {"move": "answer"}, '
                    '"state": {"steps": 1, "retries": 0, "status": "answered"}}\n'
                    '{"run": 2, "action": "step", "choices": {"move": "tool_ok"}}\n')
    assert main(["traces", str(AGENT), str(path), *PINS]) == 1
    assert capsys.readouterr().out == (
        "2 runs: 1 conforms, 0 violates, 0 leaves model, 1 unfinished\n"
        "  run 2: stops outside a terminal state at step 1: the spec does not end in this state: it is not terminal\n")
    path.write_text('{"run": 1, "action": "jump"}\n')
    assert main(["traces", str(AGENT), str(path), *PINS]) == 2
    assert capsys.readouterr().err == (f"error: {path}:1: run 1: unknown action 'jump' of agent_loop; "
                                       "its actions: step\n")
    path.write_text('{"run": 1, "action": "step"\n')
    assert main(["traces", str(AGENT), str(path), *PINS]) == 2
    assert capsys.readouterr().err.startswith(f"error: {path}:1: not JSON: Expecting ',' delimiter")


def test_opentelemetry_spans_from_the_real_sdk(tmp_path, capsys):
    """GenAI agent/tool spans made with the SDK, exported as OTLP JSON with its own encoder."""
    from google.protobuf.json_format import MessageToJson
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("agent")
    for run, moves in (("ok", ["tool_ok", "answer"]), ("drift", ["answer", "tool_ok"])):
        with tracer.start_as_current_span("invoke_agent agent", attributes={
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "agent", "haltproof.run": run}):
            for move in moves:
                kind = {"gen_ai.operation.name": "chat"} if move == "answer" else {
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search"}
                name = "chat" if move == "answer" else "execute_tool search"
                with tracer.start_as_current_span(name, attributes={
                        **kind, "haltproof.action": "step", "haltproof.choice.move": move}):
                    pass
    path = tmp_path / "spans.json"
    path.write_text(MessageToJson(encode_spans(exporter.get_finished_spans())))
    assert main(["traces", str(AGENT), str(path), *PINS]) == 1
    out = capsys.readouterr().out
    assert out == ("2 runs: 1 conforms, 0 violates, 1 leaves model, 0 unfinished\n"
                   "  run drift: leaves the model at step 2: the run is in a terminal state: step is not a "
                   "transition of the model here\n")


DRIFTING = {"c-ok": ["tool_ok", "answer"], "c-retry": ["tool_error", "tool_ok", "answer"],
            "c-drift": ["tool_error", "tool_error", "tool_error"]}


def _agent_without_spans(folder: Path) -> Path:
    """The example agent with its code beside it, its spec cut before its `spans:` section."""
    folder.mkdir()
    for name in ("agent.py", "adapter.py"):
        (folder / name).write_text((AGENT.parent / name).read_text())
    spec = folder / "agent.yaml"
    spec.write_text(AGENT.read_text().split("\n# Which plain")[0] + "\n")
    assert "spans:" not in spec.read_text()
    return spec


def _genai_spans(path: Path, runs: dict[str, list[str]]) -> None:
    """Plain GenAI spans, as an instrumented agent emits them (no haltproof attribute): per step a
    `chat` span, then an `execute_tool search` span (ERROR status and error.type on a timeout)
    when the model asked for the tool. Exported as OTLP JSON with the SDK's own encoder."""
    from google.protobuf.json_format import MessageToJson
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import Status, StatusCode

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("agent")
    for conversation, moves in runs.items():
        with tracer.start_as_current_span("invoke_agent agent", attributes={
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "agent",
                "gen_ai.conversation.id": conversation}):
            for move in moves:
                finish = ["stop"] if move == "answer" else ["tool_calls"]
                with tracer.start_as_current_span("chat gpt-5", attributes={
                        "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-5",
                        "gen_ai.response.finish_reasons": finish}):
                    pass
                if move != "answer":
                    with tracer.start_as_current_span("execute_tool search", attributes={
                            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search"}) as span:
                        if move == "tool_error":
                            span.set_attribute("error.type", "TimeoutError")
                            span.set_status(Status(StatusCode.ERROR, "timed out"))
    path.write_text(MessageToJson(encode_spans(exporter.get_finished_spans())))


def test_plain_genai_spans_through_the_specs_span_map(tmp_path, capsys):
    """No haltproof attribute on any span: the spec's `spans:` names the steps (docs/how-to/traces.md)."""
    path = tmp_path / "genai.json"
    _genai_spans(path, DRIFTING)
    assert main(["traces", str(AGENT), str(path), *PINS]) == 1
    assert capsys.readouterr().out == (
        "3 runs: 2 conforms, 0 violates, 1 leaves model, 0 unfinished\n"
        "  run c-drift: leaves the model at step 3: the run is in a terminal state: step is not a "
        "transition of the model here\n")
    bare = _agent_without_spans(tmp_path / "bare")
    assert main(["traces", str(bare), str(path), *PINS]) == 2      # no map at all: never "0 runs, all fine"
    assert capsys.readouterr().err == (f"error: {path}: no span carries haltproof.action: plain GenAI spans are "
                                       "read through a span map (the spec's spans: or --map FILE, "
                                       "docs/how-to/traces.md)\n")


def test_a_map_file_is_read_instead_of_the_specs_spans(tmp_path, capsys):
    """`--map FILE` replaces the spec's rules: this one reads every tool span as a success, so the
    run the spec's map sees failing three times becomes three good searches that stop short."""
    path = tmp_path / "genai.json"
    _genai_spans(path, DRIFTING)
    lenient = tmp_path / "lenient.yaml"
    lenient.write_text("- {when: {gen_ai.operation.name: execute_tool}, action: step, choices: {move: tool_ok}}\n"
                       "- {when: {gen_ai.operation.name: chat, gen_ai.response.finish_reasons: [stop]},\n"
                       "   action: step, choices: {move: answer}}\n")
    for spec in (AGENT, _agent_without_spans(tmp_path / "bare")):
        assert main(["traces", str(spec), str(path), *PINS, "--map", str(lenient)]) == 1
        assert capsys.readouterr().out == (
            "3 runs: 2 conforms, 0 violates, 0 leaves model, 1 unfinished\n"
            "  run c-drift: stops outside a terminal state at step 3: the spec does not end in this state: "
            "it is not terminal\n")


def test_a_spec_with_a_span_map_is_checked_as_any_other():
    """`spans:` is read by `traces` alone: a check of the example folder proves it as before."""
    assert main(["check", str(AGENT.parent), "--format", "json"]) == 0


SPANS_SPEC = """machine: m
vars:
  done: {type: bool, init: false}
actions:
  go:
    when: not done
    choose:
      move: [a, b]
      n: {min: 0, max: 2}
    do:
      - set: {done: true}
terminal: done
"""


@pytest.mark.parametrize("spans, line, message", [
    ("spans: {a: 1}", 13, "spans must be a list of rules ({when: {...}, action: A, choices: {...}}): "
                          "\"{'a': 1}\""),
    ("spans: []", 13, "spans must be a list of rules ({when: {...}, action: A, choices: {...}}): '[]'"),
    ("spans:\n  - {when: {x: 1}}", 14, "rule 1 of spans: a rule is a mapping with an action (and when, choices)"),
    ("spans:\n  - {when: {x: 1}, action: go, choices: {move: a, n: 0}}\n  - {action: go}", 15,
     "rule 2 of spans: when is a mapping of span attributes to their values"),
    ("spans:\n  - {when: {x: 1}, action: go, then: a}", 14,
     "rule 1 of spans: unknown key 'then' (a rule has when, action, choices)"),
    ("spans:\n  - {when: {x: 1}, action: stop, choices: {}}", 14,
     "rule 1 of spans: not an action of the spec (its actions: go): 'stop'"),
    ("spans:\n  - {when: {x: 1}, action: go, choices: {move: a, n: 0, mov: a}}", 14,
     "rule 1 of spans: mov is not a choice of action go (its choices: move, n)"),
    ("spans:\n  - {when: {x: 1}, action: go, choices: {move: c, n: 0}}", 14,
     "rule 1 of spans: not a value of choice move of action go: 'c'"),
    ("spans:\n  - {when: {x: 1}, action: go, choices: {move: a, n: '1'}}", 14,
     "rule 1 of spans: not a value of choice n of action go: '1'"),
    ("spans:\n  - {when: {x: 1}, action: go, choices: {move: a}}", 14,
     "rule 1 of spans: action go always makes choice n: the rule must give its value"),
])
def test_a_bad_spans_section_is_a_clear_error_of_the_spec(tmp_path, capsys, spans, line, message):
    spec = tmp_path / "m.yaml"
    spec.write_text(SPANS_SPEC + spans + "\n")
    assert main(["check", str(spec)]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert f"{spec}:{line}: {message}" in out.err


def test_a_good_spans_section_loads_as_rules(tmp_path):
    spec = tmp_path / "m.yaml"
    spec.write_text(SPANS_SPEC + "spans:\n  - {when: {gen_ai.tool.name: t, error: true}, action: go,"
                    " choices: {move: b, n: 2}}\n")
    (rule,) = load_spec(spec).span_map
    assert (rule.when, rule.action, rule.choices) == ({"gen_ai.tool.name": "t", "error": True}, "go",
                                                      {"move": "b", "n": 2})
    assert type(rule.choices["move"]) is str


def test_a_recording_without_runs_is_an_error_not_a_pass(tmp_path, capsys):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    assert main(["traces", str(AGENT), str(empty), *PINS]) == 2
    assert capsys.readouterr().err == f"error: {empty}: no runs recorded\n"
    spans = tmp_path / "genai.json"
    _genai_spans(spans, {"c": ["answer"]})
    nothing = tmp_path / "map.yaml"
    nothing.write_text("- {when: {gen_ai.operation.name: embeddings}, action: step}\n")
    assert main(["traces", str(AGENT), str(spans), *PINS, "--map", str(nothing)]) == 2
    assert capsys.readouterr().err == (f"error: {spans}: no span carries haltproof.action or matches a rule of "
                                       "the span map\n")


def test_the_docs_check_genai_spans_with_the_examples_span_map():
    doc = (ROOT / "docs" / "how-to" / "traces.md").read_text()
    assert "haltproof traces examples/agent_loop/agent.yaml spans.json -p max_steps=3 -p max_retries=1\n" in doc
    section = "spans:" + AGENT.read_text().split("\nspans:", 1)[1]
    assert "```yaml\n" + section + "```" in doc


@pytest.mark.parametrize("text, message", [
    ("{}", "a span map is a list of rules ({when: {...}, action: A, choices: {...}})"),
    ("- {when: {a: 1}}", "rule 1: a rule is a mapping with an action (and when, choices)"),
    ("- {when: {a: 1}, action: step, then: x}", "rule 1: unknown key 'then' (a rule has when, action, choices)"),
    ("- {action: step}", "rule 1: when is a mapping of span attributes to their values"),
    ("- {when: {a: 1}, action: step, choices: [x]}", "rule 1: choices is a mapping (choice name: value)"),
    ("- [", None),
])
def test_a_bad_span_map_is_a_clear_error(tmp_path, capsys, text, message):
    spans = tmp_path / "genai.json"
    _genai_spans(spans, {"c": ["answer"]})
    bad = tmp_path / "map.yaml"
    bad.write_text(text)
    assert main(["traces", str(AGENT), str(spans), *PINS, "--map", str(bad)]) == 2
    err = capsys.readouterr().err
    if message is None:
        assert err.startswith(f"error: {bad}: the span map is not YAML or JSON: ")
    else:
        assert err == f"error: {bad}: {message}\n"
