"""machine/yamlpos.py: safe YAML with the line of every key and item; duplicate keys,
tags, floats and empty files rejected with their line."""

from __future__ import annotations

import pytest

from haltproof.machine.errors import SpecError
from haltproof.machine.spec import parse_spec
from haltproof.machine import yamlpos
from haltproof.machine.yamlpos import YList, YMap, YStr, load_yaml

F = "f.yaml"


def error(text: str):
    """The single Problem load_yaml raises for TEXT."""
    with pytest.raises(SpecError) as info:
        load_yaml(text, F)
    (problem,) = info.value.problems
    assert problem.file == F
    return problem


# ---------------------------------------------------------------- line numbers

DOC = """\
# a comment on line 1
machine: m
vars:
  steps:
    type: int
    min: 0

  flag: {type: bool, init: true}
list:
  - first
  - second:
      nested: 1
  -
    third
flow: [a, b,
       c]
block: |
  line one
  line two
folded: >-
  folded
quoted: 'q'
"""


def test_keys_remember_their_lines():
    d = load_yaml(DOC, F)
    assert isinstance(d, YMap)
    assert d.line == 2
    assert [d.line_of(k) for k in ("machine", "vars", "list", "flow", "block", "folded", "quoted")] \
        == [2, 3, 9, 15, 17, 20, 22]
    vars_ = d["vars"]
    assert isinstance(vars_, YMap)
    assert vars_.line == 4
    assert vars_.line_of("steps") == 4 and vars_.line_of("flag") == 8
    assert vars_["steps"].line_of("type") == 5 and vars_["steps"].line_of("min") == 6
    flag = vars_["flag"]
    assert flag.line == 8 and flag.line_of("type") == 8 and flag.line_of("init") == 8


def test_missing_key_falls_back_to_the_mapping_line():
    d = load_yaml(DOC, F)
    assert d["vars"]["steps"].line_of("init") == 5


def test_list_items_remember_their_lines():
    d = load_yaml(DOC, F)
    items = d["list"]
    assert isinstance(items, YList)
    assert items.line == 10
    assert [items.line_of(i) for i in range(3)] == [10, 11, 14]
    assert items[0] == "first" and items[2] == "third"
    assert isinstance(items[1], YMap) and items[1].line_of("second") == 11
    assert items[1]["second"].line_of("nested") == 12
    flow = d["flow"]
    assert list(flow) == ["a", "b", "c"]
    assert [flow.line_of(i) for i in range(3)] == [15, 15, 16]
    assert flow.line_of(99) == flow.line == 15


def test_strings_remember_line_and_block_style():
    d = load_yaml(DOC, F)
    for key, value, line, block in [("machine", "m", 2, False), ("quoted", "q", 22, False),
                                    ("block", "line one\nline two\n", 17, True),
                                    ("folded", "folded", 20, True)]:
        s = d[key]
        assert isinstance(s, YStr)
        assert (s, s.line, s.block) == (value, line, block), key
    assert d["list"][0].line == 10


def test_scalars_keep_their_yaml_types():
    d = load_yaml("a: 1\nb: true\nc: 0x1F\nd: '1'\ne: null\nf: -3\ng: 1_000\n", F)
    assert d == {"a": 1, "b": True, "c": 31, "d": "1", "e": None, "f": -3, "g": 1000}
    assert type(d["a"]) is int and type(d["b"]) is bool and isinstance(d["d"], YStr)


def test_top_level_list_and_scalar():
    seq = load_yaml("- a\n- b\n", F)
    assert isinstance(seq, YList) and seq == ["a", "b"] and seq.lines == [1, 2]
    assert load_yaml("\n\n7\n", F) == 7


def test_line_numbers_feed_spec_errors():
    text = ("machine: m\n"
            "vars:\n"
            "  steps: {type: int, min: 0, max: 3, init: 0}\n"
            "actions:\n"
            "  tick:\n"
            "    do:\n"
            "      - set:\n"
            "          steps: steps + 1\n"
            "          nope: 1\n")
    with pytest.raises(SpecError) as info:
        parse_spec(text, F)
    (problem,) = info.value.problems
    assert (problem.line, problem.text) == (9, "nope")


# ---------------------------------------------------------------- duplicate keys

@pytest.mark.parametrize("text, line, first, key", [
    ("a: 1\nb: 2\na: 3\n", 3, 1, "a"),
    ("top:\n  x: 1\n  y: 2\n  x: 3\n", 4, 2, "x"),
    ("{a: 1, b: 2, a: 3}\n", 1, 1, "a"),
    ("l:\n  - {k: 1}\n  - k: 1\n    j: 2\n    k: 3\n", 5, 3, "k"),
    ("'a': 1\n\"a\": 2\n", 2, 1, "a"),          # the same key, quoted differently
])
def test_duplicate_keys_rejected(text, line, first, key):
    p = error(text)
    assert p.line == line
    assert p.message == f"duplicate key (first at line {first})"
    assert p.text == key


def test_same_key_in_different_mappings_is_fine():
    d = load_yaml("a: {x: 1}\nb: {x: 2}\n", F)
    assert d["a"]["x"] == 1 and d["b"]["x"] == 2


# ---------------------------------------------------------------- tags and other YAML features

@pytest.mark.parametrize("text, line, tag", [
    ("a: !!python/object:os.system x\n", 1, "python/object:os.system"),
    ("a: 1\nb: !!python/object/apply:os.system ['echo hi']\n", 2, "python/object/apply:os.system"),
    ("a:\n  - !!python/name:os.system ''\n", 2, "python/name:os.system"),
    ("a: !!python/tuple [1, 2]\n", 1, "python/tuple"),
    ("a: !custom x\n", 1, "!custom"),
    ("!custom {a: 1}\n", 1, "!custom"),
    ("a: !!set {x, y}\n", 1, "tag:yaml.org,2002:set"),
    ("a: !!binary aGVsbG8=\n", 1, "tag:yaml.org,2002:binary"),
    ("a: !!omap [{x: 1}]\n", 1, "tag:yaml.org,2002:omap"),
])
def test_tags_rejected(text, line, tag):
    p = error(text)
    assert p.message == "YAML tag not allowed in a spec"
    assert p.line == line
    assert tag in p.text


def test_core_schema_tags_are_allowed():
    d = load_yaml("a: !!str 3\nb: !!int '4'\n", F)
    assert d == {"a": "3", "b": 4}


@pytest.mark.parametrize("text", ["description: 2024-05-01\n", "description: =\n"])
def test_implicit_tag_is_not_reported_as_a_tag(text):
    try:
        d = load_yaml(text, F)
    except SpecError as exc:
        assert "tag" not in str(exc), str(exc)
    else:
        assert isinstance(d["description"], str)


def test_merge_keys_rejected():
    p = error("base: &b {x: 1}\nother:\n  <<: *b\n  y: 2\n")
    assert p.line == 3
    assert "merge keys" in p.message


def test_non_string_keys_rejected():
    p = error("a: 1\n2: b\n")
    assert p.line == 2 and p.message == "keys must be strings"
    assert error("? [1, 2]\n: x\n").message == "keys must be strings"
    p = error("a: 1\non: 2\n")        # YAML 1.1: on, off, yes, no are booleans too
    assert (p.line, p.message, p.text) == (2, "keys must be strings: YAML reads on as the boolean true; "
                                              "quote it ('on')", "on")
    assert error("No: 1\n").message == "keys must be strings: YAML reads No as the boolean false; quote it ('No')"
    assert error("true: 1\n").message == "keys must be strings: YAML reads true as the boolean true; quote it ('true')"
    assert load_yaml("'on': 1\n", F) == {"on": 1}


@pytest.mark.parametrize("text, line, shown", [
    ("a: 1.5\n", 1, "1.5"),
    ("a:\n  - 1\n  - 2.0\n", 3, "2.0"),
    ("a: .inf\n", 1, ".inf"),
    ("a: 1e3x\nb: -0.5\n", 2, "-0.5"),
    ("a: 1.0e+3\n", 1, "1.0e+3"),
])
def test_floats_rejected(text, line, shown):
    p = error(text)
    assert p.line == line
    assert "floating-point numbers are not allowed" in p.message
    assert p.text == shown


# ---------------------------------------------------------------- empty and invalid files

@pytest.mark.parametrize("text", ["", "\n\n", "   \n", "# only a comment\n", "# one\n# two\n"])
def test_empty_file_rejected(text):
    p = error(text)
    assert p.line == 1
    assert p.message == "the file is empty"


@pytest.mark.parametrize("text", ["---\n", "~\n", "null\n"])
def test_a_null_document_is_not_a_spec(text):
    # load_yaml returns None; the spec loader must still reject it at line 1.
    with pytest.raises(SpecError) as info:
        parse_spec(text, F)
    (problem,) = info.value.problems
    assert problem.line == 1


@pytest.mark.parametrize("text, line, fragment", [
    ("a: b: c\n", 1, "mapping values are not allowed here"),
    ("a: 1\nb:\n  - x\n  y: 2\n", 4, ""),
    ("a: 1\n\tb: 2\n", 2, "'\\t'"),
    ("a: [1, 2\nb: 3\n", 1, "flow sequence that starts here is not closed"),
    ("a: 'open\n", 1, "end of stream"),
    ("a: 1\n---\nb: 2\n", 2, "another document"),
    ("a: *nothing\n", 1, "undefined alias"),
])
def test_invalid_yaml_reports_a_line(text, line, fragment):
    p = error(text)
    assert p.line == line
    assert p.message.startswith("not valid YAML: ")
    assert fragment in p.message


# ---------------------------------------------------------------- aliases

def test_an_alias_expands_to_its_anchors_values_at_the_alias_position():
    d = load_yaml("one: &s [a, b]\n"
                  "two:\n"
                  "  - first\n"
                  "  - *s\n", F)
    assert d["two"] == ["first", ["a", "b"]]
    # where the aliased list stands is the alias's line; its own items are written at line 1
    assert d["two"].lines == [3, 4]
    assert d["two"][1].line == 1


def test_alias_budget_counts_nodes_and_text(monkeypatch):
    monkeypatch.setattr(yamlpos, "ALIAS_BUDGET", 7)
    text = "a: &a [xy, z]\nb: *a\n"        # the alias adds the list (1) and xy (1 + 2) and z (1 + 1)
    assert load_yaml(text, F)["b"] == ["xy", "z"]
    p = error(text + "c: *a\n")
    assert (p.line, p.message) == (3, "aliases expand the spec past 7 nodes and characters (a YAML alias bomb?)")
