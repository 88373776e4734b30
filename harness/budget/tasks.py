"""Named tasks for the demo shop (haltproof.harness.budget.tools.SEED_ITEMS)."""

from __future__ import annotations

from typing import Any

TASKS: dict[str, dict[str, Any]] = {
    # the worked examples: one camera, four tool calls
    "camera": {"goal": "reserve", "query": "camera", "quantity": 1},
    # read-only: a unique hit and its document support `finish info`
    "camera-info": {"goal": "info", "query": "camera"},
    # two tripods: no unique hit, the deterministic policy abstains
    "tripod": {"goal": "reserve", "query": "tripod", "quantity": 1},
    # out of stock: the deterministic policy abstains after reading the stock
    "flash": {"goal": "reserve", "query": "flash", "quantity": 1},
    # nothing in the catalogue
    "lens-cap": {"goal": "reserve", "query": "lens cap", "quantity": 1},
}
