"""`haltproof lint`'s outputs, each rendered from one report dict (schema `haltproof-lint/1`):

    {"schema": "haltproof-lint/1", "tool": {"name": "haltproof", "version": "..."},
     "target": "react:build_graph", "framework": "langgraph", "result": "clean" | "findings",
     "exit_code": 0 | 1, "rules": {"rule id": "what it finds"},
     "findings": [{"rule", "subject", "message", "file", "line", "introspection", "prove"}]}

SARIF and GitHub annotations reuse the check's writers (reports/sarif.py's locations and
fingerprints, reports/github.py's escaped workflow commands): a finding is a SARIF result and
an `::error` annotation at its file and line.
"""

from __future__ import annotations

import json
from typing import Any

from . import report
from .github import command
from .sarif import SARIF_SCHEMA, artifact_location, fingerprint

SCHEMA = "haltproof-lint/1"


def lint_report(target: str, framework: str, rules: dict[str, str], findings: list[dict[str, Any]]) -> dict[str, Any]:
    """The report dict every format is rendered from."""
    return {"schema": SCHEMA, "tool": {"name": "haltproof", "version": report.version()},
            "target": target, "framework": framework, "result": "findings" if findings else "clean",
            "exit_code": report.EXIT_VIOLATED if findings else report.EXIT_OK,
            "rules": rules, "findings": findings}


def _where(f: dict[str, Any]) -> str:
    return f"{f['file']}:{f['line']}" if f.get("file") and f.get("line") else (f.get("file") or "")


def render_text(data: dict[str, Any]) -> str:
    """One block per finding (where, rule, what; how haltproof saw it; the check that settles it), then a total."""
    lines: list[str] = []
    for f in data["findings"]:
        where = _where(f)
        lines.append(f"{where + ': ' if where else ''}{f['rule']}: {f['subject']}: {f['message']}")
        lines.append(f"  seen by: {f['introspection']}")
        lines.append(f"  prove or refute: {f['prove']}")
    n = len(data["findings"])
    lines.append(f"lint {data['target']} ({data['framework']}): "
                 + (f"{n} finding{'s' if n != 1 else ''}" if n else "no findings"))
    return "\n".join(lines) + "\n"


def render_json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def render_github(data: dict[str, Any]) -> str:
    """One `::error` workflow command per finding, at its file and line."""
    out = [command("error", f"{f['subject']}: {f['message']} (seen by {f['introspection']}; prove or refute: "
                            f"{f['prove']})", file=f.get("file"), line=f.get("line"), title=f"haltproof lint: {f['rule']}")
           for f in data["findings"]]
    return "".join(line + "\n" for line in out)


def render_sarif(data: dict[str, Any]) -> str:
    """SARIF 2.1.0: one rule per lint rule, one result per finding."""
    rules = [{"id": rid, "name": rid, "shortDescription": {"text": text},
              "fullDescription": {"text": f"{text} (haltproof lint: a structural pass, no exploration)"},
              "defaultConfiguration": {"level": "error"},
              "help": {"text": f"{text}. Each finding names the `haltproof init` and `haltproof check` that prove "
                               "or refute it."},
              "properties": {"tags": ["haltproof", "lint"], "precision": "medium", "problem.severity": "error"}}
             for rid, text in data["rules"].items()]
    index = {r["id"]: n for n, r in enumerate(rules)}
    results = []
    for f in data["findings"]:
        location: dict[str, Any] = {"artifactLocation": artifact_location(f["file"] or data["target"])}
        if f.get("line"):
            location["region"] = {"startLine": int(f["line"])}
        results.append({
            "ruleId": f["rule"], "ruleIndex": index[f["rule"]], "kind": "fail", "level": "error",
            "message": {"text": f"{f['subject']}: {f['message']}. Prove or refute: {f['prove']}"},
            "locations": [{"physicalLocation": location}],
            "partialFingerprints": {"haltproof/v1": fingerprint(f["file"] or data["target"], f["rule"],
                                                                f["subject"], {})},
            "properties": {"target": data["target"], "introspection": f["introspection"], "prove": f["prove"]},
        })
    sarif = {"$schema": SARIF_SCHEMA, "version": "2.1.0",
             "runs": [{"tool": {"driver": {"name": "haltproof", "version": data["tool"]["version"], "rules": rules}},
                       "invocations": [{"executionSuccessful": True, "exitCode": data["exit_code"]}],
                       "results": results,
                       "properties": {"haltproofSchema": data["schema"], "target": data["target"],
                                      "framework": data["framework"], "result": data["result"]}}]}
    return json.dumps(sarif, indent=2, ensure_ascii=False) + "\n"


FORMATS = {"text": render_text, "json": render_json, "sarif": render_sarif, "github": render_github}
