"""Single-line bugs in machine/binding.py that the verdict selection let through (issue 18):
the checks bound code's results pass before haltproof trusts them, the way an adapter is
loaded, and how the determinism mode is chosen. Each message is pinned exactly: a
finding that names the wrong var or the wrong reason sends the user the wrong way."""

from __future__ import annotations

import sys
import textwrap

import pytest

from haltproof.explorer.options import Options
from haltproof.explorer.check import prepare
from haltproof.machine import binding as B
from haltproof.machine.compiled import Machine
from haltproof.machine.errors import SpecError
from haltproof.machine.spec import parse_spec

pytestmark = pytest.mark.verdict

KINDS = """\
machine: kinds
vars:
  n: {type: int, min: -2, max: %d, init: 0}
  flag: {type: bool, init: false}
  mode: {type: enum, values: [idle, busy], init: idle}
actions:
  go: {when: n < 0, do: [{set: {n: n + 1}}]}
terminal: n == 0
"""


def _machine(top: int = 3) -> Machine:
    [m] = prepare(parse_spec(textwrap.dedent(KINDS % top), "kinds.yaml"), Options(model_only=True))
    return m


# ---------------------------------------------------------------- values the code gives back

@pytest.mark.parametrize("var,value,ok", [
    (0, 0, True), (0, -2, True), (0, 3, True), (0, -3, False), (0, 4, False),
    (0, True, False), (0, 1.0, False), (0, "1", False),          # 1 by ==, not an int
    (1, False, True), (1, True, True), (1, 0, False), (1, 1, False), (1, "true", False),
    (2, "idle", True), (2, "busy", True), (2, "done", False), (2, 0, False),
])
def test_a_value_is_in_its_domain_only_with_the_domains_type(var, value, ok):
    assert B.value_checkers(_machine())[var](value) is ok


@pytest.mark.parametrize("result,message", [
    (([1], None), "abstract() must return a dict with exactly the vars ['a', 'b'], got list"),
    (({1: 2, "a": 1}, None), "abstract() must return a dict with exactly the vars ['a', 'b'], got keys that are "
                             "not all strings"),
    (({"a": 1}, None), "abstract() must return a dict with exactly the vars ['a', 'b'], got ['a']"),
    (({"a": 1, "b": 2, "c": 3}, None), "abstract() must return a dict with exactly the vars ['a', 'b'], "
                                       "got ['a', 'b', 'c']"),
    (({"a": 1, "b": [1]}, None), "abstract() gave var b a value of type list; abstract states hold ints, bools "
                                 "and strings"),
    (({"a": 1, "b": 2}, 3), "the bound code reports a rule of type int; a rule is the name of a decide rule "
                            "(a string) or None"),
])
def test_what_the_code_returns_is_checked_before_it_is_trusted(result, message):
    with pytest.raises(B.CodeError) as found:
        B._plain_result(result, ["b", "a"])
    assert str(found.value) == message


def test_a_result_of_builtin_values_passes():
    assert B._plain_result(({"a": 1, "b": "x"}, "rule"), ["a", "b"]) == ({"a": 1, "b": "x"}, "rule")
    assert B._plain_result(({"a": None, "b": 1.5}, None), ["a", "b"]) == ({"a": None, "b": 1.5}, None)
    assert B.checked_hashable((1, "x"), ["a", "b"], "abstract()") == (1, "x")
    with pytest.raises(B.CodeError) as found:
        B.checked_hashable((1, [2]), ["a", "b"], "abstract()")
    assert str(found.value) == ("abstract() gave var b the unhashable value [2] (list); abstract states hold "
                                "ints, bools and strings")


def test_the_code_and_the_spec_disagree_on_a_type_not_only_a_value():
    """True, 1 and 1.0 are three values: the code giving 1 where the spec's stages give True differs."""
    names = ["n", "flag"]
    assert B._matching(((1, True), None), (1, True), None, names) == (None, None)
    assert B._matching(((1, True), "r"), (1, True), None, names) == ("r", None)      # the spec names the rule
    assert B._matching(((1, True), None), (1, 1), None, names) == (
        None, "the code and the spec's own stages disagree: flag: code 1, spec true")
    assert B._matching(((1, True), "r"), (2, True), "s", names) == (
        "s", "the code and the spec's own stages disagree: rule: code 's', spec 'r'; n: code 2, spec 1")


# ---------------------------------------------------------------- loading an adapter

@pytest.mark.parametrize("ref,message", [
    ("nocolon", "bind must be written module:Name"),
    (":X", "bind must be written module:Name"),
    ("m:", "bind must be written module:Name"),
    ("no_such_module_xyz:X", "cannot import the bound module: ModuleNotFoundError: No module named "
                             "'no_such_module_xyz'"),
    ("haltproof.harness.loop_binding:Nope", "module haltproof.harness.loop_binding has no 'Nope'"),
    ("haltproof.harness.loop_binding:LoopDemoAdapter.nope",
     "module haltproof.harness.loop_binding has no 'LoopDemoAdapter.nope'"),
    ("math:pi", "the adapter has no concretize, step, abstract method"),
    ("fractions:Fraction", "the adapter has no concretize, step, abstract method"),
    # a dotted name is looked up attribute by attribute; a class that cannot be made is named
    ("live_agents:AgentAdapter.agent",
     "cannot create the adapter: TypeError: Agent.__init__() missing 1 required positional argument: 'limit'"),
])
def test_an_adapter_that_cannot_be_loaded_is_a_spec_error_at_the_bind_line(ref, message):
    with pytest.raises(SpecError) as refused:
        B.load_adapter(ref, "f.yaml", 3)
    [problem] = refused.value.problems
    assert (problem.file, problem.line, problem.message, problem.text) == ("f.yaml", 3, message, ref)


def test_a_class_is_instantiated_and_an_instance_taken_as_it_is():
    from haltproof.harness import loop_binding
    made = B.load_adapter("haltproof.harness.loop_binding:LoopDemoAdapter", "f.yaml", 3)
    assert type(made) is loop_binding.LoopDemoAdapter


# ---------------------------------------------------------------- determinism modes

def test_auto_checks_every_transition_up_to_100000_declared_states_and_samples_past_them():
    # n in -2..top (top + 3 values) x 2 bools x 2 modes
    assert B.declared_states(_machine(3)) == 6 * 2 * 2
    at = _machine(24_997)                        # 25,000 x 4 = 100,000
    assert B.declared_states(at) == 100_000
    assert B.determinism_for(at, "auto").__dict__ == {
        "mode": "full", "why": "auto: 100,000 declared states, at most 100,000", "extra_calls": 0, "seconds": 0.0}
    past = _machine(24_998)
    assert B.determinism_for(past, "auto").__dict__ == {
        "mode": "sample", "why": "auto: 100,004 declared states, more than 100,000", "extra_calls": 0,
        "seconds": 0.0}
    assert B.determinism_for(past, "off").__dict__ == {"mode": "off", "why": "--determinism off",
                                                       "extra_calls": 0, "seconds": 0.0}
    with pytest.raises(ValueError) as refused:
        B.determinism_for(past, "never")
    assert str(refused.value) == "determinism must be one of auto, full, sample, off, got 'never'"
    assert B.Determinism("full", "why", 3, 0.123456).to_json() == {
        "mode": "full", "why": "why", "extra_calls": 3, "seconds": 0.1235}


# ---------------------------------------------------------------- what messages show

def test_values_in_messages_are_written_as_in_a_spec():
    assert [B._value_text(v) for v in (True, False, 0, 1, "idle")] == ["true", "false", "0", "1", "idle"]


def _raises_in_user_code() -> None:
    raise ValueError("boom")


def test_the_users_traceback_keeps_the_users_frames_and_the_error():
    try:
        _raises_in_user_code()
    except ValueError as exc:
        text = B.user_traceback(exc)
    lines = text.splitlines()
    assert lines[0].startswith('  File "') and lines[0].endswith(", in test_the_users_traceback_keeps_the_users_"
                                                                 "frames_and_the_error")
    assert lines[-2:] == ['    raise ValueError("boom")', "ValueError: boom"]
    assert text == text.strip("\n") and "XX" not in text


def test_the_working_directorys_module_wins_over_a_same_named_one_earlier_on_the_path(tmp_path, monkeypatch):
    """A -j worker inherits its parent's sys.path, where another folder's `adapter.py` may come
    first: the working directory's own file is the one meant (it was an exit 2, 'module adapter
    has no AgentAdapter', in a worker only)."""
    from haltproof.machine.binding import import_user_module
    other, here = tmp_path / "other", tmp_path / "here"
    other.mkdir()
    here.mkdir()
    (other / "hp_same_name.py").write_text("WHICH = 'other'\n")
    (here / "hp_same_name.py").write_text("WHICH = 'here'\n")
    monkeypatch.chdir(here)
    monkeypatch.setattr(sys, "path", [str(other), str(here), *sys.path])
    monkeypatch.delitem(sys.modules, "hp_same_name", raising=False)
    assert import_user_module("hp_same_name", str(tmp_path / "spec_folder")).WHICH == "here"
    sys.modules.pop("hp_same_name", None)


def test_a_module_beside_the_spec_is_imported_from_the_specs_folder(tmp_path, monkeypatch):
    """A spec found anywhere imports the code beside it: its folder joins the path (first)."""
    from haltproof.machine.binding import import_user_module
    (tmp_path / "hp_beside.py").write_text("WHICH = 'beside'\n")
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(tmp_path)])
    monkeypatch.delitem(sys.modules, "hp_beside", raising=False)
    assert import_user_module("hp_beside", str(tmp_path)).WHICH == "beside"
    assert sys.path[0] == str(tmp_path) and sys.path.count(str(tmp_path)) == 1
    sys.modules.pop("hp_beside", None)
