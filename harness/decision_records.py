"""Structured records of gate decisions: one flat JSON object per line (JSON Lines).

Every proposed tool call produces one `haltproof.gate.decision` record, and a run ends
with one `haltproof.loop.end` record. Keys are dotted attribute names and every value
is a string, int, bool or a list of strings, so a record can become the attributes of
an OpenTelemetry span (or a log record) unchanged.

Where OpenTelemetry's semantic conventions define an attribute for the thing, its name
is used (GenAI conventions, status Development; `error.type` is Stable):

| field | convention | value here |
|---|---|---|
| `gen_ai.operation.name` | GenAI (required on tool spans) | `execute_tool` |
| `gen_ai.tool.name` | GenAI (required on execute_tool) | the proposed tool's name |
| `gen_ai.tool.call.id` | GenAI (recommended) | the call id (`call_<turn>`) |
| `gen_ai.tool.type` | GenAI (recommended) | `function` |
| `gen_ai.conversation.id` | GenAI (conditionally required) | the run's id |
| `gen_ai.tool.call.arguments` | GenAI (opt-in: may hold sensitive data) | the arguments as a JSON string, only when capture is enabled |
| `error.type` | error (stable) | `haltproof.gate.denied` on a DENY, absent on an ALLOW |
| `event.name` | general (event name) | `haltproof.gate.decision` or `haltproof.loop.end` |

The convention has no attributes for gating or token accounting of tool *outputs*
(`gen_ai.usage.*` counts model input/output tokens of inference calls, which these are
not), so the rest are our own, under `haltproof.`:

| field | meaning |
|---|---|
| `haltproof.turn` | the turn (1-based) the call was proposed in |
| `haltproof.gate.decision` | `allow` or `deny` |
| `haltproof.gate.name` | the gate that denied, or `chain` when all allowed |
| `haltproof.gate.reason` | the reason, as the model is told it |
| `haltproof.gate.evaluated` | the gates that ran, in order (short-circuit: the denying gate is last) |
| `haltproof.tool.dispatched` | whether the tool ran |
| `haltproof.tool.extends_turn` | the turn the call extends (RecencyGate), when it extends one |
| `haltproof.observation.reserved_tokens` | the call's token reservation (max_tokens) |
| `haltproof.observation.tokens` | tokens written to the ledger for this call (0 when denied) |
| `haltproof.observation.truncated` | whether the output was clipped to the reservation |
| `haltproof.ledger.cumulative_tokens` | the ledger's total after this call |
| `haltproof.ledger.tool_tokens` | the ledger's total for this tool after this call |
| `haltproof.budget.tokens` | the session budget B |
| `haltproof.refusal_count` | refusals so far, this one included |
| `haltproof.refusal_threshold` | the threshold A at which the loop aborts |
| `haltproof.loop.status` | the loop's status after this call: running, turn_limit, aborted (end record: also finished) |

The end record carries `event.name`, `gen_ai.conversation.id`, `haltproof.turn` (turns
taken), `haltproof.loop.status`, `haltproof.refusal_count`, `haltproof.refusal_threshold`,
`haltproof.ledger.cumulative_tokens`, `haltproof.budget.tokens` and
`haltproof.tool.dispatch_count`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import IO, Any

DECISION_EVENT = "haltproof.gate.decision"
END_EVENT = "haltproof.loop.end"
DENIED_ERROR_TYPE = "haltproof.gate.denied"

# field -> the semantic convention it follows, or None for our own (the docs render this)
CONVENTION_FIELDS: dict[str, str] = {
    "event.name": "general: event name",
    "gen_ai.operation.name": "GenAI",
    "gen_ai.conversation.id": "GenAI",
    "gen_ai.tool.name": "GenAI",
    "gen_ai.tool.call.id": "GenAI",
    "gen_ai.tool.type": "GenAI",
    "gen_ai.tool.call.arguments": "GenAI (opt-in)",
    "error.type": "error (stable)",
}
DECISION_FIELDS = (
    "event.name", "gen_ai.operation.name", "gen_ai.conversation.id", "gen_ai.tool.name",
    "gen_ai.tool.call.id", "gen_ai.tool.type", "haltproof.turn", "haltproof.gate.decision",
    "haltproof.gate.name", "haltproof.gate.reason", "haltproof.gate.evaluated",
    "haltproof.tool.dispatched", "haltproof.observation.reserved_tokens",
    "haltproof.observation.tokens", "haltproof.observation.truncated",
    "haltproof.ledger.cumulative_tokens", "haltproof.ledger.tool_tokens", "haltproof.budget.tokens",
    "haltproof.refusal_count", "haltproof.refusal_threshold", "haltproof.loop.status",
)
OPTIONAL_DECISION_FIELDS = ("error.type", "gen_ai.tool.call.arguments", "haltproof.tool.extends_turn")
END_FIELDS = (
    "event.name", "gen_ai.conversation.id", "haltproof.turn", "haltproof.loop.status",
    "haltproof.refusal_count", "haltproof.refusal_threshold", "haltproof.ledger.cumulative_tokens",
    "haltproof.budget.tokens", "haltproof.tool.dispatch_count",
)

Sink = Callable[[dict[str, Any]], None]


class JsonLinesWriter:
    """A sink writing each record as one line of JSON to a text stream."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def __call__(self, record: dict[str, Any]) -> None:
        self.stream.write(json.dumps(record, ensure_ascii=False, allow_nan=False) + "\n")
        self.stream.flush()
