"""Verification gates (seed S3): the deterministic layer between the model and its tools that says "no".

A gate is anything with a deterministic `evaluate(call, ctx) -> GateDecision`: a pure
function of the proposed call and the context (the turn, the observation ledger, the
message store). It never runs the tool and never changes the context. `GateChain`
evaluates an ordered list of gates and stops at the first DENY (short-circuit); the
decision it returns names the gate that denied and records, in `trail`, every gate
that ran and what it said.

The order is cheapest and widest claim first (the seed's argument): WhitelistGate (a
set lookup: the tool is not in the contract), RegexGate (the arguments are not),
RecencyGate (structurally fine, but it builds on what the model can no longer see),
PerToolBudgetGate and BudgetGate last (they read the ledger). `build_chain` builds that
order from a config.

Token reservations. A gate decides *before* the tool runs, so it cannot know how many
tokens the output will have. Every call therefore carries `max_tokens`, its token
reservation (the harness fills it from the tool registry), and the harness clips the
output to it before it reaches the ledger (haltproof.harness.gate_loop). A call "fits" a budget
when the tokens already observed plus its reservation stay within the cap; the budget
gates allow exactly the calls that fit, so the ledger can never pass a cap.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

from .ledger import ObservationLedger


class ToolCallError(ValueError):
    """A proposed tool call that is not well formed."""


@dataclass(frozen=True)
class ToolCall:
    """One proposed tool call.

    - `tool`: the tool's name, as the model wrote it (it may not exist).
    - `args`: the arguments, a JSON-like mapping with string keys.
    - `max_tokens`: the token reservation, >= 1: the most tokens this call may add to
      the ledger (the harness clips the output to it).
    - `extends`: the turn (>= 1) of an earlier observation this call continues (the
      next page of a read, more of the same output), or None. See RecencyGate.
    - `call_id`: an identifier for records (the harness assigns `call_<turn>`).
    """

    tool: str
    args: Mapping[str, Any]
    max_tokens: int
    extends: int | None = None
    call_id: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.tool, str) or not self.tool:
            raise ToolCallError(f"tool must be a non-empty string, got {self.tool!r}")
        if not isinstance(self.args, Mapping) or not all(isinstance(k, str) for k in self.args):
            raise ToolCallError(f"args must be a mapping with string keys, got {self.args!r}")
        if isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int) or self.max_tokens < 1:
            raise ToolCallError(f"max_tokens must be an int >= 1, got {self.max_tokens!r}")
        if self.extends is not None and (isinstance(self.extends, bool) or not isinstance(self.extends, int)
                                         or self.extends < 1):
            raise ToolCallError(f"extends must be None or a turn number >= 1, got {self.extends!r}")
        if not isinstance(self.call_id, str):
            raise ToolCallError(f"call_id must be a string, got {self.call_id!r}")


@dataclass(frozen=True)
class GateContext:
    """What a gate may read: the turn the call is proposed in (1-based), the ledger of
    everything observed before it, and the message store (read-only by convention)."""

    turn: int
    ledger: ObservationLedger
    messages: Sequence[Any] = ()


@dataclass(frozen=True)
class GateDecision:
    """ALLOW or DENY, with the reason and the gate that decided.

    A single gate returns its own decision (`trail` empty). A GateChain returns the
    first DENY, or an ALLOW named `chain` when every gate allowed; its `trail` holds the
    decision of every gate that ran, in order, so `evaluated` says which gates ran.
    """

    allow: bool
    reason: str
    gate_name: str
    trail: tuple[GateDecision, ...] = ()

    @property
    def evaluated(self) -> tuple[str, ...]:
        return tuple(d.gate_name for d in self.trail)

    @property
    def verdict(self) -> str:
        return "allow" if self.allow else "deny"


class Gate(Protocol):
    """The gate protocol: a name and a deterministic, side-effect-free evaluate."""

    name: str

    def evaluate(self, call: ToolCall, ctx: GateContext) -> GateDecision: ...


# ---------------------------------------------------------------- the gates

class WhitelistGate:
    """Allow exactly the tools named in an explicit set; deny every other name (including
    names the model invented). The cheapest gate: a set lookup."""

    name = "whitelist"

    def __init__(self, allowed: Iterable[str]) -> None:
        self.allowed = frozenset(allowed)
        bad = [t for t in self.allowed if not isinstance(t, str) or not t]
        if bad:
            raise ValueError(f"whitelisted tool names must be non-empty strings, got {bad[0]!r}")

    def evaluate(self, call: ToolCall, ctx: GateContext) -> GateDecision:
        if call.tool in self.allowed:
            return GateDecision(True, f"{call.tool} is on the whitelist", self.name)
        return GateDecision(False, f"tool {call.tool!r} is not on the whitelist "
                                   f"({', '.join(sorted(self.allowed)) or 'empty'})", self.name)


# Recursive *and* forced removal by `rm`, in any spelling of the flags (-rf, -fr, -Rf,
# -r -f, --recursive --force, flags after the operands), within one shell command
# (the lookaheads stop at ; & | and newlines). `grep -rf`, `rm -r dir` and `rm -f file`
# do not match; `confirm -rf` does not either (rm must start a word).
RM_RF = (r"(?<![\w.-])rm"
         r"(?=(?:[ \t]+[^\s;&|]+)*?[ \t]+(?:-[A-Za-z]*[rR][A-Za-z]*|--recursive)(?![^\s;&|]))"
         r"(?=(?:[ \t]+[^\s;&|]+)*?[ \t]+(?:-[A-Za-z]*f[A-Za-z]*|--force)(?![^\s;&|]))")
DEFAULT_PATTERNS: dict[str, str] = {"rm -rf (recursive forced delete)": RM_RF}

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]+")
_DOTTED_V4 = re.compile(r"(?<![\w.])(?:0[xX][0-9A-Fa-f]+|\d+)(?:\.(?:0[xX][0-9A-Fa-f]+|\d+)){3}(?![\w.])")
_BARE_V6 = re.compile(r"(?<![\w:.%])\[?([0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}"
                      r"(?:\d+\.\d+\.\d+\.\d+)?(?:%[\w.]+)?)\]?(?![\w:])")
_LOCALHOST = re.compile(r"(?<![\w.-])(?:[\w-]+\.)*localhost\.?(?![\w-])", re.IGNORECASE)
_LEGACY_V4 = re.compile(r"(?:0[xX][0-9A-Fa-f]*|\d+)(?:\.(?:0[xX][0-9A-Fa-f]*|\d+)){0,3}")
_SHARED = ipaddress.ip_network("100.64.0.0/10")       # carrier-grade NAT: internal, not is_private


def internal_kind(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why `ip` is internal (loopback, private, link-local, unspecified, shared), or None."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return "loopback"
    if ip.is_link_local:
        return "link-local"
    if ip.is_unspecified:
        return "unspecified"
    if isinstance(ip, ipaddress.IPv4Address) and ip in _SHARED:
        return "shared (carrier-grade NAT)"
    if ip.is_private:
        return "private"
    return None


def parse_host(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The IP address a URL host stands for, or None for a name.

    Besides the canonical forms this accepts what curl and browsers accept for IPv4:
    a single integer (2130706433), hex (0x7f000001), octal parts (0177.0.0.1) and short
    forms (127.1), through the C library's inet_aton. No DNS lookup is ever made.
    """
    host = host.strip("[]").rstrip(".")
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if _LEGACY_V4.fullmatch(host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def _strings(value: Any, where: str) -> Iterator[tuple[str, str]]:
    """Every string inside an argument value (keys included), with where it sits."""
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            if isinstance(k, str):
                yield where, k
            yield from _strings(v, f"{where}.{k}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _strings(v, f"{where}[{i}]")


class RegexGate:
    """Deny a call when one of its argument strings matches a denied pattern or names an
    internal address. A pure function of the call payload.

    - `patterns`: name -> regular expression, searched in every string of the arguments
      (nested values and keys included). The default denies `rm -rf` in any spelling of
      its flags (see RM_RF).
    - `block_internal_addresses`: deny a host in a loopback, private, link-local,
      unspecified or shared (100.64/10) range, decided with the stdlib `ipaddress`
      module, never by a regex alone: hosts of URLs (`scheme://host`), bare dotted IPv4
      (octal and hex parts included), bare or bracketed IPv6 (IPv4-mapped included), and
      the name `localhost` (and `*.localhost`). A URL that cannot be parsed is denied.

    Not covered (documented limits): host names that resolve to internal addresses
    (that needs DNS, which a pure gate must not do), and addresses spelled in ways a
    shell would expand later (variables, command substitution).
    """

    name = "regex"

    def __init__(self, patterns: Mapping[str, str | re.Pattern[str]] | None = None,
                 block_internal_addresses: bool = True) -> None:
        patterns = DEFAULT_PATTERNS if patterns is None else patterns
        self.patterns = {label: re.compile(p) if isinstance(p, str) else p for label, p in patterns.items()}
        self.block_internal_addresses = block_internal_addresses

    def evaluate(self, call: ToolCall, ctx: GateContext) -> GateDecision:
        for where, text in _strings(dict(call.args), "args"):
            for label, pattern in self.patterns.items():
                m = pattern.search(text)
                if m:
                    return GateDecision(False, f"{where} matches {label}: {_excerpt(text, m.start())!r}",
                                        self.name)
            if self.block_internal_addresses:
                why = self.internal_address(text)
                if why:
                    return GateDecision(False, f"{where} names {why}", self.name)
        return GateDecision(True, "no argument matches a denied pattern or names an internal address",
                            self.name)

    @staticmethod
    def internal_address(text: str) -> str | None:
        """A description of the first internal address in `text`, or None."""
        for m in _URL.finditer(text):
            try:
                parts = urlsplit(m.group(0))
                host = parts.hostname
                _ = parts.port       # raises ValueError on a malformed port
            except ValueError:
                return f"a URL that cannot be parsed ({m.group(0)[:60]!r})"
            if not host:
                continue
            if _LOCALHOST.fullmatch(host):
                return f"the loopback host {host!r}"
            ip = parse_host(host)
            if ip is not None and internal_kind(ip):
                return f"the {internal_kind(ip)} address {ip} (host {host!r})"
        text = _URL.sub(" ", text)          # the URLs are judged; now the bare addresses
        for m in _LOCALHOST.finditer(text):
            return f"the loopback host {m.group(0)!r}"
        for m in _DOTTED_V4.finditer(text):
            ip = parse_host(m.group(0))
            if ip is not None and internal_kind(ip):
                return f"the {internal_kind(ip)} address {ip} ({m.group(0)!r})"
        for m in _BARE_V6.finditer(text):
            try:
                ip = ipaddress.ip_address(m.group(1))
            except ValueError:
                continue
            if internal_kind(ip):
                return f"the {internal_kind(ip)} address {ip}"
        return None


def _excerpt(text: str, at: int, width: int = 48) -> str:
    start = max(0, at - 8)
    return text[start:start + width]


class RecencyGate:
    """Only the last N turns are visible; deny a call that would extend an expired
    observation window.

    Precisely: at turn t the prompt shows the observations of turns t-N .. t-1 (the
    last N turns before this one, none before turn 1); older ones are masked. A call
    with `extends = r` continues the observation made at turn r (the next page of that
    read, more of that output): its result would be appended to that observation's
    window. The gate allows it iff turn r is visible, `t - N <= r <= t - 1`, and denies
    it when r is expired (`r < t - N`: the model last saw it at turn r + N) or not an
    earlier turn (`r >= t`). A call that extends nothing (`extends` None) is allowed.
    The gate judges turns only; whether turn r produced an observation at all is not
    its concern.
    """

    name = "recency"

    def __init__(self, window: int) -> None:
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise ValueError(f"the recency window must be an int >= 1, got {window!r}")
        self.window = window

    def evaluate(self, call: ToolCall, ctx: GateContext) -> GateDecision:
        r, t, n = call.extends, ctx.turn, self.window
        if r is None:
            return GateDecision(True, "extends no earlier observation", self.name)
        if r >= t:
            return GateDecision(False, f"extends turn {r}, which is not earlier than this turn {t}", self.name)
        if r < t - n:
            return GateDecision(False, f"extends the observation of turn {r}, which left the {n}-turn "
                                       f"window after turn {r + n}: read it again instead", self.name)
        return GateDecision(True, f"extends turn {r}, visible in the {n}-turn window", self.name)


def _budget_decision(gate: str, what: str, used: int, reserve: int, cap: int) -> GateDecision:
    if used >= cap:
        return GateDecision(False, f"{what} is spent: {used} of {cap} tokens observed", gate)
    if used + reserve > cap:
        return GateDecision(False, f"{what} would be exceeded: {used} observed + {reserve} reserved "
                                   f"> {cap}", gate)
    return GateDecision(True, f"{what} fits: {used} observed + {reserve} reserved <= {cap}", gate)


class BudgetGate:
    """The session's observation budget: cumulative observed tokens are capped at `budget`.

    Deny when the ledger shows the cap is reached (`cumulative >= budget`: from then on
    every call is denied) or when the call's reservation would pass it
    (`cumulative + max_tokens > budget`). A call fits when
    `cumulative + max_tokens <= budget`, and exactly those are allowed; with the output
    clipped to the reservation, `cumulative <= budget` always holds.
    """

    name = "budget"

    def __init__(self, budget: int) -> None:
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
            raise ValueError(f"the token budget must be an int >= 0, got {budget!r}")
        self.budget = budget

    def evaluate(self, call: ToolCall, ctx: GateContext) -> GateDecision:
        return _budget_decision(self.name, "the observation budget", ctx.ledger.cumulative(),
                                call.max_tokens, self.budget)


class PerToolBudgetGate:
    """A cap on the tokens observed from one tool (the seed's exercise): `caps` maps a
    tool name to its cap, read against `ledger.per_tool(name)` with the same rule as
    BudgetGate. Tools without a cap are allowed (only the session budget applies)."""

    name = "per_tool_budget"

    def __init__(self, caps: Mapping[str, int]) -> None:
        for tool, cap in caps.items():
            if isinstance(cap, bool) or not isinstance(cap, int) or cap < 0:
                raise ValueError(f"the per-tool budget of {tool!r} must be an int >= 0, got {cap!r}")
        self.caps = dict(caps)

    def evaluate(self, call: ToolCall, ctx: GateContext) -> GateDecision:
        cap = self.caps.get(call.tool)
        if cap is None:
            return GateDecision(True, f"{call.tool} has no per-tool budget", self.name)
        return _budget_decision(self.name, f"the budget of {call.tool}", ctx.ledger.per_tool(call.tool),
                                call.max_tokens, cap)


# ---------------------------------------------------------------- the chain

class GateChain:
    """An ordered list of gates, evaluated in order; the first DENY short-circuits.

    Returns that DENY (its reason and gate name) with `trail` = the decisions of the
    gates that ran, the denying one last; the gates after it are not evaluated. When
    every gate allows, returns ALLOW named `chain` with every gate in the trail. A chain
    is itself a gate, so chains nest.
    """

    name = "chain"

    def __init__(self, gates: Sequence[Gate]) -> None:
        self.gates = tuple(gates)
        names = [g.name for g in self.gates]
        dup = next((n for n in names if names.count(n) > 1), None)
        if dup is not None:
            raise ValueError(f"two gates named {dup!r} in one chain: decisions must name one gate")

    def evaluate(self, call: ToolCall, ctx: GateContext) -> GateDecision:
        trail: list[GateDecision] = []
        for gate in self.gates:
            decision = gate.evaluate(call, ctx)
            trail.append(decision)
            if not decision.allow:
                return GateDecision(False, decision.reason, decision.gate_name, tuple(trail))
        return GateDecision(True, f"all {len(trail)} gates allow", self.name, tuple(trail))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(g.name for g in self.gates)


def default_gates(whitelist: Iterable[str], token_budget: int, window: int,
                  per_tool_budgets: Mapping[str, int] | None = None,
                  patterns: Mapping[str, str] | None = None) -> list[Gate]:
    """The seed's gates in chain order: whitelist, regex, recency, per-tool budget, budget."""
    return [WhitelistGate(whitelist), RegexGate(patterns), RecencyGate(window),
            PerToolBudgetGate(per_tool_budgets or {}), BudgetGate(token_budget)]


def build_chain(whitelist: Iterable[str], token_budget: int, window: int,
                per_tool_budgets: Mapping[str, int] | None = None,
                patterns: Mapping[str, str] | None = None) -> GateChain:
    return GateChain(default_gates(whitelist, token_budget, window, per_tool_budgets, patterns))
