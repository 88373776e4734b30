"""The safe expression language: a typed, whitelisted subset of Python expressions.

An expression is parsed with `ast`, checked node by node against a whitelist and a
small type system (int, bool, enum), and rewritten into a plain Python AST whose names
point at state slots, choice records and parameters. Nothing outside the whitelist can
be written, so a YAML spec can never import, call arbitrary functions or reach
attributes other than the fields of a choice record.
"""

from __future__ import annotations

import ast
import difflib
import keyword
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from .errors import Located, Problem, SpecError


# ---------------------------------------------------------------- types

@dataclass(frozen=True)
class IntT:
    def __str__(self) -> str:
        return "int"


@dataclass(frozen=True)
class BoolT:
    def __str__(self) -> str:
        return "bool"


@dataclass(frozen=True)
class EnumT:
    """A finite set of string values; a string literal is the one-value enum."""

    values: frozenset[str]
    desc: str = ""

    def __str__(self) -> str:
        shown = ", ".join(sorted(self.values))
        return f"{self.desc} {{{shown}}}" if self.desc else f"{{{shown}}}"


Type = IntT | BoolT | EnumT
Value = bool | int | str      # a value a spec writes: of BOOL, INT or an EnumT
INT = IntT()
BOOL = BoolT()


def type_of_value(value: object, desc: str = "") -> Type:
    """The type of a literal value as it appears in YAML."""
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, int):
        return INT
    if isinstance(value, str):
        return EnumT(frozenset([str(value)]), desc or repr(str(value)))
    raise TypeError(value)


def compatible(a: Type, b: Type) -> bool:
    """Whether two values of these types can ever be equal (used for ==, != and in)."""
    if isinstance(a, EnumT) and isinstance(b, EnumT):
        return bool(a.values & b.values)
    return type(a) is type(b)


def unify(a: Type, b: Type) -> Type | None:
    """The type of `x if c else y`, or None when the branches cannot mix."""
    if isinstance(a, EnumT) and isinstance(b, EnumT):
        return EnumT(a.values | b.values, a.desc if a.desc == b.desc else "")
    if type(a) is type(b):
        return a
    return None


# ---------------------------------------------------------------- scopes

@dataclass
class Binding:
    """What a name means in an expression and the Python AST it compiles to."""

    type: Type | None
    node: Callable[[], ast.expr] | None
    fields: dict[str, tuple[Type, Callable[[], ast.expr]]] = field(default_factory=dict)
    what: str = "name"          # shown in errors: "choice obs", "state after", ...
    refuse: str | None = None   # using this name is an error with this message


# A past-time operator's call, checked: (operator name, its checked arguments as (type, AST), the
# call's text) ->
# the type and AST of its value in the current state. Raises ValueError for a use it cannot
# compile (the message is reported at the call). See machine/pasttime.py.
PastTime = Callable[[str, list[tuple["Type", ast.expr]], str], tuple["Type", ast.expr]]
PAST_OPERATORS = {"once": 1, "historically": 1, "previous": 1, "since": 2}   # name -> number of arguments


@dataclass
class Scope:
    """The names an expression may use, plus the enum values usable unquoted, and (in a state
    property) how its past-time operators compile."""

    names: dict[str, Binding]
    literals: frozenset[str] = frozenset()
    past: PastTime | None = None

    def extended(self, more: dict[str, Binding]) -> Scope:
        return Scope({**self.names, **more}, self.literals, self.past)


@dataclass(frozen=True)
class Expr:
    """A checked expression: its text, type, and Python AST ready to compile."""

    text: str
    type: Type
    py: ast.expr
    choices_used: frozenset[str] = frozenset()
    line: int | None = None         # where the spec wrote it, to name it when it fails to evaluate

    @property
    def source(self) -> str:
        return ast.unparse(self.py)


_CMP_INT = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
_CMP_EQ = (ast.Eq, ast.NotEq)
_CMP_IN = (ast.In, ast.NotIn)
_ARITH = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)
_FUNCS = {"min", "max", "abs"}
MAX_DEPTH = 100     # expressions nested in expressions (docs/reference/spec-language.md, "Limits on the input")
_EXPR_KEYWORDS = {"and", "or", "not", "if", "else", "in", "is", "True", "False", "None"}


def literal_expr(value: object, text: str) -> Expr:
    """An Expr for a YAML scalar that is a literal (int, bool, or enum value)."""
    return Expr(text, type_of_value(value), ast.fix_missing_locations(ast.Constant(value)))  # type: ignore[arg-type]  # a YAML scalar: int, bool or str


def check(text: object, scope: Scope, loc: Located, *, line_offset_block: bool = False,
          what: str = "expression") -> Expr:
    """Parse and type-check one expression; raise SpecError naming file, line and text."""
    if isinstance(text, bool) or isinstance(text, int):
        return replace(literal_expr(text, str(text).lower() if isinstance(text, bool) else str(text)),
                       line=loc.line)
    if not isinstance(text, str):
        raise loc.error(f"{what} must be a string, a number or true/false", text)
    src = str(text).strip()
    if src == "":
        raise loc.error(f"{what} is empty")
    locate = _Locator(text, loc, line_offset_block)
    too_deep = SpecError([Problem(loc.file, locate(1, None),
                                  f"{what} nests deeper than {MAX_DEPTH} levels")])
    try:
        tree = _parse(src)
    except (RecursionError, MemoryError):   # CPython's parser gives up on very deep input
        raise too_deep from None
    except SyntaxError as exc:
        if exc.msg == "too many nested parentheses":
            raise too_deep from None
        hint = ""
        kws = sorted({w for w in _words(src) if keyword.iskeyword(w) and w not in _EXPR_KEYWORDS})
        if kws:
            hint = f" ({kws[0]!r} is a Python keyword: to mean the value, quote it: '{kws[0]}')"
        line = locate(exc.lineno or 1, None)
        raise SpecError([Problem(loc.file, line, f"{what} is not valid syntax{hint}", src)]) from None
    if _depth(tree.body) > MAX_DEPTH:       # before anything recurses over it: checking, compiling
        raise too_deep
    if "\n" in src and not _parses(src):
        src = "(" + src + ")"              # continued lines: a parenthesis makes Python accept them
    checker = _Checker(src, scope, loc, locate)
    typ, py = checker.visit(tree.body)
    return Expr(src, typ, ast.fix_missing_locations(py), frozenset(checker.choices_used), loc.line)


def _depth(root: ast.expr) -> int:
    """How deeply expressions nest in `root` (a name is 1, `not x` 2), walked without recursion."""
    deepest, todo = 0, [(root, 1)]
    while todo:
        node, depth = todo.pop()
        deepest = max(deepest, depth)
        todo.extend((child, depth + 1) for child in ast.iter_child_nodes(node) if isinstance(child, ast.expr))
    return deepest


def _parses(src: str) -> bool:
    try:
        ast.parse(src, mode="eval")
        return True
    except SyntaxError:
        return False


def _parse(src: str) -> ast.Expression:
    """Parse an expression; a YAML block can keep line breaks (more-indented lines of a
    folded block do), which Python accepts only inside parentheses, so retry with them."""
    try:
        return ast.parse(src, mode="eval")
    except SyntaxError:
        if "\n" not in src:
            raise
        try:
            return ast.parse("(" + src + ")", mode="eval")
        except SyntaxError:
            pass
        raise


class _Locator:
    """Finds the file line of a piece of an expression.

    A literal block (`|`) keeps its line breaks, so the AST line maps directly. A folded
    block (`>`) or a plain scalar continued over lines is joined into one line by YAML,
    so the piece of text is looked up in the scalar's own lines of the file.
    """

    def __init__(self, raw: object, loc: Located, block: bool):
        self.loc = loc
        self.block = block
        self.source = getattr(raw, "source", None)
        self.start: int | None = getattr(raw, "line", loc.line)
        self.end: int | None = getattr(raw, "end_line", loc.line)
        self.literal = block and "\n" in str(raw).strip()

    def __call__(self, lineno: int, segment: str | None) -> int | None:
        if self.loc.line is None:
            return None
        start, end = self.start, self.end
        if self.literal or self.source is None or start is None or end is None or end == start:
            return _line(self.loc, lineno, self.block)
        lines = range(start, min(end, len(self.source)) + 1)
        if segment:
            probes = [segment.strip(), segment.strip().split()[0]]
            for probe in probes:
                for n in lines:
                    if probe and probe in self.source[n - 1] and (n > start or not self.block):
                        return n
        return _line(self.loc, lineno, self.block)


def _words(src: str) -> list[str]:
    word, out = "", []
    for ch in src + " ":
        if ch.isalnum() or ch == "_":
            word += ch
        else:
            if word:
                out.append(word)
            word = ""
    return out


def _line(loc: Located, lineno: int, block: bool) -> int | None:
    if loc.line is None:
        return None
    return loc.line + (1 if block else 0) + lineno - 1


class _Checker:
    def __init__(self, src: str, scope: Scope, loc: Located, locate: _Locator):
        self.src = src
        self.scope = scope
        self.loc = loc
        self.locate = locate
        self.choices_used: set[str] = set()

    def fail(self, node: ast.AST, message: str) -> SpecError:
        text = ast.get_source_segment(self.src, node) or self.src
        line = self.locate(getattr(node, "lineno", 1), text)
        return SpecError([Problem(self.loc.file, line, message, text)])

    def visit(self, node: ast.AST) -> tuple[Type, ast.expr]:
        method: Callable[[ast.AST], tuple[Type, ast.expr]] | None = getattr(self, "v_" + type(node).__name__, None)
        if method is None:
            raise self.fail(node, f"not allowed in a spec expression ({_describe(node)})")
        return method(node)

    def expect(self, node: ast.AST, want: Type, role: str) -> ast.expr:
        typ, py = self.visit(node)
        if type(typ) is not type(want):
            raise self.fail(node, f"{role} must be {want}, but this is {typ}")
        return py

    # -- leaves
    def v_Constant(self, node: ast.Constant) -> tuple[Type, ast.expr]:
        value = node.value
        if isinstance(value, (bool, int, str)):
            return type_of_value(value), ast.Constant(value)
        raise self.fail(node, "only integers, true/false and strings are allowed as constants")

    def v_Name(self, node: ast.Name) -> tuple[Type, ast.expr]:
        if node.id in ("true", "false"):       # YAML's spelling of the booleans
            return BOOL, ast.Constant(node.id == "true")
        binding = self.scope.names.get(node.id)
        if binding is not None:
            if binding.refuse:
                raise self.fail(node, binding.refuse)
            if binding.node is None:
                raise self.fail(node, f"{binding.what} is not a value by itself; use one of its "
                                      f"fields: {', '.join(sorted(binding.fields))}")
            if binding.what.startswith("choice"):
                self.choices_used.add(node.id)
            assert binding.type is not None, "a name that is a value has a type"
            return binding.type, binding.node()
        if node.id in self.scope.literals:
            return type_of_value(node.id), ast.Constant(node.id)
        known = list(self.scope.names) + list(self.scope.literals)
        close = difflib.get_close_matches(node.id, known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise self.fail(node, f"undefined name{hint}")

    def v_Attribute(self, node: ast.Attribute) -> tuple[Type, ast.expr]:
        if not isinstance(node.value, ast.Name) or node.value.id not in self.scope.names:
            raise self.fail(node, "field access is only allowed on a choice "
                                  "(or on before/after in a step expression)")
        binding = self.scope.names[node.value.id]
        if binding.refuse:
            raise self.fail(node.value, binding.refuse)
        if not binding.fields:
            raise self.fail(node, f"{binding.what} has no fields")
        if node.attr not in binding.fields:
            close = difflib.get_close_matches(node.attr, list(binding.fields), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise self.fail(node, f"{binding.what} has no field {node.attr!r}{hint}; it has: "
                                  f"{', '.join(sorted(binding.fields))}")
        if binding.what.startswith("choice"):
            self.choices_used.add(node.value.id)
        typ, make = binding.fields[node.attr]
        return typ, make()

    # -- operators
    def v_BoolOp(self, node: ast.BoolOp) -> tuple[Type, ast.expr]:
        role = "an operand of 'and'" if isinstance(node.op, ast.And) else "an operand of 'or'"
        values = [self.expect(v, BOOL, role) for v in node.values]
        return BOOL, ast.BoolOp(op=type(node.op)(), values=values)

    def v_UnaryOp(self, node: ast.UnaryOp) -> tuple[Type, ast.expr]:
        if isinstance(node.op, ast.Not):
            return BOOL, ast.UnaryOp(ast.Not(), self.expect(node.operand, BOOL, "the operand of 'not'"))
        if isinstance(node.op, (ast.USub, ast.UAdd)):
            return INT, ast.UnaryOp(type(node.op)(), self.expect(node.operand, INT, "a signed value"))
        raise self.fail(node, "operator not allowed (use not, -, +)")

    def v_BinOp(self, node: ast.BinOp) -> tuple[Type, ast.expr]:
        if not isinstance(node.op, _ARITH):
            raise self.fail(node, "operator not allowed (use +, -, *, //, %)")
        left = self.expect(node.left, INT, "an arithmetic operand")
        right = self.expect(node.right, INT, "an arithmetic operand")
        return INT, ast.BinOp(left, type(node.op)(), right)

    def v_Compare(self, node: ast.Compare) -> tuple[Type, ast.expr]:
        left_t, left_py = self.visit(node.left)
        out_ops: list[ast.cmpop] = []
        out_right: list[ast.expr] = []
        if len(node.ops) > 1 and any(isinstance(op, _CMP_IN) for op in node.ops):
            raise self.fail(node, "'in' cannot be chained with another comparison; "
                                  "join separate comparisons with 'and'")
        for op, right in zip(node.ops, node.comparators):
            if isinstance(op, _CMP_IN):
                if not isinstance(right, (ast.Tuple, ast.List)):
                    raise self.fail(right, "'in' needs a literal tuple on its right, like (a, b)")
                elems = []
                for elt in right.elts:
                    et, epy = self.visit(elt)
                    is_param = (isinstance(elt, ast.Name) and elt.id in self.scope.names
                                and self.scope.names[elt.id].what == "param")
                    signed = (isinstance(epy, ast.UnaryOp) and isinstance(epy.op, (ast.USub, ast.UAdd))
                              and isinstance(epy.operand, ast.Constant))     # -1 is a literal too
                    if not (isinstance(epy, ast.Constant) or signed or is_param):
                        raise self.fail(elt, "the tuple after 'in' may hold only literals and params")
                    if not compatible(left_t, et):
                        raise self.fail(elt, f"can never equal the left side ({left_t}); this is {et}")
                    elems.append(epy)
                out_ops.append(type(op)())
                out_right.append(ast.Tuple(elts=elems, ctx=ast.Load()))
                right_t = left_t
            else:
                right_t, right_py = self.visit(right)
                if isinstance(op, _CMP_EQ):
                    if not compatible(left_t, right_t):
                        raise self.fail(node, f"compares {left_t} with {right_t}: they can never be equal")
                elif isinstance(op, _CMP_INT):
                    if not (isinstance(left_t, IntT) and isinstance(right_t, IntT)):
                        raise self.fail(node, f"ordering comparison needs two ints, got {left_t} and {right_t}")
                else:
                    raise self.fail(node, "comparison not allowed (use ==, !=, <, <=, >, >=, in, not in)")
                out_ops.append(type(op)())
                out_right.append(right_py)
            left_t = right_t
        return BOOL, ast.Compare(left=left_py, ops=out_ops, comparators=out_right)

    def v_IfExp(self, node: ast.IfExp) -> tuple[Type, ast.expr]:
        test = self.expect(node.test, BOOL, "the condition of 'if'")
        bt, bpy = self.visit(node.body)
        ot, opy = self.visit(node.orelse)
        typ = unify(bt, ot)
        if typ is None:
            raise self.fail(node, f"the two branches have different types: {bt} and {ot}")
        return typ, ast.IfExp(test=test, body=bpy, orelse=opy)

    def v_Call(self, node: ast.Call) -> tuple[Type, ast.expr]:
        if isinstance(node.func, ast.Name) and node.func.id in PAST_OPERATORS:
            return self.past_call(node, node.func.id)
        if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCS:
            raise self.fail(node, "only min(), max() and abs() may be called (and once(), historically(), "
                                  "previous(), since() in an always or reachable property)")
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise self.fail(node, "call with plain positional arguments only")
        name = node.func.id
        if name == "abs" and len(node.args) != 1:
            raise self.fail(node, "abs() takes exactly one argument")
        if name in ("min", "max") and len(node.args) < 2:
            raise self.fail(node, f"{name}() takes two or more arguments")
        args = [self.expect(a, INT, f"an argument of {name}()") for a in node.args]
        return INT, ast.Call(func=ast.Name(name, ast.Load()), args=args, keywords=[])

    def past_call(self, node: ast.Call, name: str) -> tuple[Type, ast.expr]:
        """A past-time operator: its arguments checked here, compiled by the scope's `past`."""
        if self.scope.past is None:
            raise self.fail(node, f"{name}() is a past-time operator: only an always or reachable "
                                  "property may use it")
        want = PAST_OPERATORS[name]
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args) or len(node.args) != want:
            raise self.fail(node, f"{name}() takes exactly {want} plain argument{'s' if want > 1 else ''}")
        if name == "previous":
            args = [self.visit(node.args[0])]
        else:
            args = [(BOOL, self.expect(a, BOOL, f"an argument of {name}()")) for a in node.args]
        try:
            return self.scope.past(name, args, ast.get_source_segment(self.src, node) or name)
        except ValueError as exc:
            raise self.fail(node, str(exc)) from None

    def v_Tuple(self, node: ast.Tuple) -> tuple[Type, ast.expr]:
        raise self.fail(node, "tuples are only allowed after 'in'")


def _describe(node: ast.AST) -> str:
    names = {
        "Subscript": "indexing", "Lambda": "lambda", "ListComp": "comprehension",
        "GeneratorExp": "comprehension", "DictComp": "comprehension", "SetComp": "comprehension",
        "JoinedStr": "f-string", "Dict": "dict literal", "Set": "set literal", "Await": "await",
        "NamedExpr": "assignment", "Starred": "star-expression", "Slice": "slicing",
        "Yield": "yield", "YieldFrom": "yield",
    }
    return names.get(type(node).__name__, type(node).__name__)
