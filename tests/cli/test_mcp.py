"""`haltproof mcp` in a real session with the MCP SDK's own client over stdio: initialize, list the
tools, call each; bad input is a tool error with a clear message, and the server goes on serving."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from ci_reports import TINY_TEXT, without_expect
from conftest import LOOP_DEMO, ROOT
from haltproof.reports import report

TOOLS = ["check", "explain", "init", "lint", "properties", "replay", "validate"]
BROKEN = "machine: broken\nvars:\n  x: {type: int, min: 0, max: 1, init: 0}\nactions:\n  step:\n    when: x ==\n"


def session(cwd: Path, log: Path, body):
    """Start `python -m haltproof mcp` in `cwd`, initialize, and run `body(session, init_result)`."""
    async def main():
        params = StdioServerParameters(command=sys.executable, args=["-m", "haltproof", "mcp"], cwd=str(cwd))
        with open(log, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as s:
                    init = await s.initialize()
                    return await body(s, init)
    return anyio.run(main)


def text(result) -> str:
    return "".join(part.text for part in result.content)


def answer(result):
    assert not result.is_error, text(result)
    return json.loads(text(result))


@pytest.fixture
def specs(tmp_path: Path) -> Path:
    (tmp_path / "tiny.yaml").write_text(without_expect(TINY_TEXT))
    (tmp_path / "broken.yaml").write_text(BROKEN)
    shutil.copy(LOOP_DEMO, tmp_path / "loop_demo.yaml")
    return tmp_path


@pytest.mark.slow        # each tool call starts haltproof in a fresh process
def test_a_session_validates_checks_explains_and_replays_a_spec(specs, tmp_path):
    async def body(s, init):
        out = {"init": init, "tools": await s.list_tools()}
        out["valid"] = answer(await s.call_tool("validate", {"spec": "tiny.yaml"}))
        out["invalid"] = answer(await s.call_tool("validate", {"spec": "broken.yaml"}))
        out["check"] = answer(await s.call_tool("check", {"spec": "tiny.yaml", "timeout_seconds": 60,
                                                          "max_states": 1000}))
        out["explain"] = await s.call_tool("explain", {"report_file": out["check"]["report_file"],
                                                       "property": "never_one"})
        out["replay"] = answer(await s.call_tool("replay", {"spec": "tiny.yaml", "trace_file": out["check"]["report_file"],
                                                            "property": "never_one"}))
        out["proved"] = answer(await s.call_tool("check", {"spec": "loop_demo.yaml", "timeout_seconds": 60,
                                                           "max_states": 100000,
                                                           "params": {"max_steps": 2, "max_retries": 1}}))
        out["undecided"] = answer(await s.call_tool("check", {"spec": "loop_demo.yaml", "timeout_seconds": 60,
                                                              "max_states": 1,
                                                              "params": {"max_steps": 2, "max_retries": 1}}))
        return out
    out = session(specs, tmp_path / "server.err", body)
    assert out["init"].server_info.name == "haltproof"
    assert out["init"].server_info.version == report.version()
    assert sorted(t.name for t in out["tools"].tools) == TOOLS
    schema = {t.name: t.input_schema for t in out["tools"].tools}
    assert sorted(schema["check"]["required"]) == ["max_states", "spec", "timeout_seconds"]
    assert out["valid"]["valid"] is True and out["valid"]["machine"] == "tiny"
    assert [p["name"] for p in out["valid"]["properties"]] == ["never_one", "fine"]
    assert out["invalid"] == {"valid": False, "problems": [
        {"file": "broken.yaml", "line": 6, "message": "guard of step is not valid syntax", "text": "x =="}]}
    check = out["check"]
    assert (check["result"], check["exit_code"]) == ("violated", 1)
    assert check["violations"] == [{"spec": "tiny.yaml", "params": {"N": 1}, "property": "never_one",
                                    "message": check["violations"][0]["message"], "steps": 1}]
    assert Path(check["report_file"]).is_file()
    assert not out["explain"].is_error
    assert text(out["explain"]) == (
        f"never_one (invariant) is violated in tiny (N=1): {check['violations'][0]['message']}\n"
        "the shortest run that breaks it: 1 step\n"
        "step 0: the initial state: x=0\n"
        "step 1: step: x=1\n")
    assert out["replay"]["ok"] is True and out["replay"]["exit_code"] == 0
    assert (out["proved"]["result"], out["proved"]["exit_code"], out["proved"]["violations"]) == ("proved", 0, [])
    undecided = out["undecided"]
    assert (undecided["result"], undecided["exit_code"]) == ("undecided", 3)
    assert undecided["answer"].startswith("undecided: a budget ran out before every state was explored, so nothing "
                                          "is proved")


@pytest.mark.slow        # each tool call starts haltproof in a fresh process
def test_bad_input_is_a_tool_error_with_a_clear_message_and_the_server_goes_on(specs, tmp_path):
    calls = [
        ("check", {"spec": "tiny.yaml", "timeout_seconds": 0, "max_states": 10},
         "timeout_seconds must be a number of seconds above 0, not 0.0"),
        ("check", {"spec": "tiny.yaml", "timeout_seconds": 10, "max_states": 0},
         "max_states must be a whole number of states above 0, not 0"),
        ("check", {"spec": "missing.yaml", "timeout_seconds": 10, "max_states": 10},
         f"spec missing.yaml: no such file (paths are relative to {specs})"),
        ("check", {"spec": "broken.yaml", "timeout_seconds": 10, "max_states": 10},
         "error: broken.yaml:6: guard of step is not valid syntax: 'x =='"),
        ("explain", {"report_file": "tiny.yaml", "property": "never_one"},
         "report_file tiny.yaml: not a haltproof JSON report"),
        ("lint", {"target": "nowhere:graph"},
         "error: nowhere:graph: cannot import the target's module: ModuleNotFoundError: No module named 'nowhere'"),
        ("init", {"target": "json:dumps", "output": "x.yaml"},
         "error: json:dumps is a function, not a compiled LangGraph graph"),
        ("properties", {"target": "no_colon"}, "error: no_colon: target must name the object as module:attr"),
    ]

    async def body(s, init):
        results = [await s.call_tool(name, args) for name, args, _ in calls]
        return results, await s.list_tools()
    results, tools = session(specs, tmp_path / "server.err", body)
    for (name, _, message), result in zip(calls, results):
        assert result.is_error, (name, text(result))
        assert message in text(result), (name, text(result))
    assert sorted(t.name for t in tools.tools) == TOOLS        # still serving
    assert not (specs / "x.yaml").exists()


@pytest.mark.slow        # each tool call starts haltproof in a fresh process
def test_a_session_lists_properties_inits_and_lints_a_framework_target(tmp_path):
    app = tmp_path / "app"
    app.mkdir()
    shutil.copy(ROOT / "examples" / "frameworks" / "langgraph" / "react.py", app / "react.py")

    async def body(s, init):
        return (answer(await s.call_tool("properties", {"target": "react:build_graph"}))["properties"],
                answer(await s.call_tool("init", {"target": "react:build_graph", "output": "react.yaml"})),
                await s.call_tool("init", {"target": "react:build_graph", "output": "react.yaml"}),
                answer(await s.call_tool("lint", {"target": "react:build_graph"})))
    props, made, again, lint = session(app, tmp_path / "server.err", body)
    assert [(p["name"], p["kind"]) for p in props] == [
        ("run_ends", "terminates"), ("limit_error", "reachable"), ("most_supersteps", "maximum"),
        ("most_model_calls", "maximum"), ("most_tool_runs", "maximum"),
        ("domains", "builtin"), ("well_defined", "builtin"), ("bound_code", "builtin")]
    assert props[0]["description"] == "every run ends: an answer, or LangGraph's limit error"
    assert made["written"] == "react.yaml"
    assert made["declaration"] == (app / "react.yaml").read_text()
    assert made["declaration"].startswith("# A starter declaration for react:build_graph")
    assert again.is_error and "react.yaml: already exists; init never overwrites a file" in text(again)
    assert (lint["result"], lint["findings"]) == ("clean", [])


def test_the_docs_configs_start_this_server():
    """docs/how-to/mcp.md's registrations: valid JSON, each running `haltproof mcp`; Claude Code's command alike."""
    import re
    doc = (ROOT / "docs" / "how-to" / "mcp.md").read_text()
    configs = [json.loads(block) for block in re.findall(r"```json\n(.*?)```", doc, re.S)]
    assert [c.get("mcpServers", c.get("servers"))["haltproof"]["args"] for c in configs] == [["mcp"], ["mcp"]]
    assert all(c.get("mcpServers", c.get("servers"))["haltproof"]["command"] == "haltproof" for c in configs)
    assert "claude mcp add haltproof -- haltproof mcp" in doc


def test_the_doc_lists_every_tool():
    import re
    from haltproof.cli import mcp
    doc = (ROOT / "docs" / "how-to" / "mcp.md").read_text()
    assert sorted(re.findall(r"^\| `(\w+)` \|", doc, re.M)) == sorted(t.__name__ for t in mcp.TOOLS) == TOOLS


def test_without_the_sdk_the_command_says_how_to_install_it(cli, monkeypatch):
    monkeypatch.setitem(sys.modules, "mcp.server.mcpserver", None)
    ran = cli("mcp")
    assert (ran.code, ran.err) == (2, "error: haltproof mcp needs the MCP Python SDK: pip install 'haltproof[mcp]'\n")
