"""Hostile inputs (issue 11): files and options built to exhaust memory, the stack or the
user's patience must end in exit 2 with one located message, never a MemoryError, a
RecursionError, a hang, a silently ignored value or a file written on a wrong input.

Each test asserts the whole of stderr: the exact message, file and line.
"""

from __future__ import annotations

import pytest

from machine import spec as spec_module, yamlpos
from machine.errors import SpecError
from test_malformed_specs import BASE, check, edit  # noqa: F401  (check is a fixture)


def only_error(r, line: int | None, message: str) -> None:
    """Exit 2, nothing on stdout, and stderr is exactly this one located message."""
    where = f"{r.path}:{line}" if line is not None else r.path
    assert (r.code, r.out, r.err) == (2, "", f"error: {where}: {message}\n")


# ---------------------------------------------------------------- YAML: aliases and nesting

def laughs(levels: int) -> str:
    """`sets:` holding the "billion laughs": each level lists nine aliases of the one before,
    so the 21-line text below BASE expands to 9**levels values."""
    lines = ["sets:", "  a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, levels):
        lines.append(f"  a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def test_billion_laughs_stops_at_the_alias_that_exceeds_the_budget(check):
    # BASE has 20 lines; sets is line 21, a0 line 22, a4 (whose *a3 crosses 100,000) line 26
    r = check(BASE + laughs(10))
    only_error(r, 26, "aliases expand the spec past 100,000 nodes and characters (a YAML alias bomb?)")


def test_a_small_alias_bomb_is_refused_too(check):
    """Six levels (531,441 values) fit in memory even without the budget: still refused."""
    r = check(BASE + laughs(6))
    only_error(r, 26, "aliases expand the spec past 100,000 nodes and characters (a YAML alias bomb?)")


def test_alias_budget_counts_scalar_text(check, monkeypatch):
    """One long text reused through aliases costs its length each time: a 1,000-character
    expression aliased into a hundred places would be parsed a hundred times."""
    monkeypatch.setattr(yamlpos, "ALIAS_BUDGET", 2_500)
    text = "x" * 1_000
    r = check(BASE + f"description: &d {text}\nsets:\n  a: *d\n  b: *d\n  c: *d\n")
    only_error(r, 25, "aliases expand the spec past 2,500 nodes and characters (a YAML alias bomb?)")


def test_reused_aliases_within_the_budget_still_load(check):
    r = check(edit("      obs: [good, bad]\n", "      obs: &o [good, bad]\n",
                   "terminal:\n", "  again:\n    when: decision == going\n    choose:\n      obs: *o\n"
                                  "terminal:\n"))
    assert r.code == 0, r.err


def test_recursive_alias_is_refused_at_the_alias(check):
    r = check(BASE + "sets:\n  loop: &a [1, *a]\n")
    only_error(r, 22, "this alias refers to a node that contains it: a spec cannot be a recursive "
                      "structure")


def test_ten_thousand_nested_lists(check):
    r = check(BASE + "sets:\n  deep: " + "[" * 10_000 + "]" * 10_000 + "\n")
    only_error(r, 22, "the YAML nests deeper than 100 levels")


def test_ten_thousand_nested_flow_mappings(check):
    r = check(BASE + "sets:\n  deep: " + "{k: " * 10_000 + "x" + "}" * 10_000 + "\n")
    only_error(r, 22, "the YAML nests deeper than 100 levels")


def test_nested_block_mappings(check):
    deep = "".join("  " * (i + 1) + f"k{i}:\n" for i in range(200))
    r = check(BASE + "sets:\n" + deep + "  " * 201 + "x\n")
    # the top mapping is level 1 and sets level 2, so level 101 is the value of k98: the mapping
    # that starts with k99, on line 121
    only_error(r, 121, "the YAML nests deeper than 100 levels")


def test_a_hundred_levels_are_allowed_and_not_one_more(check):
    # the top mapping and sets are two levels: 98 lists make 100, 99 lists 101
    r = check(BASE + "sets:\n  deep: " + "[" * 98 + "]" * 98 + "\n")
    assert r.code == 0, r.err
    r = check(BASE + "sets:\n  deep: " + "[" * 99 + "]" * 99 + "\n")
    only_error(r, 22, "the YAML nests deeper than 100 levels")


def test_nesting_built_from_aliases_is_bounded_too(check):
    """Each anchor nests 60 levels around the previous alias: b at line 23 reaches 122."""
    r = check(BASE + "sets:\n"
              "  a: &a " + "[" * 60 + "]" * 60 + "\n"
              "  b: &b " + "[" * 60 + "*a" + "]" * 60 + "\n"
              "  c: &c " + "[" * 60 + "*b" + "]" * 60 + "\n")
    only_error(r, 23, "the YAML nests deeper than 100 levels")


# ---------------------------------------------------------------- expressions nested too deep

@pytest.mark.parametrize("command", ["check", "graph"])
@pytest.mark.parametrize("spec, line, what", [
    (edit("    when: decision == going\n", "    when: " + "not " * 5_000 + "decision == going\n"),
     9, "guard of work"),
    (edit("{steps: steps + 1,", "{steps: steps" + " + 0" * 20_000 + " + 1,"),
     13, "new value of steps"),
], ids=["not-5000", "plus-20000"])
def test_deep_expression_in_check_and_graph(check, command, spec, line, what):
    r = check(spec, *(["-p", "n=1"] if command == "graph" else []), command=command)
    only_error(r, line, f"{what} nests deeper than 100 levels")


# ---------------------------------------------------------------- size

def test_spec_over_the_size_limit_is_refused_before_parsing(check, monkeypatch):
    monkeypatch.setattr(spec_module, "MAX_SPEC_BYTES", 1_000)
    text = BASE + "#" * (1_001 - len(BASE) - 1) + "\n"      # 1,001 bytes
    r = check(text)
    only_error(r, None, "the file is 1,001 bytes, more than the limit of 1,000 bytes for a spec")
    r = check(text[:-2] + "\n")                              # 1,000 bytes: loads
    assert r.code == 0, r.err


def test_spec_one_byte_over_four_mib(check):
    text = BASE + "#" * (4 * 1024 * 1024 - len(BASE)) + "\n"
    r = check(text)
    only_error(r, None, "the file is 4,194,305 bytes, more than the limit of 4,194,304 bytes for a spec")


def test_size_limit_holds_for_a_file_without_a_size(tmp_path, monkeypatch):
    """A FIFO (or /dev/zero) reports no size: the read itself stops past the limit."""
    monkeypatch.setattr(spec_module, "MAX_SPEC_BYTES", 1_000)
    with pytest.raises(SpecError) as info:
        spec_module.load_spec("/dev/zero")
    assert str(info.value) == "/dev/zero: the file is larger than the limit of 1,000 bytes for a spec"


def test_parse_spec_refuses_text_over_the_limit(monkeypatch):
    monkeypatch.setattr(spec_module, "MAX_SPEC_BYTES", 1_000)
    with pytest.raises(SpecError) as info:
        spec_module.parse_spec(BASE + "#" * 600 + "é" * 100 + "\n", "api.yaml")
    assert str(info.value) == "api.yaml: the file is 1,273 bytes, more than the limit of 1,000 bytes for a spec"
