"""What the property analyses may ask of an explored state graph, whichever engine built it.

The analyses (termination.py, vacuity.py) are written against `ExploredGraph` only: they
never ask which engine ran. What an engine knows better than a generic walk over its edges
(a deadlock noted while sweeping, facts gathered level by level, a graph whose edges were
not kept) it answers through a method here; each engine implements every method, choosing
the algorithm that fits how it stores the graph.

States are numbered in BFS order by both engines, the edges of state i are
`edges_of(i)` (contiguous, grouped by source), and the first `expanded` states are the
ones whose successors were all computed. Every answer below is about the explored graph:
what it finds really exists even in a partial exploration.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import numpy as np

from haltproof.machine.compiled import Machine

T_co = TypeVar("T_co", covariant=True)


class Column(Protocol[T_co]):
    """A per-state or per-edge column (an `array`, a `bytearray`, a numpy array, or one
    recomputed on demand): read by length and index only."""

    def __len__(self) -> int: ...

    def __getitem__(self, i: int, /) -> T_co: ...


@dataclass(frozen=True)
class RuleFacts:
    """What the explored transitions of one action say about its decide rules that never fired."""

    true_somewhere: frozenset[int]                  # rules whose condition held on some transition
    shadowed_by: Mapping[int, frozenset[str]]       # per such rule: the earlier rules that fired there first


class ExploredGraph(Protocol):
    """An explored state graph, as both engines' `Exploration` classes present it."""

    @property
    def machine(self) -> Machine:
        """The machine that was explored (spec, compiled actions, rule conditions)."""

    @property
    def states(self) -> Column[tuple[Any, ...]]:
        """Every state found, in BFS order (the first `expanded` of them expanded)."""

    @property
    def parent(self) -> Column[int]:
        """Per state: the state that first reached it (-1 for an initial state)."""

    @property
    def depth(self) -> Column[int]:
        """Per state: its BFS depth; never decreases along the states."""

    @property
    def edge_start(self) -> Column[int]:
        """Per expanded state i, where its edges start; `edge_start[expanded]` ends the last.
        An engine may drop the edges of a forward graph: the analyses then read none of the
        edge columns, only the methods below."""

    @property
    def e_dst(self) -> Column[int]:
        """Per edge: the state it leads to."""

    @property
    def e_action(self) -> Column[int]:
        """Per edge: the index of its action."""

    @property
    def e_combo(self) -> Column[int]:
        """Per edge: the index of its action's choice combination."""

    @property
    def e_rule(self) -> Column[str | None]:
        """Per edge: the decide rule that fired, None for an action that decides nothing."""

    @property
    def expanded(self) -> int:
        """How many states (the first ones) had their successors computed."""

    @property
    def forward(self) -> bool:
        """Whether every explored edge leads exactly one BFS level deeper: the BFS levels are
        then a topological order, and a longest run is a shortest path to a deepest state."""

    @property
    def fired_by_action(self) -> Mapping[int, Mapping[str, int]]:
        """Per action that ever ran: how many transitions each of its decide rules made."""

    @property
    def rule_counts(self) -> Mapping[str, int]:
        """Per decide rule (every one of the spec): how many transitions it made."""

    @property
    def label_counts(self) -> Mapping[Any, int]:
        """Per terminal label value: how many terminal states carry it."""

    @property
    def terminal_states(self) -> int:
        """How many expanded states are terminal."""

    def edges_of(self, i: int) -> range:
        """The indices of the edges leaving expanded state i."""

    def first_deadlock(self) -> int | None:
        """The first (so a shallowest) expanded state that is not terminal, none of whose
        transitions failed to evaluate, and that has no successor; None if there is none."""

    def first_deepest(self) -> int:
        """The first state of the deepest BFS level (0 when nothing was found)."""

    def topological_order(self) -> Sequence[int] | None:
        """The expanded states in an order where every edge among them goes forward, or None
        when they lie on a cycle. A `termination.Peeled` order is level by level."""

    def run_ends(self) -> np.ndarray:
        """Per expanded state, whether a run ends there: terminal, or a deadlock (as
        `first_deadlock` calls one). The liveness analyses need every such state."""

    def open_states(self, name: str) -> np.ndarray:
        """Per state, whether liveness property `name`'s obligation is open there (its
        monitor's expression, machine/liveness.py); raises what a property expression raises
        when it cannot be evaluated on some state."""

    def cyclic_candidates(self) -> list[int]:
        """Expanded states, ascending, among which every cycle of the explored graph lies
        (all of them, or fewer where the engine can rule states out cheaply)."""

    def rule_facts(self, action: int, dead: Sequence[int]) -> RuleFacts:
        """For the rules `dead` of `action` (indices into its decide rules, none of which
        fired): which have a condition true on some explored transition of the action, and
        the earlier rules that fired there. Empty when the action's rules have no conditions."""

    def choice_groups(self, actions: Sequence[int]) -> dict[int, list[list[int]]]:
        """For each of `actions` (each makes exactly one choice): its choice combinations that
        made transitions, grouped by identical transitions (the same multiset of source,
        successor and rule). Each group and the groups are in ascending combination order."""
