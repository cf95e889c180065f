"""A small filter language over test cases: pick the test cases that exercise a capability.

::

    subject == 'math' and rating > 1800
    abilities contains 'algebra' and not (source in ['gsm8k', "svamp"])
    benchmark == 'mmlu' or (`meta-tag` != 'x' and rating <= 1500.5)

Grammar (no ``eval``: text is tokenized and parsed by hand, and only this grammar is accepted)::

    query      := or_expr
    or_expr    := and_expr ("or" and_expr)*
    and_expr   := not_expr ("and" not_expr)*
    not_expr   := "not" not_expr | "(" or_expr ")" | condition
    condition  := field op literal
                | field ["not"] "in" "[" literal ("," literal)* [","] "]"
                | field "contains" literal
    op         := "==" | "!=" | "<" | "<=" | ">" | ">="
    field      := [A-Za-z_][A-Za-z0-9_.]*  |  `any text without a backquote`
    literal    := number | 'text' | "text"          (escapes inside quotes: \\\\ \\' \\")
    number     := -?digits[.digits][(e|E)[+-]digits]

Keywords (``and or not in contains``) are case-insensitive; a field named like one is written in
backquotes. Fields are the columns of the frame :func:`select` filters: tag names, plus
``rating`` (the test case's rating), ``flag``, ``discrimination``, ``benchmark`` and ``test_case_id``.

Semantics, column by column:

- a number compared with a number column compares numbers; with a text column, the text is read
  as a number where it is one (``'3'`` and ``'3.0'`` are 3) and the test fails elsewhere;
- text compared with text compares text (``<`` orders by code point); text compared with a number
  column is an error;
- ``contains`` on a text column is a substring test, on a multi-valued tag (a list) membership;
- on a multi-valued tag a condition holds when it holds for some item (``abilities == 'algebra'``
  is ``abilities contains 'algebra'``);
- ``!=`` is ``not ==`` and ``not in`` is ``not (in)`` on a present value; a missing value (null,
  NaN, an empty list) fails every condition, and ``not`` negates the result as it is.

Every error is a :class:`QueryError` naming the 0-based position in the text, with a caret.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["MAX_QUERY_CHARS", "MAX_QUERY_DEPTH", "Query", "QueryError", "parse_query", "select"]

MAX_QUERY_CHARS = 4000
MAX_QUERY_DEPTH = 40
MAX_LIST_ITEMS = 1000
KEYWORDS = ("and", "or", "not", "in", "contains")
OPERATORS = ("==", "!=", "<=", ">=", "<", ">")


class QueryError(ValueError):
    """A query outside the grammar, or one that does not fit the frame; ``position`` is 0-based in ``text``."""

    def __init__(self, text: str, position: int, detail: str):
        shown, caret = _excerpt(text, position)
        super().__init__(f"query position {position}: {detail}\n  {shown}\n  {caret}")
        self.text, self.position, self.detail = text, position, detail


def _excerpt(text: str, position: int, width: int = 70) -> tuple[str, str]:
    start = max(0, min(position - width // 2, len(text) - width))
    shown = text[start : start + width].replace("\n", " ").replace("\t", " ")
    prefix = "…" if start > 0 else ""
    return prefix + shown + ("…" if start + width < len(text) else ""), " " * (len(prefix) + position - start) + "^"


# -- syntax tree -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Condition:
    """``field op value``; ``op`` is a comparison, ``in`` (value: a tuple), ``not in`` or ``contains``."""

    field: str
    op: str
    value: Any
    position: int  # where the field starts
    value_position: int


@dataclass(frozen=True)
class Not:
    part: Any


@dataclass(frozen=True)
class And:
    parts: tuple


@dataclass(frozen=True)
class Or:
    parts: tuple


@dataclass(frozen=True)
class Query:
    """A parsed query: the tree, the text it came from, and the fields it names."""

    root: Any
    text: str

    @property
    def fields(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}

        def walk(node):
            if isinstance(node, Condition):
                seen.setdefault(node.field)
            elif isinstance(node, Not):
                walk(node.part)
            else:
                for part in node.parts:
                    walk(part)

        walk(self.root)
        return tuple(seen)

    def __str__(self) -> str:
        return _show(self.root)


def _literal(value: Any) -> str:
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return repr(value)


def _field(name: str) -> str:
    return name if _IDENT.fullmatch(name) and name.lower() not in KEYWORDS else f"`{name}`"


def _show(node: Any) -> str:
    if isinstance(node, Condition):
        if node.op in ("in", "not in"):
            return f"{_field(node.field)} {node.op} [{', '.join(map(_literal, node.value))}]"
        return f"{_field(node.field)} {node.op} {_literal(node.value)}"
    if isinstance(node, Not):
        return f"not ({_show(node.part)})"
    joiner = " and " if isinstance(node, And) else " or "
    return "(" + joiner.join(_show(p) for p in node.parts) + ")"


# -- tokens ------------------------------------------------------------------------------------

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_SPACE = re.compile(r"[ \t\r\n]+")


@dataclass(frozen=True)
class _Token:
    kind: str  # field, keyword, op, string, number, punct, end
    value: Any
    position: int
    text: str


def _tokens(text: str) -> list[_Token]:
    out: list[_Token] = []
    i, n = 0, len(text)
    while i < n:
        space = _SPACE.match(text, i)
        if space:
            i = space.end()
            continue
        c = text[i]
        if c in "()[],":
            out.append(_Token("punct", c, i, c))
            i += 1
        elif text.startswith(OPERATORS, i):
            op = next(o for o in OPERATORS if text.startswith(o, i))
            out.append(_Token("op", op, i, op))
            i += len(op)
        elif c == "=":
            raise QueryError(text, i, "a single '=' is not an operator; compare with '=='")
        elif c in "'\"":
            value, end = _string(text, i)
            out.append(_Token("string", value, i, text[i:end]))
            i = end
        elif c == "`":
            end = text.find("`", i + 1)
            if end < 0:
                raise QueryError(text, i, "a backquoted field name is never closed")
            if end == i + 1:
                raise QueryError(text, i, "an empty field name ``")
            out.append(_Token("field", text[i + 1 : end], i, text[i : end + 1]))
            i = end + 1
        elif c.isascii() and (c.isdigit() or (c == "-" and i + 1 < n and text[i + 1].isdigit())):
            match = _NUMBER.match(text, i)
            end = match.end()
            if end < n and (text[end].isalnum() or text[end] in "._"):
                raise QueryError(text, i, f"{text[i : end + 1]!r} is not a number")
            value = float(match.group())
            if not math.isfinite(value):
                raise QueryError(text, i, f"{match.group()!r} is too large a number")
            out.append(_Token("number", value, i, match.group()))
            i = end
        else:
            match = _IDENT.match(text, i)
            if not match:
                raise QueryError(
                    text, i, f"unexpected character {c!r}; a query holds fields, operators, literals, and or not ( )"
                )
            word = match.group()
            kind = "keyword" if word.lower() in KEYWORDS else "field"
            out.append(_Token(kind, word.lower() if kind == "keyword" else word, i, word))
            i = match.end()
    out.append(_Token("end", None, n, "end of the query"))
    return out


def _string(text: str, start: int) -> tuple[str, int]:
    quote, i, chars = text[start], start + 1, []
    while i < len(text):
        c = text[i]
        if c == "\\":
            if i + 1 < len(text) and text[i + 1] in "\\'\"":
                chars.append(text[i + 1])
                i += 2
                continue
            raise QueryError(text, i, "inside quotes a backslash escapes only \\, ' and \"")
        if c == quote:
            return "".join(chars), i + 1
        chars.append(c)
        i += 1
    raise QueryError(text, start, "a quoted text is never closed")


# -- parser ------------------------------------------------------------------------------------


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.tokens = _tokens(text)
        self.i = 0

    def peek(self) -> _Token:
        return self.tokens[self.i]

    def take(self) -> _Token:
        token = self.tokens[self.i]
        self.i += 1
        return token

    def fail(self, token: _Token, expected: str):
        raise QueryError(self.text, token.position, f"expected {expected}, found {_shown(token)}")

    def is_keyword(self, word: str) -> bool:
        token = self.peek()
        return token.kind == "keyword" and token.value == word

    def parse(self) -> Any:
        node = self.or_expr(0)
        token = self.peek()
        if token.kind != "end":
            self.fail(token, "'and', 'or' or the end of the query")
        return node

    def or_expr(self, depth: int) -> Any:
        parts = [self.and_expr(depth)]
        while self.is_keyword("or"):
            self.take()
            parts.append(self.and_expr(depth))
        return parts[0] if len(parts) == 1 else Or(tuple(parts))

    def and_expr(self, depth: int) -> Any:
        parts = [self.not_expr(depth)]
        while self.is_keyword("and"):
            self.take()
            parts.append(self.not_expr(depth))
        return parts[0] if len(parts) == 1 else And(tuple(parts))

    def not_expr(self, depth: int) -> Any:
        token = self.peek()
        if depth > MAX_QUERY_DEPTH:
            raise QueryError(self.text, token.position, f"the query nests deeper than {MAX_QUERY_DEPTH} levels")
        if token.kind == "keyword" and token.value == "not":
            self.take()
            return Not(self.not_expr(depth + 1))
        if token.kind == "punct" and token.value == "(":
            self.take()
            node = self.or_expr(depth + 1)
            close = self.take()
            if not (close.kind == "punct" and close.value == ")"):
                self.fail(close, "')' to close the '(' at position " + str(token.position))
            return node
        return self.condition()

    def condition(self) -> Condition:
        field = self.take()
        if field.kind != "field":
            self.fail(field, "a field name (a tag, rating, flag, discrimination, benchmark or test_case_id), 'not' or '('")
        token = self.take()
        if token.kind == "op":
            value = self.literal()
            return Condition(field.value, token.value, value.value, field.position, value.position)
        if token.kind == "keyword" and token.value == "contains":
            value = self.literal()
            return Condition(field.value, "contains", value.value, field.position, value.position)
        negated = False
        if token.kind == "keyword" and token.value == "not":
            negated = True
            token = self.take()
            if not (token.kind == "keyword" and token.value == "in"):
                self.fail(token, "'in' after 'not'")
        if token.kind == "keyword" and token.value == "in":
            start = self.peek()
            return Condition(field.value, "not in" if negated else "in", self.values(), field.position, start.position)
        if token.kind == "punct" and token.value == "(":
            raise QueryError(self.text, token.position, f"{field.text} is a field: a query calls no functions")
        self.fail(token, f"an operator after the field {field.text} (== != < <= > >= in contains)")
        raise AssertionError  # unreachable

    def literal(self) -> _Token:
        token = self.take()
        if token.kind not in ("string", "number"):
            hint = f" (text goes in quotes: '{token.value}')" if token.kind == "field" else ""
            self.fail(token, f"a number or a quoted text{hint}")
        return token

    def values(self) -> tuple:
        open_ = self.take()
        if not (open_.kind == "punct" and open_.value == "["):
            self.fail(open_, "'[' to start a list of values")
        items: list[Any] = []
        while True:
            token = self.peek()
            if token.kind == "punct" and token.value == "]" and items:
                self.take()
                return tuple(items)
            items.append(self.literal().value)
            if len(items) > MAX_LIST_ITEMS:
                raise QueryError(self.text, token.position, f"a list holds at most {MAX_LIST_ITEMS} values")
            sep = self.take()
            if sep.kind == "punct" and sep.value == "]":
                return tuple(items)
            if not (sep.kind == "punct" and sep.value == ","):
                self.fail(sep, "',' or ']' in the list")


def _shown(token: _Token) -> str:
    if token.kind == "end":
        return "the end of the query"
    return repr(token.text if len(token.text) <= 30 else token.text[:30] + "…")


def parse_query(text: str) -> Query:
    """Parse a query (module docstring); raises :class:`QueryError` for anything outside the grammar."""
    if not isinstance(text, str):
        raise TypeError(f"a query is text, got {type(text).__name__}")
    if len(text) > MAX_QUERY_CHARS:
        raise QueryError(
            text[:MAX_QUERY_CHARS], MAX_QUERY_CHARS - 1, f"the query is {len(text):,} characters; at most {MAX_QUERY_CHARS:,}"
        )
    if not text.strip():
        raise QueryError(text, 0, "the query is empty")
    return Query(_Parser(text).parse(), text)


# -- evaluation --------------------------------------------------------------------------------


@dataclass
class _Column:
    kind: str  # "number", "text", "list"
    values: Any  # float ndarray (number), object ndarray of str/None (text), list of tuples/None (list)
    numbers: np.ndarray | None = None  # text read as numbers (lazily)


def _column(series: pd.Series) -> _Column:
    if pd.api.types.is_bool_dtype(series.dtype):
        return _Column("text", np.where(series.isna(), None, series.map({True: "true", False: "false"})).astype(object))
    if pd.api.types.is_numeric_dtype(series.dtype):
        return _Column("number", series.to_numpy(dtype=np.float64, na_value=np.nan))
    values = series.to_numpy(dtype=object)
    is_list = np.fromiter((isinstance(v, (list, tuple, np.ndarray)) for v in values), bool, len(values))
    if is_list.any():
        items = [
            tuple(str(x) for x in v if x is not None)
            if isinstance(v, (list, tuple, np.ndarray))
            else (None if _missing(v) else (str(v),))
            for v in values
        ]
        return _Column("list", [v if v else None for v in items])
    return _Column("text", np.array([None if _missing(v) else str(v) for v in values], dtype=object))


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA or value is pd.NaT


def _as_numbers(values: Any) -> np.ndarray:
    return pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)


_COMPARE = {
    "==": np.equal,
    "!=": np.not_equal,
    "<": np.less,
    "<=": np.less_equal,
    ">": np.greater,
    ">=": np.greater_equal,
}


def _holds(column: _Column, cond: Condition, text: str) -> np.ndarray:
    op, value = cond.op, cond.value
    if op in ("!=", "not in"):
        positive = _holds(
            column, Condition(cond.field, "==" if op == "!=" else "in", value, cond.position, cond.value_position), text
        )
        return ~positive & _present(column)
    if column.kind == "list":
        n = len(column.values)
        items = [x for v in column.values if v for x in v]
        owner = np.repeat(np.arange(n), [len(v) if v else 0 for v in column.values])
        if op == "contains":
            op = "=="
        hit = _holds(
            _Column("text", np.array(items, dtype=object)),
            Condition(cond.field, op, value, cond.position, cond.value_position),
            text,
        )
        return np.bincount(owner[hit], minlength=n) > 0
    if op == "in":
        out = np.zeros(len(column.values), dtype=bool)
        for v in value:
            out |= _holds(column, Condition(cond.field, "==", v, cond.position, cond.value_position), text)
        return out
    if op == "contains":
        if not isinstance(value, str):
            raise QueryError(text, cond.value_position, "'contains' takes a quoted text")
        if column.kind == "number":
            raise QueryError(text, cond.position, f"{cond.field} holds numbers; 'contains' applies to text and lists")
        return np.fromiter((v is not None and value in v for v in column.values), bool, len(column.values))
    if isinstance(value, str):
        if column.kind == "number":
            raise QueryError(text, cond.value_position, f"{cond.field} holds numbers; compare it with a number, not a text")
        present = np.fromiter((v is not None for v in column.values), bool, len(column.values))
        out = np.zeros(len(column.values), dtype=bool)
        if present.any():
            out[present] = _COMPARE[op](column.values[present].astype(str), value)
        return out
    numbers = column.values if column.kind == "number" else _text_numbers(column)
    with np.errstate(invalid="ignore"):
        return _COMPARE[op](numbers, value) & ~np.isnan(numbers)


def _text_numbers(column: _Column) -> np.ndarray:
    if column.numbers is None:
        column.numbers = _as_numbers(column.values)
    return column.numbers


def _present(column: _Column) -> np.ndarray:
    if column.kind == "number":
        return ~np.isnan(column.values)
    return np.fromiter((v is not None for v in column.values), bool, len(column.values))


def select(query: Query | str, test_cases: Any) -> np.ndarray:
    """The boolean mask of the rows of ``test_cases`` the query selects.

    Parameters
    ----------
    query : Query or str
        A parsed query, or its text (parsed here).
    test_cases : DataFrame or pyarrow.Table
        One row per test case: ``test_case_id``, ``benchmark``, ``rating`` and the tags (text,
        numbers, or lists of text for multi-valued tags), under the names queries use.

    Raises
    ------
    QueryError
        A field the frame lacks (naming the fields it has), or text compared with numbers.
    """
    if isinstance(query, str):
        query = parse_query(query)
    frame = test_cases if isinstance(test_cases, pd.DataFrame) else test_cases.to_pandas()
    columns: dict[str, _Column] = {}

    def column_of(cond: Condition) -> _Column:
        if cond.field not in columns:
            if cond.field not in frame.columns:
                known = ", ".join(map(str, frame.columns))
                raise QueryError(query.text, cond.position, f"no field {cond.field!r}; fields are {known}")
            columns[cond.field] = _column(frame[cond.field])
        return columns[cond.field]

    def evaluate(node: Any) -> np.ndarray:
        if isinstance(node, Condition):
            return _holds(column_of(node), node, query.text)
        if isinstance(node, Not):
            return ~evaluate(node.part)
        masks = [evaluate(p) for p in node.parts]
        out = masks[0].copy()
        for mask in masks[1:]:
            out = (out & mask) if isinstance(node, And) else (out | mask)
        return out

    mask = evaluate(query.root)
    return np.asarray(mask, dtype=bool).reshape(len(frame))
