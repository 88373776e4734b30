"""The adapter between specs/gate_chain.yaml and the real gate layer (haltproof.harness.gates,
haltproof.harness.ledger, haltproof.harness.gate_loop).

Live binding (docs/how-to/binding.md): `start` builds one real `GateLoop` with the real gates in a
real `GateChain`, `step` runs one real turn through `GateLoop.step`, and `abstract` reads
the abstract state back. haltproof reaches each reachable abstract state by replaying its
shortest path from `start` (`runs[].binding` is `replay`): a run could be deep-copied, but
copying a whole loop costs more than replaying its few turns; no state is ever rebuilt from
its abstraction. The tools
belong to the adversarial environment: they return an output of the token-size class
the spec chose, and they count their invocations, so `dispatched` is what really ran,
not what the harness claims. Each real gate is wrapped in a transparent counter, so
`gates_run` is how many gates `GateChain.evaluate` really called.

Abstract classes (the spec's choices) and their concrete values:

- `call`: six call classes. The representative is one fixed call; the Hypothesis
  strategy (`haltproof conform`) draws many calls of the class: safe paths and shell
  commands (`grep -rf`, `rm -r dir`, `rm -f file` included: they are not `rm -rf`),
  every spelling of `rm -rf`, public URLs, internal addresses in every range and
  spelling (octal, hex, integer, IPv6, IPv4-mapped, localhost), invented tool names.
  The reservation (`cost` in the spec) is the tool's `max_tokens` in the registry.
  Invented names other than `deploy` are not registered: their reservation is the
  config's default, 1, like `deploy`'s.
- `out`: the tool output's size relative to the call's reservation r, with the
  default counter `len(text) // 4`: `empty` 0 tokens (0..3 characters), `full` exactly
  r tokens, `over` more than r tokens (the harness clips it to r). The representative
  of `over` is r + 1 tokens, the least output that must be clipped.
- the action names how the call extends an earlier observation: `propose` extends
  none; `extend_visible` extends a visible turn (representative: the oldest visible
  turn max(1, t - N), the window's edge); `extend_expired` (choice `stale`) an expired
  one (representative: the newest expired turn t - N - 1, the other side of the edge).
  The strategy draws any turn of the class (`pick`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from haltproof.machine.live import LiveAdapter

from .gate_loop import GateLoop, GateLoopConfig, Tool
from .gates import Gate, GateChain, GateContext, GateDecision, ToolCall, default_gates

# The spec's tools: reservation (the spec's `cost`) and whitelist (the spec's `listed`).
RESERVATIONS = {"read_file": 1, "shell": 2, "http_get": 2, "deploy": 1}
WHITELIST = frozenset({"read_file", "shell", "http_get"})
CAPPED_TOOL = "shell"                   # the per-tool budget P applies to it
INVENTED_TOOLS = ("deploy", "sudo", "exec_python", "send_email", "shell_exec")

# abstract `last` <-> the gate that denied
GATE_OF_LAST = {"deny_whitelist": "whitelist", "deny_regex": "regex", "deny_recency": "recency",
                "deny_per_tool": "per_tool_budget", "deny_budget": "budget"}
LAST_OF_GATE = {gate: last for last, gate in GATE_OF_LAST.items()}

CALLS: dict[str, dict[str, Any]] = {
    "read": {"tool": "read_file", "args": {"path": "docs/plan.md"}},
    "grep": {"tool": "shell", "args": {"cmd": "grep -rn TODO src"}},
    "rm_rf": {"tool": "shell", "args": {"cmd": "rm -rf build/"}},
    "fetch": {"tool": "http_get", "args": {"url": "https://example.com/docs/api"}},
    "internal": {"tool": "http_get", "args": {"url": "http://169.254.169.254/latest/meta-data/"}},
    "invented": {"tool": "deploy", "args": {"cmd": "rm -rf /srv/app"}},
}
OVER_EXTRA = 0         # the representative `over` output: r + 1 tokens, the least that must be clipped
FILLER = "lorem ipsum "


@dataclass(frozen=True)
class CallChoice:
    """A concrete value of the choice `call` (or `stale`): the tool and its arguments, and
    `pick`, which turn of the action's class the call extends (see GateChainAdapter.step).
    Immutable, so copying it is free."""

    tool: str
    args: tuple[tuple[str, str], ...]
    pick: int = 0

    def __deepcopy__(self, memo: dict[int, Any]) -> CallChoice:
        return self

    @classmethod
    def of(cls, tool: str, args: dict[str, str], pick: int = 0) -> CallChoice:
        return cls(tool, tuple(sorted(args.items())), pick)


@dataclass(frozen=True)
class OutputChoice:
    """A concrete value of the choice `out`: the size class, and `extra` characters and a
    `filler` text that pick one output of the class (see render_output). Immutable."""

    size: str
    extra: int = 0
    filler: str = "lorem ipsum "

    def __deepcopy__(self, memo: dict[int, Any]) -> OutputChoice:
        return self


def render_output(out: OutputChoice, reserve: int) -> str:
    """The concrete output text of a size class, for a call reserving `reserve` tokens:
    empty 0..3 characters (0 tokens), full 4r..4r+3 (r tokens), over 4(r+1)+ (more)."""
    size, extra = out.size, out.extra
    n = {"empty": extra % 4, "full": 4 * reserve + extra % 4, "over": 4 * (reserve + 1) + extra}[size]
    filler = out.filler or FILLER
    return (filler * (n // len(filler) + 1))[:n]


class Environment:
    """The adversary's side of one concrete run: what the tools return this step, how
    often they ran, and how many gates were evaluated."""

    def __init__(self) -> None:
        self.output = OutputChoice("full")
        self.invocations = 0
        self.gate_calls = 0

    def tool(self, name: str, reserve: int) -> Tool:
        return Tool(name, EnvironmentTool(self, reserve), reserve)


@dataclass
class EnvironmentTool:
    """A tool's body: returns the environment's output for its reservation and counts the call.
    An object, not a closure, so a deepcopy of a run (a subclass with `copyable = True`)
    counts in the copy's own environment."""

    env: Environment
    reserve: int

    def __call__(self, args: Any) -> str:
        self.env.invocations += 1
        return render_output(self.env.output, self.reserve)


class CountingGate:
    """A real gate, evaluated as is; only counts that it ran."""

    def __init__(self, gate: Gate, env: Environment) -> None:
        self.gate, self.env, self.name = gate, env, gate.name

    def evaluate(self, call: ToolCall, ctx: GateContext) -> GateDecision:
        self.env.gate_calls += 1
        return self.gate.evaluate(call, ctx)


@dataclass
class BoundRun:
    """The concrete state: a real GateLoop and the environment around it."""

    loop: GateLoop
    env: Environment = field(default_factory=Environment)


# ---------------------------------------------------------------- Hypothesis strategies (conform)

_word = st.text("abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8)
_path = st.builds(lambda parts, ext: "/".join(parts) + ext,
                  st.lists(_word, min_size=1, max_size=3), st.sampled_from([".md", ".py", ".txt", ""]))
_safe_cmd = st.one_of(
    st.builds("grep -rn {} {}".format, _word, _path),
    st.builds("grep -rf {} {}".format, _path, _path),          # grep's -r -f: not rm
    st.builds("ls -la {}".format, _path),
    st.builds("rm -r {}".format, _path),                        # recursive, not forced
    st.builds("rm -f {}".format, _path),                        # forced, not recursive
    st.builds("confirm -rf {}".format, _word),                 # not the word rm
    st.builds("wc -l {}".format, _path),
)
_rm_rf = st.builds(lambda fmt, target: fmt.format(target), st.sampled_from([
    "rm -rf {}", "rm -fr {}", "rm -Rf {}", "rm -r -f {}", "rm -f -r {}", "sudo rm -rf {}",
    "rm --recursive --force {}", "rm {} -rf", "/bin/rm -rf {}", "cd /tmp && rm -rf {}",
    "rm -rfv --no-preserve-root {}", "ls; rm -fR {}"]), _path)
_public_v4 = st.ip_addresses(network="93.184.0.0/16").map(str)
_public_host = st.one_of(st.builds("{}.com".format, _word), st.builds("{}.example.org".format, _word),
                         _public_v4, st.just("[2606:4700::1111]"))
_public_url = st.builds("{}://{}/{}".format, st.sampled_from(["http", "https"]), _public_host, _path)
_internal_host = st.one_of(
    st.ip_addresses(network="10.0.0.0/8").map(str), st.ip_addresses(network="172.16.0.0/12").map(str),
    st.ip_addresses(network="192.168.0.0/16").map(str), st.ip_addresses(network="127.0.0.0/8").map(str),
    st.ip_addresses(network="169.254.0.0/16").map(str),
    st.sampled_from(["localhost", "LOCALHOST", "api.localhost", "[::1]", "[::ffff:127.0.0.1]", "[fe80::1]",
                     "0.0.0.0", "0x7f000001", "2130706433", "0177.0.0.1", "127.1", "[fd00::5]", "100.64.3.4"]))
_internal_url = st.builds("{}://{}{}/{}".format, st.sampled_from(["http", "https"]), _internal_host,
                          st.sampled_from(["", ":8080", ":22"]), _path)

def _call(tool: st.SearchStrategy, key: str, value: st.SearchStrategy) -> st.SearchStrategy:
    return st.builds(lambda t, v, pick: CallChoice.of(t, {key: v}, pick), tool, value, st.integers(0, 30))


CALL_STRATEGIES: dict[str, st.SearchStrategy] = {
    "read": _call(st.just("read_file"), "path", _path),
    "grep": _call(st.just("shell"), "cmd", _safe_cmd),
    "rm_rf": _call(st.just("shell"), "cmd", _rm_rf),
    "fetch": _call(st.just("http_get"), "url", _public_url),
    "internal": _call(st.just("http_get"), "url", _internal_url),
    "invented": _call(st.sampled_from(INVENTED_TOOLS), "cmd", _rm_rf),
}
OUT_STRATEGIES: dict[str, st.SearchStrategy] = {
    size: st.builds(OutputChoice, st.just(size), st.integers(0, 3 if size != "over" else 400),
                    st.text(min_size=1, max_size=8))
    for size in ("empty", "full", "over")
}


class GateChainAdapter(LiveAdapter):
    """Runs haltproof.harness.gate_loop.GateLoop.step, with the real gates in a real GateChain, for
    each transition. Subclasses (the tests' mutants) swap `chain_class`, `loop_class` or
    `make_gates` to put broken variants under the same proof."""

    chain_class: type = GateChain
    loop_class: type = GateLoop
    copyable = False        # replaying a path (at most T + 1 turns) is cheaper than deep-copying a loop

    def config(self, params: dict[str, int]) -> GateLoopConfig:
        return GateLoopConfig(whitelist=WHITELIST, token_budget=params["B"], window=params["N"],
                              refusal_threshold=params["A"], turn_limit=params["T"],
                              per_tool_budgets={CAPPED_TOOL: params["P"]}, default_max_tokens=1)

    def make_gates(self, config: GateLoopConfig) -> list[Gate]:
        return default_gates(config.whitelist, config.token_budget, config.window, config.per_tool_budgets)

    def start(self, params: dict[str, Any], init: dict[str, Any]) -> BoundRun:
        """A fresh loop at turn 0 (the spec's one initial state, so `init` is not needed)."""
        config, env = self.config(params), Environment()
        tools = {name: env.tool(name, r) for name, r in RESERVATIONS.items()}
        chain = self.chain_class([CountingGate(g, env) for g in self.make_gates(config)])
        return BoundRun(self.loop_class(config, tools, chain=chain, conversation_id="haltproof-check"), env)

    def representative(self, action: str, choice: str, label: Any) -> CallChoice | OutputChoice:
        if choice in ("call", "stale"):
            return CallChoice.of(CALLS[label]["tool"], CALLS[label]["args"])
        return OutputChoice(label, OVER_EXTRA if label == "over" else 0, FILLER)

    def strategy(self, action: str, choice: str, label: Any) -> st.SearchStrategy:
        if choice in ("call", "stale"):
            return CALL_STRATEGIES[label]
        return OUT_STRATEGIES[label]

    def step(self, run: BoundRun, action: str, choices: dict[str, Any]) -> None:
        loop, env = run.loop, run.env
        env.gate_calls = env.invocations = 0
        if action == "finish":
            loop.finish()
            return None
        call: CallChoice = choices["call"] if "call" in choices else choices["stale"]
        env.output = choices.get("out") or OutputChoice("full")
        t, n, pick = loop.turn + 1, loop.config.window, call.pick
        extends = None
        if action == "extend_visible":          # a turn in t-N .. t-1 (>= 1); pick 0: the oldest
            lo, hi = max(1, t - n), t - 1
            if hi < lo:
                raise ValueError(f"no visible turn to extend at turn {t}")
            extends = lo + pick % (hi - lo + 1)
        elif action == "extend_expired":        # a turn in 1 .. t-N-1; pick 0: the newest
            hi = t - n - 1
            if hi < 1:
                raise ValueError(f"no expired turn to extend at turn {t} with window {n}")
            extends = hi - pick % hi
        loop.step({"tool": call.tool, "args": dict(call.args), "extends": extends})
        return None             # the spec has no decide tables: the decision is the var `last`

    @staticmethod
    def last(loop: GateLoop) -> str:
        d = loop.last_decision
        if d is None:
            return "none"
        if d.allow:
            return "allow"
        if d.gate_name not in LAST_OF_GATE:
            raise ValueError(f"the decision names {d.gate_name!r}, which is not a gate of the chain")
        return LAST_OF_GATE[d.gate_name]

    def abstract(self, run: BoundRun) -> dict[str, Any]:
        loop, env = run.loop, run.env
        return {"turn": loop.turn, "refusals": loop.refusal_count, "tokens": loop.ledger.cumulative(),
                "shell_tokens": loop.ledger.per_tool(CAPPED_TOOL), "last": self.last(loop),
                "gates_run": env.gate_calls, "dispatched": env.invocations > 0,
                "told": any(m.role == "system" and m.turn == loop.turn for m in loop.messages),
                "status": loop.status}
