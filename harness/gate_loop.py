"""The gated harness loop (seed S3) and its three-turn demo.

One turn = the policy proposes one tool call, the gate chain decides, then:

- ALLOW: dispatch the tool; clip its output to the call's token reservation; write a
  ledger row; append the (clipped) output to the message store as a tool message.
- DENY: the tool does not run; the reason goes to the message store as a system
  message (that is how the model is told); `refusal_count` += 1.

Either way one decision record is emitted (haltproof.harness.decision_records). After the turn
the loop aborts when `refusal_count` reaches the refusal threshold A (`aborted`), else
stops when the turn limit T is reached (`turn_limit`); a policy that proposes nothing
ends the run (`finished`). Every run therefore ends within T turns, at most A of them
refused: the bound specs/gate_chain.yaml proves for this code.

The token reservation of a call is the `max_tokens` of its tool in the registry (a
proposal may ask for less, never more; an unregistered name gets
`default_max_tokens`, and the whitelist will deny it anyway).

Demo (the seed's): three turns, the third trips the budget gate, a clean refusal,
refusal_count > 0, exit 0:

    python -m haltproof.harness.gate_loop
    python -m haltproof.harness.gate_loop --records decisions.jsonl
    python -m haltproof.harness.gate_loop --script my_calls.json --budget 200 --turns 5
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass, field
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from haltproof.machine import strict_json
from haltproof.machine.inputs import TooLarge, check_number

from .decision_records import DECISION_EVENT, DENIED_ERROR_TYPE, END_EVENT, JsonLinesWriter, Sink
from .gates import GateChain, GateContext, GateDecision, ToolCall, ToolCallError, build_chain
from .ledger import ObservationLedger, TokenCounter, clip_to_tokens, heuristic_tokens

STATUSES = ("running", "finished", "turn_limit", "aborted")


def copy_json(value: Any) -> Any:
    """A deep copy of JSON-like data (dicts, lists, tuples, scalars): a call's arguments are
    copied on the way in and on the way to the tool, so neither the policy nor the tool
    can change what the gates judged. Other objects are shared, not copied."""
    if isinstance(value, dict) or (isinstance(value, Mapping) and not isinstance(value, (str, bytes))):
        return {k: copy_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [copy_json(v) for v in value]
    return value


class ConfigError(ValueError):
    """A loop configuration that cannot be used."""


# Every limit is written into the decision records, whose ints are OpenTelemetry attributes:
# signed 64-bit. A larger one would make records no collector can take (docs/tutorials/gate-chain.md).
MAX_LIMIT = 2 ** 63 - 1


def _limit(name: str, value: Any, least: int) -> None:
    """An int in least..MAX_LIMIT (not a bool); else ConfigError naming the limit."""
    try:
        check_number(value, name, int, least=least, most=MAX_LIMIT)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


@dataclass(frozen=True)
class GateLoopConfig:
    """The loop's limits: token budget B, recency window N, refusal threshold A, turn
    limit T, per-tool budgets, and the whitelist."""

    whitelist: frozenset[str]
    token_budget: int                       # B
    window: int                             # N
    refusal_threshold: int                  # A
    turn_limit: int                         # T
    per_tool_budgets: Mapping[str, int] = field(default_factory=dict)
    default_max_tokens: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "whitelist", frozenset(self.whitelist))
        object.__setattr__(self, "per_tool_budgets", dict(self.per_tool_budgets))
        _limit("the token budget", self.token_budget, 0)
        _limit("the recency window", self.window, 1)
        _limit("the refusal threshold", self.refusal_threshold, 1)
        _limit("the turn limit", self.turn_limit, 1)
        _limit("default_max_tokens", self.default_max_tokens, 1)
        for tool, cap in self.per_tool_budgets.items():
            _limit(f"the per-tool budget of {tool}", cap, 0)


@dataclass(frozen=True)
class Tool:
    """A registered tool: `run(args) -> str`, and its token reservation `max_tokens`."""

    name: str
    run: Callable[[Mapping[str, Any]], str]
    max_tokens: int


@dataclass(frozen=True)
class Message:
    turn: int
    role: str                   # "tool" | "system"
    content: str
    name: str | None = None     # the tool, for tool messages
    call_id: str | None = None


class MessageStore:
    """Everything appended for the model, in order. `visible(turn, window)` is what the
    prompt builder shows at `turn`: the messages of the last `window` turns."""

    def __init__(self) -> None:
        self.messages: list[Message] = []

    def append(self, message: Message) -> None:
        self.messages.append(message)

    def visible(self, turn: int, window: int) -> list[Message]:
        return [m for m in self.messages if turn - window <= m.turn < turn]

    def __iter__(self) -> Iterator[Message]:
        return iter(self.messages)

    def __len__(self) -> int:
        return len(self.messages)

    def __getitem__(self, i: int) -> Message:
        return self.messages[i]


class UnknownToolError(LookupError):
    """The chain allowed a call to a tool that is not registered: a configuration error."""


@dataclass(frozen=True)
class TurnResult:
    turn: int
    call: ToolCall
    decision: GateDecision
    dispatched: bool
    tokens: int                 # written to the ledger (0 when denied)
    truncated: bool
    record: dict[str, Any]


Policy = Callable[[dict[str, Any]], Any]


class GateLoop:
    """The harness loop. State: `turn` (turns taken), `refusal_count`, `status`, the
    `ledger`, the `messages`, `last_decision`, `dispatch_count` and the emitted `records`."""

    def __init__(self, config: GateLoopConfig, tools: Mapping[str, Tool], *,
                 chain: GateChain | None = None, counter: TokenCounter = heuristic_tokens,
                 sink: Sink | None = None, conversation_id: str = "run",
                 capture_arguments: bool = False) -> None:
        self.config = config
        self.tools = dict(tools)
        self.chain = chain if chain is not None else build_chain(
            config.whitelist, config.token_budget, config.window, config.per_tool_budgets)
        self.ledger = ObservationLedger(counter)
        self.messages = MessageStore()
        self.sink = sink
        self.conversation_id = conversation_id
        self.capture_arguments = capture_arguments
        self.turn = 0
        self.refusal_count = 0
        self.dispatch_count = 0
        self.status = "running"
        self.last_decision: GateDecision | None = None
        self.records: list[dict[str, Any]] = []

    # -- one turn
    def prepare(self, proposal: ToolCall | Mapping[str, Any], turn: int) -> ToolCall:
        """The ToolCall for a proposal: its reservation from the registry, its call id."""
        # A mapping's fields are what the model wrote, of any type: ToolCall.__post_init__ checks them.
        tool: Any
        args: Any
        asked: Any
        extends: Any
        call_id: Any
        if isinstance(proposal, ToolCall):
            tool, args, asked, extends, call_id = (proposal.tool, proposal.args, proposal.max_tokens,
                                                   proposal.extends, proposal.call_id)
        elif isinstance(proposal, Mapping):
            unknown = sorted(set(proposal) - {"tool", "args", "max_tokens", "extends", "call_id"})
            if unknown:
                raise ToolCallError(f"unknown field {unknown[0]!r} in a proposal "
                                    "(allowed: tool, args, max_tokens, extends, call_id)")
            tool, args = proposal.get("tool"), proposal.get("args", {})
            asked, extends, call_id = proposal.get("max_tokens"), proposal.get("extends"), proposal.get("call_id")
        else:
            raise ToolCallError(f"a proposal must be a ToolCall or a mapping, got {type(proposal).__name__}")
        registered = self.tools.get(tool) if isinstance(tool, str) else None
        reserve = registered.max_tokens if registered is not None else self.config.default_max_tokens
        if asked is not None:
            if isinstance(asked, bool) or not isinstance(asked, int) or asked < 1:
                raise ToolCallError(f"max_tokens must be an int >= 1, got {asked!r}")
            reserve = min(reserve, asked)
        return ToolCall(tool, copy_json(args) if isinstance(args, Mapping) else args,
                        reserve, extends, call_id or f"call_{turn}")

    def step(self, proposal: ToolCall | Mapping[str, Any]) -> TurnResult:
        """Run one turn for `proposal`."""
        if self.status != "running":
            raise RuntimeError(f"the loop has stopped ({self.status})")
        call = self.prepare(proposal, self.turn + 1)
        self.turn += 1
        turn = self.turn
        decision = self.chain.evaluate(call, GateContext(turn, self.ledger, tuple(self.messages)))
        self.last_decision = decision
        tokens, truncated = 0, False
        if decision.allow:
            output = self.dispatch(call)
            shown = self.observe(call, output)
            truncated = shown != output
            tokens = self.ledger.record(turn, call.tool, shown).tokens
            self.messages.append(Message(turn, "tool", shown, call.tool, call.call_id))
        else:
            self.refuse(turn, call, decision)
        if self.refusal_count >= self.config.refusal_threshold:
            self.status = "aborted"
        elif self.turn >= self.config.turn_limit:
            self.status = "turn_limit"
        record = self.decision_record(call, decision, tokens, truncated)
        self.emit(record)
        return TurnResult(turn, call, decision, decision.allow, tokens, truncated, record)

    def refuse(self, turn: int, call: ToolCall, decision: GateDecision) -> None:
        """A DENY: the reason goes to the message store as a system message, and counts."""
        self.messages.append(Message(turn, "system", f"Tool call {call.call_id} ({call.tool}) was refused "
                                                     f"by the {decision.gate_name} gate: {decision.reason}"))
        self.refusal_count += 1

    def observe(self, call: ToolCall, output: str) -> str:
        """What the model is shown of a tool's output: its longest prefix within the call's
        reservation (so the ledger never grows by more than `max_tokens`)."""
        return clip_to_tokens(output, call.max_tokens, self.ledger.count)

    def dispatch(self, call: ToolCall) -> str:
        """Run the tool. Its exception becomes the observation (the model sees the error)."""
        tool = self.tools.get(call.tool)
        if tool is None:
            raise UnknownToolError(f"the gate chain allowed {call.tool!r}, which is not a registered tool")
        self.dispatch_count += 1
        try:
            output = tool.run(copy_json(call.args))
        except Exception as exc:                 # a tool's failure is an observation, not a crash
            return f"error: {type(exc).__name__}: {exc}"
        if not isinstance(output, str):
            return json.dumps(output, ensure_ascii=False, default=str)
        return output

    def finish(self) -> None:
        """The policy proposes nothing more: the run ends without another turn."""
        if self.status == "running":
            self.status = "finished"

    # -- the whole run
    def view(self) -> dict[str, Any]:
        """What the policy sees before proposing: a copy, never the loop's own state."""
        nxt = self.turn + 1
        return {"turn": nxt, "refusal_count": self.refusal_count,
                "cumulative_tokens": self.ledger.cumulative(),
                "messages": [vars(m).copy() for m in self.messages.visible(nxt, self.config.window)]}

    def run(self, policy: Policy, on_turn: Callable[[TurnResult], None] | None = None) -> dict[str, Any]:
        """Ask the policy for a call each turn until the loop stops; emit the end record."""
        while self.status == "running":
            proposal = policy(self.view())
            if proposal is None:
                self.finish()
                break
            result = self.step(proposal)
            if on_turn is not None:
                on_turn(result)
        end = self.end_record()
        self.emit(end)
        return end

    # -- records
    def emit(self, record: dict[str, Any]) -> None:
        self.records.append(record)
        if self.sink is not None:
            self.sink(record)

    def decision_record(self, call: ToolCall, decision: GateDecision, tokens: int,
                        truncated: bool) -> dict[str, Any]:
        rec: dict[str, Any] = {
            "event.name": DECISION_EVENT,
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.conversation.id": self.conversation_id,
            "gen_ai.tool.name": call.tool,
            "gen_ai.tool.call.id": call.call_id,
            "gen_ai.tool.type": "function",
            "haltproof.turn": self.turn,
            "haltproof.gate.decision": decision.verdict,
            "haltproof.gate.name": decision.gate_name,
            "haltproof.gate.reason": decision.reason,
            "haltproof.gate.evaluated": list(decision.evaluated),
            "haltproof.tool.dispatched": decision.allow,
            "haltproof.observation.reserved_tokens": call.max_tokens,
            "haltproof.observation.tokens": tokens,
            "haltproof.observation.truncated": truncated,
            "haltproof.ledger.cumulative_tokens": self.ledger.cumulative(),
            "haltproof.ledger.tool_tokens": self.ledger.per_tool(call.tool),
            "haltproof.budget.tokens": self.config.token_budget,
            "haltproof.refusal_count": self.refusal_count,
            "haltproof.refusal_threshold": self.config.refusal_threshold,
            "haltproof.loop.status": self.status,
        }
        if call.extends is not None:
            rec["haltproof.tool.extends_turn"] = call.extends
        if not decision.allow:
            rec["error.type"] = DENIED_ERROR_TYPE
        if self.capture_arguments:
            rec["gen_ai.tool.call.arguments"] = json.dumps(dict(call.args), ensure_ascii=False,
                                                           sort_keys=True, default=str)
        return rec

    def end_record(self) -> dict[str, Any]:
        return {"event.name": END_EVENT, "gen_ai.conversation.id": self.conversation_id,
                "haltproof.turn": self.turn, "haltproof.loop.status": self.status,
                "haltproof.refusal_count": self.refusal_count,
                "haltproof.refusal_threshold": self.config.refusal_threshold,
                "haltproof.ledger.cumulative_tokens": self.ledger.cumulative(),
                "haltproof.budget.tokens": self.config.token_budget,
                "haltproof.tool.dispatch_count": self.dispatch_count}


def scripted_policy(proposals: Sequence[Any]) -> Policy:
    """A policy that proposes the given calls in order, then nothing (the run finishes)."""
    queue = list(proposals)

    def policy(view: dict[str, Any]) -> Any:
        return queue.pop(0) if queue else None
    return policy


# ---------------------------------------------------------------- the demo

DEMO_FILES = {
    # 200 characters: 50 tokens by len(text) // 4, exactly the read_file reservation
    "README.md": ("# tiny-service\n\nA small HTTP service behind the gateway. Run `make test` before pushing; "
                  "deploys go through CI only, never from a laptop. Questions and on-call pages go to "
                  "#tiny-service on team chat.\n"),
    "src/app.py": "".join(f"def handler_{n}(request):\n    # TODO: validate payload {n}\n    return respond(200)\n"
                          for n in range(6)),
    "src/gates.py": "".join(f"# line {n}: gate code that is long enough to matter\n" for n in range(40)),
}
DEMO_SCRIPT: list[dict[str, Any]] = [
    {"tool": "read_file", "args": {"path": "README.md"}},
    {"tool": "grep", "args": {"pattern": "TODO", "path": "src"}},
    {"tool": "read_file", "args": {"path": "src/gates.py"}},
]


def demo_tools(files: Mapping[str, str] = DEMO_FILES) -> dict[str, Tool]:
    """Synthetic, deterministic tools over an in-memory repository. `shell` is registered
    (the harness has it) but the demo's whitelist leaves it out of the contract."""

    def read_file(args: Mapping[str, Any]) -> str:
        path: Any = args.get("path")        # any JSON value: only a file's name is found
        if path not in files:
            raise FileNotFoundError(f"no such file: {path}")
        return files[path]

    def grep(args: Mapping[str, Any]) -> str:
        pattern, root = str(args.get("pattern", "")), str(args.get("path", ""))
        hits = [f"{p}:{n}:{line}" for p, text in sorted(files.items()) if p.startswith(root)
                for n, line in enumerate(text.splitlines(), start=1) if pattern in line]
        return "\n".join(hits) + "\n"

    def shell(args: Mapping[str, Any]) -> str:
        return f"$ {args.get('cmd', '')}\n(synthetic shell: nothing ran)\n"

    return {"read_file": Tool("read_file", read_file, 50), "grep": Tool("grep", grep, 50),
            "shell": Tool("shell", shell, 50)}


DEMO_CONFIG = GateLoopConfig(whitelist=frozenset({"read_file", "grep"}), token_budget=100, window=3,
                             refusal_threshold=3, turn_limit=3, per_tool_budgets={"grep": 80},
                             default_max_tokens=50)


def format_turn(result: TurnResult, loop: GateLoop) -> str:
    call, d = result.call, result.decision
    args = json.dumps(dict(call.args), ensure_ascii=False, sort_keys=True)
    lines = [f"turn {result.turn}  {call.tool} {args}" + (f"  extends turn {call.extends}" if call.extends else "")]
    width = max(len(g) for g in loop.chain.names)
    for gd in d.trail:
        lines.append(f"  {gd.gate_name:<{width}}  {gd.verdict.upper():<5}  {gd.reason}")
    if d.allow:
        lines.append(f"  => ALLOW: dispatched {call.tool}; {result.tokens} tokens observed"
                     + (" (clipped to the reservation)" if result.truncated else "")
                     + f", cumulative {loop.ledger.cumulative()}/{loop.config.token_budget}")
    else:
        lines.append(f"  => DENY by {d.gate_name}: the reason went to the model as a system message; "
                     f"refusal_count {loop.refusal_count}/{loop.config.refusal_threshold}")
    return "\n".join(lines)


MAX_SCRIPT_BYTES = 1024 * 1024   # a call is ~60 bytes: 1 MiB is ~17,000 calls (docs/tutorials/gate-chain.md)


def _load_script(path: str) -> list[Any]:
    try:
        data = strict_json.read(path, MAX_SCRIPT_BYTES, "a script")
    except TooLarge as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the script: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: the script is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    except strict_json.DuplicateKeyError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    if not isinstance(data, list) or not all(isinstance(p, dict) for p in data):
        raise ConfigError(f"{path}: the script must be a JSON list of calls "
                          '({"tool": ..., "args": {...}, "extends": turn})')
    return data


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m haltproof.harness.gate_loop",
                                 description="Run the gated harness loop on a scripted, synthetic agent "
                                             "(default: the seed's three-turn demo).")
    ap.add_argument("--budget", type=int, default=DEMO_CONFIG.token_budget, help="token budget B (default 100)")
    ap.add_argument("--window", type=int, default=DEMO_CONFIG.window, help="recency window N in turns (default 3)")
    ap.add_argument("--refusals", type=int, default=DEMO_CONFIG.refusal_threshold,
                    help="refusal threshold A: abort when refusals reach it (default 3)")
    ap.add_argument("--turns", type=int, default=DEMO_CONFIG.turn_limit, help="turn limit T (default 3)")
    ap.add_argument("--script", metavar="FILE", help="a JSON list of calls to propose instead of the demo's")
    ap.add_argument("--records", metavar="FILE",
                    help="write the decision records as JSON lines to FILE ('-': stdout, instead of the trace)")
    ap.add_argument("--capture-arguments", action="store_true",
                    help="include gen_ai.tool.call.arguments in the records (opt-in: may be sensitive)")
    args = ap.parse_args(argv)
    out = sys.stdout
    try:
        config = GateLoopConfig(whitelist=DEMO_CONFIG.whitelist, token_budget=args.budget, window=args.window,
                                refusal_threshold=args.refusals, turn_limit=args.turns,
                                per_tool_budgets=DEMO_CONFIG.per_tool_budgets,
                                default_max_tokens=DEMO_CONFIG.default_max_tokens)
        script = _load_script(args.script) if args.script else DEMO_SCRIPT
        records_file = None
        if args.records and args.records != "-":
            try:
                records_file = open(args.records, "w", encoding="utf-8")
            except OSError as exc:
                raise ConfigError(f"{args.records}: cannot write the records: {exc.strerror or exc}") from None
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    show_trace = args.records != "-"
    sink = JsonLinesWriter(records_file if records_file else out) if args.records else None
    loop = GateLoop(config, demo_tools(), sink=sink, conversation_id="gate-demo",
                    capture_arguments=args.capture_arguments)
    def show(result: TurnResult) -> None:
        if show_trace:
            print(format_turn(result, loop), file=out)
    try:
        loop.run(scripted_policy(script), on_turn=show)
    except ToolCallError as exc:
        print(f"error: call {loop.turn + 1} of the script: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:                      # `... | head`: the reader left; stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    finally:
        if records_file is not None:
            records_file.close()
    if show_trace:
        print(f"run ended: {loop.status} after {loop.turn} turns; {loop.dispatch_count} dispatched, "
              f"refusal_count {loop.refusal_count}, {loop.ledger.cumulative()}/{config.token_budget} "
              "tokens observed", file=out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
